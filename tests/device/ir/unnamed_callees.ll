; Callees without a name (ROCm's hostcall code has @0, @1, ...) each get a
; clone of their own, named nano_unnamed.nano_twin made unique by the module,
; with their accesses instrumented; a function the user defined under a
; clone's name is never taken for a declaration (replaced and erased: the
; plugin crashed here), while a declaration of that name is replaced by the
; clone. Originals unchanged.
; RUN: %opt -load-pass-plugin=%plugin -passes=nano-device -S %s | FileCheck %s

target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

; CHECK-LABEL: define internal void @0(ptr %p)
; CHECK-NEXT: store i32 0, ptr %p
define internal void @0(ptr %p) {
  store i32 0, ptr %p, align 4
  ret void
}

; CHECK-LABEL: define internal void @1(ptr %p)
; CHECK-NEXT: store i32 1, ptr %p
define internal void @1(ptr %p) {
  store i32 1, ptr %p, align 4
  ret void
}

; The user's own function that happens to bear the clone's name: kept as written.
; CHECK-LABEL: define void @helper.nano_twin(ptr %p)
; CHECK-NEXT: store i32 7, ptr %p
; CHECK-NEXT: ret void
define void @helper.nano_twin(ptr %p) {
  store i32 7, ptr %p, align 4
  ret void
}

define internal void @helper(ptr %p) {
  store i32 2, ptr %p, align 4
  ret void
}

; A declaration of a clone's name (as if written by hand) becomes the clone.
declare void @other.nano_twin(ptr, ptr addrspace(1))

define internal void @other(ptr %p) {
  store i32 3, ptr %p, align 4
  ret void
}

; CHECK-LABEL: define void @use_decl(ptr %p)
; CHECK-NEXT: call void @other.nano_twin(ptr %p, ptr addrspace(1) null)
define void @use_decl(ptr %p) {
  call void @other.nano_twin(ptr %p, ptr addrspace(1) null)
  ret void
}

; CHECK-LABEL: define ptx_kernel void @kern(ptr %p)
; CHECK-NEXT: call void @0(ptr %p)
; CHECK-NEXT: call void @1(ptr %p)
; CHECK-NEXT: call void @helper(ptr %p)
; CHECK-NEXT: call void @other(ptr %p)
define ptx_kernel void @kern(ptr %p) {
  call void @0(ptr %p)
  call void @1(ptr %p)
  call void @helper(ptr %p)
  call void @other(ptr %p)
  ret void
}

; CHECK-LABEL: define ptx_kernel void @__nano_twin_kern(ptr %p, ptr addrspace(1) %nano_dh_desc)
; CHECK-NEXT: call void @__nano_dh_block_enter(ptr addrspace(1) %nano_dh_desc)
; CHECK-NEXT: call void @[[U0:nano_unnamed\.nano_twin[.0-9]*]](ptr %p, ptr addrspace(1) %nano_dh_desc)
; CHECK-NEXT: call void @[[U1:nano_unnamed\.nano_twin[.0-9]*]](ptr %p, ptr addrspace(1) %nano_dh_desc)
; CHECK-NEXT: call void @[[H:helper\.nano_twin[.0-9]+]](ptr %p, ptr addrspace(1) %nano_dh_desc)
; CHECK-NEXT: call void @other.nano_twin(ptr %p, ptr addrspace(1) %nano_dh_desc)

; CHECK: define internal void @[[U0]](ptr %p, ptr addrspace(1) %nano_dh_desc)
; CHECK-NEXT: ptrtoint
; CHECK-NEXT: call void @__nano_dh_access(
; CHECK-NEXT: store i32 0, ptr %p
; CHECK: define internal void @[[U1]](ptr %p, ptr addrspace(1) %nano_dh_desc)
; CHECK-NEXT: ptrtoint
; CHECK-NEXT: call void @__nano_dh_access(
; CHECK-NEXT: store i32 1, ptr %p
; CHECK: define internal void @[[H]](ptr %p, ptr addrspace(1) %nano_dh_desc)
; CHECK-NEXT: ptrtoint
; CHECK-NEXT: call void @__nano_dh_access(
; CHECK-NEXT: store i32 2, ptr %p
; CHECK: define internal void @other.nano_twin(ptr %p, ptr addrspace(1) %nano_dh_desc)
; CHECK-NEXT: ptrtoint
; CHECK-NEXT: call void @__nano_dh_access(
; CHECK-NEXT: store i32 3, ptr %p
