// conditional.cu: graph.cu with the graph's launch captured into the body
// of a conditional 'if' node (CUDA 12.4+: cudaGraphAddNode, then
// cudaStreamBeginCaptureToGraph), the graph launched three times (the
// handle's default 1: the body runs each time). CUDA allows no host function
// in a body, which a twin's capture needs: the runtime captures the original
// there (said once), the capture holds, and the result counts all four
// launches; only the warm-up is a dispatch.
#define SAMPLE "conditional"
#define CONDITIONAL_BODY
#include "graph.cu"
