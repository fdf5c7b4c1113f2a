#include "sample.h"
/* Reads its implicit (hidden) kernel arguments on AMDGPU, so the code object
 * lists hidden arguments after the explicit ones. */
__global__ void hidden_args(unsigned *out) {
#if defined(__HIP__)
  const unsigned *ia = (const unsigned *)__builtin_amdgcn_implicitarg_ptr();
  out[threadIdx.x] = ia[0] + ia[1];
#else
  out[threadIdx.x] = gridDim.x;
#endif
}
