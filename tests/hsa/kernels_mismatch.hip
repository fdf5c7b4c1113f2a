// A cache kernel named as kernels.hip's dyn(int*) (extern "C", so its name
// is the mangled one) with another argument list: the cache must refuse it.
#include <hip/hip_runtime.h>
extern "C" __global__ void _Z3dynPi(int *out, int extra) { out[threadIdx.x] = extra; }
