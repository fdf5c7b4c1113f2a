// Functions marked no-instrument keep their atomics bare: clang's
// __attribute__((disable_sanitizer_instrumentation)), the annotation
// __attribute__((annotate("nano_no_instrument"))) (NANO_NO_INSTRUMENT of
// nano/atomics.h), and the runtime's own
// functions (names beginning nano_ or __nano_). Other functions of the same
// module are instrumented.
// RUN: env NANO_ATOMICS_INLINE=0 %clang_nano -I%runtime_include -O0 -S -emit-llvm -o - %s | FileCheck %s
// RUN: env NANO_ATOMICS_INLINE=0 %clang_nano -I%runtime_include -O2 -S -emit-llvm -o - %s | FileCheck %s

#include "nano/atomics.h"

int v;

// CHECK: @nano.sites = private global [1 x %struct.nano_site]

// CHECK-LABEL: define {{.*}}@quiet(
// CHECK-NOT: __nano_atomic
// CHECK: atomicrmw add
// CHECK: ret
__attribute__((disable_sanitizer_instrumentation)) void quiet(void) {
  __atomic_fetch_add(&v, 1, __ATOMIC_RELAXED);
}

// CHECK-LABEL: define {{.*}}@annotated(
// CHECK-NOT: __nano_atomic
// CHECK: atomicrmw sub
// CHECK: ret
__attribute__((annotate("nano_no_instrument"))) void annotated(void) {
  __atomic_fetch_sub(&v, 1, __ATOMIC_RELAXED);
}

// CHECK-LABEL: define {{.*}}@with_macro(
// CHECK-NOT: __nano_atomic
// CHECK: atomicrmw nand
// CHECK: ret
NANO_NO_INSTRUMENT void with_macro(void) { __atomic_fetch_nand(&v, 1, __ATOMIC_RELAXED); }

// CHECK-LABEL: define {{.*}}@nano_runtime_helper(
// CHECK-NOT: __nano_atomic
// CHECK: atomicrmw or
// CHECK: ret
void nano_runtime_helper(void) { __atomic_fetch_or(&v, 1, __ATOMIC_RELAXED); }

// CHECK-LABEL: define {{.*}}@__nano_internal(
// CHECK-NOT: __nano_atomic
// CHECK: atomicrmw and
// CHECK: ret
void __nano_internal(void) { __atomic_fetch_and(&v, 1, __ATOMIC_RELAXED); }

// CHECK-LABEL: define {{.*}}@counted(
// CHECK: call void @__nano_atomic(ptr @nano.sites)
// CHECK: atomicrmw xor
void counted(void) { __atomic_fetch_xor(&v, 1, __ATOMIC_RELAXED); }
