// The kernels of the HSA tool's tests (hsa_app.c runs them; the stand-in
// runtime emulates them by name). Built without the plugin for the program,
// with it for the kernel cache.
#include <hip/hip_runtime.h>
__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void dyn(int *out) {
  extern __shared__ int s[];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
}
// Four 4-byte loads per thread from consecutive addresses: the backend merges
// them into one global_load_dwordx4 (the ISA width of MemoryAnalysis).
__global__ void merged4(float *out, const float *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float a = in[4 * i];
  float b = in[4 * i + 1];
  float c = in[4 * i + 2];
  float d = in[4 * i + 3];
  out[i] = a + b + c + d;
}
