// hip_repeat.hip: N launches of a small kernel, each waited for, timed per
// launch; the HSA tool's cost inside a real HIP runtime (dispatch_bench.py,
// mode real_*). The kernel is named and shaped as tests/hsa's axpy, which the
// stand-in ROCr's hardware emulates.
#include <hip/hip_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = a * x[i] + y[i];
}

int main(int argc, char **argv) {
  const int n = 256, launches = argc > 1 ? atoi(argv[1]) : 1000;
  float *x, *y, hy[n];
  if (hipMalloc(&x, n * sizeof(float)) != hipSuccess ||
      hipMalloc(&y, n * sizeof(float)) != hipSuccess ||
      hipMemset(x, 0, n * sizeof(float)) != hipSuccess ||
      hipMemset(y, 0, n * sizeof(float)) != hipSuccess)
    return 1;
  axpy<<<1, n>>>(1.0f, x, y, n); // the runtime's and the tool's set-up, untimed
  if (hipDeviceSynchronize() != hipSuccess)
    return 1;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; i++) {
    axpy<<<1, n>>>(1.0f, x, y, n);
    if (hipDeviceSynchronize() != hipSuccess)
      return 1;
  }
  double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  if (hipMemcpy(hy, y, sizeof hy, hipMemcpyDeviceToHost) != hipSuccess)
    return 1;
  std::printf("%s %d launches, ns per launch %.0f\n", hy[0] == 0.0f ? "ok" : "WRONG", launches,
              ns / launches);
  return 0;
}
