// A CUDA program whose launches the plugin routes (tests/device/gpu_launch):
// axpy through <<<>>>, other through cudaLaunchKernel of a kernel pointer
// held in a variable (the runtime looks its twin up), once more by name into
// a stream being captured into a graph with a copy after it, which it
// launches three times; then
// it waits for the device, copies the result and checks it. APP_ORDER:
// "capture-first", only the captured launch (the first of the process);
// "during-capture", axpy's and other's launches on their stream while the
// capture (global mode) is open, before the captured launch. APP_REPEAT=N:
// other's uncaptured launch N more times, each waited for (and a pause).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

/* APP_REPEAT's pause after each launch. */
#define REPEAT_PAUSE_US 2000

__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void other(int *p) { *p = 1; }

static float x[1000], y[1000], z[1000];
static int p, q, r;

int main() {
  for (int i = 0; i < 1000; i++)
    x[i] = (float)i, y[i] = 1.0f;
  cudaStream_t s = (cudaStream_t)0x3000;
  int *pp = &p, *qp = &q;
  void *args[] = {&pp}, *captured_args[] = {&qp};
  void (*volatile pick)(int *) = other;
  const char *order = std::getenv("APP_ORDER");
  order = order ? order : "";
  int rc = 0;
  auto uncaptured = [&] {
    axpy<<<dim3(4, 1, 1), dim3(256, 1, 1), 16, s>>>(2.0f, x, y, 1000);
    rc = cudaLaunchKernel((const void *)pick, dim3(1, 2), dim3(32), args, 0, s);
  };
  if (!*order)
    uncaptured();
  /* APP_REPEAT=N: other's launch N more times, each waited for, and a
   * moment given to the tool to finish its dispatch */
  const char *repeat = std::getenv("APP_REPEAT");
  for (int i = 0, n = repeat ? std::atoi(repeat) : 0; i < n && !rc; i++) {
    rc = cudaLaunchKernel((const void *)pick, dim3(1, 2), dim3(32), args, 0, s);
    cudaStreamSynchronize(s);
    usleep(REPEAT_PAUSE_US);
  }
  cudaStream_t g;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  int rc2 = cudaStreamCreate(&g);
  if (!rc2)
    rc2 = cudaStreamBeginCapture(g, cudaStreamCaptureModeGlobal);
  if (!std::strcmp(order, "during-capture"))
    uncaptured();
  if (!rc2)
    rc2 = cudaLaunchKernel((const void *)other, dim3(1), dim3(32), captured_args, 0, g);
  if (!rc2)
    rc2 = cudaMemcpyAsync(&r, &q, sizeof q, cudaMemcpyDeviceToHost, g);
  if (!rc2)
    rc2 = cudaStreamEndCapture(g, &graph);
  if (!rc2)
    rc2 = cudaGraphInstantiate(&exec, graph, 0);
  for (int i = 0; i < 3 && !rc2; i++)
    rc2 = cudaGraphLaunch(exec, g);
  cudaDeviceSynchronize();
  int device = -1; /* a call the tracer leaves out, with a driver call inside */
  if (cudaGetDevice(&device) != 0 || device != 0)
    rc = -1;
  cudaMemcpy(z, y, sizeof y, cudaMemcpyDeviceToHost);
  int wrong = 0;
  for (int i = 0; i < 1000; i++)
    wrong += y[i] != 2.0f * i + 1.0f || z[i] != y[i];
  std::printf("done %d %d y %s p %d q %d\n", rc, rc2, wrong ? "wrong" : "right", p, q);
  return 0;
}
