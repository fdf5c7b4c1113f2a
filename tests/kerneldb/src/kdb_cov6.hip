// Built by clang-22 with --offload-compress (code object v6, compressed
// .hip_fatbin) without HIP headers: the launch API is declared by hand.
#define __global__ __attribute__((global))
typedef struct { unsigned x, y, z; } kdb_dim3;
extern "C" int hipLaunchKernel(const void*, kdb_dim3, kdb_dim3, void**, unsigned long, void*);
extern "C" __global__ void cov6_store(int* p) {
#ifdef __HIP_DEVICE_COMPILE__
  p[__builtin_amdgcn_workitem_id_x()] = 1;
#endif
}
