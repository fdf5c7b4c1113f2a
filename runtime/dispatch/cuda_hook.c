/*
 * cuda_hook.c: libnano_cudahook.so, preloaded (with libnano_rpd.so, which it
 * needs) by `nanoprobe run -c DIR` so that the kernel cache reaches CUDA
 * programs not built with the plugin. It stands between the program and the
 * driver's launch calls, whichever way the program reaches them:
 *
 *   how the program finds cuLaunchKernel            what it gets
 *   linked against libcuda (the symbol)             this library's, by LD_PRELOAD
 *   dlopen("libcuda.so.1") + dlsym (Triton, and     this library's: dlsym is
 *   cudart, static or not, for cuGetProcAddress)    interposed
 *   cuGetProcAddress(_v2) (cudart since 11.3)       this library's, and for
 *                                                   cuGetProcAddress itself, ours
 *
 * for cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel and their
 * per-thread-stream variants (_ptsz; cuGetProcAddress's
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM), and for
 * the kernel node calls cuGraphAddKernelNode, cuGraphKernelNodeGetParams,
 * cuGraphKernelNodeSetParams, cuGraphExecKernelNodeSetParams and the
 * generic cuGraphAddNode (v1 and _v2 each: cuGetProcAddress hands out
 * either under the one name, told apart by the driver's own two
 * functions), cuGraphNodeSetParams and cuGraphExecNodeSetParams (kernel
 * nodes' parameters), and the kernel node attribute calls.
 * Each launch goes to __nano_cuda_launch (cuda_cache.c) with the driver's
 * own function, each node call to __nano_cuda_node_add or
 * __nano_cuda_node_params, the attribute calls' nodes through
 * __nano_gpu_graph_kernel_node. Everything else passes through untouched.
 *
 * dlsym(RTLD_NEXT, name) means "after the caller": the caller is found by
 * its return address and the search walks the objects loaded after it (a
 * plain forward would search after this library, and a preloaded wrapper
 * such as libnano_rpd.so's execve would find itself).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "cuda_cache.h"
#include "nano/gpu_launch.h"

typedef int CUresult;
#define CU_NOT_FOUND 500 /* CUDA_ERROR_NOT_FOUND */
/* cuGetProcAddress's flags: the per-thread default stream's variants. */
#define CU_PROC_PER_THREAD 0x2

#define HOOK_EXPORT __attribute__((visibility("default")))

typedef void *(*dlsym_fn)(void *, const char *);
typedef CUresult (*gpa_fn)(const char *, void **, int, uint64_t);
typedef CUresult (*gpa2_fn)(const char *, void **, int, uint64_t, int *);

/* The hooked entry points: the driver's name, whether it is the per-thread
 * variant, and the driver's function once found. */
/* The launches (each with a per-thread variant), then the graph calls. */
enum hook_id {
  HOOK_LAUNCH,
  HOOK_LAUNCH_PTSZ,
  HOOK_LAUNCH_EX,
  HOOK_LAUNCH_EX_PTSZ,
  HOOK_COOP,
  HOOK_COOP_PTSZ,
  HOOK_NODE,
  HOOK_NODE_V2,
  HOOK_NODE_GET,
  HOOK_NODE_GET_V2,
  HOOK_NODE_SET,
  HOOK_NODE_SET_V2,
  HOOK_EXEC_NODE_SET,
  HOOK_EXEC_NODE_SET_V2,
  HOOK_GENERIC_ADD,
  HOOK_GENERIC_ADD_V2,
  HOOK_GENERIC_SET,
  HOOK_GENERIC_EXEC_SET,
  HOOK_ATTR_SET,
  HOOK_ATTR_GET,
  HOOK_ATTR_COPY,
  HOOK_N
};
static const struct {
  const char *name, *base; /* the exported name; cuGetProcAddress's */
  int per_thread;
} hook_names[HOOK_N] = {
    {"cuLaunchKernel", "cuLaunchKernel", 0},
    {"cuLaunchKernel_ptsz", "cuLaunchKernel", 1},
    {"cuLaunchKernelEx", "cuLaunchKernelEx", 0},
    {"cuLaunchKernelEx_ptsz", "cuLaunchKernelEx", 1},
    {"cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel", 0},
    {"cuLaunchCooperativeKernel_ptsz", "cuLaunchCooperativeKernel", 1},
    {"cuGraphAddKernelNode", "cuGraphAddKernelNode", 0},
    {"cuGraphAddKernelNode_v2", "cuGraphAddKernelNode", 0},
    {"cuGraphKernelNodeGetParams", "cuGraphKernelNodeGetParams", 0},
    {"cuGraphKernelNodeGetParams_v2", "cuGraphKernelNodeGetParams", 0},
    {"cuGraphKernelNodeSetParams", "cuGraphKernelNodeSetParams", 0},
    {"cuGraphKernelNodeSetParams_v2", "cuGraphKernelNodeSetParams", 0},
    {"cuGraphExecKernelNodeSetParams", "cuGraphExecKernelNodeSetParams", 0},
    {"cuGraphExecKernelNodeSetParams_v2", "cuGraphExecKernelNodeSetParams", 0},
    {"cuGraphAddNode", "cuGraphAddNode", 0},
    {"cuGraphAddNode_v2", "cuGraphAddNode", 0},
    {"cuGraphNodeSetParams", "cuGraphNodeSetParams", 0},
    {"cuGraphExecNodeSetParams", "cuGraphExecNodeSetParams", 0},
    {"cuGraphKernelNodeSetAttribute", "cuGraphKernelNodeSetAttribute", 0},
    {"cuGraphKernelNodeGetAttribute", "cuGraphKernelNodeGetAttribute", 0},
    {"cuGraphKernelNodeCopyAttributes", "cuGraphKernelNodeCopyAttributes", 0},
};
/* The hooks whose cuGetProcAddress name hands out a v1 ABI or, at CUDA 12.0
 * and later versions, the one of the next hook (its _v2). */
static int hook_has_v2(enum hook_id i) {
  return i == HOOK_NODE || i == HOOK_NODE_GET || i == HOOK_NODE_SET || i == HOOK_EXEC_NODE_SET ||
         i == HOOK_GENERIC_ADD;
}
/* Whether hook i answers cuGetProcAddress's request with (per_thread) or
 * without the per-thread-stream flag: the launches have a variant for each;
 * the graph calls have none, and the driver hands out their one function
 * for either (a program built with nvcc's --default-stream per-thread asks
 * for every entry point with the flag). */
static int hook_per_thread_matches(enum hook_id i, int per_thread) {
  return i >= HOOK_NODE || hook_names[i].per_thread == per_thread;
}
static void *hook_real[HOOK_N];
static void *hook_gpa, *hook_gpa2; /* the driver's cuGetProcAddress, _v2 */

static dlsym_fn real_dlsym;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

static void real_find(void) {
  real_dlsym = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!real_dlsym)
    real_dlsym = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
}

/* The driver's function `name`: libcuda.so.1 loaded, else NULL. */
static void *driver_fn(const char *name) {
  pthread_once(&real_once, real_find);
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  void *fn = h ? real_dlsym(h, name) : NULL;
  if (h)
    dlclose(h);
  return fn;
}

/* The driver's function of hook i, found once. */
static void *hook_driver(enum hook_id i) {
  void *fn = __atomic_load_n(&hook_real[i], __ATOMIC_ACQUIRE);
  if (!fn && (fn = driver_fn(hook_names[i].name)))
    __atomic_store_n(&hook_real[i], fn, __ATOMIC_RELEASE);
  return fn;
}

static CUresult hook_launch(enum hook_id i, enum nano_cu_call call, void *f,
                            const struct nano_cu_config *config, void **params, void **extra) {
  struct nano_cu_launch l = {call, hook_names[i].per_thread, hook_driver(i), f, *config, params,
                             extra};
  if (!l.real)
    return CU_NOT_FOUND;
  return __nano_cuda_launch(&l);
}

#define HOOK_LAUNCH_FN(fname, id)                                                                  \
  HOOK_EXPORT CUresult fname(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,          \
                             unsigned by, unsigned bz, unsigned shared, void *stream,              \
                             void **params, void **extra) {                                        \
    struct nano_cu_config c = {{gx, gy, gz}, {bx, by, bz}, shared, stream, NULL, 0};               \
    return hook_launch(id, NANO_CU_LAUNCH, f, &c, params, extra);                                  \
  }
#define HOOK_LAUNCH_EX_FN(fname, id)                                                               \
  HOOK_EXPORT CUresult fname(const struct nano_cu_config *config, void *f, void **params,          \
                             void **extra) {                                                       \
    return hook_launch(id, NANO_CU_LAUNCH_EX, f, config, params, extra);                           \
  }
#define HOOK_COOP_FN(fname, id)                                                                    \
  HOOK_EXPORT CUresult fname(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,          \
                             unsigned by, unsigned bz, unsigned shared, void *stream,              \
                             void **params) {                                                      \
    struct nano_cu_config c = {{gx, gy, gz}, {bx, by, bz}, shared, stream, NULL, 0};               \
    return hook_launch(id, NANO_CU_LAUNCH_COOP, f, &c, params, NULL);                              \
  }
HOOK_LAUNCH_FN(cuLaunchKernel, HOOK_LAUNCH)
HOOK_LAUNCH_FN(cuLaunchKernel_ptsz, HOOK_LAUNCH_PTSZ)
HOOK_LAUNCH_EX_FN(cuLaunchKernelEx, HOOK_LAUNCH_EX)
HOOK_LAUNCH_EX_FN(cuLaunchKernelEx_ptsz, HOOK_LAUNCH_EX_PTSZ)
HOOK_COOP_FN(cuLaunchCooperativeKernel, HOOK_COOP)
HOOK_COOP_FN(cuLaunchCooperativeKernel_ptsz, HOOK_COOP_PTSZ)

/* The node calls: each goes to __nano_cuda_node_add or
 * __nano_cuda_node_params with the driver's function (and, for an add, its
 * cuLaunchKernel; for an executable's set, the driver's set of a graph's
 * node in the same layout). */
#define HOOK_REAL(id)                                                                              \
  void *real = hook_driver(id);                                                                    \
  if (!real)                                                                                       \
    return CU_NOT_FOUND;

static CUresult hook_add(enum hook_id id, enum nano_cu_node_abi abi, int with_edges, void **node,
                         void *graph, const void *deps, const void *edges, size_t ndeps,
                         const void *p) {
  HOOK_REAL(id)
  struct nano_cu_node_add a = {
      abi, with_edges, real, hook_driver(HOOK_LAUNCH), node, graph, deps, edges, ndeps, (void *)p};
  return __nano_cuda_node_add(&a);
}
static CUresult hook_params(enum hook_id id, enum hook_id set, enum nano_cu_node_abi abi, int op,
                            void *exec, void *node, const void *p) {
  HOOK_REAL(id)
  struct nano_cu_node_call c = {abi,  op,   real,     set == HOOK_N ? NULL : hook_driver(set),
                                exec, node, (void *)p};
  return __nano_cuda_node_params(&c);
}

HOOK_EXPORT CUresult cuGraphAddKernelNode(void **node, void *graph, const void *deps, size_t ndeps,
                                          const void *p) {
  return hook_add(HOOK_NODE, NANO_CU_NODE_V1, 0, node, graph, deps, NULL, ndeps, p);
}
HOOK_EXPORT CUresult cuGraphAddKernelNode_v2(void **node, void *graph, const void *deps,
                                             size_t ndeps, const void *p) {
  return hook_add(HOOK_NODE_V2, NANO_CU_NODE_V2, 0, node, graph, deps, NULL, ndeps, p);
}
HOOK_EXPORT CUresult cuGraphAddNode(void **node, void *graph, const void *deps, size_t ndeps,
                                    void *p) {
  return hook_add(HOOK_GENERIC_ADD, NANO_CU_NODE_GENERIC, 0, node, graph, deps, NULL, ndeps, p);
}
HOOK_EXPORT CUresult cuGraphAddNode_v2(void **node, void *graph, const void *deps,
                                       const void *edges, size_t ndeps, void *p) {
  return hook_add(HOOK_GENERIC_ADD_V2, NANO_CU_NODE_GENERIC, 1, node, graph, deps, edges, ndeps, p);
}
HOOK_EXPORT CUresult cuGraphKernelNodeGetParams(void *node, void *p) {
  return hook_params(HOOK_NODE_GET, HOOK_N, NANO_CU_NODE_V1, NANO_GPU_NODE_GET, NULL, node, p);
}
HOOK_EXPORT CUresult cuGraphKernelNodeGetParams_v2(void *node, void *p) {
  return hook_params(HOOK_NODE_GET_V2, HOOK_N, NANO_CU_NODE_V2, NANO_GPU_NODE_GET, NULL, node, p);
}
HOOK_EXPORT CUresult cuGraphKernelNodeSetParams(void *node, const void *p) {
  return hook_params(HOOK_NODE_SET, HOOK_N, NANO_CU_NODE_V1, NANO_GPU_NODE_SET, NULL, node, p);
}
HOOK_EXPORT CUresult cuGraphKernelNodeSetParams_v2(void *node, const void *p) {
  return hook_params(HOOK_NODE_SET_V2, HOOK_N, NANO_CU_NODE_V2, NANO_GPU_NODE_SET, NULL, node, p);
}
HOOK_EXPORT CUresult cuGraphExecKernelNodeSetParams(void *exec, void *node, const void *p) {
  return hook_params(HOOK_EXEC_NODE_SET, HOOK_NODE_SET, NANO_CU_NODE_V1, NANO_GPU_NODE_EXEC_SET,
                     exec, node, p);
}
HOOK_EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(void *exec, void *node, const void *p) {
  return hook_params(HOOK_EXEC_NODE_SET_V2, HOOK_NODE_SET_V2, NANO_CU_NODE_V2,
                     NANO_GPU_NODE_EXEC_SET, exec, node, p);
}
HOOK_EXPORT CUresult cuGraphNodeSetParams(void *node, void *p) {
  return hook_params(HOOK_GENERIC_SET, HOOK_N, NANO_CU_NODE_GENERIC, NANO_GPU_NODE_GENERIC_SET,
                     NULL, node, p);
}
HOOK_EXPORT CUresult cuGraphExecNodeSetParams(void *exec, void *node, void *p) {
  return hook_params(HOOK_GENERIC_EXEC_SET, HOOK_GENERIC_SET, NANO_CU_NODE_GENERIC,
                     NANO_GPU_NODE_GENERIC_EXEC_SET, exec, node, p);
}
/* The attribute calls act on the twin's kernel node inside a node that
 * __nano_cuda_node_add made. */
typedef CUresult (*attr_fn)(void *, int, void *);
HOOK_EXPORT CUresult cuGraphKernelNodeSetAttribute(void *node, int attr, const void *value) {
  HOOK_REAL(HOOK_ATTR_SET)
  return ((attr_fn)real)(__nano_gpu_graph_kernel_node(NANO_GPU_CUDA, node), attr, (void *)value);
}
HOOK_EXPORT CUresult cuGraphKernelNodeGetAttribute(void *node, int attr, void *value) {
  HOOK_REAL(HOOK_ATTR_GET)
  return ((attr_fn)real)(__nano_gpu_graph_kernel_node(NANO_GPU_CUDA, node), attr, value);
}
HOOK_EXPORT CUresult cuGraphKernelNodeCopyAttributes(void *dst, void *src) {
  HOOK_REAL(HOOK_ATTR_COPY)
  return ((CUresult(*)(void *, void *))real)(__nano_gpu_graph_kernel_node(NANO_GPU_CUDA, dst),
                                             __nano_gpu_graph_kernel_node(NANO_GPU_CUDA, src));
}
static void *const hook_fns[HOOK_N] = {(void *)cuLaunchKernel,
                                       (void *)cuLaunchKernel_ptsz,
                                       (void *)cuLaunchKernelEx,
                                       (void *)cuLaunchKernelEx_ptsz,
                                       (void *)cuLaunchCooperativeKernel,
                                       (void *)cuLaunchCooperativeKernel_ptsz,
                                       (void *)cuGraphAddKernelNode,
                                       (void *)cuGraphAddKernelNode_v2,
                                       (void *)cuGraphKernelNodeGetParams,
                                       (void *)cuGraphKernelNodeGetParams_v2,
                                       (void *)cuGraphKernelNodeSetParams,
                                       (void *)cuGraphKernelNodeSetParams_v2,
                                       (void *)cuGraphExecKernelNodeSetParams,
                                       (void *)cuGraphExecKernelNodeSetParams_v2,
                                       (void *)cuGraphAddNode,
                                       (void *)cuGraphAddNode_v2,
                                       (void *)cuGraphNodeSetParams,
                                       (void *)cuGraphExecNodeSetParams,
                                       (void *)cuGraphKernelNodeSetAttribute,
                                       (void *)cuGraphKernelNodeGetAttribute,
                                       (void *)cuGraphKernelNodeCopyAttributes};

HOOK_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags);
HOOK_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                         uint64_t flags, int *status);

/* What the program gets for the driver's function fn, found under `name`
 * (an exported name, or cuGetProcAddress's with per_thread from its
 * flags): ours where we stand in front of it. */
static void *hook_swap(const char *name, int by_gpa, int per_thread, void *fn) {
  if (!fn || name[0] != 'c' || name[1] != 'u' || fn == (void *)cuGetProcAddress ||
      fn == (void *)cuGetProcAddress_v2)
    return fn;
  for (int i = 0; i < HOOK_N; i++)
    if (fn == hook_fns[i]) /* found through the global scope: ours already */
      return fn;
  if (!strcmp(name, "cuGetProcAddress_v2") || !strcmp(name, "cuGetProcAddress")) {
    /* cuGetProcAddress at a CUDA 12 version is the _v2 ABI: tell them apart
     * by the driver's own two functions */
    void *v2 = driver_fn("cuGetProcAddress_v2");
    if (fn == v2 || (!by_gpa && !strcmp(name, "cuGetProcAddress_v2"))) {
      __atomic_store_n(&hook_gpa2, fn, __ATOMIC_RELEASE);
      return (void *)cuGetProcAddress_v2;
    }
    __atomic_store_n(&hook_gpa, fn, __ATOMIC_RELEASE);
    return (void *)cuGetProcAddress;
  }
  for (int i = 0; i < HOOK_N; i++)
    if (by_gpa ? hook_per_thread_matches(i, per_thread) && !strcmp(name, hook_names[i].base)
               : !strcmp(name, hook_names[i].name)) {
      if (by_gpa && hook_has_v2(i) && fn == driver_fn(hook_names[i + 1].name))
        i++; /* the version asked for is 12.0 or later: the _v2 ABI */
      __atomic_store_n(&hook_real[i], fn, __ATOMIC_RELEASE);
      return hook_fns[i];
    }
  return fn;
}

HOOK_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                         uint64_t flags, int *status) {
  gpa2_fn real = (gpa2_fn)__atomic_load_n(&hook_gpa2, __ATOMIC_ACQUIRE);
  if (!real && !(real = (gpa2_fn)driver_fn("cuGetProcAddress_v2")))
    return CU_NOT_FOUND;
  CUresult rc = real(symbol, pfn, version, flags, status);
  if (rc == 0 && pfn && symbol)
    *pfn = hook_swap(symbol, 1, (flags & CU_PROC_PER_THREAD) != 0, *pfn);
  return rc;
}

HOOK_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags) {
  gpa_fn real = (gpa_fn)__atomic_load_n(&hook_gpa, __ATOMIC_ACQUIRE);
  if (!real && !(real = (gpa_fn)driver_fn("cuGetProcAddress")))
    return CU_NOT_FOUND;
  CUresult rc = real(symbol, pfn, version, flags);
  if (rc == 0 && pfn && symbol)
    *pfn = hook_swap(symbol, 1, (flags & CU_PROC_PER_THREAD) != 0, *pfn);
  return rc;
}

/* dlsym(RTLD_NEXT, name) for the object holding `caller`: the first
 * definition in an object loaded after it. */
static void *hook_next(const void *caller, const char *name) {
  Dl_info info;
  struct link_map *self = NULL;
  if (!dladdr1(caller, &info, (void **)&self, RTLD_DL_LINKMAP) || !self)
    return NULL;
  for (struct link_map *l = self->l_next; l; l = l->l_next) {
    void *h = dlopen(l->l_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
      continue;
    void *fn = real_dlsym(h, name);
    struct link_map *at = NULL;
    int here = fn && dladdr1(fn, &info, (void **)&at, RTLD_DL_LINKMAP) && at == l;
    dlclose(h);
    if (here)
      return fn;
  }
  return NULL;
}

HOOK_EXPORT void *dlsym(void *handle, const char *name) {
  pthread_once(&real_once, real_find);
  if (!real_dlsym)
    return NULL;
  void *fn =
      handle == RTLD_NEXT ? hook_next(__builtin_return_address(0), name) : real_dlsym(handle, name);
  return hook_swap(name, 0, 0, fn);
}
