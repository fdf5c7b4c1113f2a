/*
 * fetch_add_bench.c: time per atomic of a relaxed fetch_add loop.
 * Usage: fetch_add_bench THREADS ITERS. Each thread increments its own
 * counter (its own cache line, so the figure is the cost of the operation and
 * of its hook, not of contention) ITERS times; prints the nanoseconds per
 * operation of the slowest thread, in thread CPU time (so that time the
 * thread spends descheduled on a loaded machine is not counted).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct slot {
  _Alignas(64) long counter;
  double ns;
};

static struct slot slots[64];
static long iters;
static pthread_barrier_t start;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *worker(void *arg) {
  struct slot *s = arg;
  pthread_barrier_wait(&start);
  double t0 = now();
  for (long i = 0; i < iters; i++)
    __atomic_fetch_add(&s->counter, 1, __ATOMIC_RELAXED);
  s->ns = (now() - t0) / (double)iters;
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s THREADS ITERS\n", argv[0]);
    return 2;
  }
  int threads = atoi(argv[1]);
  iters = atol(argv[2]);
  if (threads < 1 || threads > 64 || iters < 1) {
    fprintf(stderr, "fetch_add_bench: THREADS must be 1..64 and ITERS positive\n");
    return 2;
  }
  pthread_t t[64];
  if (pthread_barrier_init(&start, NULL, (unsigned)threads) != 0)
    return 1;
  for (int i = 0; i < threads; i++)
    if (pthread_create(&t[i], NULL, worker, &slots[i]) != 0) {
      fprintf(stderr, "fetch_add_bench: pthread_create failed\n");
      return 1;
    }
  double worst = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(t[i], NULL);
    if (slots[i].counter != iters) {
      fprintf(stderr, "fetch_add_bench: counter %d is %ld, not %ld\n", i, slots[i].counter, iters);
      return 1;
    }
    if (slots[i].ns > worst)
      worst = slots[i].ns;
  }
  printf("%.3f\n", worst);
  return 0;
}
