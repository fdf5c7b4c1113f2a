// hipExtLaunchKernel (hip_ext.h: events recorded around the kernel, flags)
// goes to __nano_gpu_launch_events with the events and flags when the
// runtime is there, else as before: through hipExtLaunchKernelGGL's template
// (its kernel a parameter: twin and name looked up by the runtime) and
// called directly with a kernel's constant handle (its twin named here).
// REQUIRES: hipcc
// RUN: echo fatbin > %t.fatbin
// RUN: %hipcc --offload-arch=gfx90a --cuda-host-only -O1 -S -emit-llvm -Xclang -fcuda-include-gpubinary -Xclang %t.fatbin -fpass-plugin=%plugin %s -o - 2>&1 | FileCheck %s
#include <hip/hip_ext.h>
#include <hip/hip_runtime.h>

__global__ void axpy(float a, float *x) { x[threadIdx.x] *= a; }

void run(float *x, hipStream_t s, hipEvent_t e0, hipEvent_t e1) {
  hipExtLaunchKernelGGL(axpy, dim3(1), dim3(32), 0, s, e0, e1, 0, 2.0f, x);
  hipExtLaunchKernel((const void *)axpy, dim3(2), dim3(32), nullptr, 0, s, nullptr, nullptr, 1);
}

// CHECK-NOT: hipExtLaunchKernel: the kernels
// CHECK: call i32 @__nano_gpu_launch_events(i32 2, ptr nonnull @hipExtLaunchKernel, ptr nonnull @[[K:_Z4axpyfPf]], ptr null, ptr null, i64 4294967297, i32 1, i64 4294967328, i32 1, ptr nonnull %{{[0-9]+}}, i32 0, i64 0, ptr %1, ptr %2, ptr %3, i32 0)
// CHECK: call i32 @hipExtLaunchKernel(ptr noundef nonnull @[[K]], i64 4294967297,
// CHECK: call i32 @__nano_gpu_launch_events(i32 2, ptr nonnull @hipExtLaunchKernel, ptr nonnull @[[K]], ptr nonnull @nano.twin.handle._Z4axpyfPf, ptr nonnull @{{[^,]+}}, i64 4294967298, i32 1, i64 4294967328, i32 1, ptr null, i32 2, i64 0, ptr %1, ptr null, ptr null, i32 1)
// CHECK: call i32 @hipExtLaunchKernel(ptr noundef nonnull @[[K]], i64 4294967298,
// CHECK: declare extern_weak i32 @__nano_gpu_launch_events(i32, ptr, ptr, ptr, ptr, i64, i32, i64, i32, ptr, i32, i64, ptr, ptr, ptr, i32)
