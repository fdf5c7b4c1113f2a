// Multi-device launches (tests/device/gpu_launch): one list of two launches,
// each on its own stream, through hipLaunchCooperativeKernelMultiDevice
// (y = 2x + 1) and hipExtLaunchMultiKernelMultiDevice (then 3x + 1), each
// launch over one half of the arrays. Routed through __nano_gpu_launch_multi:
// each launch runs its twin, a dispatch of its own, all through one call of
// the program's.
#include <hip/hip_runtime.h>
#include <cstdio>
__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
static float x[1000], y[1000];
int main() {
  for (int i = 0; i < 1000; i++)
    x[i] = (float)i, y[i] = 1.0f;
  hipStream_t s[2];
  hipError_t rc = hipStreamCreate(&s[0]);
  if (rc == hipSuccess)
    rc = hipStreamCreate(&s[1]);
  float a = 2.0f, *x0 = x, *y0 = y, *x1 = x + 500, *y1 = y + 500;
  int half = 500;
  void *args0[] = {&a, &x0, &y0, &half}, *args1[] = {&a, &x1, &y1, &half};
  hipLaunchParams lp[2] = {{(void *)axpy, dim3(2), dim3(256), args0, 0, s[0]},
                           {(void *)axpy, dim3(2), dim3(256), args1, 0, s[1]}};
  if (rc == hipSuccess)
    rc = hipLaunchCooperativeKernelMultiDevice(lp, 2, 0);
  a = 1.0f;
  if (rc == hipSuccess)
    rc = hipExtLaunchMultiKernelMultiDevice(lp, 2, 0);
  hipDeviceSynchronize();
  int wrong = 0;
  for (int i = 0; i < 1000; i++)
    wrong += y[i] != 3.0f * i + 1.0f;
  std::printf("multi %d y %s\n", (int)rc, wrong ? "wrong" : "right");
  return 0;
}
