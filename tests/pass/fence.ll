; Fences: thread fence (26) for the system scope, signal fence (27) for
; syncscope("singlethread"); the order is recorded, the size is 0.
; RUN: %opt_nano -passes=nano-atomics -nano-atomics-inline=0 -S %s | FileCheck %s

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

; CHECK: @nano.sites = private global [6 x %struct.nano_site]
; CHECK-SAME: { i32 0, i16 26, i8 2, i8 0, i32 0,
; CHECK-SAME: { i32 0, i16 26, i8 3, i8 0, i32 0,
; CHECK-SAME: { i32 0, i16 26, i8 4, i8 0, i32 0,
; CHECK-SAME: { i32 0, i16 26, i8 5, i8 0, i32 0,
; CHECK-SAME: { i32 0, i16 27, i8 2, i8 0, i32 0,
; CHECK-SAME: { i32 0, i16 27, i8 5, i8 0, i32 0,

define void @fences() {
; CHECK: call void @__nano_atomic(ptr @nano.sites)
; CHECK: fence acquire
  fence acquire
; CHECK: i64 0, i64 1))
; CHECK-NEXT: br label
; CHECK: fence release
  fence release
; CHECK: i64 0, i64 2))
; CHECK: fence acq_rel
  fence acq_rel
; CHECK: i64 0, i64 3))
; CHECK: fence seq_cst
  fence seq_cst
; CHECK: i64 0, i64 4))
; CHECK: fence syncscope("singlethread") acquire
  fence syncscope("singlethread") acquire
; CHECK: i64 0, i64 5))
; CHECK: fence syncscope("singlethread") seq_cst
  fence syncscope("singlethread") seq_cst
  ret void
}
