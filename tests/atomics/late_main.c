/* late_main.c: built with NANO_ATOMICS_PROMOTE=0, so its sites count inline
 * (llvm-pass/README.md, "Inline counting"). main's first event makes the
 * tracker create its thread key; then main creates a key of its own, whose
 * destructor runs after the tracker's at a thread's exit (glibc runs them in
 * key order) and counts N events at the late site. A worker thread counts N
 * at the early site and exits: its late events come after the tracker folded the
 * thread's counts, and must be counted still (the thread's counter cleared,
 * so they reach the runtime), not written into an array the tracker no
 * longer reads. Usage: late_main N */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long cell;
static long n;
static pthread_key_t key;

__attribute__((noinline)) static void late(void *arg) {
  (void)arg;
  for (long i = 0; i < n; i++)
    __atomic_fetch_add(&cell, 1, __ATOMIC_RELAXED); /* LATE_SITE */
}

static void *worker(void *arg) {
  (void)arg;
  if (pthread_setspecific(key, &cell) != 0)
    return NULL;
  for (long i = 0; i < n; i++)
    __atomic_fetch_add(&cell, 1, __ATOMIC_RELAXED); /* EARLY_SITE */
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s N\n", argv[0]);
    return 2;
  }
  n = atol(argv[1]);
  __atomic_fetch_add(&cell, 1, __ATOMIC_RELAXED); /* MAIN_SITE */
  pthread_t t;
  if (pthread_key_create(&key, late) != 0 || pthread_create(&t, NULL, worker, NULL) != 0 ||
      pthread_join(t, NULL) != 0) {
    fprintf(stderr, "late_main: cannot start the worker\n");
    return 1;
  }
  printf("cell=%ld\n", cell);
  return 0;
}
