// C++: std::atomic members, std::shared_ptr's reference counts and
// std::mutex's libstdc++ inline code are instrumented at -O0 and -O2; site
// functions are mangled names.
// RUN: %clangxx_nano -std=c++17 -O0 -S -emit-llvm -o - %s | FileCheck %s --check-prefixes=CHECK,O0
// RUN: %clangxx_nano -std=c++17 -O2 -S -emit-llvm -o - %s | FileCheck %s --check-prefixes=CHECK
// The instrumented IR, debug info included, passes the verifier (clang skips
// it in release builds):
// RUN: %clangxx_nano -std=c++17 -O0 -g -S -emit-llvm -o %t.o0.ll %s
// RUN: %opt -passes=verify -disable-output %t.o0.ll
// RUN: %clangxx_nano -std=c++17 -O2 -g -S -emit-llvm -o %t.o2.ll %s
// RUN: %opt -passes=verify -disable-output %t.o2.ll

#include <atomic>
#include <memory>

std::atomic<long> counter;

long bump() {
  counter.fetch_add(2, std::memory_order_relaxed);
  long e = counter.load(std::memory_order_acquire);
  counter.compare_exchange_weak(e, e + 1);
  return e;
}

std::shared_ptr<int> share(const std::shared_ptr<int> &p) { return p; }

// The fetch_add, load and weak compare_exchange of bump():
// CHECK-DAG: %struct.nano_site { i32 0, i16 4, i8 0, i8 0, i32 8,
// CHECK-DAG: %struct.nano_site { i32 0, i16 0, i8 2, i8 0, i32 8,
// CHECK-DAG: %struct.nano_site { i32 0, i16 3, i8 5, i8 81, i32 8,
// libstdc++ always inlines them into bump (mangled _Z4bumpv); at -O0 the
// order is not constant there, so clang emits one instruction per order and
// each is a site (only one executes).
// CHECK-DAG: c"_Z4bumpv\00"
// At -O0 shared_ptr's count is incremented in libstdc++'s own member:
// O0-DAG: c"_ZNSt16_Sp_counted_baseILN9__gnu_cxx12_Lock_policyE2EE15_M_add_ref_copyEv\00"
// shared_ptr copies count with an atomic add on the use count (libstdc++
// inlines it into share at -O2):
// CHECK-DAG: atomicrmw volatile add ptr {{.*}}, i32 {{.*}} acq_rel
