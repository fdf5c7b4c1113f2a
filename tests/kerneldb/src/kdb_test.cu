// CUDA kernels with a known parameter layout for the kerneldb cubin test.
struct Pair { double d; char c; };  // 16 bytes, align 8

extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void mixed(Pair p, short h, long long* out) {
  __shared__ long long tile[128];
  tile[threadIdx.x] = (long long)(p.d + p.c + h);
  __syncthreads();
  out[threadIdx.x] = tile[127 - threadIdx.x];
}
