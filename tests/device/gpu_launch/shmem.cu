// Kernel configuration reaches the twins, and a twin's failure never becomes
// the program's (tests/device/gpu_launch): big needs 64 KiB of dynamic shared
// memory, which the program allows with cudaFuncSetAttribute (the C++
// wrapper: its handle is no constant where the plugin sees it); small is
// launched with as much without it, so its launch fails, with or without the
// tool, as does a launch of big with a grid over CUDA's limits (grid y
// 70000). Then a cooperative launch of big: routed, its twin launched
// cooperatively. Prints what the program sees: the attribute call's result,
// each launch's cudaGetLastError, the last error after them, the results.
#include <cstdio>

__global__ void big(int *p) {
  extern __shared__ int sh[];
  sh[threadIdx.x] = 1;
  __syncthreads();
  *p = sh[0];
}

__global__ void small(int *p) {
  extern __shared__ int sh[];
  sh[threadIdx.x] = 1;
  __syncthreads();
  *p = sh[0];
}

#define SHARED (64 << 10)

int main() {
  static int p, q;
  int *pp = &p, *qp = &q;
  cudaStream_t s = (cudaStream_t)0x3000;
  int set = cudaFuncSetAttribute(big, cudaFuncAttributeMaxDynamicSharedMemorySize, SHARED);
  big<<<1, 32, SHARED, s>>>(pp);
  int big_rc = cudaGetLastError();
  small<<<1, 32, SHARED, s>>>(qp);
  int small_rc = cudaGetLastError();
  big<<<dim3(1, 70000), 32, SHARED, s>>>(pp); /* grid y over 65535 */
  int grid_rc = cudaGetLastError();
  int after = cudaGetLastError();
  void *args[] = {&pp};
  int coop = cudaLaunchCooperativeKernel((const void *)big, dim3(2), dim3(32), args, SHARED, s);
  cudaDeviceSynchronize();
  std::printf("shmem set %d big %d small %d grid %d after %d coop %d p %d q %d\n", set, big_rc,
              small_rc, grid_rc, after, coop, p, q);
  return 0;
}
