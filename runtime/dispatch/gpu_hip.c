/*
 * gpu_hip.c: the GPU back end's API (gpu.h) on the HIP runtime
 * (libamdhip64, which every HIP program loads). Devices are HIP's ordinals.
 * The ring and tail are host memory allocated mapped and coherent
 * (fine-grained), which the host reads while kernels run; the device's
 * properties come from hipGetDeviceProperties in its ROCm 5 layout (the
 * headers this is built with), which ROCm 6 keeps as ...R0000.
 */
#define _GNU_SOURCE
#define __HIP_PLATFORM_AMD__
#include <dlfcn.h>
#include <hip/hip_runtime_api.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "nano/handler.h"
#include "nano/symbols.h"

#define HIP_DEFAULT_WAVE 64

/* The plugin hands multi-device launch lists over as the contract's struct. */
_Static_assert(
    sizeof(hipLaunchParams) == sizeof(struct nano_gpu_launch_params) &&
        offsetof(hipLaunchParams, gridDim) == offsetof(struct nano_gpu_launch_params, grid) &&
        offsetof(hipLaunchParams, blockDim) == offsetof(struct nano_gpu_launch_params, block) &&
        offsetof(hipLaunchParams, args) == offsetof(struct nano_gpu_launch_params, args) &&
        offsetof(hipLaunchParams, sharedMem) == offsetof(struct nano_gpu_launch_params, shared) &&
        offsetof(hipLaunchParams, stream) == offsetof(struct nano_gpu_launch_params, stream),
    "hipLaunchParams has nano_gpu_launch_params' layout");

static struct {
  __typeof__(&hipGetDevice) GetDevice;
  __typeof__(&hipSetDevice) SetDevice;
  __typeof__(&hipHostMalloc) HostMalloc;
  __typeof__(&hipHostGetDevicePointer) HostGetDevicePointer;
  __typeof__(&hipHostFree) HostFree;
  __typeof__(&hipMalloc) Malloc;
  __typeof__(&hipFree) Free;
  __typeof__(&hipStreamCreateWithFlags) StreamCreateWithFlags;
  __typeof__(&hipStreamSynchronize) StreamSynchronize;
  __typeof__(&hipStreamWaitEvent) StreamWaitEvent;
  __typeof__(&hipStreamIsCapturing) StreamIsCapturing;
  __typeof__(&hipThreadExchangeStreamCaptureMode) ThreadExchangeStreamCaptureMode;
  __typeof__(&hipMemcpyAsync) MemcpyAsync;
  __typeof__(&hipMemsetAsync) MemsetAsync;
  __typeof__(&hipEventCreateWithFlags) EventCreateWithFlags;
  __typeof__(&hipEventSynchronize) EventSynchronize;
  __typeof__(&hipEventQuery) EventQuery;
  __typeof__(&hipEventRecord) EventRecord;
  __typeof__(&hipEventElapsedTime) EventElapsedTime;
  __typeof__(&hipEventDestroy) EventDestroy;
  __typeof__(&hipGetErrorName) GetErrorName;
  __typeof__(&hipGetDeviceProperties) GetDeviceProperties; /* may stay NULL */
  /* NULL before ROCm 5.3 (Debian's HIP 5.2): hip_host_func then runs the
   * function from a stream callback, outside captures only */
  __typeof__(&hipLaunchHostFunc) LaunchHostFunc;
  __typeof__(&hipStreamAddCallback) StreamAddCallback;
  /* a stream's device: hipStreamGetDevice (ROCm 5.7 on), else the export
   * roctracer asks (hipGetStreamDeviceId, HIP 4.2 on: Debian's 5.2 has it);
   * with neither, a stream's device is taken to be the thread's */
  hipError_t (*StreamGetDevice)(hipStream_t stream, hipDevice_t *device);
  int (*GetStreamDeviceId)(hipStream_t stream);
} hip;

/* hipGraphNodeTypeKernel as the loaded runtime numbers it: 1 up to ROCm 5.2
 * (the headers this is built with), 0 from ROCm 5.3 on, which took CUDA's
 * numbering of node types (hip_load). */
static int hip_kernel_node_type;
/* The first runtime with CUDA's numbering, as hipRuntimeGetVersion says
 * it (HIP_VERSION: major * 10^7 + minor * 10^5 + patch). */
#define HIP_VERSION_CUDA_NODE_TYPES 50300000
#define HIP_KERNEL_NODE_TYPE_CUDA 0

/* HIP 6.2's hipGraphNodeParams (the generic node calls, hipGraphAddNode),
 * which HIP 5's headers lack: the node type, then the type's parameters. */
struct nano_hip_graph_node_params {
  int type;
  int reserved0[3];
  union {
    long long reserved1[29];
    hipKernelNodeParams kernel;
  };
  long long reserved2;
};
_Static_assert(sizeof(struct nano_hip_graph_node_params) == 256, "HIP 6.2's hipGraphNodeParams");

/* The graph calls kernel nodes added by hand need (hip_graph_ops), resolved
 * apart: where one is missing, such nodes keep the program's kernel. */
static struct {
  __typeof__(&hipStreamDestroy) StreamDestroy;
  __typeof__(&hipStreamBeginCapture) StreamBeginCapture;
  __typeof__(&hipStreamEndCapture) StreamEndCapture;
  __typeof__(&hipGraphAddChildGraphNode) GraphAddChildGraphNode;
  __typeof__(&hipGraphChildGraphNodeGetGraph) GraphChildGraphNodeGetGraph;
  __typeof__(&hipGraphGetNodes) GraphGetNodes;
  __typeof__(&hipGraphNodeGetType) GraphNodeGetType;
  __typeof__(&hipGraphClone) GraphClone;
  __typeof__(&hipGraphDestroy) GraphDestroy;
  __typeof__(&hipGraphExecChildGraphNodeSetParams) GraphExecChildGraphNodeSetParams;
} hipg;
static int hipg_usable;

#define HIP_FN(field, symbol) NANO_SYMBOL(__typeof__(hip), field, symbol)
static const struct nano_symbol hip_fns[] = {
    HIP_FN(GetDevice, hipGetDevice),
    HIP_FN(SetDevice, hipSetDevice),
    HIP_FN(HostMalloc, hipHostMalloc),
    HIP_FN(HostGetDevicePointer, hipHostGetDevicePointer),
    HIP_FN(HostFree, hipHostFree),
    HIP_FN(Malloc, hipMalloc),
    HIP_FN(Free, hipFree),
    HIP_FN(StreamCreateWithFlags, hipStreamCreateWithFlags),
    HIP_FN(StreamSynchronize, hipStreamSynchronize),
    HIP_FN(StreamWaitEvent, hipStreamWaitEvent),
    HIP_FN(StreamIsCapturing, hipStreamIsCapturing),
    HIP_FN(ThreadExchangeStreamCaptureMode, hipThreadExchangeStreamCaptureMode),
    HIP_FN(MemcpyAsync, hipMemcpyAsync),
    HIP_FN(MemsetAsync, hipMemsetAsync),
    HIP_FN(EventCreateWithFlags, hipEventCreateWithFlags),
    HIP_FN(EventSynchronize, hipEventSynchronize),
    HIP_FN(EventQuery, hipEventQuery),
    HIP_FN(EventRecord, hipEventRecord),
    HIP_FN(EventElapsedTime, hipEventElapsedTime),
    HIP_FN(EventDestroy, hipEventDestroy),
    HIP_FN(GetErrorName, hipGetErrorName),
};

#define HIPG_FN(field, symbol) NANO_SYMBOL(__typeof__(hipg), field, symbol)
static const struct nano_symbol hipg_fns[] = {
    HIPG_FN(StreamDestroy, hipStreamDestroy),
    HIPG_FN(StreamBeginCapture, hipStreamBeginCapture),
    HIPG_FN(StreamEndCapture, hipStreamEndCapture),
    HIPG_FN(GraphAddChildGraphNode, hipGraphAddChildGraphNode),
    HIPG_FN(GraphChildGraphNodeGetGraph, hipGraphChildGraphNodeGetGraph),
    HIPG_FN(GraphGetNodes, hipGraphGetNodes),
    HIPG_FN(GraphNodeGetType, hipGraphNodeGetType),
    HIPG_FN(GraphClone, hipGraphClone),
    HIPG_FN(GraphDestroy, hipGraphDestroy),
    HIPG_FN(GraphExecChildGraphNodeSetParams, hipGraphExecChildGraphNodeSetParams),
};

/* Where the runtime is: the program has loaded it under one of these. */
static const char *const hip_libraries[] = {"libamdhip64.so.6", "libamdhip64.so.5",
                                            "libamdhip64.so"};

static int hip_load(char *why, size_t len) {
  void *h = NULL;
  for (size_t i = 0; !h && i < sizeof hip_libraries / sizeof hip_libraries[0]; i++)
    h = dlopen(hip_libraries[i], RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    snprintf(why, len, "the HIP runtime (libamdhip64.so) cannot be loaded: %s", dlerror());
    return -1;
  }
  const char *missing = nano_symbols_resolve(h, hip_fns, sizeof hip_fns / sizeof hip_fns[0], &hip);
  if (missing) {
    snprintf(why, len, "the HIP runtime lacks %s (older than ROCm 5?)", missing);
    return -1;
  }
  hipg_usable = !nano_symbols_resolve(h, hipg_fns, sizeof hipg_fns / sizeof hipg_fns[0], &hipg);
  *(void **)&hip.LaunchHostFunc = dlsym(h, "hipLaunchHostFunc");
  *(void **)&hip.StreamAddCallback = dlsym(h, "hipStreamAddCallback");
  *(void **)&hip.StreamGetDevice = dlsym(h, "hipStreamGetDevice");
  *(void **)&hip.GetStreamDeviceId = dlsym(h, "hipGetStreamDeviceId");
  __typeof__(&hipRuntimeGetVersion) get_version;
  *(void **)&get_version = dlsym(h, "hipRuntimeGetVersion");
  int version = 0;
  hip_kernel_node_type =
      get_version && get_version(&version) == hipSuccess && version < HIP_VERSION_CUDA_NODE_TYPES
          ? hipGraphNodeTypeKernel
          : HIP_KERNEL_NODE_TYPE_CUDA;
  if (!hip.LaunchHostFunc && !hip.StreamAddCallback) {
    snprintf(why, len, "the HIP runtime has neither hipLaunchHostFunc nor hipStreamAddCallback");
    return -1;
  }
  /* ROCm 6 names the ROCm 5 layout ...R0000. */
  *(void **)&hip.GetDeviceProperties = dlsym(h, "hipGetDevicePropertiesR0000");
  if (!hip.GetDeviceProperties)
    *(void **)&hip.GetDeviceProperties = dlsym(h, "hipGetDeviceProperties");
  return 0;
}

/* A stream of the program's: not a default stream's handle. */
static int hip_own_stream(void *stream) {
  return stream && stream != GPU_STREAM_PER_THREAD && stream != GPU_STREAM_LEGACY;
}

static int hip_current(void *stream, void **key, int *dev) {
  /* a default stream is the thread's device's; a stream of the program's
   * is its own device's, where the runtime says which */
  hipError_t r;
  if (hip_own_stream(stream) && hip.StreamGetDevice)
    r = hip.StreamGetDevice(stream, dev);
  else if (hip_own_stream(stream) && hip.GetStreamDeviceId)
    r = (*dev = hip.GetStreamDeviceId(stream)) >= 0 ? hipSuccess : hipErrorInvalidHandle;
  else
    r = hip.GetDevice(dev);
  *key = (void *)(intptr_t)(*dev + 1); /* never NULL */
  return r;
}

static int hip_stream_device_known(void) {
  return hip.StreamGetDevice != NULL || hip.GetStreamDeviceId != NULL;
}

static int hip_describe(void *key, int dev, struct gpu_device_info *out) {
  (void)key;
  hipDeviceProp_t p;
  memset(&p, 0, sizeof p);
  hipError_t r = hip.GetDeviceProperties ? hip.GetDeviceProperties(&p, dev) : hipSuccess;
  if (r == hipSuccess && p.gcnArchName[0]) {
    snprintf(out->arch, sizeof out->arch, "%.*s", (int)strcspn(p.gcnArchName, ":"),
             p.gcnArchName); /* without the feature suffix (":sramecc+:xnack-") */
    out->wave_size = p.warpSize > 0 ? (uint32_t)p.warpSize : HIP_DEFAULT_WAVE;
  } else {
    snprintf(out->arch, sizeof out->arch, "amdgcn");
    out->wave_size = HIP_DEFAULT_WAVE;
  }
  gpu_amd_memory_model(out);
  return r;
}

/* The devices the calling thread had, one per hip_enter not yet left
 * (gpu.c's pushes nest: a placement's allocation inside a launch's). */
#define HIP_MAX_ENTERED 8
static __thread int hip_saved_device[HIP_MAX_ENTERED];
static __thread int hip_entered;

static int hip_enter(void *key, int dev) {
  (void)key;
  if (hip_entered == HIP_MAX_ENTERED)
    return hipErrorInvalidValue;
  int *saved = &hip_saved_device[hip_entered];
  if (hip.GetDevice(saved) != hipSuccess)
    *saved = -1;
  hipError_t r = *saved == dev ? hipSuccess : hip.SetDevice(dev);
  if (r == hipSuccess)
    hip_entered++;
  return r;
}
static void hip_leave(void) {
  if (hip_entered == 0)
    return;
  int now, saved = hip_saved_device[--hip_entered];
  if (saved >= 0 && hip.GetDevice(&now) == hipSuccess && now != saved)
    hip.SetDevice(saved);
}
static int hip_host_alloc(void **p, size_t n) {
  return hip.HostMalloc(p, n, hipHostMallocPortable | hipHostMallocMapped | hipHostMallocCoherent);
}
static int hip_host_device_ptr(uint64_t *d, void *p) {
  void *v = NULL;
  hipError_t r = hip.HostGetDevicePointer(&v, p, 0);
  *d = (uint64_t)(uintptr_t)v;
  return r;
}
static int hip_host_free(void *p) { return hip.HostFree(p); }
static int hip_dev_alloc(uint64_t *d, size_t n) {
  void *v = NULL;
  hipError_t r = hip.Malloc(&v, n);
  *d = (uint64_t)(uintptr_t)v;
  return r;
}
static int hip_dev_free(uint64_t d) { return hip.Free((void *)(uintptr_t)d); }
static int hip_stream_create(void **s) {
  return hip.StreamCreateWithFlags((hipStream_t *)s, hipStreamNonBlocking);
}
static int hip_stream_sync(void *s) { return hip.StreamSynchronize(s); }
static int hip_stream_wait(void *s, void *e) { return hip.StreamWaitEvent(s, e, 0); }
static int hip_capture_status(void *s, int *status) {
  hipStreamCaptureStatus st = hipStreamCaptureStatusNone;
  hipError_t r = hip.StreamIsCapturing(s, &st);
  *status = (int)st;
  return r;
}
static int hip_capture_mode(int *mode) {
  hipStreamCaptureMode m = (hipStreamCaptureMode)*mode;
  hipError_t r = hip.ThreadExchangeStreamCaptureMode(&m);
  *mode = (int)m;
  return r;
}
static int hip_copy_to_device(uint64_t d, const void *src, size_t n, void *s) {
  return hip.MemcpyAsync((void *)(uintptr_t)d, src, n, hipMemcpyHostToDevice, s);
}
static int hip_copy_to_host(void *dst, uint64_t d, size_t n, void *s) {
  return hip.MemcpyAsync(dst, (const void *)(uintptr_t)d, n, hipMemcpyDeviceToHost, s);
}
static int hip_memset_device(uint64_t d, int v, size_t n, void *s) {
  return hip.MemsetAsync((void *)(uintptr_t)d, v, n, s);
}
static int hip_event_create(void **e, int blocking) {
  return hip.EventCreateWithFlags((hipEvent_t *)e,
                                  blocking ? hipEventBlockingSync : hipEventDefault);
}
static int hip_event_record(void *e, void *s) { return hip.EventRecord(e, s); }
static int hip_event_sync(void *e) { return hip.EventSynchronize(e); }
static int hip_event_query(void *e) { return hip.EventQuery(e); }
static int hip_event_ms(float *ms, void *a, void *b) { return hip.EventElapsedTime(ms, a, b); }
static int hip_event_destroy(void *e) { return hip.EventDestroy(e); }
/* A host function run from a stream callback (HIP before 5.3). */
struct hip_callback {
  void (*fn)(void *);
  void *arg;
};
static void hip_callback_run(hipStream_t s, hipError_t status, void *data) {
  (void)s, (void)status; /* the function ends what the stream's work began, whatever it did */
  struct hip_callback c = *(struct hip_callback *)data;
  free(data);
  c.fn(c.arg);
}
/* fn(arg) once s's work before it is done, s's work after it waiting for it:
 * hipLaunchHostFunc, or before ROCm 5.3 a stream callback, which HIP then
 * does not capture into graphs (refused there: hipErrorNotSupported). */
static int hip_host_func(void *s, void (*fn)(void *), void *arg) {
  if (hip.LaunchHostFunc)
    return hip.LaunchHostFunc(s, fn, arg);
  int status;
  if (hip_capture_status(s, &status) == hipSuccess && status != hipStreamCaptureStatusNone)
    return hipErrorNotSupported;
  struct hip_callback *c = malloc(sizeof *c);
  if (!c)
    return hipErrorOutOfMemory;
  *c = (struct hip_callback){fn, arg};
  hipError_t r = hip.StreamAddCallback(s, hip_callback_run, c, 0);
  if (r != hipSuccess)
    free(c);
  return r;
}
static int hip_host_func_captured(void) { return hip.LaunchHostFunc != NULL; }
static void hip_kernel_params_read(const void *params, struct gpu_kernel_params *out) {
  const hipKernelNodeParams *p = params;
  *out = (struct gpu_kernel_params){p->func,
                                    {p->gridDim.x, p->gridDim.y, p->gridDim.z},
                                    {p->blockDim.x, p->blockDim.y, p->blockDim.z},
                                    p->sharedMemBytes,
                                    p->kernelParams,
                                    p->extra};
}
static void hip_kernel_params_write(void *params, const struct gpu_kernel_params *in) {
  hipKernelNodeParams *p = params;
  memset(p, 0, sizeof *p);
  p->func = (void *)in->func;
  p->gridDim = (dim3){in->grid[0], in->grid[1], in->grid[2]};
  p->blockDim = (dim3){in->block[0], in->block[1], in->block[2]};
  p->sharedMemBytes = in->shared;
  p->kernelParams = in->args;
  p->extra = in->extra;
}
/* hipErrorNotSupported where the runtime lacks the graph calls. */
#define HIPG(call) (hipg_usable ? (int)(call) : (int)hipErrorNotSupported)
static int hip_stream_destroy(void *s) { return HIPG(hipg.StreamDestroy(s)); }
static int hip_capture_begin(void *s) {
  return HIPG(hipg.StreamBeginCapture(s, hipStreamCaptureModeRelaxed));
}
static int hip_capture_end(void *s, void **graph) {
  return HIPG(hipg.StreamEndCapture(s, (hipGraph_t *)graph));
}
static int hip_graph_add_child(void **node, void *graph, const void *deps, size_t ndeps,
                               void *child) {
  return HIPG(hipg.GraphAddChildGraphNode((hipGraphNode_t *)node, graph,
                                          (const hipGraphNode_t *)deps, ndeps, child));
}
static int hip_graph_child(void *node, void **graph) {
  return HIPG(hipg.GraphChildGraphNodeGetGraph(node, (hipGraph_t *)graph));
}
static int hip_graph_nodes(void *graph, void **nodes, size_t *n) {
  return HIPG(hipg.GraphGetNodes(graph, (hipGraphNode_t *)nodes, n));
}
static int hip_node_is_kernel(void *node, int *kernel) {
  hipGraphNodeType type = hipGraphNodeTypeCount;
  int r = HIPG(hipg.GraphNodeGetType(node, &type));
  *kernel = (int)type == hip_kernel_node_type;
  return r;
}
static int hip_graph_clone(void **clone, void *graph) {
  return HIPG(hipg.GraphClone((hipGraph_t *)clone, graph));
}
static int hip_graph_destroy(void *graph) { return HIPG(hipg.GraphDestroy(graph)); }
static int hip_exec_child_set(void *exec, void *node, void *child) {
  return HIPG(hipg.GraphExecChildGraphNodeSetParams(exec, node, child));
}
static void *hip_generic_kernel(const void *params) {
  const struct nano_hip_graph_node_params *p = params;
  return p->type == hip_kernel_node_type ? (void *)&p->kernel : NULL;
}
static const struct gpu_graph_ops hip_graph_ops = {
    hip_kernel_params_read,
    hip_kernel_params_write,
    hip_stream_destroy,
    hip_capture_begin,
    hip_capture_end,
    hip_graph_add_child,
    hip_graph_child,
    hip_graph_nodes,
    hip_node_is_kernel,
    hip_graph_clone,
    hip_graph_destroy,
    hip_exec_child_set,
    hip_generic_kernel, /* HIP 6.2's hipGraphAddNode */
    sizeof(struct nano_hip_graph_node_params),
};

static const char *hip_error(int rc) {
  const char *s = hip.GetErrorName ? hip.GetErrorName((hipError_t)rc) : NULL;
  return s ? s : "unknown HIP error";
}

const struct gpu_api gpu_hip_api = {
    "hip",
    "libamdhip64.so",
    hip_load,
    hip_current,
    hip_describe,
    hip_enter,
    hip_leave,
    hip_host_alloc,
    hip_host_device_ptr,
    hip_host_free,
    hip_dev_alloc,
    hip_dev_free,
    hip_stream_create,
    hip_stream_sync,
    hip_stream_wait,
    hip_capture_status,
    hip_capture_mode,
    NULL, /* no tracer follows HIP graphs */
    NULL, /* nor conditional nodes (HIP has none)... */
    NULL, /* ...whose bodies would be captured into */
    hip_copy_to_device,
    hip_copy_to_host,
    hip_memset_device,
    hip_event_create,
    hip_event_record,
    hip_event_sync,
    hip_event_query,
    hip_event_ms,
    hip_event_destroy,
    hip_host_func,
    hip_host_func_captured,
    hip_error,
    &hip_graph_ops,
    hip_stream_device_known,
};
