/*
 * gpu.h: what the GPU back end (gpu.c) needs of a GPU API, implemented for
 * the CUDA driver (gpu_cuda.c) and the HIP runtime (gpu_hip.c). Each is
 * opened at run time: libnano_rpd.so links against neither.
 *
 * Every operation returns 0 or the API's own error code (error() names it),
 * and runs in the device's context: gpu.c brackets them with enter/leave
 * wherever the calling thread may be another one than the launching one.
 * Streams, events and device pointers are the API's handles as opaque
 * pointers and 64-bit addresses.
 */
#ifndef NANO_GPU_H
#define NANO_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "nano/gpu_launch.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a device is, for the dispatch layer (nano_launch_desc). */
struct gpu_device_info {
  char arch[32]; /* "sm_90", "gfx90a" */
  uint32_t wave_size, line_bytes, sector_bytes, lds_model;
};

/* A kernel node's parameters (cudaKernelNodeParams, hipKernelNodeParams):
 * the kernel's host handle, grid, block, dynamic shared bytes, arguments. */
struct gpu_kernel_params {
  const void *func;
  uint32_t grid[3], block[3], shared;
  void **args, **extra;
};

/* What kernel nodes added to a graph by hand need (gpu.c: the twin's nodes
 * are captured into a graph of their own, which goes into the program's
 * graph as one child graph node). */
struct gpu_graph_ops {
  /* The API's kernel node parameters, read and written. */
  void (*kernel_params_read)(const void *params, struct gpu_kernel_params *out);
  void (*kernel_params_write)(void *params, const struct gpu_kernel_params *in);
  int (*stream_destroy)(void *s);
  /* A capture of s, in relaxed mode, into a new graph; its end hands it out. */
  int (*capture_begin)(void *s);
  int (*capture_end)(void *s, void **graph);
  /* A child graph node embedding a copy of child. */
  int (*graph_add_child)(void **node, void *graph, const void *deps, size_t ndeps, void *child);
  /* The graph a child graph node embeds (the node's own, not a copy). */
  int (*graph_child)(void *node, void **graph);
  /* graph's nodes: nodes NULL, their count in *n; else up to *n of them. */
  int (*graph_nodes)(void *graph, void **nodes, size_t *n);
  /* Whether node is a kernel node (*kernel 1) or another kind (0). */
  int (*node_is_kernel)(void *node, int *kernel);
  int (*graph_clone)(void **clone, void *graph);
  int (*graph_destroy)(void *graph);
  /* The child graph node `node` of exec runs child's parameters from now on
   * (same topology as its graph). */
  int (*exec_child_set)(void *exec, void *node, void *child);
  /* The kernel part of the API's generic node parameters (cudaGraphNodeParams,
   * generic_bytes long) when they are a kernel node's, else NULL; NULL where
   * the API has no generic node calls. */
  void *(*generic_kernel)(const void *params);
  size_t generic_bytes;
};

struct gpu_api {
  const char *backend; /* "cuda", "hip": nano_dispatch's backend column */
  const char *library; /* what load() opens, for messages */
  /* Resolves the API's functions; 0, or -1 with why not in why (a
   * sentence, for the user). */
  int (*load)(char *why, size_t len);
  /* The device of a launch on `stream` (the API's handle) by the calling
   * thread: *key names it uniquely in the process, *dev its ordinal. CUDA:
   * the stream's context for a stream of the program's; on a default stream
   * the thread's current context or, where none is current, the primary
   * context of the device the CUDA runtime has for the thread (a lazy
   * cudaSetDevice), made current, as cudart would. */
  int (*current)(void *stream, void **key, int *dev);
  int (*describe)(void *key, int dev, struct gpu_device_info *out);
  /* Makes the device current on the calling thread, and back. */
  int (*enter)(void *key, int dev);
  void (*leave)(void);
  /* Pinned host memory the device reads and writes while kernels run. */
  int (*host_alloc)(void **p, size_t n);
  int (*host_device_ptr)(uint64_t *d, void *p);
  int (*host_free)(void *p);
  int (*dev_alloc)(uint64_t *d, size_t n);
  int (*dev_free)(uint64_t d);
  /* A stream that never waits for the program's (non-blocking). */
  int (*stream_create)(void **s);
  int (*stream_sync)(void *s);
  /* Work issued to s after this waits for the work before e's record. */
  int (*stream_wait)(void *s, void *e);
  /* GPU_CAPTURE_*: whether s is being captured into a graph. */
  int (*capture_status)(void *s, int *status);
  /* Swaps the calling thread's capture mode (GPU_CAPTURE_MODE_*) with *mode:
   * relaxed, a thread may allocate while another captures. */
  int (*capture_mode)(int *mode);
  /* The graph node the last work issued to s (being captured) became; NULL
   * where the API cannot say (then the tracer cannot tell it from the
   * program's). */
  int (*captured_node)(void *s, void **node);
  /* The graph s is being captured into (a program's graph with
   * cudaStreamBeginCaptureToGraph); NULL where the API cannot say. */
  int (*captured_graph)(void *s, void **graph);
  /* The body graphs of a conditional node, from the parameters of the
   * API's add-node call (graphs NULL, n 0 for another node type); NULL
   * where the API has no conditional nodes. */
  void (*node_bodies)(const void *params, void *const **graphs, unsigned *n);
  int (*copy_to_device)(uint64_t d, const void *src, size_t n, void *s);
  int (*copy_to_host)(void *dst, uint64_t d, size_t n, void *s);
  /* Sets n bytes of device memory at d to byte v, in stream order. */
  int (*memset_device)(uint64_t d, int v, size_t n, void *s);
  /* blocking: a thread in event_sync sleeps instead of spinning. */
  int (*event_create)(void **e, int blocking);
  int (*event_record)(void *e, void *s);
  /* Waits until the work before e's record is done. */
  int (*event_sync)(void *e);
  /* Whether it is: 0 done, GPU_NOT_READY not yet, else the API's error. */
  int (*event_query)(void *e);
  int (*event_ms)(float *ms, void *start, void *end);
  int (*event_destroy)(void *e);
  /* fn(arg) once the stream's work so far is done; fn may not call the API. */
  int (*host_func)(void *s, void (*fn)(void *), void *arg);
  /* Whether host_func can be captured into a graph; NULL: it can. */
  int (*host_func_captured)(void);
  const char *(*error)(int rc);
  /* Kernel nodes added to a graph by hand; NULL where the API has no
   * twins for them (the program's kernel runs there). */
  const struct gpu_graph_ops *graphs;
  /* Whether current() knows a stream's own device (else it answers the
   * thread's); NULL: it does. */
  int (*stream_device_known)(void);
};

/* An AMD device's line and sector bytes and LDS model, from its arch and
 * wave size (set in out). */
void gpu_amd_memory_model(struct gpu_device_info *out);

/* A placement's sums table in place (nano_dh_memory.put_sums): the image it
 * was placed from, its head and bytes, and whether its counters were zeroed
 * after the last dispatch's were read (gpu.c's buffers, the HSA tool's). */
struct gpu_sums_state {
  const void *image; /* NULL: none in place */
  uint64_t head, used;
  int clean;
};

/* Whether s holds the table of image (head, bytes). */
static inline int gpu_sums_holds(const struct gpu_sums_state *s, const void *image, uint64_t head,
                                 uint64_t bytes) {
  return s->image && s->image == image && s->head == head && s->used == bytes;
}

/* put_sums's rule: whether the table in place is image's with its counters
 * zeroed, so that nothing need be placed. Either way the dispatch about to
 * run adds to it (not clean any more); one to be placed again holds nothing
 * until gpu_sums_placed. */
static inline int gpu_sums_reuse(struct gpu_sums_state *s, const void *image, uint64_t head,
                                 uint64_t bytes) {
  int ready = s->clean && gpu_sums_holds(s, image, head, bytes);
  s->clean = 0;
  if (!ready)
    s->image = NULL;
  return ready;
}

static inline void gpu_sums_placed(struct gpu_sums_state *s, const void *image, uint64_t head,
                                   uint64_t bytes) {
  s->image = image;
  s->head = head;
  s->used = bytes;
  s->clean = 0;
}

extern const struct gpu_api gpu_cuda_api;
extern const struct gpu_api gpu_hip_api;

/* Capture status and modes, the same numbers in both APIs
 * (CU_STREAM_CAPTURE_STATUS_*, hipStreamCaptureStatus*;
 * CU_STREAM_CAPTURE_MODE_*, hipStreamCaptureMode*). */
#define GPU_CAPTURE_NONE 0
#define GPU_CAPTURE_ACTIVE 1
#define GPU_CAPTURE_MODE_RELAXED 2

/* event_query's "not yet" (CUDA_ERROR_NOT_READY, hipErrorNotReady). */
#define GPU_NOT_READY 600

/* The per-thread default stream's handle in both APIs (cudaStreamPerThread,
 * hipStreamPerThread). */
#define GPU_STREAM_PER_THREAD ((void *)0x2)
/* The legacy default stream's explicit handle (cudaStreamLegacy). */
#define GPU_STREAM_LEGACY ((void *)0x1)

/* The API of a launch (gpu_launch's api), loaded, with the back end's
 * threads started; NULL (said) when it cannot be. */
const struct gpu_api *gpu_api_of(int api);

/* Or'ed into gpu_launch's api (beside nano/gpu_launch.h's flags): the launch
 * function is the CUDA driver's (gpu_cache_cuda.c), whose errors are CUresults
 * and which keeps no last error of the program's. */
#define GPU_DRIVER 0x200

/* __nano_gpu_launch (nano/gpu_launch.h) with the file holding the twin's
 * site tables (sites_path, a kernel cache's; NULL: the file holding twin). */
int gpu_launch(int api, nano_gpu_launch_fn launch, const void *kernel, const void *twin,
               const char *name, const char *sites_path, uint64_t grid_xy, uint32_t grid_z,
               uint64_t block_xy, uint32_t block_z, void **args, uint32_t nargs, size_t shared,
               void *stream);

/* ---- kernel nodes added to a graph by hand (gpu.c) ---------------------------------- */

/* A kernel node's twin: its handle, the kernel's name, the count of its
 * explicit arguments, the file holding its site tables (NULL: the file
 * holding twin) and the call that launches it into the twin's capture. */
struct gpu_hand_twin {
  const void *twin;
  const char *name, *sites_path;
  uint32_t nargs;
  nano_gpu_launch_fn launch;
};

/* What gpu_hand_add did with a program's kernel node. */
enum { GPU_HAND_ADDED, GPU_HAND_AS_IS, GPU_HAND_NOT_ADDED };

/* Adds the twin t's nodes of a kernel node with parameters p (the kernel
 * part of the program's add call; api as gpu_launch's) to graph as one
 * child graph node, *node, captured on a stream of nanoprobe's own.
 * GPU_HAND_ADDED; GPU_HAND_AS_IS: the program's node is to be added as it
 * is (said here why); GPU_HAND_NOT_ADDED: the same, but the child graph node
 * itself could not be added (why in *why, for gpu_hand_added to say once the
 * program's own add worked: a bad dependency is the program's error, not
 * ours). */
int gpu_hand_add(int api, const struct gpu_hand_twin *t, const struct gpu_kernel_params *p,
                 void **node, void *graph, const void *deps, size_t ndeps, const char **why);

/* Plain mode's kernel node: a kernel cache's kernel `use` in place of the
 * program's `kernel` (of that name), with work around it (its module
 * variables' copies), all of which fn(arg, s) issues on a stream s of
 * nanoprobe's own being captured; the graph goes into graph as one child
 * graph node, *node, whose parameter calls (gpu_hand_params) act on the
 * kernel node inside, `use` in place of `kernel` in what they set and read.
 * As gpu_hand_add's result (GPU_HAND_AS_IS: the capture failed, said). */
int gpu_hand_add_plain(int api, int (*fn)(void *arg, void *s), void *arg, const void *kernel,
                       const void *use, const char *name, void **node, void *graph,
                       const void *deps, size_t ndeps, const char **why);

/* The program's add call's result rc after gpu_hand_add's verdict `how` on
 * kernel `name` (rc: the program's own add, run unless the twin's node went
 * in; *node the node it made, of which nothing of ours is known any more). */
int gpu_hand_added(int how, int rc, void *const *node, const char *name, const char *why);

/* Whether edges (an add call's edge data for ndeps dependencies, or NULL)
 * are all full dependencies: a child graph node, which a twin's nodes need,
 * takes no other. */
int gpu_edges_default(const void *edges, size_t ndeps);
#define GPU_HAND_EDGES_SAID                                                                        \
  "a kernel node added with edges other than full dependencies (a child graph node, which a "      \
  "twin's nodes need, takes none): it runs uninstrumented in the graph"

/* __nano_gpu_graph_kernel_params (nano/gpu_launch.h) for a call whose
 * kernel node struct is `bytes` long, of which the API's kernel node
 * parameters are the start (the CUDA driver's _v2: its CUkernel and context
 * follow and are kept); 0: the API's own struct. */
int gpu_hand_params(int api, int op, void *call, nano_gpu_node_params_fn set, void *exec,
                    void *node, void *params, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* NANO_GPU_H */
