// kernels_variable.hip with axpy_count 8 bytes wide: a kernel cache built
// from this file cannot replace the axpy of a program built from that one
// (their axpy_count differ in size), said (test case variables).
#include <hip/hip_runtime.h>
__device__ long long axpy_count;
__constant__ float axpy_bias;
__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0)
    axpy_count += n;
  if (i < n) y[i] = a * x[i] + y[i] + axpy_bias;
}
