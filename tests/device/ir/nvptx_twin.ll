; Twins on NVPTX: the twin is an entry (nvvm.annotations copied on LLVM 15;
; kernel calling convention and launch-bound attributes, upgraded from the
; annotations, on LLVM 22), generic and global accesses instrumented, shared
; (also through a generic pointer) and local left alone, the device function cloned, originals unchanged;
; the twin times its block (KernelTimeline) after its allocas and before its return, its callee not.
; RUN: %opt -load-pass-plugin=%plugin -passes=nano-device -S %s | FileCheck %s --check-prefixes=CHECK,V%major

target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@smem = internal addrspace(3) global [32 x float] undef, align 4

; CHECK: @__nano_dh_sites_{{[0-9a-f]+}} = protected addrspace(1) constant [{{[0-9]+}} x i8] c"NANOSITE{{.*}}kern\00dev\00{{.*}}", align 8{{$}}

; CHECK-LABEL: define internal void @dev(ptr %p)
; CHECK-NEXT: store i32 0, ptr %p, align 4
; CHECK-NEXT: ret void
define internal void @dev(ptr %p) {
  store i32 0, ptr %p, align 4
  ret void
}

; V15-LABEL: define void @kern(ptr addrspace(1) %a, ptr %g) {
; V22-LABEL: define ptx_kernel void @kern(ptr addrspace(1) %a, ptr %g) #0 {
; CHECK-NOT: __nano_dh_access
; CHECK: call void @dev(ptr %g)
define void @kern(ptr addrspace(1) %a, ptr %g) {
  %loc = alloca float, align 4
  %v = load float, ptr %g, align 4
  store float %v, ptr %loc, align 4
  store float %v, ptr addrspace(1) %a, align 4
  store float %v, ptr addrspace(3) @smem, align 4
  store float %v, ptr addrspacecast (ptr addrspace(3) @smem to ptr), align 4
  call void @dev(ptr %g)
  ret void
}

; V15-LABEL: define void @__nano_twin_kern(ptr addrspace(1) %a, ptr %g, ptr addrspace(1) %nano_dh_desc) #0 {
; V22-LABEL: define ptx_kernel void @__nano_twin_kern(ptr addrspace(1) %a, ptr %g, ptr addrspace(1) %nano_dh_desc) #1 {
; CHECK-NEXT: %loc = alloca float
; CHECK-NEXT: call void @__nano_dh_block_enter(ptr addrspace(1) %nano_dh_desc)
; CHECK-NEXT: [[P0:%[0-9]+]] = ptrtoint ptr %g to i64
; CHECK-NEXT: call void @__nano_dh_access(ptr addrspace(1) %nano_dh_desc, i64 {{-?[0-9]+}}, i64 [[P0]], i32 4, i32 0)
; CHECK-NEXT: %v = load float, ptr %g
; CHECK-NEXT: store float %v, ptr %loc
; CHECK-NEXT: [[P1:%[0-9]+]] = ptrtoint ptr addrspace(1) %a to i64
; CHECK-NEXT: call void @__nano_dh_access(ptr addrspace(1) %nano_dh_desc, i64 {{-?[0-9]+}}, i64 [[P1]], i32 4, i32 1)
; CHECK-NEXT: store float %v, ptr addrspace(1) %a
; CHECK-NEXT: store float %v, ptr addrspace(3) @smem
; CHECK-NEXT: store float %v, ptr addrspacecast (ptr addrspace(3) @smem to ptr)
; CHECK-NEXT: call void @dev.nano_twin(ptr %g, ptr addrspace(1) %nano_dh_desc)
; CHECK-NEXT: call void @__nano_dh_block_leave(ptr addrspace(1) %nano_dh_desc)
; CHECK-NEXT: ret void

; CHECK-LABEL: define internal void @dev.nano_twin(ptr %p, ptr addrspace(1) %nano_dh_desc)
; CHECK-NEXT: [[P2:%[0-9]+]] = ptrtoint ptr %p to i64
; CHECK-NEXT: call void @__nano_dh_access(ptr addrspace(1) %nano_dh_desc, i64 {{-?[0-9]+}}, i64 [[P2]], i32 4, i32 0)
; CHECK-NEXT: store i32 0, ptr %p

; CHECK-LABEL: define internal void @__nano_dh_access(ptr addrspace(1)
; CHECK: call i32 @llvm.nvvm.read.ptx.sreg.laneid()

; V22-DAG: attributes #0 = { "nvvm.maxntid"="128" }
; V22-DAG: attributes #1 = { "nano.twin" "nvvm.maxntid"="128" }
; V15-DAG: attributes #0 = { "nano.twin" }
; V15-DAG: !{ptr @kern, !"kernel", i32 1}
; V15-DAG: !{ptr @kern, !"maxntidx", i32 128}
; V15-DAG: !{ptr @__nano_twin_kern, !"kernel", i32 1}
; V15-DAG: !{ptr @__nano_twin_kern, !"maxntidx", i32 128}

!nvvm.annotations = !{!0, !1}
!0 = !{ptr @kern, !"kernel", i32 1}
!1 = !{ptr @kern, !"maxntidx", i32 128}
