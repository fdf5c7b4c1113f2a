// hipLaunchKernelExC (HIP 6's launch with a configuration: grid, block,
// shared bytes, stream, attributes; declared here as HIP 6 has it, Debian's
// HIP is 5.2) goes to __nano_gpu_launch_ex with the HIP API id, the kernel's
// twin and its name, as cudaLaunchKernelExC does; nothing is said.
// REQUIRES: hipcc
// RUN: echo fatbin > %t.fatbin
// RUN: %hipcc --offload-arch=gfx90a --cuda-host-only -O1 -S -emit-llvm -Xclang -fcuda-include-gpubinary -Xclang %t.fatbin -fpass-plugin=%plugin %s -o - 2>&1 | FileCheck %s
#include <hip/hip_runtime.h>

typedef struct {
  dim3 gridDim, blockDim;
  size_t dynamicSmemBytes;
  hipStream_t stream;
  void *attrs;
  unsigned int numAttrs;
} hipLaunchConfig_t;
extern "C" hipError_t hipLaunchKernelExC(const hipLaunchConfig_t *config, const void *fPtr,
                                         void **args);

__global__ void axpy(float a, float *x) { x[threadIdx.x] *= a; }

hipError_t run(const hipLaunchConfig_t *config, void **args) {
  return hipLaunchKernelExC(config, (const void *)axpy, args);
}

// CHECK-NOT: hipLaunchKernelExC: the kernels
// CHECK: call i32 @__nano_gpu_launch_ex(i32 2, ptr nonnull @hipLaunchKernelExC, ptr %[[C:[0-9]+]], ptr nonnull @[[K:_Z4axpyfPf]], ptr nonnull @nano.twin.handle._Z4axpyfPf, ptr nonnull @{{[^,]+}}, ptr %[[A:[0-9]+]], i32 2)
// CHECK: call i32 @hipLaunchKernelExC(ptr noundef %[[C]], ptr noundef nonnull @[[K]], ptr noundef %[[A]])
// CHECK: declare extern_weak i32 @__nano_gpu_launch_ex(i32, ptr, ptr, ptr, ptr, ptr, ptr, i32)
