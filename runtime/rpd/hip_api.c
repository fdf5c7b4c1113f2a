/*
 * hip_api.c: the HIP API calls of programs not built with anything of ours
 * (issue 38 part 1), as rocmProfileData's roctracer data source records
 * them: through the HIP runtime's own callback interface, roctracer's
 * contract with HIP 5 (hipamd's src/hip_prof_api.h, the "spawner" in every
 * API function): nothing is called back unless an activity callback is
 * registered for the call's id (hipRegisterActivityCallback, which turns
 * the runtime's profiler on); at the call's start that callback, asked with
 * no record and no argument, hands out the hip_api_data_t the runtime
 * writes the arguments into (hip_activity: one per nesting level of the
 * thread); the API callback (hipRegisterApiCallback) gets it at the call's
 * enter and exit (domain ACTIVITY_DOMAIN_HIP_API); at the end the activity
 * callback is asked again with its registered argument and takes the data
 * back. (Registering the API callbacks alone, as this file did first,
 * reports nothing with Debian's HIP 5.2: seen by running the real
 * libamdhip64 over tests/hsa's stand-in ROCr.)
 *
 * From HIP 5.3.3 to 6.2 the runtime serves another interface in its place
 * (hipamd's, then clr's src/hip_prof_api.h), roctracer's from then:
 * hipRegisterTracerCallback(fn); at each call's start the runtime asks
 * fn(domain, id, data), data its hip_api_trace_data_t on its stack, not
 * initialised: the call's hip_api_data_t, then two 64-bit words, then the
 * phase_enter and phase_exit functions, which fn fills in; fn's 0 enables
 * the call, whose arguments are then written and phase_enter called, and
 * phase_exit at its return (hip_tracer). The hip_api_data_t's size grew with
 * its argument union (HIP_TRACE_LAYOUTS), the arguments read here did not
 * change. ROCm 6.3 on serves neither interface, only rocprofiler-sdk's
 * (not done: said).
 *
 * Each call is a rocpd_api row, domain `hip`, apiName the function, on the
 * calling thread, from its enter to its exit; launches (hipLaunchKernel,
 * hipExtLaunchKernel, hipModuleLaunchKernel, hipExtModuleLaunchKernel and
 * its older name hipHccModuleLaunchKernel, hipLaunchCooperativeKernel, the
 * multi-device launches: their first launch's) add
 * rocpd_kernelapi
 * (grid in work-items and workgroup as the dispatch packet has them,
 * dynamic LDS, the kernel's name demangled as its op's, the stream), copies
 * (hipMemcpy, its Async, the direction-named and the symbol ones)
 * rocpd_copyapi, hipMalloc and hipFree their pointer and size in args. The
 * GPU work a call submits (the HSA tool sees its packets on the same thread,
 * between enter and exit) becomes ops linked to the call's row:
 * rpd_hip_call_current() gives the call, rpd_hip_call_link() records an op
 * against it as soon as its row exists (the op may complete before the call
 * returns).
 *
 * Started by the HSA tool's OnLoad (rpd_hip_api_start): by then the HIP
 * runtime, if the program has one, is initialising HSA, so it is loaded and
 * its callback table constructed.
 */
#define _GNU_SOURCE
#define __HIP_PLATFORM_AMD__
#include <dlfcn.h>
#include <hip/hip_runtime_api.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hip/amd_detail/hip_prof_str.h>

#include "hip_api.h"
#include "nano/demangle.h"
#include "nano/settings.h"
#include "rpd.h"
#include "rpd_internal.h"
#include "tracer.h"

/* roctracer's prof_protocol.h (not in Debian's packages): the HIP API
 * domain and the two phases of a call. */
#define HIP_API_DOMAIN 3
#define HIP_API_PHASE_ENTER 0
#define HIP_API_PHASE_EXIT 1
/* The tracer interface's hip_api_trace_data_t after its hip_api_data_t: the
 * phase_enter timestamp and phase_data words, then phase_enter, phase_exit. */
#define HIP_TRACE_WORDS_BYTES 16
/* Calls nested in calls (the runtime calling itself) that are still timed. */
#define HIP_API_MAX_DEPTH 16
/* Ops of one call recorded before its row exists, at most. */
#define HIP_API_MAX_WAITING 8

/* An op waiting for its call's row. */
struct hip_waiting {
  void (*record)(uint64_t api, void *arg);
  void *arg;
};

struct rpd_hip_call {
  pthread_mutex_t lock;
  uint64_t api; /* 0 until the row exists */
  int done;     /* the call returned (api may still be 0: not recorded) */
  int refs;
  struct hip_waiting waiting[HIP_API_MAX_WAITING];
  int nwaiting;
};

static __thread struct {
  int depth;
  int64_t start[HIP_API_MAX_DEPTH];
  struct rpd_hip_call *call[HIP_API_MAX_DEPTH];
  unsigned char own[HIP_API_MAX_DEPTH]; /* nanoprobe's own call (rpd_gpu_quiet at enter) */
} t_hip;

static atomic_int g_started;

static void hip_call_unref(struct rpd_hip_call *c) {
  pthread_mutex_lock(&c->lock);
  int refs = --c->refs;
  pthread_mutex_unlock(&c->lock);
  if (refs == 0) {
    pthread_mutex_destroy(&c->lock);
    free(c);
  }
}

struct rpd_hip_call *rpd_hip_call_current(void) {
  int d = t_hip.depth;
  struct rpd_hip_call *c = d > 0 && d <= HIP_API_MAX_DEPTH ? t_hip.call[d - 1] : NULL;
  if (c) {
    pthread_mutex_lock(&c->lock);
    c->refs++;
    pthread_mutex_unlock(&c->lock);
  }
  return c;
}

uint64_t rpd_hip_call_api(struct rpd_hip_call *c) {
  pthread_mutex_lock(&c->lock);
  uint64_t api = c->api;
  pthread_mutex_unlock(&c->lock);
  return api;
}

void rpd_hip_call_link(struct rpd_hip_call *c, void (*record)(uint64_t api, void *arg), void *arg) {
  pthread_mutex_lock(&c->lock);
  int now = c->done || c->nwaiting == HIP_API_MAX_WAITING;
  if (!now)
    c->waiting[c->nwaiting++] = (struct hip_waiting){record, arg};
  uint64_t api = c->api;
  pthread_mutex_unlock(&c->lock);
  if (now)
    record(api, arg);
  hip_call_unref(c);
}

/* rocpd_kernelapi of a launch of the kernel named `name` (NULL: unknown)
 * over `items` work-items (the dispatch packet's grid) in workgroups of
 * `block`. */
static void hip_kernelapi(uint64_t api, const char *name, dim3 items, dim3 block, size_t shared,
                          hipStream_t stream) {
  char sname[32];
  snprintf(sname, sizeof sname, "%p", (void *)stream);
  char *shown = name ? nano_kernel_shown(name) : NULL; /* as the kernel's op shows it */
  struct rpd_kernel_launch k = {sname,
                                (int)items.x,
                                (int)items.y,
                                (int)items.z,
                                (int)block.x,
                                (int)block.y,
                                (int)block.z,
                                (int)shared,
                                0,
                                shown  ? shown
                                : name ? name
                                       : ""};
  rpd_record_kernelapi(api, &k);
  free(shown);
}

/* The work-items of a grid of `blocks` workgroups of `block`. */
static dim3 hip_items(dim3 blocks, dim3 block) {
  return (dim3){blocks.x * block.x, blocks.y * block.y, blocks.z * block.z};
}

/* The name of the kernel launched by address (hipLaunchKernel) or by module
 * function (hipModuleLaunchKernel and kin), from the runtime; NULL unknown. */
static const char *hip_name_by_ptr(const void *address, hipStream_t stream) {
  static const char *(*by_ptr)(const void *, hipStream_t);
  if (!by_ptr)
    by_ptr =
        (const char *(*)(const void *, hipStream_t))dlsym(RTLD_DEFAULT, "hipKernelNameRefByPtr");
  return by_ptr ? by_ptr(address, stream) : NULL;
}
static const char *hip_name_by_function(hipFunction_t f) {
  static const char *(*by_function)(hipFunction_t);
  if (!by_function)
    by_function = (const char *(*)(hipFunction_t))dlsym(RTLD_DEFAULT, "hipKernelNameRef");
  return by_function ? by_function(f) : NULL;
}

/* The rows' arguments of the calls that carry them. */
static void hip_arguments(uint64_t api, uint32_t cid, const hip_api_data_t *d) {
  switch (cid) {
  case HIP_API_ID_hipLaunchKernel: {
    const __typeof__(d->args.hipLaunchKernel) *a = &d->args.hipLaunchKernel;
    hip_kernelapi(api, hip_name_by_ptr(a->function_address, a->stream),
                  hip_items(a->numBlocks, a->dimBlocks), a->dimBlocks, a->sharedMemBytes,
                  a->stream);
    break;
  }
  case HIP_API_ID_hipExtLaunchKernel: {
    const __typeof__(d->args.hipExtLaunchKernel) *a = &d->args.hipExtLaunchKernel;
    hip_kernelapi(api, hip_name_by_ptr(a->function_address, a->stream),
                  hip_items(a->numBlocks, a->dimBlocks), a->dimBlocks, a->sharedMemBytes,
                  a->stream);
    break;
  }
  case HIP_API_ID_hipModuleLaunchKernel: { /* Triton's */
    const __typeof__(d->args.hipModuleLaunchKernel) *a = &d->args.hipModuleLaunchKernel;
    dim3 blocks = {a->gridDimX, a->gridDimY, a->gridDimZ};
    dim3 block = {a->blockDimX, a->blockDimY, a->blockDimZ};
    hip_kernelapi(api, hip_name_by_function(a->f), hip_items(blocks, block), block,
                  a->sharedMemBytes, a->stream);
    break;
  }
  case HIP_API_ID_hipExtModuleLaunchKernel: { /* Tensile's (rocBLAS): sizes in work-items */
    const __typeof__(d->args.hipExtModuleLaunchKernel) *a = &d->args.hipExtModuleLaunchKernel;
    dim3 items = {a->globalWorkSizeX, a->globalWorkSizeY, a->globalWorkSizeZ};
    dim3 block = {a->localWorkSizeX, a->localWorkSizeY, a->localWorkSizeZ};
    hip_kernelapi(api, hip_name_by_function(a->f), items, block, a->sharedMemBytes, a->hStream);
    break;
  }
  case HIP_API_ID_hipHccModuleLaunchKernel: { /* its older name */
    const __typeof__(d->args.hipHccModuleLaunchKernel) *a = &d->args.hipHccModuleLaunchKernel;
    dim3 items = {a->globalWorkSizeX, a->globalWorkSizeY, a->globalWorkSizeZ};
    dim3 block = {a->blockDimX, a->blockDimY, a->blockDimZ};
    hip_kernelapi(api, hip_name_by_function(a->f), items, block, a->sharedMemBytes, a->hStream);
    break;
  }
  case HIP_API_ID_hipLaunchCooperativeKernel: {
    const __typeof__(d->args.hipLaunchCooperativeKernel) *a = &d->args.hipLaunchCooperativeKernel;
    hip_kernelapi(api, hip_name_by_ptr(a->f, a->stream), hip_items(a->gridDim, a->blockDimX),
                  a->blockDimX, a->sharedMemBytes, a->stream);
    break;
  }
  /* one launch per device in one call: rocpd_kernelapi holds one row per
   * call, the first launch's; each device's kernel is an op of the call */
  case HIP_API_ID_hipLaunchCooperativeKernelMultiDevice:
  case HIP_API_ID_hipExtLaunchMultiKernelMultiDevice: {
    int multi = cid == HIP_API_ID_hipLaunchCooperativeKernelMultiDevice;
    const hipLaunchParams *l = multi
                                   ? d->args.hipLaunchCooperativeKernelMultiDevice.launchParamsList
                                   : d->args.hipExtLaunchMultiKernelMultiDevice.launchParamsList;
    int n = multi ? d->args.hipLaunchCooperativeKernelMultiDevice.numDevices
                  : d->args.hipExtLaunchMultiKernelMultiDevice.numDevices;
    if (l && n > 0)
      hip_kernelapi(api, hip_name_by_ptr(l->func, l->stream), hip_items(l->gridDim, l->blockDim),
                    l->blockDim, l->sharedMem, l->stream);
    break;
  }
  /* copies, as rocmProfileData's roctracer source records them (the
   * direction-named ones with their implied kind) */
#define HIP_COPY_AS(id, dst_, src_, stream_, ...)                                                  \
  case HIP_API_ID_##id: {                                                                          \
    const __typeof__(d->args.id) *a = &d->args.id;                                                 \
    rpdi_copy_args(api, (const void *)(uintptr_t)(a->dst_), (const void *)(uintptr_t)(a->src_),    \
                   stream_, &(struct rpd_copy){__VA_ARGS__});                                      \
    break;                                                                                         \
  }
#define HIP_COPY(id, dst_, src_, kind_, stream_, sync_)                                            \
  HIP_COPY_AS(id, dst_, src_, stream_, .size = (int64_t)a->sizeBytes, .kind = (int)(kind_),        \
              .sync = sync_)
    HIP_COPY(hipMemcpy, dst, src, a->kind, NULL, 1)
    HIP_COPY(hipMemcpyAsync, dst, src, a->kind, a->stream, 0)
    HIP_COPY(hipMemcpyHtoD, dst, src, hipMemcpyHostToDevice, NULL, 1)
    HIP_COPY(hipMemcpyHtoDAsync, dst, src, hipMemcpyHostToDevice, a->stream, 0)
    HIP_COPY(hipMemcpyDtoH, dst, src, hipMemcpyDeviceToHost, NULL, 1)
    HIP_COPY(hipMemcpyDtoHAsync, dst, src, hipMemcpyDeviceToHost, a->stream, 0)
    HIP_COPY(hipMemcpyDtoD, dst, src, hipMemcpyDeviceToDevice, NULL, 1)
    HIP_COPY(hipMemcpyDtoDAsync, dst, src, hipMemcpyDeviceToDevice, a->stream, 0)
    HIP_COPY(hipMemcpyFromSymbol, dst, symbol, a->kind, NULL, 1)
    HIP_COPY(hipMemcpyFromSymbolAsync, dst, symbol, a->kind, a->stream, 0)
    HIP_COPY(hipMemcpyToSymbol, symbol, src, a->kind, NULL, 1)
    HIP_COPY(hipMemcpyToSymbolAsync, symbol, src, a->kind, a->stream, 0)
    HIP_COPY(hipMemcpyWithStream, dst, src, a->kind, a->stream, 0)
    /* 2D copies: width (bytes) and height (rows), and their bytes as size;
     * peer copies: the two devices (device to device) */
    HIP_COPY_AS(hipMemcpy2D, dst, src, NULL, .size = (int64_t)(a->width * a->height),
                .width = (int64_t)a->width, .height = (int64_t)a->height, .kind = (int)a->kind,
                .sync = 1)
    HIP_COPY_AS(hipMemcpy2DAsync, dst, src, a->stream, .size = (int64_t)(a->width * a->height),
                .width = (int64_t)a->width, .height = (int64_t)a->height, .kind = (int)a->kind)
    HIP_COPY_AS(hipMemcpyPeer, dst, src, NULL, .size = (int64_t)a->sizeBytes,
                .kind = hipMemcpyDeviceToDevice, .dstDevice = a->dstDeviceId,
                .srcDevice = a->srcDeviceId, .sync = 1)
    HIP_COPY_AS(hipMemcpyPeerAsync, dst, src, a->stream, .size = (int64_t)a->sizeBytes,
                .kind = hipMemcpyDeviceToDevice, .dstDevice = a->dstDeviceId,
                .srcDevice = a->srcDevice)
#undef HIP_COPY
#undef HIP_COPY_AS
  default:
    break;
  }
}

/* Handles as roctracer prints them ("%p"), so that `rpd graph` joins them. */
#define HIP_HANDLE_CHARS 32

/* The args column: of the graph calls `rpd graph` reads ("key = value |
 * ...", as cupti.c writes CUDA's): the captured stream, the graph a capture
 * made, the executable instantiated from it, what a launch launched; of
 * hipMalloc and hipFree, the pointer and size as rocmProfileData writes
 * them; "" for other calls. At the call's exit, where the graph, the
 * executable and the allocation are out parameters. */
static const char *hip_args(uint32_t cid, const hip_api_data_t *d, char *buf, size_t len) {
  int n = -1;
  switch (cid) {
  case HIP_API_ID_hipStreamBeginCapture:
    n = snprintf(buf, len, "stream = %p | mode = %d", (void *)d->args.hipStreamBeginCapture.stream,
                 (int)d->args.hipStreamBeginCapture.mode);
    break;
  case HIP_API_ID_hipStreamEndCapture: {
    const __typeof__(d->args.hipStreamEndCapture) *a = &d->args.hipStreamEndCapture;
    n = snprintf(buf, len, "stream = %p | graph = %p", (void *)a->stream,
                 a->pGraph ? (void *)*a->pGraph : NULL);
    break;
  }
  case HIP_API_ID_hipGraphInstantiate: {
    const __typeof__(d->args.hipGraphInstantiate) *a = &d->args.hipGraphInstantiate;
    n = snprintf(buf, len, "graphExec = %p | graph = %p",
                 a->pGraphExec ? (void *)*a->pGraphExec : NULL, (void *)a->graph);
    break;
  }
  case HIP_API_ID_hipGraphInstantiateWithFlags: {
    const __typeof__(d->args.hipGraphInstantiateWithFlags) *a =
        &d->args.hipGraphInstantiateWithFlags;
    n = snprintf(buf, len, "graphExec = %p | graph = %p",
                 a->pGraphExec ? (void *)*a->pGraphExec : NULL, (void *)a->graph);
    break;
  }
  case HIP_API_ID_hipGraphLaunch:
    n = snprintf(buf, len, "graphExec = %p | stream = %p", (void *)d->args.hipGraphLaunch.graphExec,
                 (void *)d->args.hipGraphLaunch.stream);
    break;
  /* allocations as rocmProfileData writes them (the size in full) */
  case HIP_API_ID_hipMalloc:
    n = snprintf(buf, len, "ptr=%p | size=0x%zx",
                 d->args.hipMalloc.ptr ? *d->args.hipMalloc.ptr : NULL, d->args.hipMalloc.size);
    break;
  case HIP_API_ID_hipFree:
    n = snprintf(buf, len, "ptr=%p", d->args.hipFree.ptr);
    break;
  default:
    break;
  }
  return n > 0 && (size_t)n < len ? buf : "";
}

/* Calls left out, as rocmProfileData's roctracer source leaves them out:
 * frequent and uninformative (its list but for hipGetDevicePropertiesR0600
 * and hipRuntimeGetVersion, which HIP 5.2's callbacks do not have). */
static int hip_skipped(uint32_t cid) {
  switch (cid) {
  case HIP_API_ID_hipGetDevice:
  case HIP_API_ID_hipSetDevice:
  case HIP_API_ID_hipGetLastError:
  case HIP_API_ID_hipPeekAtLastError:
  case HIP_API_ID___hipPushCallConfiguration:
  case HIP_API_ID___hipPopCallConfiguration:
  case HIP_API_ID_hipCtxSetCurrent:
  case HIP_API_ID_hipGetDeviceCount:
  case HIP_API_ID_hipDeviceGetAttribute:
  case HIP_API_ID_hipModuleGetFunction:
    return 1;
  default:
    return 0;
  }
}

/* The data of a thread's calls in progress, one per nesting level
 * (hip_activity); allocated at the thread's first call and freed at its
 * exit (g_hip_data_key), since a library that ROCr dlopens as a tool has
 * little static TLS to spare. */
struct hip_data_stack {
  int depth;
  hip_api_data_t data[HIP_API_MAX_DEPTH];
};
static __thread struct hip_data_stack *t_hip_data;
static pthread_key_t g_hip_data_key;
/* hip_activity's registered argument: set, the runtime is giving a call's
 * data back. */
static char hip_activity_tag;

/* g_hip_data_key's destructor: a HIP call later in the thread's exit (another
 * destructor's) gets a new stack, never the freed one. */
static void hip_data_free(void *stack) {
  t_hip_data = NULL;
  free(stack);
}

/* The activity callback of HIP 5's spawner (see the file comment): with no
 * argument, the data for a call that starts (NULL past HIP_API_MAX_DEPTH
 * levels or out of memory: the runtime then reports that call to nobody);
 * with its registered one, the innermost call's data back. */
static void *hip_activity(uint32_t cid, void *record, const void *data, void *arg) {
  (void)cid, (void)record, (void)data;
  struct hip_data_stack *st = t_hip_data;
  if (arg == &hip_activity_tag) {
    if (st && st->depth > 0)
      st->depth--;
    return NULL;
  }
  if (!st) {
    if (!(st = calloc(1, sizeof *st)))
      return NULL;
    if (pthread_setspecific(g_hip_data_key, st) != 0) {
      free(st);
      return NULL;
    }
    t_hip_data = st;
  }
  if (st->depth >= HIP_API_MAX_DEPTH)
    return NULL;
  hip_api_data_t *d = &st->data[st->depth++];
  memset(d, 0, sizeof *d);
  d->phase = HIP_API_PHASE_ENTER;
  return d;
}

static void hip_callback(uint32_t domain, uint32_t cid, const void *data, void *arg) {
  (void)arg;
  const hip_api_data_t *d = data;
  if (domain != HIP_API_DOMAIN || !d || hip_skipped(cid))
    return;
  if (d->phase == HIP_API_PHASE_ENTER) {
    int i = t_hip.depth++;
    if (i < HIP_API_MAX_DEPTH && (t_hip.own[i] = rpd_gpu_quiet != 0))
      t_hip.call[i] = NULL;
    else if (i < HIP_API_MAX_DEPTH) {
      t_hip.start[i] = rpd_now();
      struct rpd_hip_call *c = calloc(1, sizeof *c);
      if (c) {
        pthread_mutex_init(&c->lock, NULL);
        c->refs = 1;
      }
      t_hip.call[i] = c;
    }
    return;
  }
  if (t_hip.depth == 0) /* tracing began inside this call */
    return;
  int i = --t_hip.depth;
  if (i >= HIP_API_MAX_DEPTH)
    return;
  if (t_hip.own[i])
    return;
  int64_t end = rpd_now();
  char args[4 * HIP_HANDLE_CHARS];
  uint64_t api = rpd_record_api("hip", "", hip_api_name(cid), hip_args(cid, d, args, sizeof args),
                                t_hip.start[i], end);
  if (api)
    hip_arguments(api, cid, d);
  struct rpd_hip_call *c = t_hip.call[i];
  t_hip.call[i] = NULL;
  if (!c)
    return;
  pthread_mutex_lock(&c->lock);
  c->api = api;
  c->done = 1;
  int n = c->nwaiting;
  struct hip_waiting waiting[HIP_API_MAX_WAITING];
  memcpy(waiting, c->waiting, sizeof waiting);
  pthread_mutex_unlock(&c->lock);
  for (int k = 0; k < n; k++)
    waiting[k].record(api, waiting[k].arg);
  hip_call_unref(c);
}

/* The HIP runtime's version from its file name (libamdhip64.so.MAJOR.MINOR.*),
 * fn one of its functions: asking the runtime would re-enter its start,
 * which is what called the tool. 0, or -1 where the name has none. */
static int hip_runtime_version(const void *fn, unsigned *major, unsigned *minor) {
  char path[PATH_MAX];
  if (rpdi_object_path(fn, path) != 0)
    return -1;
  const char *so = strstr(path, ".so.");
  return so && sscanf(so + 4, "%u.%u", major, minor) == 2 ? 0 : -1;
}

/* ---- HIP 5.3.3 to 6.2: the tracer interface (see the file comment) ---- */

/* The size of the runtime's hip_api_data_t, by version: measured from each
 * ROCm's own headers (ROCm/HIP's include/ with hipamd's, later clr's,
 * hip_prof_str.h, at their release tags: 5.3.3, 5.4.3, 5.5.0 and 5.7.1 840
 * bytes; 6.0.0, 6.1.0 and 6.2.0 1520); the interface came in 5.3.x and went
 * in 6.3. */
static const struct {
  unsigned major, minor_min, minor_max;
  size_t api_data_bytes;
} HIP_TRACE_LAYOUTS[] = {{5, 3, 7, 840}, {6, 0, 2, 1520}};

/* Where phase_enter lies in the runtime's hip_api_trace_data_t (set once,
 * before the runtime is given hip_tracer). */
static size_t g_hip_phases_at;
/* The correlation ids handed out (the runtime takes them for its ops). */
static _Atomic uint64_t g_hip_correlation;

static void hip_phase_enter(uint32_t id, void *data) {
  hip_api_data_t *d = data;
  d->phase = HIP_API_PHASE_ENTER;
  hip_callback(HIP_API_DOMAIN, id, d, NULL);
}
static void hip_phase_exit(uint32_t id, void *data) {
  hip_api_data_t *d = data;
  d->phase = HIP_API_PHASE_EXIT;
  hip_callback(HIP_API_DOMAIN, id, d, NULL);
}

/* The runtime's question at a call's start: 0 and the call's phases filled
 * in to trace it; another domain (the runtime's own ops: the HSA tool
 * records them) or a call left out, 1. */
static int hip_tracer(uint32_t domain, uint32_t id, void *data) {
  if (domain != HIP_API_DOMAIN || !data || hip_skipped(id))
    return 1;
  hip_api_data_t *d = data;
  d->correlation_id = atomic_fetch_add(&g_hip_correlation, 1) + 1;
  void (*phases[2])(uint32_t, void *) = {hip_phase_enter, hip_phase_exit};
  memcpy((unsigned char *)data + g_hip_phases_at, phases, sizeof phases);
  return 0;
}

/* Gives the runtime hip_tracer through register (its
 * hipRegisterTracerCallback), where its version's layout is known. */
static void hip_tracer_start(void (*reg)(int (*)(uint32_t, uint32_t, void *))) {
  unsigned major = 0, minor = 0;
  size_t bytes = 0;
  if (hip_runtime_version((const void *)reg, &major, &minor) == 0)
    for (size_t i = 0; i < sizeof HIP_TRACE_LAYOUTS / sizeof HIP_TRACE_LAYOUTS[0]; i++)
      if (HIP_TRACE_LAYOUTS[i].major == major && minor >= HIP_TRACE_LAYOUTS[i].minor_min &&
          minor <= HIP_TRACE_LAYOUTS[i].minor_max)
        bytes = HIP_TRACE_LAYOUTS[i].api_data_bytes;
  if (!bytes) {
    rpd_log("the HIP runtime's tracer interface is of a version whose layout nanoprobe does not "
            "know (HIP %u.%u, read from its file name): its calls are not traced (kernels and "
            "copies still are)",
            major, minor);
    return;
  }
  g_hip_phases_at = bytes + HIP_TRACE_WORDS_BYTES;
  reg(hip_tracer);
}

/* Says once, where the runtime is HIP 5.2, that it runs no stream callback or
 * graph host node while its calls are traced (seen over the tests' stand-in
 * ROCr, runtime/rpd/README.md: its profiler on, ROCclr's completion handler
 * waits while any signal of a command's batch is above 0, a callback's own
 * included, which later ROCclr compares with 1). The version comes from the
 * runtime's file name: asking the runtime would re-enter its start, which is
 * what called the tool. */
static void hip_warn_callbacks(const void *fn) {
  unsigned major, minor;
  if (hip_runtime_version(fn, &major, &minor) == 0 && major == 5 && minor == 2)
    rpd_log("HIP %u.%u runs no stream callback or graph host node while its calls are traced "
            "(recording them turns its profiler on): a program that waits for one would wait "
            "forever; NANO_HIP_CALLS=0 traces it without its HIP calls",
            major, minor);
}

void rpd_hip_api_start(void) {
  if (atomic_exchange(&g_started, 1))
    return;
  int on = 1;
  nano_env_bool("NANO_HIP_CALLS", &on);
  if (!on)
    return; /* no HIP rows, and the runtime's profiler left off */
  typedef hipError_t (*register_fn)(uint32_t, void *, void *);
  typedef void (*tracer_fn)(int (*)(uint32_t, uint32_t, void *));
  register_fn reg = (register_fn)dlsym(RTLD_DEFAULT, "hipRegisterApiCallback");
  register_fn act = (register_fn)dlsym(RTLD_DEFAULT, "hipRegisterActivityCallback");
  tracer_fn tracer = (tracer_fn)dlsym(RTLD_DEFAULT, "hipRegisterTracerCallback");
  if (!reg && tracer) {
    hip_tracer_start(tracer);
    return;
  }
  if (!reg) {
    if (dlsym(RTLD_DEFAULT, "hipMalloc")) /* a HIP runtime, of ROCm 6.3 or later */
      rpd_log("the HIP runtime serves neither of the callback interfaces nanoprobe uses (ROCm "
              "6.3 on serves rocprofiler-sdk's alone, not used yet): its calls are not traced "
              "(kernels and copies still are)");
    return; /* else no HIP runtime in the program: its HSA calls are traced alone */
  }
  if (!act) {
    rpd_log("the HIP runtime has no hipRegisterActivityCallback: its calls are not traced");
    return;
  }
  if (pthread_key_create(&g_hip_data_key, hip_data_free) != 0) {
    rpd_log("pthread_key_create failed: HIP calls are not traced");
    return;
  }
  int failed = 0;
  for (uint32_t id = HIP_API_ID_FIRST; id <= HIP_API_ID_LAST; id++)
    if (!hip_skipped(id) && (reg(id, (void *)hip_callback, NULL) != hipSuccess ||
                             act(id, (void *)hip_activity, &hip_activity_tag) != hipSuccess))
      failed++;
  if (failed)
    rpd_log("the HIP runtime refused %d of its API callbacks: those calls are not traced", failed);
  hip_warn_callbacks((const void *)reg);
}
