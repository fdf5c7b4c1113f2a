; Inline counting (the default): an executable's optimised code counts each
; event that is not promoted in the program itself, behind the call's guard:
; the site's id loaded relaxed, a bound check against the thread's counter
; (__nano_atomic_ctr, one per executable), a relaxed increment, and a call of
; nano.atomic_slow (__nano_atomic_bind, else __nano_atomic) only for a site
; or thread new to the runtime. Position-independent code that is not PIE
; and optnone functions keep the call; so do -nano-atomics-inline=0 and
; NANO_ATOMICS_INLINE=0; any other value is an error naming the variable.
; RUN: split-file %s %t
; RUN: %opt_nano -passes=nano-atomics -S %t/exe.ll | FileCheck %s
; RUN: %opt_nano -passes=nano-atomics -S %t/pie.ll | FileCheck %s --check-prefix=PIE
; RUN: %opt_nano -passes=nano-atomics -S %t/pic.ll | FileCheck %s --check-prefix=CALL
; RUN: %opt_nano -passes=nano-atomics -nano-atomics-inline=0 -S %t/exe.ll | FileCheck %s --check-prefix=CALL
; RUN: env NANO_ATOMICS_INLINE=0 %opt_nano -passes=nano-atomics -S %t/exe.ll | FileCheck %s --check-prefix=CALL
; RUN: env NANO_ATOMICS_INLINE=0 %opt_nano -passes=nano-atomics -nano-atomics-inline=1 -S %t/exe.ll | FileCheck %s
; RUN: env NANO_ATOMICS_INLINE=fast %not %opt_nano -passes=nano-atomics -S %t/exe.ll -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
; RUN: %opt_nano -passes=nano-atomics,nano-atomics -S %t/exe.ll | FileCheck %s --check-prefix=ONCE

; CHECK: $__nano_atomic_ctr = comdat any
; CHECK: @__nano_atomic_ctr = linkonce_odr hidden thread_local(localexec) global { ptr, i32 } zeroinitializer, comdat, align 8
; CHECK-LABEL: define i32 @one(
; CHECK: [[H:%.*]] = icmp ne ptr @__nano_atomic, null
; CHECK-NEXT: br i1 [[H]], label %[[T:.*]], label %[[J:.*]], !prof [[LIKELY:![0-9]+]]
; CHECK: [[T]]:
; CHECK-NEXT: [[ID:%.*]] = load atomic i32, ptr @nano.sites monotonic, align 4
; CHECK-NEXT: [[IDX:%.*]] = add i32 [[ID]], -1
; CHECK: [[CAP:%.*]] = load i32, ptr {{.*}}, align 4
; CHECK-NEXT: [[KNOWN:%.*]] = icmp ult i32 [[IDX]], [[CAP]]
; CHECK-NEXT: br i1 [[KNOWN]], label %[[F:.*]], label %[[S:.*]], !prof [[LIKELY]]
; CHECK: [[F]]:
; CHECK: [[C:%.*]] = load ptr, ptr {{.*}}, align 8
; CHECK-NEXT: [[Z:%.*]] = zext i32 [[IDX]] to i64
; CHECK-NEXT: [[AT:%.*]] = getelementptr inbounds i64, ptr [[C]], i64 [[Z]]
; CHECK-NEXT: [[N:%.*]] = load atomic i64, ptr [[AT]] monotonic, align 8
; CHECK-NEXT: [[N1:%.*]] = add i64 [[N]], 1
; CHECK-NEXT: store atomic i64 [[N1]], ptr [[AT]] monotonic, align 8
; CHECK: [[S]]:
; CHECK-NEXT: call void @nano.atomic_slow(ptr @nano.sites)
; CHECK: [[J]]:
; CHECK-NEXT: %v = atomicrmw add ptr %p, i32 1 seq_cst, align 4
; CHECK-NOT: call void @__nano_atomic(
; CHECK-LABEL: define i32 @cold(
; CHECK: call void @__nano_atomic(ptr getelementptr inbounds ([2 x %struct.nano_site], ptr @nano.sites, i64 0, i64 1))
; CHECK-NEXT: br label
; CHECK: declare extern_weak void @__nano_atomic_bind(ptr, ptr)
; CHECK-LABEL: define internal void @nano.atomic_slow(ptr %0)
; CHECK: icmp ne ptr @__nano_atomic_bind, null
; CHECK: call void @__nano_atomic_bind(ptr %0, ptr
; CHECK: call void @__nano_atomic(ptr %0)
; CHECK: [[LIKELY]] = !{!"branch_weights", i32 1048576, i32 1}

; PIE: @__nano_atomic_ctr = linkonce_odr hidden thread_local(localexec)
; PIE: call void @nano.atomic_slow(

; CALL-NOT: __nano_atomic_ctr
; CALL-NOT: nano.atomic_slow
; CALL: call void @__nano_atomic(ptr @nano.sites)

; BAD: error: nanoprobe: NANO_ATOMICS_INLINE=fast: expected 0 or 1

; ONCE-COUNT-1: define internal void @nano.atomic_slow(
; ONCE-NOT: @__nano_atomic_ctr.

;--- exe.ll
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

define i32 @one(ptr %p) {
  %v = atomicrmw add ptr %p, i32 1 seq_cst, align 4
  ret i32 %v
}

define i32 @cold(ptr %p) noinline optnone {
  %v = atomicrmw add ptr %p, i32 1 seq_cst, align 4
  ret i32 %v
}

;--- pie.ll
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

define i32 @one(ptr %p) {
  %v = atomicrmw add ptr %p, i32 1 seq_cst, align 4
  ret i32 %v
}

!llvm.module.flags = !{!0, !1}
!0 = !{i32 8, !"PIC Level", i32 2}
!1 = !{i32 7, !"PIE Level", i32 2}

;--- pic.ll
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

define i32 @one(ptr %p) {
  %v = atomicrmw add ptr %p, i32 1 seq_cst, align 4
  ret i32 %v
}

!llvm.module.flags = !{!0}
!0 = !{i32 8, !"PIC Level", i32 2}
