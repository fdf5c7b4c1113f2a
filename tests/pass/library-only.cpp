// An atomic whose every frame is library code (libstdc++'s shared_ptr count,
// not inlined at -O0) cannot be reported at a user's line: its site carries
// NANO_SITE_LIBRARY (flags bit 7, printed as i8 -128 and up), so the runtime
// can count it per caller (NANO_ATOMICS_CALLERS=1). The user's own atomic is
// never flagged; at -O2 the library code is inlined and reported at the
// user's line, unflagged (an out-of-line part of the release path may stay
// flagged); a library pattern matching nothing flags nothing.
// RUN: %clangxx_nano -std=c++17 -g -O0 -S -emit-llvm -o - %s | FileCheck %s --check-prefix=O0
// RUN: %clangxx_nano -std=c++17 -g -O2 -S -emit-llvm -o - %s | FileCheck %s --check-prefix=O2
// RUN: env NANO_ATOMICS_LIBRARY_FILES='^$' %clangxx_nano -std=c++17 -g -O0 -S -emit-llvm -o - %s | FileCheck %s --check-prefix=NONE
#include <memory>

long counter;

long copy(const std::shared_ptr<long> &p) {
  __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
  std::shared_ptr<long> q = p;
  return *q;
}

// Line 16 is the user's fetch_add (kind 4, relaxed, flags 0); every other
// site at -O0 is in a libstdc++ header and flagged.
// O0: @nano.sites = private global [{{[0-9]+}} x %struct.nano_site] [{{(%struct.nano_site \{ i32 0, i16 [0-9]+, i8 [0-9]+, i8 -12[0-8], [^}]*\}, )*}}%struct.nano_site { i32 0, i16 4, i8 0, i8 0, i32 8, i32 16, i32 3, {{[^}]*}}}{{(, %struct.nano_site \{ i32 0, i16 [0-9]+, i8 [0-9]+, i8 -12[0-8], [^}]*\})+}}]
// O0-DAG: c"{{.*}}/ext/atomicity.h\00"
// At -O2 the copy's increment (volatile: flags 2) is at the user's line 17.
// O2: @nano.sites = private global [{{[0-9]+}} x %struct.nano_site] [%struct.nano_site { i32 0, i16 4, i8 0, i8 0, i32 8, i32 16, i32 3, {{[^}]*}}}, %struct.nano_site { i32 0, i16 4, i8 4, i8 2, i32 4, i32 17, i32 {{[0-9]+}}, i32 0, ptr @nano.str, ptr @nano.str.1,
// O2: @nano.origins =
// NONE: @nano.sites = private global [{{[0-9]+}} x %struct.nano_site] [{{(%struct.nano_site \{ i32 0, i16 [0-9]+, i8 [0-9]+, i8 [0-9]+, [^}]*\}(, )?)+}}]
// NONE-NOT: i8 -12{{[0-8]}}, i32
