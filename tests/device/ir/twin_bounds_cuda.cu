// A kernel without __launch_bounds__ that the plugin's twin would make too big
// for a 1024-thread block: the original fits (at most 64 registers), the twin
// without a bound would not (90 registers with CUDA 13's ptxas); the twin's
// .maxntid 1024 makes ptxas keep it within 64 registers, so it launches
// wherever the original does. A kernel's own bound stays its twin's.
// REQUIRES: cuda
// RUN: %clang_nano -x cuda --cuda-path=/usr/local/cuda --cuda-gpu-arch=sm_90 --cuda-device-only -Wno-unknown-cuda-version -O2 -S %s -o %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: /usr/local/cuda/bin/ptxas -arch=sm_90 -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=REGS

// PTX: .entry _Z6hungryPKfPfi(
// PTX-NOT: .maxntid
// PTX: .entry _Z7boundedPf(
// PTX: .maxntid 256 {{ *}}// @_Z7boundedPf
// PTX: .entry __nano_twin__Z6hungryPKfPfiPv(
// PTX: .maxntid 1024 {{ *}}// @__nano_twin__Z6hungryPKfPfiPv
// PTX: .entry __nano_twin__Z7boundedPfPv(
// PTX: .maxntid 256 {{ *}}// @__nano_twin__Z7boundedPfPv

// 65536 registers per block / 1024 threads: 64 at most, twin and original
// (ptxas compiles them in this order)
// REGS: Compiling entry function '__nano_twin__Z6hungryPKfPfiPv'
// REGS-NOT: Compiling entry function
// REGS: Used {{([1-9]|[1-5][0-9]|6[0-4])}} registers
// REGS: Compiling entry function '_Z6hungryPKfPfi'
// REGS-NOT: Compiling entry function
// REGS: Used {{([1-9]|[1-5][0-9]|6[0-4])}} registers

#define ACC 40

__global__ void hungry(const float *in, float *out, int n) {
  float acc[ACC];
#pragma unroll
  for (int j = 0; j < ACC; j++)
    acc[j] = in[threadIdx.x + j * n];
  for (int i = 0; i < n; i++) {
#pragma unroll
    for (int j = 0; j < ACC; j++)
      acc[j] = acc[j] * acc[(j + 1) % ACC] + in[i * ACC + j];
  }
  float s = 0;
#pragma unroll
  for (int j = 0; j < ACC; j++)
    s += acc[j] * (j + 1);
  out[threadIdx.x] = s;
}

__global__ void __launch_bounds__(256) bounded(float *p) { p[threadIdx.x] *= 2; }
