// HIP kernel nodes added to a graph by hand go to the runtime as CUDA's do:
// hipGraphAddKernelNode through __nano_gpu_graph_add_kernel with the HIP
// API id and the program's hipLaunchKernel (the twin's nodes are captured
// with it), the executable's parameter call through
// __nano_gpu_graph_kernel_params with the program's
// hipGraphKernelNodeSetParams, an attribute call's node through
// __nano_gpu_graph_kernel_node; nothing is said.
// REQUIRES: hipcc
// RUN: echo fatbin > %t.fatbin
// RUN: %hipcc --offload-arch=gfx90a --cuda-host-only -O1 -S -emit-llvm -Xclang -fcuda-include-gpubinary -Xclang %t.fatbin -fpass-plugin=%plugin %s -o - 2>&1 | FileCheck %s
#include <hip/hip_runtime.h>

__global__ void axpy(float a, float *x) { x[threadIdx.x] *= a; }

hipError_t add(hipGraph_t g, hipGraphExec_t e, hipKernelNodeParams *p) {
  hipGraphNode_t node;
  hipError_t rc = hipGraphAddKernelNode(&node, g, nullptr, 0, p);
  if (rc == hipSuccess)
    rc = hipGraphExecKernelNodeSetParams(e, node, p);
  hipKernelNodeAttrValue v = {};
  if (rc == hipSuccess)
    rc = hipGraphKernelNodeSetAttribute(node, hipKernelNodeAttributeCooperative, &v);
  return rc;
}

// CHECK-NOT: the kernels it launches run uninstrumented
// CHECK: call i32 @__nano_gpu_graph_add_kernel(i32 2, ptr nonnull @hipGraphAddKernelNode, ptr nonnull @hipLaunchKernel, ptr nonnull %{{[0-9]+}}, ptr %0, ptr null, i64 0, ptr %[[P:2]])
// CHECK: call i32 @__nano_gpu_graph_kernel_params(i32 2, i32 2, ptr nonnull @hipGraphExecKernelNodeSetParams, ptr nonnull @hipGraphKernelNodeSetParams, ptr %1, ptr %{{[0-9]+}}, ptr %[[P]])
// CHECK: %[[N:[0-9]+]] = call ptr @__nano_gpu_graph_kernel_node(i32 2, ptr %{{[0-9]+}})
// CHECK: %[[M:[0-9]+]] = phi ptr [ %[[N]],
// CHECK: call i32 @hipGraphKernelNodeSetAttribute(ptr noundef %[[M]], i32 noundef 2,
// CHECK: declare extern_weak i32 @__nano_gpu_graph_add_kernel(i32, ptr, ptr, ptr, ptr, ptr, i64, ptr)
