// HIP through Debian's hipcc (clang-15) with the whole plugin: the source compiles,
// the host module's atomics are instrumented, and the host pass leaves the
// device (amdgcn) module alone: with the device pass selecting no kernel
// (NANO_KERNELS matches none) it is byte for byte the one built without the
// plugin, and the host pass alone run on it changes nothing.
// REQUIRES: hipcc
// RUN: env NANO_ATOMICS_INLINE=0 %hipcc --offload-arch=gfx90a -fpass-plugin=%plugin -c %s -o %t.o
// RUN: %nm %t.o | FileCheck %s --check-prefix=OBJ
// RUN: env NANO_ATOMICS_INLINE=0 %hipcc --offload-arch=gfx90a --cuda-host-only -S -emit-llvm -fpass-plugin=%plugin %s -o %t.host.ll
// RUN: FileCheck %s --check-prefix=HOST < %t.host.ll
// RUN: env NANO_ATOMICS_INLINE=0 %hipcc --offload-arch=gfx90a --cuda-device-only -S -emit-llvm %s -o %t.dev.ref.ll
// RUN: env NANO_KERNELS=no_kernel_matches env NANO_ATOMICS_INLINE=0 %hipcc --offload-arch=gfx90a --cuda-device-only -S -emit-llvm -fpass-plugin=%plugin %s -o %t.dev.ll
// RUN: diff %t.dev.ref.ll %t.dev.ll
// RUN: FileCheck %s --check-prefix=DEV < %t.dev.ll
// The host pass alone on that device module leaves it unchanged too:
// RUN: %opt -S %t.dev.ref.ll -o %t.dev.norm.ll
// RUN: %opt_nano -passes=nano-atomics -nano-atomics-inline=0 -S %t.dev.ref.ll -o %t.dev.host-pass.ll
// RUN: diff %t.dev.norm.ll %t.dev.host-pass.ll

#include <hip/hip_runtime.h>

__global__ void inc(int *p) { atomicAdd(p, 1); }

int host_counter;

int main() {
  __atomic_fetch_add(&host_counter, 1, __ATOMIC_RELAXED);
  int *d = nullptr;
  hipLaunchKernelGGL(inc, dim3(1), dim3(1), 0, 0, d);
  return 0;
}

// OBJ: w __nano_atomic
// OBJ: w __nano_register_module
// HOST: target triple = "x86_64
// HOST: @nano.sites = private global [1 x %struct.nano_site] [%struct.nano_site { i32 0, i16 4, i8 0, i8 0, i32 4,
// HOST: call void @__nano_atomic(ptr @nano.sites)
// HOST-NEXT: br label
// HOST: atomicrmw add ptr @host_counter, i32 1 monotonic
// DEV: target triple = "amdgcn-amd-amdhsa"
// DEV: atomicrmw
// DEV-NOT: nano
