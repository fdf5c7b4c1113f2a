// conditional.cu: a warm-up launch, then a graph with a conditional 'if'
// node (CUDA 12.4+) whose body is filled by cudaStreamBeginCaptureToGraph
// with a launch of the same kernel; the graph launched three times (the
// handle's default 1: the body runs each time). CUDA allows no host
// function in a body, which a twin's capture needs: the runtime captures
// the original there (said once), the capture holds, and the result counts
// all four launches; only the warm-up is a dispatch.
#include "common.h"

__global__ void inc(int *p) { p[threadIdx.x] += 1; }

int main() {
  int *p, h[32];
  cudaStream_t s;
  cudaGraph_t g, body;
  cudaGraphExec_t ge;
  CHECK(cudaMalloc(&p, sizeof h));
  CHECK(cudaMemset(p, 0, sizeof h));
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  inc<<<1, 32, 0, s>>>(p);
  CHECK(cudaGraphCreate(&g, 0));
  cudaGraphConditionalHandle handle;
  CHECK(cudaGraphConditionalHandleCreate(&handle, g, 1, cudaGraphCondAssignDefault));
  cudaGraphNodeParams params = {};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = handle;
  params.conditional.type = cudaGraphCondTypeIf;
  params.conditional.size = 1;
  cudaGraphNode_t node;
  CHECK(cudaGraphAddNode(&node, g, nullptr, nullptr, 0, &params));
  body = params.conditional.phGraph_out[0];
  CHECK(cudaStreamBeginCaptureToGraph(s, body, nullptr, nullptr, 0, cudaStreamCaptureModeGlobal));
  inc<<<1, 32, 0, s>>>(p);
  CHECK(cudaStreamEndCapture(s, &body));
  CHECK(cudaGraphInstantiate(&ge, g, 0));
  for (int r = 0; r < 3; r++) CHECK(cudaGraphLaunch(ge, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaMemcpy(h, p, sizeof h, cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < 32; i++) wrong += h[i] != 4;
  std::printf("conditional %s\n", wrong ? "WRONG" : "ok");
  return wrong != 0;
}
