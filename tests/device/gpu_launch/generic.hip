// HIP 6.2's generic node calls (tests/device/gpu_launch; hip62.h declares
// them as its headers do: Debian's HIP 5.2 has none; the stand-in answers them
// when it is told it is 6.2): axpy added by hipGraphAddNode, launched; the
// executable's node given a factor of 3 (hipGraphExecNodeSetParams),
// launched; the graph's node a factor of 1 (hipGraphNodeSetParams), a second
// executable launched: y = 6x + 1.
#include <hip/hip_runtime.h>
#include <cstdio>

#include "../hip62.h"


__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

static float x[64], y[64];

int main() {
  for (int i = 0; i < 64; i++)
    x[i] = (float)i, y[i] = 1.0f;
  hipStream_t s;
  int rc = hipStreamCreate(&s);
  hipGraph_t g;
  rc |= hipGraphCreate(&g, 0);
  float a = 2.0f, *xp = x, *yp = y;
  int n = 64;
  void *args[] = {&a, &xp, &yp, &n};
  hipGraphNodeParams p = {};
  p.type = HIP62_KERNEL_NODE;
  p.kernel.func = (void *)axpy, p.kernel.gridDim = dim3(2), p.kernel.blockDim = dim3(32);
  p.kernel.kernelParams = args;
  hipGraphNode_t k;
  rc |= hipGraphAddNode(&k, g, nullptr, 0, &p);
  hipGraphExec_t exec, exec2;
  rc |= hipGraphInstantiate(&exec, g, nullptr, nullptr, 0);
  rc |= hipGraphLaunch(exec, s);
  rc |= hipDeviceSynchronize();
  a = 3.0f;
  rc |= hipGraphExecNodeSetParams(exec, k, &p);
  rc |= hipGraphLaunch(exec, s);
  rc |= hipDeviceSynchronize();
  a = 1.0f;
  rc |= hipGraphNodeSetParams(k, &p);
  rc |= hipGraphInstantiate(&exec2, g, nullptr, nullptr, 0);
  rc |= hipGraphLaunch(exec2, s);
  rc |= hipDeviceSynchronize();
  int wrong = 0;
  for (int i = 0; i < 64; i++)
    wrong += y[i] != 6.0f * i + 1.0f;
  std::printf("generic rc %d y %s\n", rc, wrong ? "wrong" : "right");
  return 0;
}
