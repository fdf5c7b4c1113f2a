// clang lowers atomics on a type too big for a lock-free instruction to the
// generic library calls; they are sites with the size and order clang passes.
// RUN: env NANO_ATOMICS_INLINE=0 %clang_nano -O0 -S -emit-llvm -o - %s | FileCheck %s
// RUN: env NANO_ATOMICS_INLINE=0 %clang_nano -O2 -S -emit-llvm -o - %s | FileCheck %s

struct big { long a, b, c; };
_Atomic struct big g;

// CHECK: @nano.sites = private global [2 x %struct.nano_site]
// CHECK-SAME: { i32 0, i16 0, i8 5, i8 4, i32 24,
// CHECK-SAME: { i32 0, i16 1, i8 3, i8 4, i32 24,
struct big get(void) { return __c11_atomic_load(&g, __ATOMIC_SEQ_CST); }
void put(struct big v) { __c11_atomic_store(&g, v, __ATOMIC_RELEASE); }
// CHECK: call void @__nano_atomic(
// CHECK: call void @__atomic_load(i64 noundef 24, ptr noundef {{(nonnull )?}}@g,
// CHECK: call void @__nano_atomic(
// CHECK: call void @__atomic_store(i64 noundef 24, ptr noundef {{(nonnull )?}}@g,
