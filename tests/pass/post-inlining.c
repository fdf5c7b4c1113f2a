// The pass sees post-inlining IR: an atomic in a function inlined into two
// callers is two sites, one per copy, each reported where the operation is
// written (the user's own code: bump, line 11, column 3) and counted once per
// caller; the report merges them (docs/atomics.md, "instances"). Without
// debug info each is named after its caller.
// RUN: %clang_nano -O2 -g -S -emit-llvm -o - %s | FileCheck %s
// RUN: %clang_nano -O2 -S -emit-llvm -o - %s | FileCheck %s --check-prefix=NODEBUG

static int n;
static inline __attribute__((always_inline)) void bump(void) {
  __atomic_fetch_add(&n, 1, __ATOMIC_RELAXED);
}
void one(void) { bump(); }
void two(void) { bump(); }

// CHECK: @nano.sites = private global [2 x %struct.nano_site] [%struct.nano_site { i32 0, i16 4, i8 0, i8 0, i32 4, i32 11, i32 3, i32 0, ptr @[[BUMP:nano.str[.0-9]*]], ptr @[[FILE:nano.str[.0-9]*]], ptr @nano.module }, %struct.nano_site { i32 0, i16 4, i8 0, i8 0, i32 4, i32 11, i32 3, i32 0, ptr @[[BUMP]], ptr @[[FILE]], ptr @nano.module }]
// CHECK: @nano.module = {{.*}} ptr null }
// CHECK-DAG: @[[BUMP]] = private unnamed_addr constant [5 x i8] c"bump\00"
// CHECK-NOT: define {{.*}}@bump

// NODEBUG: @nano.sites = private global [2 x %struct.nano_site] [%struct.nano_site { i32 0, i16 4, i8 0, i8 0, i32 4, i32 0, i32 0, i32 0, ptr @[[ONE:nano.str[.0-9]*]], ptr @[[FILE:nano.str[.0-9]*]], ptr @nano.module }, %struct.nano_site { i32 0, i16 4, i8 0, i8 0, i32 4, i32 0, i32 0, i32 0, ptr @[[TWO:nano.str[.0-9]*]], ptr @[[FILE]], ptr @nano.module }]
// NODEBUG-DAG: @[[ONE]] = private unnamed_addr constant [4 x i8] c"one\00"
// NODEBUG-DAG: @[[TWO]] = private unnamed_addr constant [4 x i8] c"two\00"
