// handbuilt.cu: graph.cu with the graph built by hand, one kernel node
// added by cudaGraphAddKernelNode, launched three times. The runtime puts
// the twin's nodes in as one child graph node: each replay is a dispatch of
// its own, as for a captured launch.
#define SAMPLE "handbuilt"
#define HAND_BUILT
#include "graph.cu"
