// The kernels' file of rdc_main.cu (tests/device/gpu_launch), built with
// -fgpu-rdc: other (the stand-in emulates it by name) and two ways to launch
// it from another file.
__global__ void other(int *p) { *p = 1; }

// <<<>>> here: other's stub, the kernel's constant handle
void launch_other(int *p) { other<<<4, 32>>>(p); }

// the kernel's handle, for a launch made in another file
const void *other_kernel() { return reinterpret_cast<const void *>(other); }
