// File filters match the normalised path: clang records libstdc++'s headers
// as /usr/bin/../lib/gcc/x86_64-linux-gnu/12/../../../../include/c++/12/...,
// and the documented ^/usr/include/ must match them (and only them).
// RUN: env NANO_ATOMICS_EXCLUDE_FILES='^/usr/include/' %clangxx_nano -std=c++17 -g -O0 -S -emit-llvm -o - %s | FileCheck %s --check-prefix=NOSYS
// RUN: env NANO_ATOMICS_FILES='^/usr/include/c\+\+/' %clangxx_nano -std=c++17 -g -O0 -S -emit-llvm -o - %s | FileCheck %s --check-prefix=SYS
// RUN: %clangxx_nano -std=c++17 -g -O0 -S -emit-llvm -o - %s | FileCheck %s --check-prefix=ALL
#include <atomic>

std::atomic<int> a;
int plain;
int use() {
  __atomic_fetch_or(&plain, 1, __ATOMIC_RELAXED);
  return a.fetch_add(1);
}

// Kinds: 8 is fetch_or (this file), 4 fetch_add (libstdc++'s atomic_base.h,
// one site per memory order at -O0: the order is a run-time value there).
// NOSYS: @nano.sites = private global [1 x %struct.nano_site] [%struct.nano_site { i32 0, i16 8,
// SYS: @nano.sites = private global [{{[0-9]+}} x %struct.nano_site] [%struct.nano_site { i32 0, i16 4,
// SYS-NOT: i16 8,
// SYS: @nano.str
// ALL: @nano.sites = private global [{{[2-9]|[1-9][0-9]+}} x %struct.nano_site] [%struct.nano_site { i32 0, i16 8,
