// A twin on a stream whose work the stand-in device holds (FAKE_HOLD_STREAM)
// and one on another stream that runs: the second dispatch must end, and be
// reported, while the first still waits (the runtime waits for each stream's
// twins apart; one waiter in launch order would report neither until the
// program waits for the whole device) (tests/device/gpu_launch).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void other(int *p) { *p = 1; }

#define N 1000
#define POLLS 1000    // for other's report, 10 ms apart: 10 s at most
#define POLL_US 10000
static float x[N], y[N];
static int flag;

// Whether NANO_ANALYZER_OUTPUT holds other's dispatch report yet.
static bool other_reported() {
  const char *path = std::getenv("NANO_ANALYZER_OUTPUT");
  FILE *f = path ? std::fopen(path, "r") : nullptr;
  if (!f)
    return false;
  char line[4096];
  bool seen = false;
  while (std::fgets(line, sizeof line, f))
    seen |= std::strstr(line, "\"analyzer\":\"dispatch\"") && std::strstr(line, "_Z5otherPi");
  std::fclose(f);
  return seen;
}

int main() {
  cudaStream_t held = (cudaStream_t)0x10000, running = (cudaStream_t)0x20000;
  for (int i = 0; i < N; i++) x[i] = 1.0f;
  axpy<<<4, 256, 0, held>>>(2.0f, x, y, N);
  other<<<1, 1, 0, running>>>(&flag);
  cudaStreamSynchronize(running);
  bool early = false;
  for (int i = 0; i < POLLS && !(early = other_reported()); i++)
    usleep(POLL_US);
  std::printf("other reported while axpy is held: %s\n", early ? "yes" : "no");
  cudaDeviceSynchronize();
  bool right = flag == 1;
  for (int i = 0; i < N; i++)
    right &= y[i] == 2.0f;
  std::printf("held %s\n", right ? "right" : "wrong");
  return !right;
}
