/* CPU kernels for the device-instrumentation benchmark, compiled with the
 * plugin: a memory-bound triad (3 accesses per thread) and a compute-heavier
 * kernel (2 accesses per 64 multiply-adds). */
#include "nano/kernel.h"

NANO_KERNEL void bench_triad(float *a, const float *b, const float *c, float s) {
  unsigned i = nano_block_idx().x * nano_block_dim().x + nano_thread_idx().x;
  a[i] = b[i] + s * c[i];
}

NANO_KERNEL void bench_poly(float *a, const float *b) {
  unsigned i = nano_block_idx().x * nano_block_dim().x + nano_thread_idx().x;
  float x = b[i], y = 0.0f;
  for (int k = 0; k < 64; k++)
    y = y * x + (float)k;
  a[i] = y;
}
