// Function and file filters: NANO_ATOMICS_FUNCTIONS / _EXCLUDE_FUNCTIONS
// match the (mangled) function name, NANO_ATOMICS_FILES / _EXCLUDE_FILES the
// site's source file (from debug info; the module's file without it). The
// -mllvm options of the same names win over the environment.
// RUN: env NANO_ATOMICS_FUNCTIONS='^work_' %clang_nano -O2 -S -emit-llvm -o - %s | FileCheck %s --check-prefix=ONLYWORK
// RUN: env NANO_ATOMICS_EXCLUDE_FUNCTIONS='^work_b$' %clang_nano -O2 -S -emit-llvm -o - %s | FileCheck %s --check-prefix=NOTB
// RUN: env NANO_ATOMICS_EXCLUDE_FILES='filter-header\.h$' %clang_nano -g -O2 -S -emit-llvm -o - %s | FileCheck %s --check-prefix=NOHDR
// RUN: env NANO_ATOMICS_FILES='filter-header\.h$' %clang_nano -g -O2 -S -emit-llvm -o - %s | FileCheck %s --check-prefix=ONLYHDR
// RUN: env NANO_ATOMICS_FILES='filters\.c$' %clang_nano -O2 -S -emit-llvm -o - %s | FileCheck %s --check-prefix=ALL
// RUN: env NANO_ATOMICS_FILES='nomatch' %clang_nano -O2 -S -emit-llvm -o - %s | FileCheck %s --check-prefix=NONE
// RUN: %clang_nano -Xclang -load -Xclang %plugin -mllvm -nano-atomics-functions=header_op -O0 -S -emit-llvm -o - %s | FileCheck %s --check-prefix=MLLVM

#include "Inputs/filter-header.h"

int x;
void work_a(void) { __atomic_fetch_add(&x, 1, __ATOMIC_RELAXED); }
void work_b(void) { __atomic_fetch_sub(&x, 1, __ATOMIC_RELAXED); }
void other(void) { __atomic_fetch_or(&x, 1, __ATOMIC_RELAXED); header_op(&x); }

// ONLYWORK: @nano.sites = private global [2 x %struct.nano_site] [%struct.nano_site { i32 0, i16 4, {{.*}} }, %struct.nano_site { i32 0, i16 5,
// NOTB: @nano.sites = private global [3 x %struct.nano_site] [%struct.nano_site { i32 0, i16 4, {{.*}} }, %struct.nano_site { i32 0, i16 8, {{.*}} }, %struct.nano_site { i32 0, i16 9,
// NOHDR: @nano.sites = private global [3 x %struct.nano_site] [%struct.nano_site { i32 0, i16 4, {{.*}} }, %struct.nano_site { i32 0, i16 5, {{.*}} }, %struct.nano_site { i32 0, i16 8,
// ONLYHDR: @nano.sites = private global [1 x %struct.nano_site] [%struct.nano_site { i32 0, i16 9,
// ALL: @nano.sites = private global [4 x %struct.nano_site]
// NONE-NOT: @nano.sites
// MLLVM: @nano.sites = private global [1 x %struct.nano_site] [%struct.nano_site { i32 0, i16 9,
