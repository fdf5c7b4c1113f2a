/*
 * fake_cudart.c: a stand-in CUDA for testing launch routing and the
 * runtime's GPU back end on a machine without a GPU. One library, soname
 * libcuda.so.1, with
 *   - the runtime entry points a clang host object calls (and HIP's, which
 *     have the same shapes): registrations are printed, each launch is
 *     printed ("launch NAME grid ... stream ...") and queued; a launch with
 *     more dynamic shared memory than its kernel allows (48 KiB, or what
 *     cudaFuncSetAttribute set, up to 227 KiB) fails; a failing call sets
 *     the thread's last error, which only cudaGetLastError resets;
 *   - a device: a thread that runs queued work in order, but only while the
 *     program waits in cudaDeviceSynchronize (or cudaStreamSynchronize, until
 *     that stream's work is done). A tool that waited for a kernel inside a
 *     launch would hang, not pass. FAKE_HOLD_STREAM=HANDLE holds that stream's
 *     work until cudaDeviceSynchronize while other streams' runs, so work
 *     ends out of launch order as on a GPU;
 *   - the driver functions runtime/dispatch/gpu.c resolves, with their
 *     rules: every call that needs a context fails without a current one;
 *     device memory starts as garbage; copies and synchronization are
 *     allowed only on streams made with cuStreamCreate (anything else would
 *     make the tool wait for the program's kernels: "SERIALIZED" is printed;
 *     FAKE_COPY_LOG=1 prints each copy to the device);
 *   - stream capture into a graph (one capture at a time): kernels, copies,
 *     memsets and host functions issued into the capturing stream become the graph's
 *     nodes, run in order at each cudaGraphLaunch; while a capture in global
 *     mode runs, allocation, stream creation and synchronization fail (CUDA's
 *     "potentially unsafe" calls) and spoil the capture (its end fails) unless
 *     the calling thread relaxed its mode (cuThreadExchangeStreamCaptureMode);
 *     cuStreamGetCaptureInfo_v2 names the node captured last and the graph
 *     of a capture into a program's graph; conditional 'if' nodes
 *     (cudaGraphAddNode, the handle's default value decides at each launch)
 *     whose body graphs are filled by cudaStreamBeginCaptureToGraph, and in
 *     which, by CUDA's rule for conditional bodies, a host function is
 *     refused and spoils the capture; instantiation
 *     clones the nodes (new ids, CUPTI's resource callback for each); a
 *     replay's kernels and copies are CUPTI activity of the graph launch, with
 *     the executable's node ids;
 *   - modules for programs that use the driver alone (cache.sh): cubins for
 *     sm_90 loaded into the current context (cuModuleLoadData; kernels and
 *     their parameters read from the ELF's symbols and .nv.info), named and
 *     described (cuFuncGetName, cuFuncGetParamInfo), launched only in their
 *     module's context with kernelParams or extra (cuLaunchKernel, _ptsz,
 *     cuLaunchCooperativeKernel, cuLaunchKernelEx; each launch printed after
 *     a line naming the function's module: "function NAME of module M", M
 *     counting loads from 1), entry points by cuGetProcAddress(_v2), each
 *     in the ABI of the CUDA version asked for (cudaTypedefs.h), as the
 *     real driver hands them out;
 *   - the driver's loading of CUDA_INJECTION64_PATH (its InitializeInjection
 *     is called at the first runtime call) and CUPTI's callbacks and
 *     activity records (fake_cupti.c): each runtime call is reported with
 *     one driver call inside it, each kernel and copy when the device ran it.
 * Kernels are emulated by name: axpy (y = a*x + y) and other (*p = 1), one
 * CUDA thread after another; their twins also record every access through
 * the device runtime's CPU build (dh_device.c, one lane per record), under
 * the site ids of FAKE_SITES (axpy's load of x, load of y, store of y, then
 * other's store; hexadecimal, as `kerneldb sites` prints them), and say
 * whether they recorded anything ("twin NAME: recorded", by the
 * descriptor's head). A twin whose descriptor has a block-times table gets
 * each block's start and end stamped there as the device runtime's GPU
 * build does (nano/dh_format.h; CLOCK_MONOTONIC ns, unit: the block's
 * linear id mod FAKE_SMS).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nano/dh_format.h"
#include "fake_sites.h"

struct dim3 {
  unsigned x, y, z;
};

/* Two devices, each with its primary context; a thread's runtime device
 * (cudaSetDevice, lazy as before CUDA 12: no context is made current until
 * a runtime call needs one). */
#define FAKE_DEVICES 2
static int fake_ctx[FAKE_DEVICES], fake_initialized;
static _Thread_local int rt_device;
static int ctx_device(void *ctx) { return (int)((int *)ctx - fake_ctx); }
static int is_ctx(void *ctx) { return ctx >= (void *)fake_ctx && ctx < (void *)(fake_ctx + FAKE_DEVICES); }

/* ---- registrations ---------------------------------------------------------- */

#define FAKE_MAX_KERNELS 64
/* Dynamic shared memory a launch may ask for without opting in (CUDA's rule
 * since sm_70), and the most a kernel may opt into (sm_90's
 * cudaDevAttrMaxSharedMemoryPerBlockOptin, 227 KiB). */
#define FAKE_SHARED_DEFAULT (48u << 10)
#define FAKE_SHARED_OPTIN (227u << 10)
static struct {
  const void *host;
  const char *name;
  size_t max_shared; /* cudaFuncAttributeMaxDynamicSharedMemorySize */
} fake_kernels[FAKE_MAX_KERNELS];
static int fake_nkernels;
static void *fake_module = &fake_nkernels;
/* <<<>>>'s configuration, pushed and popped by the launching thread. */
static _Thread_local struct dim3 fake_grid, fake_block;
static _Thread_local size_t fake_shared;
static _Thread_local void *fake_stream;

void **__cudaRegisterFatBinary(void *fatbin) {
  (void)fatbin;
  return &fake_module;
}
void __cudaRegisterFatBinaryEnd(void **module) { (void)module; }
void __cudaUnregisterFatBinary(void **module) { (void)module; }

void __cudaRegisterFunction(void **module, const char *host, char *device_fun,
                            const char *device_name, int thread_limit, void *tid, void *bid,
                            void *bdim, void *gdim, int *wsize) {
  (void)device_fun, (void)thread_limit, (void)tid, (void)bid, (void)bdim, (void)gdim, (void)wsize;
  if (module != &fake_module || fake_nkernels == FAKE_MAX_KERNELS) {
    printf("register: bad module or too many kernels\n");
    return;
  }
  fake_kernels[fake_nkernels].host = host;
  fake_kernels[fake_nkernels].max_shared = FAKE_SHARED_DEFAULT;
  fake_kernels[fake_nkernels++].name = device_name;
  printf("register %s\n", device_name);
}

/* Device variables: clang-linker-wrapper's registration (-fgpu-rdc with the
 * new offload driver) calls these for every variable entry, and refers to
 * both whatever the program has. */
void __cudaRegisterVar(void **module, char *host, char *device_address, const char *device_name,
                       int ext, size_t size, int constant, int global) {
  (void)module, (void)host, (void)device_address, (void)ext, (void)constant, (void)global;
  printf("register variable %s size %zu\n", device_name, size);
}
void __cudaRegisterManagedVar(void **module, void **host, char *device_address,
                              const char *device_name, int ext, size_t size, int constant,
                              int global) {
  __cudaRegisterVar(module, (char *)host, device_address, device_name, ext, size, constant,
                    global);
}

unsigned __cudaPushCallConfiguration(struct dim3 grid, struct dim3 block, size_t shared,
                                     void *stream) {
  fake_grid = grid, fake_block = block, fake_shared = shared, fake_stream = stream;
  return 0;
}

int __cudaPopCallConfiguration(struct dim3 *grid, struct dim3 *block, size_t *shared,
                               void **stream) {
  *grid = fake_grid, *block = fake_block, *shared = fake_shared, *stream = fake_stream;
  return 0;
}

/* ---- CUPTI (fake_cupti.c) and the driver's injection ------------------------ */

uint64_t fake_cupti_now(void);
uint32_t fake_cupti_corr(void);
void fake_cupti_sync(int enter, uint32_t corr);
void fake_cupti_launch(int enter, uint32_t corr, const void *func, const char *symbol,
                       const unsigned grid[3], const unsigned block[3], void **args,
                       size_t shared, void *stream);
void fake_cupti_memcpy(int enter, uint32_t corr, void *dst, const void *src, size_t n, int kind);
void fake_cupti_memcpy_async(int enter, uint32_t corr, void *dst, const void *src, size_t n,
                             int kind, void *stream);
void fake_cupti_node_cloned(void *exec, void *original, void *node);
void fake_cupti_driver(int enter, uint32_t corr, const char *name);
void fake_cupti_call(int enter, uint32_t corr, uint32_t cbid, const char *name);
/* CUPTI's callback id of cudaGetDevice (cupti_runtime_cbid.h) */
#define FAKE_CBID_cudaGetDevice 17
void fake_cupti_begin_capture(int enter, uint32_t corr, void *stream);
void fake_cupti_end_capture(int enter, uint32_t corr, void *stream, void **graph);
void fake_cupti_instantiate(int enter, uint32_t corr, void **exec, void *graph);
void fake_cupti_graph_launch(int enter, uint32_t corr, void *exec, void *stream);
void fake_cupti_kernel(uint32_t corr, const char *name, uint32_t stream, uint64_t start,
                       uint64_t end, uint64_t node);
void fake_cupti_copy(uint32_t corr, uint32_t runtime_corr, uint32_t stream, uint64_t start,
                     uint64_t end, uint64_t node);
void fake_cupti_memset(uint32_t corr, uint32_t stream, uint64_t start, uint64_t end,
                       uint64_t node);

/* CUPTI's stream id of a stream handle. */
static uint32_t stream_id(const void *s) { return (uint32_t)((uintptr_t)s >> 12); }

/* As the driver at cuInit: the library CUDA_INJECTION64_PATH names, and its
 * InitializeInjection. */
static void inject(void) {
  const char *path = getenv("CUDA_INJECTION64_PATH");
  if (!path || !*path)
    return;
  void *h = dlopen(path, RTLD_NOW);
  int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
  if (!init || init() != 1)
    printf("injection of %s failed\n", path);
}
static pthread_once_t inject_once = PTHREAD_ONCE_INIT;

/* A driver call made inside a runtime call, as CUPTI reports it. */
static uint32_t driver_call(const char *name) {
  uint32_t corr = fake_cupti_corr();
  fake_cupti_driver(1, corr, name);
  fake_cupti_driver(0, corr, name);
  return corr;
}

/* ---- the device: a queue run only while the program synchronizes ------------ */

enum item_kind {
  ITEM_KERNEL,
  ITEM_HOSTFN,
  ITEM_EVENT,
  ITEM_COPY,
  ITEM_MEMSET,
  ITEM_CONDITIONAL,
  ITEM_CHILD
};
struct item {
  enum item_kind kind;
  const char *name; /* kernel */
  uint32_t corr, stream;
  struct dim3 grid, block;
  void *argv[6]; /* argument values, as pointers (the emulated kernels' shapes) */
  float a;
  int n;
  void (*fn)(void *); /* host function */
  void *arg;
  int64_t *stamp; /* event */
  void *dst;      /* copy, memset (n: the byte) */
  const void *src;
  size_t bytes;
  uint64_t head0;   /* a twin's descriptor head when it started */
  uint64_t node_id; /* a graph's node: its id (CUPTI's graphNodeId) */
  const void *queue; /* the program's stream it was issued to */
  const struct fake_module *module; /* a driver launch's: its variables */
  struct graph *body; /* a conditional node's, run when n (the handle's value) is not 0; a
                         child graph node's, run always */
  const void *func;   /* a kernel node's: the kernel's host handle */
  size_t shared;      /* a kernel node's dynamic shared bytes */
  void *args[6];      /* a kernel node's arguments, as kernelParams points at them */
  const struct item *orig; /* an executable's node: the graph's node it was made from */
  int attr_id, attr_value;  /* a kernel node's one attribute (the first int of its value) */
  struct item *next;
};

struct fake_module;
/* Variable `name` of module m (its storage), or NULL. */
static void *fake_global(const struct fake_module *m, const char *name, size_t *size);

static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t dev_cond = PTHREAD_COND_INITIALIZER;
static struct item *dev_head, **dev_tail = &dev_head;
static int dev_running, dev_busy, dev_started;
static pthread_t dev_thread;
/* FAKE_HOLD_STREAM's stream (the file comment), until nothing is held. */
static const void *dev_held;
static int dev_held_read;

/* The first queued item the device may run (dev_lock held): held streams'
 * wait, and each stream's items run in order. */
static struct item **dev_next(void) {
  if (!dev_held_read) {
    const char *v = getenv("FAKE_HOLD_STREAM");
    dev_held = v && *v ? (const void *)(uintptr_t)strtoull(v, NULL, 16) : NULL;
    dev_held_read = 1;
  }
  struct item **at = &dev_head;
  while (*at && dev_held && (*at)->queue == dev_held)
    at = &(*at)->next;
  return at;
}

static int64_t fake_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The device runtime's CPU build: the thread position it reads, its entry. */
struct nano_kernel_ctx {
  uint32_t thread[3], block[3], block_dim[3], grid_dim[3];
  void *shared;
  uint32_t shared_bytes, reserved;
};
_Thread_local const struct nano_kernel_ctx *__nano_kctx;
void __nano_dh_access(void *desc, uint64_t site, uint64_t addr, uint32_t size, uint32_t space);


/* SMs of the stand-in device (the units of block times). */
#define FAKE_SMS 4

static void run_kernel(struct item *it) {
  int twin = strncmp(it->name, NANO_TWIN_PREFIX, strlen(NANO_TWIN_PREFIX)) == 0;
  int axpy = strstr(it->name, "axpy") != NULL;
  void *desc = twin ? it->argv[axpy ? 4 : 1] : NULL;
  uint64_t site[4] = {fake_site(0), fake_site(1), fake_site(2), fake_site(3)};
  struct nano_kernel_ctx k = {.block_dim = {it->block.x, it->block.y, it->block.z},
                              .grid_dim = {it->grid.x, it->grid.y, it->grid.z}};
  if (desc)
    memcpy(&it->head0, (char *)desc + NANO_DH_DESC_OFF_HEAD, sizeof it->head0);
  __nano_kctx = &k;
  for (unsigned b = 0; b < it->grid.x * it->grid.y * it->grid.z; b++) {
    k.block[0] = b % it->grid.x, k.block[1] = b / it->grid.x % it->grid.y;
    k.block[2] = b / (it->grid.x * it->grid.y);
    uint64_t *stamps = desc ? fake_block_entry((const char *)desc, b, k.block) : NULL;
    if (stamps) {
      stamps[NANO_DH_BLOCK_START] = (uint64_t)fake_cupti_now();
      stamps[NANO_DH_BLOCK_UNIT] = b % FAKE_SMS;
    }
    for (unsigned t = 0; t < it->block.x * it->block.y * it->block.z; t++) {
      k.thread[0] = t % it->block.x, k.thread[1] = t / it->block.x % it->block.y;
      k.thread[2] = t / (it->block.x * it->block.y);
      if (axpy) {
        int i = (int)(k.block[0] * it->block.x + k.thread[0]);
        const float *x = it->argv[1];
        float *y = it->argv[2];
        if (i >= it->n)
          continue;
        if (desc) {
          __nano_dh_access(desc, site[0], (uint64_t)(uintptr_t)&x[i], 4, NANO_DH_AS_GLOBAL);
          __nano_dh_access(desc, site[1], (uint64_t)(uintptr_t)&y[i], 4, NANO_DH_AS_GLOBAL);
          __nano_dh_access(desc, site[2], (uint64_t)(uintptr_t)&y[i], 4, NANO_DH_AS_GLOBAL);
        }
        y[i] = it->a * x[i] + y[i];
      } else if (strstr(it->name, "bump")) {
        /* bump(int *p): *p = bias; counter += 1, the module's variables */
        int *bias = fake_global(it->module, "bias", NULL);
        int *counter = fake_global(it->module, "counter", NULL);
        if (!bias || !counter) {
          printf("bump: its module has no bias or counter\n");
          abort();
        }
        *(int *)it->argv[0] = *bias;
        ++*counter;
      } else {
        int *p = it->argv[0];
        if (desc)
          __nano_dh_access(desc, site[3], (uint64_t)(uintptr_t)p, 4, NANO_DH_AS_GLOBAL);
        *p = 1;
      }
    }
    if (stamps)
      stamps[NANO_DH_BLOCK_END] = (uint64_t)fake_cupti_now();
  }
  __nano_kctx = NULL;
  if (desc) { /* what the twin wrote, by its descriptor's head */
    uint64_t head;
    memcpy(&head, (char *)desc + NANO_DH_DESC_OFF_HEAD, sizeof head);
    printf("twin %s: %s\n", it->name, head != it->head0 ? "recorded" : "recorded nothing");
  }
}

static void *device_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&dev_lock);
  for (;;) {
    struct item **at;
    while (!dev_running || !*(at = dev_next()))
      pthread_cond_wait(&dev_cond, &dev_lock);
    struct item *it = *at;
    if (!(*at = it->next))
      dev_tail = at;
    dev_busy = 1;
    pthread_mutex_unlock(&dev_lock);
    if (it->kind == ITEM_KERNEL) {
      uint64_t t0 = fake_cupti_now();
      run_kernel(it);
      if (it->corr)
        fake_cupti_kernel(it->corr, it->name, it->stream, t0, fake_cupti_now(), it->node_id);
    } else if (it->kind == ITEM_HOSTFN) {
      it->fn(it->arg);
    } else if (it->kind == ITEM_COPY) { /* a graph's */
      uint64_t t0 = fake_cupti_now();
      memcpy(it->dst, it->src, it->bytes);
      fake_cupti_copy(it->corr, 0, it->stream, t0, fake_cupti_now(), it->node_id);
    } else if (it->kind == ITEM_MEMSET) { /* a graph's */
      uint64_t t0 = fake_cupti_now();
      memset(it->dst, it->n, it->bytes);
      fake_cupti_memset(it->corr, it->stream, t0, fake_cupti_now(), it->node_id);
    } else
      __atomic_store_n(it->stamp, fake_now(), __ATOMIC_RELEASE);
    free(it);
    pthread_mutex_lock(&dev_lock);
    dev_busy = 0;
    pthread_cond_broadcast(&dev_cond);
  }
  return NULL;
}

static void enqueue(struct item *it) {
  pthread_mutex_lock(&dev_lock);
  if (!dev_started) {
    dev_started = 1;
    pthread_create(&dev_thread, NULL, device_main, NULL);
  }
  *dev_tail = it;
  dev_tail = &it->next;
  pthread_mutex_unlock(&dev_lock);
}

/* ---- stream capture ----------------------------------------------------------- */

#define CAPTURE_MODE_GLOBAL 0
#define CAPTURE_MODE_RELAXED 2
#define CU_CAPTURE_UNSUPPORTED 900 /* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED */
static void *capture_stream; /* the stream being captured, NULL when none */
static int capture_global;   /* its capture's mode is global */
static int capture_spoiled;  /* an unsafe call was made during it */
static struct item *capture_head, **capture_tail = &capture_head;
static struct item *capture_last; /* the node captured last */
static uint64_t last_node_id;
static _Thread_local int thread_mode = CAPTURE_MODE_GLOBAL;

uint64_t fake_node_id(void *node) { return ((const struct item *)node)->node_id; }
static int capture_copy(void *dst, const void *src, size_t n);

struct graph {
  struct item *items;
  int body; /* a conditional node's: no host functions */
};
static struct graph *capture_into; /* cudaStreamBeginCaptureToGraph's graph */

/* Whether a "potentially unsafe" call fails now (and spoils the capture). */
static int unsafe_now(void) {
  int unsafe = capture_stream && capture_global && thread_mode != CAPTURE_MODE_RELAXED;
  capture_spoiled |= unsafe;
  return unsafe;
}

/* Queues it for the device, or adds it to the graph being captured when it
 * goes to the capturing stream. */
static void issue(struct item *it, void *stream) {
  it->queue = stream;
  if (stream && stream == capture_stream) {
    it->node_id = ++last_node_id;
    *capture_tail = it;
    capture_tail = &it->next;
    capture_last = it;
    return;
  }
  enqueue(it);
}

int cuThreadExchangeStreamCaptureMode(int *mode) {
  int old = thread_mode;
  thread_mode = *mode;
  *mode = old;
  return 0;
}

/* As cudart, whose stream calls make device 0's primary context current on
 * the calling thread. */
static void runtime_context(void);

int cudaStreamCreate(void **s) {
  runtime_context();
  *s = malloc(1);
  return *s ? 0 : 2;
}
static int begin_capture(void *s, int mode) {
  runtime_context();
  if (capture_stream || !s)
    return 1; /* cudaErrorInvalidValue: the stand-in captures one stream at a time */
  capture_stream = s;
  capture_into = NULL;
  capture_global = mode == CAPTURE_MODE_GLOBAL;
  capture_spoiled = 0;
  capture_head = capture_last = NULL;
  capture_tail = &capture_head;
  printf("capture begins\n");
  return 0;
}
static int end_capture(void *s, void **graph) {
  if (s != capture_stream)
    return 1;
  if (capture_spoiled) {
    capture_stream = NULL;
    printf("capture spoiled by an unsafe call\n");
    return 901; /* cudaErrorStreamCaptureInvalidated */
  }
  struct graph *g = capture_into ? capture_into : calloc(1, sizeof *g);
  if (!g)
    return 2;
  struct item **tail = &g->items;
  while (*tail)
    tail = &(*tail)->next;
  *tail = capture_head;
  capture_stream = NULL;
  *graph = g;
  int n = 0;
  for (struct item *it = g->items; it; it = it->next)
    n++;
  printf("capture ends: %d nodes\n", n);
  return 0;
}
static int graph_launch(void *exec, void *stream, uint32_t corr) {
  struct graph *g = exec;
  for (const struct item *node = g->items; node; node = node->next) {
    if (node->kind == ITEM_CONDITIONAL || node->kind == ITEM_CHILD) {
      int rc = node->kind == ITEM_CHILD || node->n ? graph_launch(node->body, stream, corr) : 0;
      if (rc)
        return rc;
      continue;
    }
    struct item *it = malloc(sizeof *it);
    if (!it)
      return 2;
    *it = *node;
    it->corr = corr; /* a replay's kernels: ops of the launch */
    it->stream = stream_id(stream);
    it->queue = stream;
    it->next = NULL;
    enqueue(it);
  }
  return 0;
}

/* The runtime's graph calls, each reported to CUPTI around its work. */
int cudaStreamBeginCapture(void *s, int mode) {
  uint32_t corr = fake_cupti_corr();
  fake_cupti_begin_capture(1, corr, s);
  int rc = begin_capture(s, mode);
  fake_cupti_begin_capture(0, corr, s);
  return rc;
}
int cudaStreamEndCapture(void *s, void **graph) {
  uint32_t corr = fake_cupti_corr();
  fake_cupti_end_capture(1, corr, s, graph);
  int rc = end_capture(s, graph);
  fake_cupti_end_capture(0, corr, s, graph);
  return rc;
}
static void item_args(struct item *it);

/* Fills empty graph c with copies of g's nodes, each with an id of its own
 * and its original (orig); a child graph node's graph copied too (a
 * conditional node's body is shared). exec: the executable they go into,
 * each copy reported to CUPTI as a clone; NULL: a graph's copy. 0 or 2. */
static int graph_fill(struct graph *c, const struct graph *g, void *exec) {
  c->body = g->body;
  struct item **tail = &c->items;
  for (const struct item *node = g->items; node; node = node->next) {
    struct item *clone = malloc(sizeof *clone);
    if (!clone)
      return 2;
    *clone = *node;
    clone->node_id = ++last_node_id;
    clone->orig = node;
    clone->next = NULL;
    item_args(clone);
    *tail = clone;
    tail = &clone->next;
    if (exec)
      fake_cupti_node_cloned(exec, (void *)node, clone);
    if (node->kind == ITEM_CHILD &&
        (!(clone->body = calloc(1, sizeof *clone->body)) || graph_fill(clone->body, node->body, exec)))
      return 2;
  }
  return 0;
}

/* The executable: a copy of the graph's nodes, each with an id of its own. */
static int instantiate(void **exec, const struct graph *g) {
  struct graph *e = calloc(1, sizeof *e);
  if (!e || graph_fill(e, g, e))
    return 2;
  *exec = e;
  return 0;
}
int cudaGraphInstantiate(void **exec, void *graph, unsigned long long flags) {
  uint32_t corr = fake_cupti_corr();
  fake_cupti_instantiate(1, corr, exec, graph);
  int rc = flags == 0 ? instantiate(exec, graph) : 1;
  fake_cupti_instantiate(0, corr, exec, graph);
  return rc;
}
int cudaGraphLaunch(void *exec, void *stream) {
  uint32_t corr = fake_cupti_corr();
  fake_cupti_graph_launch(1, corr, exec, stream);
  int rc = graph_launch(exec, stream, corr);
  fake_cupti_graph_launch(0, corr, exec, stream);
  return rc;
}

/* Whether work is queued or running (dev_lock held): any (all), or stream s's. */
static int device_pending(int all, const void *s) {
  if (dev_busy || (all && dev_head))
    return 1;
  for (const struct item *it = dev_head; it; it = it->next)
    if (it->queue == s)
      return 1;
  return 0;
}

/* The device runs while the caller waits for all its work, which releases a
 * held stream, or for stream s's (a held stream's waits). */
static void device_run(int all, const void *s) {
  pthread_mutex_lock(&dev_lock);
  if (all) {
    dev_held = NULL;
    dev_held_read = 1;
  }
  dev_running = 1;
  pthread_cond_broadcast(&dev_cond);
  while (device_pending(all, s))
    pthread_cond_wait(&dev_cond, &dev_lock);
  dev_running = 0;
  pthread_mutex_unlock(&dev_lock);
}

static void device_drain(void) { device_run(1, NULL); }

int cudaStreamSynchronize(void *s) {
  pthread_once(&inject_once, inject);
  device_run(0, s);
  return 0;
}

int cudaDeviceSynchronize(void) {
  pthread_once(&inject_once, inject);
  uint32_t corr = fake_cupti_corr();
  fake_cupti_sync(1, corr);
  driver_call("cuCtxSynchronize");
  device_drain();
  fake_cupti_sync(0, corr);
  return 0;
}

/* Lazy, as before CUDA 12: the device's context is made current by the
 * next runtime call that needs one. */
int cudaSetDevice(int dev) {
  if (dev < 0 || dev >= FAKE_DEVICES)
    return 101; /* cudaErrorInvalidDevice */
  rt_device = dev;
  return 0;
}

/* The thread's runtime device; a driver call inside, as cudart makes one. */
int cudaGetDevice(int *dev) {
  pthread_once(&inject_once, inject);
  uint32_t corr = fake_cupti_corr();
  fake_cupti_call(1, corr, FAKE_CBID_cudaGetDevice, "cudaGetDevice");
  driver_call("cuCtxGetDevice");
  *dev = rt_device;
  fake_cupti_call(0, corr, FAKE_CBID_cudaGetDevice, "cudaGetDevice");
  return 0;
}

/* cudaMemcpyDeviceToHost and the others: a copy after the device's work,
 * after FAKE_DRIVER_CALLS other driver calls (cudart makes dozens inside
 * some of its calls). */
int cudaMemcpy(void *dst, const void *src, size_t n, int kind) {
  pthread_once(&inject_once, inject);
  uint32_t corr = fake_cupti_corr();
  fake_cupti_memcpy(1, corr, dst, src, n, kind);
  const char *extra = getenv("FAKE_DRIVER_CALLS");
  for (int i = extra ? atoi(extra) : 0; i > 0; i--)
    driver_call("cuPointerGetAttributes");
  uint32_t dcorr = driver_call("cuMemcpyDtoH_v2");
  device_drain();
  uint64_t t0 = fake_cupti_now();
  memmove(dst, src, n);
  fake_cupti_copy(dcorr, 0, 0, t0, fake_cupti_now(), 0);
  fake_cupti_memcpy(0, corr, dst, src, n, kind);
  return 0;
}

/* Only into a stream being captured (a graph's copy node): the stand-in's
 * device has no copy engine outside graphs. */
int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *stream) {
  uint32_t corr = fake_cupti_corr();
  fake_cupti_memcpy_async(1, corr, dst, src, n, kind, stream);
  driver_call("cuMemcpyAsync");
  int rc = stream && stream == capture_stream ? capture_copy(dst, src, n) : 1;
  fake_cupti_memcpy_async(0, corr, dst, src, n, kind, stream);
  return rc;
}

/* ---- the runtime's last error, kernel attributes -------------------------------- */

/* The calling thread's last error, as the CUDA runtime keeps it: set by
 * every call that fails, kept across calls that succeed, returned and reset
 * by cudaGetLastError. */
static _Thread_local int fake_last_error;
static int fake_fail(int rc) {
  if (rc)
    fake_last_error = rc;
  return rc;
}
int cudaGetLastError(void) {
  int rc = fake_last_error;
  fake_last_error = 0;
  return rc;
}
int cudaPeekAtLastError(void) { return fake_last_error; }
const char *cudaGetErrorName(int rc) {
  switch (rc) {
  case 0:
    return "cudaSuccess";
  case 1:
    return "cudaErrorInvalidValue";
  case 2:
    return "cudaErrorMemoryAllocation";
  case 9:
    return "cudaErrorInvalidConfiguration";
  case 98:
    return "cudaErrorInvalidDeviceFunction";
  case 100:
    return "cudaErrorNoDevice";
  default:
    return "cudaErrorUnknown";
  }
}

static int fake_kernel_index(const void *func) {
  for (int i = 0; i < fake_nkernels; i++)
    if (fake_kernels[i].host == func)
      return i;
  return -1;
}

/* cudaFuncAttributeMaxDynamicSharedMemorySize (8) up to the opt-in limit,
 * cudaFuncAttributePreferredSharedMemoryCarveout (9) as a percentage; others,
 * and other values, cudaErrorInvalidValue; an unregistered handle
 * cudaErrorInvalidDeviceFunction. */
int cudaFuncSetAttribute(const void *func, int attr, int value) {
  int i = fake_kernel_index(func);
  if (i < 0)
    return fake_fail(98);
  if (attr == 8 && value >= 0 && (unsigned)value <= FAKE_SHARED_OPTIN) {
    fake_kernels[i].max_shared = (size_t)value;
    printf("attribute %s max dynamic shared %d\n", fake_kernels[i].name, value);
    return 0;
  }
  if (attr == 9 && value >= -1 && value <= 100)
    return 0;
  return fake_fail(1);
}
int cudaFuncSetCacheConfig(const void *func, int config) {
  return fake_fail(fake_kernel_index(func) < 0 ? 98 : config < 0 || config > 3 ? 1 : 0);
}
int hipFuncSetAttribute(const void *func, int attr, int value) {
  return cudaFuncSetAttribute(func, attr, value);
}
int hipFuncSetCacheConfig(const void *func, int config) {
  return cudaFuncSetCacheConfig(func, config);
}
int hipGetLastError(void) { return cudaGetLastError(); }
int hipPeekAtLastError(void) { return cudaPeekAtLastError(); }

/* cudaErrorInvalidDeviceFunction (98) for a handle nobody registered;
 * cudaErrorInvalidValue (1) for more dynamic shared memory than the kernel
 * allows (48 KiB unless cudaFuncSetAttribute raised it);
 * cudaErrorInvalidConfiguration (9) for a grid or block over CUDA's limits
 * (grid x < 2^31, y and z <= 65535; block x and y <= 1024, z <= 64, at most
 * 1024 threads). */
#define FAKE_GRID_X_MAX 2147483647u
#define FAKE_GRID_YZ_MAX 65535u
#define FAKE_BLOCK_XY_MAX 1024u
#define FAKE_BLOCK_Z_MAX 64u
#define FAKE_BLOCK_THREADS_MAX 1024u
static int over_limits(struct dim3 g, struct dim3 b) {
  return !g.x || !g.y || !g.z || g.x > FAKE_GRID_X_MAX || g.y > FAKE_GRID_YZ_MAX ||
         g.z > FAKE_GRID_YZ_MAX || !b.x || !b.y || !b.z || b.x > FAKE_BLOCK_XY_MAX ||
         b.y > FAKE_BLOCK_XY_MAX || b.z > FAKE_BLOCK_Z_MAX ||
         (unsigned long long)b.x * b.y * b.z > FAKE_BLOCK_THREADS_MAX;
}
/* A kernel's arguments as kernelParams points at them: at the item's own
 * copies of their values. */
static void item_args(struct item *it) {
  if (it->kind != ITEM_KERNEL)
    return;
  memset(it->args, 0, sizeof it->args);
  if (strstr(it->name, "axpy")) {
    it->args[0] = &it->a, it->args[1] = &it->argv[1], it->args[2] = &it->argv[2];
    it->args[3] = &it->n, it->args[4] = &it->argv[4];
  } else {
    it->args[0] = &it->argv[0], it->args[1] = &it->argv[1];
  }
}

/* A kernel item of `name` (its dynamic shared memory limit max_shared;
 * args: its argument pointers) in *out, or the runtime's error (the
 * driver's numbers are the same), said. */
static int kernel_item(const char *name, const struct fake_module *module, size_t max_shared,
                       struct dim3 grid, struct dim3 block, void **args, size_t shared,
                       struct item **out) {
  if (over_limits(grid, block)) {
    printf("launch %s refused: grid %u %u %u block %u %u %u over CUDA's limits\n", name, grid.x,
           grid.y, grid.z, block.x, block.y, block.z);
    return 9; /* cudaErrorInvalidConfiguration */
  }
  if (shared > max_shared) {
    printf("launch %s refused: %zu bytes of dynamic shared memory, %zu allowed\n", name, shared,
           max_shared);
    return 1; /* cudaErrorInvalidValue */
  }
  struct item *it = calloc(1, sizeof *it);
  if (!it)
    return 2; /* cudaErrorMemoryAllocation */
  it->kind = ITEM_KERNEL;
  it->name = name;
  it->module = module;
  it->grid = grid, it->block = block;
  it->shared = shared;
  int twin = strncmp(name, NANO_TWIN_PREFIX, strlen(NANO_TWIN_PREFIX)) == 0;
  if (strstr(name, "axpy")) {
    it->a = *(float *)args[0];
    it->argv[1] = *(void **)args[1];
    it->argv[2] = *(void **)args[2];
    it->n = *(int *)args[3];
    if (twin)
      it->argv[4] = *(void **)args[4];
  } else {
    it->argv[0] = *(void **)args[0];
    if (twin)
      it->argv[1] = *(void **)args[1];
  }
  item_args(it);
  *out = it;
  return 0;
}

/* Queues kernel `name` (handle func) on stream (kernel_item's arguments), or
 * refuses it with the runtime's error. */
static int issue_kernel(const void *func, const char *name, const struct fake_module *module, size_t max_shared,
                        struct dim3 grid, struct dim3 block, void **args, size_t shared,
                        void *stream, uint32_t corr) {
  struct item *it = NULL;
  int rc = kernel_item(name, module, max_shared, grid, block, args, shared, &it);
  if (rc)
    return rc;
  printf("launch %s grid %u %u %u block %u %u %u shared %zu stream %p\n", name, grid.x, grid.y,
         grid.z, block.x, block.y, block.z, shared, stream);
  it->func = func;
  it->corr = corr;
  it->stream = stream_id(stream);
  issue(it, stream);
  return 0;
}

/* The registered kernel of host handle func (its index), or -1: none, or a
 * twin where FAKE_NO_TWINS=1 says the module lacks the twins (a host side
 * built with the plugin, the device side without). */
static int loadable_kernel(const void *func) {
  const char *no_twins = getenv("FAKE_NO_TWINS");
  int i = fake_kernel_index(func);
  if (i >= 0 && no_twins && *no_twins == '1' &&
      strncmp(fake_kernels[i].name, NANO_TWIN_PREFIX, strlen(NANO_TWIN_PREFIX)) == 0)
    return -1;
  return i;
}

static int fake_no_device(void);
static int launch(const void *func, struct dim3 grid, struct dim3 block, void **args,
                  size_t shared, void *stream, uint32_t corr) {
  if (fake_no_device())
    return 100; /* cudaErrorNoDevice */
  int i = loadable_kernel(func);
  if (i >= 0)
    return issue_kernel(func, fake_kernels[i].name, NULL, fake_kernels[i].max_shared, grid, block, args,
                        shared, stream, corr);
  if (fake_kernel_index(func) < 0)
    printf("launch of an unregistered handle %p\n", func);
  return 98; /* cudaErrorInvalidDeviceFunction */
}

int cudaLaunchKernel(const void *func, struct dim3 grid, struct dim3 block, void **args,
                     size_t shared, void *stream) {
  pthread_once(&inject_once, inject);
  uint32_t corr = fake_cupti_corr();
  const char *symbol = NULL;
  for (int i = 0; i < fake_nkernels; i++)
    if (fake_kernels[i].host == func)
      symbol = fake_kernels[i].name;
  unsigned g[3] = {grid.x, grid.y, grid.z}, b[3] = {block.x, block.y, block.z};
  fake_cupti_launch(1, corr, func, symbol, g, b, args, shared, stream);
  driver_call("cuLaunchKernel");
  int rc = fake_fail(launch(func, grid, block, args, shared, stream, corr));
  fake_cupti_launch(0, corr, func, symbol, g, b, args, shared, stream);
  return rc;
}

/* cudaLaunchConfig_t and the start of a cudaLaunchAttribute (its id, then
 * its value: a cluster's dimensions for cudaLaunchAttributeClusterDimension). */
struct fake_config {
  struct dim3 grid, block;
  size_t shared;
  void *stream;
  const struct fake_attr {
    int id;
    char pad[4];
    unsigned value[3];
  } *attrs;
  unsigned nattrs;
};
#define FAKE_ATTR_CLUSTER 4
/* cudaLaunchKernelEx's (through its C++ templates): said with its attributes
 * (a cluster's dimensions must divide the grid's, as CUDA requires), then
 * launched as any other. */
int cudaLaunchKernelExC(const struct fake_config *c, const void *func, void **args) {
  if (c->nattrs && !c->attrs)
    return 1; /* cudaErrorInvalidValue */
  int i = fake_kernel_index(func);
  printf("configured launch of %s: %u attributes", i < 0 ? "an unregistered handle" : fake_kernels[i].name,
         c->nattrs);
  for (unsigned a = 0; a < c->nattrs; a++)
    if (c->attrs[a].id == FAKE_ATTR_CLUSTER) {
      const unsigned *d = c->attrs[a].value;
      printf(", cluster %u %u %u", d[0], d[1], d[2]);
      if (!d[0] || !d[1] || !d[2] || c->grid.x % d[0] || c->grid.y % d[1] || c->grid.z % d[2]) {
        printf(": refused, not a divisor of the grid\n");
        return 1;
      }
    }
  printf("\n");
  return cudaLaunchKernel(func, c->grid, c->block, args, c->shared, c->stream);
}

/* A cooperative launch: said, then launched as any other (the stand-in's
 * device runs a grid's blocks one after another, all of them resident). */
int cudaLaunchCooperativeKernel(const void *func, struct dim3 grid, struct dim3 block,
                                void **args, size_t shared, void *stream) {
  int i = fake_kernel_index(func);
  printf("cooperative launch of %s\n", i < 0 ? "an unregistered handle" : fake_kernels[i].name);
  return cudaLaunchKernel(func, grid, block, args, shared, stream);
}

/* HIP's names for the same entry points (hipLaunchKernelExC: HIP 6's
 * hipLaunchConfig_t has cudaLaunchConfig_t's layout). */
int hipLaunchKernelExC(const struct fake_config *c, const void *func, void **args) {
  return cudaLaunchKernelExC(c, func, args);
}
void **__hipRegisterFatBinary(void *fatbin) { return __cudaRegisterFatBinary(fatbin); }
void __hipUnregisterFatBinary(void **module) { __cudaUnregisterFatBinary(module); }
void __hipRegisterFunction(void **module, const char *host, char *device_fun,
                           const char *device_name, int thread_limit, void *tid, void *bid,
                           void *bdim, void *gdim, int *wsize) {
  __cudaRegisterFunction(module, host, device_fun, device_name, thread_limit, tid, bid, bdim,
                         gdim, wsize);
}
unsigned __hipPushCallConfiguration(struct dim3 grid, struct dim3 block, size_t shared,
                                    void *stream) {
  return __cudaPushCallConfiguration(grid, block, shared, stream);
}
int __hipPopCallConfiguration(struct dim3 *grid, struct dim3 *block, size_t *shared,
                              void **stream) {
  return __cudaPopCallConfiguration(grid, block, shared, stream);
}
int hipLaunchKernel(const void *func, struct dim3 grid, struct dim3 block, void **args,
                    size_t shared, void *stream) {
  return cudaLaunchKernel(func, grid, block, args, shared, stream);
}
/* hip_ext.h's launch with events: start recorded before the kernel, stop
 * after it, on its stream (the stand-in ignores flags). */
int hipEventRecord(void *event, void *stream); /* fake_hip.c */
int hipExtLaunchKernel(const void *func, struct dim3 grid, struct dim3 block, void **args,
                       size_t shared, void *stream, void *start, void *stop, int flags) {
  printf("ext launch: events %s %s flags %d\n", start ? "start" : "none", stop ? "stop" : "none",
         flags);
  int rc = start ? hipEventRecord(start, stream) : 0;
  if (rc == 0)
    rc = cudaLaunchKernel(func, grid, block, args, shared, stream);
  if (rc == 0 && stop)
    rc = hipEventRecord(stop, stream);
  return rc;
}
int hipLaunchCooperativeKernel(const void *func, struct dim3 grid, struct dim3 block, void **args,
                               unsigned shared, void *stream) {
  return cudaLaunchCooperativeKernel(func, grid, block, args, shared, stream);
}
/* hipLaunchParams (cudaLaunchParams' layout). */
struct fake_launch_params {
  const void *func;
  struct dim3 grid, block;
  void **args;
  size_t shared;
  void *stream;
};
/* A multi-device launch (hipLaunchCooperativeKernelMultiDevice,
 * hipExtLaunchMultiKernelMultiDevice, CUDA 12's
 * cudaLaunchCooperativeKernelMultiDevice): one launch per device, each on a
 * stream of the program's (HIP and CUDA refuse the null stream), no more
 * launches than devices; said, then each launched as any other, all or none
 * (the stand-in's program streams are the current device's: the list's
 * launches run there in order). */
static int multi_launch(const char *what, const struct fake_launch_params *l, int n) {
  if (!l || n < 1 || n > FAKE_DEVICES)
    return 1; /* hipErrorInvalidValue */
  for (int i = 0; i < n; i++)
    if (!l[i].stream || loadable_kernel(l[i].func) < 0)
      return !l[i].stream ? 400 : 98; /* hipErrorInvalidHandle, ...InvalidDeviceFunction */
  printf("%s of %d\n", what, n);
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++)
    rc = cudaLaunchKernel(l[i].func, l[i].grid, l[i].block, l[i].args, l[i].shared, l[i].stream);
  return rc;
}
int hipLaunchCooperativeKernelMultiDevice(const struct fake_launch_params *l, int n,
                                          unsigned flags) {
  (void)flags;
  return multi_launch("cooperative multi-device launch", l, n);
}
int hipExtLaunchMultiKernelMultiDevice(const struct fake_launch_params *l, int n, unsigned flags) {
  (void)flags;
  return multi_launch("multi-device launch", l, n);
}
int cudaLaunchCooperativeKernelMultiDevice(const struct fake_launch_params *l, unsigned n,
                                           unsigned flags) {
  (void)flags;
  return n > FAKE_DEVICES ? 1 : multi_launch("cooperative multi-device launch", l, (int)n);
}
int hipDeviceSynchronize(void) {
  device_drain();
  return 0;
}

/* ---- the driver ------------------------------------------------------------------ */

#define CU_OK 0
#define CU_INVALID_VALUE 1
#define CU_NOT_INITIALIZED 3
#define CU_NO_DEVICE 100
#define CU_INVALID_CONTEXT 201
#define CU_NOT_READY 600
#define CU_EVENT_BLOCKING 1 /* CU_EVENT_BLOCKING_SYNC */
#define CU_INVALID_IMAGE 200
#define CU_NO_BINARY_FOR_GPU 209
#define CU_INVALID_HANDLE 400
#define CU_NOT_FOUND 500

static _Thread_local void *ctx_stack[8];
static _Thread_local int ctx_depth; /* ctx_stack[ctx_depth - 1] is current */
static void *private_streams[16], *private_ctx[16];
static int nprivate;

static int has_ctx(void) { return ctx_depth > 0 && ctx_stack[ctx_depth - 1]; }
#define NEED_CTX()                                                                                 \
  do {                                                                                             \
    if (!has_ctx())                                                                                \
      return CU_INVALID_CONTEXT;                                                                   \
  } while (0)

static int is_private(void *s) {
  for (int i = 0; i < nprivate; i++)
    if (private_streams[i] == s)
      return 1;
  return 0;
}

/* FAKE_NO_DEVICE=1: a machine with the driver and no GPU, where cuInit
 * fails with CUDA_ERROR_NO_DEVICE and so does every launch. */
static int fake_no_device(void) {
  const char *v = getenv("FAKE_NO_DEVICE");
  return v && *v == '1';
}
int cuInit(unsigned flags) {
  if (fake_no_device())
    return CU_NO_DEVICE;
  fake_initialized = flags == 0;
  return flags == 0 ? CU_OK : CU_INVALID_VALUE;
}
int cuDeviceGet(int *dev, int ordinal) {
  if (!fake_initialized)
    return CU_NOT_INITIALIZED;
  *dev = ordinal;
  return ordinal >= 0 && ordinal < FAKE_DEVICES ? CU_OK : CU_INVALID_VALUE;
}
int cuDeviceGetAttribute(int *v, int attr, int dev) {
  (void)dev;
  *v = attr == 75 ? 9 : 0; /* compute capability 9.0 */
  return attr == 75 || attr == 76 ? CU_OK : CU_INVALID_VALUE;
}
int cuDevicePrimaryCtxRetain(void **ctx, int dev) {
  if (!fake_initialized || dev < 0 || dev >= FAKE_DEVICES)
    return CU_NOT_INITIALIZED;
  *ctx = &fake_ctx[dev];
  static int said[FAKE_DEVICES];
  if (!said[dev]++)
    printf("primary context retained, device %d\n", dev);
  return CU_OK;
}
int cuCtxGetCurrent(void **ctx) {
  *ctx = ctx_depth ? ctx_stack[ctx_depth - 1] : NULL;
  return CU_OK;
}
int cuCtxSetCurrent(void *ctx) {
  if (ctx_depth == 0)
    ctx_depth = 1;
  ctx_stack[ctx_depth - 1] = ctx;
  return CU_OK;
}
static void runtime_context(void) {
  if (!has_ctx())
    cuCtxSetCurrent(&fake_ctx[rt_device]);
}
int cuCtxGetDevice(int *dev) {
  NEED_CTX();
  *dev = ctx_device(ctx_stack[ctx_depth - 1]);
  return CU_OK;
}
int cuCtxPushCurrent_v2(void *ctx) {
  if (ctx_depth == 8 || !is_ctx(ctx))
    return CU_INVALID_CONTEXT;
  ctx_stack[ctx_depth++] = ctx;
  return CU_OK;
}
int cuCtxPopCurrent_v2(void **ctx) {
  if (ctx_depth == 0)
    return CU_INVALID_CONTEXT;
  *ctx = ctx_stack[--ctx_depth];
  return CU_OK;
}
int cuMemHostAlloc(void **p, size_t n, unsigned flags) {
  NEED_CTX();
  if (unsafe_now())
    return CU_CAPTURE_UNSUPPORTED;
  if (!(flags & 0x02)) /* the device could not see it */
    return CU_INVALID_VALUE;
  *p = aligned_alloc(4096, (n + 4095) / 4096 * 4096);
  if (getenv("FAKE_ALLOC_LOG"))
    printf("host alloc %zu\n", n);
  return *p ? CU_OK : 2;
}
int cuMemHostGetDevicePointer_v2(unsigned long long *d, void *p, unsigned flags) {
  NEED_CTX();
  *d = (unsigned long long)(uintptr_t)p;
  return flags == 0 ? CU_OK : CU_INVALID_VALUE;
}
int cuMemFreeHost(void *p) {
  NEED_CTX();
  free(p);
  return CU_OK;
}
int cuMemAlloc_v2(unsigned long long *d, size_t n) {
  NEED_CTX();
  if (unsafe_now())
    return CU_CAPTURE_UNSUPPORTED;
  void *p = malloc(n);
  if (!p)
    return 2;
  memset(p, 0xab, n); /* device memory is not cleared */
  *d = (unsigned long long)(uintptr_t)p;
  return CU_OK;
}
int cuMemFree_v2(unsigned long long d) {
  NEED_CTX();
  free((void *)(uintptr_t)d);
  return CU_OK;
}
/* The stand-in's program streams are made-up handles with no context of
 * their own (CUDA_ERROR_INVALID_HANDLE); the private ones belong to the
 * context current when they were made. */
int cuStreamGetCtx(void *s, void **ctx) {
  for (int i = 0; i < nprivate; i++)
    if (private_streams[i] == s) {
      *ctx = private_ctx[i];
      return CU_OK;
    }
  return 400; /* CUDA_ERROR_INVALID_HANDLE */
}

int cuStreamDestroy_v2(void *s) {
  for (int i = 0; i < nprivate; i++)
    if (private_streams[i] == s) {
      free(s);
      nprivate--;
      private_streams[i] = private_streams[nprivate], private_ctx[i] = private_ctx[nprivate];
      return CU_OK;
    }
  return 400; /* CUDA_ERROR_INVALID_HANDLE */
}
int cuStreamCreate(void **s, unsigned flags) {
  NEED_CTX();
  if (unsafe_now())
    return CU_CAPTURE_UNSUPPORTED;
  if (nprivate == 16 || flags != 1) /* only non-blocking streams stay out of the way */
    return CU_INVALID_VALUE;
  private_ctx[nprivate] = ctx_stack[ctx_depth - 1];
  *s = private_streams[nprivate++] = malloc(1);
  return CU_OK;
}
int cuStreamSynchronize(void *s) {
  NEED_CTX();
  if (unsafe_now())
    return CU_CAPTURE_UNSUPPORTED;
  if (!is_private(s)) {
    printf("SERIALIZED: cuStreamSynchronize(%p)\n", s);
    return CU_INVALID_VALUE;
  }
  return CU_OK; /* its copies ran when issued */
}
int cuStreamGetCaptureInfo_v2(void *s, int *status, unsigned long long *id, void **graph,
                               void *const **deps, size_t *ndeps) {
  static _Thread_local void *dep;
  NEED_CTX();
  *status = s && s == capture_stream;
  if (id)
    *id = *status;
  if (graph) /* the stand-in names only a program's graph */
    *graph = *status ? capture_into : NULL;
  dep = *status ? capture_last : NULL;
  if (deps)
    *deps = &dep;
  if (ndeps)
    *ndeps = dep != NULL;
  return CU_OK;
}
int cuStreamGetCaptureInfo_v3(void *s, int *status, unsigned long long *id, void **graph,
                              void *const **deps, const void **edges, size_t *ndeps) {
  if (edges)
    *edges = NULL; /* every edge a full dependency */
  return cuStreamGetCaptureInfo_v2(s, status, id, graph, deps, ndeps);
}
int cuStreamIsCapturing(void *s, int *status) {
  NEED_CTX();
  *status = s && s == capture_stream; /* CU_STREAM_CAPTURE_STATUS_ACTIVE */
  return CU_OK;
}
/* A copy node of the graph being captured. */
static int capture_copy(void *dst, const void *src, size_t n) {
  struct item *it = calloc(1, sizeof *it);
  if (!it)
    return 2;
  it->kind = ITEM_COPY;
  it->dst = dst, it->src = src, it->bytes = n;
  issue(it, capture_stream);
  return CU_OK;
}
int cuMemcpyHtoDAsync_v2(unsigned long long d, const void *src, size_t n, void *s) {
  NEED_CTX();
  if (s && s == capture_stream)
    return capture_copy((void *)(uintptr_t)d, src, n);
  uint64_t t0 = fake_cupti_now();
  fake_cupti_copy(driver_call("cuMemcpyHtoDAsync_v2"), 0, stream_id(s), t0, fake_cupti_now(), 0);
  if (!is_private(s)) {
    printf("SERIALIZED: a copy on stream %p\n", s);
    return CU_INVALID_VALUE;
  }
  memcpy((void *)(uintptr_t)d, src, n);
  if (getenv("FAKE_COPY_LOG"))
    printf("copy to device: %zu bytes on stream %p\n", n, s);
  return CU_OK;
}
int cuMemsetD8Async(unsigned long long d, unsigned char v, size_t n, void *s) {
  NEED_CTX();
  if (s && s == capture_stream) { /* a memset node of the graph being captured */
    struct item *it = calloc(1, sizeof *it);
    if (!it)
      return 2;
    it->kind = ITEM_MEMSET;
    it->dst = (void *)(uintptr_t)d, it->n = v, it->bytes = n;
    issue(it, capture_stream);
    return CU_OK;
  }
  if (!is_private(s)) {
    printf("SERIALIZED: a memset on stream %p\n", s);
    return CU_INVALID_VALUE;
  }
  memset((void *)(uintptr_t)d, v, n);
  return CU_OK;
}
int cuMemcpyDtoHAsync_v2(void *dst, unsigned long long d, size_t n, void *s) {
  NEED_CTX();
  if (s && s == capture_stream)
    return capture_copy(dst, (const void *)(uintptr_t)d, n);
  uint64_t t0 = fake_cupti_now();
  fake_cupti_copy(driver_call("cuMemcpyDtoHAsync_v2"), 0, stream_id(s), t0, fake_cupti_now(), 0);
  if (!is_private(s)) {
    printf("SERIALIZED: a copy on stream %p\n", s);
    return CU_INVALID_VALUE;
  }
  memcpy(dst, (void *)(uintptr_t)d, n);
  return CU_OK;
}
int cuEventCreate(void **e, unsigned flags) {
  NEED_CTX();
  int64_t *stamp = calloc(1, sizeof *stamp);
  *e = stamp;
  return stamp && (flags & ~CU_EVENT_BLOCKING) == 0 ? CU_OK : CU_INVALID_VALUE;
}
/* The stand-in's private copies are done when issued: a wait is already
 * satisfied; said, so that the test sees it comes before the twin. */
int cuStreamWaitEvent(void *s, void *e, unsigned flags) {
  NEED_CTX();
  (void)e;
  printf("stream %p waits for an event\n", s);
  return flags == 0 ? CU_OK : CU_INVALID_VALUE;
}
/* Waits for the device to pass the event's record: the device runs only
 * while the program synchronizes, so a tool's thread waits for that.
 * FAKE_FAIL_WAIT=N: the first N waits fail at once (CUDA_ERROR_UNKNOWN), as
 * after a device error. */
int cuEventSynchronize(void *e) {
  NEED_CTX();
  static int failed;
  const char *fail = getenv("FAKE_FAIL_WAIT");
  if (fail && __atomic_fetch_add(&failed, 1, __ATOMIC_RELAXED) < atoi(fail))
    return 999;
  pthread_mutex_lock(&dev_lock);
  while (!__atomic_load_n((int64_t *)e, __ATOMIC_ACQUIRE))
    pthread_cond_wait(&dev_cond, &dev_lock);
  pthread_mutex_unlock(&dev_lock);
  return CU_OK;
}
int cuEventQuery(void *e) {
  NEED_CTX();
  return __atomic_load_n((int64_t *)e, __ATOMIC_ACQUIRE) ? CU_OK : CU_NOT_READY;
}
int cuEventRecord(void *e, void *s) {
  NEED_CTX();
  struct item *it = calloc(1, sizeof *it);
  if (!it)
    return 2;
  it->kind = ITEM_EVENT;
  it->queue = s;
  it->stamp = e;
  __atomic_store_n(it->stamp, 0, __ATOMIC_RELAXED);
  enqueue(it);
  return CU_OK;
}
int cuEventElapsedTime(float *ms, void *a, void *b) {
  NEED_CTX();
  int64_t t0 = __atomic_load_n((int64_t *)a, __ATOMIC_ACQUIRE);
  int64_t t1 = __atomic_load_n((int64_t *)b, __ATOMIC_ACQUIRE);
  if (!t0 || !t1)
    return CU_NOT_READY;
  *ms = (float)(t1 - t0) / 1e6f;
  return CU_OK;
}
/* CUDA lets an event go while its record is pending, and frees it once the
 * record completed; the stand-in keeps every event instead. */
int cuEventDestroy_v2(void *e) {
  NEED_CTX();
  (void)e;
  return CU_OK;
}
/* FAKE_NO_GRAPH_HOSTFN=1: a host function cannot be captured. */
int cuLaunchHostFunc(void *s, void (*fn)(void *), void *arg) {
  NEED_CTX();
  driver_call("cuLaunchHostFunc");
  const char *no_hostfn = getenv("FAKE_NO_GRAPH_HOSTFN");
  if (s && s == capture_stream && no_hostfn && *no_hostfn == '1')
    return CU_CAPTURE_UNSUPPORTED;
  if (s && s == capture_stream && capture_into && capture_into->body) {
    printf("host function refused in a conditional node's body\n");
    capture_spoiled = 1;
    return CU_CAPTURE_UNSUPPORTED;
  }
  struct item *it = calloc(1, sizeof *it);
  if (!it)
    return 2;
  it->kind = ITEM_HOSTFN;
  it->fn = fn;
  it->arg = arg;
  printf("host function on stream %p\n", s);
  issue(it, s);
  return CU_OK;
}
int cuGetErrorName(int r, const char **s) {
  *s = r == CU_INVALID_CONTEXT      ? "CUDA_ERROR_INVALID_CONTEXT"
       : r == CU_INVALID_IMAGE      ? "CUDA_ERROR_INVALID_IMAGE"
       : r == CU_NO_BINARY_FOR_GPU  ? "CUDA_ERROR_NO_BINARY_FOR_GPU"
       : r == CU_INVALID_HANDLE     ? "CUDA_ERROR_INVALID_HANDLE"
       : r == CU_NOT_FOUND          ? "CUDA_ERROR_NOT_FOUND"
       : r == CU_NO_DEVICE          ? "CUDA_ERROR_NO_DEVICE"
                                    : "CUDA_ERROR_FAKE";
  return CU_OK;
}

/* ---- modules and the driver's launches ------------------------------------------- */

/* A module is a cubin (ELF, EM_CUDA) for the devices' sm_90, loaded into the
 * current context; its functions are the kernels of its symbol table (a
 * function symbol with a section .text.NAME), their parameters the
 * EIATTR_KPARAM_INFO records of .nv.info.NAME. A function launches only in
 * its module's context, with kernelParams or extra (not both), and reads
 * exactly its parameter count of kernelParams; extra must be one buffer
 * (CU_LAUNCH_PARAM_BUFFER_POINTER, _SIZE, _END) that holds every parameter
 * at its offset. */
#define FAKE_MAX_FUNCS 64
#define FAKE_MAX_PARAMS 32
#define FAKE_SM 90
#define EM_CUDA_MACHINE 190
#define NV_INFO_FORMAT_SVAL 0x04 /* a record with a 16-bit size and a payload */
#define NV_INFO_KPARAM_INFO 0x17 /* payload: u32 index, u16 ordinal, u16 offset, u32 flags */
#define NV_KPARAM_SIZE(flags) (((flags) >> 18) & 0x3fff)
struct fake_func {
  void *ctx;
  int module; /* the cuModuleLoadData it came from, counted from 1 */
  const struct fake_module *mod;
  char name[256];
  int nparams;
  uint32_t off[FAKE_MAX_PARAMS], size[FAKE_MAX_PARAMS];
};
static struct fake_func fake_funcs[FAKE_MAX_FUNCS];
static int fake_nfuncs, fake_nmodules;
static pthread_mutex_t fake_func_lock = PTHREAD_MUTEX_INITIALIZER;
/* A module variable (__device__, __constant__): its storage, as device
 * memory is host memory here. */
#define FAKE_MAX_GLOBALS 16
struct fake_var {
  char name[128];
  void *ptr;
  size_t size;
};
struct fake_module {
  int first, count; /* its functions in fake_funcs */
  struct fake_var vars[FAKE_MAX_GLOBALS];
  int nvars;
};

static void *fake_global(const struct fake_module *m, const char *name, size_t *size) {
  for (int i = 0; m && i < m->nvars; i++)
    if (!strcmp(m->vars[i].name, name)) {
      if (size)
        *size = m->vars[i].size;
      return m->vars[i].ptr;
    }
  return NULL;
}

/* Adds symbol sym of image img to m's variables when it is one: a defined
 * object of an allocated, non-executable section but shared memory and
 * parameter banks (as the driver lays out a module), its storage
 * initialized from its section's bytes. 0 (a variable or not), or -1 (too
 * many, out of memory). */
static int fake_module_var(struct fake_module *m, const unsigned char *img, const Elf64_Sym *sym,
                           const char *name) {
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
  const char *shstr = (const char *)img + sh[eh->e_shstrndx].sh_offset;
  unsigned x = sym->st_shndx;
  if (ELF64_ST_TYPE(sym->st_info) != STT_OBJECT || ELF64_ST_BIND(sym->st_info) == STB_LOCAL ||
      x == SHN_UNDEF || x >= eh->e_shnum || !(sh[x].sh_flags & SHF_ALLOC) ||
      (sh[x].sh_flags & SHF_EXECINSTR) || !strncmp(shstr + sh[x].sh_name, ".nv.shared", 10) ||
      !strncmp(shstr + sh[x].sh_name, ".nv.constant0", 13) ||
      !strncmp(shstr + sh[x].sh_name, ".nv.reserved", 12))
    return 0;
  if (m->nvars == FAKE_MAX_GLOBALS)
    return -1;
  struct fake_var *v = &m->vars[m->nvars++];
  snprintf(v->name, sizeof v->name, "%s", name);
  v->size = sym->st_size;
  if (!(v->ptr = calloc(1, v->size ? v->size : 1)))
    return -1;
  if (sh[x].sh_type == SHT_PROGBITS)
    memcpy(v->ptr, img + sh[x].sh_offset + sym->st_value, v->size);
  return 0;
}

static struct fake_func *fake_func_of(void *f) {
  struct fake_func *x = f;
  return x >= fake_funcs && x < fake_funcs + fake_nfuncs ? x : NULL;
}

/* The parameters of .nv.info.NAME's records into fn. */
static void nv_info_params(const unsigned char *b, size_t n, struct fake_func *fn) {
  for (size_t p = 0; p + 4 <= n;) {
    unsigned fmt = b[p], attr = b[p + 1];
    uint16_t size = 0;
    if (fmt != NV_INFO_FORMAT_SVAL) {
      p += 4;
      continue;
    }
    memcpy(&size, b + p + 2, 2);
    if (attr == NV_INFO_KPARAM_INFO && size >= 12 && p + 4 + 12 <= n) {
      uint16_t ordinal, offset;
      uint32_t flags;
      memcpy(&ordinal, b + p + 8, 2);
      memcpy(&offset, b + p + 10, 2);
      memcpy(&flags, b + p + 12, 4);
      if (ordinal < FAKE_MAX_PARAMS) {
        fn->off[ordinal] = offset, fn->size[ordinal] = NV_KPARAM_SIZE(flags);
        if (ordinal + 1 > fn->nparams)
          fn->nparams = ordinal + 1;
      }
    }
    p += 4 + size;
  }
}

int cuModuleLoadData(void **module, const void *image) {
  NEED_CTX();
  const unsigned char *img = image;
  const Elf64_Ehdr *eh = image;
  if (memcmp(img, ELFMAG, SELFMAG) != 0 || eh->e_machine != EM_CUDA_MACHINE)
    return CU_INVALID_IMAGE;
  unsigned sm = img[EI_ABIVERSION] >= 8 ? (eh->e_flags >> 8) & 0xff : eh->e_flags & 0xff;
  if (sm != FAKE_SM)
    return CU_NO_BINARY_FOR_GPU;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
  const char *shstr = (const char *)img + sh[eh->e_shstrndx].sh_offset;
  struct fake_module *m = calloc(1, sizeof *m);
  if (!m)
    return 2;
  pthread_mutex_lock(&fake_func_lock);
  m->first = fake_nfuncs;
  int ordinal = ++fake_nmodules;
  for (unsigned i = 0; i < eh->e_shnum; i++) {
    if (sh[i].sh_type != SHT_SYMTAB)
      continue;
    const Elf64_Sym *sym = (const Elf64_Sym *)(img + sh[i].sh_offset);
    const char *str = (const char *)img + sh[sh[i].sh_link].sh_offset;
    for (size_t k = 0; k < sh[i].sh_size / sizeof *sym; k++) {
      const char *name = str + sym[k].st_name;
      if (fake_module_var(m, img, &sym[k], name) != 0) {
        pthread_mutex_unlock(&fake_func_lock);
        return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
      }
      if (ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC || sym[k].st_shndx >= eh->e_shnum ||
          strncmp(shstr + sh[sym[k].st_shndx].sh_name, ".text.", 6) != 0 ||
          strcmp(shstr + sh[sym[k].st_shndx].sh_name + 6, name) != 0 ||
          fake_nfuncs == FAKE_MAX_FUNCS)
        continue;
      struct fake_func *fn = &fake_funcs[fake_nfuncs++];
      memset(fn, 0, sizeof *fn);
      fn->ctx = ctx_stack[ctx_depth - 1];
      fn->module = ordinal;
      fn->mod = m;
      snprintf(fn->name, sizeof fn->name, "%s", name);
      char info[300];
      snprintf(info, sizeof info, ".nv.info.%s", name);
      for (unsigned j = 0; j < eh->e_shnum; j++)
        if (!strcmp(shstr + sh[j].sh_name, info))
          nv_info_params(img + sh[j].sh_offset, sh[j].sh_size, fn);
    }
  }
  m->count = fake_nfuncs - m->first;
  pthread_mutex_unlock(&fake_func_lock);
  printf("module loaded: %d kernels\n", m->count);
  *module = m;
  return CU_OK;
}

int cuModuleGetFunction(void **f, void *module, const char *name) {
  struct fake_module *m = module;
  for (int i = m->first; i < m->first + m->count; i++)
    if (!strcmp(fake_funcs[i].name, name)) {
      *f = &fake_funcs[i];
      return CU_OK;
    }
  return CU_NOT_FOUND;
}

int cuModuleGetGlobal_v2(unsigned long long *dptr, size_t *bytes, void *module, const char *name) {
  size_t size;
  void *p = fake_global(module, name, &size);
  if (!p)
    return CU_NOT_FOUND;
  if (dptr)
    *dptr = (unsigned long long)(uintptr_t)p;
  if (bytes)
    *bytes = size;
  return CU_OK;
}

int cuFuncGetModule(void **module, void *f) {
  struct fake_func *fn = fake_func_of(f);
  if (!fn || !fn->mod)
    return CU_INVALID_HANDLE;
  *module = (void *)fn->mod;
  return CU_OK;
}

/* The driver's graphs built by hand: the runtime's graphs (struct graph),
 * with kernel nodes (cuda.h's CUDA_KERNEL_NODE_PARAMS, v1 and _v2, and the
 * generic CUgraphNodeParams) of the driver's functions, printed when added
 * or given new parameters ("graph kernel node: function NAME of module M",
 * "graph kernel node set: ..."), instantiated and launched as the
 * runtime's. Kernel node calls act on kernel nodes only, as CUDA's rules
 * say; arguments come as kernelParams only (the stand-in reads no extra). */
struct fake_node_params {
  void *func;
  unsigned grid[3], block[3], shared;
  void **params, **extra;
};
struct fake_node_params_v2 {
  struct fake_node_params v1;
  void *kern, *ctx;
};
static void graph_append(struct graph *g, struct item *it);
static struct item *exec_node(const struct graph *g, const void *orig);

/* Kernel node `it` becomes `made` (a kernel item of function func), keeping
 * its id, place and original. */
static void node_take(struct item *it, struct item *made, const void *func) {
  made->func = func;
  made->node_id = it->node_id, made->orig = it->orig, made->next = it->next;
  *it = *made;
  free(made);
  item_args(it);
}

/* Kernel node `it` made the driver's kernel node p describes (its function
 * func, else the _v2 CUkernel kern: the stand-in's are the same handles),
 * printed as `what`; 0 or the driver's error. */
static int driver_node_set(struct item *it, const struct fake_node_params *p, void *kern,
                           const char *what) {
  NEED_CTX();
  if (!it || it->kind != ITEM_KERNEL || !p || p->extra)
    return CU_INVALID_VALUE;
  void *f = p->func ? p->func : kern;
  struct fake_func *fn = fake_func_of(f);
  if (!fn || fn->ctx != ctx_stack[ctx_depth - 1])
    return CU_INVALID_HANDLE;
  printf("%s: function %s of module %d\n", what, fn->name, fn->module);
  struct item *made = NULL;
  int rc = kernel_item(fn->name, fn->mod, FAKE_SHARED_DEFAULT,
                       (struct dim3){p->grid[0], p->grid[1], p->grid[2]},
                       (struct dim3){p->block[0], p->block[1], p->block[2]}, p->params, p->shared,
                       &made);
  if (rc)
    return rc;
  node_take(it, made, f);
  return CU_OK;
}
static int driver_add_node(void **node, void *graph, const struct fake_node_params *p,
                           void *kern) {
  if (!graph || !node)
    return CU_INVALID_VALUE;
  struct item *it = calloc(1, sizeof *it);
  if (!it)
    return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  it->kind = ITEM_KERNEL;
  it->node_id = ++last_node_id;
  int rc = driver_node_set(it, p, kern, "graph kernel node");
  if (rc) {
    free(it);
    return rc;
  }
  graph_append(graph, it);
  *node = it;
  return CU_OK;
}
/* A node of a graph, or (exec) the node of executable exec made from it. */
static int driver_set_node(void *exec, void *node, const struct fake_node_params *p, void *kern) {
  struct item *it = exec ? exec_node(exec, node) : node;
  return driver_node_set(it, p, kern, "graph kernel node set");
}

int cuGraphCreate(void **graph, unsigned flags) {
  NEED_CTX();
  if (flags || !graph)
    return CU_INVALID_VALUE;
  *graph = calloc(1, sizeof(struct graph));
  return *graph ? CU_OK : 2;
}
int cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
  if (!exec || !graph || flags)
    return CU_INVALID_VALUE;
  return instantiate(exec, graph) ? 2 : CU_OK;
}
int cuGraphLaunch(void *exec, void *stream) {
  NEED_CTX();
  return exec ? graph_launch(exec, stream, 0) : CU_INVALID_VALUE;
}
int cuGraphKernelNodeGetParams_v2(void *node, struct fake_node_params_v2 *p) {
  const struct item *it = node;
  if (!it || !p || it->kind != ITEM_KERNEL || !it->func)
    return CU_INVALID_VALUE;
  *p = (struct fake_node_params_v2){{(void *)it->func,
                                     {it->grid.x, it->grid.y, it->grid.z},
                                     {it->block.x, it->block.y, it->block.z},
                                     (unsigned)it->shared,
                                     (void **)it->args,
                                     NULL},
                                    NULL,
                                    NULL};
  return CU_OK;
}
int cuGraphKernelNodeGetParams(void *node, struct fake_node_params *p) {
  struct fake_node_params_v2 all;
  int rc = p ? cuGraphKernelNodeGetParams_v2(node, &all) : CU_INVALID_VALUE;
  if (rc == CU_OK)
    *p = all.v1;
  return rc;
}
int cuGraphKernelNodeSetParams(void *node, const struct fake_node_params *p) {
  return driver_set_node(NULL, node, p, NULL);
}
int cuGraphKernelNodeSetParams_v2(void *node, const struct fake_node_params_v2 *p) {
  return driver_set_node(NULL, node, p ? &p->v1 : NULL, p ? p->kern : NULL);
}
int cuGraphExecKernelNodeSetParams(void *exec, void *node, const struct fake_node_params *p) {
  return exec ? driver_set_node(exec, node, p, NULL) : CU_INVALID_VALUE;
}
int cuGraphExecKernelNodeSetParams_v2(void *exec, void *node,
                                      const struct fake_node_params_v2 *p) {
  return exec ? driver_set_node(exec, node, p ? &p->v1 : NULL, p ? p->kern : NULL)
              : CU_INVALID_VALUE;
}

/* cuda.h's CUgraphNodeParams (the generic node calls, CUDA 12.2): kernel
 * nodes for the driver's calls, conditional ones for the runtime's. */
struct fake_graph_node_params {
  int type; /* CU_GRAPH_NODE_TYPE_KERNEL: 0 */
  int reserved0[3];
  union {
    long long reserved1[29];
    struct fake_node_params_v2 kernel;
    struct {
      unsigned long long handle;
      int type;
      unsigned size;
      void **phGraph_out;
    } conditional;
  };
  long long reserved2;
};
static const struct fake_node_params *fake_kernel_of(const struct fake_graph_node_params *p) {
  return p && p->type == 0 ? &p->kernel.v1 : NULL;
}
static void *fake_kern_of(const struct fake_graph_node_params *p) {
  return p && p->type == 0 ? p->kernel.kern : NULL;
}
int cuGraphAddNode(void **node, void *graph, const void *deps, size_t n,
                   struct fake_graph_node_params *p) {
  (void)deps, (void)n; /* nodes run in the order added */
  return driver_add_node(node, graph, fake_kernel_of(p), fake_kern_of(p));
}
int cuGraphAddNode_v2(void **node, void *graph, const void *deps, const void *edges, size_t n,
                      struct fake_graph_node_params *p) {
  (void)deps, (void)edges, (void)n;
  return driver_add_node(node, graph, fake_kernel_of(p), fake_kern_of(p));
}
int cuGraphNodeSetParams(void *node, struct fake_graph_node_params *p) {
  return driver_set_node(NULL, node, fake_kernel_of(p), fake_kern_of(p));
}
int cuGraphExecNodeSetParams(void *exec, void *node, struct fake_graph_node_params *p) {
  return exec ? driver_set_node(exec, node, fake_kernel_of(p), fake_kern_of(p))
              : CU_INVALID_VALUE;
}
int cuGraphAddKernelNode(void **node, void *graph, const void *deps, size_t n,
                         const struct fake_node_params *p) {
  (void)deps, (void)n;
  return driver_add_node(node, graph, p, NULL);
}
int cuGraphAddKernelNode_v2(void **node, void *graph, const void *deps, size_t n,
                            const struct fake_node_params_v2 *p) {
  (void)deps, (void)n;
  return driver_add_node(node, graph, p ? &p->v1 : NULL, p ? p->kern : NULL);
}

/* The runtime's graphs built by hand: empty ones, and conditional 'if'
 * nodes with one body (cudaGraphNodeParams: laid out as CUgraphNodeParams). */
#define FAKE_NODE_CONDITIONAL 13 /* cudaGraphNodeTypeConditional */
#define FAKE_COND_IF 0           /* cudaGraphCondTypeIf */
int cudaGraphCreate(void **graph, unsigned flags) {
  if (flags)
    return 1;
  *graph = calloc(1, sizeof(struct graph));
  return *graph ? 0 : 2;
}
/* A handle holds its default value (plus one: 0 is no handle). */
int cudaGraphConditionalHandleCreate(unsigned long long *handle, void *graph, unsigned value,
                                     unsigned flags) {
  (void)flags;
  if (!graph)
    return 1;
  *handle = (unsigned long long)value + 1;
  return 0;
}
struct fake_kernel_node_params;
int cudaGraphAddKernelNode(void **node, void *graph, const void *deps, size_t n,
                           const struct fake_kernel_node_params *p);
static int kernel_node_set(struct item *it, const struct fake_kernel_node_params *p,
                           const char *what);
/* A kernel node's parameters in the generic call's (cudaKernelNodeParamsV2
 * starts as cudaKernelNodeParams), or NULL for another node type. */
static const struct fake_kernel_node_params *generic_kernel(const struct fake_graph_node_params *p) {
  return p && p->type == 0 ? (const struct fake_kernel_node_params *)&p->kernel : NULL;
}
int cudaGraphAddNode(void **node, void *graph, const void *deps, const void *edges, size_t n,
                     struct fake_graph_node_params *p) {
  (void)deps, (void)edges, (void)n;
  struct graph *g = graph;
  if (generic_kernel(p))
    return cudaGraphAddKernelNode(node, graph, deps, n, generic_kernel(p));
  if (!g || !p || p->type != FAKE_NODE_CONDITIONAL || p->conditional.type != FAKE_COND_IF ||
      p->conditional.size != 1 || !p->conditional.handle) {
    printf("cudaGraphAddNode: the stand-in adds kernel nodes and conditional 'if' nodes of one "
           "body only\n");
    return 1; /* cudaErrorInvalidValue */
  }
  struct item *it = calloc(1, sizeof *it);
  struct graph *body = calloc(1, sizeof *body);
  void **graphs = calloc(1, sizeof *graphs);
  if (!it || !body || !graphs)
    return 2;
  body->body = 1;
  graphs[0] = body;
  it->kind = ITEM_CONDITIONAL;
  it->body = body;
  it->n = (int)(p->conditional.handle - 1);
  it->node_id = ++last_node_id;
  struct item **tail = &g->items;
  while (*tail)
    tail = &(*tail)->next;
  *tail = it;
  p->conditional.phGraph_out = graphs;
  *node = it;
  printf("conditional node added\n");
  return 0;
}
int cudaStreamBeginCaptureToGraph(void *s, void *graph, const void *deps, const void *edges,
                                  size_t n, int mode) {
  (void)deps, (void)edges, (void)n;
  if (!graph)
    return 1;
  int rc = begin_capture(s, mode);
  if (rc == 0)
    capture_into = graph;
  return rc;
}

/* Kernel nodes added to the runtime's graphs by hand (cudaKernelNodeParams),
 * printed when added or set ("graph kernel node NAME grid ..."), and child
 * graph nodes (a copy of their graph, run whole at each replay), with the
 * calls that read and set them as CUDA's rules allow: kernel node calls on
 * kernel nodes only, an executable's child graph node given a graph of the
 * same shape only. */
struct fake_kernel_node_params {
  const void *func;
  struct dim3 grid, block;
  unsigned shared;
  void **args, **extra;
};
#define CU_NODE_KERNEL 0
#define CU_NODE_MEMCPY 1
#define CU_NODE_MEMSET 2
#define CU_NODE_HOST 3
#define CU_NODE_GRAPH 4
#define CU_NODE_EVENT_RECORD 7
#define CU_NODE_CONDITIONAL 13

/* Node `it` made the kernel node p describes (its id, place and original
 * kept); 0 or the runtime's error. */
static int kernel_node_set(struct item *it, const struct fake_kernel_node_params *p,
                           const char *what) {
  if (!it || it->kind != ITEM_KERNEL || !p || p->extra)
    return 1; /* cudaErrorInvalidValue */
  int i = loadable_kernel(p->func);
  if (i < 0)
    return 98;
  struct item *made = NULL;
  int rc = kernel_item(fake_kernels[i].name, NULL, fake_kernels[i].max_shared, p->grid, p->block,
                       p->args, p->shared, &made);
  if (rc)
    return rc;
  node_take(it, made, p->func);
  printf("%s %s grid %u %u %u block %u %u %u shared %u\n", what, it->name, p->grid.x, p->grid.y,
         p->grid.z, p->block.x, p->block.y, p->block.z, p->shared);
  return 0;
}
static void graph_append(struct graph *g, struct item *it) {
  struct item **tail = &g->items;
  while (*tail)
    tail = &(*tail)->next;
  *tail = it;
}
int cudaGraphAddKernelNode(void **node, void *graph, const void *deps, size_t n,
                           const struct fake_kernel_node_params *p) {
  (void)deps, (void)n; /* nodes run in the order added */
  if (!node || !graph || !p)
    return fake_fail(1);
  struct item *it = calloc(1, sizeof *it);
  if (!it)
    return fake_fail(2);
  it->kind = ITEM_KERNEL;
  it->node_id = ++last_node_id;
  int rc = kernel_node_set(it, p, "graph kernel node");
  if (rc) {
    free(it);
    return fake_fail(rc);
  }
  graph_append(graph, it);
  *node = it;
  return 0;
}
int cudaGraphKernelNodeGetParams(void *node, struct fake_kernel_node_params *p) {
  struct item *it = node;
  if (!it || !p || it->kind != ITEM_KERNEL || !it->func)
    return fake_fail(1);
  *p = (struct fake_kernel_node_params){it->func, it->grid, it->block, (unsigned)it->shared,
                                        it->args, NULL};
  return 0;
}
int cudaGraphKernelNodeSetParams(void *node, const struct fake_kernel_node_params *p) {
  return fake_fail(kernel_node_set(node, p, "graph kernel node set"));
}
/* The node of executable graph g made from node orig, or NULL. */
static struct item *exec_node(const struct graph *g, const void *orig) {
  for (struct item *it = g ? g->items : NULL; it; it = it->next) {
    if (it->orig == orig)
      return it;
    struct item *in = it->kind == ITEM_CHILD ? exec_node(it->body, orig) : NULL;
    if (in)
      return in;
  }
  return NULL;
}
int cudaGraphExecKernelNodeSetParams(void *exec, void *node,
                                     const struct fake_kernel_node_params *p) {
  return fake_fail(kernel_node_set(exec_node(exec, node), p, "graph exec kernel node set"));
}

/* A kernel node's launch attributes (cudaLaunchAttributeValue,
 * CUkernelNodeAttrValue: its first int kept, one attribute per node), set
 * and read on kernel nodes only, as CUDA's rules say; printed when set or
 * copied. Each 0, or 1 for a node of another kind. */
static int attr_set(void *node, int attr, const int *value) {
  struct item *it = node;
  if (!it || !value || it->kind != ITEM_KERNEL)
    return 1;
  it->attr_id = attr, it->attr_value = *value;
  printf("graph kernel node attribute %d %d on %s\n", attr, *value, it->name);
  return 0;
}
static int attr_get(void *node, int attr, int *value) {
  const struct item *it = node;
  if (!it || !value || it->kind != ITEM_KERNEL)
    return 1;
  *value = it->attr_id == attr ? it->attr_value : 0;
  return 0;
}
static int attr_copy(void *dst, void *src) {
  struct item *d = dst;
  const struct item *f = src;
  if (!d || !f || d->kind != ITEM_KERNEL || f->kind != ITEM_KERNEL)
    return 1;
  d->attr_id = f->attr_id, d->attr_value = f->attr_value;
  printf("graph kernel node attributes of %s copied to %s\n", f->name, d->name);
  return 0;
}
int cudaGraphKernelNodeSetAttribute(void *node, int attr, const int *value) {
  return fake_fail(attr_set(node, attr, value));
}
int cudaGraphKernelNodeGetAttribute(void *node, int attr, int *value) {
  return fake_fail(attr_get(node, attr, value));
}
int cudaGraphKernelNodeCopyAttributes(void *dst, void *src) {
  return fake_fail(attr_copy(dst, src));
}
int cuGraphKernelNodeSetAttribute(void *node, int attr, const int *value) {
  return attr_set(node, attr, value) ? CU_INVALID_VALUE : CU_OK;
}
int cuGraphKernelNodeGetAttribute(void *node, int attr, int *value) {
  return attr_get(node, attr, value) ? CU_INVALID_VALUE : CU_OK;
}
int cuGraphKernelNodeCopyAttributes(void *dst, void *src) {
  return attr_copy(dst, src) ? CU_INVALID_VALUE : CU_OK;
}

/* The generic calls on a kernel node's parameters (other types refused). */
int cudaGraphNodeSetParams(void *node, struct fake_graph_node_params *p) {
  return fake_fail(generic_kernel(p) ? kernel_node_set(node, generic_kernel(p), "graph kernel node set")
                                     : 1);
}
int cudaGraphExecNodeSetParams(void *exec, void *node, struct fake_graph_node_params *p) {
  return fake_fail(generic_kernel(p) ? kernel_node_set(exec_node(exec, node), generic_kernel(p),
                                                       "graph exec kernel node set")
                                     : 1);
}

int cuStreamBeginCapture_v2(void *s, int mode) {
  NEED_CTX();
  return begin_capture(s, mode) ? CU_INVALID_VALUE : CU_OK;
}
int cuStreamEndCapture(void *s, void **graph) { return end_capture(s, graph); }
int cuGraphAddChildGraphNode(void **node, void *graph, const void *deps, size_t n, void *child) {
  (void)deps, (void)n;
  struct item *it = calloc(1, sizeof *it);
  if (!node || !graph || !child || !it || !(it->body = calloc(1, sizeof *it->body)))
    return CU_INVALID_VALUE;
  if (graph_fill(it->body, child, NULL))
    return 2;
  it->kind = ITEM_CHILD;
  it->node_id = ++last_node_id;
  graph_append(graph, it);
  *node = it;
  int k = 0;
  for (const struct item *in = it->body->items; in; in = in->next)
    k++;
  printf("child graph node: %d nodes\n", k);
  return CU_OK;
}
int cuGraphChildGraphNodeGetGraph(void *node, void **graph) {
  const struct item *it = node;
  if (!it || it->kind != ITEM_CHILD || !graph)
    return CU_INVALID_VALUE;
  *graph = it->body;
  return CU_OK;
}
int cuGraphGetNodes(void *graph, void **nodes, size_t *n) {
  const struct graph *g = graph;
  if (!g || !n)
    return CU_INVALID_VALUE;
  size_t k = 0;
  for (struct item *it = g->items; it; it = it->next, k++)
    if (nodes && k < *n)
      nodes[k] = it;
  for (size_t i = k; nodes && i < *n; i++)
    nodes[i] = NULL;
  if (!nodes || k < *n)
    *n = k;
  return CU_OK;
}
int cuGraphNodeGetType(void *node, int *type) {
  static const int types[] = {[ITEM_KERNEL] = CU_NODE_KERNEL,
                              [ITEM_HOSTFN] = CU_NODE_HOST,
                              [ITEM_EVENT] = CU_NODE_EVENT_RECORD,
                              [ITEM_COPY] = CU_NODE_MEMCPY,
                              [ITEM_MEMSET] = CU_NODE_MEMSET,
                              [ITEM_CONDITIONAL] = CU_NODE_CONDITIONAL,
                              [ITEM_CHILD] = CU_NODE_GRAPH};
  const struct item *it = node;
  if (!it || !type)
    return CU_INVALID_VALUE;
  *type = types[it->kind];
  return CU_OK;
}
int cuGraphClone(void **clone, void *graph) {
  struct graph *c = calloc(1, sizeof *c);
  if (!clone || !graph || !c || graph_fill(c, graph, NULL))
    return CU_INVALID_VALUE;
  *clone = c;
  return CU_OK;
}
static void graph_free(struct graph *g) {
  for (struct item *it = g->items, *next; it; it = next) {
    next = it->next;
    if (it->kind == ITEM_CHILD)
      graph_free(it->body);
    free(it);
  }
  free(g);
}
int cuGraphDestroy(void *graph) {
  if (!graph)
    return CU_INVALID_VALUE;
  graph_free(graph);
  return CU_OK;
}
/* Whether graphs a and b have the same nodes, kind by kind (CUDA's rule for
 * an executable's child graph node's new graph). */
static int same_shape(const struct graph *a, const struct graph *b) {
  const struct item *x = a->items, *y = b->items;
  for (; x && y; x = x->next, y = y->next)
    if (x->kind != y->kind || (x->kind == ITEM_CHILD && !same_shape(x->body, y->body)))
      return 0;
  return !x && !y;
}
/* Executable nodes of graph e take the parameters of graph g's (the same
 * shape), keeping their ids and originals. */
static void take_params(struct graph *e, const struct graph *g) {
  struct item *x = e->items;
  for (const struct item *y = g->items; x && y; x = x->next, y = y->next) {
    if (x->kind == ITEM_CHILD) {
      take_params(x->body, y->body);
      continue;
    }
    struct item kept = *x;
    *x = *y;
    x->node_id = kept.node_id, x->orig = kept.orig, x->next = kept.next;
    item_args(x);
  }
}
int cuGraphExecChildGraphNodeSetParams(void *exec, void *node, void *child) {
  struct item *it = exec_node(exec, node);
  if (!it || it->kind != ITEM_CHILD || !child || !same_shape(it->body, child))
    return CU_INVALID_VALUE;
  take_params(it->body, child);
  printf("graph exec child graph node set\n");
  return CU_OK;
}

/* Device-to-device copies, in the stream's order (a graph's node when it is
 * capturing). */
int cuMemcpyDtoDAsync_v2(unsigned long long dst, unsigned long long src, size_t n, void *s) {
  NEED_CTX();
  struct item *it = calloc(1, sizeof *it);
  if (!it)
    return 2;
  it->kind = ITEM_COPY;
  it->dst = (void *)(uintptr_t)dst, it->src = (const void *)(uintptr_t)src, it->bytes = n;
  issue(it, s);
  return CU_OK;
}
int cuMemcpyDtoDAsync_v2_ptsz(unsigned long long dst, unsigned long long src, size_t n, void *s) {
  return cuMemcpyDtoDAsync_v2(dst, src, n, s);
}

int cuFuncGetName(const char **name, void *f) {
  struct fake_func *fn = fake_func_of(f);
  if (!fn)
    return CU_INVALID_HANDLE;
  *name = fn->name;
  return CU_OK;
}

int cuFuncGetParamInfo(void *f, size_t index, size_t *offset, size_t *size) {
  struct fake_func *fn = fake_func_of(f);
  if (!fn)
    return CU_INVALID_HANDLE;
  if (index >= (size_t)fn->nparams)
    return CU_INVALID_VALUE;
  *offset = fn->off[index], *size = fn->size[index];
  return CU_OK;
}

/* cuda.h's CUlaunchConfig. */
struct fake_launch_config {
  unsigned grid[3], block[3], shared;
  void *stream;
  void *attrs;
  unsigned nattrs;
};

static int driver_launch(void *f, struct dim3 grid, struct dim3 block, unsigned shared,
                         void *stream, void **params, void **extra, const char *how) {
  NEED_CTX();
  struct fake_func *fn = fake_func_of(f);
  if (!fn || fn->ctx != ctx_stack[ctx_depth - 1])
    return CU_INVALID_HANDLE;
  if ((params != NULL) == (extra != NULL) && fn->nparams) /* one way to pass them */
    return CU_INVALID_VALUE;
  void *from_extra[FAKE_MAX_PARAMS];
  if (extra) {
    char *buf = NULL;
    size_t size = 0;
    for (size_t i = 0; extra[i]; i += 2)
      if (extra[i] == (void *)0x01)
        buf = extra[i + 1];
      else if (extra[i] == (void *)0x02)
        size = *(size_t *)extra[i + 1];
      else
        return CU_INVALID_VALUE;
    for (int i = 0; i < fn->nparams; i++) {
      if (!buf || fn->off[i] + fn->size[i] > size)
        return CU_INVALID_VALUE;
      from_extra[i] = buf + fn->off[i];
    }
    params = from_extra;
  }
  printf("function %s of module %d\n", fn->name, fn->module);
  printf("%s of %s (%d parameters%s)\n", how, fn->name, fn->nparams, extra ? ", extra" : "");
  return issue_kernel(f, fn->name, fn->mod, FAKE_SHARED_DEFAULT, grid, block, params, shared, stream,
                      0);
}

int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
  return driver_launch(f, (struct dim3){gx, gy, gz}, (struct dim3){bx, by, bz}, shared, stream,
                       params, extra, "cuLaunchKernel");
}
int cuLaunchKernel_ptsz(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, void *stream, void **params,
                        void **extra) {
  return driver_launch(f, (struct dim3){gx, gy, gz}, (struct dim3){bx, by, bz}, shared,
                       stream ? stream : (void *)0x2, params, extra, "cuLaunchKernel_ptsz");
}
/* Cooperative: as any launch here (one device thread runs every block). */
int cuLaunchCooperativeKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                              unsigned by, unsigned bz, unsigned shared, void *stream,
                              void **params) {
  return driver_launch(f, (struct dim3){gx, gy, gz}, (struct dim3){bx, by, bz}, shared, stream,
                       params, NULL, "cuLaunchCooperativeKernel");
}
int cuLaunchCooperativeKernel_ptsz(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                   unsigned by, unsigned bz, unsigned shared, void *stream,
                                   void **params) {
  return driver_launch(f, (struct dim3){gx, gy, gz}, (struct dim3){bx, by, bz}, shared,
                       stream ? stream : (void *)0x2, params, NULL,
                       "cuLaunchCooperativeKernel_ptsz");
}
int cuLaunchKernelEx(const struct fake_launch_config *c, void *f, void **params, void **extra) {
  if (c->nattrs && !c->attrs)
    return CU_INVALID_VALUE;
  return driver_launch(f, (struct dim3){c->grid[0], c->grid[1], c->grid[2]},
                       (struct dim3){c->block[0], c->block[1], c->block[2]}, c->shared, c->stream,
                       params, extra, "cuLaunchKernelEx");
}
int cuLaunchKernelEx_ptsz(const struct fake_launch_config *c, void *f, void **params,
                          void **extra) {
  if (c->nattrs && !c->attrs)
    return CU_INVALID_VALUE;
  return driver_launch(f, (struct dim3){c->grid[0], c->grid[1], c->grid[2]},
                       (struct dim3){c->block[0], c->block[1], c->block[2]}, c->shared,
                       c->stream ? c->stream : (void *)0x2, params, extra,
                       "cuLaunchKernelEx_ptsz");
}

int cuCtxSynchronize(void) {
  NEED_CTX();
  device_drain();
  return CU_OK;
}
/* Synchronous copies: after the work issued before them. */
int cuMemcpyHtoD_v2(unsigned long long d, const void *src, size_t n) {
  NEED_CTX();
  device_drain();
  memcpy((void *)(uintptr_t)d, src, n);
  return CU_OK;
}
int cuMemcpyDtoH_v2(void *dst, unsigned long long d, size_t n) {
  NEED_CTX();
  device_drain();
  memcpy(dst, (const void *)(uintptr_t)d, n);
  return CU_OK;
}
int cuDriverGetVersion(int *v) {
  *v = 13000;
  return CU_OK;
}

/* cuGetProcAddress as the real driver answers it: the ABI of `symbol` at
 * the CUDA version asked for (cudaTypedefs.h: PFN_<symbol>_v<version>, the
 * first NAME, the next NAME_v2, then NAME_v3), not found below the version
 * that brought the entry point; for the names not listed, NAME_v2 where this
 * stand-in has it (those came with CUDA 3.2 to 4.0, older than what programs
 * ask for); the per-thread-stream variant (NAME_ptsz) where flags ask for it
 * (any other entry point whatever the flags); found as a real driver finds
 * them in its own table: through libc's dlsym, not one a tool interposes. */
#define CU_PROC_PER_THREAD 0x2
#define CU_PROC_VERSION_NOT_SUFFICIENT 2 /* CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT */
#define CU_PROC_MAX_ABIS 3
static const struct {
  const char *name;
  int abi[CU_PROC_MAX_ABIS]; /* the versions that brought NAME, NAME_v2, NAME_v3 */
} proc_versions[] = {
    {"cuGetProcAddress", {11030, 12000}},
    {"cuStreamBeginCapture", {10000, 10010}},
    {"cuStreamGetCaptureInfo", {10010, 11030, 12030}},
    {"cuGraphAddKernelNode", {10000, 12000}},
    {"cuGraphKernelNodeGetParams", {10000, 12000}},
    {"cuGraphKernelNodeSetParams", {10000, 12000}},
    {"cuGraphExecKernelNodeSetParams", {10010, 12000}},
    {"cuGraphAddNode", {12020, 12030}},
    {"cuGraphNodeSetParams", {12020}},
    {"cuGraphExecNodeSetParams", {12020}},
    {"cuLaunchKernelEx", {11060}},
    {"cuLaunchCooperativeKernel", {9000}},
};
typedef void *(*dlsym_fn)(void *, const char *);
int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags,
                        int *status) {
  static void *self;
  static dlsym_fn own;
  if (!own && !(own = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34")))
    own = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  if (!self)
    self = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!own || !self)
    return CU_NOT_FOUND;
  static const char *const suffix[CU_PROC_MAX_ABIS] = {"", "_v2", "_v3"};
  int abi = -1; /* unlisted: _v2, else the name */
  for (size_t i = 0; i < sizeof proc_versions / sizeof proc_versions[0] && abi < 0; i++) {
    const int *since = proc_versions[i].abi;
    if (strcmp(symbol, proc_versions[i].name) != 0)
      continue;
    if (version < since[0]) {
      *pfn = NULL;
      if (status)
        *status = CU_PROC_VERSION_NOT_SUFFICIENT;
      return CU_NOT_FOUND;
    }
    for (abi = 0; abi + 1 < CU_PROC_MAX_ABIS && since[abi + 1] && since[abi + 1] <= version;)
      abi++;
  }
  char name[256];
  *pfn = NULL;
  if (flags & CU_PROC_PER_THREAD) {
    snprintf(name, sizeof name, "%s_ptsz", symbol);
    *pfn = own(self, name);
  }
  if (!*pfn && abi < 0) {
    snprintf(name, sizeof name, "%s_v2", symbol);
    *pfn = own(self, name);
  }
  snprintf(name, sizeof name, "%s%s", symbol, suffix[abi < 0 ? 0 : abi]);
  if (!*pfn)
    *pfn = own(self, name);
  if (status)
    *status = *pfn ? 0 : 1; /* CU_GET_PROC_ADDRESS_SUCCESS, ..._SYMBOL_NOT_FOUND */
  return *pfn ? CU_OK : CU_NOT_FOUND;
}
int cuGetProcAddress(const char *symbol, void **pfn, int version, unsigned long long flags) {
  return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}
