// A launch of a function looked up in a module at run time is said at
// compile time, whether HIP declares the call in C (hipModuleLaunchKernel)
// or in C++ (hipExtModuleLaunchKernel, hip_ext.h: a mangled name), with the
// way to instrument it: a kernel cache (`nanoprobe run -i -c`).
// REQUIRES: hipcc
// RUN: echo fatbin > %t.fatbin
// RUN: %hipcc --offload-arch=gfx90a --cuda-host-only -O1 -g -S -emit-llvm -Xclang -fcuda-include-gpubinary -Xclang %t.fatbin -fpass-plugin=%plugin %s -o /dev/null 2>&1 | FileCheck %s
#include <hip/hip_ext.h>
#include <hip/hip_runtime.h>

void run(hipFunction_t f, void **params) {
  hipModuleLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, 0, params, nullptr);
  hipExtModuleLaunchKernel(f, 1024, 1, 1, 256, 1, 1, 0, 0, params, nullptr);
}

// CHECK-DAG: gpu-launch-module-hip.hip:12: hipModuleLaunchKernel: the kernels it launches run uninstrumented (a function looked up in a module at run time has no twin of the plugin's; `nanoprobe run -i -c CACHE` gives it a kernel cache's)
// CHECK-DAG: gpu-launch-module-hip.hip:13: hipExtModuleLaunchKernel: the kernels it launches run uninstrumented (a function looked up in a module at run time has no twin of the plugin's; `nanoprobe run -i -c CACHE` gives it a kernel cache's)
