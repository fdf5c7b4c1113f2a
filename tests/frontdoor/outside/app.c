/*
 * app.c: a program of another project, built against an installed nanoprobe
 * (test_frontdoor.py's install case): atomics, a NANO_ZONE and a CPU kernel.
 */
#include <nano/kernel.h>
#include <rpd.h>

#include <stdio.h>
#include <stdlib.h>

enum { BLOCKS = 4, THREADS = 64, N = BLOCKS * THREADS, ADDS = 1000 };

NANO_KERNEL void twice(float *y, const float *x) {
  unsigned i = nano_block_idx().x * nano_block_dim().x + nano_thread_idx().x;
  y[i] = 2.0f * x[i];
}

static long counter;

int main(void) {
  float *x = calloc(N, sizeof *x), *y = calloc(N, sizeof *y);
  if (!x || !y) return 1;
  for (int i = 0; i < ADDS; i++) {
    NANO_ZONE("add");
    __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
  }
  for (int i = 0; i < N; i++) x[i] = (float)i;
  NANO_LAUNCH(nano_dim(BLOCKS, 1, 1), nano_dim(THREADS, 1, 1), twice(y, x));
  for (int i = 0; i < N; i++)
    if (y[i] != 2.0f * (float)i) return 1;
  printf("outside: %ld adds, %d threads\n", counter, N);
  free(x);
  free(y);
  return 0;
}
