/* CUDA 12's multi-device launch, which CUDA 13 removed, as CUDA 12's
 * cuda_runtime_api.h declared it, for the tests (the toolkit here is 13). */
#ifndef NANO_TESTS_CUDA12_MULTI_H
#define NANO_TESTS_CUDA12_MULTI_H

struct cudaLaunchParams {
  void *func;
  dim3 gridDim, blockDim;
  void **args;
  size_t sharedMem;
  cudaStream_t stream;
};
extern "C" cudaError_t cudaLaunchCooperativeKernelMultiDevice(cudaLaunchParams *launchParamsList,
                                                              unsigned int numDevices,
                                                              unsigned int flags);

#endif
