; Atomic loads and stores of every ordering and of several widths are sites
; (kind load 0 / store 1, size in bytes from the DataLayout); plain loads and
; stores are not.
; RUN: %opt_nano -passes=nano-atomics -nano-atomics-inline=0 -S %s | FileCheck %s

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

; unordered counts as relaxed (0).
; CHECK: @nano.sites = private global [8 x %struct.nano_site]
; CHECK-SAME: { i32 0, i16 0, i8 0, i8 0, i32 1,
; CHECK-SAME: { i32 0, i16 0, i8 0, i8 0, i32 2,
; CHECK-SAME: { i32 0, i16 0, i8 2, i8 0, i32 8,
; CHECK-SAME: { i32 0, i16 0, i8 5, i8 0, i32 8,
; CHECK-SAME: { i32 0, i16 1, i8 0, i8 0, i32 4,
; CHECK-SAME: { i32 0, i16 1, i8 0, i8 0, i32 8,
; CHECK-SAME: { i32 0, i16 1, i8 3, i8 0, i32 16,
; CHECK-SAME: { i32 0, i16 1, i8 5, i8 0, i32 8,

define i64 @loads_stores(ptr %p, ptr %q) {
; CHECK: call void @__nano_atomic(ptr @nano.sites)
; CHECK: %a = load atomic i8, ptr %p unordered, align 1
  %a = load atomic i8, ptr %p unordered, align 1
; CHECK: i64 0, i64 1))
; CHECK: %b = load atomic i16, ptr %p monotonic, align 2
  %b = load atomic i16, ptr %p monotonic, align 2
; CHECK: i64 0, i64 2))
; CHECK: %c = load atomic i64, ptr %p acquire, align 8
  %c = load atomic i64, ptr %p acquire, align 8
; CHECK: i64 0, i64 3))
; CHECK: %d = load atomic ptr, ptr %q seq_cst, align 8
  %d = load atomic ptr, ptr %q seq_cst, align 8
; CHECK-NOT: __nano_atomic
; CHECK: %plain = load i64, ptr %q, align 8
  %plain = load i64, ptr %q, align 8
; CHECK: i64 0, i64 4))
; CHECK: store atomic float 1.000000e+00, ptr %p unordered, align 4
  store atomic float 1.0, ptr %p unordered, align 4
; CHECK: i64 0, i64 5))
; CHECK: store atomic i64 %c, ptr %p monotonic, align 8
  store atomic i64 %c, ptr %p monotonic, align 8
; CHECK: i64 0, i64 6))
; CHECK: store atomic i128 7, ptr %p release, align 16
  store atomic i128 7, ptr %p release, align 16
; CHECK: i64 0, i64 7))
; CHECK: store atomic double 2.000000e+00, ptr %q seq_cst, align 8
  store atomic double 2.0, ptr %q seq_cst, align 8
; CHECK-NOT: __nano_atomic
; CHECK: store i64 %plain, ptr %q, align 8
  store i64 %plain, ptr %q, align 8
  %r = add i64 %c, %plain
  ret i64 %r
}
