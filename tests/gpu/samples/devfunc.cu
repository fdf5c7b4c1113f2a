// devfunc.cu: the load happens in a device function that is not inlined:
// its accesses are recorded in the twin's clone of it, at its own lines.
#include "common.h"

__device__ __noinline__ float fetch(const float *p, int i) { return p[i]; }

__global__ void twice(const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * fetch(in, i);
}

int main() {
  Doubling d = doubling_setup(1 << 16);
  twice<<<d.n / 256, 256>>>(d.in, d.out, d.n);
  int wrong = doubling_wrong(d);
  std::printf("devfunc %s\n", wrong ? "WRONG" : "ok");
  return wrong != 0;
}
