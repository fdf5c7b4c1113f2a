// LLVM 15 can still compile with typed pointers; the pass only handles
// opaque pointers, so such a module gets one warning and compiles unchanged.
// REQUIRES: llvm-15
// RUN: %clang -O2 -Xclang -no-opaque-pointers -S -emit-llvm -o %t.ref.ll %s
// RUN: %clang_nano -O2 -Xclang -no-opaque-pointers -S -emit-llvm -o %t.ll %s 2> %t.err
// RUN: diff %t.ref.ll %t.ll
// RUN: FileCheck %s < %t.err
// CHECK: warning: nanoprobe: module '{{.*}}typed-pointers.c' left without atomic instrumentation: typed pointers are not supported [-Wbackend-plugin]

int v;
int f(void) { return __atomic_fetch_add(&v, 1, __ATOMIC_RELAXED); }
