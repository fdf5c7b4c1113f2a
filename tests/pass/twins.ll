; Kernel twins (functions with the "nano.twin" attribute, made by the device
; pass) are instrumented by the device pass, never by the host pass.
; RUN: %opt_nano -passes=nano-atomics -nano-atomics-inline=0 -S %s | FileCheck %s

target triple = "x86_64-pc-linux-gnu"

; CHECK: @nano.sites = private global [1 x %struct.nano_site]

; CHECK-LABEL: define void @kernel(
; CHECK: call void @__nano_atomic(ptr @nano.sites)
; CHECK: atomicrmw add
define void @kernel(ptr %p) {
  %a = atomicrmw add ptr %p, i32 1 monotonic, align 4
  ret void
}

; CHECK-LABEL: define void @kernel.twin(
; CHECK-NOT: __nano_atomic
; CHECK: atomicrmw add
; CHECK-NEXT: ret void
define void @kernel.twin(ptr %p, ptr %buf) #0 {
  %a = atomicrmw add ptr %p, i32 1 monotonic, align 4
  ret void
}

attributes #0 = { "nano.twin" }
