; Masked vector loads/stores (address = the vector's base, size = the whole
; vector) and AMDGPU raw buffer loads/stores (address = resource base bits
; 0..47 + voffset + soffset) in twins.
; RUN: %opt -load-pass-plugin=%plugin -passes=nano-device -S %s | FileCheck %s
; RUN: %opt -load-pass-plugin=%plugin -passes=nano-device -nano-access=load -S %s | FileCheck %s --check-prefix=LOADS

target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7"
target triple = "amdgcn-amd-amdhsa"

define amdgpu_kernel void @vec(ptr addrspace(1) %p, <4 x i32> %rsrc, i32 %off) {
  %m = call <4 x float> @llvm.masked.load.v4f32.p1(ptr addrspace(1) %p, i32 4, <4 x i1> <i1 true, i1 false, i1 true, i1 true>, <4 x float> zeroinitializer)
  call void @llvm.masked.store.v4f32.p1(<4 x float> %m, ptr addrspace(1) %p, i32 4, <4 x i1> <i1 true, i1 true, i1 false, i1 true>)
  %b = call float @llvm.amdgcn.raw.buffer.load.f32(<4 x i32> %rsrc, i32 %off, i32 8, i32 0)
  call void @llvm.amdgcn.raw.buffer.store.f32(float %b, <4 x i32> %rsrc, i32 %off, i32 16, i32 0)
  ret void
}
declare <4 x float> @llvm.masked.load.v4f32.p1(ptr addrspace(1), i32, <4 x i1>, <4 x float>)
declare void @llvm.masked.store.v4f32.p1(<4 x float>, ptr addrspace(1), i32, <4 x i1>)
declare float @llvm.amdgcn.raw.buffer.load.f32(<4 x i32>, i32, i32, i32)
declare void @llvm.amdgcn.raw.buffer.store.f32(float, <4 x i32>, i32, i32, i32)

; CHECK-LABEL: define amdgpu_kernel void @vec(
; CHECK-NOT: __nano_dh_access
; CHECK-LABEL: define amdgpu_kernel void @__nano_twin_vec(ptr addrspace(1) %p, <4 x i32> %rsrc, i32 %off, ptr addrspace(1) %nano_dh_desc)
; CHECK-NEXT: call void @__nano_dh_block_enter(ptr addrspace(1) %nano_dh_desc)
; CHECK-NEXT: [[P:%[0-9]+]] = ptrtoint ptr addrspace(1) %p to i64
; CHECK-NEXT: call void @__nano_dh_access(ptr addrspace(1) %nano_dh_desc, i64 {{-?[0-9]+}}, i64 [[P]], i32 16, i32 1)
; CHECK-NEXT: %m = call <4 x float> @llvm.masked.load
; CHECK-NEXT: [[Q:%[0-9]+]] = ptrtoint ptr addrspace(1) %p to i64
; CHECK-NEXT: call void @__nano_dh_access(ptr addrspace(1) %nano_dh_desc, i64 {{-?[0-9]+}}, i64 [[Q]], i32 16, i32 1)
; CHECK-NEXT: call void @llvm.masked.store
; CHECK-NEXT: [[W0:%[0-9]+]] = extractelement <4 x i32> %rsrc, i64 0
; CHECK-NEXT: [[L0:%[0-9]+]] = zext i32 [[W0]] to i64
; CHECK-NEXT: [[W1:%[0-9]+]] = extractelement <4 x i32> %rsrc, i64 1
; CHECK-NEXT: [[L1:%[0-9]+]] = zext i32 [[W1]] to i64
; CHECK-NEXT: [[H:%[0-9]+]] = shl i64 [[L1]], 32
; CHECK-NEXT: [[B:%[0-9]+]] = or i64 [[L0]], [[H]]
; CHECK-NEXT: [[B48:%[0-9]+]] = and i64 [[B]], 281474976710655
; CHECK-NEXT: [[V:%[0-9]+]] = zext i32 %off to i64
; CHECK-NEXT: [[O:%[0-9]+]] = add i64 [[V]], 8
; CHECK-NEXT: [[A:%[0-9]+]] = add i64 [[B48]], [[O]]
; CHECK-NEXT: call void @__nano_dh_access(ptr addrspace(1) %nano_dh_desc, i64 {{-?[0-9]+}}, i64 [[A]], i32 4, i32 1)
; CHECK-NEXT: %b = call float @llvm.amdgcn.raw.buffer.load.f32
; CHECK: add i64 {{%[0-9]+}}, 16
; CHECK-NEXT: add i64
; CHECK-NEXT: call void @__nano_dh_access(ptr addrspace(1) %nano_dh_desc, i64 {{-?[0-9]+}}, i64 {{%[0-9]+}}, i32 4, i32 1)
; CHECK-NEXT: call void @llvm.amdgcn.raw.buffer.store.f32

; LOADS-LABEL: define amdgpu_kernel void @__nano_twin_vec(
; LOADS-NEXT: call void @__nano_dh_block_enter(
; LOADS-NEXT: ptrtoint
; LOADS-NEXT: call void @__nano_dh_access(
; LOADS-NEXT: %m = call <4 x float> @llvm.masked.load
; LOADS-NEXT: call void @llvm.masked.store
; LOADS: call void @__nano_dh_access(
; LOADS-NEXT: %b = call float @llvm.amdgcn.raw.buffer.load.f32
; LOADS-NEXT: call void @llvm.amdgcn.raw.buffer.store.f32
