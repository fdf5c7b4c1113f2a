// PTX accesses in inline assembly are sites (clang-22, sm_90): __ldcs, __ldcg
// and __stwt (clang's CUDA headers write them as inline asm), 4 and 16 bytes,
// and cp.async (a 16-byte global load and shared store, the shared address a
// 32-bit operand), each recorded with the instruction's width and state space
// (the last argument: 1 global, 3 shared; shared memory is instrumented on
// request, NANO_ADDRSPACES); other inline assembly that may
// touch memory is said at compile time, once per kernel, and is a site of
// its own in the table (kind "unseen", no access recorded), which `kerneldb
// sites` lists at the statement's line.
// REQUIRES: cuda, kerneldb
// RUN: env NANO_ADDRSPACES=global,generic,shared %clang_nano -x cuda --cuda-path=/usr/local/cuda --cuda-gpu-arch=sm_90 --cuda-device-only -Wno-unknown-cuda-version -O2 -S -emit-llvm %s -o %t.ll 2> %t.err
// RUN: FileCheck %s < %t.ll
// RUN: FileCheck %s --check-prefix=SAID < %t.err
// RUN: %clang_nano -x cuda --cuda-path=/usr/local/cuda --cuda-gpu-arch=sm_90 --cuda-device-only -Wno-unknown-cuda-version -O2 -g -S %s -o %t.ptx
// RUN: /usr/local/cuda/bin/ptxas -arch=sm_90 %t.ptx -o %t.cubin
// RUN: %kerneldb sites %t.cubin | FileCheck %s --check-prefix=SITES

__global__ void streaming(const float *in, float *out, const float4 *in4, float4 *out4, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = __ldcs(in + i) + __ldcg(in + i + 1);
    __stwt(out + i, v);
    __stwt(out4 + i, __ldcs(in4 + i));
  }
}

__global__ void staged(const float4 *in, float4 *out) {
  __shared__ float4 tile[128];
  unsigned dst = (unsigned)__cvta_generic_to_shared(&tile[threadIdx.x]);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(in + threadIdx.x));
  asm volatile("cp.async.wait_all;" ::: "memory");
  // SITES-NOT: unseen
  // SITES: sm_90 unseen 0 B generic {{.*}}twin_inline_asm_cuda.cu:[[#@LINE-2]]:{{[0-9]+}} staged(float4 const*, float4*)
  // SITES-NOT: unseen
  __syncthreads();
  out[threadIdx.x] = tile[127 - threadIdx.x];
}

// CHECK-LABEL: define {{.*}} @__nano_twin__Z9streamingPKfPfPK6float4PS2_iPv(
// CHECK: call void @__nano_dh_access({{.*}}, i32 4, i32 1)
// CHECK-NEXT: asm "ld.global.cs.f32
// CHECK: call void @__nano_dh_access({{.*}}, i32 4, i32 1)
// CHECK-NEXT: asm "ld.global.cg.f32
// CHECK: call void @__nano_dh_access({{.*}}, i32 4, i32 1)
// CHECK-NEXT: asm sideeffect "st.global.wt.f32
// CHECK: call void @__nano_dh_access({{.*}}, i32 16, i32 1)
// CHECK-NEXT: asm "ld.global.cs.v4.f32
// CHECK: call void @__nano_dh_access({{.*}}, i32 16, i32 1)
// CHECK-NEXT: asm sideeffect "st.global.wt.v4.f32

// CHECK-LABEL: define {{.*}} @__nano_twin__Z6stagedPK6float4PS_Pv(
// CHECK: call void @__nano_dh_access({{.*}}, i32 16, i32 1)
// CHECK: call void @__nano_dh_access({{.*}}, i32 16, i32 3)
// CHECK-NEXT: asm sideeffect "cp.async.ca.shared.global

// SAID: warning: nanoprobe: _Z6stagedPK6float4PS_: 1 inline assembly statement that may touch memory is not recorded (only PTX ld, st and cp.async are read)
// SAID-NOT: _Z9streaming
