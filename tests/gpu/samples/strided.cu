// strided.cu: each lane loads one float 32 bytes from its neighbour's: the
// load uses 8 times the sectors (and lines) it needs; the store is coalesced.
#include "common.h"

#define STRIDE 8

// STRIDED_PLUS_ONE: the variant a plain kernel cache holds (run.sh "cached"),
// which a program's run tells from its own by the result.
#ifdef STRIDED_PLUS_ONE
#define STRIDED_ADD 1.0f
#else
#define STRIDED_ADD 0.0f
#endif

// A __constant__ the program sets: a replacement from a kernel cache, which
// has its own copy, must compute with the program's (run.sh "cached").
__constant__ float strided_offset;
#define STRIDED_OFFSET 0.5f

__global__ void strided(const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[(long)i * STRIDE] + STRIDED_ADD + strided_offset;
}

int main() {
  const int n = 1 << 16;
  float *in, *out, *h = new float[(size_t)n * STRIDE];
  CHECK(cudaMalloc(&in, (size_t)n * STRIDE * sizeof(float)));
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  for (long i = 0; i < (long)n * STRIDE; i++) h[i] = (float)(i % 4096);
  CHECK(cudaMemcpy(in, h, (size_t)n * STRIDE * sizeof(float), cudaMemcpyHostToDevice));
  const float offset = STRIDED_OFFSET;
  CHECK(cudaMemcpyToSymbol(strided_offset, &offset, sizeof offset));
  strided<<<n / 256, 256>>>(in, out, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(h, out, n * sizeof(float), cudaMemcpyDeviceToHost));
  int wrong = 0, plus_one = 0;
  for (long i = 0; i < n; i++) {
    float want = (float)((i * STRIDE) % 4096) + STRIDED_OFFSET;
    wrong += h[i] != want;
    plus_one += h[i] == want + 1.0f;
  }
  // "plus one": every element as the cache's variant computes it
  std::printf("strided %s\n", !wrong ? "ok" : plus_one == n ? "plus one" : "WRONG");
  return wrong != 0 && plus_one != n;
}
