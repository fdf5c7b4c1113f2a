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
 * the kernel node calls cuGraphAddKernelNode, cuGraphKernelNodeSetParams,
 * cuGraphExecKernelNodeSetParams and the generic cuGraphAddNode (v1 and
 * _v2 each: cuGetProcAddress hands out either under the one name, told
 * apart by the driver's own two functions), cuGraphNodeSetParams and
 * cuGraphExecNodeSetParams (kernel nodes' parameters).
 * Each launch goes to __nano_cuda_launch (cuda_cache.c) with the driver's
 * own function; a kernel node gets the function __nano_cuda_node_function
 * gives. Everything else passes through untouched.
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
enum hook_id {
  HOOK_LAUNCH,
  HOOK_LAUNCH_PTSZ,
  HOOK_LAUNCH_EX,
  HOOK_LAUNCH_EX_PTSZ,
  HOOK_COOP,
  HOOK_COOP_PTSZ,
  HOOK_NODE,
  HOOK_NODE_V2,
  HOOK_NODE_SET,
  HOOK_NODE_SET_V2,
  HOOK_EXEC_NODE_SET,
  HOOK_EXEC_NODE_SET_V2,
  HOOK_GENERIC_ADD,
  HOOK_GENERIC_ADD_V2,
  HOOK_GENERIC_SET,
  HOOK_GENERIC_EXEC_SET,
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
    {"cuGraphKernelNodeSetParams", "cuGraphKernelNodeSetParams", 0},
    {"cuGraphKernelNodeSetParams_v2", "cuGraphKernelNodeSetParams", 0},
    {"cuGraphExecKernelNodeSetParams", "cuGraphExecKernelNodeSetParams", 0},
    {"cuGraphExecKernelNodeSetParams_v2", "cuGraphExecKernelNodeSetParams", 0},
    {"cuGraphAddNode", "cuGraphAddNode", 0},
    {"cuGraphAddNode_v2", "cuGraphAddNode", 0},
    {"cuGraphNodeSetParams", "cuGraphNodeSetParams", 0},
    {"cuGraphExecNodeSetParams", "cuGraphExecNodeSetParams", 0},
};
/* The hooks whose cuGetProcAddress name hands out a v1 ABI or, at CUDA 12.0
 * and later versions, the one of the next hook (its _v2). */
static int hook_has_v2(enum hook_id i) {
  return i == HOOK_NODE || i == HOOK_NODE_SET || i == HOOK_EXEC_NODE_SET || i == HOOK_GENERIC_ADD;
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

/* A kernel node's parameters as the driver gets them: p itself, or mine (a
 * copy of its size bytes) whose function (*func, inside mine) the kernel
 * cache gives in place of f, the kernel p names. */
static const void *hook_node_params(const void *p, void *mine, size_t size, void **func, void *f) {
  void *use = p ? __nano_cuda_node_function(f) : f;
  if (use == f)
    return p;
  memcpy(mine, p, size);
  *func = use;
  return mine;
}

/* hook_node_params for a v1 node's parameters, copied into mine. */
static const struct nano_cu_node_params *hook_v1_params(const struct nano_cu_node_params *p,
                                                        struct nano_cu_node_params *mine) {
  return hook_node_params(p, mine, sizeof *mine, &mine->func, p ? p->func : NULL);
}

/* The kernel _v2 parameters k name: func, else (where it is NULL) the
 * CUkernel. */
static void *hook_v2_kernel(const struct nano_cu_node_params_v2 *k) {
  return k->func ? k->func : k->kern;
}

/* hook_node_params for a _v2 node's parameters, copied into mine. */
static const struct nano_cu_node_params_v2 *hook_v2_params(const struct nano_cu_node_params_v2 *p,
                                                           struct nano_cu_node_params_v2 *mine) {
  return hook_node_params(p, mine, sizeof *mine, &mine->func, p ? hook_v2_kernel(p) : NULL);
}

/* A generic node's parameters (CUDA 12.2) as the driver gets them: those
 * of a kernel node as hook_node_params gives, any other node's as they are
 * (the driver writes some back: an allocation node's address). */
static struct nano_cu_graph_node_params *
hook_generic_params(struct nano_cu_graph_node_params *p, struct nano_cu_graph_node_params *mine) {
  if (!p || p->type != NANO_CU_NODE_KERNEL)
    return p;
  return (struct nano_cu_graph_node_params *)hook_node_params(
      p, mine, sizeof *mine, &mine->kernel.func, hook_v2_kernel(&p->kernel));
}

/* The node calls: add (v1, _v2), set a node's parameters, set them in an
 * instantiated graph; each with its parameters as hook_node_params gives. */
typedef CUresult (*add_node_fn)(void **, void *, const void *, size_t, const void *);
typedef CUresult (*add_node2_fn)(void **, void *, const void *, const void *, size_t,
                                 const void *); /* cuGraphAddNode_v2: with edge data */
typedef CUresult (*set_node_fn)(void *, const void *);
typedef CUresult (*exec_set_node_fn)(void *, void *, const void *);
#define HOOK_REAL(type, id)                                                                        \
  type real = (type)hook_driver(id);                                                               \
  if (!real)                                                                                       \
    return CU_NOT_FOUND;

HOOK_EXPORT CUresult cuGraphAddKernelNode(void **node, void *graph, const void *deps, size_t ndeps,
                                          const struct nano_cu_node_params *p) {
  HOOK_REAL(add_node_fn, HOOK_NODE)
  struct nano_cu_node_params mine;
  return real(node, graph, deps, ndeps, hook_v1_params(p, &mine));
}
HOOK_EXPORT CUresult cuGraphAddKernelNode_v2(void **node, void *graph, const void *deps,
                                             size_t ndeps, const struct nano_cu_node_params_v2 *p) {
  HOOK_REAL(add_node_fn, HOOK_NODE_V2)
  struct nano_cu_node_params_v2 mine;
  return real(node, graph, deps, ndeps, hook_v2_params(p, &mine));
}
HOOK_EXPORT CUresult cuGraphKernelNodeSetParams(void *node, const struct nano_cu_node_params *p) {
  HOOK_REAL(set_node_fn, HOOK_NODE_SET)
  struct nano_cu_node_params mine;
  return real(node, hook_v1_params(p, &mine));
}
HOOK_EXPORT CUresult cuGraphKernelNodeSetParams_v2(void *node,
                                                   const struct nano_cu_node_params_v2 *p) {
  HOOK_REAL(set_node_fn, HOOK_NODE_SET_V2)
  struct nano_cu_node_params_v2 mine;
  return real(node, hook_v2_params(p, &mine));
}
HOOK_EXPORT CUresult cuGraphExecKernelNodeSetParams(void *exec, void *node,
                                                    const struct nano_cu_node_params *p) {
  HOOK_REAL(exec_set_node_fn, HOOK_EXEC_NODE_SET)
  struct nano_cu_node_params mine;
  return real(exec, node, hook_v1_params(p, &mine));
}
HOOK_EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(void *exec, void *node,
                                                       const struct nano_cu_node_params_v2 *p) {
  HOOK_REAL(exec_set_node_fn, HOOK_EXEC_NODE_SET_V2)
  struct nano_cu_node_params_v2 mine;
  return real(exec, node, hook_v2_params(p, &mine));
}
/* The generic add calls go through __nano_gpu_graph_add_node, which
 * remembers a conditional node's bodies (no twin may be captured there). */
HOOK_EXPORT CUresult cuGraphAddNode(void **node, void *graph, const void *deps, size_t ndeps,
                                    struct nano_cu_graph_node_params *p) {
  HOOK_REAL(add_node_fn, HOOK_GENERIC_ADD)
  struct nano_cu_graph_node_params mine;
  return __nano_gpu_graph_add_node(NANO_GPU_CUDA, (void *)real, NULL, 0, node, graph, deps, NULL,
                                   ndeps, hook_generic_params(p, &mine));
}
HOOK_EXPORT CUresult cuGraphAddNode_v2(void **node, void *graph, const void *deps,
                                       const void *edges, size_t ndeps,
                                       struct nano_cu_graph_node_params *p) {
  HOOK_REAL(add_node2_fn, HOOK_GENERIC_ADD_V2)
  struct nano_cu_graph_node_params mine;
  return __nano_gpu_graph_add_node(NANO_GPU_CUDA, (void *)real, NULL, 1, node, graph, deps, edges,
                                   ndeps, hook_generic_params(p, &mine));
}
HOOK_EXPORT CUresult cuGraphNodeSetParams(void *node, struct nano_cu_graph_node_params *p) {
  HOOK_REAL(set_node_fn, HOOK_GENERIC_SET)
  struct nano_cu_graph_node_params mine;
  return real(node, hook_generic_params(p, &mine));
}
HOOK_EXPORT CUresult cuGraphExecNodeSetParams(void *exec, void *node,
                                              struct nano_cu_graph_node_params *p) {
  HOOK_REAL(exec_set_node_fn, HOOK_GENERIC_EXEC_SET)
  struct nano_cu_graph_node_params mine;
  return real(exec, node, hook_generic_params(p, &mine));
}
static void *const hook_fns[HOOK_N] = {(void *)cuLaunchKernel,
                                       (void *)cuLaunchKernel_ptsz,
                                       (void *)cuLaunchKernelEx,
                                       (void *)cuLaunchKernelEx_ptsz,
                                       (void *)cuLaunchCooperativeKernel,
                                       (void *)cuLaunchCooperativeKernel_ptsz,
                                       (void *)cuGraphAddKernelNode,
                                       (void *)cuGraphAddKernelNode_v2,
                                       (void *)cuGraphKernelNodeSetParams,
                                       (void *)cuGraphKernelNodeSetParams_v2,
                                       (void *)cuGraphExecKernelNodeSetParams,
                                       (void *)cuGraphExecKernelNodeSetParams_v2,
                                       (void *)cuGraphAddNode,
                                       (void *)cuGraphAddNode_v2,
                                       (void *)cuGraphNodeSetParams,
                                       (void *)cuGraphExecNodeSetParams};

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
    if (by_gpa ? hook_names[i].per_thread == per_thread && !strcmp(name, hook_names[i].base)
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
