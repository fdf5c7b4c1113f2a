// Graph node calls reach the runtime (LLVM 22, CUDA host side): the
// runtime's cudaGraphAddNode (CUDA 13: with the edges' data) and the
// driver's cuGraphAddNode (cuda.h maps it to cuGraphAddNode_v2) go through
// __nano_gpu_graph_add_node(api, call, launch, with_edges, node, graph, deps,
// edges, ndeps, params) when the runtime is there (it remembers conditional
// nodes' bodies, into which a twin may not be captured, and puts a kernel
// node's twin in as cudaGraphAddKernelNode's: launch is the program's
// cudaLaunchKernel for the runtime's call, null for the driver's), else as
// before; the generic set calls go through __nano_gpu_graph_kernel_params
// (ops 3 and 4, the executable's with the program's cudaGraphNodeSetParams).
// Nothing is said.
// REQUIRES: cuda
// RUN: rm -rf %t && mkdir -p %t && echo fatbin > %t/fatbin
// RUN: %clangxx_nano -x cuda --cuda-host-only --cuda-gpu-arch=sm_90 --cuda-path=/usr/local/cuda -Wno-unknown-cuda-version -O1 -g -S -emit-llvm -Xclang -fcuda-include-gpubinary -Xclang %t/fatbin %s -o %t/add.ll -save-stats=obj 2> %t/err
// RUN: FileCheck %s < %t/add.ll
// RUN: FileCheck %s --check-prefix=SAID --allow-empty < %t/err
// RUN: FileCheck %s --check-prefix=STATS < %t/gpu-graph-add-node-cuda.stats
#include <cuda.h>

int conditional(cudaGraph_t g, cudaGraphNodeParams *params) {
  cudaGraphNode_t node;
  return cudaGraphAddNode(&node, g, nullptr, nullptr, 0, params);
}

int set(cudaGraphExec_t e, cudaGraphNode_t node, cudaGraphNodeParams *params) {
  return cudaGraphNodeSetParams(node, params) | cudaGraphExecNodeSetParams(e, node, params);
}

int driver(CUgraph g, CUgraphNodeParams *params, const CUgraphNode *deps, size_t n) {
  CUgraphNode node;
  return cuGraphAddNode(&node, g, deps, nullptr, n, params);
}

// CHECK-LABEL: define {{.*}}@_Z11conditional{{.*}}(ptr noundef %0, ptr noundef %1)
// CHECK: icmp eq ptr @__nano_gpu_graph_add_node, null
// CHECK: call i32 @__nano_gpu_graph_add_node(i32 1, ptr nonnull @cudaGraphAddNode, ptr nonnull @cudaLaunchKernel, i32 1, ptr nonnull %[[NODE:[0-9]+]], ptr %0, ptr null, ptr null, i64 0, ptr %1)
// CHECK: call i32 @cudaGraphAddNode(ptr noundef nonnull %[[NODE]], ptr noundef %0, ptr noundef null, ptr noundef null, i64 noundef 0, ptr noundef %1)
// CHECK-LABEL: define {{.*}}@_Z3set{{.*}}(ptr noundef %0, ptr noundef %1, ptr noundef %2)
// CHECK: call i32 @__nano_gpu_graph_kernel_params(i32 1, i32 3, ptr nonnull @cudaGraphNodeSetParams, ptr null, ptr null, ptr %1, ptr %2)
// CHECK: call i32 @__nano_gpu_graph_kernel_params(i32 1, i32 4, ptr nonnull @cudaGraphExecNodeSetParams, ptr nonnull @cudaGraphNodeSetParams, ptr %0, ptr %1, ptr %2)
// CHECK-LABEL: define {{.*}}@_Z6driver{{.*}}(ptr noundef %0, ptr noundef %1, ptr noundef %2, i64 noundef %3)
// CHECK: call i32 @__nano_gpu_graph_add_node(i32 1, ptr nonnull @cuGraphAddNode_v2, ptr null, i32 1, ptr nonnull %[[NODE2:[0-9]+]], ptr %0, ptr %2, ptr null, i64 %3, ptr %1)
// CHECK: call i32 @cuGraphAddNode_v2(ptr noundef nonnull %[[NODE2]], ptr noundef %0, ptr noundef %2, ptr noundef null, i64 noundef %3, ptr noundef %1)
// CHECK: declare extern_weak i32 @__nano_gpu_graph_add_node(i32, ptr, ptr, i32, ptr, ptr, ptr, ptr, i64, ptr)

// SAID-NOT: cudaGraphAddNode:
// STATS-DAG: "nano-gpu-launch.NumGpuAddNodeRouted": 2
// STATS-DAG: "nano-gpu-launch.NumGpuKernelNodeCallsRouted": 2
