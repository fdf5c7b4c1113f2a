// graph.cu: a kernel launched once (a warm-up), then captured into a graph,
// the graph launched three times. Instrumented, each replay is a dispatch of
// its own (the twin runs between the runtime's host functions and copies in
// the graph); the tracer records each replay's kernel.
#include "common.h"

#ifndef CAPTURE_MODE /* graph_relaxed.cu includes this file with another */
#define CAPTURE_MODE cudaStreamCaptureModeGlobal
#endif
#ifndef SAMPLE /* conditional.cu includes it with CONDITIONAL_BODY, handbuilt.cu with HAND_BUILT */
#define SAMPLE "graph"
#endif

__global__ void inc(int *p) { p[threadIdx.x] += 1; }

int main() {
  int *p, h[32];
  cudaStream_t s;
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CHECK(cudaMalloc(&p, sizeof h));
  CHECK(cudaMemset(p, 0, sizeof h));
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  inc<<<1, 32, 0, s>>>(p);
#ifdef CONDITIONAL_BODY
  // the launch captured into the body of a conditional 'if' node of g
  // (default 1: it runs at each launch of the graph)
  cudaGraph_t body;
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
  CHECK(cudaStreamBeginCaptureToGraph(s, body, nullptr, nullptr, 0, CAPTURE_MODE));
  inc<<<1, 32, 0, s>>>(p);
  CHECK(cudaStreamEndCapture(s, &body));
#elif defined(HAND_BUILT)
  // the graph built by hand: one kernel node (cudaGraphAddKernelNode)
  CHECK(cudaGraphCreate(&g, 0));
  void *args[] = {&p};
  cudaKernelNodeParams params = {};
  params.func = (void *)inc;
  params.gridDim = dim3(1);
  params.blockDim = dim3(32);
  params.kernelParams = args;
  cudaGraphNode_t node;
  CHECK(cudaGraphAddKernelNode(&node, g, nullptr, 0, &params));
#else
  CHECK(cudaStreamBeginCapture(s, CAPTURE_MODE));
  inc<<<1, 32, 0, s>>>(p);
  CHECK(cudaStreamEndCapture(s, &g));
#endif
  CHECK(cudaGraphInstantiate(&ge, g, 0));
  for (int r = 0; r < 3; r++) CHECK(cudaGraphLaunch(ge, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaMemcpy(h, p, sizeof h, cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < 32; i++) wrong += h[i] != 4;
  std::printf("%s %s\n", SAMPLE, wrong ? "WRONG" : "ok");
  return wrong != 0;
}
