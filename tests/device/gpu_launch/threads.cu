// Four host threads, each on its own stream, launch axpy ten times and then
// wait for their stream: the runtime's state (devices, pools, flights, the
// finisher) is shared by all of them (tests/device/gpu_launch). With
// THREADS_SYNC=1 each waits for the device after every launch, so that a
// small pool's buffers are used again and again.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>

__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

#define THREADS 4
#define LAUNCHES 10
#define N 1000
static float x[THREADS][N], y[THREADS][N];

static void *work(void *arg) {
  long t = (long)arg;
  cudaStream_t s = (cudaStream_t)(0x10000 * (t + 1));
  const char *sync = std::getenv("THREADS_SYNC");
  for (int k = 0; k < LAUNCHES; k++) {
    axpy<<<4, 256, 0, s>>>(1.0f, x[t], y[t], N);
    if (sync && !std::strcmp(sync, "1"))
      cudaDeviceSynchronize();
  }
  return nullptr;
}

int main() {
  for (int t = 0; t < THREADS; t++)
    for (int i = 0; i < N; i++)
      x[t][i] = (float)i, y[t][i] = 0.0f;
  pthread_t th[THREADS];
  for (long t = 0; t < THREADS; t++)
    pthread_create(&th[t], nullptr, work, (void *)t);
  for (int t = 0; t < THREADS; t++)
    pthread_join(th[t], nullptr);
  cudaDeviceSynchronize();
  int wrong = 0;
  for (int t = 0; t < THREADS; t++)
    for (int i = 0; i < N; i++)
      wrong += y[t][i] != (float)(LAUNCHES * i);
  std::printf("threads %s\n", wrong ? "wrong" : "right");
  return 0;
}
