// strided.cu: each lane loads one float 32 bytes from its neighbour's: the
// load uses 8 times the sectors (and lines) it needs; the store is coalesced.
#include "common.h"

#define STRIDE 8

__global__ void strided(const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[(long)i * STRIDE];
}

int main() {
  const int n = 1 << 16;
  float *in, *out, *h = new float[(size_t)n * STRIDE];
  CHECK(cudaMalloc(&in, (size_t)n * STRIDE * sizeof(float)));
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  for (long i = 0; i < (long)n * STRIDE; i++) h[i] = (float)(i % 4096);
  CHECK(cudaMemcpy(in, h, (size_t)n * STRIDE * sizeof(float), cudaMemcpyHostToDevice));
  strided<<<n / 256, 256>>>(in, out, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(h, out, n * sizeof(float), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (long i = 0; i < n; i++) wrong += h[i] != (float)((i * STRIDE) % 4096);
  std::printf("strided %s\n", wrong ? "WRONG" : "ok");
  return wrong != 0;
}
