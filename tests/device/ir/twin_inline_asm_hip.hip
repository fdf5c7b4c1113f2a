// AMDGPU inline assembly is not read by the pass: a statement that holds a
// memory instruction (global, flat, buffer, scratch, LDS, scalar memory) or
// clobbers memory is said at compile time, once per function with the
// count, and is a site of its own, not instrumented (kind "unseen"), which
// `kerneldb sites` lists at its line. Arithmetic assembly is neither.
// REQUIRES: hipcc, kerneldb
// RUN: %hipcc --offload-arch=gfx90a -O2 -g --cuda-device-only -c -fpass-plugin=%plugin %s -o %t.co 2> %t.err
// RUN: FileCheck %s --check-prefix=SAID < %t.err
// RUN: %kerneldb sites %t.co | FileCheck %s --check-prefix=SITES
#include <hip/hip_runtime.h>

__global__ void k(float *p, float *q) {
  float v;
  // SITES-NOT: unseen
  asm volatile("global_load_dword %0, %1, off\n s_waitcnt vmcnt(0)" : "=v"(v) : "v"(p + threadIdx.x));
  // SITES: gfx90a unseen 0 B generic {{.*}}twin_inline_asm_hip.hip:[[#@LINE-1]]:{{[0-9]+}} k(float*, float*)
  asm volatile("s_waitcnt vmcnt(0)" ::: "memory");
  // SITES: gfx90a unseen 0 B generic {{.*}}twin_inline_asm_hip.hip:[[#@LINE-1]]:{{[0-9]+}} k(float*, float*)
  asm volatile("v_mov_b32 %0, %1" : "=v"(v) : "v"(v));
  q[threadIdx.x] = v;
}
// SITES-NOT: unseen

__global__ void plain(float *q) { q[threadIdx.x] = 1.0f; }

// SAID: warning: nanoprobe: _Z1kPfS_: 2 inline assembly statements that may touch memory are not recorded (AMDGPU inline assembly is not read)
// SAID-NOT: plain
