// vecadd.cu: coalesced loads and stores (MemoryAnalysis: used = needed), and
// a __device__ variable set by the host: the twin must see the program's
// value (it runs from the same loaded module), or the result is wrong.
#include "common.h"

__device__ float g_scale = 1.0f;

__global__ void vecadd(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + g_scale * b[i];
}

int main() {
  const int n = 1 << 20;
  float *a, *b, *c, *h = new float[n];
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&b, n * sizeof(float)));
  CHECK(cudaMalloc(&c, n * sizeof(float)));
  for (int i = 0; i < n; i++) h[i] = (float)(i % 1000);
  CHECK(cudaMemcpy(a, h, n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, h, n * sizeof(float), cudaMemcpyHostToDevice));
  float scale = 3.0f;
  CHECK(cudaMemcpyToSymbol(g_scale, &scale, sizeof scale));
  vecadd<<<n / 256, 256>>>(a, b, c, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(h, c, n * sizeof(float), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < n; i++) wrong += h[i] != 4.0f * (float)(i % 1000);
  std::printf("vecadd %s\n", wrong ? "WRONG" : "ok");
  return wrong != 0;
}
