// Loop counter promotion keeps the counts exact: a promoted loop of 10^6
// fetch_adds (unrolled or not: each copy has more than 2^16 events) reports
// through __nano_atomic_n at its exit and in chunks of 2^16; an early exit (break) and a CAS retry loop report their events; a
// loop that calls a function that may exit() is not promoted, so the events
// before exit() are counted. The same counts with a runtime without
// __nano_atomic_n (one __nano_atomic call per event), with promotion off, and
// at -O0; without a runtime the program runs unchanged.
// RUN: %clang -O2 -shared -fPIC -I%runtime_include %S/Inputs/promote-hooks.c -o %t.hooks.so
// RUN: %clang -O2 -shared -fPIC -DPROMOTE_NO_N -I%runtime_include %S/Inputs/promote-hooks.c -o %t.hooks-no-n.so
// RUN: %clang_nano -O2 %s -o %t.o2
// RUN: env NANO_ATOMICS_PROMOTE=0 %clang_nano -O2 %s -o %t.off
// RUN: %clang_nano -O0 %s -o %t.o0
// RUN: %t.o2 2>&1 | FileCheck %s --check-prefix=PLAIN
// RUN: env LD_PRELOAD=%t.hooks.so %t.o2 2>&1 | FileCheck %s --check-prefixes=COUNTS,BULK
// RUN: env LD_PRELOAD=%t.hooks-no-n.so %t.o2 2>&1 | FileCheck %s --check-prefixes=COUNTS,EACH
// RUN: env LD_PRELOAD=%t.hooks.so %t.off 2>&1 | FileCheck %s --check-prefixes=COUNTS,EACH
// RUN: env LD_PRELOAD=%t.hooks.so %t.o0 2>&1 | FileCheck %s --check-prefixes=COUNTS,EACH
// PLAIN: counter=1001010 found=500
// PLAIN-NOT: hooks:
// COUNTS: counter=1001010 found=500
// COUNTS: hooks: fetch_add=1000010 load=1502 cas=1000
// BULK-SAME: calls_n={{[1-9][0-9]*}} max_n=65536
// EACH-SAME: calls_n=0 max_n=0
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static _Atomic long counter;
static _Atomic int table[1000];
static int found = -1;

__attribute__((noinline)) static void maybe_exit(long i, long stop) {
  if (i == stop) {
    printf("counter=%ld found=%d\n", atomic_load_explicit(&counter, memory_order_relaxed), found);
    fflush(stdout);
    exit(0);
  }
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000000;
  for (long i = 0; i < n; i++)
    atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);

  atomic_store_explicit(&table[500], 7, memory_order_relaxed);
  for (int i = 0; i < 1000; i++)
    if (atomic_load_explicit(&table[i], memory_order_relaxed) == 7) {
      found = i;
      break;
    }
  if (found != 500)
    return 1;

  for (int k = 0; k < 1000; k++) {
    long old = atomic_load_explicit(&counter, memory_order_relaxed);
    while (!atomic_compare_exchange_strong_explicit(&counter, &old, old + 1,
                                                    memory_order_relaxed, memory_order_relaxed))
      ;
  }

  for (long i = 0;; i++) {
    atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
    maybe_exit(i, 9);
  }
}
