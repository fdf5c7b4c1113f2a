// GCC's legacy __sync builtins are instrumented as the IR they become:
// fetch_add (4), compare_exchange (3), exchange (2), store (1), thread fence (26).
// RUN: %clang_nano -O0 -S -emit-llvm -o - %s | FileCheck %s
// RUN: %clang_nano -O2 -S -emit-llvm -o - %s | FileCheck %s

int v;
int sync_all(void) {
  __sync_fetch_and_add(&v, 1);
  __sync_add_and_fetch(&v, 1);
  __sync_val_compare_and_swap(&v, 1, 2);
  __sync_lock_test_and_set(&v, 1);
  __sync_lock_release(&v);
  __sync_synchronize();
  return v;
}
// CHECK: @nano.sites = private global [6 x %struct.nano_site]
// CHECK-SAME: { i32 0, i16 4, i8 5, i8 0, i32 4,
// CHECK-SAME: { i32 0, i16 4, i8 5, i8 0, i32 4,
// CHECK-SAME: { i32 0, i16 3, i8 5, i8 80, i32 4,
// CHECK-SAME: { i32 0, i16 2, i8 5, i8 0, i32 4,
// CHECK-SAME: { i32 0, i16 1, i8 3, i8 0, i32 4,
// CHECK-SAME: { i32 0, i16 26, i8 5, i8 0, i32 0,
