/*
 * analysis_mktrace.c: writes the small traces of the analysis tests through
 * the tracer's own API (libnano_rpd.so): calls and ranges with explicit times
 * (rpd_record_api), kernels and copies linked to their calls (rpd_record_op),
 * real nested ranges (rpd_rangePush/Pop) and marks.
 *
 *   analysis_mktrace callstack OUT   nested ranges on three threads, kernels
 *   analysis_mktrace graph OUT       a captured graph launched three times
 *   analysis_mktrace autograd OUT    emit_nvtx-style ranges around kernels
 *   analysis_mktrace rank OUT        one rank: two calls with ops on GPUs 0, 1
 *   analysis_mktrace flat OUT N      N sequential calls on one thread
 *
 * The times and the expected results are in test_analysis.py. Exit 0, or 1
 * with a message.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rpd.h>

/* A user range with explicit times, as the tracer writes push/pop pairs. */
static void mk_range(const char *text, int64_t start, int64_t end) {
  rpd_record_api("UserMarker", "", "UserMarker", text, start, end);
}

/* A kernel launch on `stream` with one op per (start, end) pair. */
static uint64_t mk_launch(const char *stream, const char *kernel, int gridX, int64_t start,
                          int64_t end, int nops, const int64_t *ops) {
  char args[128];
  snprintf(args, sizeof args, "stream = %s | kernel = %s", stream, kernel);
  uint64_t h = rpd_record_api("hip", "", "hipLaunchKernel", args, start, end);
  struct rpd_kernel_launch k = {.stream = stream, .gridX = gridX, .gridY = 1, .gridZ = 1,
                                .workgroupX = 64, .workgroupY = 1, .workgroupZ = 1,
                                .kernelName = kernel};
  rpd_record_kernelapi(h, &k);
  for (int i = 0; i < nops; i++)
    rpd_record_op(h, 0, 0, ops[2 * i], ops[2 * i + 1], kernel, "KernelExecution");
  return h;
}

/* Thread B of the callstack trace: a range around a synchronize. */
static void *mk_thread_b(void *arg) {
  (void)arg;
  mk_range("worker", 1500, 5500);
  rpd_record_api("hip", "", "hipDeviceSynchronize", "", 2000, 5000);
  return NULL;
}

/* Thread C: real pushes and pops through the runtime's range API. */
static void *mk_thread_c(void *arg) {
  (void)arg;
  rpd_rangePush(NULL, "real-outer", NULL);
  rpd_rangePush(NULL, "real-inner", NULL);
  rpd_rangePop();
  rpd_rangePop();
  return NULL;
}

static void mk_callstack(void) {
  static const int64_t k1[] = {20000, 25000}, k2[] = {30000, 31000, 32000, 35000};
  mk_range("outer", 1000, 11000);
  mk_launch("0x1", "kA", 256, 2000, 3000, 1, k1);
  mk_range("inner", 4000, 9000);
  uint64_t cp = rpd_record_api("hip", "", "hipMemcpy", "dst = 0x1 | src = 0x2", 5000, 6000);
  rpd_record_op(cp, 0, 1, 26000, 28000, "", "CopyHostToDevice");
  mk_launch("0x1", "kB", 512, 7000, 8000, 2, k2);
  mk_range("tick", 10000, 10000);
  pthread_t b, c;
  pthread_create(&b, NULL, mk_thread_b, NULL);
  pthread_join(b, NULL);
  pthread_create(&c, NULL, mk_thread_c, NULL);
  pthread_join(c, NULL);
}

static void mk_graph(void) {
  rpd_record_api("hip", "", "hipStreamBeginCapture", "stream = 0x10 | mode = 0", 1000, 2000);
  for (int i = 0; i < 3; i++) {
    char name[8];
    snprintf(name, sizeof name, "g%d", i);
    mk_launch("0x10", name, 256 * (i + 1), 3000 + 2000 * i, 4000 + 2000 * i, 0, NULL);
  }
  rpd_record_api("hip", "", "hipStreamEndCapture", "stream = 0x10 | graph = 0xaaa", 9000, 10000);
  rpd_record_api("hip", "", "hipGraphInstantiate", "graphExec = 0xbbb | graph = 0xaaa", 11000,
                 12000);
  mk_launch("0x10", "after", 64, 13000, 14000, 0, NULL);
  for (int64_t l = 0; l < 3; l++) {
    int64_t base = 100000 * (l + 1);
    uint64_t h = rpd_record_api("hip", "", "hipGraphLaunch", "graphExec = 0xbbb | stream = 0x10",
                                base, base + 20000);
    for (int64_t j = 0; j < 3; j++)
      rpd_record_op(h, 0, 0, base + 50000 + 10000 * j, base + 50000 + 10000 * j + 5000 + 1000 * l,
                    j == 0 ? "g0" : j == 1 ? "g1" : "g2", "KernelExecution");
  }
}

static void mk_autograd(void) {
  int64_t t = 0;
  for (int i = 0; i < 4; i++, t += 1000) {
    char text[200];
    snprintf(text, sizeof text, "aten::mm, seq = %d, op_id = %d, sizes = %s, input_op_ids = "
             "[(%d, 0), (%d, 0)]", i, 40 + i, i < 3 ? "[[2688, 768], [768, 768]]" : "[[16, 16]]",
             38 + i, 39 + i);
    mk_range(text, t, t + 500);
    int64_t op[2] = {100000 + t, 100000 + t + 100 * (i + 1)};
    mk_launch("0x1", "Cijk_gemm", 128, t + 100, t + 200, 1, op);
  }
  mk_range("aten::relu, seq = 7, op_id = 50", 5000, 5500);
  int64_t r[2] = {106000, 106050};
  mk_launch("0x1", "relu_kernel", 64, 5100, 5200, 1, r);
  mk_range("aten::add, op_id = 51, sizes = [[4], [4]], input_op_ids = [(50, 0)]", 6000, 6500);
  int64_t a[2] = {107000, 107070};
  mk_launch("0x1", "add_kernel", 64, 6100, 6200, 1, a);
  /* A kernel two levels below an operator is not the operator's own. */
  mk_range("aten::linear, seq = 8, op_id = 52, sizes = [[8, 8]], input_op_ids = []", 7000, 7900);
  mk_range("helper", 7100, 7800);
  int64_t d[2] = {108000, 108300};
  mk_launch("0x1", "deep_kernel", 64, 7200, 7300, 1, d);
  mk_range("epoch-mark", 7950, 7950);
  mk_range("broken, seq = x", 8000, 8100);
  mk_range("aten::foo, sizes = [[1]]", 8200, 8300);
}

static void mk_rank(void) {
  uint64_t a = rpd_record_api("hip", "", "hipLaunchKernel", "stream = 0x1", 1000, 2000);
  rpd_record_op(a, 0, 0, 3000, 4000, "rank_kernel", "KernelExecution");
  uint64_t b = rpd_record_api("hip", "", "hipMemcpy", "", 5000, 6000);
  rpd_record_op(b, 1, 0, 7000, 9000, "", "CopyDeviceToHost");
  mk_range("step", 500, 9500);
}

static void mk_flat(long n) {
  for (long i = 0; i < n; i++)
    rpd_record_api("hip", "", i % 2 ? "hipMemsetAsync" : "hipGetDevice", "", 10 * i, 10 * i + 5);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: analysis_mktrace callstack|graph|autograd|rank|flat OUT [N]\n");
    return 1;
  }
  if (rpd_set_filename(argv[2], 0) != 0 || rpdstart() < 1) {
    fprintf(stderr, "analysis_mktrace: cannot start recording into %s (set RPDT_AUTOSTART=0)\n",
            argv[2]);
    return 1;
  }
  if (!strcmp(argv[1], "callstack"))
    mk_callstack();
  else if (!strcmp(argv[1], "graph"))
    mk_graph();
  else if (!strcmp(argv[1], "autograd"))
    mk_autograd();
  else if (!strcmp(argv[1], "rank"))
    mk_rank();
  else if (!strcmp(argv[1], "flat") && argc > 3)
    mk_flat(atol(argv[3]));
  else {
    fprintf(stderr, "analysis_mktrace: unknown trace '%s'\n", argv[1]);
    return 1;
  }
  if (rpdflush() != 0 || rpdstop() != 0) {
    fprintf(stderr, "analysis_mktrace: flushing %s failed\n", argv[2]);
    return 1;
  }
  return 0;
}
