/*
 * override_main.c: a program that replaces malloc with its own instrumented
 * allocator, as mimalloc's MI_OVERRIDE build does. Built with the plugin,
 * every malloc, calloc, realloc and free runs one atomic, so the tracker's
 * own work (registering the program's sites before main, a thread's first
 * event, dlopen of an instrumented library, the dump at exit) must never
 * wait on itself when libc calls back into this allocator.
 *
 * usage: override_main LIB THREADS ITERS [FORKS]
 *   THREADS threads each allocate, grow and free ITERS blocks while the
 *   main thread dlopens LIB (dl_lib.c), calls dl_work(ITERS) and forks
 *   FORKS children (default 1), one after the other, that allocate and
 *   leave with _exit (no dump). While the
 *   workers run, every allocator call also adds 1 to `noted`; the program
 *   prints "noted=N dl_work=M", and the tracker's count of the line marked
 *   in note() must be exactly N.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void __libc_free(void *p);

static int counting;
static unsigned long noted;
static unsigned long allocator_calls;

/* The allocator's atomic (one per call), and the count the test checks. */
static inline void note(void) {
  __atomic_fetch_add(&allocator_calls, 1, __ATOMIC_RELAXED);
  if (__atomic_load_n(&counting, __ATOMIC_ACQUIRE))
    __atomic_fetch_add(&noted, 1, __ATOMIC_RELAXED); /* NOTED_SITE */
}

void *malloc(size_t size) {
  note();
  return __libc_malloc(size);
}

void *calloc(size_t n, size_t size) {
  note();
  return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size) {
  note();
  return __libc_realloc(p, size);
}

void free(void *p) {
  note();
  __libc_free(p);
}

static long iters;

static void *worker(void *arg) {
  (void)arg;
  for (long i = 0; i < iters; i++) {
    char *p = malloc((size_t)(i % 512) + 1);
    char *q = calloc(4, 16);
    if (!p || !q)
      abort();
    p = realloc(p, (size_t)(i % 4096) + 64);
    if (!p)
      abort();
    p[0] = q[0];
    free(p);
    free(q);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 4 && argc != 5) {
    fprintf(stderr, "usage: %s LIB THREADS ITERS [FORKS]\n", argv[0]);
    return 2;
  }
  int nthreads = atoi(argv[2]);
  iters = atol(argv[3]);
  int forks = argc == 5 ? atoi(argv[4]) : 1;
  if (nthreads < 1 || nthreads > 64 || iters < 1 || forks < 1) {
    fprintf(stderr, "%s: THREADS must be 1 to 64, ITERS and FORKS positive\n", argv[0]);
    return 2;
  }
  pthread_t t[64];
  __atomic_store_n(&counting, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < nthreads; i++)
    if (pthread_create(&t[i], NULL, worker, NULL) != 0) {
      fprintf(stderr, "%s: pthread_create failed\n", argv[0]);
      return 1;
    }
  /* an instrumented library registers its sites while the workers allocate */
  void *lib = dlopen(argv[1], RTLD_NOW);
  long (*dl_work)(long) = lib ? (long (*)(long))dlsym(lib, "dl_work") : NULL;
  if (!dl_work) {
    fprintf(stderr, "%s: %s\n", argv[0], dlerror());
    return 1;
  }
  long done = dl_work(iters);
  for (int f = 0; f < forks; f++) {
    pid_t child = fork();
    if (child == 0) {
      __atomic_store_n(&counting, 0, __ATOMIC_RELEASE); /* the parent's count only */
      free(malloc(100));
      _exit(0);
    }
    int status;
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      fprintf(stderr, "%s: the forked child failed\n", argv[0]);
      return 1;
    }
  }
  for (int i = 0; i < nthreads; i++)
    if (pthread_join(t[i], NULL) != 0) {
      fprintf(stderr, "%s: pthread_join failed\n", argv[0]);
      return 1;
    }
  __atomic_store_n(&counting, 0, __ATOMIC_RELEASE);
  printf("noted=%lu dl_work=%ld\n", __atomic_load_n(&noted, __ATOMIC_RELAXED), done);
  return 0;
}
