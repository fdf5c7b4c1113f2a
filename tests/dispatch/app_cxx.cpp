// Launches blas::scale<float> and blas::scale<double> once each; checks the
// results. usage: app_cxx
#include "nano/kernel.h"

#include <cstdio>
#include <vector>

namespace blas {
template <typename T> void scale(T *x, T a);
}

int main() {
  std::vector<float> f(256, 2.0f);
  std::vector<double> d(256, 3.0);
  NANO_LAUNCH(nano_dim(2, 1, 1), nano_dim(128, 1, 1), blas::scale<float>(f.data(), 1.5f));
  NANO_LAUNCH(nano_dim(2, 1, 1), nano_dim(128, 1, 1), blas::scale<double>(d.data(), 2.0));
  for (float v : f)
    if (v != 3.0f) {
      std::fprintf(stderr, "app_cxx: scale<float> wrong\n");
      return 1;
    }
  for (double v : d)
    if (v != 6.0) {
      std::fprintf(stderr, "app_cxx: scale<double> wrong\n");
      return 1;
    }
  std::printf("{\"n\":256}\n");
  return 0;
}
