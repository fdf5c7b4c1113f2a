/*
 * gpu_cuda.c: the GPU back end's API (gpu.h) on the CUDA driver,
 * libcuda.so.1, which every CUDA program loads (a static cudart too): its
 * contexts are the back end's devices; a launch's is its stream's, or the
 * thread's current one, or, where none is current, the primary context of
 * the thread's runtime device, the one cudart would use.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

#include "cuda_cache.h" /* CUgraphNodeParams' layout */
#include "gpu.h"
#include "nano/handler.h"
#include "nano/symbols.h"

/* cuda.h's types and constants, as much of them as used. */
typedef int CUresult; /* CUDA_SUCCESS 0 */
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUevent;
typedef unsigned long long CUdeviceptr;

#define CU_SUCCESS 0
#define CU_CAPTURE_RELAXED 2 /* CU_STREAM_CAPTURE_MODE_RELAXED */
#define CU_NODE_KERNEL 0     /* CU_GRAPH_NODE_TYPE_KERNEL */
#define CU_ATTR_CC_MAJOR 75  /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
#define CU_ATTR_CC_MINOR 76  /* ..._MINOR                                    */
#define CU_HOSTALLOC_PORTABLE 0x01
#define CU_HOSTALLOC_DEVICEMAP 0x02
#define CU_STREAM_NON_BLOCKING 0x1
#define CU_EVENT_DEFAULT 0x0
#define CU_EVENT_BLOCKING_SYNC 0x1
/* NVIDIA: 128-byte lines of 32-byte sectors; shared memory in phases. */
#define CU_LINE_BYTES 128
#define CU_SECTOR_BYTES 32
#define CU_WAVE 32

/* The driver functions used: the versioned names where cuda.h maps the
 * plain ones to them. */
static struct {
  CUresult (*Init)(unsigned);
  CUresult (*DeviceGet)(CUdevice *, int);
  CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*CtxGetCurrent)(CUcontext *);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*CtxGetDevice)(CUdevice *);
  CUresult (*CtxPushCurrent)(CUcontext);
  CUresult (*CtxPopCurrent)(CUcontext *);
  CUresult (*MemHostAlloc)(void **, size_t, unsigned);
  CUresult (*MemHostGetDevicePointer)(CUdeviceptr *, void *, unsigned);
  CUresult (*MemFreeHost)(void *);
  CUresult (*MemAlloc)(CUdeviceptr *, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*StreamCreate)(CUstream *, unsigned);
  CUresult (*StreamSynchronize)(CUstream);
  CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*StreamIsCapturing)(CUstream, int *);
  CUresult (*ThreadExchangeStreamCaptureMode)(int *);
  CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*EventCreate)(CUevent *, unsigned);
  CUresult (*EventRecord)(CUevent, CUstream);
  CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*EventQuery)(CUevent);
  CUresult (*EventDestroy)(CUevent);
  CUresult (*LaunchHostFunc)(CUstream, void (*)(void *), void *);
  CUresult (*GetErrorName)(CUresult, const char **);
  CUresult (*StreamDestroy)(CUstream);
  CUresult (*StreamBeginCapture)(CUstream, int);
  CUresult (*StreamEndCapture)(CUstream, void **);
  CUresult (*GraphAddChildGraphNode)(void **, void *, void *const *, size_t, void *);
  CUresult (*GraphChildGraphNodeGetGraph)(void *, void **);
  CUresult (*GraphGetNodes)(void *, void **, size_t *);
  CUresult (*GraphNodeGetType)(void *, int *);
  CUresult (*GraphClone)(void **, void *);
  CUresult (*GraphDestroy)(void *);
  CUresult (*GraphExecChildGraphNodeSetParams)(void *, void *, void *);
  /* optional (CUDA 9.2): without it, the current context is the launch's */
  CUresult (*StreamGetCtx)(CUstream, CUcontext *);
  /* optional (CUDA 11.3): without it, the graph copies show as the program's,
   * and conditional bodies cannot be told apart */
  CUresult (*StreamGetCaptureInfo)(CUstream, int *, unsigned long long *, void **, void *const **,
                                   size_t *);
  /* optional (CUDA 12.3): the same with the edges' data; preferred where
   * present (newer drivers may drop _v2) */
  CUresult (*StreamGetCaptureInfo3)(CUstream, int *, unsigned long long *, void **, void *const **,
                                    const void **, size_t *);
} cu;

#define CU_FN(field, symbol) NANO_SYMBOL(__typeof__(cu), field, symbol)
static const struct nano_symbol cu_fns[] = {
    CU_FN(Init, cuInit),
    CU_FN(DeviceGet, cuDeviceGet),
    CU_FN(DeviceGetAttribute, cuDeviceGetAttribute),
    CU_FN(DevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain),
    CU_FN(CtxGetCurrent, cuCtxGetCurrent),
    CU_FN(CtxSetCurrent, cuCtxSetCurrent),
    CU_FN(CtxGetDevice, cuCtxGetDevice),
    CU_FN(CtxPushCurrent, cuCtxPushCurrent_v2),
    CU_FN(CtxPopCurrent, cuCtxPopCurrent_v2),
    CU_FN(MemHostAlloc, cuMemHostAlloc),
    CU_FN(MemHostGetDevicePointer, cuMemHostGetDevicePointer_v2),
    CU_FN(MemFreeHost, cuMemFreeHost),
    CU_FN(MemAlloc, cuMemAlloc_v2),
    CU_FN(MemFree, cuMemFree_v2),
    CU_FN(StreamCreate, cuStreamCreate),
    CU_FN(StreamSynchronize, cuStreamSynchronize),
    CU_FN(StreamWaitEvent, cuStreamWaitEvent),
    CU_FN(StreamIsCapturing, cuStreamIsCapturing),
    CU_FN(ThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode),
    CU_FN(MemcpyHtoDAsync, cuMemcpyHtoDAsync_v2),
    CU_FN(MemcpyDtoHAsync, cuMemcpyDtoHAsync_v2),
    CU_FN(MemsetD8Async, cuMemsetD8Async),
    CU_FN(EventCreate, cuEventCreate),
    CU_FN(EventRecord, cuEventRecord),
    CU_FN(EventElapsedTime, cuEventElapsedTime),
    CU_FN(EventSynchronize, cuEventSynchronize),
    CU_FN(EventQuery, cuEventQuery),
    CU_FN(EventDestroy, cuEventDestroy_v2),
    CU_FN(LaunchHostFunc, cuLaunchHostFunc),
    CU_FN(GetErrorName, cuGetErrorName),
    CU_FN(StreamDestroy, cuStreamDestroy_v2),
    CU_FN(StreamBeginCapture, cuStreamBeginCapture_v2),
    CU_FN(StreamEndCapture, cuStreamEndCapture),
    CU_FN(GraphAddChildGraphNode, cuGraphAddChildGraphNode),
    CU_FN(GraphChildGraphNodeGetGraph, cuGraphChildGraphNodeGetGraph),
    CU_FN(GraphGetNodes, cuGraphGetNodes),
    CU_FN(GraphNodeGetType, cuGraphNodeGetType),
    CU_FN(GraphClone, cuGraphClone),
    CU_FN(GraphDestroy, cuGraphDestroy),
    CU_FN(GraphExecChildGraphNodeSetParams, cuGraphExecChildGraphNodeSetParams),
};

static int cuda_load(char *why, size_t len) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    snprintf(why, len, "the CUDA driver (libcuda.so.1) cannot be loaded: %s", dlerror());
    return -1;
  }
  const char *missing = nano_symbols_resolve(h, cu_fns, sizeof cu_fns / sizeof cu_fns[0], &cu);
  if (missing) {
    snprintf(why, len, "the CUDA driver lacks %s (a driver older than CUDA 11.1?)", missing);
    return -1;
  }
  *(void **)&cu.StreamGetCaptureInfo = dlsym(h, "cuStreamGetCaptureInfo_v2");
  *(void **)&cu.StreamGetCaptureInfo3 = dlsym(h, "cuStreamGetCaptureInfo_v3");
  *(void **)&cu.StreamGetCtx = dlsym(h, "cuStreamGetCtx");
  return 0;
}

/* The device the CUDA runtime has for the calling thread (cudaGetDevice:
 * after a cudaSetDevice, which before CUDA 12 makes no context current), 0
 * where the program has no dynamic cudart (a static one keeps it to itself). */
static int cuda_runtime_device(void) {
  int (*get)(int *) = (int (*)(int *))dlsym(RTLD_DEFAULT, "cudaGetDevice");
  int dev = 0;
  if (!get || get(&dev) != 0 || dev < 0)
    dev = 0;
  return dev;
}

static int cuda_current(void *stream, void **key, int *dev) {
  CUcontext ctx = NULL;
  CUresult r;
  if (stream && stream != GPU_STREAM_LEGACY && stream != GPU_STREAM_PER_THREAD && cu.StreamGetCtx &&
      cu.StreamGetCtx(stream, &ctx) == CU_SUCCESS && ctx) {
    CUcontext old;
    if ((r = cu.CtxPushCurrent(ctx)) == CU_SUCCESS) {
      r = cu.CtxGetDevice(dev);
      cu.CtxPopCurrent(&old);
    }
    *key = ctx;
    return r;
  }
  r = cu.CtxGetCurrent(&ctx);
  if (r == CU_SUCCESS && !ctx) {
    CUdevice d;
    if ((r = cu.Init(0)) == CU_SUCCESS &&
        (r = cu.DeviceGet(&d, cuda_runtime_device())) == CU_SUCCESS &&
        (r = cu.DevicePrimaryCtxRetain(&ctx, d)) == CU_SUCCESS)
      r = cu.CtxSetCurrent(ctx);
  }
  if (r == CU_SUCCESS)
    r = cu.CtxGetDevice(dev);
  *key = ctx;
  return r;
}

static int cuda_describe(void *key, int dev, struct gpu_device_info *out) {
  (void)key;
  int major = 0, minor = 0;
  CUresult r = cu.DeviceGetAttribute(&major, CU_ATTR_CC_MAJOR, dev);
  if (r == CU_SUCCESS)
    r = cu.DeviceGetAttribute(&minor, CU_ATTR_CC_MINOR, dev);
  snprintf(out->arch, sizeof out->arch, "sm_%d%d", major, minor);
  out->wave_size = CU_WAVE;
  out->line_bytes = CU_LINE_BYTES;
  out->sector_bytes = CU_SECTOR_BYTES;
  out->lds_model = NANO_LDS_PHASED;
  return r;
}

static int cuda_enter(void *key, int dev) {
  (void)dev;
  return cu.CtxPushCurrent(key);
}
static void cuda_leave(void) {
  CUcontext old;
  cu.CtxPopCurrent(&old);
}
static int cuda_host_alloc(void **p, size_t n) {
  return cu.MemHostAlloc(p, n, CU_HOSTALLOC_PORTABLE | CU_HOSTALLOC_DEVICEMAP);
}
static int cuda_host_device_ptr(uint64_t *d, void *p) {
  CUdeviceptr v = 0;
  CUresult r = cu.MemHostGetDevicePointer(&v, p, 0);
  *d = v;
  return r;
}
static int cuda_host_free(void *p) { return cu.MemFreeHost(p); }
static int cuda_dev_alloc(uint64_t *d, size_t n) {
  CUdeviceptr v = 0;
  CUresult r = cu.MemAlloc(&v, n);
  *d = v;
  return r;
}
static int cuda_dev_free(uint64_t d) { return cu.MemFree(d); }
static int cuda_stream_create(void **s) { return cu.StreamCreate(s, CU_STREAM_NON_BLOCKING); }
static int cuda_stream_sync(void *s) { return cu.StreamSynchronize(s); }
static int cuda_stream_wait(void *s, void *e) { return cu.StreamWaitEvent(s, e, 0); }
static int cuda_capture_status(void *s, int *status) {
  *status = GPU_CAPTURE_NONE;
  return cu.StreamIsCapturing(s, status);
}
static int cuda_capture_mode(int *mode) { return cu.ThreadExchangeStreamCaptureMode(mode); }
/* cuStreamGetCaptureInfo of s (_v3, else _v2): the graph being captured
 * into and the capture's current dependencies; -1 where the driver has
 * neither. */
static int cuda_capture_info(void *s, void **graph, void *const **deps, size_t *ndeps) {
  int status = 0;
  if (cu.StreamGetCaptureInfo3)
    return cu.StreamGetCaptureInfo3(s, &status, NULL, graph, deps, NULL, ndeps);
  if (cu.StreamGetCaptureInfo)
    return cu.StreamGetCaptureInfo(s, &status, NULL, graph, deps, ndeps);
  return -1;
}
static int cuda_captured_node(void *s, void **node) {
  *node = NULL;
  void *const *deps = NULL;
  size_t ndeps = 0;
  int r = cuda_capture_info(s, NULL, &deps, &ndeps);
  if (r == CU_SUCCESS && ndeps == 1) /* in a capture's sequence: the node just captured */
    *node = deps[0];
  return r;
}
static int cuda_captured_graph(void *s, void **graph) {
  *graph = NULL;
  return cuda_capture_info(s, graph, NULL, NULL);
}
static void cuda_node_bodies(const void *params, void *const **graphs, unsigned *n) {
  const struct nano_cu_graph_node_params *p = params;
  int conditional = p && p->type == NANO_CU_NODE_CONDITIONAL && p->conditional.graphs;
  *graphs = conditional ? p->conditional.graphs : NULL;
  *n = conditional ? p->conditional.size : 0;
}
static int cuda_copy_to_device(uint64_t d, const void *src, size_t n, void *s) {
  return cu.MemcpyHtoDAsync(d, src, n, s);
}
static int cuda_copy_to_host(void *dst, uint64_t d, size_t n, void *s) {
  return cu.MemcpyDtoHAsync(dst, d, n, s);
}
static int cuda_memset_device(uint64_t d, int v, size_t n, void *s) {
  return cu.MemsetD8Async(d, (unsigned char)v, n, s);
}
static int cuda_event_create(void **e, int blocking) {
  return cu.EventCreate(e, blocking ? CU_EVENT_BLOCKING_SYNC : CU_EVENT_DEFAULT);
}
static int cuda_event_record(void *e, void *s) { return cu.EventRecord(e, s); }
static int cuda_event_sync(void *e) { return cu.EventSynchronize(e); }
static int cuda_event_query(void *e) { return cu.EventQuery(e); }
static int cuda_event_ms(float *ms, void *a, void *b) { return cu.EventElapsedTime(ms, a, b); }
static int cuda_event_destroy(void *e) { return cu.EventDestroy(e); }
static int cuda_host_func(void *s, void (*fn)(void *), void *arg) {
  return cu.LaunchHostFunc(s, fn, arg);
}
/* driver_types.h's cudaKernelNodeParams: the runtime's kernel nodes, whose
 * func is a kernel's host handle. */
struct cuda_kernel_node_params {
  const void *func;
  unsigned grid[3], block[3], shared;
  void **args, **extra;
};
static void cuda_kernel_params_read(const void *params, struct gpu_kernel_params *out) {
  const struct cuda_kernel_node_params *p = params;
  *out = (struct gpu_kernel_params){p->func,
                                    {p->grid[0], p->grid[1], p->grid[2]},
                                    {p->block[0], p->block[1], p->block[2]},
                                    p->shared,
                                    p->args,
                                    p->extra};
}
static void cuda_kernel_params_write(void *params, const struct gpu_kernel_params *in) {
  *(struct cuda_kernel_node_params *)params =
      (struct cuda_kernel_node_params){in->func,
                                       {in->grid[0], in->grid[1], in->grid[2]},
                                       {in->block[0], in->block[1], in->block[2]},
                                       in->shared,
                                       in->args,
                                       in->extra};
}
static int cuda_stream_destroy(void *s) { return cu.StreamDestroy(s); }
static int cuda_capture_begin(void *s) { return cu.StreamBeginCapture(s, CU_CAPTURE_RELAXED); }
static int cuda_capture_end(void *s, void **graph) { return cu.StreamEndCapture(s, graph); }
static int cuda_graph_add_child(void **node, void *graph, const void *deps, size_t ndeps,
                                void *child) {
  return cu.GraphAddChildGraphNode(node, graph, deps, ndeps, child);
}
static int cuda_graph_child(void *node, void **graph) {
  return cu.GraphChildGraphNodeGetGraph(node, graph);
}
static int cuda_graph_nodes(void *graph, void **nodes, size_t *n) {
  return cu.GraphGetNodes(graph, nodes, n);
}
static int cuda_node_is_kernel(void *node, int *kernel) {
  int type = -1;
  CUresult r = cu.GraphNodeGetType(node, &type);
  *kernel = type == CU_NODE_KERNEL;
  return r;
}
static int cuda_graph_clone(void **clone, void *graph) { return cu.GraphClone(clone, graph); }
static int cuda_graph_destroy(void *graph) { return cu.GraphDestroy(graph); }
static int cuda_exec_child_set(void *exec, void *node, void *child) {
  return cu.GraphExecChildGraphNodeSetParams(exec, node, child);
}
/* cudaGraphNodeParams (laid out as CUgraphNodeParams): a kernel node's
 * parameters after the type, in cudaKernelNodeParamsV2's layout, whose
 * start is cudaKernelNodeParams'. */
static void *cuda_generic_kernel(const void *params) {
  const struct nano_cu_graph_node_params *p = params;
  return p->type == NANO_CU_NODE_KERNEL ? (void *)&p->kernel : NULL;
}
static const struct gpu_graph_ops cuda_graph_ops = {
    cuda_kernel_params_read, cuda_kernel_params_write,
    cuda_stream_destroy,     cuda_capture_begin,
    cuda_capture_end,        cuda_graph_add_child,
    cuda_graph_child,        cuda_graph_nodes,
    cuda_node_is_kernel,     cuda_graph_clone,
    cuda_graph_destroy,      cuda_exec_child_set,
    cuda_generic_kernel,     sizeof(struct nano_cu_graph_node_params),
};
static const char *cuda_error(int rc) {
  const char *s = NULL;
  if (cu.GetErrorName && cu.GetErrorName(rc, &s) == CU_SUCCESS && s)
    return s;
  return "unknown CUDA error";
}

const struct gpu_api gpu_cuda_api = {
    "cuda",
    "libcuda.so.1",
    cuda_load,
    cuda_current,
    cuda_describe,
    cuda_enter,
    cuda_leave,
    cuda_host_alloc,
    cuda_host_device_ptr,
    cuda_host_free,
    cuda_dev_alloc,
    cuda_dev_free,
    cuda_stream_create,
    cuda_stream_sync,
    cuda_stream_wait,
    cuda_capture_status,
    cuda_capture_mode,
    cuda_captured_node,
    cuda_captured_graph,
    cuda_node_bodies,
    cuda_copy_to_device,
    cuda_copy_to_host,
    cuda_memset_device,
    cuda_event_create,
    cuda_event_record,
    cuda_event_sync,
    cuda_event_query,
    cuda_event_ms,
    cuda_event_destroy,
    cuda_host_func,
    NULL, /* host functions are captured (cuLaunchHostFunc) */
    cuda_error,
    &cuda_graph_ops,
    NULL, /* a stream's device is its context's */
};
