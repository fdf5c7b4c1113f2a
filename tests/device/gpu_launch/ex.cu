// cudaLaunchKernelEx (a configuration with launch attributes: a cluster of
// two blocks) of a kernel with a twin (tests/device/gpu_launch): its template
// calls cudaLaunchKernelExC with the kernel as a parameter, which the plugin
// routes through __nano_gpu_launch_ex; the twin launches with the program's
// configuration, the cluster attribute included, and the result is right.
#include <cstdio>

__global__ void other(int *p) { *p = 1; }

int main() {
  static int p;
  int *pp = &p;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(4);
  config.blockDim = dim3(32);
  cudaLaunchAttribute cluster[1];
  cluster[0].id = cudaLaunchAttributeClusterDimension;
  cluster[0].val.clusterDim.x = 2;
  cluster[0].val.clusterDim.y = 1;
  cluster[0].val.clusterDim.z = 1;
  config.attrs = cluster;
  config.numAttrs = 1;
  int rc = cudaLaunchKernelEx(&config, other, pp);
  cudaDeviceSynchronize();
  std::printf("ex launch %d p %d\n", rc, p);
  return 0;
}
