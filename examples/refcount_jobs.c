/*
 * refcount_jobs.c: the demonstration program of scripts/demo.sh.
 *
 * A small job system with the atomics such code has: worker threads take
 * job numbers from a shared counter (fetch_add), each job borrows a
 * reference-counted document (a compare-exchange "retain if alive", a
 * fetch_sub release), reads a seqlock-protected configuration (loads and an
 * acquire fence; main writes it once, with stores and a release fence), and adds its results to
 * shared statistics (relaxed fetch_add); at the end each worker publishes its share (store). main
 * sets up the documents with relaxed stores (not atomic_init: gcc's is an
 * atomic store, clang's a plain one, and the demo compares the two builds).
 *
 * Build it with the plugin and run it untracked, then under the tracker:
 *   clang-15 -O2 -g -fpass-plugin=build/llvm-pass/libNanoPass.so \
 *       examples/refcount_jobs.c -o refcount_jobs -pthread
 *   ./refcount_jobs
 *   LD_PRELOAD=build/runtime/tracker/libnano_tracker.so ./refcount_jobs
 * -DDEMO_EXTRA_ATOMIC adds one atomic per job (a "debug counter"): the
 * regression that `nanoprobe gate` catches.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define JOBS 200000
#define DOCS 1024

struct document {
  atomic_int refs; /* 1 while alive, +1 per borrower */
  long words;
};

struct config {
  atomic_uint seq; /* seqlock: odd while written */
  atomic_long scale;
};

static struct document docs[DOCS];
static struct config config;
static atomic_long next_job;
static atomic_long total_words;
static atomic_long jobs_done;
static atomic_long published[THREADS];
#ifdef DEMO_EXTRA_ATOMIC
static atomic_long debug_counter;
#endif

/* Takes a reference to d unless it is already dead. */
static int doc_retain(struct document *d) {
  int refs = atomic_load_explicit(&d->refs, memory_order_relaxed);
  while (refs != 0)
    if (atomic_compare_exchange_weak_explicit(&d->refs, &refs, refs + 1, memory_order_acquire,
                                              memory_order_relaxed))
      return 1;
  return 0;
}

static void doc_release(struct document *d) {
  if (atomic_fetch_sub_explicit(&d->refs, 1, memory_order_acq_rel) == 1)
    fprintf(stderr, "document freed while in use\n");
}

/* Sets the configuration (seqlock writer; one writer at a time). */
static void config_set(long scale) {
  unsigned s = atomic_load_explicit(&config.seq, memory_order_relaxed);
  atomic_store_explicit(&config.seq, s + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&config.scale, scale, memory_order_relaxed);
  atomic_store_explicit(&config.seq, s + 2, memory_order_release);
}

/* Reads the configuration consistently (seqlock reader). */
static long config_scale(void) {
  for (;;) {
    unsigned s = atomic_load_explicit(&config.seq, memory_order_acquire);
    long scale = atomic_load_explicit(&config.scale, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if ((s & 1) == 0 && atomic_load_explicit(&config.seq, memory_order_relaxed) == s)
      return scale;
  }
}

static void *worker(void *arg) {
  long self = (long)arg, mine = 0;
  for (;;) {
    long job = atomic_fetch_add_explicit(&next_job, 1, memory_order_relaxed);
    if (job >= JOBS)
      break;
    struct document *d = &docs[(job * 7919) % DOCS];
    if (!doc_retain(d))
      continue;
    long words = d->words * config_scale();
    atomic_fetch_add_explicit(&total_words, words, memory_order_relaxed);
    atomic_fetch_add_explicit(&jobs_done, 1, memory_order_relaxed);
#ifdef DEMO_EXTRA_ATOMIC
    atomic_fetch_add_explicit(&debug_counter, 1, memory_order_relaxed);
#endif
    mine += words;
    doc_release(d);
  }
  atomic_store_explicit(&published[self], mine, memory_order_release);
  return NULL;
}

int main(void) {
  for (int i = 0; i < DOCS; i++) {
    atomic_store_explicit(&docs[i].refs, 1, memory_order_relaxed);
    docs[i].words = 100 + i % 37;
  }
  config_set(3);
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++)
    if (pthread_create(&t[i], NULL, worker, (void *)i) != 0) {
      fprintf(stderr, "refcount_jobs: pthread_create failed\n");
      return 1;
    }
  long sum = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    sum += atomic_load_explicit(&published[i], memory_order_acquire);
  }
  printf("refcount_jobs: %ld jobs, %ld words (workers published %ld)\n", atomic_load(&jobs_done),
         atomic_load(&total_words), sum);
  return sum == atomic_load(&total_words) ? 0 : 1;
}
