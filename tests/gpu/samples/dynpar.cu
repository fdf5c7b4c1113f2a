// dynpar.cu: CUDA dynamic parallelism (-fgpu-rdc, the device runtime): the
// first thread of a kernel launches another kernel on the device. The
// plugin routes that launch to the child's twin, which records into the
// launching dispatch: one dispatch (launcher's), with launcher's store of
// 32 lanes and the child's coalesced load and store of 4096 elements at
// their own lines.
#include "common.h"

__global__ void twice(const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * in[i];
}

__global__ void launcher(const float *in, float *out, int n, int *mark) {
  mark[threadIdx.x] = 1;
  if (threadIdx.x == 0)
    twice<<<n / 256, 256>>>(in, out, n);
}

int main() {
  Doubling d = doubling_setup(4096);
  int *mark;
  CHECK(cudaMalloc(&mark, 32 * sizeof(int)));
  launcher<<<1, 32>>>(d.in, d.out, d.n, mark);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  int wrong = doubling_wrong(d);
  std::printf("dynpar %s\n", wrong ? "WRONG" : "ok");
  return wrong != 0;
}
