// HIP host side (Debian's hipcc, clang 15): the twin of each kernel is
// registered with __hipRegisterFunction next to it, under its own handle and
// device name, and hipLaunchKernel of the kernel's handle (the <<<>>> stub,
// hipLaunchKernelGGL) goes to __nano_gpu_launch (api 2) when the runtime is
// there, else to hipLaunchKernel as before.
// REQUIRES: hipcc
// RUN: echo fatbin > %t.fatbin
// RUN: %hipcc --offload-arch=gfx90a --cuda-host-only -O0 -S -emit-llvm -Xclang -fcuda-include-gpubinary -Xclang %t.fatbin -fpass-plugin=%plugin %s -o - | FileCheck %s
#include <hip/hip_runtime.h>

__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

void run(float *x, float *y, int n) {
  hipLaunchKernelGGL(axpy, dim3(1), dim3(64), 0, 0, 2.0f, x, y, n);
}

// CHECK-DAG: @[[TWIN:nano.twin.handle._Z4axpyfPKfPfi]] = private global i8 0
// CHECK-DAG: @[[NAME:nano.twin.name[.0-9]*]] = private unnamed_addr constant {{.*}} c"__nano_twin__Z4axpyfPKfPfiPv\00"
// CHECK-LABEL: define {{.*}} @_Z19__device_stub__axpyfPKfPfi(
// (LLVM 15 folds the test of the weak symbol into the branch)
// CHECK: br i1 icmp ne (ptr @__nano_gpu_launch, ptr null), label %[[ROUTE:[0-9]+]], label %[[ORIG:[0-9]+]]
// CHECK: [[ROUTE]]:
// CHECK-NEXT: call i32 @__nano_gpu_launch(i32 2, ptr @hipLaunchKernel, ptr @_Z4axpyfPKfPfi, ptr @[[TWIN]], ptr @[[KNAME:[0-9]+]], i64 %{{.*}}, i32 %{{.*}}, i64 %{{.*}}, i32 %{{.*}}, ptr %{{.*}}, i32 4, i64 %{{.*}}, ptr %{{.*}})
// CHECK: [[ORIG]]:
// CHECK-NEXT: call noundef i32 @hipLaunchKernel(ptr noundef @_Z4axpyfPKfPfi,
// CHECK: call i32 @__hipRegisterFunction(ptr %{{.*}}, ptr @_Z4axpyfPKfPfi, ptr @[[KNAME]], ptr @[[KNAME]], i32 -1,
// CHECK-NEXT: call i32 @__hipRegisterFunction(ptr %{{.*}}, ptr @[[TWIN]], ptr @[[NAME]], ptr @[[NAME]], i32 -1, ptr null, ptr null, ptr null, ptr null, ptr null)
// CHECK: declare extern_weak i32 @__nano_gpu_launch(i32, ptr, ptr, ptr, ptr, i64, i32, i64, i32, ptr, i32, i64, ptr)
