; The twin prefix is reserved: a kernel whose name already starts with it gets
; no twin (no "__nano_twin___nano_twin_..."), even without the "nano.twin"
; attribute; an ordinary kernel beside it still gets its twin.
; RUN: %opt -load-pass-plugin=%plugin -passes=nano-device -S %s | FileCheck %s --implicit-check-not=__nano_twin___nano_twin_

target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7"
target triple = "amdgcn-amd-amdhsa"

; CHECK: define amdgpu_kernel void @__nano_twin_handmade(ptr addrspace(1) %p)
; CHECK-NEXT: store i32 1, ptr addrspace(1) %p, align 4
; CHECK-NEXT: ret void
define amdgpu_kernel void @__nano_twin_handmade(ptr addrspace(1) %p) {
  store i32 1, ptr addrspace(1) %p, align 4
  ret void
}

; CHECK: define amdgpu_kernel void @plain(ptr addrspace(1) %p)
; CHECK: define amdgpu_kernel void @__nano_twin_plain(ptr addrspace(1) %p, ptr addrspace(1)
define amdgpu_kernel void @plain(ptr addrspace(1) %p) {
  store i32 2, ptr addrspace(1) %p, align 4
  ret void
}
