// Kernels compiled with the nanoprobe plugin (libNanoPass.so) in the
// kerneldb_pass_twins test: kerneldb must pair each with the twin the pass
// adds.
#include <hip/hip_runtime.h>
#define TID (__builtin_amdgcn_workitem_id_x())

__global__ void axpy(float a, const float* x, float* y, int n) {
  int i = TID;
  if (i < n) y[i] = a * x[i] + y[i];
}
template <typename T>
__global__ void fill(T* p, T v) { p[TID] = v; }
template __global__ void fill<double>(double*, double);
extern "C" __global__ void plain_c(int* p) { p[TID] += 1; }
__global__ void noargs() {}
