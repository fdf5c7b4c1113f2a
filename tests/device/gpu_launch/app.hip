// A HIP program whose launches the plugin routes (tests/device/gpu_launch).
#include <hip/hip_runtime.h>
#include <cstdio>
__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
int main() {
  float *x = (float *)0x1000, *y = (float *)0x2000;
  hipStream_t s = (hipStream_t)0x3000;
  hipLaunchKernelGGL(axpy, dim3(3, 2, 1), dim3(256, 1, 1), 16, s, 2.0f, x, y, 1000);
  std::printf("done\n");
  return 0;
}
