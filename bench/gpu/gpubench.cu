// gpubench.cu: the GPU benchmarks' program (bench/gpu/run.sh runs it plain,
// traced and instrumented, and divides). Each mode prints one line,
// "<mode> <figure> <unit>":
//   tiny N       N launches of a one-warp kernel, each waited for: us per launch
//   replay N     that kernel captured into a graph (after one launch outside
//                it, which instrumented captures need), the graph launched N
//                times, each waited for: us per replay
//   membound R   one grid-stride triad over 2^26 floats, R passes: ms (CUDA events)
//   membound2 R  two such triads at once on two streams (two dispatches to
//                drain together): ms from before the first to after both
//   api N        N cudaStreamQuery calls on an idle stream: ns per call
//   launch N     N launches of an empty kernel, then one wait: us per launch
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "common.h"

__global__ void tiny(float *p) { p[threadIdx.x] += 1.0f; }
__global__ void empty() {}
__global__ void triad(float *a, const float *b, const float *c, long n, int passes) {
  for (int r = 0; r < passes; r++)
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x)
      a[i] = b[i] + 0.5f * c[i];
}

static double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: gpubench tiny|replay|membound|membound2|api|launch N\n");
    return 2;
  }
  const char *mode = argv[1];
  long n = std::atol(argv[2]);
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  if (!std::strcmp(mode, "tiny")) {
    float *p;
    CHECK(cudaMalloc(&p, 32 * sizeof(float)));
    tiny<<<1, 32, 0, s>>>(p); // warm-up: module load, first-use costs
    CHECK(cudaStreamSynchronize(s));
    double t0 = seconds();
    for (long i = 0; i < n; i++) {
      tiny<<<1, 32, 0, s>>>(p);
      CHECK(cudaStreamSynchronize(s));
    }
    std::printf("tiny %.3f us\n", (seconds() - t0) / n * 1e6);
  } else if (!std::strcmp(mode, "replay")) {
    float *p;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CHECK(cudaMalloc(&p, 32 * sizeof(float)));
    tiny<<<1, 32, 0, s>>>(p); // outside a graph first: a twin is captured only after
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    tiny<<<1, 32, 0, s>>>(p);
    CHECK(cudaStreamEndCapture(s, &g));
    CHECK(cudaGraphInstantiate(&ge, g, 0));
    CHECK(cudaGraphLaunch(ge, s)); // warm-up: the executable's upload
    CHECK(cudaStreamSynchronize(s));
    double t0 = seconds();
    for (long i = 0; i < n; i++) {
      CHECK(cudaGraphLaunch(ge, s));
      CHECK(cudaStreamSynchronize(s));
    }
    std::printf("replay %.3f us\n", (seconds() - t0) / n * 1e6);
  } else if (!std::strcmp(mode, "membound")) {
    const long len = 1L << 26;
    float *a, *b, *c;
    CHECK(cudaMalloc(&a, len * sizeof(float)));
    CHECK(cudaMalloc(&b, len * sizeof(float)));
    CHECK(cudaMalloc(&c, len * sizeof(float)));
    CHECK(cudaMemsetAsync(b, 0, len * sizeof(float), s));
    CHECK(cudaMemsetAsync(c, 0, len * sizeof(float), s));
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    CHECK(cudaEventRecord(e0, s));
    triad<<<1024, 256, 0, s>>>(a, b, c, len, (int)n);
    CHECK(cudaEventRecord(e1, s));
    CHECK(cudaStreamSynchronize(s));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    std::printf("membound %.3f ms\n", ms);
  } else if (!std::strcmp(mode, "membound2")) {
    const long len = 1L << 26;
    float *a[2], *b, *c;
    cudaStream_t s2;
    CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CHECK(cudaMalloc(&a[0], len * sizeof(float)));
    CHECK(cudaMalloc(&a[1], len * sizeof(float)));
    CHECK(cudaMalloc(&b, len * sizeof(float)));
    CHECK(cudaMalloc(&c, len * sizeof(float)));
    CHECK(cudaMemsetAsync(b, 0, len * sizeof(float), s));
    CHECK(cudaMemsetAsync(c, 0, len * sizeof(float), s));
    cudaEvent_t e0, e1, e2;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    CHECK(cudaEventCreate(&e2));
    CHECK(cudaEventRecord(e0, s));
    CHECK(cudaStreamWaitEvent(s2, e0, 0));
    triad<<<1024, 256, 0, s>>>(a[0], b, c, len, (int)n);
    triad<<<1024, 256, 0, s2>>>(a[1], b, c, len, (int)n);
    CHECK(cudaEventRecord(e2, s2));
    CHECK(cudaStreamWaitEvent(s, e2, 0));
    CHECK(cudaEventRecord(e1, s));
    CHECK(cudaStreamSynchronize(s));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    std::printf("membound2 %.3f ms\n", ms);
  } else if (!std::strcmp(mode, "api")) {
    (void)cudaStreamQuery(s);
    double t0 = seconds();
    for (long i = 0; i < n; i++)
      if (cudaStreamQuery(s) != cudaSuccess)
        return 3;
    std::printf("api %.1f ns\n", (seconds() - t0) / n * 1e9);
  } else if (!std::strcmp(mode, "launch")) {
    empty<<<1, 32, 0, s>>>();
    CHECK(cudaStreamSynchronize(s));
    double t0 = seconds();
    for (long i = 0; i < n; i++)
      empty<<<1, 32, 0, s>>>();
    CHECK(cudaStreamSynchronize(s));
    std::printf("launch %.3f us\n", (seconds() - t0) / n * 1e6);
  } else {
    std::fprintf(stderr, "gpubench: unknown mode %s\n", mode);
    return 2;
  }
  return 0;
}
