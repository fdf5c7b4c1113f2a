// dynshared.cu: dynamic shared memory, a launch through cudaLaunchKernel with
// a kernel pointer, and the shared cudart (libcudart.so: the case LD_PRELOAD
// could interpose, unlike the static one of the other samples). Each block
// reverses its 256 floats through shared memory: coalesced global accesses,
// conflict-free shared ones, and the dispatch's dynamic shared bytes.
#include "common.h"

extern __shared__ float dyn[];

__global__ void reverse(float *p) {
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  dyn[t] = p[i];
  __syncthreads();
  p[i] = dyn[blockDim.x - 1 - t];
}

int main() {
  const int blocks = 64, threads = 256, n = blocks * threads;
  float *p, *h = new float[n];
  for (int i = 0; i < n; i++) h[i] = (float)i;
  CHECK(cudaMalloc(&p, n * sizeof(float)));
  CHECK(cudaMemcpy(p, h, n * sizeof(float), cudaMemcpyHostToDevice));
  void *args[] = {&p};
  CHECK(cudaLaunchKernel((const void *)reverse, dim3(blocks), dim3(threads), args,
                         threads * sizeof(float), 0));
  CHECK(cudaMemcpy(h, p, n * sizeof(float), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < n; i++) wrong += h[i] != (float)(i / threads * threads + threads - 1 - i % threads);
  std::printf("dynshared %s\n", wrong ? "WRONG" : "ok");
  return wrong != 0;
}
