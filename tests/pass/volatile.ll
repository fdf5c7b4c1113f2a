; Volatile atomic operations carry NANO_SITE_VOLATILE (2) and stay volatile.
; RUN: %opt_nano -passes=nano-atomics -S %s | FileCheck %s

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

; CHECK: @nano.sites = private global [5 x %struct.nano_site]
; CHECK-SAME: { i32 0, i16 0, i8 5, i8 2, i32 4,
; CHECK-SAME: { i32 0, i16 1, i8 3, i8 2, i32 4,
; CHECK-SAME: { i32 0, i16 4, i8 0, i8 2, i32 4,
; CHECK-SAME: { i32 0, i16 3, i8 5, i8 35, i32 4,
; CHECK-SAME: { i32 0, i16 4, i8 0, i8 0, i32 4,

define void @vol(ptr %p) {
; CHECK: %a = load atomic volatile i32, ptr %p seq_cst, align 4
  %a = load atomic volatile i32, ptr %p seq_cst, align 4
; CHECK: store atomic volatile i32 %a, ptr %p release, align 4
  store atomic volatile i32 %a, ptr %p release, align 4
; CHECK: %b = atomicrmw volatile add ptr %p, i32 1 monotonic, align 4
  %b = atomicrmw volatile add ptr %p, i32 1 monotonic, align 4
; CHECK: %c = cmpxchg weak volatile ptr %p, i32 0, i32 1 seq_cst acquire, align 4
  %c = cmpxchg weak volatile ptr %p, i32 0, i32 1 seq_cst acquire, align 4
; CHECK: %d = atomicrmw add ptr %p, i32 1 monotonic, align 4
  %d = atomicrmw add ptr %p, i32 1 monotonic, align 4
; CHECK-NOT: __nano_atomic
; CHECK: %e = load volatile i32, ptr %p, align 4
  %e = load volatile i32, ptr %p, align 4
  ret void
}
