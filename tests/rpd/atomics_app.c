/*
 * atomics_app.c: a program with known atomic operations, compiled through
 * prelude.h (no plugin), run with the tracer preloaded: the trace must hold
 * its sites and counts (nano_atomic_* tables).
 */
#include <stdio.h>

static int counter;
static long flag;

int main(void) {
  for (int i = 0; i < 1000; i++) __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
  for (int i = 0; i < 10; i++) __atomic_store_n(&flag, i, __ATOMIC_SEQ_CST);
  printf("%d %ld\n", __atomic_load_n(&counter, __ATOMIC_ACQUIRE), flag);
  return 0;
}
