/*
 * drv_app.c: a CUDA program built without anything of nanoprobe's, on the
 * real cuda.h, that reaches the driver as a static cudart does (dlopen of
 * libcuda.so.1, dlsym of cuGetProcAddress_v2, every entry point through it)
 * and, for one launch, as Triton's launcher does (dlsym of cuLaunchKernel).
 * Its kernels come from the cubin named by argv[1] (drv_kernels.cu). It
 * launches axpy three times (cuLaunchKernel on the legacy stream, the
 * per-thread variant on a stream of its own, cuLaunchKernelEx), other,
 * lone and bump once each, waits, and checks y = 1 + 3 * 2 * x, *p = 1,
 * *q = 1, and bump's module variables: it read the bias set here (*r =
 * BIAS) and bumped the counter this program reads back (c = 1).
 * With argv[2] = "direct", its first launch calls cuLaunchKernel as a
 * program linked against libcuda does (the symbol); with "coop", its first
 * launch is cuLaunchCooperativeKernel (through cuGetProcAddress); with "extra", its
 * per-thread launch passes axpy's arguments in one buffer (cuLaunchKernel's
 * extra); with "exec", it execs /bin/echo at the end (dlsym(RTLD_NEXT)
 * through a preloaded tracer); with "graph", it then builds a graph by
 * hand of other's node (cuGraphAddKernelNode, the _v2 ABI: set again,
 * read back, a priority set and read back), other's again through the
 * generic node calls (cuGraphAddNode, cuGraphNodeSetParams), bump's (_v2)
 * and axpy's (the v1 ABI, by its symbol), instantiates it, sets other's two
 * nodes there (cuGraphExecKernelNodeSetParams, cuGraphExecNodeSetParams),
 * clears *p and *r and launches it once: *p = 1 and *r = BIAS again, the
 * counter c = 2, y = 1 + 4 * 2 * x; then destroys the graph and gives a new
 * one lone's node, set and read back (a destroyed node's address may come
 * back).
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 1000
/* The value drv_app gives bump's __constant__ bias. */
#define BIAS 7
static __typeof__(&cuGetProcAddress_v2) gpa;

static void *entry(const char *name, int version, cuuint64_t flags) {
  void *fn = NULL;
  CUdriverProcAddressQueryResult status;
  if (gpa(name, &fn, version, flags, &status) != CUDA_SUCCESS || !fn) {
    fprintf(stderr, "drv_app: no %s\n", name);
    exit(1);
  }
  return fn;
}
#define ENTRY(var, name, version) __typeof__(&name) var = entry(#name, version, CU_GET_PROC_ADDRESS_DEFAULT)
#define CHECK(call)                                                                                \
  do {                                                                                             \
    CUresult rc_ = (call);                                                                         \
    if (rc_ != CUDA_SUCCESS) {                                                                     \
      fprintf(stderr, "drv_app: %s failed: %d\n", #call, (int)rc_);                                \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h || !(gpa = (__typeof__(gpa))dlsym(h, "cuGetProcAddress_v2")))
    return fprintf(stderr, "drv_app: no driver\n"), 1;
  ENTRY(init, cuInit, 2000);
  ENTRY(device_get, cuDeviceGet, 2000);
  ENTRY(retain, cuDevicePrimaryCtxRetain, 7000);
  ENTRY(set_current, cuCtxSetCurrent, 4000);
  ENTRY(load, cuModuleLoadData, 2000);
  ENTRY(get_function, cuModuleGetFunction, 2000);
  ENTRY(mem_alloc, cuMemAlloc, 3020);
  ENTRY(htod, cuMemcpyHtoD, 3020);
  ENTRY(dtoh, cuMemcpyDtoH, 3020);
  ENTRY(stream_create, cuStreamCreate, 2000);
  ENTRY(sync, cuCtxSynchronize, 2000);
  ENTRY(launch, cuLaunchKernel, 4000);
  ENTRY(launch_ex, cuLaunchKernelEx, 11060);
  ENTRY(launch_coop, cuLaunchCooperativeKernel, 9000);
  ENTRY(get_global, cuModuleGetGlobal, 3020);
  ENTRY(graph_create, cuGraphCreate, 10000);
  /* the _v2 ABI, asked for as a program built with nvcc's --default-stream
   * per-thread asks for every entry point */
  __typeof__(&cuGraphAddKernelNode) add_node =
      entry("cuGraphAddKernelNode", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  ENTRY(set_node, cuGraphKernelNodeSetParams, 12000);
  ENTRY(get_node, cuGraphKernelNodeGetParams, 12000);
  ENTRY(set_attr, cuGraphKernelNodeSetAttribute, 11070);
  ENTRY(get_attr, cuGraphKernelNodeGetAttribute, 11070);
  ENTRY(graph_launch, cuGraphLaunch, 10000);
  ENTRY(graph_destroy, cuGraphDestroy, 10000);
  ENTRY(instantiate, cuGraphInstantiateWithFlags, 11040);
  ENTRY(exec_set_node, cuGraphExecKernelNodeSetParams, 12000);
  ENTRY(add_any_node, cuGraphAddNode, 12030); /* the _v2 ABI: with edge data */
  ENTRY(set_any_node, cuGraphNodeSetParams, 12020);
  ENTRY(exec_set_any_node, cuGraphExecNodeSetParams, 12020);
  /* the v1 ABI by its symbol, as a program built against CUDA 11 finds it */
  CUresult (*add_node_v1)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                          const CUDA_KERNEL_NODE_PARAMS_v1 *) =
      (__typeof__(add_node_v1))dlsym(h, "cuGraphAddKernelNode");
  __typeof__(&cuLaunchKernel) launch_ptsz =
      entry("cuLaunchKernel", 7000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  __typeof__(&cuLaunchKernel) launch_triton = (__typeof__(&cuLaunchKernel))dlsym(h, "cuLaunchKernel");

  FILE *f = fopen(argv[1], "rb");
  static char image[1 << 20];
  size_t n = f ? fread(image, 1, sizeof image, f) : 0;
  if (!n)
    return fprintf(stderr, "drv_app: cannot read %s\n", argv[1]), 1;
  fclose(f);

  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction axpy, other, lone, bump;
  CUstream s;
  CHECK(init(0));
  CHECK(device_get(&dev, 0));
  CHECK(retain(&ctx, dev));
  CHECK(set_current(ctx));
  CHECK(load(&mod, image));
  CHECK(get_function(&axpy, mod, "_Z4axpyfPKfPfi"));
  CHECK(get_function(&other, mod, "_Z5otherPi"));
  CHECK(get_function(&lone, mod, "lone"));
  CHECK(get_function(&bump, mod, "_Z4bumpPi"));
  CHECK(stream_create(&s, CU_STREAM_NON_BLOCKING));

  static float x[N], y[N];
  for (int i = 0; i < N; i++)
    x[i] = (float)i, y[i] = 1.0f;
  CUdeviceptr dx, dy, dp, dq, dr, dbias, dcounter;
  CHECK(mem_alloc(&dx, sizeof x));
  CHECK(mem_alloc(&dy, sizeof y));
  CHECK(mem_alloc(&dp, sizeof(int)));
  CHECK(mem_alloc(&dq, sizeof(int)));
  CHECK(mem_alloc(&dr, sizeof(int)));
  /* the module's variables: bias set here, counter bumped by the kernel */
  int bias = BIAS;
  size_t bias_size, counter_size;
  CHECK(get_global(&dbias, &bias_size, mod, "bias"));
  CHECK(get_global(&dcounter, &counter_size, mod, "counter"));
  CHECK(htod(dbias, &bias, sizeof bias));
  CHECK(htod(dx, x, sizeof x));
  CHECK(htod(dy, y, sizeof y));
  float a = 2.0f;
  int count = N;
  void *axpy_args[] = {&a, &dx, &dy, &count}, *p_args[] = {&dp}, *q_args[] = {&dq},
       *r_args[] = {&dr};
  __typeof__(&cuLaunchKernel) launch_first =
      argc > 2 && !strcmp(argv[2], "direct") ? cuLaunchKernel : launch;
  if (argc > 2 && !strcmp(argv[2], "coop"))
    CHECK(launch_coop(axpy, 4, 1, 1, 256, 1, 1, 0, NULL, axpy_args));
  else
    CHECK(launch_first(axpy, 4, 1, 1, 256, 1, 1, 0, NULL, axpy_args, NULL));
  CHECK(sync());
  /* axpy(float, const float *, float *, int) in one buffer: 4, 8, 8, 4
   * bytes at 0, 8, 16, 24 (the cubin's parameter offsets) */
  struct {
    float a;
    CUdeviceptr x, y;
    int n;
  } buffer = {a, dx, dy, count};
  size_t buffer_size = 28;
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &buffer, CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &buffer_size, CU_LAUNCH_PARAM_END};
  if (argc > 2 && !strcmp(argv[2], "extra"))
    CHECK(launch_ptsz(axpy, 4, 1, 1, 256, 1, 1, 0, s, NULL, extra));
  else
    CHECK(launch_ptsz(axpy, 4, 1, 1, 256, 1, 1, 0, s, axpy_args, NULL));
  CHECK(sync());
  CUlaunchConfig cfg = {4, 1, 1, 256, 1, 1, 0, NULL, NULL, 0};
  CHECK(launch_ex(&cfg, axpy, axpy_args, NULL));
  CHECK(launch_triton(other, 1, 1, 1, 1, 1, 1, 0, NULL, p_args, NULL));
  CHECK(launch(lone, 1, 1, 1, 1, 1, 1, 0, NULL, q_args, NULL));
  CHECK(launch(bump, 1, 1, 1, 1, 1, 1, 0, NULL, r_args, NULL));
  CHECK(sync());
  int graph = argc > 2 && !strcmp(argv[2], "graph");
  if (graph) {
    /* kernel nodes added by hand: other's and bump's through the _v2 call,
     * other's again through the generic one, axpy's through the v1 one */
    CUgraph g;
    CUgraphNode node, generic, bump_node, axpy_node;
    CHECK(graph_create(&g, 0));
    CUDA_KERNEL_NODE_PARAMS p2 = {0};
    p2.func = other, p2.gridDimX = p2.gridDimY = p2.gridDimZ = 1;
    p2.blockDimX = p2.blockDimY = p2.blockDimZ = 1, p2.kernelParams = p_args;
    CHECK(add_node(&node, g, NULL, 0, &p2));
    CHECK(set_node(node, &p2));
    /* the program reads its node back: its own kernel and shape */
    CUDA_KERNEL_NODE_PARAMS got;
    memset(&got, 0, sizeof got);
    CHECK(get_node(node, &got));
    if (got.func != other || got.gridDimX != 1 || got.blockDimX != 1)
      return fprintf(stderr, "drv_app: other's node reads back another kernel or shape\n"), 1;
    /* a launch attribute set and read back on it */
    CUkernelNodeAttrValue prio = {0}, prio_got = {0};
    prio.priority = 3;
    CHECK(set_attr(node, CU_LAUNCH_ATTRIBUTE_PRIORITY, &prio));
    CHECK(get_attr(node, CU_LAUNCH_ATTRIBUTE_PRIORITY, &prio_got));
    if (prio_got.priority != 3)
      return fprintf(stderr, "drv_app: other's node's priority reads back %d\n", prio_got.priority), 1;
    CUgraphNodeParams any;
    memset(&any, 0, sizeof any);
    any.type = CU_GRAPH_NODE_TYPE_KERNEL;
    any.kernel.func = other, any.kernel.gridDimX = any.kernel.gridDimY = 1;
    any.kernel.gridDimZ = any.kernel.blockDimX = any.kernel.blockDimY = any.kernel.blockDimZ = 1;
    any.kernel.kernelParams = p_args;
    CHECK(add_any_node(&generic, g, &node, NULL, 1, &any));
    CHECK(set_any_node(generic, &any));
    p2.func = bump, p2.kernelParams = r_args;
    CHECK(add_node(&bump_node, g, &generic, 1, &p2));
    CUDA_KERNEL_NODE_PARAMS_v1 p1 = {axpy, 4, 1, 1, 256, 1, 1, 0, axpy_args, NULL};
    if (!add_node_v1)
      return fprintf(stderr, "drv_app: no cuGraphAddKernelNode\n"), 1;
    CHECK(add_node_v1(&axpy_node, g, NULL, 0, &p1));
    /* instantiated, other's nodes given their parameters again there */
    CUgraphExec exec;
    p2.func = other, p2.kernelParams = p_args;
    CHECK(instantiate(&exec, g, 0));
    CHECK(exec_set_node(exec, node, &p2));
    CHECK(exec_set_any_node(exec, generic, &any));
    /* other's writes *p again, bump sets *r from the bias and bumps the
     * counter once more, axpy adds 2x to y a fourth time */
    int zero = 0;
    CHECK(htod(dp, &zero, sizeof zero));
    CHECK(htod(dr, &zero, sizeof zero));
    CHECK(graph_launch(exec, s));
    CHECK(sync());
    /* the graph destroyed (its executable lives on), a new one gets lone's
     * node: an address of the destroyed graph's nodes may come back, and
     * lone's node must be lone's, set and read back */
    CHECK(graph_destroy(g));
    CUgraph g2;
    CUgraphNode lone_node;
    CHECK(graph_create(&g2, 0));
    p2.func = lone, p2.kernelParams = q_args;
    CHECK(add_node(&lone_node, g2, NULL, 0, &p2));
    CHECK(set_node(lone_node, &p2));
    memset(&got, 0, sizeof got);
    CHECK(get_node(lone_node, &got));
    if (got.func != lone)
      return fprintf(stderr, "drv_app: lone's node reads back another kernel\n"), 1;
  }
  int p = 0, q = 0, r = 0, c = 0;
  CHECK(dtoh(y, dy, sizeof y));
  CHECK(dtoh(&p, dp, sizeof p));
  CHECK(dtoh(&q, dq, sizeof q));
  CHECK(dtoh(&r, dr, sizeof r));
  CHECK(dtoh(&c, dcounter, sizeof c));
  /* axpy's passes over y, bump's over the counter */
  int passes = 3 + graph, bumps = 1 + graph, right = 1;
  for (int i = 0; i < N; i++)
    right &= y[i] == 1.0f + (float)passes * 2.0f * (float)i;
  printf("done y %s p %d q %d r %d c %d\n", right ? "right" : "wrong", p, q, r, c);
  fflush(stdout);
  if (argc > 2 && !strcmp(argv[2], "exec"))
    execl("/bin/echo", "echo", "exec-ok", (char *)NULL);
  return right && p == 1 && q == 1 && r == BIAS && c == bumps ? 0 : 1;
}
