; Calls to libatomic's generic and sized functions are sites with
; NANO_SITE_LIBCALL (4): the size from the constant size argument or the _N
; suffix (0 when not constant), the order from a constant order argument or
; NANO_ORDER_UNKNOWN (7). add_fetch counts as fetch_add. Functions that only
; share the prefix, or whose argument count is not libatomic's, are not sites.
; RUN: %opt_nano -passes=nano-atomics -nano-atomics-inline=0 -S %s | FileCheck %s

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

declare void @__atomic_load(i64, ptr, ptr, i32)
declare void @__atomic_store(i64, ptr, ptr, i32)
declare void @__atomic_exchange(i64, ptr, ptr, ptr, i32)
declare i1 @__atomic_compare_exchange(i64, ptr, ptr, ptr, i32, i32)
declare i32 @__atomic_load_4(ptr, i32)
declare void @__atomic_store_8(ptr, i64, i32)
declare i16 @__atomic_exchange_2(ptr, i16, i32)
declare i1 @__atomic_compare_exchange_16(ptr, ptr, i128, i32, i32)
declare i32 @__atomic_fetch_add_4(ptr, i32, i32)
declare i64 @__atomic_add_fetch_8(ptr, i64, i32)
declare i8 @__atomic_nand_fetch_1(ptr, i8, i32)
declare i1 @__atomic_is_lock_free(i64, ptr)
declare void @__atomic_load_weird(ptr)
declare i32 @__atomic_fetch_add_4_odd(ptr, i32)

; CHECK: @nano.sites = private global [11 x %struct.nano_site]
; CHECK-SAME: { i32 0, i16 0, i8 2, i8 4, i32 24,
; CHECK-SAME: { i32 0, i16 1, i8 7, i8 4, i32 0,
; CHECK-SAME: { i32 0, i16 2, i8 4, i8 4, i32 32,
; CHECK-SAME: { i32 0, i16 3, i8 5, i8 36, i32 12,
; CHECK-SAME: { i32 0, i16 0, i8 0, i8 4, i32 4,
; CHECK-SAME: { i32 0, i16 1, i8 3, i8 4, i32 8,
; CHECK-SAME: { i32 0, i16 2, i8 5, i8 4, i32 2,
; CHECK-SAME: { i32 0, i16 3, i8 4, i8 116, i32 16,
; CHECK-SAME: { i32 0, i16 4, i8 0, i8 4, i32 4,
; CHECK-SAME: { i32 0, i16 4, i8 5, i8 4, i32 8,
; CHECK-SAME: { i32 0, i16 7, i8 7, i8 4, i32 1,

define void @calls(ptr %p, ptr %r, i64 %n, i32 %o) {
; CHECK: call void @__nano_atomic(ptr @nano.sites)
; CHECK: call void @__atomic_load(i64 24, ptr %p, ptr %r, i32 2)
  call void @__atomic_load(i64 24, ptr %p, ptr %r, i32 2)
; CHECK: i64 0, i64 1))
; CHECK: call void @__atomic_store(i64 %n, ptr %p, ptr %r, i32 %o)
  call void @__atomic_store(i64 %n, ptr %p, ptr %r, i32 %o)
; CHECK: i64 0, i64 2))
; CHECK: call void @__atomic_exchange(i64 32, ptr %p, ptr %r, ptr %r, i32 4)
  call void @__atomic_exchange(i64 32, ptr %p, ptr %r, ptr %r, i32 4)
; CHECK: i64 0, i64 3))
; CHECK: %ok = call i1 @__atomic_compare_exchange(i64 12, ptr %p, ptr %r, ptr %r, i32 5, i32 2)
  %ok = call i1 @__atomic_compare_exchange(i64 12, ptr %p, ptr %r, ptr %r, i32 5, i32 2)
; CHECK: i64 0, i64 4))
; CHECK: %l = call i32 @__atomic_load_4(ptr %p, i32 0)
  %l = call i32 @__atomic_load_4(ptr %p, i32 0)
; CHECK: i64 0, i64 5))
; CHECK: call void @__atomic_store_8(ptr %p, i64 1, i32 3)
  call void @__atomic_store_8(ptr %p, i64 1, i32 3)
; CHECK: i64 0, i64 6))
; CHECK: %x = call i16 @__atomic_exchange_2(ptr %p, i16 1, i32 5)
  %x = call i16 @__atomic_exchange_2(ptr %p, i16 1, i32 5)
; CHECK: i64 0, i64 7))
; CHECK: %c = call i1 @__atomic_compare_exchange_16(ptr %p, ptr %r, i128 1, i32 4, i32 %o)
  %c = call i1 @__atomic_compare_exchange_16(ptr %p, ptr %r, i128 1, i32 4, i32 %o)
; CHECK: i64 0, i64 8))
; CHECK: %fa = call i32 @__atomic_fetch_add_4(ptr %p, i32 1, i32 0)
  %fa = call i32 @__atomic_fetch_add_4(ptr %p, i32 1, i32 0)
; CHECK: i64 0, i64 9))
; CHECK: %af = call i64 @__atomic_add_fetch_8(ptr %p, i64 1, i32 5)
  %af = call i64 @__atomic_add_fetch_8(ptr %p, i64 1, i32 5)
; CHECK: i64 0, i64 10))
; CHECK: %nf = call i8 @__atomic_nand_fetch_1(ptr %p, i8 1, i32 99)
  %nf = call i8 @__atomic_nand_fetch_1(ptr %p, i8 1, i32 99)
; CHECK-NOT: __nano_atomic(
; CHECK: %free = call i1 @__atomic_is_lock_free(i64 8, ptr %p)
  %free = call i1 @__atomic_is_lock_free(i64 8, ptr %p)
; CHECK-NOT: __nano_atomic(
; CHECK: call void @__atomic_load_weird(ptr %p)
  call void @__atomic_load_weird(ptr %p)
; CHECK-NOT: __nano_atomic(
; CHECK: %odd = call i32 @__atomic_fetch_add_4_odd(ptr %p, i32 1)
  %odd = call i32 @__atomic_fetch_add_4_odd(ptr %p, i32 1)
  ret void
}
