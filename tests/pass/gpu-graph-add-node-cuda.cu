// Graph node calls reach the runtime (LLVM 22, CUDA host side): the
// runtime's cudaGraphAddNode (CUDA 13: with the edges' data) and the
// driver's cuGraphAddNode (cuda.h maps it to cuGraphAddNode_v2) go through
// __nano_gpu_graph_add_node(api, call, with_edges, node, graph, deps, edges,
// ndeps, params) when the runtime is there (it remembers conditional nodes'
// bodies, into which a twin may not be captured), else as before. Kernel
// nodes added that way are still not given twins (cudaGraphAddKernelNode's
// are): said at the runtime's call.
// REQUIRES: cuda
// RUN: rm -rf %t && mkdir -p %t && echo fatbin > %t/fatbin
// RUN: %clangxx_nano -x cuda --cuda-host-only --cuda-gpu-arch=sm_90 --cuda-path=/usr/local/cuda -Wno-unknown-cuda-version -O1 -g -S -emit-llvm -Xclang -fcuda-include-gpubinary -Xclang %t/fatbin %s -o %t/add.ll -save-stats=obj 2> %t/err
// RUN: FileCheck %s < %t/add.ll
// RUN: FileCheck %s --check-prefix=SAID < %t/err
// RUN: FileCheck %s --check-prefix=STATS < %t/gpu-graph-add-node-cuda.stats
#include <cuda.h>

int conditional(cudaGraph_t g, cudaGraphNodeParams *params) {
  cudaGraphNode_t node;
  return cudaGraphAddNode(&node, g, nullptr, nullptr, 0, params);
}

int driver(CUgraph g, CUgraphNodeParams *params, const CUgraphNode *deps, size_t n) {
  CUgraphNode node;
  return cuGraphAddNode(&node, g, deps, nullptr, n, params);
}

// CHECK-LABEL: define {{.*}}@_Z11conditional{{.*}}(ptr noundef %0, ptr noundef %1)
// CHECK: icmp eq ptr @__nano_gpu_graph_add_node, null
// CHECK: call i32 @__nano_gpu_graph_add_node(i32 1, ptr nonnull @cudaGraphAddNode, i32 1, ptr nonnull %[[NODE:[0-9]+]], ptr %0, ptr null, ptr null, i64 0, ptr %1)
// CHECK: call i32 @cudaGraphAddNode(ptr noundef nonnull %[[NODE]], ptr noundef %0, ptr noundef null, ptr noundef null, i64 noundef 0, ptr noundef %1)
// CHECK-LABEL: define {{.*}}@_Z6driver{{.*}}(ptr noundef %0, ptr noundef %1, ptr noundef %2, i64 noundef %3)
// CHECK: call i32 @__nano_gpu_graph_add_node(i32 1, ptr nonnull @cuGraphAddNode_v2, i32 1, ptr nonnull %[[NODE2:[0-9]+]], ptr %0, ptr %2, ptr null, i64 %3, ptr %1)
// CHECK: call i32 @cuGraphAddNode_v2(ptr noundef nonnull %[[NODE2]], ptr noundef %0, ptr noundef %2, ptr noundef null, i64 noundef %3, ptr noundef %1)
// CHECK: declare extern_weak i32 @__nano_gpu_graph_add_node(i32, ptr, i32, ptr, ptr, ptr, ptr, i64, ptr)

// SAID: gpu-graph-add-node-cuda.cu:[[#@LINE-17]]: cudaGraphAddNode: the kernels it launches run uninstrumented (kernel nodes added by the generic node call are not given twins yet (the kernel node call's and launches captured into graphs are))
// STATS: "nano-gpu-launch.NumGpuAddNodeRouted": 2
