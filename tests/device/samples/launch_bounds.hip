#include "sample.h"
__global__ void __launch_bounds__(128, 2) bounded(float *x) {
  x[blockIdx.x * 128 + threadIdx.x] += 1.0f;
}
__global__ void noargs() {}
