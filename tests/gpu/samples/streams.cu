// streams.cu: one kernel on each of two streams, spinning about 300 ms on the
// first and 100 ms on the second: instrumented and traced, they must still
// run at the same time (the trace's two kernel ops overlap), and the second's
// dispatch must end (be reported) before the first's: the end of a twin on
// one stream is not held back by a longer one launched before it on another.
#include "common.h"

__global__ void spin(long long cycles, int *out) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

int main() {
  int khz = 0;
  CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  long long cycles = (long long)khz * 100; /* 100 ms at the base clock */
  const int spins[2] = {3, 1};             /* stream 0's kernel spins 3 times longer */
  int *out[2];
  cudaStream_t s[2];
  for (int k = 0; k < 2; k++) {
    CHECK(cudaMalloc(&out[k], 32 * sizeof(int)));
    CHECK(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking));
  }
  for (int k = 0; k < 2; k++) spin<<<1, 32, 0, s[k]>>>(spins[k] * cycles, out[k]);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  int h[32], wrong = 0;
  for (int k = 0; k < 2; k++) {
    CHECK(cudaMemcpy(h, out[k], sizeof h, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 32; i++) wrong += h[i] != 1;
  }
  std::printf("streams %s\n", wrong ? "WRONG" : "ok");
  return wrong != 0;
}
