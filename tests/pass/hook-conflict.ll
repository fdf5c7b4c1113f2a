; A module whose hook names are taken by declarations of another type cannot
; be instrumented: one warning, and the module compiles unchanged.
; RUN: %opt -S %s -o %t.ref.ll
; RUN: %opt_nano -passes=nano-atomics -S %s -o %t.ll 2> %t.err
; RUN: diff %t.ref.ll %t.ll
; RUN: FileCheck %s < %t.err
; CHECK: warning: nanoprobe: module '{{.*}}hook-conflict.ll' left without atomic instrumentation: __nano_atomic or __nano_register_module is declared with another type
; RUN: %clang_nano -c %s -o %t.o 2>&1 | FileCheck %s

target triple = "x86_64-pc-linux-gnu"

declare i32 @__nano_register_module(i64)

define void @f(ptr %p) {
  %a = atomicrmw add ptr %p, i32 1 monotonic, align 4
  ret void
}
