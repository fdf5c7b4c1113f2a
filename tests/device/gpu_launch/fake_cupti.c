/*
 * fake_cupti.c: the CUPTI of the stand-in CUDA (fake_cudart.c), part of the
 * same library, with CUPTI's own headers so the records have the real
 * layouts. What the tracer uses: one subscriber (FAKE_CUPTI_BUSY=NAME: refused
 * as when the client NAME holds CUPTI), the runtime and driver callback
 * domains, the resource callback of a cloned graph node, graph node ids,
 * activity buffers delivered on cuptiActivityFlushAll only, the timestamp
 * callback. fake_cudart.c reports its calls and its device's work
 * through the fake_cupti_* functions below.
 */
#define _GNU_SOURCE
#include <cupti.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the library ------------------------------------------------------------------ */

static CUpti_CallbackFunc sub_fn;
static void *sub_data;
static int domain_on[CUPTI_CB_DOMAIN_SIZE];
static int node_cloned_on; /* CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED enabled */
static CUpti_BuffersCallbackRequestFunc buf_request;
static CUpti_BuffersCallbackCompleteFunc buf_complete;
static CUpti_TimestampCallbackFunc clock_fn;
static int kernels_on, copies_on, memsets_on;

/* Pending activity records, delivered at the next flush. */
union fake_record {
  CUpti_Activity any;
  CUpti_ActivityKernel10 kernel;
  CUpti_ActivityMemcpy6 copy;
  CUpti_ActivityMemset4 memset;
};
#define FAKE_MAX_RECORDS 256
static union fake_record pending[FAKE_MAX_RECORDS];
static size_t npending;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t next_corr;

/* FAKE_CUPTI_VERSION: the version to report (a later or another release). */
CUptiResult cuptiGetVersion(uint32_t *version) {
  const char *v = getenv("FAKE_CUPTI_VERSION");
  *version = v && *v ? (uint32_t)strtoul(v, NULL, 10) : CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiGetResultString(CUptiResult r, const char **s) {
  *s = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "MULTIPLE_SUBSCRIBERS" : "FAKE";
  return CUPTI_SUCCESS;
}
CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc fn, void *data) {
  const char *busy = getenv("FAKE_CUPTI_BUSY");
  if ((busy && *busy) || sub_fn)
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  sub_fn = fn;
  sub_data = data;
  *sub = (CUpti_SubscriberHandle)&sub_fn;
  return CUPTI_SUCCESS;
}
/* Refused, it names the subscriber that holds CUPTI: FAKE_CUPTI_BUSY's value. */
CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc fn, void *data,
                              CUpti_SubscriberParams *params) {
  CUptiResult r = cuptiSubscribe(sub, fn, data);
  const char *busy = getenv("FAKE_CUPTI_BUSY");
  if (r != CUPTI_SUCCESS && params && params->oldSubscriberName && params->oldSubscriberSize)
    snprintf(params->oldSubscriberName, params->oldSubscriberSize, "%s",
             busy && *busy ? busy : "fake");
  return r;
}
CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle sub,
                              CUpti_CallbackDomain domain) {
  if (sub != (CUpti_SubscriberHandle)&sub_fn || domain >= CUPTI_CB_DOMAIN_SIZE)
    return CUPTI_ERROR_INVALID_PARAMETER;
  domain_on[domain] = (int)enable;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle sub,
                                CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (sub != (CUpti_SubscriberHandle)&sub_fn || domain != CUPTI_CB_DOMAIN_RESOURCE ||
      cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED)
    return CUPTI_ERROR_INVALID_PARAMETER; /* all the stand-in offers */
  node_cloned_on = (int)enable;
  return CUPTI_SUCCESS;
}
uint64_t fake_node_id(void *node); /* fake_cudart.c */
CUptiResult cuptiGetGraphNodeId(CUgraphNode node, uint64_t *id) {
  if (!node || !id)
    return CUPTI_ERROR_INVALID_PARAMETER;
  *id = fake_node_id(node);
  return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                           CUpti_BuffersCallbackCompleteFunc complete) {
  buf_request = request;
  buf_complete = complete;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn) {
  clock_fn = fn;
  return fn ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}
CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  if (kind == CUPTI_ACTIVITY_KIND_KERNEL) /* would serialize kernels: the test refuses it */
    return CUPTI_ERROR_NOT_COMPATIBLE;
  kernels_on |= kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  copies_on |= kind == CUPTI_ACTIVITY_KIND_MEMCPY;
  memsets_on |= kind == CUPTI_ACTIVITY_KIND_MEMSET;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  (void)flag;
  pthread_mutex_lock(&lock);
  size_t n = npending;
  union fake_record copy[FAKE_MAX_RECORDS];
  memcpy(copy, pending, n * sizeof *copy);
  npending = 0;
  pthread_mutex_unlock(&lock);
  if (!n || !buf_request || !buf_complete)
    return CUPTI_SUCCESS;
  uint8_t *buf;
  size_t size, max;
  buf_request(&buf, &size, &max);
  size_t bytes = n * sizeof *copy;
  if (!buf || size < bytes)
    return CUPTI_ERROR_OUT_OF_MEMORY;
  memcpy(buf, copy, bytes);
  buf_complete(NULL, 0, buf, size, bytes);
  return CUPTI_SUCCESS;
}
/* Records are laid out one per union slot. */
CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **rec) {
  uint8_t *next = *rec ? (uint8_t *)*rec + sizeof(union fake_record) : buffer;
  if (next + sizeof(union fake_record) > buffer + valid)
    return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *rec = (CUpti_Activity *)next;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream, size_t *dropped) {
  (void)ctx, (void)stream;
  *dropped = 0;
  return CUPTI_SUCCESS;
}

/* ---- what fake_cudart.c reports ------------------------------------------------- */

uint64_t fake_cupti_now(void) {
  if (clock_fn)
    return clock_fn();
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

uint32_t fake_cupti_corr(void) { return __atomic_add_fetch(&next_corr, 1, __ATOMIC_RELAXED); }

/* One callback: domain 0 runtime, 1 driver; enter 1 or 0. */
static void fake_callback(int driver, int enter, CUpti_CallbackId cbid, const char *name,
                          const void *params, const char *symbol, uint32_t corr) {
  CUpti_CallbackDomain d = driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
  if (!sub_fn || !domain_on[d])
    return;
  CUpti_CallbackData cb = {.callbackSite = enter ? CUPTI_API_ENTER : CUPTI_API_EXIT,
                           .functionName = name,
                           .functionParams = params,
                           .symbolName = symbol,
                           .correlationId = corr};
  sub_fn(sub_data, d, cbid, &cb);
}

void fake_cupti_sync(int enter, uint32_t corr) {
  fake_callback(0, enter, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
                "cudaDeviceSynchronize", NULL, NULL, corr);
}

void fake_cupti_launch(int enter, uint32_t corr, const void *func, const char *symbol,
                       const unsigned grid[3], const unsigned block[3], void **args,
                       size_t shared, void *stream) {
  cudaLaunchKernel_v7000_params p = {func,        {grid[0], grid[1], grid[2]},
                                     {block[0], block[1], block[2]},
                                     args,        shared,
                                     stream};
  fake_callback(0, enter, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel", &p,
                symbol, corr);
}

/* A runtime call without parameters a tool reads, by its callback id. */
void fake_cupti_call(int enter, uint32_t corr, CUpti_CallbackId cbid, const char *name) {
  fake_callback(0, enter, cbid, name, NULL, NULL, corr);
}

void fake_cupti_memcpy(int enter, uint32_t corr, void *dst, const void *src, size_t n, int kind) {
  cudaMemcpy_v3020_params p = {dst, src, n, (enum cudaMemcpyKind)kind};
  fake_callback(0, enter, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, "cudaMemcpy", &p, NULL, corr);
}

/* The runtime's graph calls with the parameters CUPTI gives them (a tool
 * reads the graph and the executable, out parameters, at the exit). */
void fake_cupti_begin_capture(int enter, uint32_t corr, void *stream) {
  cudaStreamBeginCapture_v10000_params p = {stream, cudaStreamCaptureModeGlobal};
  fake_callback(0, enter, CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000,
                "cudaStreamBeginCapture", &p, NULL, corr);
}

void fake_cupti_end_capture(int enter, uint32_t corr, void *stream, void **graph) {
  cudaStreamEndCapture_v10000_params p = {stream, (cudaGraph_t *)graph};
  fake_callback(0, enter, CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000,
                "cudaStreamEndCapture", &p, NULL, corr);
}

void fake_cupti_instantiate(int enter, uint32_t corr, void **exec, void *graph) {
  cudaGraphInstantiate_v12000_params p = {(cudaGraphExec_t *)exec, graph, 0};
  fake_callback(0, enter, CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000,
                "cudaGraphInstantiate", &p, NULL, corr);
}

void fake_cupti_graph_launch(int enter, uint32_t corr, void *exec, void *stream) {
  cudaGraphLaunch_v10000_params p = {exec, stream};
  fake_callback(0, enter, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, "cudaGraphLaunch", &p,
                NULL, corr);
}

void fake_cupti_memcpy_async(int enter, uint32_t corr, void *dst, const void *src, size_t n,
                             int kind, void *stream) {
  cudaMemcpyAsync_v3020_params p = {dst, src, n, (enum cudaMemcpyKind)kind, stream};
  fake_callback(0, enter, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, "cudaMemcpyAsync", &p,
                NULL, corr);
}

/* Instantiation made node of graph exec from original. */
void fake_cupti_node_cloned(void *exec, void *original, void *node) {
  if (!sub_fn || !node_cloned_on)
    return;
  CUpti_GraphData g = {.originalNode = original, .node = node, .graphExec = exec};
  CUpti_ResourceData r = {.resourceDescriptor = &g};
  sub_fn(sub_data, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, &r);
}

/* A driver call by name (its cbid matters to no test). */
void fake_cupti_driver(int enter, uint32_t corr, const char *name) {
  fake_callback(1, enter, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, name, NULL, NULL, corr);
}

static void fake_push(const union fake_record *r) {
  pthread_mutex_lock(&lock);
  if (npending < FAKE_MAX_RECORDS)
    pending[npending++] = *r;
  pthread_mutex_unlock(&lock);
}

/* node: the executable graph's node that ran it, 0 outside graphs. */
void fake_cupti_kernel(uint32_t corr, const char *name, uint32_t stream, uint64_t start,
                       uint64_t end, uint64_t node) {
  if (!kernels_on)
    return;
  union fake_record r;
  memset(&r, 0, sizeof r);
  r.kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  r.kernel.correlationId = corr;
  r.kernel.name = name;
  r.kernel.streamId = stream;
  r.kernel.start = start;
  r.kernel.end = end;
  r.kernel.graphNodeId = node;
  fake_push(&r);
}

/* corr: the driver call's id (runtime_corr 0, as CUPTI leaves it for copies
 * issued through the driver API); node as for kernels. */
void fake_cupti_copy(uint32_t corr, uint32_t runtime_corr, uint32_t stream, uint64_t start,
                     uint64_t end, uint64_t node) {
  if (!copies_on)
    return;
  union fake_record r;
  memset(&r, 0, sizeof r);
  r.copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  r.copy.correlationId = corr;
  r.copy.runtimeCorrelationId = runtime_corr;
  r.copy.streamId = stream;
  r.copy.start = start;
  r.copy.end = end;
  r.copy.graphNodeId = node;
  fake_push(&r);
}

/* A graph's memset node ran (corr: the graph launch's). */
void fake_cupti_memset(uint32_t corr, uint32_t stream, uint64_t start, uint64_t end,
                       uint64_t node) {
  if (!memsets_on)
    return;
  union fake_record r;
  memset(&r, 0, sizeof r);
  r.memset.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  r.memset.correlationId = corr;
  r.memset.streamId = stream;
  r.memset.start = start;
  r.memset.end = end;
  r.memset.graphNodeId = node;
  fake_push(&r);
}
