/*
 * trace_maker.c: writes a trace through the tracer's API (libnano_rpd.so) for
 * the rpd tool tests: a main thread with an outer range, two threads with 5
 * nested range pairs and a mark each, two API calls each linked to a GPU op
 * (GPU 0 kernel, GPU 1 copy), two monitor samples. The threads are named
 * "maker-exit" (exits before the stop) and "maker-linger" (alive until after
 * the stop), so both ways the tracer takes thread names are used.
 *
 * usage: trace_maker FILE
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <rpd.h>

static sem_t recorded, release;

static void *worker(void *arg) {
  int linger = (int)(intptr_t)arg;
  pthread_setname_np(pthread_self(), linger ? "maker-linger" : "maker-exit");
  for (int i = 0; i < 5; i++) {
    char name[16];
    snprintf(name, sizeof name, "work %d", i);
    rpd_rangePush(NULL, name, NULL);
    rpd_rangePush(NULL, "inner", NULL);
    struct timespec nap = {0, 100000};
    nanosleep(&nap, NULL);
    rpd_rangePop();
    rpd_rangePop();
  }
  rpd_mark(NULL, "done", NULL);
  if (linger) {
    sem_post(&recorded);
    while (sem_wait(&release) != 0) continue;
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: trace_maker FILE\n");
    return 2;
  }
  if (rpd_set_filename(argv[1], 0) != 0 || rpdstart() != 1) {
    fprintf(stderr, "trace_maker: cannot start the tracer on %s\n", argv[1]);
    return 1;
  }
  rpd_rangePush(NULL, "main-outer", NULL);
  pthread_t th[2];
  if (sem_init(&recorded, 0, 0) != 0 || sem_init(&release, 0, 0) != 0) return 1;
  for (int i = 0; i < 2; i++)
    if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) != 0) return 1;
  pthread_join(th[0], NULL);
  while (sem_wait(&recorded) != 0) continue;
  int64_t t = rpd_now();
  uint64_t k = rpd_record_api("hip", "", "hipLaunchKernel", "grid=64", t, t + 2000);
  rpd_record_op(k, 0, 1, t + 3000, t + 9000, "kernelA", "KernelExecution");
  uint64_t c = rpd_record_api("hip", "", "hipMemcpyAsync", "", t + 2500, t + 2800);
  rpd_record_op(c, 1, 0, t + 10000, t + 12000, "", "CopyHostToDevice");
  rpd_record_monitor("gpu", 0, "sclk", t, t + 5000, "1200");
  rpd_record_monitor("gpu", 0, "sclk", t + 5000, t + 12000, "1800");
  /* The API calls above end up to 2.8 us after t: stay inside the outer
   * range until then, so that it encloses them. */
  struct timespec nap = {0, 200000};
  nanosleep(&nap, NULL);
  /* a user range with its own args, and an NVTX-style domain range and mark */
  rpd_rangePush(NULL, "step", "iter=1");
  rpd_rangePop();
  rpd_rangePush("mydomain", "domain-range", NULL);
  rpd_mark("mydomain", "domain-mark", NULL);
  rpd_rangePop();
  rpd_rangePop();
  if (rpdstop() != 0) return 1;
  sem_post(&release);
  pthread_join(th[1], NULL);
  return 0;
}
