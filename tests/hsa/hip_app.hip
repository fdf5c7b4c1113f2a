// A HIP program built by plain hipcc, with no nanoprobe in it (issue 38's
// end-to-end test): it runs on the stand-in HIP runtime (standin_hip.c) over
// the stand-in ROCr, and prints "ok KERNEL" for each kernel whose results
// are right. With a code object's path as argument it also runs that
// object's axpy as Triton and Tensile run kernels: hipModuleLoadData,
// hipModuleGetFunction, hipModuleLaunchKernel, then hipExtModuleLaunchKernel
// (Tensile's, rocBLAS's). With "graph" after it, y is reset to 1 and an axpy
// captured into a graph on a stream of its own is launched twice (y = 4x+1).
// At the end y is written again with hipMemcpyHtoD, an axpy launched
// cooperatively and y read back with hipMemcpyDtoHAsync (y = 2x+1), one launch
// by both multi-device calls (y = 2x+1, then 3x+1); then set to 1 by a 2D
// copy, copied to and from `out` by peer copies, read by hipMemcpyWithStream.
#include <hip/hip_ext.h>
#include <hip/hip_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void dyn(int *out) {
  extern __shared__ int s[];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
}
int main(int argc, char **argv) {
  const int n = 1000;
  float *x, *y;
  hipMalloc(&x, n * 4); hipMalloc(&y, n * 4);
  float hx[n], hy[n];
  for (int i = 0; i < n; i++) hx[i] = i, hy[i] = 1;
  hipMemcpy(x, hx, n * 4, hipMemcpyHostToDevice);
  hipMemcpy(y, hy, n * 4, hipMemcpyHostToDevice);
  axpy<<<(n + 255) / 256, 256>>>(2.0f, x, y, n);
  int *out; hipMalloc(&out, 64 * 4);
  dyn<<<1, 64, 64 * sizeof(int)>>>(out);
  hipDeviceSynchronize();
  hipMemcpy(hy, y, n * 4, hipMemcpyDeviceToHost);
  int ho[64]; hipMemcpy(ho, out, 64 * 4, hipMemcpyDeviceToHost);
  int ok = 1;
  for (int i = 0; i < n; i++) ok &= hy[i] == 2.0f * i + 1;
  printf("%s axpy\n", ok ? "ok" : "WRONG");
  ok = 1;
  for (int t = 0; t < 64; t++) ok &= ho[t] == 63 - t;
  printf("%s dyn\n", ok ? "ok" : "WRONG");
  if (argc > 1) { // y = 2x + 1 so far: once more through a module, 4x + 1
    FILE *f = fopen(argv[1], "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0)
      return 1;
    long size = ftell(f);
    char *image = (char *)malloc(size);
    if (fseek(f, 0, SEEK_SET) != 0 || fread(image, 1, size, f) != (size_t)size)
      return 1;
    fclose(f);
    hipModule_t m;
    hipFunction_t k;
    float a = 2.0f;
    int count = n;
    void *params[] = {&a, &x, &y, &count};
    if (hipModuleLoadData(&m, image) != hipSuccess ||
        hipModuleGetFunction(&k, m, "_Z4axpyfPKfPfi") != hipSuccess ||
        hipModuleLaunchKernel(k, (n + 255) / 256, 1, 1, 256, 1, 1, 0, 0, params, nullptr) !=
            hipSuccess)
      return 1;
    hipMemcpy(hy, y, n * 4, hipMemcpyDeviceToHost);
    ok = 1;
    for (int i = 0; i < n; i++)
      ok &= hy[i] == 4.0f * i + 1;
    printf("%s module axpy\n", ok ? "ok" : "WRONG");
    // and as Tensile (rocBLAS) launches: sizes in work-items, 6x + 1
    if (hipExtModuleLaunchKernel(k, 1024, 1, 1, 256, 1, 1, 0, 0, params, nullptr) != hipSuccess)
      return 1;
    hipMemcpy(hy, y, n * 4, hipMemcpyDeviceToHost);
    ok = 1;
    for (int i = 0; i < n; i++)
      ok &= hy[i] == 6.0f * i + 1;
    printf("%s ext module axpy\n", ok ? "ok" : "WRONG");
  }
  if (argc > 2 && !strcmp(argv[2], "graph")) {
    for (int i = 0; i < n; i++)
      hy[i] = 1;
    hipMemcpy(y, hy, n * 4, hipMemcpyHostToDevice);
    hipStream_t s;
    hipGraph_t graph;
    hipGraphExec_t exec;
    if (hipStreamCreate(&s) != hipSuccess ||
        hipStreamBeginCapture(s, hipStreamCaptureModeGlobal) != hipSuccess)
      return 1;
    axpy<<<(n + 255) / 256, 256, 0, s>>>(2.0f, x, y, n);
    if (hipStreamEndCapture(s, &graph) != hipSuccess ||
        hipGraphInstantiate(&exec, graph, nullptr, nullptr, 0) != hipSuccess ||
        hipGraphLaunch(exec, s) != hipSuccess || hipGraphLaunch(exec, s) != hipSuccess ||
        hipStreamSynchronize(s) != hipSuccess)
      return 1;
    hipMemcpy(hy, y, n * 4, hipMemcpyDeviceToHost);
    ok = 1;
    for (int i = 0; i < n; i++)
      ok &= hy[i] == 4.0f * i + 1;
    printf("%s graph axpy\n", ok ? "ok" : "WRONG");
  }
  // the direction-named copies and a cooperative launch: y = 2x + 1 again
  for (int i = 0; i < n; i++)
    hy[i] = 1;
  if (hipMemcpyHtoD((hipDeviceptr_t)y, hy, n * 4) != hipSuccess)
    return 1;
  float a2 = 2.0f;
  int count2 = n;
  void *cargs[] = {&a2, &x, &y, &count2};
  if (hipLaunchCooperativeKernel((const void *)axpy, dim3((n + 255) / 256), dim3(256), cargs, 0,
                                 0) != hipSuccess ||
      hipMemcpyDtoHAsync(hy, (hipDeviceptr_t)y, n * 4, 0) != hipSuccess ||
      hipStreamSynchronize(0) != hipSuccess)
    return 1;
  ok = 1;
  for (int i = 0; i < n; i++)
    ok &= hy[i] == 2.0f * i + 1;
  printf("%s cooperative axpy\n", ok ? "ok" : "WRONG");
  // a multi-device cooperative launch on the one device (on a stream of
  // its own: never the null stream), with a factor of 0: y stays 2x + 1
  float a0 = 0.0f;
  void *margs[] = {&a0, &x, &y, &count2};
  hipStream_t ms;
  if (hipStreamCreate(&ms) != hipSuccess)
    return 1;
  hipLaunchParams lp = {(void *)axpy, dim3((n + 255) / 256), dim3(256), margs, 0, ms};
  if (hipLaunchCooperativeKernelMultiDevice(&lp, 1, 0) != hipSuccess ||
      hipDeviceSynchronize() != hipSuccess || hipMemcpy(hy, y, n * 4, hipMemcpyDeviceToHost) != hipSuccess)
    return 1;
  ok = 1;
  for (int i = 0; i < n; i++)
    ok &= hy[i] == 2.0f * i + 1;
  printf("%s multi-device axpy\n", ok ? "ok" : "WRONG");
  // the same list through hipExtLaunchMultiKernelMultiDevice (launches
  // that need not cooperate) with a factor of 1: y = 3x + 1
  float a1 = 1.0f;
  margs[0] = &a1;
  if (hipExtLaunchMultiKernelMultiDevice(&lp, 1, 0) != hipSuccess ||
      hipDeviceSynchronize() != hipSuccess || hipMemcpy(hy, y, n * 4, hipMemcpyDeviceToHost) != hipSuccess)
    return 1;
  ok = 1;
  for (int i = 0; i < n; i++)
    ok &= hy[i] == 3.0f * i + 1;
  printf("%s ext multi-device axpy\n", ok ? "ok" : "WRONG");
  // a 2D copy (25 rows of 40 floats), a peer copy of y's first 64 floats
  // into out and back, a copy on a stream: y = 1, and so is what comes back
  for (int i = 0; i < n; i++)
    hy[i] = 1;
  if (hipMemcpy2D(y, 40 * 4, hy, 40 * 4, 40 * 4, 25, hipMemcpyHostToDevice) != hipSuccess ||
      hipMemcpyPeer(out, 0, y, 0, 64 * 4) != hipSuccess ||
      hipMemcpyPeer(y, 0, out, 0, 64 * 4) != hipSuccess ||
      hipMemcpyWithStream(hy, y, n * 4, hipMemcpyDeviceToHost, 0) != hipSuccess)
    return 1;
  ok = 1;
  for (int i = 0; i < n; i++)
    ok &= hy[i] == 1.0f;
  printf("%s 2d peer and stream copies\n", ok ? "ok" : "WRONG");
  hipFree(x); hipFree(y); hipFree(out);
  return 0;
}
