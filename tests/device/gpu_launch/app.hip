// A HIP program whose launches the plugin routes (tests/device/gpu_launch):
// axpy launched, then captured into a graph (with a = 0: y stays) that is
// launched three times.
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
  hipStream_t s = (hipStream_t)0x3000;
  hipLaunchKernelGGL(axpy, dim3(4, 1, 1), dim3(256, 1, 1), 16, s, 2.0f, x, y, 1000);
  hipStream_t g;
  hipGraph_t graph;
  hipGraphExec_t exec;
  hipError_t rc = hipStreamCreate(&g);
  if (rc == hipSuccess)
    rc = hipStreamBeginCapture(g, hipStreamCaptureModeGlobal);
  if (rc == hipSuccess)
    hipLaunchKernelGGL(axpy, dim3(4, 1, 1), dim3(256, 1, 1), 16, g, 0.0f, x, y, 1000);
  if (rc == hipSuccess)
    rc = hipStreamEndCapture(g, &graph);
  if (rc == hipSuccess)
    rc = hipGraphInstantiate(&exec, graph, nullptr, nullptr, 0);
  for (int i = 0; i < 3 && rc == hipSuccess; i++)
    rc = hipGraphLaunch(exec, g);
  hipDeviceSynchronize();
  int wrong = 0;
  for (int i = 0; i < 1000; i++)
    wrong += y[i] != 2.0f * i + 1.0f;
  std::printf("done %d y %s\n", (int)rc, wrong ? "wrong" : "right");
  return 0;
}
