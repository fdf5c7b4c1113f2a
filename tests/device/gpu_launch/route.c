/*
 * route.c: a stand-in for the runtime's __nano_gpu_launch (nano/gpu_launch.h)
 * for the launch-routing test: it says what it was given, then launches the
 * twin with the kernel's arguments and one more, a pointer to a descriptor.
 */
#include <stdio.h>

#include "nano/gpu_launch.h"

struct dim3 {
  unsigned x, y, z;
};
int cudaLaunchKernel(const void *func, struct dim3 grid, struct dim3 block, void **args,
                     size_t shared, void *stream);
int hipLaunchKernel(const void *func, struct dim3 grid, struct dim3 block, void **args,
                    size_t shared, void *stream);

static char route_desc[64];

int __nano_gpu_launch(int api, const void *kernel, const void *twin, uint64_t grid_xy,
                      uint32_t grid_z, uint64_t block_xy, uint32_t block_z, void **args,
                      uint32_t nargs, size_t shared, void *stream) {
  (void)kernel;
  printf("route api %d nargs %u desc %p\n", api, nargs, (void *)route_desc);
  void *all[16];
  if (nargs >= 16)
    return 97;
  for (uint32_t i = 0; i < nargs; i++)
    all[i] = args[i];
  void *desc = route_desc;
  all[nargs] = &desc;
  printf("twin's last argument %p\n", *(void **)all[nargs]);
  struct dim3 g = {(unsigned)grid_xy, (unsigned)(grid_xy >> 32), grid_z};
  struct dim3 b = {(unsigned)block_xy, (unsigned)(block_xy >> 32), block_z};
  return (api == NANO_GPU_HIP ? hipLaunchKernel : cudaLaunchKernel)(twin, g, b, all, shared,
                                                                    stream);
}
