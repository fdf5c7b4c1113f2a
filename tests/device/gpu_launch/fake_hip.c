/*
 * fake_hip.c: the HIP runtime of the stand-in (fake_cudart.c), part of the
 * same library (the test links it as libamdhip64.so.5 too), with HIP's own
 * headers so the device properties have the real layout. Each call maps to
 * the stand-in driver's (a device at ordinal 0: gfx90a, wave 64); launches
 * and synchronization are fake_cudart.c's hipLaunchKernel and
 * hipDeviceSynchronize, stream capture and graphs its cuda* ones. It is the
 * HIP its headers are (5.2), or the version FAKE_HIP_VERSION says
 * (hipRuntimeGetVersion's number): its node types numbered as that version
 * numbers them, HIP 6.2's generic node calls from 6.2 on.
 */
#define _GNU_SOURCE
#define __HIP_PLATFORM_AMD__
#include <hip/hip_runtime_api.h>
#include <hip/hip_version.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../hip62.h"

/* The stand-in driver (fake_cudart.c). */
int cuCtxPushCurrent_v2(void *ctx);
int cuCtxPopCurrent_v2(void **ctx);
int cuInit(unsigned flags);
int cuDevicePrimaryCtxRetain(void **ctx, int dev);
int cuMemHostAlloc(void **p, size_t n, unsigned flags);
int cuMemHostGetDevicePointer_v2(unsigned long long *d, void *p, unsigned flags);
int cuMemFreeHost(void *p);
int cuMemAlloc_v2(unsigned long long *d, size_t n);
int cuMemFree_v2(unsigned long long d);
int cuStreamCreate(void **s, unsigned flags);
int cuStreamSynchronize(void *s);
int cuStreamIsCapturing(void *s, int *status);
int cuMemcpyHtoDAsync_v2(unsigned long long d, const void *src, size_t n, void *s);
int cuMemsetD8Async(unsigned long long d, unsigned char v, size_t n, void *s);
int cuMemcpyDtoHAsync_v2(void *dst, unsigned long long d, size_t n, void *s);
int cuEventCreate(void **e, unsigned flags);
int cuEventRecord(void *e, void *s);
int cuEventSynchronize(void *e);
int cuEventQuery(void *e);
int cuStreamWaitEvent(void *s, void *e, unsigned flags);
int cuEventElapsedTime(float *ms, void *a, void *b);
int cuEventDestroy_v2(void *e);
int cuLaunchHostFunc(void *s, void (*fn)(void *), void *arg);
int cuThreadExchangeStreamCaptureMode(int *mode);
int cudaStreamCreate(void **s);
int cudaStreamBeginCapture(void *s, int mode);
int cudaStreamEndCapture(void *s, void **graph);
int cudaGraphInstantiate(void **exec, void *graph, unsigned long long flags);
int cudaGraphLaunch(void *exec, void *stream);
/* Graphs built by hand: the stand-in's kernel node parameters
 * (cudaKernelNodeParams' layout) and its graph calls. */
struct cuda_kernel_node_params {
  const void *func;
  dim3 grid, block;
  unsigned shared;
  void **args, **extra;
};
int cudaGraphCreate(void **graph, unsigned flags);
int cudaGraphAddKernelNode(void **node, void *graph, const void *deps, size_t n,
                           const struct cuda_kernel_node_params *p);
int cudaGraphKernelNodeGetParams(void *node, struct cuda_kernel_node_params *p);
int cudaGraphKernelNodeSetParams(void *node, const struct cuda_kernel_node_params *p);
int cudaGraphExecKernelNodeSetParams(void *exec, void *node,
                                     const struct cuda_kernel_node_params *p);
int cuStreamDestroy_v2(void *s);
int cuGraphAddChildGraphNode(void **node, void *graph, const void *deps, size_t n, void *child);
int cuGraphChildGraphNodeGetGraph(void *node, void **graph);
int cuGraphGetNodes(void *graph, void **nodes, size_t *n);
int cuGraphNodeGetType(void *node, int *type);
int cuGraphClone(void **clone, void *graph);
int cuGraphDestroy(void *graph);
int cuGraphExecChildGraphNodeSetParams(void *exec, void *node, void *child);

/* HIP has no contexts to make current: every call runs in the device's. */
#define IN_DEVICE(call)                                                                            \
  do {                                                                                             \
    void *ctx_, *old_;                                                                             \
    if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx_, 0) || cuCtxPushCurrent_v2(ctx_))              \
      return hipErrorInvalidContext;                                                               \
    int rc_ = (call);                                                                              \
    cuCtxPopCurrent_v2(&old_);                                                                     \
    return rc_ ? hipErrorInvalidValue : hipSuccess;                                                \
  } while (0)

static int current_device;

hipError_t hipGetDevice(int *dev) {
  *dev = current_device;
  return hipSuccess;
}
hipError_t hipSetDevice(int dev) {
  if (dev != 0)
    return hipErrorInvalidDevice;
  current_device = dev;
  return hipSuccess;
}
/* Later ROCm's (HIP 5.2 declares none): the stand-in's streams are all its
 * device 0's. */
hipError_t hipStreamGetDevice(hipStream_t s, hipDevice_t *dev);
hipError_t hipStreamGetDevice(hipStream_t s, hipDevice_t *dev) {
  (void)s;
  if (!dev)
    return hipErrorInvalidValue;
  *dev = 0;
  return hipSuccess;
}
hipError_t hipGetDeviceProperties(hipDeviceProp_t *p, int dev) {
  if (dev != 0)
    return hipErrorInvalidDevice;
  memset(p, 0, sizeof *p);
  strcpy(p->name, "stand-in");
  strcpy(p->gcnArchName, "gfx90a:sramecc+:xnack-");
  p->warpSize = 64;
  return hipSuccess;
}
hipError_t hipHostMalloc(void **p, size_t n, unsigned flags) {
  if (!(flags & hipHostMallocMapped) || !(flags & hipHostMallocCoherent))
    return hipErrorInvalidValue; /* the host would not see the device's writes in time */
  IN_DEVICE(cuMemHostAlloc(p, n, 0x02));
}
hipError_t hipHostGetDevicePointer(void **d, void *p, unsigned flags) {
  unsigned long long v;
  IN_DEVICE((cuMemHostGetDevicePointer_v2(&v, p, flags) || (*d = (void *)(uintptr_t)v, 0)));
}
hipError_t hipHostFree(void *p) { IN_DEVICE(cuMemFreeHost(p)); }
hipError_t hipMalloc(void **p, size_t n) {
  unsigned long long v;
  IN_DEVICE((cuMemAlloc_v2(&v, n) || (*p = (void *)(uintptr_t)v, 0)));
}
hipError_t hipFree(void *p) { IN_DEVICE(cuMemFree_v2((unsigned long long)(uintptr_t)p)); }
hipError_t hipStreamCreateWithFlags(hipStream_t *s, unsigned flags) {
  IN_DEVICE(cuStreamCreate((void **)s, flags));
}
hipError_t hipStreamSynchronize(hipStream_t s) { IN_DEVICE(cuStreamSynchronize(s)); }
hipError_t hipStreamIsCapturing(hipStream_t s, hipStreamCaptureStatus *status) {
  int st;
  IN_DEVICE((cuStreamIsCapturing(s, &st) ||
             (*status = st ? hipStreamCaptureStatusActive : hipStreamCaptureStatusNone, 0)));
}
hipError_t hipThreadExchangeStreamCaptureMode(hipStreamCaptureMode *mode) {
  int m = (int)*mode;
  int r = cuThreadExchangeStreamCaptureMode(&m);
  *mode = (hipStreamCaptureMode)m;
  return r ? hipErrorInvalidValue : hipSuccess;
}
hipError_t hipMemcpyAsync(void *dst, const void *src, size_t n, hipMemcpyKind kind, hipStream_t s) {
  if (kind == hipMemcpyHostToDevice)
    IN_DEVICE(cuMemcpyHtoDAsync_v2((unsigned long long)(uintptr_t)dst, src, n, s));
  if (kind == hipMemcpyDeviceToHost)
    IN_DEVICE(cuMemcpyDtoHAsync_v2(dst, (unsigned long long)(uintptr_t)src, n, s));
  return hipErrorInvalidValue;
}
hipError_t hipMemsetAsync(void *dst, int v, size_t n, hipStream_t s) {
  IN_DEVICE(cuMemsetD8Async((unsigned long long)(uintptr_t)dst, (unsigned char)v, n, s));
}
hipError_t hipEventCreate(hipEvent_t *e) { IN_DEVICE(cuEventCreate((void **)e, 0)); }
hipError_t hipEventCreateWithFlags(hipEvent_t *e, unsigned flags) {
  IN_DEVICE(cuEventCreate((void **)e, flags));
}
hipError_t hipEventSynchronize(hipEvent_t e) { IN_DEVICE(cuEventSynchronize(e)); }
hipError_t hipEventQuery(hipEvent_t e) { IN_DEVICE(cuEventQuery(e)); }
hipError_t hipStreamWaitEvent(hipStream_t s, hipEvent_t e, unsigned flags) {
  IN_DEVICE(cuStreamWaitEvent(s, e, flags));
}
hipError_t hipEventRecord(hipEvent_t e, hipStream_t s) { IN_DEVICE(cuEventRecord(e, s)); }
hipError_t hipEventElapsedTime(float *ms, hipEvent_t a, hipEvent_t b) {
  IN_DEVICE(cuEventElapsedTime(ms, a, b));
}
hipError_t hipEventDestroy(hipEvent_t e) { IN_DEVICE(cuEventDestroy_v2(e)); }
hipError_t hipLaunchHostFunc(hipStream_t s, hipHostFn_t fn, void *arg) {
  IN_DEVICE(cuLaunchHostFunc(s, fn, arg));
}
hipError_t hipStreamCreate(hipStream_t *s) {
  return cudaStreamCreate((void **)s) ? hipErrorOutOfMemory : hipSuccess;
}
hipError_t hipStreamBeginCapture(hipStream_t s, hipStreamCaptureMode mode) {
  return cudaStreamBeginCapture(s, (int)mode) ? hipErrorInvalidValue : hipSuccess;
}
hipError_t hipStreamEndCapture(hipStream_t s, hipGraph_t *graph) {
  return cudaStreamEndCapture(s, (void **)graph) ? hipErrorInvalidValue : hipSuccess;
}
hipError_t hipGraphInstantiate(hipGraphExec_t *exec, hipGraph_t graph, hipGraphNode_t *error_node,
                               char *log, size_t log_bytes) {
  (void)error_node, (void)log, (void)log_bytes;
  return cudaGraphInstantiate((void **)exec, graph, 0) ? hipErrorInvalidValue : hipSuccess;
}
hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t s) {
  return cudaGraphLaunch(exec, s) ? hipErrorInvalidValue : hipSuccess;
}
/* Kernel nodes of graphs built by hand and child graph nodes, through the
 * stand-in's CUDA calls (its error numbers are HIP's too). */
static struct cuda_kernel_node_params to_cuda(const hipKernelNodeParams *p) {
  return (struct cuda_kernel_node_params){p->func,         p->gridDim,      p->blockDim,
                                          p->sharedMemBytes, p->kernelParams, p->extra};
}
hipError_t hipStreamDestroy(hipStream_t s) { IN_DEVICE(cuStreamDestroy_v2(s)); }
hipError_t hipGraphCreate(hipGraph_t *graph, unsigned flags) {
  return (hipError_t)cudaGraphCreate((void **)graph, flags);
}
hipError_t hipGraphAddKernelNode(hipGraphNode_t *node, hipGraph_t graph,
                                 const hipGraphNode_t *deps, size_t n,
                                 const hipKernelNodeParams *p) {
  if (!p)
    return hipErrorInvalidValue;
  struct cuda_kernel_node_params c = to_cuda(p);
  return (hipError_t)cudaGraphAddKernelNode((void **)node, graph, deps, n, &c);
}
hipError_t hipGraphKernelNodeGetParams(hipGraphNode_t node, hipKernelNodeParams *p) {
  struct cuda_kernel_node_params c;
  int rc = p ? cudaGraphKernelNodeGetParams(node, &c) : 1;
  if (!rc) {
    memset(p, 0, sizeof *p);
    p->func = (void *)c.func, p->gridDim = c.grid, p->blockDim = c.block;
    p->sharedMemBytes = c.shared, p->kernelParams = c.args, p->extra = c.extra;
  }
  return (hipError_t)rc;
}
hipError_t hipGraphKernelNodeSetParams(hipGraphNode_t node, const hipKernelNodeParams *p) {
  if (!p)
    return hipErrorInvalidValue;
  struct cuda_kernel_node_params c = to_cuda(p);
  return (hipError_t)cudaGraphKernelNodeSetParams(node, &c);
}
hipError_t hipGraphExecKernelNodeSetParams(hipGraphExec_t exec, hipGraphNode_t node,
                                           const hipKernelNodeParams *p) {
  if (!p)
    return hipErrorInvalidValue;
  struct cuda_kernel_node_params c = to_cuda(p);
  return (hipError_t)cudaGraphExecKernelNodeSetParams(exec, node, &c);
}
hipError_t hipGraphAddChildGraphNode(hipGraphNode_t *node, hipGraph_t graph,
                                     const hipGraphNode_t *deps, size_t n, hipGraph_t child) {
  return cuGraphAddChildGraphNode((void **)node, graph, deps, n, child) ? hipErrorInvalidValue
                                                                         : hipSuccess;
}
hipError_t hipGraphChildGraphNodeGetGraph(hipGraphNode_t node, hipGraph_t *graph) {
  return cuGraphChildGraphNodeGetGraph(node, (void **)graph) ? hipErrorInvalidValue : hipSuccess;
}
hipError_t hipGraphGetNodes(hipGraph_t graph, hipGraphNode_t *nodes, size_t *n) {
  return cuGraphGetNodes(graph, (void **)nodes, n) ? hipErrorInvalidValue : hipSuccess;
}
/* The HIP version the stand-in is (hipRuntimeGetVersion): FAKE_HIP_VERSION,
 * else its headers' (5.2). */
static int hip_version(void) {
  const char *v = getenv("FAKE_HIP_VERSION");
  return v && *v ? atoi(v) : HIP_VERSION;
}
hipError_t hipRuntimeGetVersion(int *version) {
  if (!version)
    return hipErrorInvalidValue;
  *version = hip_version();
  return hipSuccess;
}
/* HIP took CUDA's numbering of node types in ROCm 5.3 (HIP_VERSION
 * 50300000); before, they were one more, from hipGraphNodeTypeKernel = 1. */
#define FAKE_HIP_CUDA_NODE_TYPES 50300000
static int cuda_node_types(void) { return hip_version() >= FAKE_HIP_CUDA_NODE_TYPES; }

/* CUDA's node types (cuGraphNodeGetType) as this HIP numbers them. */
hipError_t hipGraphNodeGetType(hipGraphNode_t node, hipGraphNodeType *type) {
  static const hipGraphNodeType of_cuda[] = {
      hipGraphNodeTypeKernel, hipGraphNodeTypeMemcpy, hipGraphNodeTypeMemset,
      hipGraphNodeTypeHost,   hipGraphNodeTypeGraph,  hipGraphNodeTypeEmpty,
      hipGraphNodeTypeWaitEvent, hipGraphNodeTypeEventRecord};
  int t = -1;
  if (!type || cuGraphNodeGetType(node, &t))
    return hipErrorInvalidValue;
  if (cuda_node_types())
    *type = (hipGraphNodeType)t;
  else
    *type = t >= 0 && t < (int)(sizeof of_cuda / sizeof of_cuda[0]) ? of_cuda[t]
                                                                      : hipGraphNodeTypeCount;
  return hipSuccess;
}

/* HIP 6.2's generic node calls, on kernel nodes alone. */
#define FAKE_HIP_GENERIC 60200000 /* the first HIP with them */
static const hipKernelNodeParams *generic_kernel(const hipGraphNodeParams *p) {
  return hip_version() >= FAKE_HIP_GENERIC && p && p->type == HIP62_KERNEL_NODE ? &p->kernel
                                                                                : NULL;
}
hipError_t hipGraphAddNode(hipGraphNode_t *node, hipGraph_t graph, const hipGraphNode_t *deps,
                           size_t n, hipGraphNodeParams *p) {
  return generic_kernel(p) ? hipGraphAddKernelNode(node, graph, deps, n, generic_kernel(p))
                           : hipErrorInvalidValue;
}
hipError_t hipGraphNodeSetParams(hipGraphNode_t node, hipGraphNodeParams *p) {
  return generic_kernel(p) ? hipGraphKernelNodeSetParams(node, generic_kernel(p))
                           : hipErrorInvalidValue;
}
hipError_t hipGraphExecNodeSetParams(hipGraphExec_t exec, hipGraphNode_t node,
                                     hipGraphNodeParams *p) {
  return generic_kernel(p) ? hipGraphExecKernelNodeSetParams(exec, node, generic_kernel(p))
                           : hipErrorInvalidValue;
}
hipError_t hipGraphClone(hipGraph_t *clone, hipGraph_t graph) {
  return cuGraphClone((void **)clone, graph) ? hipErrorInvalidValue : hipSuccess;
}
hipError_t hipGraphDestroy(hipGraph_t graph) {
  return cuGraphDestroy(graph) ? hipErrorInvalidValue : hipSuccess;
}
hipError_t hipGraphExecChildGraphNodeSetParams(hipGraphExec_t exec, hipGraphNode_t node,
                                               hipGraph_t child) {
  return cuGraphExecChildGraphNodeSetParams(exec, node, child) ? hipErrorInvalidValue
                                                               : hipSuccess;
}

/* The names of the codes the stand-in returns (HIP's numbers are CUDA's). */
const char *hipGetErrorName(hipError_t e) {
  switch ((int)e) {
  case 0:
    return "hipSuccess";
  case 1:
    return "hipErrorInvalidValue";
  case 98:
    return "hipErrorInvalidDeviceFunction";
  default:
    return "hipErrorFake";
  }
}
