// A twin whose end cannot be confirmed (the stand-in's FAKE_FAIL_WAIT=1 fails
// the waiter's wait, and the fallback wait on the program's stream fails
// too): its buffer stays out of the pool until the device is done with it
// (tests/device/gpu_launch). With one buffer in the pool, the second launch,
// made while the first twin has not run yet, finds none and runs plain; the
// third, after the program's synchronization ran the first twin, gets the
// buffer back.
#include <cstdio>
#include <unistd.h>

__global__ void other(int *p) { *p = 1; }

int main() {
  static int p, q, r;
  int *pp = &p, *qp = &q, *rp = &r;
  cudaStream_t s = (cudaStream_t)0x3000;
  other<<<1, 32, 0, s>>>(pp);
  usleep(300000); /* the waiter gives up on the first twin's end meanwhile */
  other<<<1, 32, 0, s>>>(qp);
  cudaDeviceSynchronize();
  other<<<1, 32, 0, s>>>(rp);
  cudaDeviceSynchronize();
  std::printf("unconfirmed p %d q %d r %d\n", p, q, r);
  return 0;
}
