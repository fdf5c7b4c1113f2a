; A host module the pass cannot handle (the weak hooks need ELF) gets one
; warning naming the module and the reason, and compiles unchanged.
; RUN: %opt -S %s -o %t.ref.ll
; RUN: %opt_nano -passes=nano-atomics -S %s -o %t.ll 2> %t.err
; RUN: diff %t.ref.ll %t.ll
; RUN: FileCheck %s < %t.err
; CHECK: warning: nanoprobe: module '{{.*}}unsupported-target.ll' left without atomic instrumentation: the hooks need ELF weak symbols, the target is x86_64-apple-macosx12.0.0
; CHECK-NOT: warning

target triple = "x86_64-apple-macosx12.0.0"

define void @f(ptr %p) {
  %a = atomicrmw add ptr %p, i32 1 monotonic, align 4
  ret void
}
