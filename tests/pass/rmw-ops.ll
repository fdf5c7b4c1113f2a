; Every atomicrmw operation LLVM 15 has gets a site of its own kind, a guarded
; hook call right before it, and the operation itself stays as written.
; RUN: %opt_nano -passes=nano-atomics -nano-atomics-inline=0 -S %s | FileCheck %s

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

; Sites in instruction order: kind (enum nano_kind), order, flags, size.
; CHECK: @nano.sites = private global [15 x %struct.nano_site]
; CHECK-SAME: { i32 0, i16 2, i8 5, i8 0, i32 4,
; CHECK-SAME: { i32 0, i16 4, i8 0, i8 0, i32 8,
; CHECK-SAME: { i32 0, i16 5, i8 2, i8 0, i32 2,
; CHECK-SAME: { i32 0, i16 6, i8 3, i8 0, i32 1,
; CHECK-SAME: { i32 0, i16 7, i8 4, i8 0, i32 4,
; CHECK-SAME: { i32 0, i16 8, i8 5, i8 0, i32 4,
; CHECK-SAME: { i32 0, i16 9, i8 0, i8 0, i32 4,
; CHECK-SAME: { i32 0, i16 10, i8 0, i8 0, i32 4,
; CHECK-SAME: { i32 0, i16 11, i8 0, i8 0, i32 4,
; CHECK-SAME: { i32 0, i16 12, i8 0, i8 0, i32 16,
; CHECK-SAME: { i32 0, i16 13, i8 0, i8 0, i32 4,
; CHECK-SAME: { i32 0, i16 14, i8 0, i8 0, i32 4,
; CHECK-SAME: { i32 0, i16 15, i8 0, i8 0, i32 8,
; CHECK-SAME: { i32 0, i16 16, i8 0, i8 0, i32 4,
; CHECK-SAME: { i32 0, i16 17, i8 0, i8 0, i32 8,
; CHECK-NOT: %struct.nano_site {

define i32 @all_ops(ptr %p, ptr %q, ptr %r, ptr %s, ptr %f, ptr %d) {
; CHECK-LABEL: define i32 @all_ops(
; CHECK: [[C0:%.*]] = icmp ne ptr @__nano_atomic, null
; CHECK-NEXT: br i1 [[C0]], label %[[T0:.*]], label %[[J0:.*]], !prof
; CHECK: [[T0]]:
; CHECK-NEXT: call void @__nano_atomic(ptr @nano.sites)
; CHECK-NEXT: br label %[[J0]]
; CHECK: [[J0]]:
; CHECK-NEXT: %x0 = atomicrmw xchg ptr %p, i32 1 seq_cst, align 4
  %x0 = atomicrmw xchg ptr %p, i32 1 seq_cst, align 4
; CHECK: call void @__nano_atomic(ptr getelementptr inbounds ([15 x %struct.nano_site], ptr @nano.sites, i64 0, i64 1))
; CHECK: %x1 = atomicrmw add ptr %q, i64 2 monotonic, align 8
  %x1 = atomicrmw add ptr %q, i64 2 monotonic, align 8
; CHECK: i64 0, i64 2))
; CHECK: %x2 = atomicrmw sub ptr %r, i16 3 acquire, align 2
  %x2 = atomicrmw sub ptr %r, i16 3 acquire, align 2
; CHECK: i64 0, i64 3))
; CHECK: %x3 = atomicrmw and ptr %s, i8 4 release, align 1
  %x3 = atomicrmw and ptr %s, i8 4 release, align 1
; CHECK: i64 0, i64 4))
; CHECK: %x4 = atomicrmw nand ptr %p, i32 5 acq_rel, align 4
  %x4 = atomicrmw nand ptr %p, i32 5 acq_rel, align 4
; CHECK: i64 0, i64 5))
; CHECK: %x5 = atomicrmw or ptr %p, i32 6 seq_cst, align 4
  %x5 = atomicrmw or ptr %p, i32 6 seq_cst, align 4
; CHECK: i64 0, i64 6))
; CHECK: %x6 = atomicrmw xor ptr %p, i32 7 monotonic, align 4
  %x6 = atomicrmw xor ptr %p, i32 7 monotonic, align 4
; CHECK: i64 0, i64 7))
; CHECK: %x7 = atomicrmw max ptr %p, i32 8 monotonic, align 4
  %x7 = atomicrmw max ptr %p, i32 8 monotonic, align 4
; CHECK: i64 0, i64 8))
; CHECK: %x8 = atomicrmw min ptr %p, i32 9 monotonic, align 4
  %x8 = atomicrmw min ptr %p, i32 9 monotonic, align 4
; CHECK: i64 0, i64 9))
; CHECK: %x9 = atomicrmw umax ptr %q, i128 10 monotonic, align 16
  %x9 = atomicrmw umax ptr %q, i128 10 monotonic, align 16
; CHECK: i64 0, i64 10))
; CHECK: %x10 = atomicrmw umin ptr %p, i32 11 monotonic, align 4
  %x10 = atomicrmw umin ptr %p, i32 11 monotonic, align 4
; CHECK: i64 0, i64 11))
; CHECK: %x11 = atomicrmw fadd ptr %f, float 1.000000e+00 monotonic, align 4
  %x11 = atomicrmw fadd ptr %f, float 1.0 monotonic, align 4
; CHECK: i64 0, i64 12))
; CHECK: %x12 = atomicrmw fsub ptr %d, double 2.000000e+00 monotonic, align 8
  %x12 = atomicrmw fsub ptr %d, double 2.0 monotonic, align 8
; CHECK: i64 0, i64 13))
; CHECK: %x13 = atomicrmw fmax ptr %f, float 3.000000e+00 monotonic, align 4
  %x13 = atomicrmw fmax ptr %f, float 3.0 monotonic, align 4
; CHECK: i64 0, i64 14))
; CHECK: %x14 = atomicrmw fmin ptr %d, double 4.000000e+00 monotonic, align 8
  %x14 = atomicrmw fmin ptr %d, double 4.0 monotonic, align 8
; The results still flow where they flowed.
; CHECK: %sum = add i32 %x0, %x4
; CHECK-NEXT: ret i32 %sum
  %sum = add i32 %x0, %x4
  ret i32 %sum
}
; CHECK: declare extern_weak void @__nano_atomic(ptr)
