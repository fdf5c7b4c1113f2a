// An atomic written in library code (libstdc++'s std::atomic) and inlined
// into the user's function is reported at the user's line, in the user's
// function; the library location is kept in nano.origins. std::atomic's
// members are always_inline, so -O0 attributes them too. Code of the user's
// own file inlined elsewhere stays where it is written (helper).
// RUN: %clangxx_nano -std=c++17 -g -O2 -S -emit-llvm -o - %s | FileCheck %s --check-prefixes=CHECK,O2
// RUN: %clangxx_nano -std=c++17 -g -O0 -S -emit-llvm -o - %s | FileCheck %s --check-prefixes=CHECK,O0
// A library pattern that matches nothing reports the operation where it is
// written, with no origins.
// RUN: env NANO_ATOMICS_LIBRARY_FILES='^$' %clangxx_nano -std=c++17 -g -O2 -S -emit-llvm -o - %s | FileCheck %s --check-prefix=OWN
// RUN: env NANO_ATOMICS_LIBRARY_FILES='(' not %clangxx_nano -std=c++17 -g -O2 -S -emit-llvm -o /dev/null %s 2>&1 | FileCheck %s --check-prefix=BAD
#include <atomic>

std::atomic<long> hits;
long plain;
static inline void helper(long *p) { __atomic_fetch_add(p, 1, __ATOMIC_RELAXED); }

void work() {
  hits.fetch_add(1, std::memory_order_relaxed);
  helper(&plain);
}

// Kind 4 is fetch_add; the first site is line 19 of this file in _Z4workv,
// the last line 16 in helper. At -O0 the std::atomic call has one site per
// memory order (the order is a run-time value there), all at line 19.
// O2: @nano.sites = private global [2 x %struct.nano_site] [%struct.nano_site { i32 0, i16 4, i8 0, i8 0, i32 8, i32 19, i32 8, i32 0, ptr @[[WORK:nano.str[.0-9]*]], ptr @[[FILE:nano.str[.0-9]*]], ptr @nano.module }, %struct.nano_site { i32 0, i16 4, i8 0, i8 0, i32 8, i32 16, i32 38, i32 0, ptr @[[HELPER:nano.str[.0-9]*]], ptr @[[FILE]], ptr @nano.module }]
// O0: @nano.sites = private global [6 x %struct.nano_site] [%struct.nano_site { i32 0, i16 4, i8 0, i8 0, i32 8, i32 19, i32 8, i32 0, ptr @[[WORK:nano.str[.0-9]*]], ptr @[[FILE:nano.str[.0-9]*]], ptr @nano.module }, {{(%struct.nano_site [^%]*i32 8, i32 19, i32 8, i32 0, ptr @nano.str, [^%]*, )+}}%struct.nano_site { i32 0, i16 4, i8 0, i8 0, i32 8, i32 16, i32 38, i32 0, ptr @[[HELPER:nano.str[.0-9]*]], ptr @[[FILE]], ptr @nano.module }]
// CHECK: @nano.module = private global %struct.nano_site_module { i32 2, i32 {{2|6}}, ptr @nano.sites, ptr @{{.*}}, ptr null, i64 0, ptr @nano.origins }
// CHECK-DAG: @[[WORK]] = private unnamed_addr constant [9 x i8] c"_Z4workv\00"
// CHECK-DAG: @[[FILE]] = private unnamed_addr constant [{{[0-9]+}} x i8] c"{{.*}}inlined-at.cpp\00"
// CHECK-DAG: @[[HELPER]] = private unnamed_addr constant [{{[0-9]+}} x i8] c"_ZL6helperPl\00"
// CHECK-DAG: @nano.origins = private constant [{{2|6}} x %struct.nano_site_origin] [%struct.nano_site_origin { ptr @[[LIBFN:nano.str[.0-9]*]], ptr @[[LIBFILE:nano.str[.0-9]*]], i32 {{[1-9][0-9]*}}, i32 {{[0-9]+}} }, {{.*}}%struct.nano_site_origin zeroinitializer]
// CHECK-DAG: @[[LIBFN]] = private unnamed_addr constant [{{[0-9]+}} x i8] c"_ZNSt13__atomic_baseIlE9fetch_addElSt12memory_order\00"
// CHECK-DAG: @[[LIBFILE]] = private unnamed_addr constant [{{[0-9]+}} x i8] c"{{.*}}/include/c++/{{[0-9]+}}/bits/atomic_base.h\00"

// OWN: @nano.sites = private global [2 x %struct.nano_site] [%struct.nano_site { i32 0, i16 4, i8 0, i8 0, i32 8, i32 {{[0-9]+}}, i32 {{[0-9]+}}, i32 0, ptr @[[LIBFN:nano.str[.0-9]*]], ptr @[[LIBFILE:nano.str[.0-9]*]],
// OWN: @nano.module = private global %struct.nano_site_module { i32 2, i32 2, ptr @nano.sites, ptr @{{.*}}, ptr null, i64 0, ptr null }
// OWN-DAG: @[[LIBFN]] = private unnamed_addr constant [{{[0-9]+}} x i8] c"_ZNSt13__atomic_baseIlE9fetch_addElSt12memory_order\00"
// OWN-DAG: @[[LIBFILE]] = private unnamed_addr constant [{{[0-9]+}} x i8] c"{{.*}}/bits/atomic_base.h\00"
// OWN-NOT: @nano.origins

// BAD: error: nanoprobe: NANO_ATOMICS_LIBRARY_FILES=(: invalid regular expression
