// C++ CPU kernels: a template in a namespace (mangled twin name, selection
// by the bare name) launched from C++.
#include "nano/kernel.h"

namespace blas {
template <typename T> NANO_KERNEL void scale(T *x, T a) {
  unsigned i = nano_block_idx().x * nano_block_dim().x + nano_thread_idx().x;
  x[i] = a * x[i]; // @cxx.scale
}
template void scale<float>(float *, float);
template void scale<double>(double *, double);
} // namespace blas
