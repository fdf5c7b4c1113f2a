/*
 * cuda_cache.h: the contract between libnano_cudahook.so (cuda_hook.c),
 * which stands between a CUDA program and the driver's launch calls, and
 * the kernel cache in libnano_rpd.so (cuda_cache.c), which decides per
 * launch whether the cache's twin runs instead.
 *
 * The hook hands every cuLaunchKernel and cuLaunchKernelEx call (and their
 * per-thread-stream variants) over as one struct, with the driver's own
 * function it would have called; __nano_cuda_launch returns that call's
 * CUresult, whichever kernel ran. The kernel node calls (a node added to a
 * graph by hand, its parameters read or set) go to __nano_cuda_node_add and
 * __nano_cuda_node_params the same way.
 */
#ifndef NANO_CUDA_CACHE_H
#define NANO_CUDA_CACHE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* cuda.h's CUlaunchConfig, as far as a launch reads it (its layout since
 * CUDA 12.0: seven unsigned, the stream, the attributes and their count). */
struct nano_cu_config {
  unsigned grid[3], block[3], shared;
  void *stream;
  void *attrs;
  unsigned nattrs;
};

/* cuLaunchKernel; cuLaunchKernelEx; cuLaunchCooperativeKernel (no extra). */
enum nano_cu_call { NANO_CU_LAUNCH, NANO_CU_LAUNCH_EX, NANO_CU_LAUNCH_COOP };

struct nano_cu_launch {
  enum nano_cu_call call;
  int per_thread;               /* the _ptsz variant: a NULL stream is the thread's default one */
  void *real;                   /* the driver's function of that call */
  void *f;                      /* CUfunction or CUkernel */
  struct nano_cu_config config; /* NANO_CU_LAUNCH: attrs NULL */
  void **params, **extra;
};

/* Launches l as the driver would, or the kernel cache's twin of l->f in its
 * place (NANO_INSTRUMENT, NANO_KERNEL_CACHE). The CUresult of the launch. */
int __nano_cuda_launch(const struct nano_cu_launch *l);

/* cuda.h's CUDA_KERNEL_NODE_PARAMS (v1) and _v2 (CUDA 12.0: the kernel as a
 * CUkernel, used where func is NULL, and its context). */
struct nano_cu_node_params {
  void *func;
  unsigned grid[3], block[3], shared;
  void **params, **extra;
};
struct nano_cu_node_params_v2 {
  void *func;
  unsigned grid[3], block[3], shared;
  void **params, **extra;
  void *kern, *ctx;
};

/* cuda.h's CUgraphNodeParams (CUDA 12.2: cuGraphAddNode and the generic
 * SetParams calls; the runtime's cudaGraphNodeParams is laid out the same):
 * the node's type, then its parameters in a union of 29 long longs; a
 * kernel node's (NANO_CU_NODE_KERNEL) are CUDA_KERNEL_NODE_PARAMS_v3, the
 * _v2 layout; a conditional node's (NANO_CU_NODE_CONDITIONAL, CUDA 12.4)
 * CUDA_CONDITIONAL_NODE_PARAMS, as far as read: the body graphs the driver
 * makes (graphs, size of them). */
#define NANO_CU_NODE_KERNEL 0       /* CU_GRAPH_NODE_TYPE_KERNEL */
#define NANO_CU_NODE_CONDITIONAL 13 /* CU_GRAPH_NODE_TYPE_CONDITIONAL */
struct nano_cu_graph_node_params {
  int type;
  int reserved0[3];
  union {
    long long reserved1[29];
    struct nano_cu_node_params_v2 kernel;
    struct {
      unsigned long long handle;
      int type;
      unsigned size;
      void **graphs;
    } conditional;
  };
  long long reserved2;
};
_Static_assert(sizeof(struct nano_cu_graph_node_params) == 256, "cuda.h's CUgraphNodeParams");

/* The layout of a node call's parameters: CUDA_KERNEL_NODE_PARAMS (v1),
 * _v2, or CUgraphNodeParams (the generic calls). */
enum nano_cu_node_abi { NANO_CU_NODE_V1, NANO_CU_NODE_V2, NANO_CU_NODE_GENERIC };

/* A node added by hand: the driver's add call (real: cuGraphAddKernelNode
 * v1 or _v2, cuGraphAddNode, or with_edges cuGraphAddNode_v2) and its
 * arguments; launch: the driver's cuLaunchKernel. */
struct nano_cu_node_add {
  enum nano_cu_node_abi abi;
  int with_edges;
  void *real, *launch;
  void **node;
  void *graph;
  const void *deps, *edges;
  size_t ndeps;
  void *params;
};

/* Adds a's node as the driver would, or, with NANO_INSTRUMENT and the kernel
 * cache's twin of a kernel node's kernel, the twin's nodes as one child
 * graph node in its place (gpu.c's nodes added by hand); plain mode gives a
 * kernel node the cache's kernel of the same name. The add's CUresult. */
int __nano_cuda_node_add(const struct nano_cu_node_add *a);

/* A kernel node's parameters read or set (op: nano/gpu_launch.h's
 * NANO_GPU_NODE_*): the driver's call, and for the executable calls the
 * driver's set call of a graph's node in the same layout (set); exec: the
 * executable, NULL but for those. */
struct nano_cu_node_call {
  enum nano_cu_node_abi abi;
  int op;
  void *call, *set;
  void *exec, *node, *params;
};

/* c's call as the driver would make it, on the twin's node inside a node
 * __nano_cuda_node_add made (the program's kernel read back as its own),
 * and with plain mode's function in what it sets. Its CUresult. */
int __nano_cuda_node_params(const struct nano_cu_node_call *c);

#ifdef __cplusplus
}
#endif

#endif
