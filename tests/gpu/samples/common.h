// common.h: what every GPU sample shares: a checked CUDA call.
#pragma once
#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(2);                                                                                \
    }                                                                                              \
  } while (0)

// The data of a kernel that doubles n floats (out[i] = 2 * in[i]): in holds
// 0, 1, 2, ... on the device, out is where the kernel writes.
struct Doubling {
  int n;
  float *in, *out;
};

inline Doubling doubling_setup(int n) {
  Doubling d = {n, nullptr, nullptr};
  float *h = new float[n];
  CHECK(cudaMalloc(&d.in, n * sizeof(float)));
  CHECK(cudaMalloc(&d.out, n * sizeof(float)));
  for (int i = 0; i < n; i++) h[i] = (float)i;
  CHECK(cudaMemcpy(d.in, h, n * sizeof(float), cudaMemcpyHostToDevice));
  delete[] h;
  return d;
}

// The elements of out the kernel got wrong (after its launch).
inline int doubling_wrong(const Doubling &d) {
  CHECK(cudaGetLastError());
  float *h = new float[d.n];
  CHECK(cudaMemcpy(h, d.out, d.n * sizeof(float), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < d.n; i++) wrong += h[i] != 2.0f * (float)i;
  delete[] h;
  return wrong;
}
