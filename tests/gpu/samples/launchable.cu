// launchable.cu: twins launch wherever their kernels do (issue 40.4).
// hungry has no __launch_bounds__ and is launched with 1024 threads a block:
// it fits (56 registers or so), its twin without a bound would not (about 90),
// so the plugin gives the twin .maxntid 1024. bigshared takes 64 KiB of
// dynamic shared memory, which the program allows with cudaFuncSetAttribute;
// the plugin makes the same call for the twin. Both must be instrumented
// dispatches, and the program must see no error.
#include "common.h"

#define ACC 40
#define THREADS 1024
#define BLOCKS 4
#define ITERS 8
#define SHARED_INTS (16 << 10) // 64 KiB

__global__ void hungry(const unsigned *in, unsigned *out, int iters) {
  unsigned acc[ACC];
  int t = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
  for (int j = 0; j < ACC; j++)
    acc[j] = in[(t + j) % (BLOCKS * THREADS)];
  for (int i = 0; i < iters; i++) {
#pragma unroll
    for (int j = 0; j < ACC; j++)
      acc[j] = acc[j] * acc[(j + 1) % ACC] + in[(i * ACC + j) % (BLOCKS * THREADS)];
  }
  unsigned s = 0;
#pragma unroll
  for (int j = 0; j < ACC; j++)
    s += acc[j] * (j + 1);
  out[t] = s;
}

__global__ void bigshared(int *p) {
  extern __shared__ int sh[];
  int base = blockIdx.x * SHARED_INTS;
  for (int i = threadIdx.x; i < SHARED_INTS; i += blockDim.x)
    sh[i] = p[base + i];
  __syncthreads();
  for (int i = threadIdx.x; i < SHARED_INTS; i += blockDim.x)
    p[base + i] = sh[SHARED_INTS - 1 - i];
}

static unsigned model(const unsigned *in, int t) {
  unsigned acc[ACC];
  for (int j = 0; j < ACC; j++)
    acc[j] = in[(t + j) % (BLOCKS * THREADS)];
  for (int i = 0; i < ITERS; i++)
    for (int j = 0; j < ACC; j++) // in order: acc[j + 1] is still the old one, as on the GPU
      acc[j] = acc[j] * acc[(j + 1) % ACC] + in[(i * ACC + j) % (BLOCKS * THREADS)];
  unsigned s = 0;
  for (int j = 0; j < ACC; j++)
    s += acc[j] * (j + 1);
  return s;
}

int main() {
  const int n = BLOCKS * THREADS, m = BLOCKS * SHARED_INTS;
  unsigned *in, *out, *h = new unsigned[n];
  int *p, *hp = new int[m];
  for (int i = 0; i < n; i++) h[i] = 2654435761u * (unsigned)i;
  for (int i = 0; i < m; i++) hp[i] = i;
  CHECK(cudaMalloc(&in, n * sizeof *in));
  CHECK(cudaMalloc(&out, n * sizeof *out));
  CHECK(cudaMalloc(&p, m * sizeof *p));
  CHECK(cudaMemcpy(in, h, n * sizeof *in, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(p, hp, m * sizeof *p, cudaMemcpyHostToDevice));
  hungry<<<BLOCKS, THREADS>>>(in, out, ITERS);
  CHECK(cudaGetLastError());
  CHECK(cudaFuncSetAttribute(bigshared, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             SHARED_INTS * (int)sizeof(int)));
  bigshared<<<BLOCKS, THREADS, SHARED_INTS * sizeof(int)>>>(p);
  CHECK(cudaGetLastError());
  unsigned *got = new unsigned[n];
  CHECK(cudaMemcpy(got, out, n * sizeof *out, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hp, p, m * sizeof *p, cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int t = 0; t < n; t++) wrong += got[t] != model(h, t);
  for (int i = 0; i < m; i++)
    wrong += hp[i] != i / SHARED_INTS * SHARED_INTS + SHARED_INTS - 1 - i % SHARED_INTS;
  std::printf("launchable %s\n", wrong ? "WRONG" : "ok");
  return wrong != 0;
}
