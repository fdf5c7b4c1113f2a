; Twins on AMDGPU: signature, attributes kept, instrumented accesses, original
; and its callee unchanged, callee cloned, LDS and private memory left alone
; by default, LDS instrumented on request; each kernel twin times its block
; (KernelTimeline) after its allocas and before its returns.
; RUN: %opt -load-pass-plugin=%plugin -passes=nano-device -S %s | FileCheck %s
; RUN: %opt -load-pass-plugin=%plugin -passes=nano-device -nano-addrspaces=shared -S %s | FileCheck %s --check-prefix=LDS
; RUN: env NANO_DEVICE_INLINE=1 %opt -load-pass-plugin=%plugin -passes=nano-device -S %s | FileCheck %s --check-prefix=INL

target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7"
target triple = "amdgcn-amd-amdhsa"

@lds = internal addrspace(3) global [64 x i32] undef, align 4

; CHECK: @__nano_dh_sites_[[ID:[0-9a-f]+]] = protected addrspace(4) constant [{{[0-9]+}} x i8] c"NANOSITE{{.*}}_Z4kernPii\00helper\00{{.*}}", section "nano_dev_sites", align 8
; CHECK: @llvm.used = {{.*}}@__nano_dh_sites_[[ID]]

; CHECK-LABEL: define internal void @helper(ptr addrspace(1) %p, i32 %v) {
; CHECK-NEXT: store i32 %v, ptr addrspace(1) %p, align 4
; CHECK-NEXT: ret void
define internal void @helper(ptr addrspace(1) %p, i32 %v) {
  store i32 %v, ptr addrspace(1) %p, align 4
  ret void
}

; CHECK: define amdgpu_kernel void @_Z4kernPii(ptr addrspace(1) %a, i32 %n) #[[KATTR:[0-9]+]] {
; CHECK-NOT: __nano_dh_access
; CHECK: call void @helper(ptr addrspace(1) %a, i32 %x)
; CHECK-NEXT: ret void
define amdgpu_kernel void @_Z4kernPii(ptr addrspace(1) %a, i32 %n) #0 {
entry:
  %priv = alloca i32, align 4, addrspace(5)
  store i32 %n, ptr addrspace(5) %priv, align 4
  %x = load i32, ptr addrspace(1) %a, align 4
  %g = getelementptr i32, ptr addrspace(1) %a, i64 1
  %old = atomicrmw add ptr addrspace(1) %g, i32 1 seq_cst
  %pair = cmpxchg ptr addrspace(1) %g, i32 0, i32 %x seq_cst seq_cst
  %l = getelementptr [64 x i32], ptr addrspace(3) @lds, i32 0, i32 %n
  store i32 %x, ptr addrspace(3) %l, align 4
  %flat = addrspacecast ptr addrspace(1) %a to ptr
  %len = zext i32 %n to i64
  call void @llvm.memset.p0.i64(ptr %flat, i8 0, i64 %len, i1 false)
  call void @helper(ptr addrspace(1) %a, i32 %x)
  ret void
}

; CHECK: define amdgpu_kernel void @plain() #[[KATTR]] {
define amdgpu_kernel void @plain() #0 {
  ret void
}

; CHECK: define amdgpu_kernel void @__nano_twin__Z4kernPiiPv(ptr addrspace(1) %a, i32 %n, ptr addrspace(1) %nano_dh_desc) #[[TATTR:[0-9]+]] {
; CHECK-NEXT: entry:
; CHECK-NEXT: %priv = alloca i32, align 4, addrspace(5)
; CHECK-NEXT: call void @__nano_dh_block_enter(ptr addrspace(1) %nano_dh_desc)
; CHECK-NEXT: store i32 %n, ptr addrspace(5) %priv, align 4
; CHECK-NEXT: [[P0:%[0-9]+]] = ptrtoint ptr addrspace(1) %a to i64
; CHECK-NEXT: call void @__nano_dh_access(ptr addrspace(1) %nano_dh_desc, i64 [[S0:-?[0-9]+]], i64 [[P0]], i32 4, i32 1)
; CHECK-NEXT: %x = load i32, ptr addrspace(1) %a, align 4
; CHECK-NEXT: %g = getelementptr
; CHECK-NEXT: [[P1:%[0-9]+]] = ptrtoint ptr addrspace(1) %g to i64
; CHECK-NEXT: call void @__nano_dh_access(ptr addrspace(1) %nano_dh_desc, i64 {{-?[0-9]+}}, i64 [[P1]], i32 4, i32 1)
; CHECK-NEXT: %old = atomicrmw add
; CHECK-NEXT: [[P2:%[0-9]+]] = ptrtoint ptr addrspace(1) %g to i64
; CHECK-NEXT: call void @__nano_dh_access(ptr addrspace(1) %nano_dh_desc, i64 {{-?[0-9]+}}, i64 [[P2]], i32 4, i32 1)
; CHECK-NEXT: %pair = cmpxchg
; CHECK-NEXT: %l = getelementptr
; CHECK-NEXT: store i32 %x, ptr addrspace(3) %l, align 4
; CHECK-NEXT: %flat = addrspacecast
; CHECK-NEXT: %len = zext i32 %n to i64
; CHECK-NEXT: [[P3:%[0-9]+]] = ptrtoint ptr %flat to i64
; CHECK-NEXT: [[L3:%[0-9]+]] = trunc i64 %len to i32
; The flat memset's class: generic (0) on LLVM 15; LLVM 22 sees through the
; addrspacecast to the global argument (1).
; CHECK-NEXT: call void @__nano_dh_access(ptr addrspace(1) %nano_dh_desc, i64 {{-?[0-9]+}}, i64 [[P3]], i32 [[L3]], i32 {{0|1}})
; CHECK-NEXT: call void @llvm.memset
; CHECK-NEXT: call void @helper.nano_twin(ptr addrspace(1) %a, i32 %x, ptr addrspace(1) %nano_dh_desc)
; CHECK-NEXT: call void @__nano_dh_block_leave(ptr addrspace(1) %nano_dh_desc)
; CHECK-NEXT: ret void

; CHECK: define amdgpu_kernel void @__nano_twin_plain(ptr addrspace(1) %nano_dh_desc) #[[TATTR]] {
; CHECK-NEXT: call void @__nano_dh_block_enter(ptr addrspace(1) %nano_dh_desc)
; CHECK-NEXT: call void @__nano_dh_block_leave(ptr addrspace(1) %nano_dh_desc)
; CHECK-NEXT: ret void

; CHECK: define internal void @helper.nano_twin(ptr addrspace(1) %p, i32 %v, ptr addrspace(1) %nano_dh_desc) #[[CATTR:[0-9]+]] {
; CHECK-NEXT: [[P4:%[0-9]+]] = ptrtoint ptr addrspace(1) %p to i64
; CHECK-NEXT: call void @__nano_dh_access(ptr addrspace(1) %nano_dh_desc, i64 {{-?[0-9]+}}, i64 [[P4]], i32 4, i32 1)
; CHECK-NEXT: store i32 %v, ptr addrspace(1) %p, align 4

; CHECK-LABEL: define internal void @__nano_dh_access(ptr addrspace(1)

; CHECK-DAG: attributes #[[KATTR]] = { "amdgpu-flat-work-group-size"="1,256" "amdgpu-no-dispatch-ptr" "amdgpu-waves-per-eu"="2,4" "target-cpu"="gfx90a" }
; CHECK-DAG: attributes #[[TATTR]] = { "amdgpu-flat-work-group-size"="1,256" "amdgpu-waves-per-eu"="2,4" "nano.twin" "target-cpu"="gfx90a" }
; CHECK-DAG: attributes #[[CATTR]] = { "nano.twin" }

; LDS-LABEL: define amdgpu_kernel void @__nano_twin__Z4kernPiiPv(
; LDS: %l = getelementptr
; LDS-NEXT: [[Q:%[0-9]+]] = ptrtoint ptr addrspace(3) %l to i64
; LDS-NEXT: call void @__nano_dh_access(ptr addrspace(1) %nano_dh_desc, i64 {{-?[0-9]+}}, i64 [[Q]], i32 4, i32 3)
; LDS-NEXT: store i32 %x, ptr addrspace(3) %l, align 4
; LDS-NOT: call void @__nano_dh_access
; LDS: call void @helper.nano_twin(
; LDS-LABEL: define amdgpu_kernel void @__nano_twin_plain(

; INL-LABEL: define amdgpu_kernel void @__nano_twin__Z4kernPiiPv(
; INL-NOT: call void @__nano_dh_access
; INL: call i32 @llvm.amdgcn.mbcnt.lo(
; INL-NOT: call void @__nano_dh_access
; INL: %x = load i32, ptr addrspace(1) %a
; INL-NOT: define internal void @__nano_dh_access

declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)

attributes #0 = { "amdgpu-flat-work-group-size"="1,256" "amdgpu-waves-per-eu"="2,4" "target-cpu"="gfx90a" "amdgpu-no-dispatch-ptr" }
