// A kernel that a twin launches on the device (CUDA dynamic parallelism;
// clang-22, sm_90, -fgpu-rdc) starts its own twin: the parameter buffer
// grows by a pointer after the child's parameters (12 bytes: 24, the
// pointer at 16, where the twin's extra parameter lies), which gets the
// launching twin's descriptor with bit 0 set, and the launch names the
// child's twin. The child's twin clears the bit for its accesses and, where
// it was set, times no blocks (its block ids would land in the launching
// dispatch's table). At -O0 the toolkit's wrappers (cloned) get the same
// arguments. Where the twin's launch fails, the original child is launched
// as the program did, with a buffer of its own size holding the same
// arguments, and its result is the program's. A kernel of another file
// launched on the device has no twin here: its launch stays, said. ptxas
// compiles both.
// REQUIRES: cuda
// RUN: rm -rf %t && mkdir -p %t
// RUN: %clang_nano -x cuda -fgpu-rdc --cuda-path=/usr/local/cuda --cuda-gpu-arch=sm_90 --cuda-device-only -Wno-unknown-cuda-version -O2 -g -emit-llvm -S %s -o %t/o2.ll -save-stats=obj 2> %t/o2.err
// RUN: FileCheck %s --check-prefix=O2 < %t/o2.ll
// RUN: FileCheck %s --check-prefix=CHILD < %t/o2.ll
// RUN: FileCheck %s --check-prefix=SAID < %t/o2.err
// RUN: FileCheck %s --check-prefix=STATS < %t/twin_device_launch_cuda.stats
// RUN: %clang_nano -x cuda -fgpu-rdc --cuda-path=/usr/local/cuda --cuda-gpu-arch=sm_90 --cuda-device-only -Wno-unknown-cuda-version -O0 -g -emit-llvm -S %s -o %t/o0.ll 2> %t/o0.err
// RUN: FileCheck %s --check-prefix=O0 < %t/o0.ll
// RUN: FileCheck %s --check-prefix=SAID < %t/o0.err
// RUN: %clang_nano -x cuda -fgpu-rdc --cuda-path=/usr/local/cuda --cuda-gpu-arch=sm_90 --cuda-device-only -Wno-unknown-cuda-version -O2 -S %s -o %t/o2.ptx
// RUN: /usr/local/cuda/bin/ptxas -arch=sm_90 -c %t/o2.ptx -o %t/o2.cubin
// RUN: %clang_nano -x cuda -fgpu-rdc --cuda-path=/usr/local/cuda --cuda-gpu-arch=sm_90 --cuda-device-only -Wno-unknown-cuda-version -O0 -S %s -o %t/o0.ptx
// RUN: /usr/local/cuda/bin/ptxas -arch=sm_90 -c %t/o0.ptx -o %t/o0.cubin

extern __global__ void far(int *q); // in another file

__global__ void child(float *p, int n) {
  int i = threadIdx.x;
  if (i < n)
    p[i] = 1.0f;
}

__global__ void parent(float *p, int n, int *q) {
  p[threadIdx.x] = 0;
  if (threadIdx.x == 0) {
    child<<<1, 32>>>(p, n);
    far<<<1, 1>>>(q);
  }
}

// O2-LABEL: define {{.*}}@_Z6parentPfiPi(
// O2: call {{.*}}@__cudaCDP2LaunchDevice(ptr {{.*}}@_Z5childPfi,
// O2-LABEL: define {{.*}}@__nano_twin__Z6parentPfiPiPv(
// O2: %[[BUF:[0-9]+]] = {{.*}}call {{.*}}ptr @__cudaCDP2GetParameterBuffer(i64 noundef 64, i64 noundef 24)
// O2: %[[D:[0-9]+]] = ptrtoint ptr addrspace(1) %{{[0-9]+}} to i64
// O2-NEXT: %[[T:[0-9]+]] = or i64 %[[D]], 1
// O2-NEXT: %[[AT:[0-9]+]] = getelementptr inbounds i8, ptr %[[BUF]], i64 16
// O2-NEXT: store i64 %[[T]], ptr %[[AT]], align 8
// O2-NEXT: %[[RC:[0-9]+]] = {{.*}}call {{.*}}@__cudaCDP2LaunchDevice(ptr {{.*}}@__nano_twin__Z5childPfiPv, ptr {{.*}}%[[BUF]],
// O2-NEXT: %[[FAILED:[0-9]+]] = icmp ne i32 %[[RC]], 0
// O2-NEXT: br i1 %[[FAILED]], label %[[FB:[0-9]+]], label %{{[0-9]+}}
// O2: [[FB]]:
// O2-NEXT: %[[BUF2:[0-9]+]] = {{.*}}call {{.*}}ptr @__cudaCDP2GetParameterBuffer(i64 noundef 64, i64 noundef 12)
// O2: call void @llvm.memcpy.p0.p0.i64(ptr align 1 %[[BUF2]], ptr align 1 %[[BUF]], i64 12, i1 false)
// O2-NEXT: %[[AGAIN:[0-9]+]] = {{.*}}call {{.*}}@__cudaCDP2LaunchDevice(ptr {{.*}}@_Z5childPfi, ptr {{.*}}%[[BUF2]],
// O2: phi i32 [ %[[RC]], %{{[0-9]+}} ], [ %[[RC]], %[[FB]] ], [ %[[AGAIN]], %{{[0-9]+}} ]
// O2: call {{.*}}ptr @__cudaCDP2GetParameterBuffer(i64 noundef 64, i64 noundef 8)
// O2: call {{.*}}@__cudaCDP2LaunchDevice(ptr {{.*}}@_Z3farPi,

// CHILD-LABEL: define {{.*}}@__nano_twin__Z5childPfiPv(
// CHILD-SAME: ptr addrspace(1) %[[ARG:[0-9]+]])
// CHILD: %[[BITS:[0-9]+]] = ptrtoint ptr addrspace(1) %[[ARG]] to i64
// CHILD-NEXT: %[[CLEAR:[0-9]+]] = and i64 %[[BITS]], -2
// CHILD-NEXT: %[[DESC:[0-9]+]] = inttoptr i64 %[[CLEAR]] to ptr addrspace(1)
// CHILD-NEXT: %[[TAG:[0-9]+]] = and i64 %[[BITS]], 1
// CHILD-NEXT: %[[IS:[0-9]+]] = icmp ne i64 %[[TAG]], 0
// CHILD-NEXT: %[[TABLE:[0-9]+]] = select i1 %[[IS]], ptr addrspace(1) null, ptr addrspace(1) %[[DESC]]
// CHILD-NEXT: call void @__nano_dh_block_enter(ptr addrspace(1) %[[TABLE]])
// CHILD-NOT: %[[ARG]]
// CHILD: call void @__nano_dh_access(ptr addrspace(1) %[[DESC]],
// CHILD-NOT: %[[ARG]]
// CHILD: call void @__nano_dh_block_leave(ptr addrspace(1) %[[TABLE]])
// CHILD-NOT: %[[ARG]]
// CHILD: ret void

// O0-LABEL: define {{.*}}@__nano_twin__Z6parentPfiPiPv(
// O0: %[[BUF:[0-9]+]] = call {{.*}}ptr @_ZL22cudaGetParameterBuffermm.nano_twin(i64 noundef 64, i64 noundef 24, ptr addrspace(1)
// O0: store i64 %{{[0-9]+}}, ptr %{{[0-9]+}}, align 8
// O0-NEXT: call {{.*}}@_ZL16cudaLaunchDevicePvS_4dim3S0_jP11CUstream_st.nano_twin(ptr {{.*}}@__nano_twin__Z5childPfiPv, ptr {{.*}}%[[BUF]],
// O0: call {{.*}}ptr @_ZL22cudaGetParameterBuffermm.nano_twin(i64 noundef 64, i64 noundef 8, ptr addrspace(1)
// O0: call {{.*}}@_ZL16cudaLaunchDevicePvS_4dim3S0_jP11CUstream_st.nano_twin(ptr {{.*}}@_Z3farPi,

// SAID: twin_device_launch_cuda.cu:[[#@LINE-46]]: the kernel _Z3farPi that the twin of _Z6parentPfiPi launches on the device runs uninstrumented (dynamic parallelism starts the original here: no twin of it in this file)
// SAID-NOT: _Z5childPfi
// STATS-DAG: "nano-device.NumDeviceLaunchesRouted": 1
// STATS-DAG: "nano-device.NumDeviceLaunchesNotRouted": 1
