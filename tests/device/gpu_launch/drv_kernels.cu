// The kernels of drv_app.c, built as a cubin without the plugin (the
// program's) and with it (the kernel cache's, LONE_TAKES_TWO: there `lone`
// has another parameter list, so its twin must not replace the program's).
// bump reads and writes module variables: a replacement from the cache must
// see the program's (NO_MODULE_VARIABLES: a cache of the others alone, whose
// kernels need no variables copied; WIDE_BIAS: a cache whose bias has
// another size, which no replacement may use).
__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void other(int *p) { *p = 1; }
#ifdef LONE_TAKES_TWO
extern "C" __global__ void lone(int *p, int v) { *p = v; }
#else
extern "C" __global__ void lone(int *p) { *p = 1; }
#endif
#ifndef NO_MODULE_VARIABLES
#ifdef WIDE_BIAS
__constant__ long long bias; // a cache whose variable differs from the program's
#else
__constant__ int bias;
#endif
__device__ int counter;
__global__ void bump(int *p) {
  *p = bias;
  atomicAdd(&counter, 1);
}
#endif
