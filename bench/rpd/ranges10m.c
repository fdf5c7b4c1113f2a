/*
 * ranges10m.c: a program doing N (default 10^7) user ranges around a little
 * work each. Built twice: with the tracer (NANO_ZONE records) and with
 * -DNANO_DISABLE (the zones compile to nothing): run.sh compares wall times.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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
  for (long i = 0; i < n; i++) {
    NANO_ZONE("work");
    x = work(x);
  }
  printf("%llu\n", (unsigned long long)(x & 0xff));
  return 0;
}
