// NANO_LAUNCH routed to the runtime at -O0 and -O2: the arguments evaluated
// once into a block, __nano_cpu_launch called with the kernel's launch
// descriptor (ABI, block size, name, thread function, weak twin) when the
// runtime is loaded, the serial loop kept otherwise; a launch in a loop; a
// kernel called through a pointer stays serial with a warning.
// RUN: %clang_nano -O0 -I%dh_include -S -emit-llvm %s -o %t.ll 2>%t.err
// RUN: FileCheck %s --check-prefixes=CHECK,O0 < %t.ll
// RUN: FileCheck %s --check-prefix=DECL < %t.ll
// RUN: FileCheck %s --check-prefix=WARN < %t.err
// RUN: %clang_nano -O0 -g -I%dh_include -S -emit-llvm %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=WARNG
// RUN: %clang_nano -O2 -I%dh_include -S -emit-llvm %s -o - 2>/dev/null | FileCheck %s --check-prefixes=CHECK,O2
#include "nano/kernel.h"

struct pair {
  int a, b;
};
void k_args(float *p, int n, double d, struct pair s);
void k_loop(int *p);

// CHECK-DAG: @nano.launch.k_args = private constant { i32, i32, ptr, ptr, ptr } { i32 1, i32 32, ptr @[[NAME:nano.launch.name[.0-9]*]], ptr @nano.launch.thread.k_args, ptr @__nano_twin_k_args }
// CHECK-DAG: @[[NAME]] = private unnamed_addr constant [7 x i8] c"k_args\00"
// CHECK-DAG: @nano.launch.k_loop = private constant { i32, i32, ptr, ptr, ptr } { i32 1, i32 8, ptr @{{nano.launch.name[.0-9]*}}, ptr @nano.launch.thread.k_loop, ptr @__nano_twin_k_loop }

// CHECK-LABEL: define {{.*}}void @launch(
// CHECK: @__nano_cpu_launch
// CHECK: call void @__nano_cpu_launch(ptr {{.*}}@nano.launch.k_args, ptr {{.*}}, ptr {{.*}}, i32 {{.*}}, ptr {{.*}})
// CHECK-NOT: call void @__nano_cpu_launch
// CHECK: call void @k_args(
// CHECK-LABEL: define {{.*}}void @in_loop(
// CHECK: call void @__nano_cpu_launch(ptr {{.*}}@nano.launch.k_loop,
// CHECK: call void @k_loop(
// CHECK-LABEL: define {{.*}}void @through_pointer(
// CHECK-NOT: @__nano_cpu_launch(
// CHECK: ret void
void launch(float *p, int n, double d) {
  struct pair s = {1, 2};
  NANO_LAUNCH(nano_dim(n, 1, 1), nano_dim(64, 1, 1), k_args(p, n + 1, d, s));
}

void in_loop(int *p, int times) {
  for (int i = 0; i < times; i++)
    NANO_LAUNCH(nano_dim(1, 1, 1), nano_dim(32, 1, 1), k_loop(p + i));
}

void through_pointer(int *p, void (*k)(int *)) {
  NANO_LAUNCH(nano_dim(1, 1, 1), nano_dim(32, 1, 1), k(p));
}

// The thread function: enter the position, then the twin with the
// descriptor or the original without.
// CHECK-LABEL: define internal void @nano.launch.thread.k_args(
// CHECK-SAME: ptr {{[^,]*}}[[ARGS:%[0-9a-z]+]], ptr {{[^,]*}}[[DESC:%[0-9a-z]+]], ptr {{[^,]*}}[[POS:%[0-9a-z]+]])
// O0: call void @nano_kernel_enter(ptr {{.*}}[[POS]])
// O2: store ptr [[POS]], ptr
// CHECK: icmp {{eq|ne}} ptr [[DESC]], null
// CHECK: call void @__nano_twin_k_args(ptr {{.*}}, i32 {{.*}}, double {{.*}}, i64 {{.*}}, ptr {{.*}}[[DESC]])
// CHECK: call void @k_args(ptr {{.*}}, i32 {{.*}}, double {{.*}}, i64 {{.*}})
// DECL-DAG: declare extern_weak void @__nano_twin_k_args(ptr, i32, double, i64, ptr)
// DECL-DAG: declare extern_weak void @__nano_cpu_launch(ptr, ptr, ptr, i32, ptr)

// WARN: warning: nanoprobe: in through_pointer: NANO_LAUNCH stays serial: the kernel is called through a pointer
// WARN-NOT: stays serial
// WARNG: warning: nanoprobe: {{.*}}launch.c:46: NANO_LAUNCH stays serial: the kernel is called through a pointer
