// -fgpu-rdc with the new offload driver (LLVM 22, CUDA host side): clang
// registers nothing in the module, it leaves an offload entry per kernel in
// llvm_offload_entries, from which clang-linker-wrapper makes the
// registration at link time. The pass puts the twin's entry beside each
// kernel's (its own handle and device name, the kernel's kind and flags),
// announces kernel and twin to the runtime from a constructor of its own,
// and routes the stub's launch as in a whole-program build. A device
// variable's entry gets no twin.
// REQUIRES: cuda
// RUN: %clangxx_nano -x cuda --cuda-host-only -fgpu-rdc --cuda-gpu-arch=sm_90 --cuda-path=/usr/local/cuda -Wno-unknown-cuda-version -O0 -S -emit-llvm %s -o - | FileCheck %s
// RUN: env NANO_KERNELS=none %clangxx_nano -x cuda --cuda-host-only -fgpu-rdc --cuda-gpu-arch=sm_90 --cuda-path=/usr/local/cuda -Wno-unknown-cuda-version -O0 -S -emit-llvm %s -o - | FileCheck %s --check-prefix=NONE

__device__ int table[4];
__global__ void axpy(float a, float *x) { x[threadIdx.x] *= a + table[0]; }

void run(float *x) { axpy<<<1, 32>>>(2.0f, x); }

// CHECK: @[[NAME:.offloading.entry_name[.0-9]*]] = internal unnamed_addr constant [11 x i8] c"_Z4axpyfPf\00", section ".llvm.rodata.offloading"
// CHECK: @.offloading.entry._Z4axpyfPf = weak constant %struct.__tgt_offload_entry { i64 0, i16 1, i16 2, i32 0, ptr @[[STUB:_Z19__device_stub__axpyfPf]], ptr @[[NAME]], i64 0, i64 0, ptr null }, section "llvm_offload_entries"
// CHECK-NOT: nano_twin{{.*}}table
// CHECK-DAG: @[[TWIN:nano.twin.handle._Z4axpyfPf]] = private global i8 0
// CHECK-DAG: @[[TWINNAME:nano.twin.name[.0-9]*]] = internal unnamed_addr constant [25 x i8] c"__nano_twin__Z4axpyfPfPv\00", section ".llvm.rodata.offloading"
// CHECK-DAG: @.offloading.entry._Z4axpyfPf.nano_twin = weak constant %struct.__tgt_offload_entry { i64 0, i16 1, i16 2, i32 0, ptr @[[TWIN]], ptr @[[TWINNAME]], i64 0, i64 0, ptr null }, section "llvm_offload_entries"
// CHECK-DAG: @llvm.global_ctors = appending global {{.*}} ptr @nano.gpu.entry.twins

// CHECK-LABEL: define {{.*}}void @_Z19__device_stub__axpyfPf(
// CHECK: call i32 @__nano_gpu_launch(i32 1, ptr @cudaLaunchKernel, ptr @[[STUB]], ptr @[[TWIN]], ptr @[[NAME]],
// CHECK: call {{.*}}i32 @cudaLaunchKernel(ptr {{.*}}@[[STUB]],

// CHECK-LABEL: define internal void @nano.gpu.entry.twins()
// CHECK-DAG: call void @__nano_gpu_api(i32 1, ptr @cudaGetLastError, ptr @cudaPeekAtLastError, ptr @cudaGetErrorName)
// CHECK-DAG: call void @__nano_gpu_register(i32 1, ptr @[[STUB]], ptr @[[TWIN]], ptr @[[NAME]], i32 2)

// CHECK: !llvm.offloading.symbols = !{![[A:[0-9]+]], ![[B:[0-9]+]], ![[C:[0-9]+]]}
// CHECK-DAG: ![[C]] = !{ptr @[[TWINNAME]]}

// NONE-NOT: nano_twin
// NONE-NOT: __nano_gpu_register
