/*
 * standin_hip.c: a stand-in HIP runtime (libamdhip64.so.5) on HSA, for
 * programs built by plain hipcc (issue 38's end-to-end test). It does what
 * ROCclr does for the calls hipcc's host code and a simple program make,
 * through the exported hsa_* functions only, so that an HSA tool sees them
 * as it would under the real runtime:
 *   - __hipRegisterFatBinary: the program's .hip_fatbin wrapper ("HIPF") and
 *     its clang offload bundle; the code object for the GPU agent's arch
 *     (hipv4-amdgcn-amd-amdhsa--gfxNNN) is loaded at the first launch
 *     (code object reader from memory, executable, freeze);
 *   - __hipRegisterFunction: host stub -> kernel name;
 *   - hipLaunchKernel: the kernel's argument list from its metadata
 *     (kerneldb), the kernarg segment in the kernarg pool (explicit
 *     arguments from the launch's, hidden ones by value kind: block counts,
 *     group sizes, remainders, grid dimensions, dynamic LDS; the rest 0), an
 *     AQL dispatch packet (group segment: static + the launch's dynamic LDS)
 *     with a completion signal, on one queue;
 *   - hipDeviceSynchronize, and hipMemcpy before it copies: every launch's
 *     signal waited for; hipMalloc/hipFree: the GPU's memory pool;
 *   - streams and graph capture: hipStreamCreate, hipStreamBeginCapture,
 *     hipStreamEndCapture (launches on a capturing stream become nodes),
 *     hipGraphInstantiate, hipGraphLaunch (each node a dispatch),
 *     hipStreamSynchronize;
 *   - modules as Triton and Tensile use them: hipModuleLoadData (a code
 *     object in memory), hipModuleGetFunction, hipModuleLaunchKernel,
 *     hipExtModuleLaunchKernel
 *     (kernelParams; extra refused);
 *   - what nanoprobe's GPU back end calls for a program built with the
 *     plugin: device properties (gcnArchName, warpSize from the agent),
 *     host memory the device reaches (the kernarg pool), streams with flags,
 *     async copies, memsets and host functions (in stream order: the work
 *     before them done, then at once; in a capture, nodes of the graph),
 *     events (recorded once the work before them is done), capture status
 *     and the thread's capture mode: while a capture in global mode runs,
 *     allocation, stream creation and synchronization by a thread whose mode
 *     is not relaxed fail and spoil the capture (HIP's rule);
 *   - roctracer's callback interface as HIP 5's spawner (hipamd's
 *     src/hip_prof_api.h) serves it: hipRegisterApiCallback and
 *     hipRegisterActivityCallback; a call is reported only while an
 *     activity callback is registered for its id: that callback, asked
 *     act(id, NULL, NULL, NULL) at the call's start, hands out the
 *     hip_api_data_t the arguments are written into (NULL: not reported),
 *     the API callback gets it at the enter and, phase set to exit, at the
 *     exit (domain 3), then act(id, NULL, NULL, its registered argument)
 *     takes it back; hipKernelNameRefByPtr, hipKernelNameRef. Built with
 *     STANDIN_HIP_TRACER, it is HIP 6.2 there instead: it serves the
 *     interface of HIP 5.3.3 to 6.2 (clr's hipamd/src/hip_prof_api.h) and
 *     not the old one: hipRegisterTracerCallback(fn); at a call's start
 *     fn(3, id, data), data the call's hip_api_trace_data_t, left as
 *     uninitialised memory is (a pattern), in HIP 6.2's layout; fn's 0
 *     enables the call: the arguments written, phase_enter called, and
 *     phase_exit at its end, both taken from where HIP 6.2 has them.
 * Exported under HIP's symbol versions (hip_4.2; graphs hip_4.3), so a program linked by
 * hipcc against the real libamdhip64 runs on it.
 */
#define _GNU_SOURCE
#define __HIP_PLATFORM_AMD__
#include <hip/hip_runtime_api.h>
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <elf.h>
#include <string.h>

#include <hip/amd_detail/hip_prof_str.h>

#include "kerneldb.h"

/* roctracer's prof_protocol.h: the HIP API domain, a call's exit phase. */
#define API_DOMAIN_HIP 3
#define API_EXIT 1

#ifdef STANDIN_HIP_TRACER
/* HIP 6.2's hip_api_trace_data_t: its hip_api_data_t is 1520 bytes (the
 * argument union grew past HIP 5.2's, whose headers describe its start
 * here: measured from ROCm 6.2's own headers), then the phase_enter
 * timestamp and phase_data words, then the two phase functions. */
#define TRACE_API_DATA_BYTES 1520
struct trace_data {
  union {
    hip_api_data_t api_data;
    unsigned char room[TRACE_API_DATA_BYTES];
  };
  uint64_t phase_enter_timestamp, phase_data;
  void (*phase_enter)(uint32_t cid, struct trace_data *data);
  void (*phase_exit)(uint32_t cid, struct trace_data *data);
};
_Static_assert(offsetof(struct trace_data, phase_enter) == TRACE_API_DATA_BYTES + 16,
               "HIP 6.2's hip_api_trace_data_t");
/* What uninitialised stack memory holds here: a tool that leaves a field
 * unwritten calls this. */
#define TRACE_UNINITIALISED 0xa5
typedef int (*tracer_callback)(uint32_t domain, uint32_t cid, void *data);
static tracer_callback g_tracer;

void hipRegisterTracerCallback(tracer_callback fn) { g_tracer = fn; }

/* A call's trace data, at one address from its start to its end. */
struct api_call {
  struct trace_data td;
  int on;
};

/* The start of call cid with the arguments in args: the tracer asked, the
 * arguments written, phase_enter. */
static void api_begin(uint32_t cid, const hip_api_data_t *args, struct api_call *c) {
  tracer_callback fn = g_tracer;
  memset(&c->td, TRACE_UNINITIALISED, sizeof c->td);
  c->on = fn && fn(API_DOMAIN_HIP, cid, &c->td) == 0;
  if (!c->on)
    return;
  memcpy(&c->td.api_data.args, &args->args, sizeof args->args);
  if (c->td.phase_enter)
    c->td.phase_enter(cid, &c->td);
}
/* The end of a call: phase_exit. */
static void api_end(uint32_t cid, struct api_call *c) {
  if (c->on && c->td.phase_exit)
    c->td.phase_exit(cid, &c->td);
}
#else
typedef void (*api_callback)(uint32_t domain, uint32_t cid, const void *data, void *arg);
typedef void *(*act_callback)(uint32_t cid, void *record, const void *data, void *arg);
static struct {
  api_callback fn;
  void *arg;
  act_callback act;
  void *act_arg;
} g_callbacks[HIP_API_ID_LAST + 1];
/* Activity callbacks registered: the runtime's profiler is on. */
static int g_profiler_on;

hipError_t hipRegisterApiCallback(uint32_t id, void *fn, void *arg) {
  if (id < HIP_API_ID_FIRST || id > HIP_API_ID_LAST)
    return hipErrorInvalidValue;
  g_callbacks[id].fn = (api_callback)fn;
  g_callbacks[id].arg = arg;
  return hipSuccess;
}
hipError_t hipRegisterActivityCallback(uint32_t id, void *fn, void *arg) {
  if (id < HIP_API_ID_FIRST || id > HIP_API_ID_LAST)
    return hipErrorInvalidValue;
  g_profiler_on += (fn != NULL) - (g_callbacks[id].act != NULL);
  g_callbacks[id].act = (act_callback)fn;
  g_callbacks[id].act_arg = arg;
  return hipSuccess;
}

/* A call's callbacks, taken at its start as the spawner takes them. */
struct api_call {
  api_callback fn;
  void *arg;
  act_callback act;
  void *act_arg;
  hip_api_data_t *data; /* the activity callback's; NULL: not reported */
};

/* The start of call cid with the arguments in args: the activity callback's
 * data, the arguments in it, the API callback's enter. */
static void api_begin(uint32_t cid, const hip_api_data_t *args, struct api_call *c) {
  memset(c, 0, sizeof *c);
  if (!g_profiler_on || !g_callbacks[cid].act)
    return;
  c->fn = g_callbacks[cid].fn, c->arg = g_callbacks[cid].arg;
  c->act = g_callbacks[cid].act, c->act_arg = g_callbacks[cid].act_arg;
  if (!(c->data = c->act(cid, NULL, NULL, NULL)))
    return;
  memcpy(&c->data->args, &args->args, sizeof c->data->args);
  if (c->fn) {
    c->fn(API_DOMAIN_HIP, cid, c->data, c->arg);
    c->data->phase = API_EXIT;
  }
}
/* The end of a call: the API callback's exit, the data given back. */
static void api_end(uint32_t cid, struct api_call *c) {
  if (!c->data)
    return;
  if (c->fn)
    c->fn(API_DOMAIN_HIP, cid, c->data, c->arg);
  c->act(cid, NULL, NULL, c->act_arg);
}
#endif

#define BUNDLE_MAGIC "__CLANG_OFFLOAD_BUNDLE__"
#define FATBIN_MAGIC 0x48495046u /* "HIPF" */
#define MAX_PENDING 256
#define MAX_FUNCTIONS 64
#define QUEUE_SIZE 64
#define MAX_NODES 16

struct module {
  const char *image; /* the code object for the agent, in the program's bundle */
  size_t size;
  int loaded;
  hsa_executable_t exe;
  kdb *db;
};

struct function {
  const void *host;
  struct module *m;
  char name[256];
};

static struct {
  pthread_mutex_t lock;
  int ready;
  hsa_agent_t gpu;
  hsa_amd_memory_pool_t kernarg, device;
  hsa_queue_t *queue;
  char arch[64];
  struct function fns[MAX_FUNCTIONS];
  int nfns;
  hsa_signal_t pending[MAX_PENDING];
  void *pending_args[MAX_PENDING];
  int npending;
} g = {PTHREAD_MUTEX_INITIALIZER};

static void die(const char *what) {
  fprintf(stderr, "stand-in HIP: %s\n", what);
  exit(1);
}

static hsa_status_t find_gpu(hsa_agent_t a, void *data) {
  (void)data;
  hsa_device_type_t t;
  if (hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t) == HSA_STATUS_SUCCESS && t == HSA_DEVICE_TYPE_GPU)
    g.gpu = a;
  return HSA_STATUS_SUCCESS;
}
static hsa_status_t find_pool(hsa_amd_memory_pool_t p, void *data) {
  uint32_t flags = 0;
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
  if (data && (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT))
    g.kernarg = p;
  if (!data && (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED))
    g.device = p;
  return HSA_STATUS_SUCCESS;
}
static hsa_status_t find_pools(hsa_agent_t a, void *data) {
  (void)data;
  hsa_device_type_t t;
  if (hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t) == HSA_STATUS_SUCCESS)
    hsa_amd_agent_iterate_memory_pools(a, find_pool, t == HSA_DEVICE_TYPE_CPU ? (void *)1 : NULL);
  return HSA_STATUS_SUCCESS;
}

/* HSA, the GPU, its pools and one queue, at the first call that needs them. */
static void init(void) {
  if (g.ready)
    return;
  if (hsa_init() != HSA_STATUS_SUCCESS || hsa_iterate_agents(find_gpu, NULL) != HSA_STATUS_SUCCESS ||
      !g.gpu.handle || hsa_iterate_agents(find_pools, NULL) != HSA_STATUS_SUCCESS ||
      !g.kernarg.handle || !g.device.handle)
    die("no GPU agent or pools");
  char name[64] = "";
  hsa_agent_get_info(g.gpu, HSA_AGENT_INFO_NAME, name);
  snprintf(g.arch, sizeof g.arch, "%s", name);
  if (hsa_queue_create(g.gpu, QUEUE_SIZE, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX, UINT32_MAX,
                       &g.queue) != HSA_STATUS_SUCCESS)
    die("no queue");
  g.ready = 1;
}

void **__hipRegisterFatBinary(const void *data) {
  const struct {
    uint32_t magic, version;
    const char *binary;
    void *unused;
  } *w = data;
  if (!w || w->magic != FATBIN_MAGIC || memcmp(w->binary, BUNDLE_MAGIC, strlen(BUNDLE_MAGIC)))
    die("a fat binary that is no HIP offload bundle");
  pthread_mutex_lock(&g.lock);
  init();
  struct module *m = calloc(1, sizeof *m);
  if (!m)
    die("out of memory");
  const char *p = w->binary + strlen(BUNDLE_MAGIC);
  uint64_t n, off, size, idlen;
  memcpy(&n, p, 8);
  p += 8;
  char want[96];
  snprintf(want, sizeof want, "hipv4-amdgcn-amd-amdhsa--%s", g.arch);
  for (uint64_t i = 0; i < n; i++) {
    memcpy(&off, p, 8), memcpy(&size, p + 8, 8), memcpy(&idlen, p + 16, 8);
    if (idlen == strlen(want) && !memcmp(p + 24, want, idlen))
      m->image = w->binary + off, m->size = size;
    p += 24 + idlen;
  }
  pthread_mutex_unlock(&g.lock);
  if (!m->image)
    fprintf(stderr, "stand-in HIP: no code object for %s in the program\n", want);
  return (void **)m;
}

void __hipUnregisterFatBinary(void **modules) { (void)modules; }

void __hipRegisterFunction(void **modules, const void *host, char *device, const char *name,
                           unsigned limit, void *tid, void *bid, dim3 *block, dim3 *grid, int *wsize) {
  (void)device, (void)limit, (void)tid, (void)bid, (void)block, (void)grid, (void)wsize;
  pthread_mutex_lock(&g.lock);
  if (g.nfns == MAX_FUNCTIONS)
    die("too many kernels");
  struct function *f = &g.fns[g.nfns++];
  f->host = host;
  f->m = (struct module *)modules;
  snprintf(f->name, sizeof f->name, "%s", name);
  pthread_mutex_unlock(&g.lock);
}

static __thread struct {
  dim3 grid, block;
  size_t shared;
  hipStream_t stream;
} t_config;

hipError_t __hipPushCallConfiguration(dim3 grid, dim3 block, size_t shared, hipStream_t stream) {
  t_config.grid = grid, t_config.block = block, t_config.shared = shared, t_config.stream = stream;
  return hipSuccess;
}
hipError_t __hipPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shared, hipStream_t *stream) {
  *grid = t_config.grid, *block = t_config.block, *shared = t_config.shared, *stream = t_config.stream;
  return hipSuccess;
}

static void module_load(struct module *m) {
  if (m->loaded)
    return;
  hsa_code_object_reader_t r;
  char err[256];
  if (!m->image || hsa_code_object_reader_create_from_memory(m->image, m->size, &r) != HSA_STATUS_SUCCESS ||
      hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL,
                                &m->exe) != HSA_STATUS_SUCCESS ||
      hsa_executable_load_agent_code_object(m->exe, g.gpu, r, NULL, NULL) != HSA_STATUS_SUCCESS ||
      hsa_executable_freeze(m->exe, NULL) != HSA_STATUS_SUCCESS ||
      hsa_code_object_reader_destroy(r) != HSA_STATUS_SUCCESS ||
      kdb_open_memory(m->image, m->size, "program", &m->db, err, sizeof err) != 0)
    die("the program's code object cannot be loaded");
  m->loaded = 1;
}

static uint64_t hidden(const char *kind, dim3 grid, dim3 block, size_t shared) {
  const uint32_t gv[3] = {grid.x, grid.y, grid.z}, bv[3] = {block.x, block.y, block.z};
  for (int d = 0; d < 3; d++) {
    char name[40];
    snprintf(name, sizeof name, "hidden_block_count_%c", "xyz"[d]);
    if (!strcmp(kind, name))
      return gv[d];
    snprintf(name, sizeof name, "hidden_group_size_%c", "xyz"[d]);
    if (!strcmp(kind, name))
      return bv[d];
  }
  if (!strcmp(kind, "hidden_grid_dims"))
    return grid.z > 1 || block.z > 1 ? 3 : grid.y > 1 || block.y > 1 ? 2 : 1;
  if (!strcmp(kind, "hidden_dynamic_lds_size"))
    return shared;
  return 0; /* offsets, remainders (whole groups), pointers the stand-in does not give */
}

/* A node of a graph being captured, run in capture order at each launch:
 * a kernel dispatch (its packet and kernarg bytes), a copy, a memset or a
 * host function. */
enum node_kind { NODE_KERNEL, NODE_COPY, NODE_MEMSET, NODE_HOST };
struct node {
  enum node_kind kind;
  hsa_kernel_dispatch_packet_t p;
  uint32_t kernarg;
  char args[512];
  void *dst; /* copy, memset */
  const void *src;
  size_t bytes;
  int value;
  hipHostFn_t fn; /* host function */
  void *arg;
};
struct graph {
  struct node nodes[MAX_NODES];
  int n;
};
struct graph_exec {
  struct graph *graph;
};
struct stream {
  struct graph *capture; /* the graph being captured, or NULL */
  int global;            /* its capture's mode is global */
  int invalidated;       /* an unsafe call spoiled it (its end fails) */
};

/* Captures in global mode under way: while there is one, a thread whose
 * mode is not relaxed may not make "potentially unsafe" calls (allocation,
 * stream creation, synchronization), as HIP says; such a call fails and
 * spoils the captures. */
static int g_global_captures;
static __thread hipStreamCaptureMode t_capture_mode = hipStreamCaptureModeGlobal;
static struct stream *g_capturing[8];

/* Submits packet p (kernarg bytes args, kernarg of them) with a completion
 * signal of its own, pending until synchronize (g.lock held). */
static void submit(hsa_kernel_dispatch_packet_t p, const char *args, uint32_t kernarg) {
  char *ka = NULL;
  if (hsa_amd_memory_pool_allocate(g.kernarg, kernarg ? kernarg : 16, 0, (void **)&ka) ||
      hsa_amd_agents_allow_access(1, &g.gpu, NULL, ka))
    die("no kernarg memory");
  memcpy(ka, args, kernarg);
  hsa_signal_t done;
  if (g.npending == MAX_PENDING || hsa_signal_create(1, 0, NULL, &done) != HSA_STATUS_SUCCESS)
    die("too many launches in flight");
  g.pending[g.npending] = done;
  g.pending_args[g.npending++] = ka;
  p.kernarg_address = ka;
  p.completion_signal = done;
  uint16_t header = HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE |
                    1 << HSA_PACKET_HEADER_BARRIER |
                    HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE |
                    HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE;
  uint64_t i = hsa_queue_add_write_index_relaxed(g.queue, 1);
  while (i - hsa_queue_load_read_index_scacquire(g.queue) >= g.queue->size)
    ;
  unsigned char *slot = (unsigned char *)g.queue->base_address + (i % g.queue->size) * 64;
  memcpy(slot + 2, (unsigned char *)&p + 2, 62);
  __atomic_store_n((uint16_t *)slot, header, __ATOMIC_RELEASE);
  hsa_signal_store_screlease(g.queue->doorbell_signal, (hsa_signal_value_t)i);
}

static hipError_t launch(const void *fn, dim3 grid, dim3 block, void **args, size_t shared,
                         hipStream_t stream) {
  pthread_mutex_lock(&g.lock);
  struct function *f = NULL;
  for (int i = 0; i < g.nfns && !f; i++)
    if (g.fns[i].host == fn)
      f = &g.fns[i];
  if (!f) {
    pthread_mutex_unlock(&g.lock);
    return hipErrorInvalidDeviceFunction;
  }
  module_load(f->m);
  const kdb_kernel *k = NULL;
  for (size_t i = 0; i < kdb_kernel_count(f->m->db) && !k; i++)
    if (!strcmp(kdb_kernel_at(f->m->db, i)->name, f->name))
      k = kdb_kernel_at(f->m->db, i);
  char sym[300];
  snprintf(sym, sizeof sym, "%s.kd", f->name);
  hsa_executable_symbol_t s;
  uint64_t object;
  uint32_t kernarg, group, priv;
  if (!k || hsa_executable_get_symbol_by_name(f->m->exe, sym, &g.gpu, &s) != HSA_STATUS_SUCCESS ||
      hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &object) ||
      hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE, &kernarg) ||
      hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE, &group) ||
      hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE, &priv))
    die("a kernel of the program is missing");
  char ka[512] = {0};
  if (kernarg > sizeof ka)
    die("a kernarg segment larger than the stand-in takes");
  for (size_t i = 0, e = 0; i < k->arg_count; i++) {
    const kdb_arg *a = &k->args[i];
    if (a->offset + a->size > kernarg)
      continue;
    if (!a->hidden) {
      memcpy(ka + a->offset, args[e++], a->size);
    } else {
      uint64_t v = hidden(a->value_kind ? a->value_kind : "", grid, block, shared);
      memcpy(ka + a->offset, &v, a->size < 8 ? a->size : 8);
    }
  }
  hsa_kernel_dispatch_packet_t p = {0};
  p.setup = 3 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
  p.workgroup_size_x = (uint16_t)block.x, p.workgroup_size_y = (uint16_t)block.y;
  p.workgroup_size_z = (uint16_t)block.z;
  p.grid_size_x = grid.x * block.x, p.grid_size_y = grid.y * block.y, p.grid_size_z = grid.z * block.z;
  p.group_segment_size = group + (uint32_t)shared;
  p.private_segment_size = priv;
  p.kernel_object = object;
  struct stream *st = (struct stream *)stream;
  if (st && st->capture) { /* a node of the graph, not a dispatch */
    if (st->capture->n == MAX_NODES)
      die("too many nodes in a graph");
    struct node *nd = &st->capture->nodes[st->capture->n++];
    nd->kind = NODE_KERNEL;
    nd->p = p;
    nd->kernarg = kernarg;
    memcpy(nd->args, ka, kernarg);
  } else {
    submit(p, ka, kernarg);
  }
  pthread_mutex_unlock(&g.lock);
  return hipSuccess;
}

static hipError_t synchronize(void) {
  pthread_mutex_lock(&g.lock);
  for (int i = 0; i < g.npending; i++) {
    while (hsa_signal_wait_scacquire(g.pending[i], HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX,
                                     HSA_WAIT_STATE_BLOCKED) != 0)
      ;
    hsa_signal_destroy(g.pending[i]);
    hsa_amd_memory_pool_free(g.pending_args[i]);
  }
  g.npending = 0;
  pthread_mutex_unlock(&g.lock);
  return hipSuccess;
}

static int unsafe_now(void);

/* n bytes of the GPU's memory pool, or (host) of the fine-grained kernarg
 * pool, host memory the GPU is then given access to. */
static hipError_t pool_malloc(void **p, size_t n, int host) {
  if (unsafe_now())
    return hipErrorStreamCaptureUnsupported;
  pthread_mutex_lock(&g.lock);
  init();
  hsa_status_t rc = hsa_amd_memory_pool_allocate(host ? g.kernarg : g.device, n ? n : 1, 0, p);
  if (rc == HSA_STATUS_SUCCESS && host)
    rc = hsa_amd_agents_allow_access(1, &g.gpu, NULL, *p);
  pthread_mutex_unlock(&g.lock);
  return rc == HSA_STATUS_SUCCESS ? hipSuccess : hipErrorOutOfMemory;
}

static hipError_t device_free(void *p) {
  synchronize();
  return !p || hsa_amd_memory_pool_free(p) == HSA_STATUS_SUCCESS ? hipSuccess : hipErrorInvalidValue;
}

static hipError_t copy(void *dst, const void *src, size_t n, hipMemcpyKind kind) {
  (void)kind;
  synchronize();
  memcpy(dst, src, n);
  return hipSuccess;
}

/* ---- the exported calls, each between its callbacks ---- */

/* The calling thread's last error, as HIP keeps it: set by every call that
 * fails, kept across calls that succeed, returned and reset by
 * hipGetLastError. */
static __thread hipError_t t_last_error;

#define CALL(cid, fill, call)                                                                      \
  do {                                                                                             \
    hip_api_data_t d_;                                                                             \
    memset(&d_, 0, sizeof d_);                                                                     \
    fill;                                                                                          \
    struct api_call c_;                                                                            \
    api_begin(cid, &d_, &c_);                                                                      \
    hipError_t rc_ = (call);                                                                       \
    if (rc_ != hipSuccess)                                                                         \
      t_last_error = rc_;                                                                          \
    api_end(cid, &c_);                                                                             \
    return rc_;                                                                                    \
  } while (0)

hipError_t hipLaunchKernel(const void *fn, dim3 grid, dim3 block, void **args, size_t shared,
                           hipStream_t stream) {
  CALL(HIP_API_ID_hipLaunchKernel,
       (d_.args.hipLaunchKernel.function_address = fn, d_.args.hipLaunchKernel.numBlocks = grid,
        d_.args.hipLaunchKernel.dimBlocks = block, d_.args.hipLaunchKernel.args = args,
        d_.args.hipLaunchKernel.sharedMemBytes = shared, d_.args.hipLaunchKernel.stream = stream),
       launch(fn, grid, block, args, shared, stream));
}
hipError_t hipDeviceSynchronize(void) { CALL(HIP_API_ID_hipDeviceSynchronize, (void)0, synchronize()); }
hipError_t hipMalloc(void **p, size_t n) {
  CALL(HIP_API_ID_hipMalloc, (d_.args.hipMalloc.ptr = p, d_.args.hipMalloc.size = n),
       pool_malloc(p, n, 0));
}
hipError_t hipFree(void *p) { CALL(HIP_API_ID_hipFree, d_.args.hipFree.ptr = p, device_free(p)); }
hipError_t hipMemcpy(void *dst, const void *src, size_t n, hipMemcpyKind kind) {
  CALL(HIP_API_ID_hipMemcpy,
       (d_.args.hipMemcpy.dst = dst, d_.args.hipMemcpy.src = src, d_.args.hipMemcpy.sizeBytes = n,
        d_.args.hipMemcpy.kind = kind),
       copy(dst, src, n, kind));
}
hipError_t hipMemcpyHtoD(hipDeviceptr_t dst, void *src, size_t n) {
  CALL(HIP_API_ID_hipMemcpyHtoD,
       (d_.args.hipMemcpyHtoD.dst = dst, d_.args.hipMemcpyHtoD.src = src,
        d_.args.hipMemcpyHtoD.sizeBytes = n),
       copy(dst, src, n, hipMemcpyHostToDevice));
}
/* In stream order: after the work before it (the stand-in's device is one
 * queue), then at once. */
hipError_t hipMemcpyDtoHAsync(void *dst, hipDeviceptr_t src, size_t n, hipStream_t stream) {
  CALL(HIP_API_ID_hipMemcpyDtoHAsync,
       (d_.args.hipMemcpyDtoHAsync.dst = dst, d_.args.hipMemcpyDtoHAsync.src = src,
        d_.args.hipMemcpyDtoHAsync.sizeBytes = n, d_.args.hipMemcpyDtoHAsync.stream = stream),
       copy(dst, src, n, hipMemcpyDeviceToHost));
}
/* A 2D copy: height rows of width bytes, each at its pitch (a pitch below
 * the width is hipErrorInvalidPitchValue, as HIP says). */
static hipError_t copy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height) {
  if (dpitch < width || spitch < width)
    return hipErrorInvalidPitchValue;
  synchronize();
  for (size_t r = 0; r < height; r++)
    memcpy((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
  return hipSuccess;
}
hipError_t hipMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                       size_t height, hipMemcpyKind kind) {
  CALL(HIP_API_ID_hipMemcpy2D,
       (d_.args.hipMemcpy2D.dst = dst, d_.args.hipMemcpy2D.dpitch = dpitch,
        d_.args.hipMemcpy2D.src = src, d_.args.hipMemcpy2D.spitch = spitch,
        d_.args.hipMemcpy2D.width = width, d_.args.hipMemcpy2D.height = height,
        d_.args.hipMemcpy2D.kind = kind),
       copy2d(dst, dpitch, src, spitch, width, height));
}
/* One device: a peer copy names device 0 twice or fails (hipErrorInvalidDevice). */
hipError_t hipMemcpyPeer(void *dst, int dst_device, const void *src, int src_device, size_t n) {
  CALL(HIP_API_ID_hipMemcpyPeer,
       (d_.args.hipMemcpyPeer.dst = dst, d_.args.hipMemcpyPeer.dstDeviceId = dst_device,
        d_.args.hipMemcpyPeer.src = src, d_.args.hipMemcpyPeer.srcDeviceId = src_device,
        d_.args.hipMemcpyPeer.sizeBytes = n),
       dst_device || src_device ? hipErrorInvalidDevice
                                : copy(dst, src, n, hipMemcpyDeviceToDevice));
}
hipError_t hipMemcpyWithStream(void *dst, const void *src, size_t n, hipMemcpyKind kind,
                               hipStream_t stream) {
  CALL(HIP_API_ID_hipMemcpyWithStream,
       (d_.args.hipMemcpyWithStream.dst = dst, d_.args.hipMemcpyWithStream.src = src,
        d_.args.hipMemcpyWithStream.sizeBytes = n, d_.args.hipMemcpyWithStream.kind = kind,
        d_.args.hipMemcpyWithStream.stream = stream),
       copy(dst, src, n, kind));
}
/* The stand-in's device runs every workgroup at once in effect: a
 * cooperative grid is launched as any other. */
hipError_t hipLaunchCooperativeKernel(const void *fn, dim3 grid, dim3 block, void **args,
                                      unsigned int shared, hipStream_t stream) {
  CALL(HIP_API_ID_hipLaunchCooperativeKernel,
       (d_.args.hipLaunchCooperativeKernel.f = fn, d_.args.hipLaunchCooperativeKernel.gridDim = grid,
        d_.args.hipLaunchCooperativeKernel.blockDimX = block,
        d_.args.hipLaunchCooperativeKernel.kernelParams = args,
        d_.args.hipLaunchCooperativeKernel.sharedMemBytes = shared,
        d_.args.hipLaunchCooperativeKernel.stream = stream),
       launch(fn, grid, block, args, shared, stream));
}

/* A multi-device launch: each device's on its own stream, never the null
 * one (hipErrorInvalidHandle, as HIP 5.2 answers it); the stand-in's device
 * is the only one: every entry runs there, in order. */
static hipError_t launch_each(const hipLaunchParams *l, int n) {
  if (!l || n < 1)
    return hipErrorInvalidValue;
  for (int i = 0; i < n; i++)
    if (!l[i].stream)
      return hipErrorInvalidHandle;
  hipError_t rc = hipSuccess;
  for (int i = 0; i < n && rc == hipSuccess; i++)
    rc = launch(l[i].func, l[i].gridDim, l[i].blockDim, l[i].args, l[i].sharedMem, l[i].stream);
  return rc;
}
hipError_t hipLaunchCooperativeKernelMultiDevice(hipLaunchParams *l, int n, unsigned int flags) {
  CALL(HIP_API_ID_hipLaunchCooperativeKernelMultiDevice,
       (d_.args.hipLaunchCooperativeKernelMultiDevice.launchParamsList = l,
        d_.args.hipLaunchCooperativeKernelMultiDevice.numDevices = n,
        d_.args.hipLaunchCooperativeKernelMultiDevice.flags = flags),
       launch_each(l, n));
}
hipError_t hipExtLaunchMultiKernelMultiDevice(hipLaunchParams *l, int n, unsigned int flags) {
  CALL(HIP_API_ID_hipExtLaunchMultiKernelMultiDevice,
       (d_.args.hipExtLaunchMultiKernelMultiDevice.launchParamsList = l,
        d_.args.hipExtLaunchMultiKernelMultiDevice.numDevices = n,
        d_.args.hipExtLaunchMultiKernelMultiDevice.flags = flags),
       launch_each(l, n));
}

const char *hipKernelNameRefByPtr(const void *fn, hipStream_t stream) {
  (void)stream;
  for (int i = 0; i < g.nfns; i++)
    if (g.fns[i].host == fn)
      return g.fns[i].name;
  return NULL;
}

/* ---- modules ---- */

static hipError_t module_from_image(hipModule_t *out, const void *image) {
  const unsigned char *e = image;
  if (!out || !e || memcmp(e, "\177ELF", 4))
    return hipErrorInvalidImage;
  const Elf64_Ehdr *h = image;
  size_t size = h->e_shoff + (size_t)h->e_shnum * h->e_shentsize; /* the section headers end it */
  pthread_mutex_lock(&g.lock);
  init();
  struct module *m = calloc(1, sizeof *m);
  if (m)
    m->image = image, m->size = size;
  pthread_mutex_unlock(&g.lock);
  *out = (hipModule_t)m;
  return m ? hipSuccess : hipErrorOutOfMemory;
}

static hipError_t module_function(hipFunction_t *out, hipModule_t mod, const char *name) {
  pthread_mutex_lock(&g.lock);
  if (g.nfns == MAX_FUNCTIONS)
    die("too many kernels");
  struct function *f = &g.fns[g.nfns++];
  f->host = f; /* a module function is its own handle */
  f->m = (struct module *)mod;
  snprintf(f->name, sizeof f->name, "%s", name);
  pthread_mutex_unlock(&g.lock);
  *out = (hipFunction_t)f;
  return hipSuccess;
}

hipError_t hipModuleLoadData(hipModule_t *out, const void *image) {
  CALL(HIP_API_ID_hipModuleLoadData,
       (d_.args.hipModuleLoadData.module = out, d_.args.hipModuleLoadData.image = image),
       module_from_image(out, image));
}
hipError_t hipModuleGetFunction(hipFunction_t *out, hipModule_t mod, const char *name) {
  CALL(HIP_API_ID_hipModuleGetFunction,
       (d_.args.hipModuleGetFunction.function = out, d_.args.hipModuleGetFunction.module = mod,
        d_.args.hipModuleGetFunction.kname = name),
       module_function(out, mod, name));
}
hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                 unsigned by, unsigned bz, unsigned shared, hipStream_t stream,
                                 void **params, void **extra) {
  dim3 grid = {gx, gy, gz}, block = {bx, by, bz};
  CALL(HIP_API_ID_hipModuleLaunchKernel,
       (d_.args.hipModuleLaunchKernel.f = f, d_.args.hipModuleLaunchKernel.gridDimX = gx,
        d_.args.hipModuleLaunchKernel.gridDimY = gy, d_.args.hipModuleLaunchKernel.gridDimZ = gz,
        d_.args.hipModuleLaunchKernel.blockDimX = bx, d_.args.hipModuleLaunchKernel.blockDimY = by,
        d_.args.hipModuleLaunchKernel.blockDimZ = bz,
        d_.args.hipModuleLaunchKernel.sharedMemBytes = shared,
        d_.args.hipModuleLaunchKernel.stream = stream,
        d_.args.hipModuleLaunchKernel.kernelParams = params,
        d_.args.hipModuleLaunchKernel.extra = extra),
       extra ? hipErrorNotSupported : launch(f, grid, block, params, shared, stream));
}

/* Tensile's launch: sizes in work-items. HIP puts them into the dispatch
 * packet as they are; the stand-in's device runs whole workgroups, so a
 * size that is not a multiple of the workgroup's is refused. HIP declares it
 * in C++ (hip_ext.h, no extern "C"): its symbol is the mangled name. */
#define EXT_LAUNCH_SYMBOL                                                                          \
  "_Z24hipExtModuleLaunchKernelP18ihipModuleSymbol_tjjjjjjmP12ihipStream_tPPvS4_P11ihipEvent_tS6_j"
hipError_t hip_ext_module_launch(hipFunction_t f, uint32_t gx, uint32_t gy, uint32_t gz,
                                 uint32_t lx, uint32_t ly, uint32_t lz, size_t shared,
                                 hipStream_t stream, void **params, void **extra, hipEvent_t start,
                                 hipEvent_t stop, uint32_t flags) __asm__(EXT_LAUNCH_SYMBOL);
hipError_t hip_ext_module_launch(hipFunction_t f, uint32_t gx, uint32_t gy, uint32_t gz,
                                    uint32_t lx, uint32_t ly, uint32_t lz, size_t shared,
                                    hipStream_t stream, void **params, void **extra,
                                    hipEvent_t start, hipEvent_t stop, uint32_t flags) {
  int whole = lx && ly && lz && gx % lx == 0 && gy % ly == 0 && gz % lz == 0;
  dim3 grid = {whole ? gx / lx : 0, whole ? gy / ly : 0, whole ? gz / lz : 0}, block = {lx, ly, lz};
  CALL(HIP_API_ID_hipExtModuleLaunchKernel,
       (d_.args.hipExtModuleLaunchKernel.f = f,
        d_.args.hipExtModuleLaunchKernel.globalWorkSizeX = gx,
        d_.args.hipExtModuleLaunchKernel.globalWorkSizeY = gy,
        d_.args.hipExtModuleLaunchKernel.globalWorkSizeZ = gz,
        d_.args.hipExtModuleLaunchKernel.localWorkSizeX = lx,
        d_.args.hipExtModuleLaunchKernel.localWorkSizeY = ly,
        d_.args.hipExtModuleLaunchKernel.localWorkSizeZ = lz,
        d_.args.hipExtModuleLaunchKernel.sharedMemBytes = shared,
        d_.args.hipExtModuleLaunchKernel.hStream = stream,
        d_.args.hipExtModuleLaunchKernel.kernelParams = params,
        d_.args.hipExtModuleLaunchKernel.extra = extra,
        d_.args.hipExtModuleLaunchKernel.startEvent = start,
        d_.args.hipExtModuleLaunchKernel.stopEvent = stop,
        d_.args.hipExtModuleLaunchKernel.flags = flags),
       extra || start || stop || !whole ? hipErrorNotSupported
                                        : launch(f, grid, block, params, shared, stream));
}

const char *hipKernelNameRef(const hipFunction_t f) { return hipKernelNameRefByPtr(f, NULL); }

/* ---- streams and graphs ---- */

static hipError_t stream_create(hipStream_t *out) {
  *out = (hipStream_t)calloc(1, sizeof(struct stream));
  return *out ? hipSuccess : hipErrorOutOfMemory;
}
static hipError_t capture_begin(hipStream_t s, hipStreamCaptureMode mode) {
  struct stream *st = (struct stream *)s;
  if (!st || st->capture)
    return hipErrorIllegalState;
  st->capture = calloc(1, sizeof *st->capture);
  if (!st->capture)
    return hipErrorOutOfMemory;
  st->global = mode == hipStreamCaptureModeGlobal;
  st->invalidated = 0;
  pthread_mutex_lock(&g.lock);
  g_global_captures += st->global;
  for (size_t i = 0; i < sizeof g_capturing / sizeof g_capturing[0]; i++)
    if (!g_capturing[i]) {
      g_capturing[i] = st;
      break;
    }
  pthread_mutex_unlock(&g.lock);
  return hipSuccess;
}
static hipError_t capture_end(hipStream_t s, hipGraph_t *out) {
  struct stream *st = (struct stream *)s;
  if (!st || !st->capture)
    return hipErrorIllegalState;
  pthread_mutex_lock(&g.lock);
  g_global_captures -= st->global;
  for (size_t i = 0; i < sizeof g_capturing / sizeof g_capturing[0]; i++)
    if (g_capturing[i] == st)
      g_capturing[i] = NULL;
  pthread_mutex_unlock(&g.lock);
  int spoiled = st->invalidated;
  *out = spoiled ? NULL : (hipGraph_t)st->capture;
  st->capture = NULL;
  return spoiled ? hipErrorStreamCaptureInvalidated : hipSuccess;
}

/* Whether a "potentially unsafe" call fails now (and spoils the captures in
 * global mode). */
static int unsafe_now(void) {
  pthread_mutex_lock(&g.lock);
  int unsafe = g_global_captures > 0 && t_capture_mode != hipStreamCaptureModeRelaxed;
  for (size_t i = 0; unsafe && i < sizeof g_capturing / sizeof g_capturing[0]; i++)
    if (g_capturing[i] && g_capturing[i]->global)
      g_capturing[i]->invalidated = 1;
  pthread_mutex_unlock(&g.lock);
  if (unsafe)
    fprintf(stderr, "stand-in HIP: an unsafe call during a capture in global mode\n");
  return unsafe;
}
static hipError_t instantiate(hipGraphExec_t *out, hipGraph_t graph) {
  struct graph_exec *e = calloc(1, sizeof *e);
  if (!e)
    return hipErrorOutOfMemory;
  e->graph = (struct graph *)graph;
  *out = (hipGraphExec_t)e;
  return hipSuccess;
}
/* Runs node nd in stream order: a kernel is submitted; a copy, memset or
 * host function runs once the work before it is done. */
static void node_run(const struct node *nd) {
  if (nd->kind == NODE_KERNEL) {
    pthread_mutex_lock(&g.lock);
    submit(nd->p, nd->args, nd->kernarg);
    pthread_mutex_unlock(&g.lock);
    return;
  }
  synchronize();
  if (nd->kind == NODE_COPY)
    memcpy(nd->dst, nd->src, nd->bytes);
  else if (nd->kind == NODE_MEMSET)
    memset(nd->dst, nd->value, nd->bytes);
  else
    nd->fn(nd->arg);
}
static hipError_t graph_launch(hipGraphExec_t exec) {
  struct graph *gr = ((struct graph_exec *)exec)->graph;
  for (int i = 0; i < gr->n; i++)
    node_run(&gr->nodes[i]);
  return hipSuccess;
}

/* A node of the graph s captures, or, outside a capture, the same work run
 * now in stream order (the stand-in's device is one queue). */
static hipError_t stream_work(hipStream_t s, struct node nd) {
  struct stream *st = (struct stream *)s;
  if (st && st->capture) {
    pthread_mutex_lock(&g.lock);
    if (st->capture->n == MAX_NODES)
      die("too many nodes in a graph");
    st->capture->nodes[st->capture->n++] = nd;
    pthread_mutex_unlock(&g.lock);
    return hipSuccess;
  }
  node_run(&nd);
  return hipSuccess;
}

hipError_t hipStreamCreate(hipStream_t *out) {
  CALL(HIP_API_ID_hipStreamCreate, d_.args.hipStreamCreate.stream = out, stream_create(out));
}
hipError_t hipStreamBeginCapture(hipStream_t s, hipStreamCaptureMode mode) {
  CALL(HIP_API_ID_hipStreamBeginCapture,
       (d_.args.hipStreamBeginCapture.stream = s, d_.args.hipStreamBeginCapture.mode = mode),
       capture_begin(s, mode));
}
hipError_t hipStreamEndCapture(hipStream_t s, hipGraph_t *out) {
  CALL(HIP_API_ID_hipStreamEndCapture,
       (d_.args.hipStreamEndCapture.stream = s, d_.args.hipStreamEndCapture.pGraph = out),
       capture_end(s, out));
}
hipError_t hipGraphInstantiate(hipGraphExec_t *out, hipGraph_t graph, hipGraphNode_t *error_node,
                               char *log, size_t log_size) {
  CALL(HIP_API_ID_hipGraphInstantiate,
       (d_.args.hipGraphInstantiate.pGraphExec = out, d_.args.hipGraphInstantiate.graph = graph,
        d_.args.hipGraphInstantiate.pErrorNode = error_node,
        d_.args.hipGraphInstantiate.pLogBuffer = log,
        d_.args.hipGraphInstantiate.bufferSize = log_size),
       instantiate(out, graph));
}
hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t s) {
  CALL(HIP_API_ID_hipGraphLaunch,
       (d_.args.hipGraphLaunch.graphExec = exec, d_.args.hipGraphLaunch.stream = s),
       graph_launch(exec));
}
hipError_t hipStreamSynchronize(hipStream_t s) {
  CALL(HIP_API_ID_hipStreamSynchronize, d_.args.hipStreamSynchronize.stream = s,
       unsafe_now() ? hipErrorStreamCaptureUnsupported : synchronize());
}

/* ---- what nanoprobe's GPU back end calls (runtime/dispatch/gpu_hip.c) ---- */

/* One device, 0. */
hipError_t hipGetDevice(int *dev) {
  CALL(HIP_API_ID_hipGetDevice, d_.args.hipGetDevice.deviceId = dev, (*dev = 0, hipSuccess));
}
/* A stream's device, as HIP 5.2 exports it for roctracer (hipamd's
 * src/hip_intercept.cpp; its public hipStreamGetDevice came with ROCm 5.7):
 * the one device for a stream, the current one for the null stream. */
int hipGetStreamDeviceId(hipStream_t s);
int hipGetStreamDeviceId(hipStream_t s) {
  (void)s;
  return 0;
}
hipError_t hipSetDevice(int dev) {
  CALL(HIP_API_ID_hipSetDevice, d_.args.hipSetDevice.deviceId = dev,
       dev == 0 ? hipSuccess : hipErrorInvalidDevice);
}
/* The GPU agent's name as gcnArchName, its wavefront size as warpSize. */
static hipError_t device_properties(hipDeviceProp_t *p, int dev) {
  if (dev != 0)
    return hipErrorInvalidDevice;
  pthread_mutex_lock(&g.lock);
  init();
  pthread_mutex_unlock(&g.lock);
  uint32_t wave = 0;
  if (hsa_agent_get_info(g.gpu, HSA_AGENT_INFO_WAVEFRONT_SIZE, &wave) != HSA_STATUS_SUCCESS)
    return hipErrorInvalidDevice;
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "stand-in %s", g.arch);
  snprintf(p->gcnArchName, sizeof p->gcnArchName, "%s:sramecc+:xnack-", g.arch);
  p->warpSize = (int)wave;
  return hipSuccess;
}
hipError_t hipGetDeviceProperties(hipDeviceProp_t *p, int dev) {
  CALL(HIP_API_ID_hipGetDeviceProperties,
       (d_.args.hipGetDeviceProperties.props = p, d_.args.hipGetDeviceProperties.device = dev),
       device_properties(p, dev));
}
hipError_t hipHostMalloc(void **p, size_t n, unsigned flags) {
  CALL(HIP_API_ID_hipHostMalloc,
       (d_.args.hipHostMalloc.ptr = p, d_.args.hipHostMalloc.size = n,
        d_.args.hipHostMalloc.flags = flags),
       pool_malloc(p, n, 1));
}
hipError_t hipHostGetDevicePointer(void **d, void *h, unsigned flags) {
  CALL(HIP_API_ID_hipHostGetDevicePointer,
       (d_.args.hipHostGetDevicePointer.devPtr = d, d_.args.hipHostGetDevicePointer.hstPtr = h,
        d_.args.hipHostGetDevicePointer.flags = flags),
       (*d = h, hipSuccess)); /* one address space: the host's address */
}
hipError_t hipHostFree(void *p) {
  CALL(HIP_API_ID_hipHostFree, d_.args.hipHostFree.ptr = p, device_free(p));
}
hipError_t hipStreamCreateWithFlags(hipStream_t *out, unsigned flags) {
  CALL(HIP_API_ID_hipStreamCreateWithFlags,
       (d_.args.hipStreamCreateWithFlags.stream = out,
        d_.args.hipStreamCreateWithFlags.flags = flags),
       unsafe_now() ? hipErrorStreamCaptureUnsupported : stream_create(out));
}
hipError_t hipStreamIsCapturing(hipStream_t s, hipStreamCaptureStatus *status) {
  struct stream *st = (struct stream *)s;
  CALL(HIP_API_ID_hipStreamIsCapturing,
       (d_.args.hipStreamIsCapturing.stream = s,
        d_.args.hipStreamIsCapturing.pCaptureStatus = status),
       (*status = st && st->capture ? hipStreamCaptureStatusActive : hipStreamCaptureStatusNone,
        hipSuccess));
}
hipError_t hipThreadExchangeStreamCaptureMode(hipStreamCaptureMode *mode) {
  hipStreamCaptureMode old = t_capture_mode;
  CALL(HIP_API_ID_hipThreadExchangeStreamCaptureMode,
       d_.args.hipThreadExchangeStreamCaptureMode.mode = mode,
       (t_capture_mode = *mode, *mode = old, hipSuccess));
}
hipError_t hipMemcpyAsync(void *dst, const void *src, size_t n, hipMemcpyKind kind,
                          hipStream_t s) {
  CALL(HIP_API_ID_hipMemcpyAsync,
       (d_.args.hipMemcpyAsync.dst = dst, d_.args.hipMemcpyAsync.src = src,
        d_.args.hipMemcpyAsync.sizeBytes = n, d_.args.hipMemcpyAsync.kind = kind,
        d_.args.hipMemcpyAsync.stream = s),
       stream_work(s, (struct node){.kind = NODE_COPY, .dst = dst, .src = src, .bytes = n}));
}
hipError_t hipMemsetAsync(void *dst, int v, size_t n, hipStream_t s) {
  CALL(HIP_API_ID_hipMemsetAsync,
       (d_.args.hipMemsetAsync.dst = dst, d_.args.hipMemsetAsync.value = v,
        d_.args.hipMemsetAsync.sizeBytes = n, d_.args.hipMemsetAsync.stream = s),
       stream_work(s, (struct node){.kind = NODE_MEMSET, .dst = dst, .value = v, .bytes = n}));
}
hipError_t hipLaunchHostFunc(hipStream_t s, hipHostFn_t fn, void *arg) {
  CALL(HIP_API_ID_hipLaunchHostFunc,
       (d_.args.hipLaunchHostFunc.stream = s, d_.args.hipLaunchHostFunc.fn = fn,
        d_.args.hipLaunchHostFunc.userData = arg),
       stream_work(s, (struct node){.kind = NODE_HOST, .fn = fn, .arg = arg}));
}

/* Events: recorded once the work before them is done (the stand-in's
 * device is one queue), with the time then; a graph holds none. */
struct event {
  int recorded;
  struct timespec at;
};
static hipError_t event_create(hipEvent_t *e) {
  *e = (hipEvent_t)calloc(1, sizeof(struct event));
  return *e ? hipSuccess : hipErrorOutOfMemory;
}
static hipError_t event_record(hipEvent_t e, hipStream_t s) {
  struct stream *st = (struct stream *)s;
  if (!e)
    return hipErrorInvalidHandle;
  if (st && st->capture)
    return hipErrorNotSupported;
  synchronize();
  struct event *ev = (struct event *)e;
  clock_gettime(CLOCK_MONOTONIC, &ev->at);
  ev->recorded = 1;
  return hipSuccess;
}
static hipError_t event_elapsed(float *ms, hipEvent_t a, hipEvent_t b) {
  const struct event *x = (const struct event *)a, *y = (const struct event *)b;
  if (!x || !y)
    return hipErrorInvalidHandle;
  if (!x->recorded || !y->recorded)
    return hipErrorNotReady;
  *ms = (float)((y->at.tv_sec - x->at.tv_sec) * 1e3 + (y->at.tv_nsec - x->at.tv_nsec) / 1e6);
  return hipSuccess;
}
hipError_t hipEventCreateWithFlags(hipEvent_t *e, unsigned flags) {
  CALL(HIP_API_ID_hipEventCreateWithFlags,
       (d_.args.hipEventCreateWithFlags.event = e, d_.args.hipEventCreateWithFlags.flags = flags),
       event_create(e));
}
hipError_t hipEventDestroy(hipEvent_t e) {
  CALL(HIP_API_ID_hipEventDestroy, d_.args.hipEventDestroy.event = e, (free(e), hipSuccess));
}
hipError_t hipEventRecord(hipEvent_t e, hipStream_t s) {
  CALL(HIP_API_ID_hipEventRecord,
       (d_.args.hipEventRecord.event = e, d_.args.hipEventRecord.stream = s), event_record(e, s));
}
hipError_t hipEventQuery(hipEvent_t e) {
  CALL(HIP_API_ID_hipEventQuery, d_.args.hipEventQuery.event = e,
       !e ? hipErrorInvalidHandle
          : ((struct event *)e)->recorded ? hipSuccess : hipErrorNotReady);
}
hipError_t hipEventSynchronize(hipEvent_t e) {
  CALL(HIP_API_ID_hipEventSynchronize, d_.args.hipEventSynchronize.event = e,
       !e ? hipErrorInvalidHandle : unsafe_now() ? hipErrorStreamCaptureUnsupported : hipSuccess);
}
hipError_t hipEventElapsedTime(float *ms, hipEvent_t a, hipEvent_t b) {
  CALL(HIP_API_ID_hipEventElapsedTime,
       (d_.args.hipEventElapsedTime.ms = ms, d_.args.hipEventElapsedTime.start = a,
        d_.args.hipEventElapsedTime.stop = b),
       event_elapsed(ms, a, b));
}
hipError_t hipStreamWaitEvent(hipStream_t s, hipEvent_t e, unsigned flags) {
  CALL(HIP_API_ID_hipStreamWaitEvent,
       (d_.args.hipStreamWaitEvent.stream = s, d_.args.hipStreamWaitEvent.event = e,
        d_.args.hipStreamWaitEvent.flags = flags),
       e ? hipSuccess : hipErrorInvalidHandle); /* one queue: everything is in order */
}
const char *hipGetErrorName(hipError_t rc) {
  switch (rc) {
  case hipSuccess:
    return "hipSuccess";
  case hipErrorInvalidValue:
    return "hipErrorInvalidValue";
  case hipErrorNotReady:
    return "hipErrorNotReady";
  case hipErrorNotSupported:
    return "hipErrorNotSupported";
  case hipErrorStreamCaptureUnsupported:
    return "hipErrorStreamCaptureUnsupported";
  case hipErrorStreamCaptureInvalidated:
    return "hipErrorStreamCaptureInvalidated";
  default:
    return "hipErrorUnknown";
  }
}
hipError_t hipGetLastError(void) {
  hipError_t rc = t_last_error;
  t_last_error = hipSuccess;
  return rc;
}
hipError_t hipPeekAtLastError(void) { return t_last_error; }
