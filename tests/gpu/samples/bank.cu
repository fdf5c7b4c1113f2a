// bank.cu: shared-memory accesses two words apart: lanes t and t + 16 hit
// the same bank at different words, so every warp access has exactly one
// bank conflict (MemoryAnalysis: bank_conflicts = executions).
#include "common.h"

__global__ void bank(float *out) {
  __shared__ float s[64];
  s[threadIdx.x * 2] = (float)threadIdx.x;
  __syncthreads();
  out[blockIdx.x * 32 + threadIdx.x] = s[(threadIdx.x * 2 + 2) % 64];
}

int main() {
  const int blocks = 64;
  float *out, h[blocks * 32];
  CHECK(cudaMalloc(&out, sizeof h));
  bank<<<blocks, 32>>>(out);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < blocks * 32; i++) wrong += h[i] != (float)((i % 32 + 1) % 32);
  std::printf("bank %s\n", wrong ? "WRONG" : "ok");
  return wrong != 0;
}
