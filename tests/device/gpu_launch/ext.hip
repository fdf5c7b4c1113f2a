// hipExtLaunchKernelGGL (events recorded around the kernel, flags;
// tests/device/gpu_launch): routed through __nano_gpu_launch_events; the
// twin launches through the same call with the program's events and flags,
// so the program's events time it, and the results are right.
#include <hip/hip_ext.h>
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
  hipStream_t s;
  hipEvent_t start, stop;
  hipError_t rc = hipStreamCreate(&s);
  if (rc == hipSuccess)
    rc = hipEventCreate(&start);
  if (rc == hipSuccess)
    rc = hipEventCreate(&stop);
  if (rc == hipSuccess)
    hipExtLaunchKernelGGL(axpy, dim3(4, 1, 1), dim3(256, 1, 1), 0, s, start, stop, 0, 2.0f, x, y,
                          1000);
  if (rc == hipSuccess)
    rc = hipDeviceSynchronize();
  float ms = -1.0f;
  if (rc == hipSuccess)
    rc = hipEventElapsedTime(&ms, start, stop);
  int wrong = 0;
  for (int i = 0; i < 1000; i++)
    wrong += y[i] != 2.0f * i + 1.0f;
  std::printf("ext %d y %s timed %d\n", (int)rc, wrong ? "wrong" : "right", ms >= 0.0f);
  return 0;
}
