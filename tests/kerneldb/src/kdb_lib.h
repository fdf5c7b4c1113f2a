// A header that plays a library's part for kerneldb's --attribute user
// (tests/kerneldb/kdb_test.py passes --library-files 'kdb_lib\.h$').
#pragma once
__device__ __attribute__((always_inline)) inline int kdb_lib_load(const int* p) {
  return p[__builtin_amdgcn_workitem_id_x()];  // KDB:lib_load
}
