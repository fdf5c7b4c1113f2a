// axpy and dyn of kernels.hip with a module variable axpy writes: a program
// and a kernel cache built from this file both define it, so the HSA tool's
// cache refuses to replace their kernels (a replacement would write the
// cache's copy of the variable, not the program's): test case variables.
#include <hip/hip_runtime.h>
__device__ int axpy_count;
__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0)
    axpy_count = n;
  if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void dyn(int *out) {
  extern __shared__ int s[];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
}
