// CUDA host side (LLVM 22): every kernel's twin is registered next to it
// under the twin's device name with a host handle of its own, and each launch
// (<<<>>> through the stub, cudaLaunchKernel called directly) goes to
// __nano_gpu_launch when the runtime is there (extern_weak), else to the
// launch call unchanged; the runtime gets the launch function the program
// called and the kernel's device name. NANO_KERNELS selects on the host as on
// the device: an unselected kernel gets no twin and keeps its launch. With
// -Xclang -fgpu-default-stream=per-thread the stub calls cudaLaunchKernel_ptsz, and
// the runtime is told so (api 0x101). Each twin is also announced to the
// runtime (__nano_gpu_register, extern_weak: kernel handle, twin handle, name,
// argument count), so a launch through a handle that is no constant goes to
// the runtime too, with neither twin nor name: the runtime looks them up.
// REQUIRES: cuda
// RUN: echo fatbin > %t.fatbin
// RUN: %clangxx_nano -x cuda --cuda-host-only --cuda-gpu-arch=sm_90 --cuda-path=/usr/local/cuda -Wno-unknown-cuda-version -O0 -S -emit-llvm -Xclang -fcuda-include-gpubinary -Xclang %t.fatbin %s -o - | FileCheck %s
// RUN: %clangxx_nano -x cuda --cuda-host-only --cuda-gpu-arch=sm_90 --cuda-path=/usr/local/cuda -Wno-unknown-cuda-version -Xclang -fgpu-default-stream=per-thread -O0 -S -emit-llvm -Xclang -fcuda-include-gpubinary -Xclang %t.fatbin %s -o - | FileCheck %s --check-prefix=PTSZ
// RUN: env NANO_KERNELS=axpy %clangxx_nano -x cuda --cuda-host-only --cuda-gpu-arch=sm_90 --cuda-path=/usr/local/cuda -Wno-unknown-cuda-version -O0 -S -emit-llvm -Xclang -fcuda-include-gpubinary -Xclang %t.fatbin %s -o - | FileCheck %s --check-prefix=FILTER

__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void other(int *p) { *p = 1; }

int run(float *x, float *y, int n, cudaStream_t s) {
  axpy<<<(n + 255) / 256, 256, 0, s>>>(2.0f, x, y, n);
  void *args[] = {&x};
  return cudaLaunchKernel((const void *)other, dim3(1), dim3(1), args, 16, s);
}

int run_any(const void *kernel, void **args, cudaStream_t s) {
  return cudaLaunchKernel(kernel, dim3(2), dim3(64), args, 0, s);
}

// CHECK-DAG: @[[AXPYK:[0-9]+]] = private unnamed_addr constant [15 x i8] c"_Z4axpyfPKfPfi\00"
// CHECK-DAG: @[[OTHERK:[0-9]+]] = private unnamed_addr constant [11 x i8] c"_Z5otherPi\00"
// CHECK-DAG: @[[AXPY:nano.twin.handle._Z4axpyfPKfPfi]] = private global i8 0
// CHECK-DAG: @[[AXPYN:nano.twin.name[.0-9]*]] = private unnamed_addr constant {{.*}} c"__nano_twin__Z4axpyfPKfPfiPv\00"
// CHECK-DAG: @[[OTHER:nano.twin.handle._Z5otherPi]] = private global i8 0
// CHECK-DAG: @[[OTHERN:nano.twin.name[.0-9]*]] = private unnamed_addr constant {{.*}} c"__nano_twin__Z5otherPiPv\00"

// The stub: the runtime gets api 1 (CUDA), cudaLaunchKernel, both handles,
// the kernel's name, grid and block as the launch call has them, the 4
// argument pointers, shared bytes, stream.
// CHECK-LABEL: define {{.*}} @_Z19__device_stub__axpyfPKfPfi(
// CHECK: %[[HAVE:.*]] = icmp ne ptr @__nano_gpu_launch, null
// CHECK-NEXT: br i1 %[[HAVE]], label %[[ROUTE:.*]], label %[[ORIG:.*]]
// CHECK: [[ROUTE]]:
// CHECK-NEXT: %[[R:.*]] = call i32 @__nano_gpu_launch(i32 1, ptr @cudaLaunchKernel, ptr @_Z19__device_stub__axpyfPKfPfi, ptr @[[AXPY]], ptr @[[AXPYK]], i64 %[[GXY:[0-9]+]], i32 %[[GZ:[0-9]+]], i64 %[[BXY:[0-9]+]], i32 %[[BZ:[0-9]+]], ptr %[[ARGS:[0-9]+]], i32 4, i64 %[[SH:[0-9]+]], ptr %[[ST:[0-9]+]])
// CHECK: [[ORIG]]:
// CHECK-NEXT: %[[L:.*]] = call noundef i32 @cudaLaunchKernel(ptr noundef @_Z19__device_stub__axpyfPKfPfi, i64 %[[GXY]], i32 %[[GZ]], i64 %[[BXY]], i32 %[[BZ]], ptr noundef %[[ARGS]], i64 noundef %[[SH]], ptr noundef %[[ST]])
// CHECK: phi i32 [ %[[R]], %[[ROUTE]] ], [ %[[L]], %[[ORIG]] ]

// cudaLaunchKernel called by the program: routed too, 1 argument.
// CHECK-LABEL: define {{.*}} @_Z3runPfS_iP11CUstream_st(
// CHECK: call i32 @__nano_gpu_launch(i32 1, ptr @cudaLaunchKernel, ptr @_Z20__device_stub__otherPi, ptr @[[OTHER]], ptr @[[OTHERK]], {{.*}}, i32 1, i64 16, ptr
// CHECK: call i32 @cudaLaunchKernel(ptr noundef @_Z20__device_stub__otherPi,

// A handle that is no constant: to the runtime, which looks the twin up.
// CHECK-LABEL: define {{.*}} @_Z7run_anyPKvPPvP11CUstream_st(
// CHECK: call i32 @__nano_gpu_launch(i32 1, ptr @cudaLaunchKernel, ptr %{{[0-9]+}}, ptr null, ptr null, {{.*}}, i32 0, i64 0, ptr
// CHECK: call i32 @cudaLaunchKernel(ptr noundef %{{[0-9]+}},

// Registration: each twin right after its kernel, same module handle, then
// announced to the runtime where it is present.
// CHECK-LABEL: define internal void @__cuda_register_globals(ptr %0)
// CHECK-NEXT: call i32 @__cudaRegisterFunction(ptr %0, ptr @_Z19__device_stub__axpyfPKfPfi,
// CHECK-NEXT: call i32 @__cudaRegisterFunction(ptr %0, ptr @[[AXPY]], ptr @[[AXPYN]], ptr @[[AXPYN]], i32 -1, ptr null, ptr null, ptr null, ptr null, ptr null)
// CHECK-NEXT: %[[HAVE_REG:.*]] = icmp ne ptr @__nano_gpu_register, null
// CHECK-NEXT: br i1 %[[HAVE_REG]], label %[[REG:.*]], label %[[NEXT:.*]]
// CHECK: [[REG]]:
// CHECK-NEXT: call void @__nano_gpu_register(i32 1, ptr @_Z19__device_stub__axpyfPKfPfi, ptr @[[AXPY]], ptr @[[AXPYK]], i32 4)
// CHECK: [[NEXT]]:
// CHECK-NEXT: call i32 @__cudaRegisterFunction(ptr %0, ptr @_Z20__device_stub__otherPi,
// CHECK-NEXT: call i32 @__cudaRegisterFunction(ptr %0, ptr @[[OTHER]], ptr @[[OTHERN]], ptr @[[OTHERN]],
// CHECK-DAG: declare extern_weak i32 @__nano_gpu_launch(i32, ptr, ptr, ptr, ptr, i64, i32, i64, i32, ptr, i32, i64, ptr)
// CHECK-DAG: declare extern_weak void @__nano_gpu_register(i32, ptr, ptr, ptr, i32)

// PTSZ-LABEL: define {{.*}} @_Z19__device_stub__axpyfPKfPfi(
// PTSZ: call i32 @__nano_gpu_launch(i32 257, ptr @cudaLaunchKernel_ptsz, ptr @_Z19__device_stub__axpyfPKfPfi,
// PTSZ: call {{.*}}i32 @cudaLaunchKernel_ptsz(ptr {{.*}}@_Z19__device_stub__axpyfPKfPfi,

// FILTER: @nano.twin.handle._Z4axpyfPKfPfi
// FILTER-NOT: @nano.twin.handle._Z5otherPi
// FILTER: call i32 @__nano_gpu_launch(i32 1, ptr @cudaLaunchKernel, ptr @_Z19__device_stub__axpyfPKfPfi
// FILTER-NOT: call i32 @__nano_gpu_launch(i32 1, ptr @cudaLaunchKernel, ptr @_Z20__device_stub__otherPi
// FILTER: call i32 @__cudaRegisterFunction(ptr %0, ptr @nano.twin.handle._Z4axpyfPKfPfi,
// FILTER-NOT: @nano.twin.handle._Z5otherPi
