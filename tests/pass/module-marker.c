// A module that marks itself no-instrument, by annotating any global variable
// with "nano_no_instrument", is left unchanged.
// RUN: %clang -O2 -S -emit-llvm -o %t.ref.ll %s
// RUN: %clang_nano -O2 -S -emit-llvm -o %t.ll %s
// RUN: diff %t.ref.ll %t.ll
// RUN: %clang_nano -O0 -S -emit-llvm -o - %s | FileCheck %s
// CHECK-NOT: __nano_atomic
// CHECK: atomicrmw add
// CHECK-NOT: __nano_atomic

__attribute__((annotate("nano_no_instrument"), used)) static const char nano_module_marker = 0;

int v;
void f(void) { __atomic_fetch_add(&v, 1, __ATOMIC_RELAXED); }
