// devfunc.cu: the load happens in a device function that is not inlined:
// its accesses are recorded in the twin's clone of it, at its own lines.
#include "common.h"

__device__ __noinline__ float fetch(const float *p, int i) { return p[i]; }

__global__ void twice(const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * fetch(in, i);
}

int main() {
  const int n = 1 << 16;
  float *in, *out, *h = new float[n];
  CHECK(cudaMalloc(&in, n * sizeof(float)));
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  for (int i = 0; i < n; i++) h[i] = (float)i;
  CHECK(cudaMemcpy(in, h, n * sizeof(float), cudaMemcpyHostToDevice));
  twice<<<n / 256, 256>>>(in, out, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(h, out, n * sizeof(float), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < n; i++) wrong += h[i] != 2.0f * (float)i;
  std::printf("devfunc %s\n", wrong ? "WRONG" : "ok");
  return wrong != 0;
}
