/*
 * CPU kernels with known accesses, compiled with the plugin by the clang of
 * each plugin build. The *_line constants give the source line of each access
 * so that the test checks site lines without hard-coding them.
 */
#include "nano/kernel.h"

#include <stdint.h>
#include <string.h>

const unsigned axpy_line = __LINE__ + 6;
NANO_KERNEL void k_axpy(float *y, const float *x, float a, int n) {
  nano_dim3 b = nano_block_idx(), d = nano_block_dim(), t = nano_thread_idx();
  unsigned i = (b.y * d.y + t.y) * 64 + b.x * d.x + t.x;
  if (i >= (unsigned)n)
    return;
  y[i] = a * x[i] + y[i];
}

const unsigned bump_line = __LINE__ + 3;
/* Called by k_mixed: cloned for the twin, so its store is recorded too. */
static __attribute__((noinline)) void bump(char *p, unsigned i) {
  p[i] = (char)(p[i] + 1);
}

const unsigned mixed_atomic_line = __LINE__ + 5;
const unsigned mixed_cas_line = __LINE__ + 6;
const unsigned mixed_copy_line = __LINE__ + 7;
NANO_KERNEL void k_mixed(int64_t *count, char *dst, const char *src, unsigned len) {
  unsigned i = nano_block_idx().x * nano_block_dim().x + nano_thread_idx().x;
  __atomic_fetch_add(count, 1, __ATOMIC_RELAXED);
  int64_t expected = 0;
  __atomic_compare_exchange_n(count + 1, &expected, (int64_t)i + 1, 0, __ATOMIC_SEQ_CST,
                              __ATOMIC_SEQ_CST);
  memcpy(dst + i * len, src + i * len, len);
  bump(dst, i * len);
}
