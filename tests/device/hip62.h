/* HIP 6.2's generic graph node calls, as its hip_runtime_api.h declares
 * them, for the tests: Debian's HIP 5.2 headers have none. Include after
 * <hip/hip_runtime_api.h>. */
#ifndef NANO_TESTS_HIP62_H
#define NANO_TESTS_HIP62_H

/* hipGraphNodeParams: the node's type (HIP 6 numbers types as CUDA does:
 * a kernel node is 0), then the type's parameters. */
#define HIP62_KERNEL_NODE 0
typedef struct hipGraphNodeParams {
  int type;
  int reserved0[3];
  union {
    long long reserved1[29];
    hipKernelNodeParams kernel;
  };
  long long reserved2;
} hipGraphNodeParams;

#ifdef __cplusplus
extern "C" {
#endif
hipError_t hipGraphAddNode(hipGraphNode_t *pGraphNode, hipGraph_t graph,
                           const hipGraphNode_t *pDependencies, size_t numDependencies,
                           hipGraphNodeParams *nodeParams);
hipError_t hipGraphNodeSetParams(hipGraphNode_t node, hipGraphNodeParams *nodeParams);
hipError_t hipGraphExecNodeSetParams(hipGraphExec_t graphExec, hipGraphNode_t node,
                                     hipGraphNodeParams *nodeParams);
#ifdef __cplusplus
}
#endif

#endif
