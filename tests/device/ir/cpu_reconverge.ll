; CPU twins (virtual waves): each loop's blocks are numbered together, so a
; loop exit that leaves from the header gets its site after the body's; a
; loop holding a site or a call gets __nano_dh_reconverge at its latch with
; the site count at the loop's end (the exit's site id); a loop with neither
; gets none; cloned callees count the call depth (__nano_dh_enter/leave).
; The originals are unchanged.
; (The module is read from standard input, so that its id, a hash of its name,
; and with it the site ids are the same in every checkout.)
; RUN: %opt -load-pass-plugin=%plugin -passes=nano-device -S < %s | FileCheck %s

source_filename = "cpu_reconverge.ll"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

@.str = private unnamed_addr constant [12 x i8] c"nano_kernel\00", section "llvm.metadata"
@llvm.global.annotations = appending global [2 x { ptr, ptr, ptr, i32, ptr }] [{ ptr, ptr, ptr, i32, ptr } { ptr @k, ptr @.str, ptr null, i32 0, ptr null }, { ptr, ptr, ptr, i32, ptr } { ptr @quiet, ptr @.str, ptr null, i32 0, ptr null }], section "llvm.metadata"

define internal void @helper(ptr %p) noinline {
  %v = load volatile i32, ptr %p, align 4
  ret void
}

; CHECK-LABEL: define void @k(
; CHECK-NOT: __nano_dh
; CHECK: ret void
define void @k(ptr %a, ptr %out) {
entry:
  br label %header
header:
  %k = phi i32 [ 0, %entry ], [ %k1, %latch ]
  %c = icmp ult i32 %k, 4
  br i1 %c, label %body, label %exit
exit:
  store i32 1, ptr %out, align 4
  ret void
body:
  %odd = and i32 %k, 1
  %b = icmp eq i32 %odd, 0
  br i1 %b, label %then, label %latch
then:
  %x = load volatile i32, ptr %a, align 4
  call void @helper(ptr %a)
  br label %latch
latch:
  %k1 = add i32 %k, 1
  br label %header
}

; No access and no call inside the loop: no point.
define void @quiet(ptr %out, i32 %n) {
entry:
  br label %header
header:
  %k = phi i32 [ 0, %entry ], [ %k1, %header ]
  %k1 = add i32 %k, 1
  %c = icmp ult i32 %k1, %n
  br i1 %c, label %header, label %exit
exit:
  store i32 %k1, ptr %out, align 4
  ret void
}

; CHECK-LABEL: define void @__nano_twin_k(
; CHECK-NOT: __nano_dh_enter
; CHECK: exit:
; CHECK: call void @__nano_dh_access(ptr %nano_dh_desc, i64 [[#%d,EXIT:]],
; CHECK: then:
; CHECK: call void @__nano_dh_access(ptr %nano_dh_desc, i64 [[#%d,EXIT-1]],
; CHECK: call void @helper.nano_twin(
; CHECK: latch:
; CHECK: call void @__nano_dh_reconverge(ptr %nano_dh_desc, i64 [[#%d,EXIT]])
; CHECK-NEXT: br label %header

; CHECK-LABEL: define void @__nano_twin_quiet(
; CHECK-NOT: __nano_dh_reconverge
; CHECK: ret void

; CHECK-LABEL: define internal void @helper.nano_twin(
; CHECK-NEXT: call void @__nano_dh_enter(ptr %nano_dh_desc)
; CHECK: call void @__nano_dh_access(
; CHECK: call void @__nano_dh_leave(ptr %nano_dh_desc)
; CHECK-NEXT: ret void
