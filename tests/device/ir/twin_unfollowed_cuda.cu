// Calls a twin makes that leave the twin's world are said at compile time
// (clang-22, sm_90, -fgpu-rdc): a device function of another file (its
// accesses are not recorded), once per function; a kernel launched on the
// device through a kernel pointer (dynamic parallelism starts the
// original), at the program's line whether the toolkit's cudaLaunchDevice
// wrapper is inlined (-O2) or cloned (-O0, the child a parameter of the
// wrapper's clone). A kernel of this file launched on the device starts its
// twin (twin_device_launch_cuda.cu): not said. The statistics count them.
// REQUIRES: cuda
// RUN: rm -rf %t && mkdir -p %t
// RUN: %clang_nano -x cuda -fgpu-rdc --cuda-path=/usr/local/cuda --cuda-gpu-arch=sm_90 --cuda-device-only -Wno-unknown-cuda-version -O2 -g -S %s -o %t/o2.ptx -save-stats=obj 2> %t/o2.err
// RUN: FileCheck %s --check-prefix=SAID < %t/o2.err
// RUN: FileCheck %s --check-prefix=STATS < %t/twin_unfollowed_cuda.stats
// RUN: %clang_nano -x cuda -fgpu-rdc --cuda-path=/usr/local/cuda --cuda-gpu-arch=sm_90 --cuda-device-only -Wno-unknown-cuda-version -O0 -g -S %s -o %t/o0.ptx 2> %t/o0.err
// RUN: FileCheck %s --check-prefix=SAID < %t/o0.err
// RUN: /usr/local/cuda/bin/ptxas -arch=sm_90 -c %t/o0.ptx -o %t/o0.cubin

__device__ int helper(int *p); // in another file
__device__ int other_file(int *p);

__global__ void child(int *p) { p[threadIdx.x] += 1; }

__global__ void parent(int *p, void (*pick)(int *)) {
  p[0] = helper(p) + helper(p + 1) + other_file(p);
  child<<<1, 32>>>(p);
  pick<<<1, 32>>>(p);
}

__global__ void alone(int *p) { p[1] = 2; }

// SAID-DAG: twin_unfollowed_cuda.cu:[[#@LINE-7]]: _Z6parentPiPFvS_E calls _Z6helperPi, a device function of another file (-fgpu-rdc): its accesses are not recorded in the twin
// SAID-DAG: twin_unfollowed_cuda.cu:[[#@LINE-8]]: _Z6parentPiPFvS_E calls _Z10other_filePi, a device function of another file (-fgpu-rdc)
// SAID-DAG: twin_unfollowed_cuda.cu:[[#@LINE-7]]: the kernel (a kernel pointer) that the twin of _Z6parentPiPFvS_E launches on the device runs uninstrumented (dynamic parallelism starts the original here: it is not known at compile time)
// SAID-NOT: _Z6helperPi
// SAID-NOT: _Z5childPi
// SAID-NOT: alone
// SAID-NOT: vprintf
// STATS-DAG: "nano-device.NumDeviceLaunchesRouted": 1
// STATS-DAG: "nano-device.NumDeviceLaunchesNotRouted": 1
// STATS-DAG: "nano-device.NumExternalCallees": 2
