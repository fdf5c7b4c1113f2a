; OpenCL per-argument metadata (kernel_arg_*) of a twin gets one entry for the
; descriptor; the original's metadata is unchanged.
; RUN: %opt -load-pass-plugin=%plugin -passes=nano-device -S %s | FileCheck %s

target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7"
target triple = "amdgcn-amd-amdhsa"

; CHECK: define amdgpu_kernel void @scale(ptr addrspace(1) %x, float %s) !kernel_arg_addr_space ![[AS:[0-9]+]] !kernel_arg_access_qual ![[AQ:[0-9]+]] !kernel_arg_type ![[TY:[0-9]+]] !kernel_arg_base_type ![[TY]] !kernel_arg_type_qual ![[TQ:[0-9]+]] !kernel_arg_name ![[NM:[0-9]+]] {
; CHECK: define amdgpu_kernel void @__nano_twin_scale(ptr addrspace(1) %x, float %s, ptr addrspace(1) %nano_dh_desc) #{{[0-9]+}} !kernel_arg_addr_space ![[TAS:[0-9]+]] !kernel_arg_access_qual ![[TAQ:[0-9]+]] !kernel_arg_type ![[TTY:[0-9]+]] !kernel_arg_base_type ![[TTY]] !kernel_arg_type_qual ![[TTQ:[0-9]+]] !kernel_arg_name ![[TNM:[0-9]+]] {
; CHECK-DAG: ![[AS]] = !{i32 1, i32 0}
; CHECK-DAG: ![[TAS]] = !{i32 1, i32 0, i32 1}
; CHECK-DAG: ![[AQ]] = !{!"none", !"none"}
; CHECK-DAG: ![[TAQ]] = !{!"none", !"none", !"none"}
; CHECK-DAG: ![[TY]] = !{!"float*", !"float"}
; CHECK-DAG: ![[TTY]] = !{!"float*", !"float", !"void*"}
; CHECK-DAG: ![[TQ]] = !{!"", !""}
; CHECK-DAG: ![[TTQ]] = !{!"", !"", !""}
; CHECK-DAG: ![[NM]] = !{!"x", !"s"}
; CHECK-DAG: ![[TNM]] = !{!"x", !"s", !"nano_dh_desc"}
define amdgpu_kernel void @scale(ptr addrspace(1) %x, float %s) !kernel_arg_addr_space !0 !kernel_arg_access_qual !1 !kernel_arg_type !2 !kernel_arg_base_type !2 !kernel_arg_type_qual !3 !kernel_arg_name !4 {
  %v = load float, ptr addrspace(1) %x, align 4
  %m = fmul float %v, %s
  store float %m, ptr addrspace(1) %x, align 4
  ret void
}

!0 = !{i32 1, i32 0}
!1 = !{!"none", !"none"}
!2 = !{!"float*", !"float"}
!3 = !{!"", !""}
!4 = !{!"x", !"s"}
