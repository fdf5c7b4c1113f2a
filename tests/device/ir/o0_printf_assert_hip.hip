// HIP kernels with printf and assert built at -O0: ROCm's hostcall code has
// unnamed device functions (@0, @1, ...), whose clones once all took one name
// and crashed or hung clang. The compile succeeds, to IR and to a code object;
// both kernels have twins, and every unnamed callee a clone of its own.
// REQUIRES: hipcc
// RUN: %hipcc --offload-arch=gfx90a -O0 -g --cuda-device-only -S -emit-llvm -fpass-plugin=%plugin %s -o %t.ll
// RUN: FileCheck %s < %t.ll
// RUN: %hipcc --offload-arch=gfx90a -O0 -g --cuda-device-only -c -fpass-plugin=%plugin %s -o %t.co
#include <hip/hip_runtime.h>
#include <cassert>
#include <cstdio>

__global__ void kprintf(int *p) { printf("thread %d value %d\n", (int)threadIdx.x, p[threadIdx.x]); }
__global__ void kassert(int *p) {
  assert(p[threadIdx.x] >= 0);
  p[threadIdx.x] += 1;
}

// CHECK-DAG: define protected amdgpu_kernel void @__nano_twin__Z7kprintfPiPv(
// CHECK-DAG: define protected amdgpu_kernel void @__nano_twin__Z7kassertPiPv(
// CHECK-DAG: define internal {{.*}} @__assert_fail.nano_twin(
// CHECK-DAG: define internal {{.*}} @nano_unnamed.nano_twin(
// CHECK-DAG: define internal {{.*}} @nano_unnamed.nano_twin.{{[0-9]+}}(
