// atomics.cu: every thread adds one to one counter: N atomic accesses.
#include "common.h"

__global__ void count(unsigned *counter) { atomicAdd(counter, 1u); }

int main() {
  const int n = 1 << 16;
  unsigned *counter, h = 0;
  CHECK(cudaMalloc(&counter, sizeof h));
  CHECK(cudaMemset(counter, 0, sizeof h));
  count<<<n / 256, 256>>>(counter);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(&h, counter, sizeof h, cudaMemcpyDeviceToHost));
  std::printf("atomics %s\n", h == (unsigned)n ? "ok" : "WRONG");
  return h != (unsigned)n;
}
