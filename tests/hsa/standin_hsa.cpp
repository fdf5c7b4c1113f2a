/*
 * standin_hsa.cpp: a stand-in ROCr (libhsa-runtime64.so.1) for the HSA tool's
 * tests on a machine with no AMD GPU (issue 38). C++ only because ROCr's
 * table header, hsa_api_trace.h, is.
 *
 * What it keeps of ROCr, from the real headers (Debian's libhsa-runtime-dev):
 *   - the API table: every exported hsa_* function calls through the
 *     HsaApiTable that hsa_init hands to each tool named in HSA_TOOLS_LIB
 *     (space-separated) through its OnLoad(table, major, failed count,
 *     failed names), so a tool's hooks see the program's calls; OnUnload at
 *     hsa_shut_down;
 *   - one CPU agent (with the kernarg pool: fine-grained, KERNARG_INIT) and
 *     one GPU agent of FAKE_HSA_ARCH (gfx90a by default; gfx1030), with the
 *     core and AMD attributes a HIP runtime asks for (an MI210's or an
 *     RX 6800's chip id, CUs, caches, HDP flush registers, cooperative
 *     queues) and each agent's access to each pool; host memory locked to
 *     the kernarg pool for the GPU (hsa_amd_memory_lock(_to_pool));
 *   - ROCr's symbol version (ROCR_1, given by the test's build), so that
 *     Debian's real libamdhip64 runs over it; what that runtime imports and
 *     the stand-in does not serve fails (standin_unsupported.c);
 *   - signals with their waits, arithmetic and async handlers (one thread,
 *     as ROCr's);
 *   - AQL queues: the program writes 64-byte packets into the ring and rings
 *     the doorbell; a "packet processor" thread per queue consumes them in
 *     order (kernel dispatch, barrier-AND), sets their headers back to
 *     INVALID, and decrements their completion signals;
 *   - intercept queues (hsa_amd_queue_intercept_create/_register): packets
 *     rung on one go through the registered handlers, on the ringing thread,
 *     each handler's writer passing them to the next, the last one's to the
 *     hardware queue;
 *   - code objects: readers from memory or a file, executables, symbols
 *     ("name.kd") read from the ELF (EM_AMDGPU, HSA OS ABI, the agent's
 *     gfx in e_flags, else INCOMPATIBLE_ARGUMENTS); a kernel object is the
 *     address of the loaded 64-byte kernel descriptor; module variables
 *     (the other global objects) in device memory of their executable's
 *     own, initialised from the image, found by name with the GPU agent;
 *   - hsa_amd_memory_async_copy and _rect (pitched rows and slices): one
 *     in-order copy engine (dependent signals waited for, the completion
 *     signal decremented, with copy profiling on its start and end in the
 *     system domain); both agents must reach both buffers;
 *     FAKE_HSA_COPY_REFUSE set: those asked from an async handler are
 *     refused (out of resources);
 *   - FAKE_HSA_HANDLER_REFUSE=N: the Nth async handler registration is
 *     refused (out of resources);
 *   - signals as ROCr's: a handle is the address of an amd_signal_t
 *     (amd_hsa_signal.h), where the "hardware" writes the raw times, in the
 *     agent's ticks (100 MHz, their own epoch), of each packet (a
 *     dispatch's, a barrier's) of a queue with profiling on, and of each
 *     copy while copy profiling is on, in start_ts and end_ts;
 *     hsa_amd_profiling_get_dispatch_time and _async_copy_time give them in
 *     the HSA system clock domain, as ROCr documents and does (its
 *     TranslateTime); the system domain is CLOCK_MONOTONIC_RAW in ns
 *     (HSA_SYSTEM_INFO_TIMESTAMP(_FREQUENCY)).
 *     (Until 2026-11-28 dispatch times were given in agent ticks, and the
 *     tool converted them as such: Debian's HIP runtime over the stand-in
 *     read its events' times 10x short, which showed both wrong.)
 *
 * Strict where ROCr's rules are: a dispatch's kernarg segment must lie in
 * kernarg-pool memory the GPU was allowed to access, its group segment must
 * hold the kernel's static LDS (and the dynamic LDS the emulated kernel
 * uses), its private segment the kernel's fixed size, its kernel object must
 * be a loaded kernel. A violation is a fault: printed and the process aborts.
 *
 * The "hardware" cannot run AMDGPU code: it emulates HIP's own kernels that
 * the tests meet (__amd_rocclr_gwsInit: nothing; __amd_rocclr_copyBuffer,
 * copyBufferAligned and fillBufferAligned as the device libraries'
 * __amd_copyBuffer(Aligned) and __amd_fillBufferAligned),
 * faults on any other it does not know, and emulates the test kernels by name
 * (axpy: y = a*x + y, plus axpy_bias and axpy_count += n where its executable
 * has them (kernels_variable.hip); dyn: out[t] = the LDS word written by thread
 * blockDim-1-t, through the dynamic LDS; merged4: out[i] = in[4i] + ... +
 * in[4i+3]), with the argument offsets of the AMDGPU ABI (explicit arguments
 * in order, naturally aligned), and for twins ("__nano_twin_...") also
 * records each access through the device runtime's CPU build (dh_device.c)
 * into the buffer at the twin's last explicit argument, under the site ids of
 * FAKE_SITES (axpy: load x, load y, store y; dyn: store out; merged4: the
 * four loads, the store). Each kernel runs at least FAKE_HSA_KERNEL_US microseconds
 * (default 200). FAKE_HSA_COPY_LOG: a file that gets one line per copy of
 * the copy engine (bytes, start, end). FAKE_HSA_LOG: a file that gets one line per kernel the
 * hardware ran (what the tests compare): queue, kernel, the FNV-1a 64 of the
 * code object it was loaded from, grid, workgroup, segment sizes, whether it
 * had a completion signal, start and end (system domain, ns), and every
 * kernarg byte (as many as its descriptor's kernarg size).
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hsa/hsa.h"
#include "hsa/hsa_api_trace.h"
#include "hsa/hsa_ext_amd.h"
#include "hsa/amd_hsa_signal.h"

#include "nano/dh_format.h"
#include "fake_sites.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

/* The agents' handles. */
#define CPU_AGENT 0x1000
#define GPU_AGENT 0x2000
/* The pools' handles. */
#define KERNARG_POOL 0x3000
#define DEVICE_POOL 0x4000
/* Agent ticks: 100 MHz (10 ns each), counted from this many ticks. */
#define TICK_NS 10
#define TICK_BASE 777000000ull
/* e_flags' gfx number (LLVM's EF_AMDGPU_MACH_AMDGCN_*), OS ABI, machine. */
#define MACH_MASK 0xff
#define MACH_GFX90A 0x3f
#define MACH_GFX1030 0x36
#define OSABI_AMDGPU_HSA 64
#define MACHINE_AMDGPU 224
/* A kernel descriptor's size and fields (AMDGPU ABI). */
#define KD_BYTES 64
#define KD_GROUP 0
#define KD_PRIVATE 4
#define KD_KERNARG 8
#define PACKET_BYTES 64
#define MAX_TOOLS 8
#define MAX_HANDLERS 8

static void fault(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fault(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "stand-in HSA: fault: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  abort();
}

/* FAKE_HSA_DEBUG set: each query the stand-in does not answer, on stderr. */
static hsa_status_t unanswered(const char *what, int which) {
  if (getenv("FAKE_HSA_DEBUG"))
    fprintf(stderr, "stand-in HSA: %s %d (0x%x) not answered\n", what, which, which);
  return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

static uint64_t raw_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC_RAW, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}
/* The agent's clock, and an agent tick in the system domain. */
static uint64_t agent_ticks(void) { return TICK_BASE + raw_ns() / TICK_NS; }
static uint64_t ticks_ns(uint64_t tick) { return (tick - TICK_BASE) * TICK_NS; }

static uint32_t gpu_mach(void) {
  const char *a = getenv("FAKE_HSA_ARCH");
  return a && !strcmp(a, "gfx1030") ? MACH_GFX1030 : MACH_GFX90A;
}
static const char *gpu_name(void) { return gpu_mach() == MACH_GFX1030 ? "gfx1030" : "gfx90a"; }

/* ---- signals ------------------------------------------------------------------- */

struct Queue;
struct Signal {
  /* first: a signal's handle is its amd_signal_t's address, as ROCr's; the
   * "hardware" writes the raw times (agent ticks) of the packet or copy that
   * completed it in start_ts and end_ts, 0 before any */
  amd_signal_t amd;
  int64_t value;
  pthread_mutex_t m;
  pthread_cond_t c;
  struct Queue *doorbell_of;
};

/* The hardware's stamp of what completes s: its raw times (agent ticks). */
static void signal_stamp(hsa_signal_t h, uint64_t start, uint64_t end) {
  Signal *s = (Signal *)(uintptr_t)h.handle;
  pthread_mutex_lock(&s->m);
  s->amd.start_ts = start, s->amd.end_ts = end;
  pthread_mutex_unlock(&s->m);
}

static Signal *sig(hsa_signal_t s) {
  if (!s.handle)
    fault("signal 0 used");
  return (Signal *)(uintptr_t)s.handle;
}

struct AsyncHandler {
  Signal *s;
  hsa_signal_condition_t cond;
  hsa_signal_value_t value;
  hsa_amd_signal_handler fn;
  void *arg;
  AsyncHandler *next;
};
static struct {
  pthread_mutex_t m;
  pthread_cond_t c;
  AsyncHandler *list;
  int started;
  pthread_t thread;
} g_async = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, {}};

static int holds(hsa_signal_condition_t c, int64_t v, int64_t want) {
  switch (c) {
  case HSA_SIGNAL_CONDITION_EQ:
    return v == want;
  case HSA_SIGNAL_CONDITION_NE:
    return v != want;
  case HSA_SIGNAL_CONDITION_LT:
    return v < want;
  default:
    return v >= want;
  }
}

static void queue_rung(Queue *q);

/* Every change of a value, told after s->m is let go: async handlers, a
 * doorbell's queue. Nothing of the signal is touched here: a waiter that saw
 * the new value may have destroyed it already (the program's completion
 * signal, right after its wait). */
static void sig_changed(Queue *doorbell_of) {
  pthread_mutex_lock(&g_async.m);
  pthread_cond_broadcast(&g_async.c);
  pthread_mutex_unlock(&g_async.m);
  if (doorbell_of)
    queue_rung(doorbell_of);
}

static int64_t sig_op(hsa_signal_t h, int op, int64_t v) {
  Signal *s = sig(h);
  pthread_mutex_lock(&s->m);
  int64_t old = s->value;
  switch (op) {
  case '=':
    s->value = v;
    break;
  case '+':
    s->value += v;
    break;
  case '-':
    s->value -= v;
    break;
  case '&':
    s->value &= v;
    break;
  case '|':
    s->value |= v;
    break;
  case '^':
    s->value ^= v;
    break;
  }
  pthread_cond_broadcast(&s->c); /* waiters, which wake once s->m is let go */
  Queue *doorbell_of = s->doorbell_of;
  pthread_mutex_unlock(&s->m);
  sig_changed(doorbell_of);
  return old;
}

static hsa_status_t signal_create(hsa_signal_value_t v, uint32_t n, const hsa_agent_t *c,
                                  hsa_signal_t *out) {
  (void)n, (void)c;
  if (!out)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  void *mem = NULL;
  if (posix_memalign(&mem, AMD_SIGNAL_ALIGN_BYTES, sizeof(Signal)) != 0)
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  Signal *s = (Signal *)memset(mem, 0, sizeof(Signal));
  s->amd.kind = AMD_SIGNAL_KIND_USER;
  s->value = v;
  pthread_mutex_init(&s->m, NULL);
  pthread_cond_init(&s->c, NULL);
  out->handle = (uint64_t)(uintptr_t)s;
  return HSA_STATUS_SUCCESS;
}
static hsa_status_t amd_signal_create(hsa_signal_value_t v, uint32_t n, const hsa_agent_t *c,
                                      uint64_t attr, hsa_signal_t *out) {
  (void)attr;
  return signal_create(v, n, c, out);
}
static hsa_status_t signal_destroy(hsa_signal_t h) {
  Signal *s = sig(h);
  pthread_mutex_lock(&g_async.m);
  for (AsyncHandler *a = g_async.list; a; a = a->next)
    if (a->s == s)
      fault("signal %p destroyed with an async handler pending", (void *)s);
  pthread_mutex_unlock(&g_async.m);
  free(s);
  return HSA_STATUS_SUCCESS;
}
static hsa_signal_value_t signal_load(hsa_signal_t h) {
  Signal *s = sig(h);
  pthread_mutex_lock(&s->m);
  int64_t v = s->value;
  pthread_mutex_unlock(&s->m);
  return v;
}
static void signal_store(hsa_signal_t h, hsa_signal_value_t v) { sig_op(h, '=', v); }
static void signal_add(hsa_signal_t h, hsa_signal_value_t v) { sig_op(h, '+', v); }
static void signal_sub(hsa_signal_t h, hsa_signal_value_t v) { sig_op(h, '-', v); }
static hsa_signal_value_t signal_wait(hsa_signal_t h, hsa_signal_condition_t c,
                                      hsa_signal_value_t want, uint64_t timeout,
                                      hsa_wait_state_t st) {
  (void)st;
  Signal *s = sig(h);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  uint64_t ns = timeout > 10000000000ull ? 10000000000ull : timeout; /* ROCr: a hint */
  until.tv_sec += (time_t)(ns / 1000000000ull);
  until.tv_nsec += (long)(ns % 1000000000ull);
  if (until.tv_nsec >= 1000000000L)
    until.tv_sec++, until.tv_nsec -= 1000000000L;
  pthread_mutex_lock(&s->m);
  while (!holds(c, s->value, want))
    if (pthread_cond_timedwait(&s->c, &s->m, &until) != 0)
      break;
  int64_t v = s->value;
  pthread_mutex_unlock(&s->m);
  return v;
}

static void *async_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_async.m);
  for (;;) {
    AsyncHandler *ready = NULL;
    for (AsyncHandler **a = &g_async.list; *a;) {
      if (holds((*a)->cond, signal_load({(uint64_t)(uintptr_t)(*a)->s}), (*a)->value)) {
        AsyncHandler *r = *a;
        *a = r->next;
        r->next = ready;
        ready = r;
      } else {
        a = &(*a)->next;
      }
    }
    if (!ready) {
      struct timespec t;
      clock_gettime(CLOCK_REALTIME, &t);
      t.tv_nsec += 10000000;
      if (t.tv_nsec >= 1000000000L)
        t.tv_sec++, t.tv_nsec -= 1000000000L;
      pthread_cond_timedwait(&g_async.c, &g_async.m, &t);
      continue;
    }
    pthread_mutex_unlock(&g_async.m);
    while (ready) {
      AsyncHandler *r = ready;
      ready = r->next;
      if (r->fn(signal_load({(uint64_t)(uintptr_t)r->s}), r->arg)) {
        pthread_mutex_lock(&g_async.m);
        r->next = g_async.list;
        g_async.list = r;
        pthread_mutex_unlock(&g_async.m);
      } else {
        free(r);
      }
    }
    pthread_mutex_lock(&g_async.m);
  }
  return NULL;
}

static hsa_status_t signal_async_handler(hsa_signal_t h, hsa_signal_condition_t c,
                                         hsa_signal_value_t v, hsa_amd_signal_handler fn,
                                         void *arg) {
  if (!fn)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  /* FAKE_HSA_HANDLER_REFUSE=N: the process's Nth registration is refused, as
   * a runtime out of resources would */
  static long registrations;
  const char *refuse = getenv("FAKE_HSA_HANDLER_REFUSE");
  if (refuse && atol(refuse) == __atomic_add_fetch(&registrations, 1, __ATOMIC_RELAXED))
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  AsyncHandler *a = (AsyncHandler *)calloc(1, sizeof *a);
  if (!a)
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  *a = {sig(h), c, v, fn, arg, NULL};
  pthread_mutex_lock(&g_async.m);
  if (!g_async.started && pthread_create(&g_async.thread, NULL, async_main, NULL) == 0)
    g_async.started = 1;
  a->next = g_async.list;
  g_async.list = a;
  pthread_cond_broadcast(&g_async.c);
  pthread_mutex_unlock(&g_async.m);
  return HSA_STATUS_SUCCESS;
}

/* ---- memory -------------------------------------------------------------------- */

struct Alloc {
  char *p;
  size_t n;
  uint64_t pool;
  int gpu_access;
  Alloc *next;
  int locked; /* the program's host memory, locked: unlocked, not freed */
};
static pthread_mutex_t g_mem_lock = PTHREAD_MUTEX_INITIALIZER;
static Alloc *g_allocs;

static hsa_status_t pool_allocate(hsa_amd_memory_pool_t pool, size_t n, uint32_t flags,
                                  void **out) {
  (void)flags;
  if (pool.handle != KERNARG_POOL && pool.handle != DEVICE_POOL)
    return (hsa_status_t)HSA_STATUS_ERROR_INVALID_MEMORY_POOL;
  if (!n || !out)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  Alloc *a = (Alloc *)calloc(1, sizeof *a);
  void *p = NULL;
  if (!a || posix_memalign(&p, 4096, n)) {
    free(a);
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  }
  *a = {(char *)p, n, pool.handle, pool.handle == DEVICE_POOL, NULL};
  pthread_mutex_lock(&g_mem_lock);
  a->next = g_allocs;
  g_allocs = a;
  pthread_mutex_unlock(&g_mem_lock);
  *out = p;
  return HSA_STATUS_SUCCESS;
}
static hsa_status_t pool_free(void *p) {
  pthread_mutex_lock(&g_mem_lock);
  for (Alloc **a = &g_allocs; *a; a = &(*a)->next)
    if ((*a)->p == p) {
      Alloc *f = *a;
      *a = f->next;
      pthread_mutex_unlock(&g_mem_lock);
      free(f->p);
      free(f);
      return HSA_STATUS_SUCCESS;
    }
  pthread_mutex_unlock(&g_mem_lock);
  return HSA_STATUS_ERROR_INVALID_ALLOCATION;
}
static hsa_status_t allow_access(uint32_t n, const hsa_agent_t *agents, const uint32_t *flags,
                                 const void *p) {
  (void)flags;
  hsa_status_t rc = HSA_STATUS_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&g_mem_lock);
  for (Alloc *a = g_allocs; a; a = a->next)
    if (a->p == p) {
      for (uint32_t i = 0; i < n; i++)
        a->gpu_access |= agents[i].handle == GPU_AGENT;
      rc = HSA_STATUS_SUCCESS;
    }
  pthread_mutex_unlock(&g_mem_lock);
  return rc;
}
/* hsa_amd_memory_lock_to_pool: host memory [p, p+n) made reachable by the
 * agents as memory of pool (ROCr pins it and maps it for them); the agents'
 * address is the host's (a large BAR, unified addresses). */
static hsa_status_t memory_lock_to_pool(void *p, size_t n, hsa_agent_t *agents, int nagents,
                                        hsa_amd_memory_pool_t pool, uint32_t flags, void **out) {
  (void)flags;
  if (!p || !n || !out || (nagents && !agents))
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (pool.handle != KERNARG_POOL)
    return (hsa_status_t)HSA_STATUS_ERROR_INVALID_MEMORY_POOL;
  Alloc *a = (Alloc *)calloc(1, sizeof *a);
  if (!a)
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  *a = {(char *)p, n, pool.handle, 1, NULL};
  a->locked = 1;
  pthread_mutex_lock(&g_mem_lock);
  a->next = g_allocs;
  g_allocs = a;
  pthread_mutex_unlock(&g_mem_lock);
  *out = p;
  return HSA_STATUS_SUCCESS;
}
static hsa_status_t memory_lock(void *p, size_t n, hsa_agent_t *agents, int nagents, void **out) {
  return memory_lock_to_pool(p, n, agents, nagents, {KERNARG_POOL}, 0, out);
}
static hsa_status_t memory_unlock(void *p) {
  pthread_mutex_lock(&g_mem_lock);
  for (Alloc **a = &g_allocs; *a; a = &(*a)->next)
    if ((*a)->p == p && (*a)->locked) {
      Alloc *f = *a;
      *a = f->next;
      pthread_mutex_unlock(&g_mem_lock);
      free(f);
      return HSA_STATUS_SUCCESS;
    }
  pthread_mutex_unlock(&g_mem_lock);
  return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

/* Whether [p, p+n) lies in memory of pool the GPU may access. */
static int gpu_visible(const void *p, size_t n, uint64_t pool) {
  int ok = 0;
  pthread_mutex_lock(&g_mem_lock);
  for (Alloc *a = g_allocs; a; a = a->next)
    if ((const char *)p >= a->p && (const char *)p + n <= a->p + a->n)
      ok = a->gpu_access && (!pool || a->pool == pool);
  pthread_mutex_unlock(&g_mem_lock);
  return ok;
}

static hsa_status_t iterate_pools(hsa_agent_t agent,
                                  hsa_status_t (*cb)(hsa_amd_memory_pool_t, void *), void *data) {
  hsa_amd_memory_pool_t p = {agent.handle == CPU_AGENT ? (uint64_t)KERNARG_POOL : DEVICE_POOL};
  return cb(p, data);
}
static hsa_status_t pool_get_info(hsa_amd_memory_pool_t pool, hsa_amd_memory_pool_info_t what,
                                  void *out) {
  switch ((int)what) {
  case HSA_AMD_MEMORY_POOL_INFO_SEGMENT:
    *(hsa_amd_segment_t *)out = HSA_AMD_SEGMENT_GLOBAL;
    return HSA_STATUS_SUCCESS;
  case HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS:
    *(uint32_t *)out = pool.handle == KERNARG_POOL ? HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT |
                                                         HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED
                                                   : HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED;
    return HSA_STATUS_SUCCESS;
  case HSA_AMD_MEMORY_POOL_INFO_SIZE:
    *(size_t *)out = (size_t)1 << 34;
    return HSA_STATUS_SUCCESS;
  case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED:
    *(bool *)out = true;
    return HSA_STATUS_SUCCESS;
  case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE:
  case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT:
    *(size_t *)out = 4096;
    return HSA_STATUS_SUCCESS;
  default:
    return unanswered("pool info", what);
  }
}

/* How agent reaches pool: the CPU its own pool and the GPU's through the
 * large BAR, the GPU its own and the CPU's once allowed. */
static hsa_status_t agent_pool_get_info(hsa_agent_t agent, hsa_amd_memory_pool_t pool,
                                        hsa_amd_agent_memory_pool_info_t what, void *out) {
  if (agent.handle != CPU_AGENT && agent.handle != GPU_AGENT)
    return HSA_STATUS_ERROR_INVALID_AGENT;
  int own = (agent.handle == CPU_AGENT) == (pool.handle == KERNARG_POOL);
  switch ((int)what) {
  case HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS:
    *(hsa_amd_memory_pool_access_t *)out = own ? HSA_AMD_MEMORY_POOL_ACCESS_ALLOWED_BY_DEFAULT
                                               : HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT;
    return HSA_STATUS_SUCCESS;
  case HSA_AMD_AGENT_MEMORY_POOL_INFO_NUM_LINK_HOPS:
    *(uint32_t *)out = own ? 0 : 1;
    return HSA_STATUS_SUCCESS;
  case HSA_AMD_AGENT_MEMORY_POOL_INFO_LINK_INFO: {
    hsa_amd_memory_pool_link_info_t *l = (hsa_amd_memory_pool_link_info_t *)out;
    memset(l, 0, sizeof *l);
    l->link_type = HSA_AMD_LINK_INFO_TYPE_PCIE;
    l->numa_distance = own ? 0 : 20;
    return HSA_STATUS_SUCCESS;
  }
  default:
    return unanswered("agent pool info", what);
  }
}

/* ---- copies ------------------------------------------------------------------------ */

/* hsa_amd_memory_async_copy: one copy engine that takes the copies in the
 * order given, as ROCr's device-to-device blit queue does: each waits for
 * its dependent signals to be 0, copies, and decrements its completion
 * signal. */
#define MAX_COPY_DEPS 8
struct Copy {
  void *dst;
  const void *src;
  size_t size; /* of a row */
  /* rows and slices (1 each but for a rect copy) and their strides */
  size_t rows, slices, dst_pitch, dst_slice, src_pitch, src_slice;
  uint32_t ndeps;
  hsa_signal_t deps[MAX_COPY_DEPS];
  hsa_signal_t done;
  Copy *next;
};
static struct {
  pthread_mutex_t m;
  pthread_cond_t c;
  Copy *head, *tail;
  int started;
  pthread_t thread;
} g_copies = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, 0, {}};

/* hsa_amd_profiling_async_copy_enable: copies' completion signals carry
 * their start and end in the system domain (ns of CLOCK_MONOTONIC_RAW;
 * hsa_amd_profiling_get_async_copy_time). */
static int g_copy_profiling;

static hsa_status_t copy_profiling_enable(bool on) {
  __atomic_store_n(&g_copy_profiling, on, __ATOMIC_RELAXED);
  return HSA_STATUS_SUCCESS;
}
/* The times of what last completed signal h (a profiled packet's or copy's),
 * translated from the agent's ticks to the system domain as ROCr's
 * TranslateTime does, or HSA_STATUS_ERROR when nothing timed it. */
static hsa_status_t signal_times(hsa_signal_t h, uint64_t *start, uint64_t *end) {
  Signal *s = sig(h);
  pthread_mutex_lock(&s->m);
  uint64_t from = s->amd.start_ts, to = s->amd.end_ts;
  pthread_mutex_unlock(&s->m);
  if (from < TICK_BASE || to < from)
    return HSA_STATUS_ERROR;
  *start = ticks_ns(from), *end = ticks_ns(to);
  return HSA_STATUS_SUCCESS;
}
static hsa_status_t copy_time(hsa_signal_t h, hsa_amd_profiling_async_copy_time_t *t) {
  return t ? signal_times(h, &t->start, &t->end) : HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

/* FAKE_HSA_COPY_LOG: a file that gets one line per copy the engine made:
 * its bytes, start and end (system domain, ns). */
static void copy_log(const Copy *c, uint64_t start, uint64_t end) {
  const char *path = getenv("FAKE_HSA_COPY_LOG");
  if (!path)
    return;
  FILE *f = fopen(path, "a"); /* the engine's one thread: no other writer */
  if (!f)
    fault("FAKE_HSA_COPY_LOG=%s: %s", path, strerror(errno));
  fprintf(f, "copy bytes=%zu start=%llu end=%llu\n", c->size * c->rows * c->slices,
          (unsigned long long)start, (unsigned long long)end);
  if (fclose(f) != 0)
    fault("FAKE_HSA_COPY_LOG=%s: %s", path, strerror(errno));
}

static void *copy_main(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&g_copies.m);
    while (!g_copies.head)
      pthread_cond_wait(&g_copies.c, &g_copies.m);
    Copy *c = g_copies.head;
    if (!(g_copies.head = c->next))
      g_copies.tail = NULL;
    pthread_mutex_unlock(&g_copies.m);
    for (uint32_t i = 0; i < c->ndeps; i++)
      while (signal_wait(c->deps[i], HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX, HSA_WAIT_STATE_BLOCKED))
        ;
    uint64_t start = agent_ticks();
    for (size_t z = 0; z < c->slices; z++)
      for (size_t y = 0; y < c->rows; y++)
        memcpy((char *)c->dst + z * c->dst_slice + y * c->dst_pitch,
               (const char *)c->src + z * c->src_slice + y * c->src_pitch, c->size);
    uint64_t end = agent_ticks();
    copy_log(c, ticks_ns(start), ticks_ns(end));
    if (__atomic_load_n(&g_copy_profiling, __ATOMIC_RELAXED))
      signal_stamp(c->done, start, end);
    sig_op(c->done, '-', 1);
    free(c);
  }
  return NULL;
}

/* Whether [p, p+n) lies in one allocation of the runtime's (a pool's, a
 * variable's) that the agent reaches: the GPU what it was allowed, the CPU
 * all of them (its own pool; device memory through the large BAR). */
static int agent_reaches(hsa_agent_t agent, const void *p, size_t n) {
  int ok = 0;
  pthread_mutex_lock(&g_mem_lock);
  for (Alloc *a = g_allocs; a; a = a->next)
    if ((const char *)p >= a->p && (const char *)p + n <= a->p + a->n)
      ok = agent.handle == CPU_AGENT || a->gpu_access;
  pthread_mutex_unlock(&g_mem_lock);
  return ok;
}

/* Queues a copy of shape's ends and shape after its dependent signals,
 * checked as the engine sees it (reach: the whole extent of each end). */
static hsa_status_t copy_queue(const Copy *shape, hsa_agent_t dst_agent, hsa_agent_t src_agent,
                               uint32_t ndeps, const hsa_signal_t *deps, hsa_signal_t done);

static hsa_status_t async_copy(void *dst, hsa_agent_t dst_agent, const void *src,
                               hsa_agent_t src_agent, size_t size, uint32_t ndeps,
                               const hsa_signal_t *deps, hsa_signal_t done) {
  if (!dst || !src || !done.handle || (ndeps && !deps))
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  const Copy shape = {dst, src, size, 1, 1, size, size, size, size, 0, {}, {}, NULL};
  return copy_queue(&shape, dst_agent, src_agent, ndeps, deps, done);
}

/* hsa_amd_memory_async_copy_rect: range.x bytes of range.y rows of
 * range.z slices, each end at its offset (x in bytes) in its pitched
 * memory; one agent's engine (copy_agent) either way. */
static hsa_status_t async_copy_rect(const hsa_pitched_ptr_t *dst, const hsa_dim3_t *dst_offset,
                                    const hsa_pitched_ptr_t *src, const hsa_dim3_t *src_offset,
                                    const hsa_dim3_t *range, hsa_agent_t copy_agent,
                                    hsa_amd_copy_direction_t dir, uint32_t ndeps,
                                    const hsa_signal_t *deps, hsa_signal_t done) {
  if (!dst || !dst_offset || !src || !src_offset || !range || !done.handle || (ndeps && !deps) ||
      !range->x || !range->y || !range->z || dst->pitch < range->x || src->pitch < range->x)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (copy_agent.handle != GPU_AGENT)
    return HSA_STATUS_ERROR_INVALID_AGENT;
  hsa_agent_t host = {CPU_AGENT}, gpu = {GPU_AGENT};
  const Copy shape = {
      (char *)dst->base + dst_offset->z * dst->slice + dst_offset->y * dst->pitch + dst_offset->x,
      (const char *)src->base + src_offset->z * src->slice + src_offset->y * src->pitch +
          src_offset->x,
      range->x, range->y, range->z, dst->pitch, dst->slice, src->pitch, src->slice, 0, {}, {},
      NULL};
  return copy_queue(&shape, dir == hsaHostToDevice || dir == hsaDeviceToDevice ? gpu : host,
                    dir == hsaDeviceToHost || dir == hsaDeviceToDevice ? gpu : host, ndeps, deps,
                    done);
}

static hsa_status_t copy_queue(const Copy *shape, hsa_agent_t dst_agent, hsa_agent_t src_agent,
                               uint32_t ndeps, const hsa_signal_t *deps, hsa_signal_t done) {
  void *dst = shape->dst;
  const void *src = shape->src;
  size_t size = (shape->slices - 1) * shape->dst_slice + (shape->rows - 1) * shape->dst_pitch +
                shape->size;
  size_t src_size = (shape->slices - 1) * shape->src_slice +
                    (shape->rows - 1) * shape->src_pitch + shape->size;
  if ((dst_agent.handle != CPU_AGENT && dst_agent.handle != GPU_AGENT) ||
      (src_agent.handle != CPU_AGENT && src_agent.handle != GPU_AGENT))
    return HSA_STATUS_ERROR_INVALID_AGENT;
  /* FAKE_HSA_COPY_REFUSE: copies asked by async handlers (a tool's) are
   * refused as a runtime out of resources would */
  if (getenv("FAKE_HSA_COPY_REFUSE") && g_async.started && pthread_equal(pthread_self(), g_async.thread))
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  if (ndeps > MAX_COPY_DEPS)
    fault("async copy: %u dependent signals, the stand-in takes %d", ndeps, MAX_COPY_DEPS);
  const hsa_agent_t agents[2] = {dst_agent, src_agent};
  for (int i = 0; i < 2; i++)
    if (!agent_reaches(agents[i], dst, size) || !agent_reaches(agents[i], src, src_size))
      fault("async copy of %zu bytes %p <- %p: agent 0x%llx cannot reach both buffers", size, dst,
            src, (unsigned long long)agents[i].handle);
  if ((const char *)dst < (const char *)src + src_size && (const char *)src < (const char *)dst + size)
    fault("async copy of %zu bytes %p <- %p: the buffers overlap", size, dst, src);
  Copy *c = (Copy *)calloc(1, sizeof *c);
  if (!c)
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  *c = *shape;
  c->ndeps = ndeps, c->done = done;
  for (uint32_t i = 0; i < ndeps; i++) {
    sig(deps[i]); /* a fault if 0 */
    c->deps[i] = deps[i];
  }
  pthread_mutex_lock(&g_copies.m);
  if (!g_copies.started && pthread_create(&g_copies.thread, NULL, copy_main, NULL) == 0)
    g_copies.started = 1;
  if (!g_copies.started) {
    pthread_mutex_unlock(&g_copies.m);
    free(c);
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  }
  if (g_copies.tail)
    g_copies.tail->next = c;
  else
    g_copies.head = c;
  g_copies.tail = c;
  pthread_cond_signal(&g_copies.c);
  pthread_mutex_unlock(&g_copies.m);
  return HSA_STATUS_SUCCESS;
}

/* ---- agents and the system ------------------------------------------------------ */

static hsa_status_t iterate_agents(hsa_status_t (*cb)(hsa_agent_t, void *), void *data) {
  hsa_status_t rc = cb({CPU_AGENT}, data);
  if (rc == HSA_STATUS_SUCCESS)
    rc = cb({GPU_AGENT}, data);
  return rc == HSA_STATUS_INFO_BREAK ? HSA_STATUS_SUCCESS : rc;
}
/* The agents' uint32_t attributes a HIP runtime asks for: the GPU's (an
 * MI210's) and the CPU's. */
static const struct {
  int what;
  uint32_t gpu, cpu;
} agent_u32[] = {
    {HSA_AGENT_INFO_QUEUE_MAX_SIZE, 4096, 4096},
    {HSA_AGENT_INFO_BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES, HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR, HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR},
    {HSA_AGENT_INFO_WORKGROUP_MAX_SIZE, 1024, 0},
    {HSA_AGENT_INFO_GRID_MAX_SIZE, UINT32_MAX, UINT32_MAX},
    {HSA_AGENT_INFO_FBARRIER_MAX_SIZE, 32, 32},
    {HSA_AGENT_INFO_QUEUES_MAX, 128, 0},
    {HSA_AGENT_INFO_QUEUE_MIN_SIZE, 64, 0},
    {HSA_AGENT_INFO_NODE, 1, 0},
    {HSA_AMD_AGENT_INFO_CACHELINE_SIZE, 128, 64},
    {HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT, 104, 2},
    {HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY, 1700, 1700},
    {HSA_AMD_AGENT_INFO_DRIVER_NODE_ID, 1, 0},
    {HSA_AMD_AGENT_INFO_BDFID, 0x300, 0}, /* bus 3, device 0, function 0 */
    {HSA_AMD_AGENT_INFO_MEMORY_WIDTH, 4096, 4096},
    {HSA_AMD_AGENT_INFO_MEMORY_MAX_FREQUENCY, 1600, 1600},
    {HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU, 32, 32},
    {HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU, 4, 4},
    {HSA_AMD_AGENT_INFO_NUM_SHADER_ENGINES, 8, 8},
    {HSA_AMD_AGENT_INFO_NUM_SHADER_ARRAYS_PER_SE, 1, 1},
    {HSA_AMD_AGENT_INFO_DOMAIN, 0, 0},
    {HSA_AMD_AGENT_INFO_ASIC_REVISION, 1, 1},
    {HSA_AMD_AGENT_INFO_COOPERATIVE_COMPUTE_UNIT_COUNT, 104, 0},
};

/* A string attribute: text in a field of `bytes`, zero-filled. */
static hsa_status_t agent_string(void *out, size_t bytes, const char *text) {
  memset(out, 0, bytes);
  memcpy(out, text, strnlen(text, bytes - 1));
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t agent_get_info(hsa_agent_t a, hsa_agent_info_t what, void *out) {
  if (a.handle != CPU_AGENT && a.handle != GPU_AGENT)
    return HSA_STATUS_ERROR_INVALID_AGENT;
  int gpu = a.handle == GPU_AGENT;
  for (size_t i = 0; i < sizeof agent_u32 / sizeof agent_u32[0]; i++)
    if (agent_u32[i].what == (int)what) {
      *(uint32_t *)out = gpu ? agent_u32[i].gpu : agent_u32[i].cpu;
      return HSA_STATUS_SUCCESS;
    }
  switch ((int)what) {
  case HSA_AGENT_INFO_NAME:
    return agent_string(out, 64, gpu ? gpu_name() : "stand-in CPU");
  case HSA_AGENT_INFO_DEVICE:
    *(hsa_device_type_t *)out = gpu ? HSA_DEVICE_TYPE_GPU : HSA_DEVICE_TYPE_CPU;
    return HSA_STATUS_SUCCESS;
  case HSA_AGENT_INFO_WAVEFRONT_SIZE:
    *(uint32_t *)out = gpu_mach() == MACH_GFX1030 ? 32 : 64;
    return HSA_STATUS_SUCCESS;
  case HSA_AGENT_INFO_VENDOR_NAME:
    return agent_string(out, 64, gpu ? "AMD" : "CPU");
  case HSA_AGENT_INFO_FEATURE:
    *(hsa_agent_feature_t *)out = gpu ? HSA_AGENT_FEATURE_KERNEL_DISPATCH : (hsa_agent_feature_t)0;
    return HSA_STATUS_SUCCESS;
  case HSA_AGENT_INFO_MACHINE_MODEL:
    *(hsa_machine_model_t *)out = HSA_MACHINE_MODEL_LARGE;
    return HSA_STATUS_SUCCESS;
  case HSA_AGENT_INFO_PROFILE:
    *(hsa_profile_t *)out = gpu ? HSA_PROFILE_BASE : HSA_PROFILE_FULL;
    return HSA_STATUS_SUCCESS;
  case HSA_AGENT_INFO_DEFAULT_FLOAT_ROUNDING_MODE:
    *(hsa_default_float_rounding_mode_t *)out = HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR;
    return HSA_STATUS_SUCCESS;
  case HSA_AGENT_INFO_FAST_F16_OPERATION:
    *(bool *)out = gpu;
    return HSA_STATUS_SUCCESS;
  case HSA_AGENT_INFO_WORKGROUP_MAX_DIM: {
    static const uint16_t dims[3] = {1024, 1024, 1024};
    memcpy(out, dims, sizeof dims);
    return HSA_STATUS_SUCCESS;
  }
  case HSA_AGENT_INFO_GRID_MAX_DIM:
    *(hsa_dim3_t *)out = {UINT32_MAX, UINT32_MAX, UINT32_MAX};
    return HSA_STATUS_SUCCESS;
  case HSA_AGENT_INFO_QUEUE_TYPE:
    *(hsa_queue_type32_t *)out = HSA_QUEUE_TYPE_MULTI;
    return HSA_STATUS_SUCCESS;
  case HSA_AGENT_INFO_CACHE_SIZE: {
    const uint32_t sizes[4] = {16 << 10, 8 << 20, 0, 0};
    memcpy(out, sizes, sizeof sizes);
    return HSA_STATUS_SUCCESS;
  }
  case HSA_AGENT_INFO_ISA:
    *(hsa_isa_t *)out = {gpu ? gpu_mach() : 0};
    return HSA_STATUS_SUCCESS;
  case HSA_AGENT_INFO_EXTENSIONS:
    memset(out, 0, 128);
    return HSA_STATUS_SUCCESS;
  case HSA_AGENT_INFO_VERSION_MAJOR:
  case HSA_AGENT_INFO_VERSION_MINOR:
    *(uint16_t *)out = 1;
    return HSA_STATUS_SUCCESS;
  case HSA_AMD_AGENT_INFO_CHIP_ID: /* an MI210's (gfx90a), an RX 6800's (gfx1030) */
    *(uint32_t *)out = gpu ? (gpu_mach() == MACH_GFX1030 ? 0x73bf : 0x740f) : 0;
    return HSA_STATUS_SUCCESS;
  case HSA_AMD_AGENT_INFO_PRODUCT_NAME:
    return agent_string(out, 64, gpu ? "stand-in GPU" : "stand-in CPU");
  case HSA_AMD_AGENT_INFO_HDP_FLUSH: { /* the host data path's flush registers: words here */
    static uint32_t mem_flush, reg_flush;
    *(hsa_amd_hdp_flush_t *)out = {gpu ? &mem_flush : NULL, gpu ? &reg_flush : NULL};
    return HSA_STATUS_SUCCESS;
  }
  case HSA_AMD_AGENT_INFO_COOPERATIVE_QUEUES:
    *(bool *)out = gpu;
    return HSA_STATUS_SUCCESS;
  case HSA_AMD_AGENT_INFO_UUID:
    return agent_string(out, 21, gpu ? "GPU-0123456789abcdef" : "CPU-XX");
  case HSA_AMD_AGENT_INFO_SVM_DIRECT_HOST_ACCESS:
    *(bool *)out = false;
    return HSA_STATUS_SUCCESS;
  default:
    return unanswered("agent info", what);
  }
}
static hsa_status_t agent_iterate_isas(hsa_agent_t a, hsa_status_t (*cb)(hsa_isa_t, void *),
                                       void *data) {
  if (a.handle != GPU_AGENT)
    return HSA_STATUS_SUCCESS;
  return cb({gpu_mach()}, data);
}
static hsa_status_t isa_get_info(hsa_isa_t isa, hsa_isa_info_t what, void *out) {
  char name[64];
  snprintf(name, sizeof name, "amdgcn-amd-amdhsa--%s", isa.handle == MACH_GFX1030 ? "gfx1030" : "gfx90a");
  if (what == HSA_ISA_INFO_NAME_LENGTH)
    *(uint32_t *)out = (uint32_t)strlen(name);
  else if (what == HSA_ISA_INFO_NAME)
    memcpy(out, name, strlen(name));
  else
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  return HSA_STATUS_SUCCESS;
}
static hsa_status_t system_get_info(hsa_system_info_t what, void *out) {
  switch ((int)what) {
  case HSA_SYSTEM_INFO_TIMESTAMP:
    *(uint64_t *)out = raw_ns();
    return HSA_STATUS_SUCCESS;
  case HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY:
    *(uint64_t *)out = 1000000000ull;
    return HSA_STATUS_SUCCESS;
  case HSA_AMD_SYSTEM_INFO_SVM_SUPPORTED: /* no shared virtual memory (HMM) */
  case HSA_AMD_SYSTEM_INFO_SVM_ACCESSIBLE_BY_DEFAULT:
    *(bool *)out = false;
    return HSA_STATUS_SUCCESS;
  default:
    return unanswered("system info", what);
  }
}
static hsa_status_t status_string(hsa_status_t st, const char **s) {
  *s = st == HSA_STATUS_SUCCESS ? "HSA_STATUS_SUCCESS" : "stand-in HSA error";
  return HSA_STATUS_SUCCESS;
}

/* ---- code objects --------------------------------------------------------------- */

struct Executable;
struct Kernel {
  unsigned char kd[KD_BYTES]; /* first: the kernel object is its address */
  char *name;                 /* "axpy.kd" as the ELF names it            */
  uint64_t image;             /* FNV-1a 64 of its code object's bytes     */
  Executable *exe;
  Kernel *next;
};
/* A module variable (a global STT_OBJECT symbol that is no kernel
 * descriptor), allocated in device memory at load, its initial bytes from
 * its section (zeros for SHT_NOBITS). Its symbol handle is its address with
 * bit 0 set (SYMBOL_VARIABLE), a kernel's the kernel's own. */
struct Variable {
  char *name;
  char *mem;
  uint64_t size;
  Variable *next;
};
#define SYMBOL_VARIABLE 1
struct Executable {
  int frozen;
  Kernel *kernels;
  Variable *variables;
};
struct Reader {
  char *data;
  size_t size;
  int owned;
};
static pthread_mutex_t g_kernels_lock = PTHREAD_MUTEX_INITIALIZER;
struct KernelRef {
  Kernel *k;
  KernelRef *next;
};
static KernelRef *g_kernels;

static Kernel *kernel_of(uint64_t object) {
  pthread_mutex_lock(&g_kernels_lock);
  Kernel *k = NULL;
  for (KernelRef *r = g_kernels; r && !k; r = r->next)
    if ((uint64_t)(uintptr_t)r->k == object)
      k = r->k;
  pthread_mutex_unlock(&g_kernels_lock);
  return k;
}

static hsa_status_t reader_from_memory(const void *p, size_t n, hsa_code_object_reader_t *out) {
  Reader *r = (Reader *)calloc(1, sizeof *r);
  if (!r)
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  *r = {(char *)p, n, 0};
  out->handle = (uint64_t)(uintptr_t)r;
  return HSA_STATUS_SUCCESS;
}
static hsa_status_t reader_from_file(hsa_file_t fd, hsa_code_object_reader_t *out) {
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size <= 0)
    return HSA_STATUS_ERROR_INVALID_FILE;
  char *p = (char *)malloc((size_t)st.st_size);
  if (!p || pread(fd, p, (size_t)st.st_size, 0) != st.st_size) {
    free(p);
    return HSA_STATUS_ERROR_INVALID_FILE;
  }
  hsa_status_t rc = reader_from_memory(p, (size_t)st.st_size, out);
  if (rc == HSA_STATUS_SUCCESS)
    ((Reader *)(uintptr_t)out->handle)->owned = 1;
  return rc;
}
static hsa_status_t reader_destroy(hsa_code_object_reader_t h) {
  Reader *r = (Reader *)(uintptr_t)h.handle;
  if (r->owned)
    free(r->data);
  free(r);
  return HSA_STATUS_SUCCESS;
}
static hsa_status_t executable_create(hsa_profile_t p, hsa_default_float_rounding_mode_t m,
                                      const char *opts, hsa_executable_t *out) {
  (void)p, (void)m, (void)opts;
  Executable *e = (Executable *)calloc(1, sizeof *e);
  if (!e)
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  out->handle = (uint64_t)(uintptr_t)e;
  return HSA_STATUS_SUCCESS;
}

/* The section of ELF image d (n bytes) holding address v, as a file offset. */
static long elf_offset(const char *d, size_t n, uint64_t v) {
  const Elf64_Ehdr *h = (const Elf64_Ehdr *)d;
  for (int i = 0; i < h->e_shnum; i++) {
    const Elf64_Shdr *s = (const Elf64_Shdr *)(d + h->e_shoff + (size_t)i * h->e_shentsize);
    if (s->sh_type != SHT_NOBITS && s->sh_addr && v >= s->sh_addr && v + KD_BYTES <= s->sh_addr + s->sh_size &&
        s->sh_offset + (v - s->sh_addr) + KD_BYTES <= n)
      return (long)(s->sh_offset + (v - s->sh_addr));
  }
  return -1;
}

/* Device memory for variable y of ELF image d (n bytes), its initial
 * bytes from its section; NULL when the section does not hold it. */
static char *variable_memory(const char *d, size_t n, const Elf64_Sym *y) {
  const Elf64_Ehdr *h = (const Elf64_Ehdr *)d;
  if (y->st_shndx == SHN_UNDEF || y->st_shndx >= h->e_shnum)
    return NULL;
  const Elf64_Shdr *s = (const Elf64_Shdr *)(d + h->e_shoff + (size_t)y->st_shndx * h->e_shentsize);
  if (y->st_value < s->sh_addr || y->st_value + y->st_size > s->sh_addr + s->sh_size ||
      (s->sh_type != SHT_NOBITS && s->sh_offset + (y->st_value - s->sh_addr) + y->st_size > n))
    return NULL;
  void *mem = NULL;
  if (pool_allocate({DEVICE_POOL}, y->st_size ? y->st_size : 1, 0, &mem) != HSA_STATUS_SUCCESS)
    return NULL;
  if (s->sh_type != SHT_NOBITS)
    memcpy(mem, d + s->sh_offset + (y->st_value - s->sh_addr), y->st_size);
  return (char *)mem;
}

static hsa_status_t load_code_object(hsa_executable_t eh, hsa_agent_t agent,
                                     hsa_code_object_reader_t rh, const char *opts,
                                     hsa_loaded_code_object_t *out) {
  (void)opts;
  Executable *e = (Executable *)(uintptr_t)eh.handle;
  Reader *r = (Reader *)(uintptr_t)rh.handle;
  if (!e || !r || e->frozen)
    return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  if (agent.handle != GPU_AGENT)
    return HSA_STATUS_ERROR_INVALID_AGENT;
  const Elf64_Ehdr *h = (const Elf64_Ehdr *)r->data;
  if (r->size < sizeof *h || memcmp(h->e_ident, ELFMAG, SELFMAG) || h->e_ident[EI_CLASS] != ELFCLASS64 ||
      h->e_machine != MACHINE_AMDGPU || h->e_ident[EI_OSABI] != OSABI_AMDGPU_HSA ||
      h->e_shoff + (uint64_t)h->e_shnum * h->e_shentsize > r->size)
    return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  if ((h->e_flags & MACH_MASK) != gpu_mach())
    return HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS;
  uint64_t image = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < r->size; i++)
    image = (image ^ (unsigned char)r->data[i]) * 0x100000001b3ull;
  for (int i = 0; i < h->e_shnum; i++) {
    const Elf64_Shdr *s = (const Elf64_Shdr *)(r->data + h->e_shoff + (size_t)i * h->e_shentsize);
    if (s->sh_type != SHT_SYMTAB || s->sh_link >= h->e_shnum)
      continue;
    const Elf64_Shdr *strs =
        (const Elf64_Shdr *)(r->data + h->e_shoff + (size_t)s->sh_link * h->e_shentsize);
    for (size_t j = 0; j < s->sh_size / sizeof(Elf64_Sym); j++) {
      const Elf64_Sym *y = (const Elf64_Sym *)(r->data + s->sh_offset) + j;
      if (y->st_name >= strs->sh_size)
        return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
      const char *name = r->data + strs->sh_offset + y->st_name;
      size_t len = strnlen(name, strs->sh_size - y->st_name);
      long at = elf_offset(r->data, r->size, y->st_value);
      if (ELF64_ST_TYPE(y->st_info) != STT_OBJECT)
        continue;
      if (len < 4 || strcmp(name + len - 3, ".kd")) {
        if (ELF64_ST_BIND(y->st_info) == STB_LOCAL) /* no symbol of the executable */
          continue;
        Variable *v = (Variable *)calloc(1, sizeof *v);
        if (!v || !(v->name = strndup(name, len)))
          return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
        if (!(v->mem = variable_memory(r->data, r->size, y)))
          return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
        v->size = y->st_size;
        v->next = e->variables;
        e->variables = v;
        continue;
      }
      if (at < 0)
        return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
      Kernel *k = (Kernel *)calloc(1, sizeof *k);
      KernelRef *ref = (KernelRef *)calloc(1, sizeof *ref);
      if (!k || !ref || !(k->name = strndup(name, len)))
        return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
      memcpy(k->kd, r->data + at, KD_BYTES);
      k->image = image;
      k->exe = e;
      k->next = e->kernels;
      e->kernels = k;
      ref->k = k;
      pthread_mutex_lock(&g_kernels_lock);
      ref->next = g_kernels;
      g_kernels = ref;
      pthread_mutex_unlock(&g_kernels_lock);
    }
  }
  if (out)
    out->handle = (uint64_t)(uintptr_t)r;
  return HSA_STATUS_SUCCESS;
}
static hsa_status_t executable_freeze(hsa_executable_t eh, const char *opts) {
  (void)opts;
  Executable *e = (Executable *)(uintptr_t)eh.handle;
  if (!e || e->frozen)
    return HSA_STATUS_ERROR_FROZEN_EXECUTABLE;
  e->frozen = 1;
  return HSA_STATUS_SUCCESS;
}
static hsa_status_t executable_destroy(hsa_executable_t eh) {
  Executable *e = (Executable *)(uintptr_t)eh.handle;
  if (!e)
    return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  pthread_mutex_lock(&g_kernels_lock);
  for (KernelRef **r = &g_kernels; *r;) {
    int mine = 0;
    for (Kernel *k = e->kernels; k; k = k->next)
      mine |= (*r)->k == k;
    if (mine) {
      KernelRef *f = *r;
      *r = f->next;
      free(f);
    } else {
      r = &(*r)->next;
    }
  }
  pthread_mutex_unlock(&g_kernels_lock);
  for (Kernel *k = e->kernels, *n; k; k = n) {
    n = k->next;
    free(k->name);
    free(k);
  }
  for (Variable *v = e->variables, *n; v; v = n) {
    n = v->next;
    pool_free(v->mem);
    free(v->name);
    free(v);
  }
  free(e);
  return HSA_STATUS_SUCCESS;
}
/* Every symbol is the GPU agent's (kernels, agent-allocated variables):
 * ROCr finds none of them without that agent. */
static hsa_status_t get_symbol_by_name(hsa_executable_t eh, const char *name,
                                       const hsa_agent_t *agent, hsa_executable_symbol_t *out) {
  Executable *e = (Executable *)(uintptr_t)eh.handle;
  if (!e || !e->frozen)
    return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  if (!agent || agent->handle != GPU_AGENT)
    return HSA_STATUS_ERROR_INVALID_SYMBOL_NAME;
  for (Kernel *k = e->kernels; k; k = k->next)
    if (!strcmp(k->name, name)) {
      out->handle = (uint64_t)(uintptr_t)k;
      return HSA_STATUS_SUCCESS;
    }
  for (Variable *v = e->variables; v; v = v->next)
    if (!strcmp(v->name, name)) {
      out->handle = (uint64_t)(uintptr_t)v | SYMBOL_VARIABLE;
      return HSA_STATUS_SUCCESS;
    }
  return HSA_STATUS_ERROR_INVALID_SYMBOL_NAME;
}
static hsa_status_t iterate_symbols(hsa_executable_t eh,
                                    hsa_status_t (*cb)(hsa_executable_t, hsa_executable_symbol_t,
                                                       void *),
                                    void *data) {
  Executable *e = (Executable *)(uintptr_t)eh.handle;
  if (!e)
    return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  for (Kernel *k = e->kernels; k; k = k->next) {
    hsa_status_t rc = cb(eh, {(uint64_t)(uintptr_t)k}, data);
    if (rc != HSA_STATUS_SUCCESS)
      return rc == HSA_STATUS_INFO_BREAK ? HSA_STATUS_SUCCESS : rc;
  }
  for (Variable *v = e->variables; v; v = v->next) {
    hsa_status_t rc = cb(eh, {(uint64_t)(uintptr_t)v | SYMBOL_VARIABLE}, data);
    if (rc != HSA_STATUS_SUCCESS)
      return rc == HSA_STATUS_INFO_BREAK ? HSA_STATUS_SUCCESS : rc;
  }
  return HSA_STATUS_SUCCESS;
}
static uint32_t kd_word(const Kernel *k, int at) {
  uint32_t v;
  memcpy(&v, k->kd + at, sizeof v);
  return v;
}
/* What every symbol has (its kind, name and agent) into out: 1, or 0 for
 * another `what`. */
static int symbol_common_info(hsa_symbol_kind_t kind, const char *name,
                              hsa_executable_symbol_info_t what, void *out) {
  switch ((int)what) {
  case HSA_EXECUTABLE_SYMBOL_INFO_TYPE:
    *(hsa_symbol_kind_t *)out = kind;
    return 1;
  case HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH:
    *(uint32_t *)out = (uint32_t)strlen(name);
    return 1;
  case HSA_EXECUTABLE_SYMBOL_INFO_NAME:
    memcpy(out, name, strlen(name));
    return 1;
  case HSA_EXECUTABLE_SYMBOL_INFO_AGENT:
    *(hsa_agent_t *)out = {GPU_AGENT};
    return 1;
  default:
    return 0;
  }
}

static hsa_status_t variable_get_info(const Variable *v, hsa_executable_symbol_info_t what,
                                      void *out) {
  if (symbol_common_info(HSA_SYMBOL_KIND_VARIABLE, v->name, what, out))
    return HSA_STATUS_SUCCESS;
  switch ((int)what) {
  case HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ALLOCATION:
    *(hsa_variable_allocation_t *)out = HSA_VARIABLE_ALLOCATION_AGENT;
    break;
  case HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS:
    *(uint64_t *)out = (uint64_t)(uintptr_t)v->mem;
    break;
  case HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE:
    *(uint32_t *)out = (uint32_t)v->size;
    break;
  default: /* a kernel's: no variable has them */
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t symbol_get_info(hsa_executable_symbol_t s, hsa_executable_symbol_info_t what,
                                    void *out) {
  if (s.handle & SYMBOL_VARIABLE)
    return variable_get_info((const Variable *)(uintptr_t)(s.handle & ~(uint64_t)SYMBOL_VARIABLE),
                             what, out);
  Kernel *k = (Kernel *)(uintptr_t)s.handle;
  if (!k)
    return HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL;
  if (symbol_common_info(HSA_SYMBOL_KIND_KERNEL, k->name, what, out))
    return HSA_STATUS_SUCCESS;
  switch ((int)what) {
  case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT:
    *(uint64_t *)out = (uint64_t)(uintptr_t)k;
    break;
  case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE:
    *(uint32_t *)out = kd_word(k, KD_KERNARG);
    break;
  case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE:
    *(uint32_t *)out = kd_word(k, KD_GROUP);
    break;
  case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE:
    *(uint32_t *)out = kd_word(k, KD_PRIVATE);
    break;
  default:
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  return HSA_STATUS_SUCCESS;
}

/* ---- the hardware ---------------------------------------------------------------- */

/* The device runtime's CPU build: the position it reads, its entry. */
struct nano_kernel_ctx {
  uint32_t thread[3], block[3], block_dim[3], grid_dim[3];
  void *shared;
  uint32_t shared_bytes, reserved;
};
extern "C" {
__thread const struct nano_kernel_ctx *__nano_kctx;
void __nano_dh_access(void *desc, uint64_t site, uint64_t addr, uint32_t size, uint32_t space);
}


static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t kernarg_u64(const hsa_kernel_dispatch_packet_t *p, uint32_t at) {
  uint64_t v;
  memcpy(&v, (const char *)p->kernarg_address + at, sizeof v);
  return v;
}

/* CUs of the stand-in GPU (the units of block times). */
#define FAKE_CUS 4

/* The device's clock for block times, in ns (the GPU build reads
 * s_memrealtime; only the spacing of a dispatch's blocks is used). */
static uint64_t device_clock(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The memory of module variable `name` of executable e, or NULL when e has
 * none; one of another size is a fault. */
static void *variable_of(const Executable *e, const char *name, uint64_t size) {
  for (const Variable *v = e->variables; v; v = v->next)
    if (!strcmp(v->name, name)) {
      if (v->size != size)
        fault("variable %s: %llu bytes, the emulated kernel reads %llu", name,
              (unsigned long long)v->size, (unsigned long long)size);
      return v->mem;
    }
  return NULL;
}

/* HIP's copy kernels (ROCclr's blit program over the device libraries'
 * __amd_copyBuffer and __amd_copyBufferAligned, opencl.bc), each work-item
 * id below the grid's x: arguments src, dst, srcOrigin, dstOrigin, size
 * (in units), and remain (unaligned: bytes of the last unit, 8 = a byte
 * each) or alignment (16: four words a unit, else one). */
static void emulate_blit_copy(int aligned, const hsa_kernel_dispatch_packet_t *p) {
  const unsigned char *src = (const unsigned char *)(uintptr_t)kernarg_u64(p, 0);
  unsigned char *dst = (unsigned char *)(uintptr_t)kernarg_u64(p, 8);
  uint64_t src_origin = kernarg_u64(p, 16), dst_origin = kernarg_u64(p, 24);
  uint64_t size = kernarg_u64(p, 32);
  uint32_t last;
  memcpy(&last, (const char *)p->kernarg_address + 40, sizeof last);
  for (uint64_t id = 0; id < p->grid_size_x && id < size; id++) {
    if (aligned) {
      uint64_t unit = last == 16 ? 16 : 4;
      memcpy(dst + (id + dst_origin) * unit, src + (id + src_origin) * unit, unit);
    } else if (last == 8) {
      dst[dst_origin + id] = src[src_origin + id];
    } else if (id + 1 < size) {
      memcpy(dst + dst_origin + 4 * id, src + src_origin + 4 * id, 4);
    } else {
      memcpy(dst + dst_origin + 4 * id, src + src_origin + 4 * id, last);
    }
  }
}

/* HIP's memset kernel (__amd_fillBufferAligned of the device libraries):
 * the widest of its four buffer arguments that is set (ulong, uint, ushort,
 * uchar) gives the element; each work-item id below size writes the
 * pattern's patternSize elements at element id * patternSize + offset. */
static void emulate_blit_fill(const hsa_kernel_dispatch_packet_t *p) {
  static const uint32_t widths[4] = {1, 2, 4, 8};
  int which = 3;
  while (which > 0 && !kernarg_u64(p, 8 * (uint32_t)which))
    which--;
  unsigned char *buf = (unsigned char *)(uintptr_t)kernarg_u64(p, 8 * (uint32_t)which);
  const unsigned char *pattern = (const unsigned char *)(uintptr_t)kernarg_u64(p, 32);
  uint32_t count, width = widths[which];
  memcpy(&count, (const char *)p->kernarg_address + 40, sizeof count);
  uint64_t offset = kernarg_u64(p, 48), size = kernarg_u64(p, 56);
  for (uint64_t id = 0; id < p->grid_size_x && id < size; id++)
    memcpy(buf + (id * count + offset) * width, pattern, (size_t)count * width);
}

/* Runs the emulated kernel k of packet p; returns 0, or faults. */
static void emulate(const Kernel *k, const hsa_kernel_dispatch_packet_t *p) {
  /* HIP's own: a cooperative launch's global wave sync set up first (the
   * stand-in's waves never wait on it), device-to-device copies */
  if (!strcmp(k->name, "__amd_rocclr_gwsInit.kd"))
    return;
  if (!strcmp(k->name, "__amd_rocclr_copyBuffer.kd") ||
      !strcmp(k->name, "__amd_rocclr_copyBufferAligned.kd")) {
    emulate_blit_copy(strstr(k->name, "Aligned") != NULL, p);
    return;
  }
  if (!strcmp(k->name, "__amd_rocclr_fillBufferAligned.kd")) {
    emulate_blit_fill(p);
    return;
  }
  int twin = !strncmp(k->name, "__nano_twin_", 12);
  int axpy = strstr(k->name, "axpy") != NULL, merged = strstr(k->name, "merged4") != NULL;
  if (!axpy && !merged && !strstr(k->name, "dyn"))
    fault("%s: a kernel the stand-in does not emulate", k->name);
  uint32_t wg[3] = {p->workgroup_size_x, p->workgroup_size_y, p->workgroup_size_z};
  uint32_t grid[3] = {p->grid_size_x, p->grid_size_y, p->grid_size_z};
  uint32_t blocks[3];
  for (int i = 0; i < 3; i++) {
    if (!wg[i] || !grid[i])
      fault("%s: a zero grid or workgroup size", k->name);
    blocks[i] = (grid[i] + wg[i] - 1) / wg[i];
  }
  uint32_t threads = wg[0] * wg[1] * wg[2];
  /* the ABI's explicit arguments: axpy(float, const float*, float*, int) at
   * 0, 8, 16, 24 (a twin's buffer at 32); dyn(int*) at 0 (buffer at 8);
   * merged4(float*, const float*, int) at 0, 8, 16 (buffer at 24) */
  void *desc = twin ? (void *)(uintptr_t)kernarg_u64(p, axpy ? 32 : merged ? 24 : 8) : NULL;
  int dyn = !axpy && !merged;
  uint32_t dyn_lds = p->group_segment_size - kd_word(k, KD_GROUP);
  if (dyn && dyn_lds < threads * 4)
    fault("%s: %u bytes of dynamic LDS for %u threads' words", k->name, dyn_lds, threads);
  int *lds = dyn ? (int *)calloc(threads, sizeof(int)) : NULL;
  /* kernels_variable.hip's axpy: y += axpy_bias, axpy_count += n (its
   * executable's copies of them) */
  const float *bias = (const float *)variable_of(k->exe, "axpy_bias", sizeof(float));
  int *count = (int *)variable_of(k->exe, "axpy_count", sizeof(int));
  struct nano_kernel_ctx ctx = {};
  memcpy(ctx.block_dim, wg, sizeof wg);
  memcpy(ctx.grid_dim, blocks, sizeof blocks);
  __nano_kctx = &ctx;
  for (uint32_t b = 0; b < blocks[0] * blocks[1] * blocks[2]; b++) {
    ctx.block[0] = b % blocks[0], ctx.block[1] = b / blocks[0] % blocks[1];
    ctx.block[2] = b / (blocks[0] * blocks[1]);
    uint64_t *stamps = desc ? fake_block_entry((const char *)desc, b, ctx.block) : NULL;
    if (stamps) {
      stamps[NANO_DH_BLOCK_START] = device_clock();
      stamps[NANO_DH_BLOCK_UNIT] = b % FAKE_CUS;
    }
    for (uint32_t t = 0; t < threads; t++) {
      ctx.thread[0] = t % wg[0], ctx.thread[1] = t / wg[0] % wg[1], ctx.thread[2] = t / (wg[0] * wg[1]);
      if (axpy) {
        float a;
        int n;
        memcpy(&a, p->kernarg_address, sizeof a);
        memcpy(&n, (const char *)p->kernarg_address + 24, sizeof n);
        const float *x = (const float *)(uintptr_t)kernarg_u64(p, 8);
        float *y = (float *)(uintptr_t)kernarg_u64(p, 16);
        int i = (int)(ctx.block[0] * wg[0] + ctx.thread[0]);
        if (i >= n)
          continue;
        if (desc) {
          __nano_dh_access(desc, fake_site(0), (uint64_t)(uintptr_t)&x[i], 4, NANO_DH_AS_GLOBAL);
          __nano_dh_access(desc, fake_site(1), (uint64_t)(uintptr_t)&y[i], 4, NANO_DH_AS_GLOBAL);
          __nano_dh_access(desc, fake_site(2), (uint64_t)(uintptr_t)&y[i], 4, NANO_DH_AS_GLOBAL);
        }
        y[i] = a * x[i] + y[i] + (bias ? *bias : 0.0f);
        if (i == 0 && count)
          *count += n;
      } else if (merged) {
        float *out = (float *)(uintptr_t)kernarg_u64(p, 0);
        const float *in = (const float *)(uintptr_t)kernarg_u64(p, 8);
        int n;
        memcpy(&n, (const char *)p->kernarg_address + 16, sizeof n);
        int i = (int)(ctx.block[0] * wg[0] + ctx.thread[0]);
        if (i >= n)
          continue;
        for (int j = 0; desc && j < 4; j++)
          __nano_dh_access(desc, fake_site(4 + j), (uint64_t)(uintptr_t)&in[4 * i + j], 4,
                           NANO_DH_AS_GLOBAL);
        if (desc)
          __nano_dh_access(desc, fake_site(8), (uint64_t)(uintptr_t)&out[i], 4, NANO_DH_AS_GLOBAL);
        out[i] = in[4 * i] + in[4 * i + 1] + in[4 * i + 2] + in[4 * i + 3];
      } else {
        lds[t] = (int)t;
      }
    }
    if (dyn) {
      int *out = (int *)(uintptr_t)kernarg_u64(p, 0);
      for (uint32_t t = 0; t < threads; t++) {
        ctx.thread[0] = t % wg[0];
        if (desc)
          __nano_dh_access(desc, fake_site(3), (uint64_t)(uintptr_t)&out[t], 4, NANO_DH_AS_GLOBAL);
        out[t] = lds[threads - 1 - t];
      }
    }
    if (stamps)
      stamps[NANO_DH_BLOCK_END] = device_clock();
  }
  __nano_kctx = NULL;
  free(lds);
}

struct Handler {
  hsa_amd_queue_intercept_handler fn;
  void *data;
};
struct Queue {
  hsa_queue_t q; /* first: the program's hsa_queue_t* is this */
  uint64_t read_index, write_index;
  int id, profiling, stop;
  Queue *hw; /* an intercept queue's hardware queue, else NULL */
  Handler handlers[MAX_HANDLERS];
  int nhandlers;
  pthread_mutex_t submit; /* an intercept queue's submissions, one at a time */
  pthread_t thread;
};

static int g_queue_ids;

static Queue *queue_of(const hsa_queue_t *q) {
  if (!q)
    fault("queue NULL");
  return (Queue *)(uintptr_t)q;
}

static hsa_kernel_dispatch_packet_t *slot(Queue *q, uint64_t i) {
  return (hsa_kernel_dispatch_packet_t *)q->q.base_address + (i % q->q.size);
}
static int packet_type(const void *pkt) {
  return (__atomic_load_n((const uint16_t *)pkt, __ATOMIC_ACQUIRE) >> HSA_PACKET_HEADER_TYPE) &
         ((1 << HSA_PACKET_HEADER_WIDTH_TYPE) - 1);
}

static void log_dispatch(Queue *q, const Kernel *k, const hsa_kernel_dispatch_packet_t *p,
                         uint64_t start, uint64_t end) {
  const char *path = getenv("FAKE_HSA_LOG");
  if (!path)
    return;
  pthread_mutex_lock(&g_log_lock);
  FILE *f = fopen(path, "a");
  if (!f)
    fault("FAKE_HSA_LOG=%s: %s", path, strerror(errno));
  uint32_t n = kd_word(k, KD_KERNARG);
  fprintf(f, "dispatch queue=%d kernel=%.*s image=%016llx grid=%u,%u,%u wg=%u,%u,%u group=%u "
             "private=%u signal=%d start=%llu end=%llu kernarg=",
          q->id, (int)strlen(k->name) - 3, k->name, (unsigned long long)k->image, p->grid_size_x, p->grid_size_y, p->grid_size_z,
          p->workgroup_size_x, p->workgroup_size_y, p->workgroup_size_z, p->group_segment_size,
          p->private_segment_size, p->completion_signal.handle != 0,
          (unsigned long long)start, (unsigned long long)end);
  for (uint32_t i = 0; i < n; i++)
    fprintf(f, "%02x", ((const unsigned char *)p->kernarg_address)[i]);
  fputc('\n', f);
  if (fclose(f) != 0)
    fault("FAKE_HSA_LOG=%s: %s", path, strerror(errno));
  pthread_mutex_unlock(&g_log_lock);
}

static void run_dispatch(Queue *q, const hsa_kernel_dispatch_packet_t *p) {
  Kernel *k = kernel_of(p->kernel_object);
  if (!k)
    fault("queue %d: kernel object 0x%llx is no loaded kernel", q->id,
          (unsigned long long)p->kernel_object);
  uint32_t kernarg = kd_word(k, KD_KERNARG);
  if (kernarg && !gpu_visible(p->kernarg_address, kernarg, KERNARG_POOL))
    fault("%s: kernarg segment %p (%u bytes) is not kernarg memory the GPU may read", k->name,
          p->kernarg_address, kernarg);
  if (p->group_segment_size < kd_word(k, KD_GROUP) || p->private_segment_size < kd_word(k, KD_PRIVATE))
    fault("%s: segments %u/%u below the kernel's %u/%u", k->name, p->group_segment_size,
          p->private_segment_size, kd_word(k, KD_GROUP), kd_word(k, KD_PRIVATE));
  uint64_t start = agent_ticks();
  emulate(k, p);
  const char *us = getenv("FAKE_HSA_KERNEL_US");
  long wait_us = us ? atol(us) : 200;
  while (ticks_ns(agent_ticks()) - ticks_ns(start) < (uint64_t)wait_us * 1000)
    usleep(50);
  uint64_t end = agent_ticks();
  log_dispatch(q, k, p, ticks_ns(start), ticks_ns(end));
  if (p->completion_signal.handle) {
    if (q->profiling)
      signal_stamp(p->completion_signal, start, end);
    signal_sub(p->completion_signal, 1);
  }
}

static void run_barrier(Queue *q, const hsa_barrier_and_packet_t *p) {
  uint64_t start = agent_ticks();
  for (int i = 0; i < 5; i++)
    if (p->dep_signal[i].handle)
      signal_wait(p->dep_signal[i], HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX, HSA_WAIT_STATE_BLOCKED);
  if (p->completion_signal.handle) {
    if (q->profiling) /* as any packet's, a barrier's times in its signal */
      signal_stamp(p->completion_signal, start, agent_ticks());
    signal_sub(p->completion_signal, 1);
  }
}

static void *processor_main(void *arg) {
  Queue *q = (Queue *)arg;
  Signal *bell = sig(q->q.doorbell_signal);
  for (;;) {
    uint64_t i = __atomic_load_n(&q->read_index, __ATOMIC_ACQUIRE);
    pthread_mutex_lock(&bell->m);
    while (!q->stop && (bell->value < (int64_t)i || packet_type(slot(q, i)) == HSA_PACKET_TYPE_INVALID)) {
      struct timespec t;
      clock_gettime(CLOCK_REALTIME, &t);
      t.tv_nsec += 5000000;
      if (t.tv_nsec >= 1000000000L)
        t.tv_sec++, t.tv_nsec -= 1000000000L;
      pthread_cond_timedwait(&bell->c, &bell->m, &t);
    }
    int stop = q->stop;
    pthread_mutex_unlock(&bell->m);
    if (stop)
      return NULL;
    hsa_kernel_dispatch_packet_t *p = slot(q, i);
    int type = packet_type(p);
    if (type == HSA_PACKET_TYPE_KERNEL_DISPATCH)
      run_dispatch(q, p);
    else if (type == HSA_PACKET_TYPE_BARRIER_AND)
      run_barrier(q, (hsa_barrier_and_packet_t *)p);
    else
      fault("queue %d: packet type %d", q->id, type);
    __atomic_store_n(&p->header, (uint16_t)(HSA_PACKET_TYPE_INVALID << HSA_PACKET_HEADER_TYPE),
                     __ATOMIC_RELEASE);
    __atomic_store_n(&q->read_index, i + 1, __ATOMIC_RELEASE);
  }
}

static Queue *queue_new(uint32_t size, int intercept) {
  if (!size || (size & (size - 1)) || size > 4096)
    return NULL;
  Queue *q = (Queue *)calloc(1, sizeof *q);
  void *ring = NULL;
  hsa_signal_t bell;
  if (!q || posix_memalign(&ring, 4096, (size_t)size * PACKET_BYTES) ||
      signal_create(0, 0, NULL, &bell) != HSA_STATUS_SUCCESS) {
    free(q);
    free(ring);
    return NULL;
  }
  for (uint32_t i = 0; i < size; i++)
    ((hsa_kernel_dispatch_packet_t *)ring)[i].header = HSA_PACKET_TYPE_INVALID << HSA_PACKET_HEADER_TYPE;
  q->q.type = HSA_QUEUE_TYPE_MULTI;
  q->q.features = HSA_QUEUE_FEATURE_KERNEL_DISPATCH;
  q->q.base_address = ring;
  q->q.doorbell_signal = bell;
  q->q.size = size;
  q->q.id = (uint64_t)__atomic_add_fetch(&g_queue_ids, 1, __ATOMIC_RELAXED);
  q->id = (int)q->q.id;
  pthread_mutex_init(&q->submit, NULL);
  if (intercept)
    sig(bell)->doorbell_of = q;
  else if (pthread_create(&q->thread, NULL, processor_main, q) != 0)
    return NULL;
  return q;
}

/* Writes packets into hardware queue hw and rings it. */
static void hw_write(Queue *hw, const void *pkts, uint64_t n) {
  for (uint64_t j = 0; j < n; j++) {
    uint64_t i = __atomic_fetch_add(&hw->write_index, 1, __ATOMIC_ACQ_REL);
    while (i - __atomic_load_n(&hw->read_index, __ATOMIC_ACQUIRE) >= hw->q.size)
      usleep(10);
    const unsigned char *src = (const unsigned char *)pkts + j * PACKET_BYTES;
    unsigned char *dst = (unsigned char *)slot(hw, i);
    memcpy(dst + 2, src + 2, PACKET_BYTES - 2);
    uint16_t header;
    memcpy(&header, src, sizeof header);
    __atomic_store_n((uint16_t *)dst, header, __ATOMIC_RELEASE);
    signal_store(hw->q.doorbell_signal, (hsa_signal_value_t)i);
  }
}

/* The submission in progress on this thread: which queue, which handler. */
static __thread Queue *t_submit_queue;
static __thread int t_submit_level;

static void intercept_writer(const void *pkts, uint64_t n) {
  Queue *q = t_submit_queue;
  int level = ++t_submit_level;
  if (level < q->nhandlers)
    q->handlers[level].fn(pkts, n, 0, q->handlers[level].data, intercept_writer);
  else
    hw_write(q->hw, pkts, n);
  t_submit_level = level - 1;
}

/* An intercept queue's doorbell was rung: its new packets through the
 * handlers, on this thread. */
static void queue_rung(Queue *q) {
  pthread_mutex_lock(&q->submit);
  for (;;) {
    uint64_t first = q->read_index, end = first;
    while (end < __atomic_load_n(&q->write_index, __ATOMIC_ACQUIRE) &&
           packet_type(slot(q, end)) != HSA_PACKET_TYPE_INVALID)
      end++;
    if (end == first)
      break;
    unsigned char *batch = (unsigned char *)malloc((size_t)(end - first) * PACKET_BYTES);
    if (!batch)
      fault("out of memory");
    for (uint64_t i = first; i < end; i++)
      memcpy(batch + (i - first) * PACKET_BYTES, slot(q, i), PACKET_BYTES);
    Queue *outer = t_submit_queue;
    int outer_level = t_submit_level;
    t_submit_queue = q, t_submit_level = 0;
    if (q->nhandlers)
      q->handlers[0].fn(batch, end - first, first, q->handlers[0].data, intercept_writer);
    else
      hw_write(q->hw, batch, end - first);
    t_submit_queue = outer, t_submit_level = outer_level;
    free(batch);
    for (uint64_t i = first; i < end; i++)
      __atomic_store_n(&slot(q, i)->header,
                       (uint16_t)(HSA_PACKET_TYPE_INVALID << HSA_PACKET_HEADER_TYPE), __ATOMIC_RELEASE);
    __atomic_store_n(&q->read_index, end, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&q->submit);
}

static hsa_status_t queue_create(hsa_agent_t agent, uint32_t size, hsa_queue_type32_t type,
                                 void (*cb)(hsa_status_t, hsa_queue_t *, void *), void *data,
                                 uint32_t priv, uint32_t group, hsa_queue_t **out) {
  (void)type, (void)cb, (void)data, (void)priv, (void)group;
  if (agent.handle != GPU_AGENT)
    return HSA_STATUS_ERROR_INVALID_AGENT;
  Queue *q = queue_new(size, 0);
  if (!q)
    return HSA_STATUS_ERROR_INVALID_QUEUE_CREATION;
  *out = &q->q;
  return HSA_STATUS_SUCCESS;
}
static hsa_status_t intercept_create(hsa_agent_t agent, uint32_t size, hsa_queue_type32_t type,
                                     void (*cb)(hsa_status_t, hsa_queue_t *, void *), void *data,
                                     uint32_t priv, uint32_t group, hsa_queue_t **out) {
  hsa_queue_t *hw;
  hsa_status_t rc = queue_create(agent, size, type, cb, data, priv, group, &hw);
  if (rc != HSA_STATUS_SUCCESS)
    return rc;
  Queue *q = queue_new(size, 1);
  if (!q)
    return HSA_STATUS_ERROR_INVALID_QUEUE_CREATION;
  q->hw = queue_of(hw);
  *out = &q->q;
  return HSA_STATUS_SUCCESS;
}
static hsa_status_t intercept_register(hsa_queue_t *queue, hsa_amd_queue_intercept_handler fn,
                                       void *data) {
  Queue *q = queue_of(queue);
  if (!q->hw || !fn || q->nhandlers == MAX_HANDLERS)
    return HSA_STATUS_ERROR_INVALID_QUEUE;
  q->handlers[q->nhandlers++] = {fn, data};
  return HSA_STATUS_SUCCESS;
}
static hsa_status_t queue_destroy(hsa_queue_t *queue) {
  Queue *q = queue_of(queue);
  if (q->hw)
    queue_destroy(&q->hw->q);
  else {
    Signal *bell = sig(q->q.doorbell_signal);
    pthread_mutex_lock(&bell->m);
    q->stop = 1;
    pthread_cond_broadcast(&bell->c);
    pthread_mutex_unlock(&bell->m);
    pthread_join(q->thread, NULL);
  }
  signal_destroy(q->q.doorbell_signal);
  free(q->q.base_address);
  free(q);
  return HSA_STATUS_SUCCESS;
}
static uint64_t load_read_index(const hsa_queue_t *q) {
  return __atomic_load_n(&queue_of(q)->read_index, __ATOMIC_ACQUIRE);
}
static uint64_t load_write_index(const hsa_queue_t *q) {
  return __atomic_load_n(&queue_of(q)->write_index, __ATOMIC_ACQUIRE);
}
static void store_write_index(const hsa_queue_t *q, uint64_t v) {
  __atomic_store_n(&queue_of(q)->write_index, v, __ATOMIC_RELEASE);
}
static uint64_t add_write_index(const hsa_queue_t *q, uint64_t v) {
  return __atomic_fetch_add(&queue_of(q)->write_index, v, __ATOMIC_ACQ_REL);
}
static uint64_t cas_write_index(const hsa_queue_t *q, uint64_t expected, uint64_t v) {
  __atomic_compare_exchange_n(&queue_of(q)->write_index, &expected, v, 0, __ATOMIC_ACQ_REL,
                              __ATOMIC_ACQUIRE);
  return expected;
}

static hsa_status_t profiling_enable(hsa_queue_t *queue, int on) {
  Queue *q = queue_of(queue);
  (q->hw ? q->hw : q)->profiling = on;
  return HSA_STATUS_SUCCESS;
}
static hsa_status_t dispatch_time(hsa_agent_t agent, hsa_signal_t h,
                                  hsa_amd_profiling_dispatch_time_t *t) {
  if (agent.handle != GPU_AGENT)
    return HSA_STATUS_ERROR_INVALID_AGENT;
  return t ? signal_times(h, &t->start, &t->end) : HSA_STATUS_ERROR_INVALID_ARGUMENT;
}
static hsa_status_t tick_to_system(hsa_agent_t agent, uint64_t tick, uint64_t *out) {
  if (agent.handle != GPU_AGENT || tick < TICK_BASE)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  *out = ticks_ns(tick);
  return HSA_STATUS_SUCCESS;
}

/* ---- the table, init and tools ------------------------------------------------------ */

static CoreApiTable g_core;
static AmdExtTable g_amd;
static FinalizerExtTable g_fin;
static ImageExtTable g_img;
static HsaApiTable g_root;
static int g_init_count;
static void *g_tools[MAX_TOOLS];
static int g_ntools;

static hsa_status_t init_impl(void);
static hsa_status_t shut_down_impl(void);

static void table_fill(void) {
  g_root.version = {HSA_API_TABLE_MAJOR_VERSION, sizeof(HsaApiTable), HSA_API_TABLE_STEP_VERSION, 0};
  g_core.version = {HSA_CORE_API_TABLE_MAJOR_VERSION, sizeof(CoreApiTable),
                    HSA_CORE_API_TABLE_STEP_VERSION, 0};
  g_amd.version = {HSA_AMD_EXT_API_TABLE_MAJOR_VERSION, sizeof(AmdExtTable),
                   HSA_AMD_EXT_API_TABLE_STEP_VERSION, 0};
  g_fin.version = {HSA_FINALIZER_API_TABLE_MAJOR_VERSION, sizeof(FinalizerExtTable),
                   HSA_FINALIZER_API_TABLE_STEP_VERSION, 0};
  g_img.version = {HSA_IMAGE_API_TABLE_MAJOR_VERSION, sizeof(ImageExtTable),
                   HSA_IMAGE_API_TABLE_STEP_VERSION, 0};
  g_root.core_ = &g_core;
  g_root.amd_ext_ = &g_amd;
  g_root.finalizer_ext_ = &g_fin;
  g_root.image_ext_ = &g_img;
  g_core.hsa_init_fn = init_impl;
  g_core.hsa_shut_down_fn = shut_down_impl;
  g_core.hsa_system_get_info_fn = system_get_info;
  g_core.hsa_iterate_agents_fn = iterate_agents;
  g_core.hsa_agent_get_info_fn = agent_get_info;
  g_core.hsa_agent_iterate_isas_fn = agent_iterate_isas;
  g_core.hsa_isa_get_info_alt_fn = isa_get_info;
  g_core.hsa_status_string_fn = status_string;
  g_core.hsa_queue_create_fn = queue_create;
  g_core.hsa_queue_destroy_fn = queue_destroy;
  g_core.hsa_queue_load_read_index_scacquire_fn = load_read_index;
  g_core.hsa_queue_load_read_index_relaxed_fn = load_read_index;
  g_core.hsa_queue_load_write_index_scacquire_fn = load_write_index;
  g_core.hsa_queue_load_write_index_relaxed_fn = load_write_index;
  g_core.hsa_queue_store_write_index_relaxed_fn = store_write_index;
  g_core.hsa_queue_store_write_index_screlease_fn = store_write_index;
  g_core.hsa_queue_add_write_index_relaxed_fn = add_write_index;
  g_core.hsa_queue_add_write_index_scacq_screl_fn = add_write_index;
  g_core.hsa_queue_add_write_index_scacquire_fn = add_write_index;
  g_core.hsa_queue_add_write_index_screlease_fn = add_write_index;
  g_core.hsa_queue_cas_write_index_scacq_screl_fn = cas_write_index;
  g_core.hsa_queue_cas_write_index_relaxed_fn = cas_write_index;
  g_core.hsa_signal_create_fn = signal_create;
  g_core.hsa_signal_destroy_fn = signal_destroy;
  g_core.hsa_signal_load_relaxed_fn = signal_load;
  g_core.hsa_signal_load_scacquire_fn = signal_load;
  g_core.hsa_signal_store_relaxed_fn = signal_store;
  g_core.hsa_signal_store_screlease_fn = signal_store;
  g_core.hsa_signal_silent_store_relaxed_fn = signal_store;
  g_core.hsa_signal_silent_store_screlease_fn = signal_store;
  g_core.hsa_signal_wait_relaxed_fn = signal_wait;
  g_core.hsa_signal_wait_scacquire_fn = signal_wait;
  g_core.hsa_signal_add_relaxed_fn = signal_add;
  g_core.hsa_signal_add_screlease_fn = signal_add;
  g_core.hsa_signal_add_scacq_screl_fn = signal_add;
  g_core.hsa_signal_subtract_relaxed_fn = signal_sub;
  g_core.hsa_signal_subtract_screlease_fn = signal_sub;
  g_core.hsa_signal_subtract_scacq_screl_fn = signal_sub;
  g_core.hsa_code_object_reader_create_from_memory_fn = reader_from_memory;
  g_core.hsa_code_object_reader_create_from_file_fn = reader_from_file;
  g_core.hsa_code_object_reader_destroy_fn = reader_destroy;
  g_core.hsa_executable_create_alt_fn = executable_create;
  g_core.hsa_executable_load_agent_code_object_fn = load_code_object;
  g_core.hsa_executable_freeze_fn = executable_freeze;
  g_core.hsa_executable_destroy_fn = executable_destroy;
  g_core.hsa_executable_get_symbol_by_name_fn = get_symbol_by_name;
  g_core.hsa_executable_iterate_symbols_fn = iterate_symbols;
  g_core.hsa_executable_symbol_get_info_fn = symbol_get_info;
  g_amd.hsa_amd_profiling_set_profiler_enabled_fn = profiling_enable;
  g_amd.hsa_amd_profiling_get_dispatch_time_fn = dispatch_time;
  g_amd.hsa_amd_profiling_convert_tick_to_system_domain_fn = tick_to_system;
  g_amd.hsa_amd_signal_async_handler_fn = signal_async_handler;
  g_amd.hsa_amd_signal_create_fn = amd_signal_create;
  g_amd.hsa_amd_agent_iterate_memory_pools_fn = iterate_pools;
  g_amd.hsa_amd_memory_pool_get_info_fn = pool_get_info;
  g_amd.hsa_amd_memory_pool_allocate_fn = pool_allocate;
  g_amd.hsa_amd_memory_pool_free_fn = pool_free;
  g_amd.hsa_amd_agents_allow_access_fn = allow_access;
  g_amd.hsa_amd_agent_memory_pool_get_info_fn = agent_pool_get_info;
  g_amd.hsa_amd_memory_lock_fn = memory_lock;
  g_amd.hsa_amd_memory_lock_to_pool_fn = memory_lock_to_pool;
  g_amd.hsa_amd_memory_unlock_fn = memory_unlock;
  g_amd.hsa_amd_profiling_async_copy_enable_fn = copy_profiling_enable;
  g_amd.hsa_amd_profiling_get_async_copy_time_fn = copy_time;
  g_amd.hsa_amd_memory_async_copy_fn = async_copy;
  g_amd.hsa_amd_memory_async_copy_rect_fn = async_copy_rect;
  g_amd.hsa_amd_queue_intercept_create_fn = intercept_create;
  g_amd.hsa_amd_queue_intercept_register_fn = intercept_register;
}

typedef bool (*on_load_fn)(HsaApiTable *, uint64_t, uint64_t, const char *const *);

/* ROCr's LoadTools: HSA_TOOLS_LIB, space-separated; a library without
 * OnLoad, or whose OnLoad returns false, is closed and counted failed. */
static void tools_load(void) {
  const char *env = getenv("HSA_TOOLS_LIB");
  if (!env)
    return;
  char *names = strdup(env), *save = NULL;
  const char *failed[MAX_TOOLS];
  uint64_t nfailed = 0;
  for (char *n = strtok_r(names, " ", &save); n && g_ntools < MAX_TOOLS; n = strtok_r(NULL, " ", &save)) {
    void *h = dlopen(n, RTLD_NOW);
    if (!h) {
      fprintf(stderr, "stand-in HSA: tool %s: %s\n", n, dlerror());
      continue;
    }
    on_load_fn load = (on_load_fn)dlsym(h, "OnLoad");
    if (!load || !load(&g_root, g_root.version.major_id, nfailed, failed)) {
      if (nfailed < MAX_TOOLS)
        failed[nfailed++] = n;
      dlclose(h);
      continue;
    }
    g_tools[g_ntools++] = h;
  }
  /* names stay: failed[] points into them */
}

static hsa_status_t init_impl(void) {
  if (g_init_count++ == 0)
    tools_load();
  return HSA_STATUS_SUCCESS;
}
static hsa_status_t shut_down_impl(void) {
  if (g_init_count == 0)
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (--g_init_count == 0)
    for (int i = g_ntools - 1; i >= 0; i--) {
      void (*unload)(void) = (void (*)(void))dlsym(g_tools[i], "OnUnload");
      if (unload)
        unload();
    }
  return HSA_STATUS_SUCCESS;
}

__attribute__((constructor)) static void standin_init(void) { table_fill(); }

/* ---- the exported API: through the table, as ROCr's ---------------------------------- */

EXPORT hsa_status_t hsa_init(void) { return g_core.hsa_init_fn(); }
EXPORT hsa_status_t hsa_shut_down(void) { return g_core.hsa_shut_down_fn(); }
EXPORT hsa_status_t hsa_system_get_info(hsa_system_info_t a, void *b) {
  return g_core.hsa_system_get_info_fn(a, b);
}
EXPORT hsa_status_t hsa_iterate_agents(hsa_status_t (*cb)(hsa_agent_t, void *), void *d) {
  return g_core.hsa_iterate_agents_fn(cb, d);
}
EXPORT hsa_status_t hsa_agent_get_info(hsa_agent_t a, hsa_agent_info_t b, void *c) {
  return g_core.hsa_agent_get_info_fn(a, b, c);
}
EXPORT hsa_status_t hsa_agent_iterate_isas(hsa_agent_t a, hsa_status_t (*cb)(hsa_isa_t, void *),
                                           void *d) {
  return g_core.hsa_agent_iterate_isas_fn(a, cb, d);
}
EXPORT hsa_status_t hsa_isa_get_info_alt(hsa_isa_t a, hsa_isa_info_t b, void *c) {
  return g_core.hsa_isa_get_info_alt_fn(a, b, c);
}
EXPORT hsa_status_t hsa_status_string(hsa_status_t a, const char **b) {
  return g_core.hsa_status_string_fn(a, b);
}
EXPORT hsa_status_t hsa_queue_create(hsa_agent_t a, uint32_t b, hsa_queue_type32_t c,
                                     void (*d)(hsa_status_t, hsa_queue_t *, void *), void *e,
                                     uint32_t f, uint32_t g, hsa_queue_t **h) {
  return g_core.hsa_queue_create_fn(a, b, c, d, e, f, g, h);
}
EXPORT hsa_status_t hsa_queue_destroy(hsa_queue_t *q) { return g_core.hsa_queue_destroy_fn(q); }
EXPORT uint64_t hsa_queue_load_read_index_scacquire(const hsa_queue_t *q) {
  return g_core.hsa_queue_load_read_index_scacquire_fn(q);
}
EXPORT uint64_t hsa_queue_load_write_index_relaxed(const hsa_queue_t *q) {
  return g_core.hsa_queue_load_write_index_relaxed_fn(q);
}
EXPORT uint64_t hsa_queue_add_write_index_relaxed(const hsa_queue_t *q, uint64_t v) {
  return g_core.hsa_queue_add_write_index_relaxed_fn(q, v);
}
EXPORT uint64_t hsa_queue_add_write_index_screlease(const hsa_queue_t *q, uint64_t v) {
  return g_core.hsa_queue_add_write_index_screlease_fn(q, v);
}
EXPORT hsa_status_t hsa_signal_create(hsa_signal_value_t a, uint32_t b, const hsa_agent_t *c,
                                      hsa_signal_t *d) {
  return g_core.hsa_signal_create_fn(a, b, c, d);
}
EXPORT hsa_status_t hsa_signal_destroy(hsa_signal_t s) { return g_core.hsa_signal_destroy_fn(s); }
EXPORT hsa_signal_value_t hsa_signal_load_scacquire(hsa_signal_t s) {
  return g_core.hsa_signal_load_scacquire_fn(s);
}
EXPORT void hsa_signal_store_relaxed(hsa_signal_t s, hsa_signal_value_t v) {
  g_core.hsa_signal_store_relaxed_fn(s, v);
}
EXPORT void hsa_signal_store_screlease(hsa_signal_t s, hsa_signal_value_t v) {
  g_core.hsa_signal_store_screlease_fn(s, v);
}
EXPORT hsa_signal_value_t hsa_signal_wait_scacquire(hsa_signal_t s, hsa_signal_condition_t c,
                                                    hsa_signal_value_t v, uint64_t t,
                                                    hsa_wait_state_t w) {
  return g_core.hsa_signal_wait_scacquire_fn(s, c, v, t, w);
}
EXPORT hsa_status_t hsa_code_object_reader_create_from_memory(const void *a, size_t b,
                                                              hsa_code_object_reader_t *c) {
  return g_core.hsa_code_object_reader_create_from_memory_fn(a, b, c);
}
EXPORT hsa_status_t hsa_code_object_reader_create_from_file(hsa_file_t a,
                                                            hsa_code_object_reader_t *b) {
  return g_core.hsa_code_object_reader_create_from_file_fn(a, b);
}
EXPORT hsa_status_t hsa_code_object_reader_destroy(hsa_code_object_reader_t r) {
  return g_core.hsa_code_object_reader_destroy_fn(r);
}
EXPORT hsa_status_t hsa_executable_create_alt(hsa_profile_t a, hsa_default_float_rounding_mode_t b,
                                              const char *c, hsa_executable_t *d) {
  return g_core.hsa_executable_create_alt_fn(a, b, c, d);
}
EXPORT hsa_status_t hsa_executable_load_agent_code_object(hsa_executable_t a, hsa_agent_t b,
                                                          hsa_code_object_reader_t c,
                                                          const char *d,
                                                          hsa_loaded_code_object_t *e) {
  return g_core.hsa_executable_load_agent_code_object_fn(a, b, c, d, e);
}
EXPORT hsa_status_t hsa_executable_freeze(hsa_executable_t a, const char *b) {
  return g_core.hsa_executable_freeze_fn(a, b);
}
EXPORT hsa_status_t hsa_executable_destroy(hsa_executable_t e) {
  return g_core.hsa_executable_destroy_fn(e);
}
EXPORT hsa_status_t hsa_executable_get_symbol_by_name(hsa_executable_t a, const char *b,
                                                      const hsa_agent_t *c,
                                                      hsa_executable_symbol_t *d) {
  return g_core.hsa_executable_get_symbol_by_name_fn(a, b, c, d);
}
EXPORT hsa_status_t hsa_executable_symbol_get_info(hsa_executable_symbol_t a,
                                                   hsa_executable_symbol_info_t b, void *c) {
  return g_core.hsa_executable_symbol_get_info_fn(a, b, c);
}
EXPORT hsa_status_t hsa_amd_agent_iterate_memory_pools(
    hsa_agent_t a, hsa_status_t (*cb)(hsa_amd_memory_pool_t, void *), void *d) {
  return g_amd.hsa_amd_agent_iterate_memory_pools_fn(a, cb, d);
}
EXPORT hsa_status_t hsa_amd_memory_pool_get_info(hsa_amd_memory_pool_t a,
                                                 hsa_amd_memory_pool_info_t b, void *c) {
  return g_amd.hsa_amd_memory_pool_get_info_fn(a, b, c);
}
EXPORT hsa_status_t hsa_amd_memory_pool_allocate(hsa_amd_memory_pool_t a, size_t b, uint32_t c,
                                                 void **d) {
  return g_amd.hsa_amd_memory_pool_allocate_fn(a, b, c, d);
}
EXPORT hsa_status_t hsa_amd_memory_pool_free(void *p) { return g_amd.hsa_amd_memory_pool_free_fn(p); }
EXPORT hsa_status_t hsa_amd_memory_async_copy(void *a, hsa_agent_t b, const void *c, hsa_agent_t d,
                                              size_t e, uint32_t f, const hsa_signal_t *g,
                                              hsa_signal_t h) {
  return g_amd.hsa_amd_memory_async_copy_fn(a, b, c, d, e, f, g, h);
}
EXPORT hsa_status_t hsa_amd_agents_allow_access(uint32_t a, const hsa_agent_t *b, const uint32_t *c,
                                                const void *d) {
  return g_amd.hsa_amd_agents_allow_access_fn(a, b, c, d);
}
EXPORT hsa_status_t hsa_amd_agent_memory_pool_get_info(hsa_agent_t a, hsa_amd_memory_pool_t b,
                                                       hsa_amd_agent_memory_pool_info_t c,
                                                       void *d) {
  return g_amd.hsa_amd_agent_memory_pool_get_info_fn(a, b, c, d);
}
EXPORT hsa_status_t hsa_amd_memory_lock_to_pool(void *a, size_t b, hsa_agent_t *c, int d,
                                                hsa_amd_memory_pool_t e, uint32_t f, void **g) {
  return g_amd.hsa_amd_memory_lock_to_pool_fn(a, b, c, d, e, f, g);
}
EXPORT hsa_status_t hsa_amd_memory_lock(void *a, size_t b, hsa_agent_t *c, int d, void **e) {
  return g_amd.hsa_amd_memory_lock_fn(a, b, c, d, e);
}
EXPORT hsa_status_t hsa_amd_memory_unlock(void *p) { return g_amd.hsa_amd_memory_unlock_fn(p); }
EXPORT hsa_status_t hsa_amd_profiling_set_profiler_enabled(hsa_queue_t *q, int on) {
  return g_amd.hsa_amd_profiling_set_profiler_enabled_fn(q, on);
}
EXPORT hsa_status_t hsa_amd_profiling_get_dispatch_time(hsa_agent_t a, hsa_signal_t b,
                                                        hsa_amd_profiling_dispatch_time_t *c) {
  return g_amd.hsa_amd_profiling_get_dispatch_time_fn(a, b, c);
}
EXPORT hsa_status_t hsa_amd_signal_async_handler(hsa_signal_t a, hsa_signal_condition_t b,
                                                 hsa_signal_value_t c, hsa_amd_signal_handler d,
                                                 void *e) {
  return g_amd.hsa_amd_signal_async_handler_fn(a, b, c, d, e);
}
EXPORT hsa_status_t hsa_amd_signal_create(hsa_signal_value_t a, uint32_t b, const hsa_agent_t *c,
                                          uint64_t d, hsa_signal_t *e) {
  return g_amd.hsa_amd_signal_create_fn(a, b, c, d, e);
}
EXPORT hsa_signal_value_t hsa_signal_load_relaxed(hsa_signal_t s) {
  return g_core.hsa_signal_load_relaxed_fn(s);
}
EXPORT void hsa_signal_add_relaxed(hsa_signal_t s, hsa_signal_value_t v) {
  g_core.hsa_signal_add_relaxed_fn(s, v);
}
EXPORT void hsa_signal_subtract_relaxed(hsa_signal_t s, hsa_signal_value_t v) {
  g_core.hsa_signal_subtract_relaxed_fn(s, v);
}
EXPORT void hsa_signal_silent_store_relaxed(hsa_signal_t s, hsa_signal_value_t v) {
  g_core.hsa_signal_silent_store_relaxed_fn(s, v);
}
EXPORT uint64_t hsa_queue_load_read_index_relaxed(const hsa_queue_t *q) {
  return g_core.hsa_queue_load_read_index_relaxed_fn(q);
}
EXPORT hsa_status_t hsa_amd_profiling_async_copy_enable(bool on) {
  return g_amd.hsa_amd_profiling_async_copy_enable_fn(on);
}
EXPORT hsa_status_t hsa_amd_profiling_get_async_copy_time(hsa_signal_t a,
                                                          hsa_amd_profiling_async_copy_time_t *b) {
  return g_amd.hsa_amd_profiling_get_async_copy_time_fn(a, b);
}
EXPORT hsa_status_t hsa_amd_memory_async_copy_rect(const hsa_pitched_ptr_t *a, const hsa_dim3_t *b,
                                                   const hsa_pitched_ptr_t *c, const hsa_dim3_t *d,
                                                   const hsa_dim3_t *e, hsa_agent_t f,
                                                   hsa_amd_copy_direction_t g, uint32_t h,
                                                   const hsa_signal_t *i, hsa_signal_t j) {
  return g_amd.hsa_amd_memory_async_copy_rect_fn(a, b, c, d, e, f, g, h, i, j);
}
