/*
 * cupti.c: CUDA programs traced through CUPTI: runtime and driver API calls
 * as rocpd_api rows, kernels, copies and memsets as rocpd_op rows with GPU
 * times, linked to the call that issued them (rocpd_api_ops), with
 * rocpd_kernelapi / rocpd_copyapi arguments. The rows have the shapes
 * rocmProfileData's CUPTI data source writes (domain "cuda"; op types
 * "ConcurrentKernel", "Memcpy", "Memset"; kernel names as description), with
 * the stream as queueId, so a timeline has a track per GPU and stream.
 *
 * Loading: the CUDA driver loads the library CUDA_INJECTION64_PATH names at
 * cuInit and calls its InitializeInjection: any CUDA program, static cudart
 * included, without rebuilding. Under LD_PRELOAD the tracer sets that
 * variable to its own path where it is unset (NANO_CUPTI=0: not), so a
 * preloaded tracer records CUDA too. libcupti is opened at run time
 * (NANO_CUPTI_PATH, the library path, the toolkit's folders): the tracer
 * loads in processes without CUDA and never touches CUPTI there.
 *
 * Kernels are recorded with the concurrent-kernel activity, which does not
 * serialize kernels (CUPTI_ACTIVITY_KIND_KERNEL would). CUPTI takes its
 * timestamps from rpd_now (cuptiActivityRegisterTimestampCallback), so GPU
 * times are on the trace's clock.
 *
 * Correlation: each traced call's CUPTI correlation id maps to its API row
 * (a direct-mapped table of CUPTI_MAP_SLOTS entries: ids grow by one per
 * call, so an entry is overwritten only by a call CUPTI_MAP_SLOTS calls
 * later). Driver calls made inside a runtime call are not rows of their own;
 * their ids map to the runtime call's row (a copy's activity carries the
 * driver call's id). nanoprobe's own CUDA calls (the GPU back end's copies,
 * events and host functions, marked by rpd_gpu_quiet) are neither rows nor
 * ops.
 *
 * Only one CUPTI subscriber may exist in a process with the CUPTI nanoprobe
 * is built against (CUDA 13.0's; later ones let subscribers that ask share
 * it; Nsight Systems, the PyTorch profiler, rocmProfileData are others):
 * when CUPTI refuses, that is said once, naming
 * the subscriber that holds it where CUPTI names subscribers
 * (cuptiSubscribe_v2, to which nanoprobe is "nanoprobe"), and the rest of the
 * tracer goes on.
 */
#define _GNU_SOURCE
#include <cupti.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nano/demangle.h"
#include "nano/dh_format.h"
#include "nano/hash.h"
#include "nano/settings.h"
#include "nano/symbols.h"
#include "rpd.h"
#include "rpd_internal.h"

/* Bytes of each activity buffer CUPTI asks for, and their alignment. */
#define CUPTI_BUFFER_BYTES (1u << 20)
#define CUPTI_BUFFER_ALIGN 8
/* Correlation ids remembered (a power of two). */
#define CUPTI_MAP_SLOTS (1u << 16)
/* The map's value for nanoprobe's own calls: their activities are dropped. */
#define CUPTI_SELF UINT64_MAX
/* API calls of a thread open at once whose start times are kept. */
#define CUPTI_MAX_DEPTH 16

/* The CUPTI functions used, resolved from the library at run time. */
static struct {
  __typeof__(&cuptiGetVersion) GetVersion;
  __typeof__(&cuptiGetResultString) GetResultString;
  __typeof__(&cuptiSubscribe) Subscribe;
  __typeof__(&cuptiSubscribe_v2) SubscribeNamed; /* NULL where libcupti lacks it */
  __typeof__(&cuptiEnableDomain) EnableDomain;
  __typeof__(&cuptiEnableCallback) EnableCallback;
  __typeof__(&cuptiGetGraphNodeId) GetGraphNodeId;
  __typeof__(&cuptiActivityRegisterCallbacks) ActivityRegisterCallbacks;
  __typeof__(&cuptiActivityRegisterTimestampCallback) ActivityRegisterTimestampCallback;
  __typeof__(&cuptiActivityEnable) ActivityEnable;
  __typeof__(&cuptiActivityFlushAll) ActivityFlushAll;
  __typeof__(&cuptiActivityGetNextRecord) ActivityGetNextRecord;
  __typeof__(&cuptiActivityGetNumDroppedRecords) ActivityGetNumDroppedRecords;
} cp;

#define CUPTI_FN(field, symbol) NANO_SYMBOL(__typeof__(cp), field, symbol)
static const struct nano_symbol cupti_fns[] = {
    CUPTI_FN(GetVersion, cuptiGetVersion),
    CUPTI_FN(GetResultString, cuptiGetResultString),
    CUPTI_FN(Subscribe, cuptiSubscribe),
    CUPTI_FN(EnableDomain, cuptiEnableDomain),
    CUPTI_FN(EnableCallback, cuptiEnableCallback),
    CUPTI_FN(GetGraphNodeId, cuptiGetGraphNodeId),
    CUPTI_FN(ActivityRegisterCallbacks, cuptiActivityRegisterCallbacks),
    CUPTI_FN(ActivityRegisterTimestampCallback, cuptiActivityRegisterTimestampCallback),
    CUPTI_FN(ActivityEnable, cuptiActivityEnable),
    CUPTI_FN(ActivityFlushAll, cuptiActivityFlushAll),
    CUPTI_FN(ActivityGetNextRecord, cuptiActivityGetNextRecord),
    CUPTI_FN(ActivityGetNumDroppedRecords, cuptiActivityGetNumDroppedRecords),
};

/* Where libcupti is looked for after NANO_CUPTI_PATH: the library path,
 * then the toolkit's folders; in each, the soname of the CUDA major release
 * nanoprobe was built with (a runtime-only install has no unversioned name),
 * then the unversioned name. */
static const char *const cupti_dirs[] = {
    "",
    "/usr/local/cuda/extras/CUPTI/lib64/",
    "/usr/local/cuda/lib64/",
    "/usr/local/cuda/targets/x86_64-linux/lib/",
};
#define CUPTI_CUDA_MAJOR (CUDA_VERSION / 1000)

static struct {
  pthread_once_t once;
  _Atomic int activities; /* kernels, copies, memsets recorded, not flushed at exit yet */
  _Atomic int calls;      /* runtime and driver calls recorded */
  pthread_mutex_t map_lock;
  uint32_t corr[CUPTI_MAP_SLOTS];
  uint64_t api[CUPTI_MAP_SLOTS];
  uint64_t dropped; /* activity records CUPTI dropped */
} g_cu = {.once = PTHREAD_ONCE_INIT, .map_lock = PTHREAD_MUTEX_INITIALIZER};

/* A thread's open API calls. The outermost runtime call's row handle is
 * taken at its entry, so the driver calls inside it (any number) are linked
 * to it as they end; 0 inside a runtime call left out (cupti_skipped), whose
 * driver calls are left out with it. */
static __thread struct {
  int depth, runtime_depth;
  int64_t start[CUPTI_MAX_DEPTH];
  uint64_t runtime_api;
} t_cu;

static const char *cupti_error(CUptiResult r) {
  const char *s = NULL;
  if (cp.GetResultString && cp.GetResultString(r, &s) == CUPTI_SUCCESS && s)
    return s;
  return "unknown CUPTI error";
}

/* ---- correlation ------------------------------------------------------------------ */

static void cupti_map(uint32_t corr, uint64_t api) {
  uint32_t slot = corr & (CUPTI_MAP_SLOTS - 1);
  pthread_mutex_lock(&g_cu.map_lock);
  g_cu.corr[slot] = corr;
  g_cu.api[slot] = api;
  pthread_mutex_unlock(&g_cu.map_lock);
}

/* The API row of correlation id corr (0: unknown, CUPTI_SELF: nanoprobe's). */
static uint64_t cupti_lookup(uint32_t corr) {
  uint32_t slot = corr & (CUPTI_MAP_SLOTS - 1);
  pthread_mutex_lock(&g_cu.map_lock);
  uint64_t api = g_cu.corr[slot] == corr ? g_cu.api[slot] : 0;
  pthread_mutex_unlock(&g_cu.map_lock);
  return api;
}

/* ---- nanoprobe's own graph nodes -------------------------------------------------- */

/* The graph node ids (cuptiGetGraphNodeId) of the GPU back end's copies in
 * the program's graphs, and of the nodes instantiation (or a graph's clone)
 * makes of them: CUPTI reports a replay's copies under the executable's
 * node ids, with the correlation id of the program's graph launch. An
 * open-addressed set, doubled at half full; 0 is no id (CUPTI's "not a
 * graph's"), the empty slot. */
#define CUPTI_OWN_FIRST_SLOTS 64
static struct {
  pthread_mutex_t lock;
  uint64_t *slot;
  size_t cap, n;
  _Atomic size_t count; /* n, read without the lock: while 0, nothing is looked up */
} g_own = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Where id is in the set, or the empty slot where it would go (cap > n). */
static size_t cupti_own_slot(const uint64_t *slot, size_t cap, uint64_t id) {
  size_t i = (size_t)(id * 0x9E3779B97F4A7C15ull) & (cap - 1);
  while (slot[i] && slot[i] != id)
    i = (i + 1) & (cap - 1);
  return i;
}

static void cupti_own_add(uint64_t id) {
  if (!id)
    return;
  pthread_mutex_lock(&g_own.lock);
  if (2 * (g_own.n + 1) > g_own.cap) {
    size_t cap = g_own.cap ? 2 * g_own.cap : CUPTI_OWN_FIRST_SLOTS;
    uint64_t *slot = calloc(cap, sizeof *slot);
    if (!slot) { /* out of memory: this copy shows as the program's */
      pthread_mutex_unlock(&g_own.lock);
      return;
    }
    for (size_t i = 0; i < g_own.cap; i++)
      if (g_own.slot[i])
        slot[cupti_own_slot(slot, cap, g_own.slot[i])] = g_own.slot[i];
    free(g_own.slot);
    g_own.slot = slot;
    g_own.cap = cap;
  }
  size_t i = cupti_own_slot(g_own.slot, g_own.cap, id);
  if (!g_own.slot[i]) {
    g_own.slot[i] = id;
    atomic_store(&g_own.count, ++g_own.n);
  }
  pthread_mutex_unlock(&g_own.lock);
}

static int cupti_own_has(uint64_t id) {
  if (!id || !atomic_load(&g_own.count))
    return 0;
  pthread_mutex_lock(&g_own.lock);
  int has = g_own.slot[cupti_own_slot(g_own.slot, g_own.cap, id)] == id;
  pthread_mutex_unlock(&g_own.lock);
  return has;
}

void rpd_cupti_own_graph_node(void *node) {
  uint64_t id = 0;
  if (node && atomic_load(&g_cu.activities) &&
      cp.GetGraphNodeId((CUgraphNode)node, &id) == CUPTI_SUCCESS)
    cupti_own_add(id);
}

/* CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED: a clone of one of ours is ours. */
static void cupti_node_cloned(const CUpti_ResourceData *r) {
  const CUpti_GraphData *g = r ? r->resourceDescriptor : NULL;
  uint64_t original = 0, id = 0;
  if (g && g->originalNode && atomic_load(&g_own.count) &&
      cp.GetGraphNodeId(g->originalNode, &original) == CUPTI_SUCCESS && cupti_own_has(original) &&
      cp.GetGraphNodeId(g->node, &id) == CUPTI_SUCCESS)
    cupti_own_add(id);
}

/* ---- kernel names ----------------------------------------------------------------- */

/* Kernel names as the trace shows them, demangled (as rocmProfileData does),
 * twins as their originals (nano_kernel_shown).
 * A name is demangled once: a launch's call looks it up here instead of
 * paying the demangler (about a microsecond) every time. Direct-mapped on the
 * name's hash; a slot, once filled, never changes (read without a lock); a
 * name whose slot holds another is demangled each time. */
#define CUPTI_NAME_SLOTS 1024
struct cupti_name {
  char *mangled, *shown;
};
static struct cupti_name *_Atomic cupti_names[CUPTI_NAME_SLOTS];

/* CUPTI names the twin that ran (nano/dh_format.h's naming rule); the trace
 * names the kernel the program launched, marked (nano_kernel_shown). */

/* The name to show for mangled; *owned (to free) when it was made for this
 * call alone. */
static const char *cupti_kernel_name(const char *mangled, char **owned) {
  *owned = NULL;
  if (!mangled)
    return "";
  struct cupti_name *_Atomic *slot = &cupti_names[nano_fnv64_str(mangled) % CUPTI_NAME_SLOTS];
  struct cupti_name *n = atomic_load_explicit(slot, memory_order_acquire);
  if (n && strcmp(n->mangled, mangled) == 0)
    return n->shown;
  char *d = nano_kernel_shown(mangled);
  if (!n && (n = malloc(sizeof *n))) {
    n->mangled = strdup(mangled);
    n->shown = d ? d : n->mangled;
    struct cupti_name *none = NULL;
    if (n->mangled && atomic_compare_exchange_strong_explicit(slot, &none, n, memory_order_release,
                                                              memory_order_relaxed))
      return n->shown;
    if (n->shown != n->mangled)
      d = n->shown; /* still ours to return */
    free(n->mangled);
    free(n);
  }
  *owned = d;
  return d ? d : mangled;
}

/* ---- API calls -------------------------------------------------------------------- */

/* Runtime calls left out, as rocmProfileData does: frequent and uninformative. */
static int cupti_skipped(CUpti_CallbackId cbid) {
  return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020 ||
         cbid == CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020 ||
         cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020 ||
         cbid == CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020;
}

static void cupti_kernelapi(uint64_t api, const char *symbol, dim3 grid, dim3 block, size_t shared,
                            const void *stream) {
  char sname[32], *owned;
  snprintf(sname, sizeof sname, "%p", stream);
  struct rpd_kernel_launch k = {
      sname,        (int)grid.x,  (int)grid.y, (int)grid.z, (int)block.x,
      (int)block.y, (int)block.z, (int)shared, 0,           cupti_kernel_name(symbol, &owned)};
  rpd_record_kernelapi(api, &k);
  free(owned);
}

/* The arguments of the runtime calls whose rows carry them. */
static void cupti_arguments(uint64_t api, CUpti_CallbackId cbid, const CUpti_CallbackData *cb) {
  const void *p = cb->functionParams;
  switch (cbid) {
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000: {
    const cudaLaunchKernel_v7000_params *a = p;
    cupti_kernelapi(api, cb->symbolName, a->gridDim, a->blockDim, a->sharedMem, a->stream);
    break;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
    const cudaLaunchConfig_t *c = ((const cudaLaunchKernelExC_v11060_params *)p)->config;
    if (c)
      cupti_kernelapi(api, cb->symbolName, c->gridDim, c->blockDim, c->dynamicSmemBytes, c->stream);
    break;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000: {
    const cudaMemcpy_v3020_params *a = p;
    rpdi_copy_args(api, a->dst, a->src, NULL,
                   &(struct rpd_copy){.size = (int64_t)a->count, .kind = (int)a->kind, .sync = 1});
    break;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000: {
    const cudaMemcpyAsync_v3020_params *a = p;
    rpdi_copy_args(api, a->dst, a->src, a->stream,
                   &(struct rpd_copy){.size = (int64_t)a->count, .kind = (int)a->kind});
    break;
  }
  default:
    break;
  }
}

/* Handles as rocmProfileData's roctracer rows print them ("%p", as the
 * launches' stream column), so that `rpd graph` joins them. */
#define CUPTI_HANDLE_CHARS 32

/* The args column of the runtime calls `rpd graph` reads ("key = value |
 * ..."): the captured stream, the graph a capture made, the executable an
 * instantiation made of it, what a launch launched; "" for other calls. At
 * the call's exit, where the graph and the executable are out parameters. */
static const char *cupti_graph_args(CUpti_CallbackId cbid, const CUpti_CallbackData *cb, char *buf,
                                    size_t len) {
  const void *p = cb->functionParams;
  int n = -1;
  switch (cbid) {
  case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_ptsz_v10000:
    n = snprintf(buf, len, "stream = %p",
                 (void *)((const cudaStreamBeginCapture_v10000_params *)p)->stream);
    break;
  case CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_ptsz_v10000: {
    const cudaStreamEndCapture_v10000_params *a = p;
    n = snprintf(buf, len, "stream = %p | graph = %p", (void *)a->stream,
                 a->pGraph ? (void *)*a->pGraph : NULL);
    break;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v10000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040:
  case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_v12000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_ptsz_v12000: {
    /* every version starts with the executable's out parameter and the graph */
    const cudaGraphInstantiateWithFlags_v11040_params *a = p;
    n = snprintf(buf, len, "graphExec = %p | graph = %p",
                 a->pGraphExec ? (void *)*a->pGraphExec : NULL, (void *)a->graph);
    break;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000: {
    const cudaGraphLaunch_v10000_params *a = p;
    n = snprintf(buf, len, "graphExec = %p | stream = %p", (void *)a->graphExec, (void *)a->stream);
    break;
  }
  default:
    break;
  }
  return n > 0 && (size_t)n < len ? buf : "";
}

static void CUPTIAPI cupti_callback(void *userdata, CUpti_CallbackDomain domain,
                                    CUpti_CallbackId cbid, const void *data) {
  (void)userdata;
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED)
    cupti_node_cloned(data);
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API)
    return;
  const CUpti_CallbackData *cb = data;
  int enter = cb->callbackSite == CUPTI_API_ENTER;
  if (rpd_gpu_quiet) {
    if (!enter)
      cupti_map(cb->correlationId, CUPTI_SELF);
    return;
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && t_cu.runtime_depth > 0) {
    if (!enter && t_cu.runtime_api)
      cupti_map(cb->correlationId, t_cu.runtime_api);
    return;
  }
  int runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  int skipped = runtime && cupti_skipped(cbid);
  if (enter) {
    if (t_cu.depth < CUPTI_MAX_DEPTH)
      t_cu.start[t_cu.depth] = rpd_now();
    if (runtime && t_cu.runtime_depth == 0)
      t_cu.runtime_api = skipped ? 0 : rpdi_api_handle();
    t_cu.depth++;
    t_cu.runtime_depth += runtime;
    return;
  }
  int64_t end = rpd_now();
  if (t_cu.depth == 0 || (runtime && t_cu.runtime_depth == 0)) /* tracing began inside it */
    return;
  t_cu.depth--;
  t_cu.runtime_depth -= runtime;
  if (skipped)
    return;
  int64_t start = t_cu.depth < CUPTI_MAX_DEPTH ? t_cu.start[t_cu.depth] : end;
  char args[4 * CUPTI_HANDLE_CHARS];
  uint64_t api =
      rpdi_record_api_as(runtime && t_cu.runtime_depth == 0 ? t_cu.runtime_api : 0, "cuda", "",
                         cb->functionName ? cb->functionName : "",
                         runtime ? cupti_graph_args(cbid, cb, args, sizeof args) : "", start, end);
  if (api && runtime)
    cupti_arguments(api, cbid, cb);
  cupti_map(cb->correlationId, api);
}

/* ---- activities ------------------------------------------------------------------- */

static void CUPTIAPI cupti_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *buffer = aligned_alloc(CUPTI_BUFFER_ALIGN, CUPTI_BUFFER_BYTES);
  *size = *buffer ? CUPTI_BUFFER_BYTES : 0;
  *max_records = 0;
}

static void cupti_op(uint32_t corr, uint32_t device, uint32_t stream, uint64_t start, uint64_t end,
                     const char *description, const char *type) {
  uint64_t api = cupti_lookup(corr);
  if (api == CUPTI_SELF)
    return;
  rpd_record_op(api, (int)device, (int)stream, (int64_t)start, (int64_t)end, description, type);
}

static void CUPTIAPI cupti_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                            size_t size, size_t valid) {
  (void)size;
  CUpti_Activity *rec = NULL;
  while (valid && cp.ActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
      char *owned;
      cupti_op(k->correlationId, k->deviceId, k->streamId, k->start, k->end,
               cupti_kernel_name(k->name, &owned), "ConcurrentKernel");
      free(owned);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
      if (cupti_own_has(m->graphNodeId)) /* a copy the GPU back end added to a graph */
        break;
      cupti_op(m->runtimeCorrelationId ? m->runtimeCorrelationId : m->correlationId, m->deviceId,
               m->streamId, m->start, m->end, "", "Memcpy");
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)rec;
      if (cupti_own_has(m->graphNodeId)) /* a memset the GPU back end added to a graph */
        break;
      cupti_op(m->correlationId, m->deviceId, m->streamId, m->start, m->end, "", "Memset");
      break;
    }
    default:
      break;
    }
  }
  size_t dropped = 0;
  if (cp.ActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped) {
    __atomic_add_fetch(&g_cu.dropped, dropped, __ATOMIC_RELAXED);
    fprintf(stderr, "nanoprobe: CUPTI dropped %zu activity records (kernels, copies)\n", dropped);
  }
  free(buffer);
}

static uint64_t CUPTIAPI cupti_timestamp(void) { return (uint64_t)rpd_now(); }

/* ---- start and flush --------------------------------------------------------------- */

static void *cupti_open(void) {
  const char *env = nano_env_str("NANO_CUPTI_PATH");
  if (env) {
    void *h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    if (!h)
      fprintf(stderr, "nanoprobe: NANO_CUPTI_PATH=%s cannot be loaded: %s\n", env, dlerror());
    return h;
  }
  for (size_t i = 0; i < sizeof cupti_dirs / sizeof cupti_dirs[0]; i++) {
    char path[PATH_MAX];
    for (int versioned = 1; versioned >= 0; versioned--) {
      int n = versioned
                  ? snprintf(path, sizeof path, "%slibcupti.so.%d", cupti_dirs[i], CUPTI_CUDA_MAJOR)
                  : snprintf(path, sizeof path, "%slibcupti.so", cupti_dirs[i]);
      if (n < 0 || (size_t)n >= sizeof path)
        continue;
      void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (h)
        return h;
    }
  }
  fprintf(stderr, "nanoprobe: libcupti.so (CUDA toolkit) not found (set NANO_CUPTI_PATH): CUDA "
                  "calls and kernels are not traced\n");
  return NULL;
}

int rpd_cupti_records_calls(void) { return g_cu.calls; }

static int cupti_check(CUptiResult r, const char *what) {
  if (r == CUPTI_SUCCESS)
    return 0;
  fprintf(stderr, "nanoprobe: CUPTI: %s failed: %s; CUDA calls and kernels are not traced\n", what,
          cupti_error(r));
  return -1;
}

/* Subscribes as "nanoprobe" where CUPTI names subscribers (cuptiSubscribe_v2),
 * so that tools refused after it can name it, and learns the name of the one
 * that holds CUPTI when nanoprobe is refused (into holder, size bytes; left
 * empty by an older CUPTI). */
static CUptiResult cupti_subscribe(CUpti_SubscriberHandle *sub, char *holder, size_t size) {
  if (!cp.SubscribeNamed)
    return cp.Subscribe(sub, (CUpti_CallbackFunc)cupti_callback, NULL);
  CUpti_SubscriberParams params = {
      .structSize = CUpti_SubscriberParams_STRUCT_SIZE,
      .subscriberName = "nanoprobe",
      .oldSubscriberName = holder,
      .oldSubscriberSize = size,
  };
  return cp.SubscribeNamed(sub, (CUpti_CallbackFunc)cupti_callback, NULL, &params);
}

static void cupti_flush(void);

static void cupti_start(void) {
  void *h = cupti_open();
  if (!h)
    return;
  const char *missing =
      nano_symbols_resolve(h, cupti_fns, sizeof cupti_fns / sizeof cupti_fns[0], &cp);
  if (missing) {
    fprintf(stderr,
            "nanoprobe: libcupti lacks %s (older than CUDA 12?): CUDA calls and kernels are not "
            "traced\n",
            missing);
    return;
  }
  *(void **)&cp.SubscribeNamed = dlsym(h, "cuptiSubscribe_v2");
  uint32_t version = 0;
  if (cupti_check(cp.GetVersion(&version), "cuptiGetVersion"))
    return;
  CUpti_SubscriberHandle sub;
  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = "";
  CUptiResult r = cupti_subscribe(&sub, holder, sizeof holder);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    fprintf(stderr,
            "nanoprobe: another CUPTI client (%s) is active: CUDA calls and kernels are not "
            "traced; the rest of the trace is recorded\n",
            *holder ? holder : "Nsight Systems, the PyTorch profiler, rocmProfileData?");
    return;
  }
  if (cupti_check(r, "cuptiSubscribe") ||
      cupti_check(cp.EnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API), "enabling runtime calls") ||
      cupti_check(cp.EnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API), "enabling driver calls"))
    return;
  g_cu.calls = 1;
  /* Activity records are read as this header's versions of them. */
  if (version / 10000 != CUPTI_API_VERSION / 10000) {
    fprintf(stderr,
            "nanoprobe: libcupti's API version %u is not the %u nanoprobe was built with: CUDA "
            "calls are traced, kernels and copies are not\n",
            version, (unsigned)CUPTI_API_VERSION);
    return;
  }
  /* A later release of the same major may deliver newer record versions
   * (CUPTI 13.2 dropped CUpti_ActivityKernel10 from its header): read as
   * this header's, their times are believed, not known, to be right. */
  if (version > CUPTI_API_VERSION)
    fprintf(stderr,
            "nanoprobe: libcupti's API version %u is newer than the %u nanoprobe was built "
            "with: its kernel and copy records are read in %u's layout (rebuild nanoprobe with "
            "this CUDA to be sure of their times)\n",
            version, (unsigned)CUPTI_API_VERSION, (unsigned)CUPTI_API_VERSION);
  if (cupti_check(cp.ActivityRegisterTimestampCallback(cupti_timestamp), "registering the clock") ||
      cupti_check(cp.ActivityRegisterCallbacks(cupti_buffer_requested, cupti_buffer_completed),
                  "registering activity buffers") ||
      cupti_check(cp.ActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "enabling kernels") ||
      cupti_check(cp.ActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "enabling copies") ||
      cupti_check(cp.ActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET), "enabling memsets"))
    return;
  g_cu.activities = 1;
  atexit(cupti_flush);
  r = cp.EnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED);
  if (r != CUPTI_SUCCESS)
    fprintf(stderr,
            "nanoprobe: CUPTI: following graph instantiations failed: %s; the copies nanoprobe "
            "adds to instrumented graphs show as the program's\n",
            cupti_error(r));
}

/* At exit, before the writer stops: delivers CUPTI's pending activity
 * records (kernels, copies) to the trace, once (the first of the exit
 * handler's and the component's exit hook). */
static void cupti_flush(void) {
  if (!atomic_exchange(&g_cu.activities, 0)) /* the atexit handler's and the destructor's: once */
    return;
  CUptiResult r = cp.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (r != CUPTI_SUCCESS)
    fprintf(stderr,
            "nanoprobe: CUPTI: flushing the activity records at exit failed: %s; the last kernels "
            "and copies may be missing from the trace\n",
            cupti_error(r));
}

/* NANO_CUPTI: on unless set to a false value (nano/settings.h). */
static int cupti_wanted(void) {
  int on = 1;
  nano_env_bool("NANO_CUPTI", &on);
  return on;
}

/* At load: CUDA_INJECTION64_PATH to this library where unset and NANO_CUPTI
 * allows, so the CUDA driver starts CUPTI tracing (InitializeInjection) when
 * the program initializes CUDA. */
static void cupti_preload(void) {
  if (!cupti_wanted())
    return;
  char path[PATH_MAX], set_path[PATH_MAX];
  if (rpdi_object_path((const void *)cupti_preload, path) != 0) {
    fprintf(stderr, "nanoprobe: cannot find the tracer's own path: CUDA is not traced\n");
    return;
  }
  /* Another tool's injection (Nsight Systems, Nsight Compute): the driver
   * calls its InitializeInjection, not ours. */
  const char *set = getenv("CUDA_INJECTION64_PATH");
  if (set && *set) {
    if (!realpath(set, set_path) || strcmp(set_path, path) != 0)
      fprintf(stderr,
              "nanoprobe: CUDA_INJECTION64_PATH=%s names another tool's library: CUDA calls, "
              "kernels and copies are not traced (that tool holds CUDA's injection); the rest "
              "of the trace is recorded\n",
              set);
    return;
  }
  if (setenv("CUDA_INJECTION64_PATH", path, 0) != 0)
    fprintf(stderr, "nanoprobe: cannot set CUDA_INJECTION64_PATH: CUDA is not traced\n");
}

/* The CUDA driver's entry for the library CUDA_INJECTION64_PATH names. */
__attribute__((visibility("default"))) int InitializeInjection(void) {
  if (cupti_wanted())
    pthread_once(&g_cu.once, cupti_start);
  return 1;
}

__attribute__((constructor(RPDI_REGISTER_CUPTI))) static void cupti_register(void) {
  static const struct rpdi_component cupti = {"cupti", cupti_preload, cupti_flush, NULL};
  rpdi_component_register(&cupti);
}
