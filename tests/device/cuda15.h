/* What the samples need of CUDA's headers, for clang 15, which cannot read
 * CUDA 13's (cuda_build.sh passes -nocudainc and includes this instead). */
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __host__ __attribute__((host))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#include <__clang_cuda_builtin_vars.h>
static __device__ unsigned atomicAdd(unsigned *p, unsigned v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
static __device__ unsigned atomicMax(unsigned *p, unsigned v) {
  return __atomic_fetch_max(p, v, __ATOMIC_RELAXED);
}
static __device__ unsigned atomicCAS(unsigned *p, unsigned expected, unsigned v) {
  __atomic_compare_exchange_n(p, &expected, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return expected;
}
