; A module is never instrumented twice: running the pass again (or on a module
; that carries the "nano.atomics" flag) leaves it as it is.
; RUN: %opt_nano -passes=nano-atomics -nano-atomics-inline=0 -S %s > %t.once.ll
; RUN: %opt_nano -nano-atomics-inline=0 -passes=nano-atomics,nano-atomics -S %s | FileCheck %s
; RUN: %opt -S %t.once.ll > %t.once.norm.ll
; RUN: %opt_nano -passes=nano-atomics -nano-atomics-inline=0 -S %t.once.ll > %t.twice.ll
; RUN: diff %t.once.norm.ll %t.twice.ll
; With the plugin in the pipeline and nano-atomics asked for again:
; RUN: %opt_nano -nano-atomics-inline=0 -passes='default<O2>,nano-atomics' -S %s | FileCheck %s

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

; CHECK: @nano.sites = private global [2 x %struct.nano_site]
; CHECK-NOT: @nano.sites.
; CHECK-LABEL: define {{.*}}@f(
; CHECK: call void @__nano_atomic(ptr @nano.sites)
; CHECK-NOT: call void @__nano_atomic(ptr @nano.sites)
; CHECK: atomicrmw add
; CHECK: call void @__nano_atomic(ptr getelementptr inbounds ([2 x %struct.nano_site], ptr @nano.sites, i64 0, i64 1))
; CHECK-NOT: call void @__nano_atomic(
; CHECK: load atomic
; CHECK: define internal void @nano.module_ctor()
; CHECK-NOT: define internal void @nano.module_ctor

define i32 @f(ptr %p) {
  %a = atomicrmw add ptr %p, i32 1 seq_cst, align 4
  %b = load atomic i32, ptr %p acquire, align 4
  %c = add i32 %a, %b
  ret i32 %c
}
