// -fgpu-rdc with the new offload driver (Debian's hipcc, clang 15: entries
// {address, name, size, flags, reserved} in hip_offloading_entries): the
// twin's entry beside the kernel's, kernel and twin announced to the runtime
// from the pass's constructor, the launch routed (api 2).
// REQUIRES: hipcc
// RUN: %hipcc --offload-arch=gfx90a -fgpu-rdc --offload-new-driver --cuda-host-only -O0 -S -emit-llvm -fpass-plugin=%plugin %s -o - 2>/dev/null | FileCheck %s
#include <hip/hip_runtime.h>

__global__ void axpy(float a, float *x) { x[threadIdx.x] *= a; }

void run(float *x) { hipLaunchKernelGGL(axpy, 1, 32, 0, 0, 2.0f, x); }

// CHECK: @[[NAME:.omp_offloading.entry_name[.0-9]*]] = internal unnamed_addr constant [11 x i8] c"_Z4axpyfPf\00"
// CHECK: @.omp_offloading.entry._Z4axpyfPf = weak constant %struct.__tgt_offload_entry { ptr @[[HANDLE:_Z4axpyfPf]], ptr @[[NAME]], i64 0, i32 0, i32 0 }, section "hip_offloading_entries"
// CHECK-DAG: @[[TWIN:nano.twin.handle._Z4axpyfPf]] = private global i8 0
// CHECK-DAG: @[[TWINNAME:nano.twin.name[.0-9]*]] = internal unnamed_addr constant [25 x i8] c"__nano_twin__Z4axpyfPfPv\00"
// CHECK-DAG: @.omp_offloading.entry._Z4axpyfPf.nano_twin = weak constant %struct.__tgt_offload_entry { ptr @[[TWIN]], ptr @[[TWINNAME]], i64 0, i32 0, i32 0 }, section "hip_offloading_entries"
// CHECK-DAG: @llvm.global_ctors = appending global {{.*}} ptr @nano.gpu.entry.twins

// CHECK: call i32 @__nano_gpu_launch(i32 2, ptr @hipLaunchKernel, ptr @[[HANDLE]], ptr @[[TWIN]], ptr @[[NAME]],

// CHECK-LABEL: define internal void @nano.gpu.entry.twins()
// CHECK-DAG: call void @__nano_gpu_register(i32 2, ptr @[[HANDLE]], ptr @[[TWIN]], ptr @[[NAME]], i32 2)
// CHECK-DAG: call void @__nano_gpu_api(i32 2, ptr @hipGetLastError, ptr @hipPeekAtLastError, ptr @hipGetErrorName)
