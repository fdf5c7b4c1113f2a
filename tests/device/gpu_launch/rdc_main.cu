// -fgpu-rdc with clang-22's new offload driver (tests/device/gpu_launch):
// no registration in the compiled files; clang-linker-wrapper makes it at
// link time from the offload entries, to which the plugin adds one entry
// per twin. other (rdc_kernels.cu) is launched by <<<>>> in its own file,
// then here through cudaLaunchKernel with a handle from that file: a file
// without kernels, whose launch the runtime looks up by the handle.
#include <cstdio>

void launch_other(int *p);
const void *other_kernel();

int main() {
  static int p, q;
  launch_other(&p);
  int *qq = &q;
  void *args[] = {&qq};
  int rc = static_cast<int>(cudaLaunchKernel(other_kernel(), dim3(2), dim3(32), args, 0, 0));
  int sync = static_cast<int>(cudaDeviceSynchronize());
  std::printf("rdc launch %d sync %d p %d q %d\n", rc, sync, p, q);
  return 0;
}
