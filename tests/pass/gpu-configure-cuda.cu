// Calls that configure a kernel through its handle reach its twin (LLVM 22,
// CUDA host side): after a cudaFuncSetAttribute / cudaFuncSetCacheConfig of a
// kernel with a twin that succeeded, the same call with the twin's handle; a
// failure of that call is taken out of the program's last error
// (cudaGetLastError). A constant handle names its twin directly; the C++
// wrapper's handle, no constant, is looked up through the runtime
// (__nano_gpu_twin_of, extern_weak: without the runtime, nothing is
// mirrored). The module constructor tells the runtime the program's
// last-error calls and error names (__nano_gpu_api). A kernel without a twin
// (NANO_KERNELS) keeps its calls alone.
// REQUIRES: cuda
// RUN: echo fatbin > %t.fatbin
// RUN: env NANO_KERNELS=big %clangxx_nano -x cuda --cuda-host-only --cuda-gpu-arch=sm_90 --cuda-path=/usr/local/cuda -Wno-unknown-cuda-version -O0 -S -emit-llvm -Xclang -fcuda-include-gpubinary -Xclang %t.fatbin %s -o - | FileCheck %s

__global__ void big(int *p) { *p = 1; }
__global__ void plain(int *p) { *p = 2; }

int configure() {
  int rc = cudaFuncSetAttribute((const void *)big, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536);
  rc |= cudaFuncSetCacheConfig((const void *)big, cudaFuncCachePreferShared);
  rc |= cudaFuncSetAttribute((const void *)plain, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536);
  return rc | cudaFuncSetAttribute(big, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536);
}

// CHECK-LABEL: define {{.*}} @_Z9configurev()
// CHECK: %[[R1:[0-9]+]] = call i32 @cudaFuncSetAttribute(ptr noundef @_Z18__device_stub__bigPi, i32 noundef 8, i32 noundef 65536)
// CHECK-NEXT: %[[OK1:.*]] = icmp eq i32 %[[R1]], 0
// CHECK-NEXT: %[[GO1:.*]] = and i1 %[[OK1]], true
// CHECK-NEXT: br i1 %[[GO1]]
// CHECK: %[[T1:[0-9]+]] = call i32 @cudaFuncSetAttribute(ptr noundef @nano.twin.handle._Z3bigPi, i32 noundef 8, i32 noundef 65536)
// CHECK-NEXT: %[[F1:[0-9]+]] = icmp ne i32 %[[T1]], 0
// CHECK-NEXT: br i1 %[[F1]]
// CHECK: call i32 @cudaGetLastError()
// CHECK: %[[R2:[0-9]+]] = call i32 @cudaFuncSetCacheConfig(ptr noundef @_Z18__device_stub__bigPi, i32 noundef 1)
// CHECK: call i32 @cudaFuncSetCacheConfig(ptr noundef @nano.twin.handle._Z3bigPi, i32 noundef 1)
// CHECK: call i32 @cudaGetLastError()
// CHECK: call i32 @cudaFuncSetAttribute(ptr noundef @_Z20__device_stub__plainPi, i32 noundef 8, i32 noundef 65536)
// CHECK-NOT: @_Z20__device_stub__plainPi
// CHECK-LABEL: ret i32

// The C++ wrapper: its handle is looked up.
// CHECK-LABEL: define internal {{.*}} @_ZL20cudaFuncSetAttributeIFvPiEE9cudaErrorPT_17cudaFuncAttributei(
// CHECK: %[[W:[0-9]+]] = call i32 @cudaFuncSetAttribute(ptr noundef %[[H:[0-9]+]],
// CHECK-NEXT: %[[P:.*]] = icmp ne ptr @__nano_gpu_twin_of, null
// CHECK: call ptr @__nano_gpu_twin_of(i32 1, ptr %[[H]])
// CHECK: %[[TW:.*]] = phi ptr
// CHECK: call i32 @cudaFuncSetAttribute(ptr noundef %[[TW]],
// CHECK: call i32 @cudaGetLastError()

// CHECK-LABEL: define internal void @__cuda_register_globals(
// CHECK: call void @__nano_gpu_api(i32 1, ptr @cudaGetLastError, ptr @cudaPeekAtLastError, ptr @cudaGetErrorName)
// CHECK-DAG: declare extern_weak void @__nano_gpu_api(i32, ptr, ptr, ptr)
// CHECK-DAG: declare extern_weak ptr @__nano_gpu_twin_of(i32, ptr)
