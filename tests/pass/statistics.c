// The passes count what they did in LLVM statistics that work in release
// builds of LLVM (Debian's print "Statistics are disabled" for -stats):
// `clang -save-stats=obj` writes them beside the object, named after the
// source. Here: four host sites, one loop of three promoted (not unrolled),
// one hook call; one kernel twin with one callee clone and two device sites
// (the kernel's store, the callee's load).
// RUN: rm -rf %t && mkdir -p %t
// RUN: env NANO_ATOMICS_INLINE=0 %clang_nano -O2 -g -fno-unroll-loops -I%dh_include -c %s -o %t/s.o -save-stats=obj
// RUN: FileCheck %s < %t/statistics.stats
// CHECK-DAG: "nano-atomics.NumSites": 4
// CHECK-DAG: "nano-atomics.NumPromotedLoops": 1
// CHECK-DAG: "nano-atomics.NumPromotedSites": 3
// CHECK-DAG: "nano-atomics.NumHookCalls": 1
// CHECK-DAG: "nano-device.NumTwins": 1
// CHECK-DAG: "nano-device.NumCalleeClones": 1
// CHECK-DAG: "nano-device.NumDeviceSites": 2
#include "nano/kernel.h"

int hits, misses, total;

void count(int n) {
  for (int i = 0; i < n; i++) {
    __atomic_fetch_add(&hits, 1, __ATOMIC_RELAXED);
    __atomic_fetch_sub(&misses, 1, __ATOMIC_RELAXED);
    __atomic_fetch_or(&total, i, __ATOMIC_RELAXED);
  }
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

__attribute__((noinline)) static int load(const int *p) { return *p; }

NANO_KERNEL void scale(int *out, const int *in) { *out = 2 * load(in); }
