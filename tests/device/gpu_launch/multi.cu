// CUDA's multi-device launch (removed in CUDA 13: cuda12_multi.h declares it
// as CUDA 12's runtime did; tests/device/gpu_launch): one list of two launches,
// each on its own stream, each over one half of the arrays: y = 2x + 1.
// Routed through __nano_gpu_launch_multi: each launch runs its twin, a
// dispatch of its own, all through one call of the program's.
#include <cstdio>

#include "../cuda12_multi.h"

__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
static float x[1000], y[1000];

int main() {
  for (int i = 0; i < 1000; i++)
    x[i] = (float)i, y[i] = 1.0f;
  cudaStream_t s[2];
  int rc = cudaStreamCreate(&s[0]) | cudaStreamCreate(&s[1]);
  float a = 2.0f, *x0 = x, *y0 = y, *x1 = x + 500, *y1 = y + 500;
  int half = 500;
  void *args0[] = {&a, &x0, &y0, &half}, *args1[] = {&a, &x1, &y1, &half};
  cudaLaunchParams lp[2] = {{(void *)axpy, dim3(2), dim3(256), args0, 0, s[0]},
                            {(void *)axpy, dim3(2), dim3(256), args1, 0, s[1]}};
  if (rc == 0)
    rc = cudaLaunchCooperativeKernelMultiDevice(lp, 2, 0);
  cudaDeviceSynchronize();
  int wrong = 0;
  for (int i = 0; i < 1000; i++)
    wrong += y[i] != 2.0f * i + 1.0f;
  std::printf("multi %d y %s\n", rc, wrong ? "wrong" : "right");
  return 0;
}
