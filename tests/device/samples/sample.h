/* Sample kernels for the device tests: HIP (hipcc) or CUDA (clang-22 -x cuda). */
#ifndef NANO_SAMPLE_H
#define NANO_SAMPLE_H
#if defined(__HIP__)
#include <hip/hip_runtime.h>
#endif
#define NOINLINE __attribute__((noinline))
#endif
