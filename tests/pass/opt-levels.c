// The pass runs at every optimisation level, through clang's pipeline
// (the OptimizerLast extension point), C11 <stdatomic.h> and GCC builtins.
// RUN: env NANO_ATOMICS_INLINE=0 %clang_nano -O0 -S -emit-llvm -o - %s | FileCheck %s
// RUN: env NANO_ATOMICS_INLINE=0 %clang_nano -O1 -S -emit-llvm -o - %s | FileCheck %s
// RUN: env NANO_ATOMICS_INLINE=0 %clang_nano -O2 -S -emit-llvm -o - %s | FileCheck %s
// RUN: env NANO_ATOMICS_INLINE=0 %clang_nano -O3 -S -emit-llvm -o - %s | FileCheck %s
// RUN: env NANO_ATOMICS_INLINE=0 %clang_nano -Os -S -emit-llvm -o - %s | FileCheck %s
// RUN: env NANO_ATOMICS_INLINE=0 %clang_nano -Oz -S -emit-llvm -o - %s | FileCheck %s
// And in opt's default pipelines:
// RUN: %clang -O0 -Xclang -disable-O0-optnone -S -emit-llvm -o %t.ll %s
// RUN: %opt_nano -nano-atomics-inline=0 -passes='default<O0>' -S %t.ll | FileCheck %s
// RUN: %opt_nano -nano-atomics-inline=0 -passes='default<O2>' -S %t.ll | FileCheck %s

#include <stdatomic.h>

atomic_int a;
int b;

// CHECK: @nano.sites = private global [4 x %struct.nano_site]
// CHECK-SAME: { i32 0, i16 4, i8 0, i8 0, i32 4,
// CHECK-SAME: { i32 0, i16 0, i8 5, i8 0, i32 4,
// CHECK-SAME: { i32 0, i16 3, i8 5, i8 80, i32 4,
// CHECK-SAME: { i32 0, i16 26, i8 5, i8 0, i32 0,
void c11(void) { atomic_fetch_add_explicit(&a, 1, memory_order_relaxed); }
int gnu(void) {
  int e = __atomic_load_n(&b, __ATOMIC_SEQ_CST);
  __atomic_compare_exchange_n(&b, &e, e + 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  return e;
}
// CHECK: call void @__nano_atomic(
// CHECK: atomicrmw add ptr @a, i32 {{.*}} monotonic
