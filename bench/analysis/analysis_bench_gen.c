/*
 * analysis_bench_gen.c: writes the benchmark trace through the tracer:
 * `analysis_bench_gen OUT CALLS THREADS`. Every thread repeats
 *
 *   range "step" { range "layer" { hipLaunchKernel (+1 GPU op), hipMemcpyAsync },
 *                  hipStreamSynchronize }
 *
 * (5 rows of rocpd_api, nested 3 deep) with real push/pop ranges and calls
 * timed by rpd_now(), until CALLS rows are written in all. Run with
 * RPDT_AUTOSTART=0. Exit 0, or 1 with a message.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <rpd.h>

static long bg_iters; /* iterations per thread */

/* One API call around nothing, timed now. */
static uint64_t bg_call(const char *name, const char *args) {
  int64_t t0 = rpd_now();
  return rpd_record_api("hip", "", name, args, t0, rpd_now());
}

static void *bg_thread(void *arg) {
  int gpu = (int)(long)arg % 2;
  for (long i = 0; i < bg_iters; i++) {
    rpd_rangePush(NULL, "step", NULL);
    rpd_rangePush(NULL, "layer", NULL);
    uint64_t k = bg_call("hipLaunchKernel", "stream = 0x1");
    int64_t t = rpd_now();
    rpd_record_op(k, gpu, 0, t, t + 1000, "bench_kernel", "KernelExecution");
    bg_call("hipMemcpyAsync", "stream = 0x1");
    rpd_rangePop();
    bg_call("hipStreamSynchronize", "stream = 0x1");
    rpd_rangePop();
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: analysis_bench_gen OUT CALLS THREADS\n");
    return 1;
  }
  long calls = atol(argv[2]), threads = atol(argv[3]);
  if (calls < 5 || threads < 1 || threads > 256) {
    fprintf(stderr, "analysis_bench_gen: bad CALLS or THREADS\n");
    return 1;
  }
  bg_iters = calls / 5 / threads;
  if (rpd_set_filename(argv[1], 0) != 0 || rpdstart() < 1) {
    fprintf(stderr, "analysis_bench_gen: cannot record into %s (set RPDT_AUTOSTART=0)\n", argv[1]);
    return 1;
  }
  pthread_t th[256];
  for (long i = 0; i < threads; i++)
    if (pthread_create(&th[i], NULL, bg_thread, (void *)i) != 0) {
      fprintf(stderr, "analysis_bench_gen: pthread_create failed\n");
      return 1;
    }
  for (long i = 0; i < threads; i++)
    pthread_join(th[i], NULL);
  if (rpdflush() != 0 || rpdstop() != 0) {
    fprintf(stderr, "analysis_bench_gen: flushing %s failed\n", argv[1]);
    return 1;
  }
  return 0;
}
