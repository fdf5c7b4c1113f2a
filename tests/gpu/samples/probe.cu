// probe.cu: exit 0 when a CUDA device is there (the suite runs), 1 when not.
#include <cstdio>
int main() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  std::printf("devices %d (%s)\n", e == cudaSuccess ? n : 0, cudaGetErrorString(e));
  return e == cudaSuccess && n > 0 ? 0 : 1;
}
