// CUDA kernels with printf and assert built at -O0 (clang-22, sm_90): the
// compile succeeds, both kernels have twins that are entries, and ptxas
// accepts the PTX.
// REQUIRES: cuda
// RUN: %clang_nano -x cuda --cuda-path=/usr/local/cuda --cuda-gpu-arch=sm_90 --cuda-device-only -Wno-unknown-cuda-version -O0 -g -S %s -o %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: /usr/local/cuda/bin/ptxas -arch=sm_90 %t.ptx -o %t.cubin
#include <cassert>
#include <cstdio>

__global__ void kprintf(int *p) { printf("thread %d value %d\n", (int)threadIdx.x, p[threadIdx.x]); }
__global__ void kassert(int *p) {
  assert(p[threadIdx.x] >= 0);
  p[threadIdx.x] += 1;
}

// CHECK-DAG: .visible .entry _Z7kprintfPi(
// CHECK-DAG: .visible .entry _Z7kassertPi(
// CHECK-DAG: .visible .entry __nano_twin__Z7kprintfPiPv(
// CHECK-DAG: .visible .entry __nano_twin__Z7kassertPiPv(
