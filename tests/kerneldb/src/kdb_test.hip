// Test kernels for kerneldb. Lines marked KDB:<tag> are looked up by the
// tests (tests/kerneldb/kdb_test.py); keep each marker on its statement.
#include <hip/hip_runtime.h>

#include "kdb_lib.h"

#define TID (__builtin_amdgcn_workitem_id_x())
#define GID (__builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x())

__global__ void axpy(float a, const float* x, float* y, int n) {
  int i = GID;
  if (i < n) {
    float xv = x[i];  // KDB:load_x
    y[i] = a * xv + y[i];  // KDB:store_y
  }
}

template <typename T>
__global__ void scale(T* p, T s) {
  p[TID] *= s;  // KDB:scale
}
template __global__ void scale<double>(double*, double);
template __global__ void scale<short>(short*, short);

__device__ __attribute__((always_inline)) inline void bump(int* p) {
  __hip_atomic_fetch_add(p, 1, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);  // KDB:inlined_atomic
}

extern "C" __global__ void lds_kernel(int* out) {
  __shared__ int tile[64];
  tile[TID] = (int)TID;  // KDB:lds_store
  __builtin_amdgcn_s_barrier();
  out[TID] = tile[63 - TID];  // KDB:lds_load
  bump(out + 64);  // KDB:call_bump
}

// A two-level inlining chain (bump in bump_twice in chain), and a load
// written in a header that plays a library's (kdb_lib.h, as HIP's headers
// implement blockDim.x), inlined at the user's line.
__device__ __attribute__((always_inline)) inline void bump_twice(int* p) {
  bump(p);  // KDB:call_inner
  bump(p + 1);  // KDB:call_inner2
}

extern "C" __global__ void chain(int* out, const int* in) {
  bump_twice(out + kdb_lib_load(in));  // KDB:call_outer
}

__global__ void noargs() {}

__global__ void hidden_user(unsigned* out) {
  out[0] = *(const unsigned*)__builtin_amdgcn_implicitarg_ptr();
}

// Twins as the device-instrumentation pass names them: "__nano_twin_" + the
// kernel name, mangled names with one more trailing void* parameter.
extern "C" __global__ void __nano_twin__Z4axpyfPKfPfiPv(float a, const float* x, float* y, int n,
                                                        void* buf) {
  int i = GID;
  if (i < n) y[i] = a * x[i] + y[i] + (buf ? 1.0f : 0.0f);
}
extern "C" __global__ void __nano_twin__Z6noargsPv(void* buf) { (void)buf; }
extern "C" __global__ void __nano_twin_lds_kernel(int* out, void* buf) { out[TID] = buf != 0; }
