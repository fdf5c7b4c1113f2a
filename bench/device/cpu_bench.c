/*
 * cpu_bench: times CPU-kernel launches, as the runtime runs them. Built with
 * the plugin (bench_kernels.c: a memory-bound triad, 3 accesses per thread,
 * and a compute-bound polynomial, 2 accesses per 64 multiply-adds); the mode
 * comes from the environment (kernel_bench.py sets it). Prints one JSON line:
 * the wall time of each launch after a warm-up launch, per kernel.
 * usage: cpu_bench [THREADS] [REPEATS]
 */
#define _POSIX_C_SOURCE 200809L
#include "nano/kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void bench_triad(float *a, const float *b, const float *c, float s);
void bench_poly(float *a, const float *b);

static double bench_now(void) {
  struct timespec t;
  if (clock_gettime(CLOCK_MONOTONIC, &t) != 0) {
    perror("clock_gettime");
    exit(1);
  }
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 1u << 20;
  int reps = argc > 2 ? atoi(argv[2]) : 3;
  if (n < 256 || n % 256 || reps < 1) {
    fprintf(stderr, "cpu_bench: THREADS must be a multiple of 256, REPEATS >= 1\n");
    return 2;
  }
  float *a = aligned_alloc(4096, n * sizeof *a), *b = aligned_alloc(4096, n * sizeof *b),
        *c = aligned_alloc(4096, n * sizeof *c);
  if (!a || !b || !c) {
    fprintf(stderr, "cpu_bench: out of memory\n");
    return 1;
  }
  for (unsigned i = 0; i < n; i++)
    a[i] = 0.0f, b[i] = (float)i * 0.5f, c[i] = 1.0f / (float)(i + 1);
  nano_dim3 grid = nano_dim(n / 256, 1, 1), block = nano_dim(256, 1, 1);
  printf("{");
  for (int k = 0; k < 2; k++) {
    printf("%s\"%s\":[", k ? "," : "", k == 0 ? "triad" : "poly");
    for (int r = 0; r <= reps; r++) {
      double t0 = bench_now();
      if (k == 0)
        NANO_LAUNCH(grid, block, bench_triad(a, b, c, 3.0f));
      else
        NANO_LAUNCH(grid, block, bench_poly(a, b));
      double t1 = bench_now();
      if (r > 0) /* launch 0 warms up: pool threads, buffers, site tables */
        printf("%s%.9f", r > 1 ? "," : "", t1 - t0);
    }
    printf("]");
  }
  printf(",\"threads\":%u}\n", n);
  free(a);
  free(b);
  free(c);
  return 0;
}
