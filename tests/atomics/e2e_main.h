/*
 * e2e_main.h: the main of the C end-to-end programs (prog_builtins.c,
 * prog_c11.c). It performs no atomic operation itself, so it adds nothing to
 * the counts the tests expect.
 */
#ifndef NANO_E2E_MAIN_H
#define NANO_E2E_MAIN_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* Parses "THREADS ITERS MIX" into *iters and *mix, runs worker on THREADS
 * threads (1 to 64) and joins them. Returns 0, or the exit code to return:
 * 2 for bad usage, 1 when a thread cannot start. */
static int e2e_run(int argc, char **argv, long *iters, long *mix, void *(*worker)(void *)) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s THREADS ITERS MIX\n", argv[0]);
    return 2;
  }
  int threads = atoi(argv[1]);
  *iters = atol(argv[2]);
  *mix = atol(argv[3]);
  pthread_t t[64];
  if (threads < 1 || threads > 64)
    return 2;
  for (int i = 0; i < threads; i++)
    if (pthread_create(&t[i], NULL, worker, NULL) != 0)
      return 1;
  for (int i = 0; i < threads; i++)
    pthread_join(t[i], NULL);
  return 0;
}

#endif
