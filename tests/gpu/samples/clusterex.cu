// clusterex.cu: cudaLaunchKernelEx with a thread-block cluster of two blocks
// (sm_90): the plugin routes its cudaLaunchKernelExC, and the twin launches
// with the program's configuration, the cluster attribute included. Every
// thread counts once (the result), one instrumented dispatch whose atomic
// location has one access per thread.
#include "common.h"

__global__ void clustered(int *count) { atomicAdd(count, 1); }

int main() {
  const int blocks = 8, threads = 64;
  int *count, h = 0;
  CHECK(cudaMalloc(&count, sizeof(int)));
  CHECK(cudaMemset(count, 0, sizeof(int)));
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(threads);
  cudaLaunchAttribute cluster[1];
  cluster[0].id = cudaLaunchAttributeClusterDimension;
  cluster[0].val.clusterDim.x = 2;
  cluster[0].val.clusterDim.y = 1;
  cluster[0].val.clusterDim.z = 1;
  config.attrs = cluster;
  config.numAttrs = 1;
  CHECK(cudaLaunchKernelEx(&config, clustered, count));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(&h, count, sizeof h, cudaMemcpyDeviceToHost));
  std::printf("clusterex %s\n", h == blocks * threads ? "ok" : "WRONG");
  return 0;
}
