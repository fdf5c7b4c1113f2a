// handbuilt.cu for HIP (tests/device/gpu_launch): kernel nodes added to a
// graph by hand, hipGraphAddKernelNode for axpy, then for other after it; the program
// reads axpy's node back (its kernel and arguments), launches the
// executable, gives the executable's axpy node a new factor
// (hipGraphExecKernelNodeSetParams) and launches it again, then gives the
// graph's node a factor of 1 and one block (hipGraphKernelNodeSetParams)
// and launches a second executable: y = 6x + 1 on the first 32 elements,
// 5x + 1 on the rest.
#include <hip/hip_runtime.h>
#include <cstdio>

__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void other(int *p) { *p = 1; }

static float x[64], y[64];
static int p;

int main() {
  for (int i = 0; i < 64; i++)
    x[i] = (float)i, y[i] = 1.0f;
  hipStream_t s;
  int rc = hipStreamCreate(&s);
  hipGraph_t g;
  rc |= hipGraphCreate(&g, 0);
  float a = 2.0f, *xp = x, *yp = y;
  int n = 64, *pp = &p;
  void *axpy_args[] = {&a, &xp, &yp, &n}, *other_args[] = {&pp};
  hipKernelNodeParams kp = {}, op = {};
  kp.func = (void *)axpy, kp.gridDim = dim3(2), kp.blockDim = dim3(32), kp.kernelParams = axpy_args;
  op.func = (void *)other, op.gridDim = dim3(1), op.blockDim = dim3(32), op.kernelParams = other_args;
  hipGraphNode_t k1, k2;
  rc |= hipGraphAddKernelNode(&k1, g, nullptr, 0, &kp);
  rc |= hipGraphAddKernelNode(&k2, g, &k1, 1, &op);
  hipKernelNodeParams got = {};
  rc |= hipGraphKernelNodeGetParams(k1, &got);
  int got_right = got.func == (void *)axpy && got.gridDim.x == 2 && got.blockDim.x == 32 &&
                  *(float *)got.kernelParams[0] == 2.0f && *(float **)got.kernelParams[2] == y &&
                  *(int *)got.kernelParams[3] == 64;
  hipGraphExec_t exec, exec2;
  rc |= hipGraphInstantiate(&exec, g, nullptr, nullptr, 0);
  rc |= hipGraphLaunch(exec, s);
  rc |= hipDeviceSynchronize();
  a = 3.0f;
  rc |= hipGraphExecKernelNodeSetParams(exec, k1, &kp);
  rc |= hipGraphLaunch(exec, s);
  rc |= hipDeviceSynchronize();
  a = 1.0f, kp.gridDim = dim3(1);
  rc |= hipGraphKernelNodeSetParams(k1, &kp);
  rc |= hipGraphInstantiate(&exec2, g, nullptr, nullptr, 0);
  rc |= hipGraphLaunch(exec2, s);
  rc |= hipDeviceSynchronize();
  int wrong = 0;
  for (int i = 0; i < 64; i++)
    wrong += y[i] != (i < 32 ? 6.0f : 5.0f) * i + 1.0f;
  std::printf("handbuilt rc %d got %s y %s p %d\n", rc, got_right ? "right" : "wrong",
              wrong ? "wrong" : "right", p);
  return 0;
}
