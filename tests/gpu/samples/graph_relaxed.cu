// graph_relaxed.cu: graph.cu with the capture in relaxed mode (the mode
// PyTorch's CUDA graphs use by default is thread-local; relaxed allows any
// call during the capture): the same four dispatches and ops.
#define CAPTURE_MODE cudaStreamCaptureModeRelaxed
#define SAMPLE "graph_relaxed"
#include "graph.cu"
