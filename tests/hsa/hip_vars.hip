// hip_vars.hip: kernels_variable.hip's axpy on the HIP runtime, with its
// module variables set and read by the program (hipMemcpyToSymbol,
// hipMemcpyFromSymbol): a __constant__ bias added to each y and a __device__
// count the kernel adds n to. Run on Debian's real HIP runtime with a kernel
// cache built from the same file, whose kernels have copies of their own of
// both variables (test_hsa.py case real_hip).
#include "kernels_variable.hip"

#include <cstdio>

int main() {
  const int n = 1000, runs = 2, count0 = 5;
  const float bias = 0.5f, a = 2.0f;
  static float hx[n], hy[n];
  float *x, *y;
  for (int i = 0; i < n; i++)
    hx[i] = (float)i, hy[i] = 1.0f;
  int count = count0;
  if (hipMalloc(&x, sizeof hx) != hipSuccess || hipMalloc(&y, sizeof hy) != hipSuccess ||
      hipMemcpy(x, hx, sizeof hx, hipMemcpyHostToDevice) != hipSuccess ||
      hipMemcpy(y, hy, sizeof hy, hipMemcpyHostToDevice) != hipSuccess ||
      hipMemcpyToSymbol(HIP_SYMBOL(axpy_bias), &bias, sizeof bias) != hipSuccess ||
      hipMemcpyToSymbol(HIP_SYMBOL(axpy_count), &count, sizeof count) != hipSuccess)
    return 1;
  for (int r = 0; r < runs; r++)
    axpy<<<(n + 255) / 256, 256>>>(a, x, y, n);
  count = -1;
  if (hipDeviceSynchronize() != hipSuccess ||
      hipMemcpyFromSymbol(&count, HIP_SYMBOL(axpy_count), sizeof count) != hipSuccess ||
      hipMemcpy(hy, y, sizeof hy, hipMemcpyDeviceToHost) != hipSuccess)
    return 1;
  int ok = count == count0 + runs * n;
  for (int i = 0; i < n; i++) // y = 2x + 1 + bias, twice
    ok &= hy[i] == a * (a * (float)i + bias) + 1.0f;
  std::printf("%s hip variables count %d y[1] %g\n", ok ? "ok" : "WRONG", count, (double)hy[1]);
  return 0;
}
