; Loop counter promotion: a site in a loop whose calls all return normally is
; counted in a register (n += hooks present) and reported through
; nano.atomic_flush at every exit of its innermost loop and when n reaches
; 2^16; sites outside loops, in loops with calls that may not come back, and
; in optnone functions keep a guarded hook call per event.
; RUN: %opt_nano -passes=nano-atomics -nano-atomics-inline=0 -S %s | FileCheck %s
; RUN: %opt_nano -passes=nano-atomics -nano-atomics-inline=0 -S %s | %opt -passes=verify -disable-output

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

declare void @opaque()
declare void @pure() nounwind willreturn
declare i32 @__gxx_personality_v0(...)

; A counted loop: no hook call in the loop, a register count instead.
define void @counted(ptr %p, i64 %n) {
; CHECK-LABEL: define void @counted(
; CHECK-NOT: alloca
; CHECK: loop:
; CHECK-NEXT: %[[N:.*]] = phi i64 [ 0, %entry ], [ %[[NEXT:.*]], %[[OP:[0-9]+]] ]
; CHECK-NEXT: %i = phi i64
; CHECK-NEXT: %nano.hooked = icmp ne ptr @__nano_atomic, null
; CHECK-NEXT: %[[HK:.*]] = zext i1 %nano.hooked to i64
; CHECK-NEXT: %[[N1:.*]] = add i64 %[[N]], %[[HK]]
; CHECK-NEXT: %nano.full = icmp eq i64 %[[N1]], 65536
; CHECK-NEXT: br i1 %nano.full, label %[[FULL:.*]], label %[[OP]], !prof ![[RARE:[0-9]+]]
; CHECK: [[FULL]]:
; CHECK-NEXT: call void @nano.atomic_flush(ptr @nano.sites, i64 %[[N1]])
; CHECK-NEXT: br label %[[OP]]
; CHECK: [[OP]]:
; CHECK-NEXT: %[[NEXT]] = phi i64 [ 0, %[[FULL]] ], [ %[[N1]], %loop ]
; CHECK-NEXT: atomicrmw add ptr %p, i64 1 monotonic
; CHECK-NOT: call void @__nano_atomic(
; CHECK: exit:
; CHECK-NEXT: %nano.any = icmp ne i64 %[[NEXT]], 0
; CHECK-NEXT: br i1 %nano.any, label %[[REPORT:.*]], label %[[DONE:.*]]
; CHECK: [[REPORT]]:
; CHECK-NEXT: call void @nano.atomic_flush(ptr @nano.sites, i64 %[[NEXT]])
; CHECK-NEXT: br label %[[DONE]]
; CHECK: [[DONE]]:
; CHECK-NEXT: ret void
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

; Two exits, one of them shared with the path that skips the loop: it gets a
; dedicated exit block, so the count is reported once per loop execution.
define i32 @two_exits(ptr %p, i32 %n, i1 %skip) {
; CHECK-LABEL: define i32 @two_exits(
; CHECK-NOT: call void @__nano_atomic(
; CHECK: call void @nano.atomic_flush(ptr getelementptr inbounds ([{{[0-9]+}} x %struct.nano_site], ptr @nano.sites, i64 0, i64 1), i64
; CHECK: call void @nano.atomic_flush(ptr getelementptr inbounds ([{{[0-9]+}} x %struct.nano_site], ptr @nano.sites, i64 0, i64 1), i64
; CHECK: call void @nano.atomic_flush(ptr getelementptr inbounds ([{{[0-9]+}} x %struct.nano_site], ptr @nano.sites, i64 0, i64 1), i64
; CHECK-NOT: call void @nano.atomic_flush
; CHECK: ret i32
entry:
  br i1 %skip, label %out, label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %latch ]
  %v = load atomic i32, ptr %p acquire, align 4
  %stop = icmp eq i32 %v, 0
  br i1 %stop, label %out, label %latch
latch:
  %i.next = add i32 %i, 1
  %more = icmp slt i32 %i.next, %n
  br i1 %more, label %loop, label %after
after:
  ret i32 1
out:
  ret i32 0
}

; Nested loops: the inner site reports at the inner loop's exit, the outer
; site at the outer loop's exit; calls that are nounwind and willreturn do
; not prevent promotion.
define void @nested(ptr %p, i32 %n) {
; CHECK-LABEL: define void @nested(
; CHECK-NOT: call void @__nano_atomic(
; CHECK: inner.exit:
; CHECK: call void @nano.atomic_flush(ptr getelementptr inbounds ([{{[0-9]+}} x %struct.nano_site], ptr @nano.sites, i64 0, i64 2), i64
; CHECK: outer.exit:
; CHECK: call void @nano.atomic_flush(ptr getelementptr inbounds ([{{[0-9]+}} x %struct.nano_site], ptr @nano.sites, i64 0, i64 3), i64
; CHECK: ret void
entry:
  br label %outer
outer:
  %i = phi i32 [ 0, %entry ], [ %i.next, %inner.exit ]
  br label %inner
inner:
  %j = phi i32 [ 0, %outer ], [ %j.next, %inner ]
  %a = atomicrmw add ptr %p, i32 1 monotonic
  call void @pure()
  %j.next = add i32 %j, 1
  %jm = icmp slt i32 %j.next, %n
  br i1 %jm, label %inner, label %inner.exit
inner.exit:
  %b = atomicrmw sub ptr %p, i32 1 monotonic
  %i.next = add i32 %i, 1
  %im = icmp slt i32 %i.next, %n
  br i1 %im, label %outer, label %outer.exit
outer.exit:
  ret void
}

; Outside a loop: a guarded call per event.
define void @straight(ptr %p) {
; CHECK-LABEL: define void @straight(
; CHECK: [[C:%.*]] = icmp ne ptr @__nano_atomic, null
; CHECK-NEXT: br i1 [[C]]
; CHECK: call void @__nano_atomic(ptr getelementptr inbounds ([{{[0-9]+}} x %struct.nano_site], ptr @nano.sites, i64 0, i64 4))
; CHECK-NOT: nano.atomic_flush
; CHECK: ret void
  store atomic i32 1, ptr %p seq_cst, align 4
  ret void
}

; A loop that calls a function that may not return (exit, longjmp) or may
; unwind: a count held in a register could be lost, so no promotion.
define void @opaque_call(ptr %p, i32 %n) {
; CHECK-LABEL: define void @opaque_call(
; CHECK: call void @__nano_atomic(ptr getelementptr inbounds ([{{[0-9]+}} x %struct.nano_site], ptr @nano.sites, i64 0, i64 5))
; CHECK-NOT: nano.atomic_flush
; CHECK: ret void
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  %a = atomicrmw or ptr %p, i32 1 monotonic
  call void @opaque() nounwind
  %i.next = add i32 %i, 1
  %m = icmp slt i32 %i.next, %n
  br i1 %m, label %loop, label %exit
exit:
  ret void
}

; An invoke in the loop (an exception can leave it through the landing pad):
; no promotion.
define void @with_invoke(ptr %p, i32 %n) personality ptr @__gxx_personality_v0 {
; CHECK-LABEL: define void @with_invoke(
; CHECK: call void @__nano_atomic(ptr getelementptr inbounds ([{{[0-9]+}} x %struct.nano_site], ptr @nano.sites, i64 0, i64 6))
; CHECK-NOT: nano.atomic_flush
; CHECK: ret void
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %cont ]
  %a = atomicrmw xchg ptr %p, i32 1 monotonic
  invoke void @pure() to label %cont unwind label %lpad
cont:
  %i.next = add i32 %i, 1
  %m = icmp slt i32 %i.next, %n
  br i1 %m, label %loop, label %exit
lpad:
  %lp = landingpad { ptr, i32 } cleanup
  resume { ptr, i32 } %lp
exit:
  ret void
}

; optnone (clang -O0): a call per event.
define void @unoptimised(ptr %p, i32 %n) noinline optnone {
; CHECK-LABEL: define void @unoptimised(
; CHECK: call void @__nano_atomic(ptr getelementptr inbounds ([{{[0-9]+}} x %struct.nano_site], ptr @nano.sites, i64 0, i64 7))
; CHECK-NOT: nano.atomic_flush
; CHECK: ret void
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  %a = atomicrmw and ptr %p, i32 1 monotonic
  %i.next = add i32 %i, 1
  %m = icmp slt i32 %i.next, %n
  br i1 %m, label %loop, label %exit
exit:
  ret void
}

; The flush function: __nano_atomic_n when the runtime has it, else one
; __nano_atomic call per event.
; CHECK: declare extern_weak void @__nano_atomic_n(ptr, i64)
; CHECK-LABEL: define internal void @nano.atomic_flush(ptr %0, i64 %1)
; CHECK: %nano.has_n = icmp ne ptr @__nano_atomic_n, null
; CHECK-NEXT: br i1 %nano.has_n, label %bulk, label %each
; CHECK: bulk:
; CHECK-NEXT: call void @__nano_atomic_n(ptr %0, i64 %1)
; CHECK-NEXT: ret void
; CHECK: each:
; CHECK-NEXT: %left = phi i64 [ %1, %entry ], [ %next, %each ]
; CHECK-NEXT: call void @__nano_atomic(ptr %0)
; CHECK: ![[RARE]] = !{!"branch_weights", i32 1, i32 1048576}
