// HIP's multi-device launches (a list of launches, one per device) go to
// __nano_gpu_launch_multi with the program's own call, the list, the count
// and the flags when the runtime is there, else as before: the runtime
// looks each launch's twin up (the list's kernels are not known here), and
// nothing is said. The deprecated hipHccModuleLaunchKernel (a function of
// a module) is said, as hipExtModuleLaunchKernel is.
// REQUIRES: hipcc
// RUN: echo fatbin > %t.fatbin
// RUN: %hipcc --offload-arch=gfx90a --cuda-host-only -O1 -g -S -emit-llvm -Xclang -fcuda-include-gpubinary -Xclang %t.fatbin -fpass-plugin=%plugin -Wno-deprecated-declarations %s -o %t.ll 2> %t.err
// RUN: FileCheck %s < %t.ll
// RUN: FileCheck %s --check-prefix=SAID < %t.err
#include <hip/hip_ext.h>
#include <hip/hip_runtime.h>

__global__ void axpy(float a, float *x) { x[threadIdx.x] *= a; }

int run(float *x, hipStream_t s0, hipStream_t s1, hipFunction_t f, void **params) {
  float a = 2.0f;
  void *args[] = {&a, &x};
  hipLaunchParams lp[2] = {{(void *)axpy, dim3(1), dim3(32), args, 0, s0},
                           {(void *)axpy, dim3(1), dim3(32), args, 0, s1}};
  int rc = hipLaunchCooperativeKernelMultiDevice(lp, 2, 0);
  rc |= hipExtLaunchMultiKernelMultiDevice(lp, 2, hipCooperativeLaunchMultiDeviceNoPreSync);
  rc |= hipHccModuleLaunchKernel(f, 256, 1, 1, 256, 1, 1, 0, s0, params, nullptr);
  return rc;
}

// CHECK-LABEL: define {{.*}} @_Z3runPfP12ihipStream_tS1_P18ihipModuleSymbol_tPPv(
// CHECK: br i1 icmp ne (ptr @__nano_gpu_launch_multi, ptr null)
// CHECK: call i32 @__nano_gpu_launch_multi(i32 2, ptr nonnull @hipLaunchCooperativeKernelMultiDevice, ptr nonnull %[[L:[0-9]+]], i32 2, i32 0)
// CHECK: call i32 @hipLaunchCooperativeKernelMultiDevice(ptr noundef nonnull %[[L]], i32 noundef 2, i32 noundef 0)
// CHECK: call i32 @__nano_gpu_launch_multi(i32 2, ptr nonnull @hipExtLaunchMultiKernelMultiDevice, ptr nonnull %[[L]], i32 2, i32 1)
// CHECK: call i32 @hipExtLaunchMultiKernelMultiDevice(ptr noundef nonnull %[[L]], i32 noundef 2, i32 noundef 1)
// CHECK: declare extern_weak i32 @__nano_gpu_launch_multi(i32, ptr, ptr, i32, i32)

// SAID-NOT: MultiDevice
// SAID: gpu-launch-multi-hip.hip:[[#@LINE-13]]: hipHccModuleLaunchKernel: the kernels it launches run uninstrumented (a function looked up in a module at run time
// SAID-NOT: MultiDevice
