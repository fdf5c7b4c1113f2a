// A launch captured into a conditional node's body graph (CUDA 12.4+:
// cudaGraphAddNode makes the node and its body, cudaStreamBeginCaptureToGraph
// fills the body; tests/device/gpu_launch). CUDA allows no host function in
// a body, and a twin's dispatch in a graph needs two: the runtime learns the
// body from the program's cudaGraphAddNode (routed by the plugin) and
// captures the original kernel there, said once. The twin runs first
// outside any graph (a twin captures only once it has launched).
#include <cstdio>

__global__ void other(int *p) { *p = 1; }

int main() {
  static int p, q;
  int *pp = &p, *qq = &q;
  cudaStream_t s;
  int rc = cudaStreamCreate(&s);
  other<<<1, 32, 0, s>>>(pp);
  rc |= cudaStreamSynchronize(s);
  cudaGraph_t g, body;
  rc |= cudaGraphCreate(&g, 0);
  cudaGraphConditionalHandle handle;
  rc |= cudaGraphConditionalHandleCreate(&handle, g, 1, cudaGraphCondAssignDefault);
  cudaGraphNodeParams params = {};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = handle;
  params.conditional.type = cudaGraphCondTypeIf;
  params.conditional.size = 1;
  cudaGraphNode_t node;
  rc |= cudaGraphAddNode(&node, g, nullptr, nullptr, 0, &params);
  body = params.conditional.phGraph_out[0];
  rc |= cudaStreamBeginCaptureToGraph(s, body, nullptr, nullptr, 0, cudaStreamCaptureModeGlobal);
  other<<<1, 32, 0, s>>>(qq);
  rc |= cudaStreamEndCapture(s, &body);
  cudaGraphExec_t exec;
  rc |= cudaGraphInstantiate(&exec, g, 0);
  rc |= cudaGraphLaunch(exec, s);
  rc |= cudaStreamSynchronize(s);
  std::printf("conditional rc %d p %d q %d\n", rc, p, q);
  return 0;
}
