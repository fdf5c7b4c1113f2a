/*
 * hsa_app.c: a program that runs kernels through HSA as the HIP runtime does
 * (issue 38's tests): it reads a code object (hipcc's, built without the
 * plugin) into memory, loads it into an executable, and dispatches its
 * kernels as AQL packets on queues it creates, with kernarg segments from the
 * kernarg pool. It knows nothing of nanoprobe.
 *
 *   hsa_app CODE_OBJECT [concurrent | repeat N | nowait | merged | signals | variables]
 *
 * axpy(float a, const float *x, float *y, int n): 1000 elements, 4 groups of
 * 256, waited for through the packet's completion signal; then dyn(int *out)
 * with 256 bytes of dynamic LDS, no completion signal, followed by a
 * barrier-AND packet whose completion signal is waited for (what HIP does).
 * concurrent: axpy from two threads on two queues at once instead; repeat
 * N: N axpy dispatches one after the other, printing the time per dispatch
 * (bench/hsa); nowait: one axpy dispatch, then hsa_shut_down at once, its
 * queues left as they are (a program that ends with a kernel running);
 * merged: merged4(float *out, const float *in, int n) over 1000 threads in
 * groups of 256 instead, waited for through its completion signal; signals:
 * dyn waited for through its own completion signal instead of a barrier
 * (a tool that decrements it after its own work is then done with it);
 * variables (kernels_variable.hip, whose axpy adds axpy_bias to each y and
 * n to axpy_count): sets axpy_bias = 0.5 and axpy_count = 5 in the
 * executable's variables by hsa_amd_memory_async_copy (as hipMemcpyToSymbol
 * does), runs axpy twice on one queue, and reads axpy_count back: it must be
 * 5 + 2n, and every y 2(a x + 0.5) + 1.
 * The hidden arguments (after the explicit ones) are a pattern of their
 * offsets, so that a test can tell every kernarg byte's origin; each
 * segment is printed ("kernarg KERNEL HEX").
 * Prints "ok ..." per kernel whose results are right; exit 1 on any error.
 */
#define _GNU_SOURCE /* flockfile */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#define N 1000
#define WG 256
#define DYN_THREADS 64
#define AXPY_EXPLICIT 28 /* float, two pointers, int */
#define DYN_EXPLICIT 8   /* one pointer */
#define MERGED_EXPLICIT 20 /* two pointers, int */

static hsa_agent_t gpu;
static hsa_amd_memory_pool_t kernarg_pool;
static int found_pool;

#define CHECK(call)                                                                                \
  do {                                                                                             \
    hsa_status_t rc_ = (call);                                                                     \
    if (rc_ != HSA_STATUS_SUCCESS) {                                                               \
      fprintf(stderr, "hsa_app: %s failed: %d\n", #call, (int)rc_);                                \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static hsa_status_t find_gpu(hsa_agent_t a, void *data) {
  (void)data;
  hsa_device_type_t t;
  CHECK(hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t));
  if (t == HSA_DEVICE_TYPE_GPU)
    gpu = a;
  return HSA_STATUS_SUCCESS;
}
static hsa_status_t find_pool(hsa_amd_memory_pool_t p, void *data) {
  (void)data;
  uint32_t flags;
  CHECK(hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags));
  if (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT)
    kernarg_pool = p, found_pool = 1;
  return HSA_STATUS_SUCCESS;
}
static hsa_status_t find_cpu_pools(hsa_agent_t a, void *data) {
  hsa_device_type_t t;
  CHECK(hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t));
  if (t == HSA_DEVICE_TYPE_CPU)
    CHECK(hsa_amd_agent_iterate_memory_pools(a, find_pool, data));
  return HSA_STATUS_SUCCESS;
}

struct kernel {
  uint64_t object;
  uint32_t kernarg, group, priv;
};

static struct kernel kernel_get(hsa_executable_t e, const char *name) {
  hsa_executable_symbol_t s;
  struct kernel k;
  CHECK(hsa_executable_get_symbol_by_name(e, name, &gpu, &s));
  CHECK(hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &k.object));
  CHECK(hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
                                       &k.kernarg));
  CHECK(hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE,
                                       &k.group));
  CHECK(hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE,
                                       &k.priv));
  return k;
}

/* A kernarg segment: the explicit bytes, then the offset pattern. */
static void *kernargs(const char *name, const struct kernel *k, const void *explicit_args,
                      size_t n) {
  unsigned char *p;
  CHECK(hsa_amd_memory_pool_allocate(kernarg_pool, k->kernarg, 0, (void **)&p));
  CHECK(hsa_amd_agents_allow_access(1, &gpu, NULL, p));
  for (uint32_t i = 0; i < k->kernarg; i++)
    p[i] = (unsigned char)(0x80 + i);
  memcpy(p, explicit_args, n);
  flockfile(stdout);
  printf("kernarg %s ", name);
  for (uint32_t i = 0; i < k->kernarg; i++)
    printf("%02x", p[i]);
  printf("\n");
  funlockfile(stdout);
  return p;
}

static uint16_t header(hsa_packet_type_t type) {
  return (uint16_t)(type << HSA_PACKET_HEADER_TYPE | 1 << HSA_PACKET_HEADER_BARRIER |
                    HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE |
                    HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
}

/* Writes packet p (64 bytes, header last) at the queue's next index and rings. */
static void submit(hsa_queue_t *q, void *p) {
  uint64_t i = hsa_queue_add_write_index_relaxed(q, 1);
  while (i - hsa_queue_load_read_index_scacquire(q) >= q->size)
    ;
  unsigned char *slot = (unsigned char *)q->base_address + (i % q->size) * 64;
  memcpy(slot + 2, (unsigned char *)p + 2, 62);
  __atomic_store_n((uint16_t *)slot, *(uint16_t *)p, __ATOMIC_RELEASE);
  hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)i);
}

static void dispatch(hsa_queue_t *q, const struct kernel *k, void *args, uint32_t threads,
                     uint32_t wg, uint32_t dyn_lds, hsa_signal_t done) {
  hsa_kernel_dispatch_packet_t p = {0};
  p.setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
  p.workgroup_size_x = (uint16_t)wg, p.workgroup_size_y = 1, p.workgroup_size_z = 1;
  p.grid_size_x = threads, p.grid_size_y = 1, p.grid_size_z = 1;
  p.private_segment_size = k->priv;
  p.group_segment_size = k->group + dyn_lds;
  p.kernel_object = k->object;
  p.kernarg_address = args;
  p.completion_signal = done;
  p.header = header(HSA_PACKET_TYPE_KERNEL_DISPATCH);
  submit(q, &p);
}

/* axpy's kernarg segment for y = a x + y over n elements. */
static void *axpy_args(const struct kernel *k, float a, const float *x, float *y, int n) {
  unsigned char ex[AXPY_EXPLICIT] = {0};
  memcpy(ex, &a, 4);
  memcpy(ex + 8, &x, 8);
  memcpy(ex + 16, &y, 8);
  memcpy(ex + 24, &n, 4);
  return kernargs("axpy", k, ex, sizeof ex);
}

static void wait_zero(hsa_signal_t s) {
  while (hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX,
                                   HSA_WAIT_STATE_BLOCKED) != 0)
    ;
}

/* Copies size bytes between host buffer `host` and module variable `name`
 * of e (to_device: into it), through kernarg-pool memory the GPU reaches. */
static void variable_copy(hsa_executable_t e, const char *name, void *host, uint32_t size,
                          int to_device) {
  hsa_executable_symbol_t s;
  uint64_t address;
  uint32_t bytes;
  CHECK(hsa_executable_get_symbol_by_name(e, name, &gpu, &s));
  CHECK(hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS, &address));
  CHECK(hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE, &bytes));
  if (bytes != size) {
    fprintf(stderr, "hsa_app: variable %s has %u bytes, not %u\n", name, bytes, size);
    exit(1);
  }
  void *staging, *variable = (void *)(uintptr_t)address;
  hsa_signal_t done;
  CHECK(hsa_amd_memory_pool_allocate(kernarg_pool, size, 0, &staging));
  CHECK(hsa_amd_agents_allow_access(1, &gpu, NULL, staging));
  CHECK(hsa_signal_create(1, 0, NULL, &done));
  if (to_device)
    memcpy(staging, host, size);
  CHECK(hsa_amd_memory_async_copy(to_device ? variable : staging, gpu, to_device ? staging : variable,
                                  gpu, size, 0, NULL, done));
  wait_zero(done);
  if (!to_device)
    memcpy(host, staging, size);
  CHECK(hsa_signal_destroy(done));
  CHECK(hsa_amd_memory_pool_free(staging));
}

#define VARIABLES_BIAS 0.5f
#define VARIABLES_COUNT 5
#define VARIABLES_RUNS 2

/* The variables mode (see the file comment); true when all is right. */
static int variables_run(hsa_executable_t e, hsa_queue_t *q, const struct kernel *k) {
  float bias = VARIABLES_BIAS, *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), a = 2.0f;
  int count = VARIABLES_COUNT, n = N;
  variable_copy(e, "axpy_bias", &bias, sizeof bias, 1);
  variable_copy(e, "axpy_count", &count, sizeof count, 1);
  for (int i = 0; i < N; i++)
    x[i] = (float)i, y[i] = 1.0f;
  void *args = axpy_args(k, a, x, y, n);
  hsa_signal_t done;
  CHECK(hsa_signal_create(VARIABLES_RUNS, 0, NULL, &done));
  for (int r = 0; r < VARIABLES_RUNS; r++)
    dispatch(q, k, args, (N + WG - 1) / WG * WG, WG, 0, done);
  wait_zero(done);
  count = -1;
  variable_copy(e, "axpy_count", &count, sizeof count, 0);
  int ok = count == VARIABLES_COUNT + VARIABLES_RUNS * N;
  for (int i = 0; i < N; i++)
    ok &= y[i] == 2.0f * (2.0f * (float)i + VARIABLES_BIAS) + 1.0f;
  printf("variables axpy_count %d y[1] %g\n", count, (double)y[1]);
  CHECK(hsa_signal_destroy(done));
  CHECK(hsa_amd_memory_pool_free(args));
  free(x);
  free(y);
  return ok;
}

struct axpy_run {
  hsa_queue_t *q;
  struct kernel k;
  int ok;
  int timed; /* the runtime gave its completion signal's times, in t */
  hsa_amd_profiling_dispatch_time_t t;
};

static void *axpy(void *arg) {
  struct axpy_run *r = arg;
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), a = 2.0f;
  int n = N;
  for (int i = 0; i < N; i++)
    x[i] = (float)i, y[i] = 1.0f;
  void *args = axpy_args(&r->k, a, x, y, n);
  hsa_signal_t done;
  CHECK(hsa_signal_create(1, 0, NULL, &done));
  dispatch(r->q, &r->k, args, (N + WG - 1) / WG * WG, WG, 0, done);
  wait_zero(done);
  r->timed = hsa_amd_profiling_get_dispatch_time(gpu, done, &r->t) == HSA_STATUS_SUCCESS;
  r->ok = 1;
  for (int i = 0; i < N; i++)
    r->ok &= y[i] == 2.0f * (float)i + 1.0f;
  CHECK(hsa_signal_destroy(done));
  CHECK(hsa_amd_memory_pool_free(args));
  free(x);
  free(y);
  return NULL;
}

/* merged4 over N threads on q: out[i] = in[4i] + ... + in[4i+3]. True when
 * every out[i] is right. */
static int merged4(hsa_queue_t *q, const struct kernel *k) {
  float *in = malloc(4 * N * sizeof *in), *out = calloc(N, sizeof *out);
  int n = N;
  for (int i = 0; i < 4 * N; i++)
    in[i] = (float)(i % 7);
  unsigned char ex[MERGED_EXPLICIT] = {0};
  memcpy(ex, &out, 8);
  memcpy(ex + 8, &in, 8);
  memcpy(ex + 16, &n, 4);
  void *args = kernargs("merged4", k, ex, sizeof ex);
  hsa_signal_t done;
  CHECK(hsa_signal_create(1, 0, NULL, &done));
  dispatch(q, k, args, (N + WG - 1) / WG * WG, WG, 0, done);
  wait_zero(done);
  int ok = 1;
  for (int i = 0; i < N; i++)
    ok &= out[i] == in[4 * i] + in[4 * i + 1] + in[4 * i + 2] + in[4 * i + 3];
  CHECK(hsa_signal_destroy(done));
  CHECK(hsa_amd_memory_pool_free(args));
  free(in);
  free(out);
  return ok;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: hsa_app CODE_OBJECT [concurrent | repeat N | nowait | merged | signals | "
                    "variables]\n");
    return 2;
  }
  int concurrent = argc > 2 && !strcmp(argv[2], "concurrent");
  int nowait = argc > 2 && !strcmp(argv[2], "nowait");
  int merged = argc > 2 && !strcmp(argv[2], "merged");
  int signals = argc > 2 && !strcmp(argv[2], "signals");
  int variables = argc > 2 && !strcmp(argv[2], "variables");
  long repeat = argc > 3 && !strcmp(argv[2], "repeat") ? atol(argv[3]) : 0;
  CHECK(hsa_init());
  CHECK(hsa_iterate_agents(find_gpu, NULL));
  CHECK(hsa_iterate_agents(find_cpu_pools, NULL));
  if (!gpu.handle || !found_pool) {
    fprintf(stderr, "hsa_app: no GPU or no kernarg pool\n");
    return 1;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    perror(argv[1]);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *image = malloc((size_t)size);
  if (!image || fread(image, 1, (size_t)size, f) != (size_t)size) {
    fprintf(stderr, "hsa_app: cannot read %s\n", argv[1]);
    return 1;
  }
  fclose(f);
  hsa_code_object_reader_t reader;
  hsa_executable_t exe;
  CHECK(hsa_code_object_reader_create_from_memory(image, (size_t)size, &reader));
  CHECK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL,
                                  &exe));
  CHECK(hsa_executable_load_agent_code_object(exe, gpu, reader, NULL, NULL));
  CHECK(hsa_executable_freeze(exe, NULL));
  CHECK(hsa_code_object_reader_destroy(reader));
  memset(image, 0, (size_t)size); /* the loader has what it needs */
  free(image);
  struct kernel ka = kernel_get(exe, "_Z4axpyfPKfPfi.kd");
  struct kernel kd = kernel_get(exe, "_Z3dynPi.kd");
  hsa_queue_t *q1, *q2;
  CHECK(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX, UINT32_MAX, &q1));
  CHECK(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX, UINT32_MAX, &q2));
  /* the program times its own dispatches, as HIP does */
  CHECK(hsa_amd_profiling_set_profiler_enabled(q1, 1));
  CHECK(hsa_amd_profiling_set_profiler_enabled(q2, 1));
  if (nowait) {
    static float x[N], y[N];
    hsa_signal_t done;
    CHECK(hsa_signal_create(1, 0, NULL, &done));
    dispatch(q1, &ka, axpy_args(&ka, 2.0f, x, y, N), (N + WG - 1) / WG * WG, WG, 0, done);
    printf("submitted axpy\n");
    CHECK(hsa_shut_down());
    return 0;
  }
  if (variables) {
    printf("%s variables\n", variables_run(exe, q1, &ka) ? "ok" : "WRONG");
  } else if (merged) {
    struct kernel km = kernel_get(exe, "_Z7merged4PfPKfi.kd");
    printf("%s merged4\n", merged4(q1, &km) ? "ok" : "WRONG");
  } else if (repeat > 0) { /* bench/hsa: one dispatch waited for, repeat times */
    struct axpy_run r = {q1, ka, 0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < repeat; i++)
      axpy(&r);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%s ns per dispatch %.0f\n", r.ok ? "ok" : "WRONG",
           ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (double)repeat);
  } else if (concurrent) {
    struct axpy_run r[2] = {{q1, ka, 0}, {q2, ka, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
      if (pthread_create(&t[i], NULL, axpy, &r[i]) != 0)
        return 1;
    for (int i = 0; i < 2; i++)
      pthread_join(t[i], NULL);
    printf("%s concurrent axpy\n", r[0].ok && r[1].ok ? "ok" : "WRONG");
  } else {
    struct axpy_run r = {q1, ka, 0};
    axpy(&r);
    printf("%s axpy\n", r.ok ? "ok" : "WRONG");
    if (r.timed)
      printf("times axpy %llu %llu\n", (unsigned long long)r.t.start, (unsigned long long)r.t.end);
    else
      printf("times axpy none\n");
    int *out = calloc(DYN_THREADS, sizeof *out);
    void *args = kernargs("dyn", &kd, &out, DYN_EXPLICIT);
    hsa_barrier_and_packet_t b = {0};
    CHECK(hsa_signal_create(1, 0, NULL, &b.completion_signal));
    dispatch(q2, &kd, args, DYN_THREADS, DYN_THREADS, DYN_THREADS * sizeof(int),
             signals ? b.completion_signal : (hsa_signal_t){0});
    if (!signals) {
      b.header = header(HSA_PACKET_TYPE_BARRIER_AND);
      submit(q2, &b);
    }
    wait_zero(b.completion_signal);
    int ok = 1;
    for (int t = 0; t < DYN_THREADS; t++)
      ok &= out[t] == DYN_THREADS - 1 - t;
    printf("%s dyn\n", ok ? "ok" : "WRONG");
    CHECK(hsa_signal_destroy(b.completion_signal));
    CHECK(hsa_amd_memory_pool_free(args));
    free(out);
  }
  CHECK(hsa_queue_destroy(q1));
  CHECK(hsa_queue_destroy(q2));
  CHECK(hsa_executable_destroy(exe));
  CHECK(hsa_shut_down());
  return 0;
}
