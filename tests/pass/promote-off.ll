; -nano-atomics-promote=0 and NANO_ATOMICS_PROMOTE=0 keep a guarded hook call
; before every operation, also in loops (each event reported as it happens);
; any other value is an error naming the variable.
; RUN: %opt_nano -passes=nano-atomics -nano-atomics-inline=0 -nano-atomics-promote=0 -S %s | FileCheck %s --check-prefix=OFF
; RUN: env NANO_ATOMICS_PROMOTE=0 %opt_nano -passes=nano-atomics -nano-atomics-inline=0 -S %s | FileCheck %s --check-prefix=OFF
; RUN: env NANO_ATOMICS_PROMOTE=0 %opt_nano -passes=nano-atomics -nano-atomics-inline=0 -nano-atomics-promote=1 -S %s | FileCheck %s --check-prefix=ON
; RUN: env NANO_ATOMICS_PROMOTE=yes %not %opt_nano -passes=nano-atomics -nano-atomics-inline=0 -S %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

; BAD: error: nanoprobe: NANO_ATOMICS_PROMOTE=yes: expected 0 or 1

define void @counted(ptr %p, i64 %n) {
; OFF-LABEL: define void @counted(
; OFF: loop:
; OFF: [[C:%.*]] = icmp ne ptr @__nano_atomic, null
; OFF-NEXT: br i1 [[C]]
; OFF: call void @__nano_atomic(ptr @nano.sites)
; OFF: atomicrmw add ptr %p, i64 1 monotonic
; ON-LABEL: define void @counted(
; ON-NOT: call void @__nano_atomic(
; ON: call void @nano.atomic_flush(ptr @nano.sites,
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %old = atomicrmw add ptr %p, i64 1 monotonic
  %i.next = add i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
; OFF-NOT: nano.atomic_flush
; OFF-NOT: __nano_atomic_n
