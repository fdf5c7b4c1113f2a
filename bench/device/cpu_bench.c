/*
 * cpu_bench: run time of CPU-kernel twins (recording every access into a
 * dh_comms buffer large enough never to fill) over their originals, same
 * grid, same process, in thread CPU time (the machine may be shared). Prints
 * one line per kernel with the ratio.
 * usage: cpu_bench [THREADS] [REPEATS]
 */
#define _POSIX_C_SOURCE 200809L
#include "nano/dh_comms.h"
#include "nano/kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void bench_triad(float *a, const float *b, const float *c, float s);
void bench_poly(float *a, const float *b);
void __nano_twin_bench_triad(float *a, const float *b, const float *c, float s, void *desc);
void __nano_twin_bench_poly(float *a, const float *b, void *desc);

static double bench_now(void) {
  struct timespec t;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) {
    perror("clock_gettime");
    exit(1);
  }
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Smallest power of two >= n. */
static uint64_t bench_pow2(uint64_t n) {
  uint64_t p = 128;
  while (p < n)
    p <<= 1;
  return p;
}

int main(int argc, char **argv) {
  unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 1u << 18;
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  if (n < 256 || n % 256 || reps < 1) {
    fprintf(stderr, "cpu_bench: THREADS must be a multiple of 256, REPEATS >= 1\n");
    return 2;
  }
  float *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b), *c = calloc(n, sizeof *c);
  /* triad: 3 records per thread; poly: 2; 72 bytes each. */
  struct nano_dh_buffer *buf =
      nano_dh_buffer_create(NULL, bench_pow2((uint64_t)n * 3 * (NANO_DH_HDR_SIZE + 8)), 0, 0, NULL, 0);
  if (!a || !b || !c || !buf) {
    fprintf(stderr, "cpu_bench: out of memory\n");
    return 1;
  }
  for (unsigned i = 0; i < n; i++)
    b[i] = (float)i * 0.5f, c[i] = 1.0f / (float)(i + 1);
  void *desc = nano_dh_buffer_desc(buf);
  nano_dim3 grid = nano_dim(n / 256, 1, 1), block = nano_dim(256, 1, 1);
  struct nano_dh_drain_stats st = {0};
  for (int k = 0; k < 2; k++) {
    double best_o = 1e30, best_t = 1e30;
    for (int r = 0; r < reps; r++) {
      double t0 = bench_now();
      if (k == 0)
        NANO_LAUNCH(grid, block, bench_triad(a, b, c, 3.0f));
      else
        NANO_LAUNCH(grid, block, bench_poly(a, b));
      double t1 = bench_now();
      if (k == 0)
        NANO_LAUNCH(grid, block, __nano_twin_bench_triad(a, b, c, 3.0f, desc));
      else
        NANO_LAUNCH(grid, block, __nano_twin_bench_poly(a, b, desc));
      double t2 = bench_now();
      long got = nano_dh_buffer_finish(buf, NULL, NULL, &st);
      if (got != (long)n * (k == 0 ? 3 : 2) || nano_dh_buffer_dropped(buf) != 0) {
        fprintf(stderr, "cpu_bench: %ld records, %llu dropped: %s\n", got,
                (unsigned long long)nano_dh_buffer_dropped(buf), st.first_error);
        return 1;
      }
      if (t1 - t0 < best_o)
        best_o = t1 - t0;
      if (t2 - t1 < best_t)
        best_t = t2 - t1;
    }
    printf("  cpu %-6s %u threads: original %.2f ns/thread, twin %.2f ns/thread, "
           "slowdown %.2fx\n",
           k == 0 ? "triad" : "poly", n, 1e9 * best_o / n, 1e9 * best_t / n, best_t / best_o);
  }
  nano_dh_buffer_destroy(buf);
  free(a);
  free(b);
  free(c);
  return 0;
}
