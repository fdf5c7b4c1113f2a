// A thread that picks device 1 with cudaSetDevice, which before CUDA 12 makes
// no context current, then launches on the default stream: the twin and its
// buffers belong to device 1's primary context, the one cudart then uses for
// the program's own calls, not device 0's (tests/device/gpu_launch).
#include <cstdio>

__global__ void other(int *p) { *p = 1; }

int main() {
  static int p;
  int *pp = &p;
  int set = cudaSetDevice(1);
  other<<<1, 32>>>(pp);
  int rc = cudaGetLastError();
  cudaDeviceSynchronize();
  int dev = -1;
  cudaGetDevice(&dev);
  std::printf("lazydev set %d launch %d device %d p %d\n", set, rc, dev, p);
  return 0;
}
