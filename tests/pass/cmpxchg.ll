; cmpxchg, strong and weak: kind compare_exchange, success order in `order`,
; failure order in flags bits 4..6, NANO_SITE_WEAK (1) for weak, and the
; instruction (with its {value, success} result) unchanged.
; RUN: %opt_nano -passes=nano-atomics -nano-atomics-inline=0 -S %s | FileCheck %s

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

; flags = failure << 4 | weak: seq_cst/seq_cst strong 80, acq_rel/acquire
; weak 33, release/monotonic strong 0, monotonic/monotonic weak 1, acquire/acquire 32.
; CHECK: @nano.sites = private global [5 x %struct.nano_site]
; CHECK-SAME: { i32 0, i16 3, i8 5, i8 80, i32 4,
; CHECK-SAME: { i32 0, i16 3, i8 4, i8 33, i32 8,
; CHECK-SAME: { i32 0, i16 3, i8 3, i8 0, i32 1,
; CHECK-SAME: { i32 0, i16 3, i8 0, i8 1, i32 16,
; CHECK-SAME: { i32 0, i16 3, i8 2, i8 32, i32 8,

define i1 @cas(ptr %p, i32 %e, i32 %n, i64 %e8, i64 %n8, ptr %q) {
; CHECK: call void @__nano_atomic(ptr @nano.sites)
; CHECK: %r0 = cmpxchg ptr %p, i32 %e, i32 %n seq_cst seq_cst, align 4
  %r0 = cmpxchg ptr %p, i32 %e, i32 %n seq_cst seq_cst, align 4
; CHECK: i64 0, i64 1))
; CHECK: %r1 = cmpxchg weak ptr %p, i64 %e8, i64 %n8 acq_rel acquire, align 8
  %r1 = cmpxchg weak ptr %p, i64 %e8, i64 %n8 acq_rel acquire, align 8
; CHECK: i64 0, i64 2))
; CHECK: %r2 = cmpxchg ptr %p, i8 1, i8 2 release monotonic, align 1
  %r2 = cmpxchg ptr %p, i8 1, i8 2 release monotonic, align 1
; CHECK: i64 0, i64 3))
; CHECK: %r3 = cmpxchg weak ptr %p, i128 1, i128 2 monotonic monotonic, align 16
  %r3 = cmpxchg weak ptr %p, i128 1, i128 2 monotonic monotonic, align 16
; CHECK: i64 0, i64 4))
; CHECK: %r4 = cmpxchg ptr %p, ptr null, ptr %q acquire acquire, align 8
  %r4 = cmpxchg ptr %p, ptr null, ptr %q acquire acquire, align 8
; CHECK: %ok = extractvalue { i32, i1 } %r0, 1
; CHECK-NEXT: ret i1 %ok
  %ok = extractvalue { i32, i1 } %r0, 1
  ret i1 %ok
}
