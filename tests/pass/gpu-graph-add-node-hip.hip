// HIP 6's generic node calls reach the runtime as CUDA's do: hipGraphAddNode
// through __nano_gpu_graph_add_node (the HIP API id, the program's
// hipLaunchKernel for a kernel node's twin, no edges), hipGraphNodeSetParams
// and hipGraphExecNodeSetParams through __nano_gpu_graph_kernel_params (ops
// 3 and 4, the executable's with the program's hipGraphNodeSetParams).
// Nothing is said. Debian's HIP 5.2 headers lack the calls: tests/device/hip62.h
// declares them as HIP 6.2's headers do.
// REQUIRES: hipcc
// RUN: echo fatbin > %t.fatbin
// RUN: %hipcc --offload-arch=gfx90a --cuda-host-only -O1 -S -emit-llvm -Xclang -fcuda-include-gpubinary -Xclang %t.fatbin -fpass-plugin=%plugin %s -o %t.ll 2> %t.err
// RUN: FileCheck %s < %t.ll
// RUN: FileCheck %s --check-prefix=SAID --allow-empty < %t.err
#include <hip/hip_runtime.h>

#include "../device/hip62.h"

__global__ void axpy(float a, float *x) { x[threadIdx.x] *= a; }

hipError_t add(hipGraph_t g, hipGraphExec_t e, hipGraphNodeParams *p) {
  hipGraphNode_t node;
  hipError_t rc = hipGraphAddNode(&node, g, nullptr, 0, p);
  if (rc == hipSuccess)
    rc = hipGraphNodeSetParams(node, p);
  if (rc == hipSuccess)
    rc = hipGraphExecNodeSetParams(e, node, p);
  return rc;
}

// CHECK: call i32 @__nano_gpu_graph_add_node(i32 2, ptr nonnull @hipGraphAddNode, ptr nonnull @hipLaunchKernel, i32 0, ptr nonnull %[[NODE:[0-9]+]], ptr %0, ptr null, ptr null, i64 0, ptr %[[P:2]])
// CHECK: call i32 @hipGraphAddNode(ptr noundef nonnull %[[NODE]], ptr noundef %0, ptr noundef null, i64 noundef 0, ptr noundef %[[P]])
// CHECK: call i32 @__nano_gpu_graph_kernel_params(i32 2, i32 3, ptr nonnull @hipGraphNodeSetParams, ptr null, ptr null, ptr %{{[0-9]+}}, ptr %[[P]])
// CHECK: call i32 @__nano_gpu_graph_kernel_params(i32 2, i32 4, ptr nonnull @hipGraphExecNodeSetParams, ptr nonnull @hipGraphNodeSetParams, ptr %1, ptr %{{[0-9]+}}, ptr %[[P]])

// SAID-NOT: the kernels it launches run uninstrumented
