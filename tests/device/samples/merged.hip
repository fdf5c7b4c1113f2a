#include "sample.h"
/* Four 4-byte loads per thread from consecutive addresses: the backend merges
 * them into one 16-byte load (global_load_dwordx4 on AMDGPU), which kerneldb
 * reports as the widened access of one site with the other three folded in.
 * One load per line, so every site has a line of its own; check_amdgpu.py
 * reads the expected verdicts from the ISA: comments. */
__global__ void merged4(float *out, const float *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float a = in[4 * i];     // ISA: load wider 16
  float b = in[4 * i + 1]; // ISA: load merged
  float c = in[4 * i + 2]; // ISA: load merged
  float d = in[4 * i + 3]; // ISA: load merged
  out[i] = a + b + c + d;  // ISA: store same 4
}
