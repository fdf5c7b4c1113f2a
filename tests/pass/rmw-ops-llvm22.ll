; The atomicrmw operations added after LLVM 15 (uinc_wrap, udec_wrap: 16;
; usub_cond, usub_sat: 20; fmaximum, fminimum: 21) get their own kinds.
; REQUIRES: rmw-uinc-udec, rmw-usub, rmw-fmaximum
; RUN: %opt_nano -passes=nano-atomics -nano-atomics-inline=0 -S %s | FileCheck %s

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

; CHECK: @nano.sites = private global [6 x %struct.nano_site]
; CHECK-SAME: { i32 0, i16 18, i8 5, i8 0, i32 4,
; CHECK-SAME: { i32 0, i16 19, i8 0, i8 0, i32 8,
; CHECK-SAME: { i32 0, i16 20, i8 2, i8 0, i32 4,
; CHECK-SAME: { i32 0, i16 21, i8 3, i8 0, i32 2,
; CHECK-SAME: { i32 0, i16 22, i8 0, i8 0, i32 4,
; CHECK-SAME: { i32 0, i16 23, i8 0, i8 0, i32 8,

define void @new_ops(ptr %p, ptr %q) {
; CHECK: call void @__nano_atomic(ptr @nano.sites)
; CHECK: %a = atomicrmw uinc_wrap ptr %p, i32 1 seq_cst, align 4
  %a = atomicrmw uinc_wrap ptr %p, i32 1 seq_cst, align 4
; CHECK: i64 0, i64 1))
; CHECK: %b = atomicrmw udec_wrap ptr %q, i64 2 monotonic, align 8
  %b = atomicrmw udec_wrap ptr %q, i64 2 monotonic, align 8
; CHECK: i64 0, i64 2))
; CHECK: %c = atomicrmw usub_cond ptr %p, i32 3 acquire, align 4
  %c = atomicrmw usub_cond ptr %p, i32 3 acquire, align 4
; CHECK: i64 0, i64 3))
; CHECK: %d = atomicrmw usub_sat ptr %p, i16 4 release, align 2
  %d = atomicrmw usub_sat ptr %p, i16 4 release, align 2
; CHECK: i64 0, i64 4))
; CHECK: %e = atomicrmw fmaximum ptr %p, float 1.000000e+00 monotonic, align 4
  %e = atomicrmw fmaximum ptr %p, float 1.0 monotonic, align 4
; CHECK: i64 0, i64 5))
; CHECK: %f = atomicrmw fminimum ptr %q, double 2.000000e+00 monotonic, align 8
  %f = atomicrmw fminimum ptr %q, double 2.0 monotonic, align 8
  ret void
}
