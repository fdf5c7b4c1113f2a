// cudart_app.cu: a CUDA program as nvcc builds it by default (static
// cudart), whose runtime loads the driver's entry points at its first call;
// cudart_entries.py records which and how.
#include <cstdio>

__global__ void fill(float *p) { p[threadIdx.x] = 1.0f; }

int main() {
  float *p = nullptr;
  cudaError_t e = cudaMalloc(&p, 32 * sizeof(float));
  if (e == cudaSuccess)
    fill<<<1, 32>>>(p);
  std::printf("cudart_app: %s\n", cudaGetErrorName(e == cudaSuccess ? cudaGetLastError() : e));
  return 0;
}
