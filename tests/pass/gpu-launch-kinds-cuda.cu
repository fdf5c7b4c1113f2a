// Every launch API is routed or said (LLVM 22, CUDA host side): a cooperative
// launch goes to the runtime through cudaLaunchCooperativeKernel itself (the
// twin launches cooperatively); cudaLaunchKernelEx's template calls
// cudaLaunchKernelExC with its kernel parameter, routed through
// __nano_gpu_launch_ex with the configuration (the runtime looks the twin
// up); a multi-device launch (CUDA before 13) goes to the runtime through
// __nano_gpu_launch_multi with the program's call (the runtime looks each
// launch's twin up); a kernel node added to a graph by hand goes to the runtime through
// __nano_gpu_graph_add_kernel with the program's cudaLaunchKernel (for the
// twin's capture), its parameter calls through
// __nano_gpu_graph_kernel_params (op, the call, for an executable's node the
// program's cudaGraphKernelNodeSetParams), the node arguments of its
// attribute calls through __nano_gpu_graph_kernel_node (the twin's node
// inside the runtime's child graph node); a driver launch of a function
// looked up in a module is not routed, and the compile says so at the call,
// with why. The statistics count the kernels' stubs apart from the program's
// own calls, and the calls not routed.
// REQUIRES: cuda
// RUN: rm -rf %t && mkdir -p %t && echo fatbin > %t/fatbin
// RUN: %clangxx_nano -x cuda --cuda-host-only --cuda-gpu-arch=sm_90 --cuda-path=/usr/local/cuda -Wno-unknown-cuda-version -O0 -g -S -emit-llvm -Xclang -fcuda-include-gpubinary -Xclang %t/fatbin %s -o %t/kinds.ll -save-stats=obj 2> %t/err
// RUN: FileCheck %s < %t/kinds.ll
// RUN: FileCheck %s --check-prefix=SAID < %t/err
// RUN: FileCheck %s --check-prefix=STATS < %t/gpu-launch-kinds-cuda.stats
#include <cuda.h>

__global__ void coop(int *p) { *p = 1; }
__global__ void ex(int *p) { *p = 2; }
__global__ void unused(int *p) { *p = 3; }

#include "../device/cuda12_multi.h" // removed in CUDA 13

int run(int *p, cudaStream_t s, CUfunction f, cudaGraph_t g, cudaGraphExec_t e) {
  void *args[] = {&p};
  int rc = cudaLaunchCooperativeKernel((const void *)coop, dim3(2), dim3(32), args, 0, s);
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(1);
  config.blockDim = dim3(32);
  config.stream = s;
  rc |= cudaLaunchKernelEx(&config, ex, p);
  cudaLaunchParams multi = {(void *)coop, dim3(2), dim3(32), args, 0, s};
  rc |= cudaLaunchCooperativeKernelMultiDevice(&multi, 1, 0);
  rc |= cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, (CUstream)s, args, nullptr);
  cudaGraphNode_t node;
  cudaKernelNodeParams params = {};
  params.func = (void *)ex;
  params.gridDim = dim3(1);
  params.blockDim = dim3(32);
  params.kernelParams = args;
  rc |= cudaGraphAddKernelNode(&node, g, nullptr, 0, &params);
  rc |= cudaGraphKernelNodeGetParams(node, &params);
  rc |= cudaGraphKernelNodeSetParams(node, &params);
  rc |= cudaGraphExecKernelNodeSetParams(e, node, &params);
  cudaKernelNodeAttrValue v = {};
  rc |= cudaGraphKernelNodeSetAttribute(node, cudaKernelNodeAttributePriority, &v);
  rc |= cudaGraphKernelNodeCopyAttributes(node, node);
  return rc;
}

// CHECK-LABEL: define {{.*}} @_Z3runPiP11CUstream_stP9CUfunc_stP10CUgraph_stP14CUgraphExec_st(
// CHECK: call i32 @__nano_gpu_launch(i32 1, ptr @cudaLaunchCooperativeKernel, ptr @_Z19__device_stub__coopPi, ptr @nano.twin.handle._Z4coopPi,
// CHECK: call i32 @cudaLaunchCooperativeKernel(ptr noundef @_Z19__device_stub__coopPi,
// CHECK: call i32 @__nano_gpu_launch_multi(i32 1, ptr @cudaLaunchCooperativeKernelMultiDevice, ptr %[[MULTI:[a-z0-9]+]], i32 1, i32 0)
// CHECK: call i32 @cudaLaunchCooperativeKernelMultiDevice(ptr noundef %[[MULTI]], i32 noundef 1, i32 noundef 0)
// CHECK: icmp ne ptr @__nano_gpu_graph_add_kernel, null
// CHECK: call i32 @__nano_gpu_graph_add_kernel(i32 1, ptr @cudaGraphAddKernelNode, ptr @cudaLaunchKernel, ptr %[[NODE:[0-9]+]], ptr %[[G:[0-9]+]], ptr null, i64 0, ptr %[[P:[0-9]+]])
// CHECK: call i32 @cudaGraphAddKernelNode(ptr noundef %[[NODE]], ptr noundef %[[G]], ptr noundef null, i64 noundef 0, ptr noundef %[[P]])
// CHECK: call i32 @__nano_gpu_graph_kernel_params(i32 1, i32 0, ptr @cudaGraphKernelNodeGetParams, ptr null, ptr null, ptr %{{[0-9]+}}, ptr %[[P]])
// CHECK: call i32 @__nano_gpu_graph_kernel_params(i32 1, i32 1, ptr @cudaGraphKernelNodeSetParams, ptr null, ptr null, ptr %{{[0-9]+}}, ptr %[[P]])
// CHECK: call i32 @__nano_gpu_graph_kernel_params(i32 1, i32 2, ptr @cudaGraphExecKernelNodeSetParams, ptr @cudaGraphKernelNodeSetParams, ptr %{{[0-9]+}}, ptr %{{[0-9]+}}, ptr %[[P]])
// CHECK: %[[N:[0-9]+]] = call ptr @__nano_gpu_graph_kernel_node(i32 1, ptr %[[NODE2:[0-9]+]])
// CHECK: %[[M:[0-9]+]] = phi ptr [ %[[N]], %{{[0-9]+}} ], [ %[[NODE2]], %{{[0-9]+}} ]
// CHECK: call i32 @cudaGraphKernelNodeSetAttribute(ptr noundef %[[M]], i32 noundef 8, ptr noundef %{{[0-9]+}})
// CHECK: %[[D:[0-9]+]] = call ptr @__nano_gpu_graph_kernel_node(i32 1,
// CHECK: %[[DP:[0-9]+]] = phi ptr [ %[[D]],
// CHECK: %[[S:[0-9]+]] = call ptr @__nano_gpu_graph_kernel_node(i32 1,
// CHECK: %[[SP:[0-9]+]] = phi ptr [ %[[S]],
// CHECK: call i32 @cudaGraphKernelNodeCopyAttributes(ptr noundef %[[DP]], ptr noundef %[[SP]])

// CHECK-LABEL: define internal {{.*}}cudaLaunchKernelEx
// CHECK: call i32 @__nano_gpu_launch_ex(i32 1, ptr @cudaLaunchKernelExC, ptr %{{[0-9]+}}, ptr %{{[0-9]+}}, ptr null, ptr null, ptr %{{[0-9]+}}, i32 0)
// CHECK: call i32 @cudaLaunchKernelExC(
// CHECK: declare extern_weak i32 @__nano_gpu_graph_add_kernel(i32, ptr, ptr, ptr, ptr, ptr, i64, ptr)

// SAID-NOT: cudaLaunchKernelExC:
// SAID-NOT: MultiDevice
// SAID: gpu-launch-kinds-cuda.cu:[[#@LINE-44]]: cuLaunchKernel: the kernels it launches run uninstrumented (a function looked up in a module at run time has no twin of the plugin's; `nanoprobe run -i -c CACHE` gives it a kernel cache's)
// SAID-NOT: cudaGraphAddKernelNode:
// SAID-NOT: KernelNodeSetParams:

// three stubs (coop, ex, unused), whether called or not; two calls of the
// program's (the cooperative launch, cudaLaunchKernelEx's); and the
// multi-device call
// STATS-DAG: "nano-gpu-launch.NumGpuStubLaunchesRouted": 3
// STATS-DAG: "nano-gpu-launch.NumGpuCallLaunchesRouted": 3
// STATS-DAG: "nano-gpu-launch.NumGpuLaunchesNotRouted": 1
// STATS-DAG: "nano-gpu-launch.NumGpuKernelNodeCallsRouted": 6
