// hipLaunchKernelExC (HIP 6: a configuration with launch attributes, which
// hipLaunchKernelEx's C++ templates call; tests/device/gpu_launch) of a
// kernel with a twin: routed through __nano_gpu_launch_ex, the twin launches
// with the program's configuration, its attribute included, and the results
// are right. Debian's HIP is 5.2: the call and its configuration are
// declared here as HIP 6's hip_runtime_api.h has them.
#include <hip/hip_runtime.h>
#include <cstdio>

typedef struct {
  int id; // hipLaunchAttributeID
  char pad[4];
  union {
    char raw[64];
    int cooperative;
  } val;
} hipLaunchAttribute;
typedef struct {
  dim3 gridDim, blockDim;
  size_t dynamicSmemBytes;
  hipStream_t stream;
  hipLaunchAttribute *attrs;
  unsigned int numAttrs;
} hipLaunchConfig_t;
extern "C" hipError_t hipLaunchKernelExC(const hipLaunchConfig_t *config, const void *fPtr,
                                         void **args);
#define HIP_LAUNCH_ATTRIBUTE_COOPERATIVE 2

__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
static float x[1000], y[1000];
int main() {
  for (int i = 0; i < 1000; i++)
    x[i] = (float)i, y[i] = 1.0f;
  hipLaunchAttribute cooperative = {};
  cooperative.id = HIP_LAUNCH_ATTRIBUTE_COOPERATIVE;
  cooperative.val.cooperative = 1;
  hipLaunchConfig_t config = {};
  config.gridDim = dim3(4);
  config.blockDim = dim3(256);
  config.attrs = &cooperative;
  config.numAttrs = 1;
  float a = 2.0f, *px = x, *py = y;
  int n = 1000;
  void *args[] = {&a, &px, &py, &n};
  hipError_t rc = hipLaunchKernelExC(&config, (const void *)axpy, args);
  if (rc == hipSuccess)
    rc = hipDeviceSynchronize();
  int wrong = 0;
  for (int i = 0; i < 1000; i++)
    wrong += y[i] != 2.0f * i + 1.0f;
  std::printf("exc %d y %s\n", (int)rc, wrong ? "wrong" : "right");
  return 0;
}
