// cublas.cu: a library kernel not built with the plugin (cuBLAS's SGEMM):
// traced (its kernel is an op of the trace), not instrumented (no twin).
#include <cublas_v2.h>

#include "common.h"

int main() {
  const int n = 128;
  float *a, *b, *c, *h = new float[n * n];
  CHECK(cudaMalloc(&a, n * n * sizeof(float)));
  CHECK(cudaMalloc(&b, n * n * sizeof(float)));
  CHECK(cudaMalloc(&c, n * n * sizeof(float)));
  for (int i = 0; i < n * n; i++) h[i] = 1.0f;
  CHECK(cudaMemcpy(a, h, n * n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, h, n * n * sizeof(float), cudaMemcpyHostToDevice));
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "cublasCreate failed\n");
    return 2;
  }
  const float one = 1.0f, zero = 0.0f;
  if (cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n) !=
      CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "cublasSgemm failed\n");
    return 2;
  }
  CHECK(cudaMemcpy(h, c, n * n * sizeof(float), cudaMemcpyDeviceToHost));
  cublasDestroy(handle);
  int wrong = 0;
  for (int i = 0; i < n * n; i++) wrong += h[i] != (float)n;
  std::printf("cublas %s\n", wrong ? "WRONG" : "ok");
  return wrong != 0;
}
