/*
 * ranges10m.c: a program doing N (default 10^7) user ranges around a little
 * work each. Built twice: with the tracer (NANO_ZONE records) and with
 * -DNANO_DISABLE (the zones compile to nothing): run.sh compares the time of
 * the loop itself (printed on stderr: what tracing costs the program while it
 * runs) and the process's wall time (writing the trace before exit included).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rpd.h"

static uint64_t work(uint64_t x) {
  for (int i = 0; i < 16; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 10000000L;
  uint64_t x = 88172645463325252ull;
  struct timespec t0, t1;
  if (clock_gettime(CLOCK_MONOTONIC, &t0) != 0)
    return 1;
  for (long i = 0; i < n; i++) {
    NANO_ZONE("work");
    x = work(x);
  }
  if (clock_gettime(CLOCK_MONOTONIC, &t1) != 0)
    return 1;
  printf("%llu\n", (unsigned long long)(x & 0xff));
  fprintf(stderr, "loop_us %lld\n",
          (long long)((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000));
  return 0;
}
