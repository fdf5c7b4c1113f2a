// axpy and dyn of kernels.hip with module variables: axpy adds axpy_bias
// (__constant__, which the program sets) to each y and n to axpy_count
// (__device__, which the program reads back). A program and a kernel cache
// built from this file both define them: the HSA tool copies the program's
// values into the cache's copies before each replaced dispatch and the
// writable ones back after it (test case variables; hsa_app variables).
#include <hip/hip_runtime.h>
__device__ int axpy_count;
__constant__ float axpy_bias;
__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0)
    axpy_count += n;
  if (i < n) y[i] = a * x[i] + y[i] + axpy_bias;
}
__global__ void dyn(int *out) {
  extern __shared__ int s[];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
}
