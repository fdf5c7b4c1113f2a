/*
 * memory.c: two CPU kernels with known memory behaviour, for MemoryAnalysis.
 *
 *   scale_coalesced  thread i reads x[i]: the 64 lanes of a wave read 256
 *                    consecutive bytes, 4 cache lines: as few as possible
 *   scale_strided    thread i reads x[4 * i]: the same 256 bytes of data
 *                    spread over 1 KiB, 16 cache lines: 4 times too many
 *
 * Built with the plugin (the build does: build/examples/memory):
 *   clang-15 -O2 -g -fpass-plugin=build/llvm-pass/libNanoPass.so \
 *            -Idh_comms/include examples/memory.c -o memory
 *   ./memory                                          # runs as is
 *   NANO_INSTRUMENT=1 NANO_ANALYZERS=MemoryAnalysis \
 *     LD_PRELOAD=build/runtime/rpd/libnano_rpd.so ./memory
 */
#include "nano/kernel.h"

#include <stdio.h>
#include <stdlib.h>

enum { BLOCKS = 16, THREADS = 256, N = BLOCKS * THREADS };

static inline unsigned global_id(void) {
  return nano_block_idx().x * nano_block_dim().x + nano_thread_idx().x;
}

NANO_KERNEL void scale_coalesced(float *y, const float *x, float a) {
  unsigned i = global_id();
  y[i] = a * x[i];
}

NANO_KERNEL void scale_strided(float *y, const float *x, float a) {
  unsigned i = global_id();
  y[i] = a * x[4 * i];
}

int main(void) {
  /* aligned like a GPU allocation, so a coalesced wave starts a line */
  float *x = aligned_alloc(4096, 4 * N * sizeof *x), *y = aligned_alloc(4096, N * sizeof *y);
  if (!x || !y) {
    perror("memory: aligned_alloc");
    return 1;
  }
  for (int i = 0; i < 4 * N; i++)
    x[i] = (float)i;
  NANO_LAUNCH(nano_dim(BLOCKS, 1, 1), nano_dim(THREADS, 1, 1), scale_coalesced(y, x, 2.0f));
  for (int i = 0; i < N; i++)
    if (y[i] != 2.0f * (float)i) {
      fprintf(stderr, "memory: scale_coalesced is wrong at %d\n", i);
      return 1;
    }
  NANO_LAUNCH(nano_dim(BLOCKS, 1, 1), nano_dim(THREADS, 1, 1), scale_strided(y, x, 2.0f));
  for (int i = 0; i < N; i++)
    if (y[i] != 2.0f * (float)(4 * i)) {
      fprintf(stderr, "memory: scale_strided is wrong at %d\n", i);
      return 1;
    }
  printf("memory: %d threads scaled twice, results checked\n", N);
  free(x);
  free(y);
  return 0;
}
