// Kernel nodes added to a graph by hand (tests/device/gpu_launch):
// cudaGraphAddKernelNode for axpy, then for other after it; the program
// reads axpy's node back (its kernel and arguments), launches the
// executable, gives the executable's axpy node a new factor
// (cudaGraphExecKernelNodeSetParams) and launches it again, then gives the
// graph's node a factor of 1 and one block (cudaGraphKernelNodeSetParams)
// and launches a second executable: y = 6x + 1 on the first 32 elements,
// 5x + 1 on the rest. Between, other's node gets a priority attribute,
// read back and copied to axpy's node; a third node, other's again, comes
// from the generic cudaGraphAddNode and is set through the generic set
// calls; a fourth and fifth come from it with edge data (full; programmatic).
#include <cstdio>

__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void other(int *p) { *p = 1; }

static float x[64], y[64];
static int p;

int main() {
  for (int i = 0; i < 64; i++)
    x[i] = (float)i, y[i] = 1.0f;
  cudaStream_t s;
  int rc = cudaStreamCreate(&s);
  cudaGraph_t g;
  rc |= cudaGraphCreate(&g, 0);
  float a = 2.0f, *xp = x, *yp = y;
  int n = 64, *pp = &p;
  void *axpy_args[] = {&a, &xp, &yp, &n}, *other_args[] = {&pp};
  cudaKernelNodeParams kp = {}, op = {};
  kp.func = (void *)axpy, kp.gridDim = dim3(2), kp.blockDim = dim3(32), kp.kernelParams = axpy_args;
  op.func = (void *)other, op.gridDim = dim3(1), op.blockDim = dim3(32), op.kernelParams = other_args;
  cudaGraphNode_t k1, k2, k3;
  rc |= cudaGraphAddKernelNode(&k1, g, nullptr, 0, &kp);
  rc |= cudaGraphAddKernelNode(&k2, g, &k1, 1, &op);
  cudaGraphNodeParams any = {};
  any.type = cudaGraphNodeTypeKernel;
  any.kernel.func = op.func, any.kernel.gridDim = op.gridDim, any.kernel.blockDim = op.blockDim;
  any.kernel.kernelParams = other_args;
  rc |= cudaGraphAddNode(&k3, g, &k2, nullptr, 1, &any);
  rc |= cudaGraphNodeSetParams(k3, &any);
  // two more of other's by the generic call with edge data: full
  // dependencies (all zero, as none), then a programmatic one
  cudaGraphNode_t k4, k5;
  cudaGraphEdgeData full = {}, programmatic = {};
  programmatic.type = cudaGraphDependencyTypeProgrammatic;
  programmatic.from_port = cudaGraphKernelNodePortProgrammatic;
  rc |= cudaGraphAddNode(&k4, g, &k3, &full, 1, &any);
  rc |= cudaGraphAddNode(&k5, g, &k4, &programmatic, 1, &any);
  cudaKernelNodeAttrValue priority = {}, seen = {};
  priority.priority = 3;
  rc |= cudaGraphKernelNodeSetAttribute(k2, cudaKernelNodeAttributePriority, &priority);
  rc |= cudaGraphKernelNodeCopyAttributes(k1, k2);
  rc |= cudaGraphKernelNodeGetAttribute(k1, cudaKernelNodeAttributePriority, &seen);
  cudaKernelNodeParams got = {};
  rc |= cudaGraphKernelNodeGetParams(k1, &got);
  int got_right = got.func == (void *)axpy && got.gridDim.x == 2 && got.blockDim.x == 32 &&
                  *(float *)got.kernelParams[0] == 2.0f && *(float **)got.kernelParams[2] == y &&
                  *(int *)got.kernelParams[3] == 64;
  cudaGraphExec_t exec, exec2;
  rc |= cudaGraphInstantiate(&exec, g, 0);
  rc |= cudaGraphLaunch(exec, s);
  rc |= cudaStreamSynchronize(s);
  a = 3.0f;
  rc |= cudaGraphExecKernelNodeSetParams(exec, k1, &kp);
  rc |= cudaGraphExecNodeSetParams(exec, k3, &any);
  rc |= cudaGraphLaunch(exec, s);
  rc |= cudaStreamSynchronize(s);
  a = 1.0f, kp.gridDim = dim3(1);
  rc |= cudaGraphKernelNodeSetParams(k1, &kp);
  rc |= cudaGraphInstantiate(&exec2, g, 0);
  rc |= cudaGraphLaunch(exec2, s);
  rc |= cudaStreamSynchronize(s);
  int wrong = 0;
  for (int i = 0; i < 64; i++)
    wrong += y[i] != (i < 32 ? 6.0f : 5.0f) * i + 1.0f;
  std::printf("handbuilt rc %d got %s y %s p %d priority %d\n", rc, got_right ? "right" : "wrong",
              wrong ? "wrong" : "right", p, seen.priority);
  return 0;
}
