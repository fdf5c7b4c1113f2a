/*
 * nano/gpu_launch.h: the contract between the plugin's host side of CUDA and
 * HIP compilations (llvm-pass/GpuLaunch.cpp) and the runtime that launches
 * kernel twins on GPUs.
 *
 * The pass registers each selected kernel's twin next to the kernel, with the
 * API's own registration call (__cudaRegisterFunction / __hipRegisterFunction,
 * the same module handle, the twin's device name and a host handle of its
 * own), so the twin lives in the same loaded module as the kernel and sees
 * the application's __device__ variables. It then routes every launch of such
 * a kernel (cudaLaunchKernel / hipLaunchKernel with the kernel's host handle:
 * <<<>>>, the launch API called directly, hipLaunchKernelGGL) through
 * __nano_gpu_launch when that symbol is present (it is declared weak):
 *
 *   __nano_gpu_launch ? __nano_gpu_launch(api, kernel, twin, grid..., args, nargs, ...)
 *                     : cudaLaunchKernel(kernel, grid..., args, ...)   // as before
 *
 * The runtime decides per launch (the dispatch API's filters): the original
 * through the launch call with the same arguments, or the twin with args and
 * one more, a pointer to the dispatch's buffer descriptor. Its result is the
 * launch call's (cudaError_t or hipError_t).
 */
#ifndef NANO_GPU_LAUNCH_H
#define NANO_GPU_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which launch API the call came from (first argument). */
enum nano_gpu_api { NANO_GPU_CUDA = 1, NANO_GPU_HIP = 2 };

/*
 * kernel, twin: the host handles the API knows the kernel and its twin by;
 * grid_xy, block_xy: x in the low 32 bits, y in the high ones, as the launch
 * calls take dim3 on x86-64; args: the kernel's nargs argument pointers;
 * shared: dynamic shared memory bytes; stream: the API's stream (NULL: the
 * default one).
 */
int __nano_gpu_launch(int api, const void *kernel, const void *twin, uint64_t grid_xy,
                      uint32_t grid_z, uint64_t block_xy, uint32_t block_z, void **args,
                      uint32_t nargs, size_t shared, void *stream);

#ifdef __cplusplus
}
#endif
#endif /* NANO_GPU_LAUNCH_H */
