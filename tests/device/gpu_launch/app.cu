// A CUDA program whose launches the plugin routes (tests/device/gpu_launch).
#include <cstdio>

__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void other(int *p) { *p = 1; }

int main() {
  float *x = (float *)0x1000, *y = (float *)0x2000;
  cudaStream_t s = (cudaStream_t)0x3000;
  axpy<<<dim3(3, 2, 1), dim3(256, 1, 1), 16, s>>>(2.0f, x, y, 1000);
  int *p = (int *)0x4000;
  void *args[] = {&p};
  int rc = cudaLaunchKernel((const void *)other, dim3(1), dim3(32), args, 0, s);
  std::printf("done %d\n", rc);
  return 0;
}
