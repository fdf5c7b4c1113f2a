/*
 * fake_cudart.c: the CUDA runtime entry points a clang host object calls (and
 * HIP's, which have the same shapes), for testing the plugin's launch routing
 * on a machine without a GPU. It records what is registered and prints each
 * launch: the device name of the kernel launched, grid, block, shared bytes
 * and stream.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct dim3 {
  unsigned x, y, z;
};

#define FAKE_MAX_KERNELS 64
static struct {
  const void *host;
  const char *name;
} fake_kernels[FAKE_MAX_KERNELS];
static int fake_nkernels;
static void *fake_module = &fake_nkernels;
static struct dim3 fake_grid, fake_block;
static size_t fake_shared;
static void *fake_stream;

void **__cudaRegisterFatBinary(void *fatbin) {
  (void)fatbin;
  return &fake_module;
}
void __cudaRegisterFatBinaryEnd(void **module) { (void)module; }
void __cudaUnregisterFatBinary(void **module) { (void)module; }

void __cudaRegisterFunction(void **module, const char *host, char *device_fun,
                            const char *device_name, int thread_limit, void *tid, void *bid,
                            void *bdim, void *gdim, int *wsize) {
  (void)device_fun, (void)thread_limit, (void)tid, (void)bid, (void)bdim, (void)gdim, (void)wsize;
  if (module != &fake_module || fake_nkernels == FAKE_MAX_KERNELS) {
    printf("register: bad module or too many kernels\n");
    return;
  }
  fake_kernels[fake_nkernels].host = host;
  fake_kernels[fake_nkernels++].name = device_name;
  printf("register %s\n", device_name);
}

unsigned __cudaPushCallConfiguration(struct dim3 grid, struct dim3 block, size_t shared,
                                     void *stream) {
  fake_grid = grid, fake_block = block, fake_shared = shared, fake_stream = stream;
  return 0;
}

int __cudaPopCallConfiguration(struct dim3 *grid, struct dim3 *block, size_t *shared,
                               void **stream) {
  *grid = fake_grid, *block = fake_block, *shared = fake_shared, *stream = fake_stream;
  return 0;
}

/* cudaErrorInvalidDeviceFunction for a handle nobody registered. */
int cudaLaunchKernel(const void *func, struct dim3 grid, struct dim3 block, void **args,
                     size_t shared, void *stream) {
  for (int i = 0; i < fake_nkernels; i++)
    if (fake_kernels[i].host == func) {
      printf("launch %s grid %u %u %u block %u %u %u shared %zu stream %p first-arg %p\n",
             fake_kernels[i].name, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared,
             stream, args ? args[0] : NULL);
      return 0;
    }
  printf("launch of an unregistered handle %p\n", func);
  return 98;
}

/* HIP's names for the same entry points. */
void **__hipRegisterFatBinary(void *fatbin) { return __cudaRegisterFatBinary(fatbin); }
void __hipUnregisterFatBinary(void **module) { __cudaUnregisterFatBinary(module); }
void __hipRegisterFunction(void **module, const char *host, char *device_fun,
                           const char *device_name, int thread_limit, void *tid, void *bid,
                           void *bdim, void *gdim, int *wsize) {
  __cudaRegisterFunction(module, host, device_fun, device_name, thread_limit, tid, bid, bdim,
                         gdim, wsize);
}
unsigned __hipPushCallConfiguration(struct dim3 grid, struct dim3 block, size_t shared,
                                    void *stream) {
  return __cudaPushCallConfiguration(grid, block, shared, stream);
}
int __hipPopCallConfiguration(struct dim3 *grid, struct dim3 *block, size_t *shared,
                              void **stream) {
  return __cudaPopCallConfiguration(grid, block, shared, stream);
}
int hipLaunchKernel(const void *func, struct dim3 grid, struct dim3 block, void **args,
                    size_t shared, void *stream) {
  return cudaLaunchKernel(func, grid, block, args, shared, stream);
}
