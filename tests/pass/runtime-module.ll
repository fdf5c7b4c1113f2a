; Modules that define the hooks (the runtime) or already call them (code built
; with prelude.h) are left unchanged, so nothing is counted twice.
; RUN: split-file %s %t
; RUN: %opt -S %t/runtime.ll -o %t/runtime.ref.ll
; RUN: %opt_nano -passes=nano-atomics -nano-atomics-inline=0 -S %t/runtime.ll -o %t/runtime.out.ll
; RUN: diff %t/runtime.ref.ll %t/runtime.out.ll
; RUN: %opt -S %t/prelude.ll -o %t/prelude.ref.ll
; RUN: %opt_nano -passes=nano-atomics -nano-atomics-inline=0 -S %t/prelude.ll -o %t/prelude.out.ll
; RUN: diff %t/prelude.ref.ll %t/prelude.out.ll
; A module that only declares the hooks, unused, is instrumented, and the
; declaration becomes a preemptible weak reference:
; RUN: %opt_nano -passes=nano-atomics -nano-atomics-inline=0 -S %t/declares.ll | FileCheck %s
; CHECK: declare extern_weak void @__nano_atomic(ptr)
; CHECK: call void @__nano_atomic(ptr @nano.sites)

;--- runtime.ll
target triple = "x86_64-pc-linux-gnu"
@count = global i64 0
define void @__nano_atomic(ptr %site) {
  %a = atomicrmw add ptr @count, i64 1 monotonic, align 8
  ret void
}
define void @tracker_flush(ptr %p) {
  %a = atomicrmw xchg ptr %p, i64 0 acq_rel, align 8
  ret void
}

;--- prelude.ll
target triple = "x86_64-pc-linux-gnu"
@site = private global [64 x i8] zeroinitializer
declare extern_weak void @__nano_atomic(ptr)
define i32 @f(ptr %p) {
  call void @__nano_atomic(ptr @site)
  %a = atomicrmw add ptr %p, i32 1 seq_cst, align 4
  ret i32 %a
}

;--- declares.ll
target triple = "x86_64-pc-linux-gnu"
declare hidden void @__nano_atomic(ptr)
define i32 @f(ptr %p) {
  %a = atomicrmw add ptr %p, i32 1 seq_cst, align 4
  ret i32 %a
}
