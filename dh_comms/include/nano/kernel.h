/*
 * nano/kernel.h: CPU kernels for nanoprobe.
 *
 * A C (or C++) function marked NANO_KERNEL is a kernel to the pass, exactly
 * like an amdgpu_kernel or a CUDA __global__ function: compiled with
 * -fpass-plugin=libNanoPass.so it gets a twin, NANO_TWIN(name), with one more
 * trailing argument (the dh_comms descriptor, see nano/dh_comms.h) whose
 * loads, stores and atomics are recorded. The original is unchanged.
 *
 * Inside a kernel, nano_thread_idx(), nano_block_idx(), nano_block_dim() and
 * nano_grid_dim() give the position in the grid; NANO_LAUNCH runs a call once
 * per thread of a grid, sequentially, in the calling OS thread:
 *
 *   NANO_KERNEL void vadd(float *c, const float *a, const float *b) {
 *     unsigned i = nano_block_idx().x * nano_block_dim().x + nano_thread_idx().x;
 *     c[i] = a[i] + b[i];
 *   }
 *   NANO_LAUNCH(nano_dim(4, 1, 1), nano_dim(64, 1, 1), vadd(c, a, b));
 *
 * To call a twin from another translation unit, declare it:
 *   NANO_TWIN_DECL(void, vadd, float *c, const float *a, const float *b);
 *   NANO_LAUNCH(grid, block, NANO_TWIN(vadd)(c, a, b, nano_dh_buffer_desc(buf)));
 * (extern "C" names only; a C++ kernel's twin has a mangled name, see
 * dh_comms/README.md).
 */
#ifndef NANO_KERNEL_H
#define NANO_KERNEL_H

#include <stdint.h>

#ifdef __cplusplus
#define NANO_THREAD_LOCAL thread_local
extern "C" {
#else
#define NANO_THREAD_LOCAL _Thread_local
#endif

/* The annotation the pass looks for (clang); noinline keeps the kernel a
 * function. Other compilers get a plain function without a twin. */
#if defined(__clang__)
#define NANO_KERNEL __attribute__((annotate("nano_kernel"), noinline, used))
#else
#define NANO_KERNEL __attribute__((noinline, used))
#endif
#define NANO_TWIN(name) __nano_twin_##name
#define NANO_TWIN_DECL(ret, name, ...) ret NANO_TWIN(name)(__VA_ARGS__, void *nano_dh_desc)

typedef struct nano_dim3 {
  uint32_t x, y, z;
} nano_dim3;

static inline nano_dim3 nano_dim(uint32_t x, uint32_t y, uint32_t z) {
  nano_dim3 d = {x, y, z};
  return d;
}

/* The position of the running CPU kernel thread, read by the accessors and by
 * the device runtime (it writes block ids and dimensions into records). One
 * weak definition per program. */
struct nano_kernel_ctx {
  uint32_t thread[3], block[3], block_dim[3], grid_dim[3];
};
__attribute__((weak)) NANO_THREAD_LOCAL struct nano_kernel_ctx __nano_kctx;

static inline nano_dim3 nano_thread_idx(void) {
  return nano_dim(__nano_kctx.thread[0], __nano_kctx.thread[1], __nano_kctx.thread[2]);
}
static inline nano_dim3 nano_block_idx(void) {
  return nano_dim(__nano_kctx.block[0], __nano_kctx.block[1], __nano_kctx.block[2]);
}
static inline nano_dim3 nano_block_dim(void) {
  return nano_dim(__nano_kctx.block_dim[0], __nano_kctx.block_dim[1], __nano_kctx.block_dim[2]);
}
static inline nano_dim3 nano_grid_dim(void) {
  return nano_dim(__nano_kctx.grid_dim[0], __nano_kctx.grid_dim[1], __nano_kctx.grid_dim[2]);
}

/* Sets the position of the calling thread (used by NANO_LAUNCH). */
static inline void nano_kernel_set(nano_dim3 grid, nano_dim3 block, nano_dim3 b, nano_dim3 t) {
  __nano_kctx.grid_dim[0] = grid.x, __nano_kctx.grid_dim[1] = grid.y,
  __nano_kctx.grid_dim[2] = grid.z;
  __nano_kctx.block_dim[0] = block.x, __nano_kctx.block_dim[1] = block.y,
  __nano_kctx.block_dim[2] = block.z;
  __nano_kctx.block[0] = b.x, __nano_kctx.block[1] = b.y, __nano_kctx.block[2] = b.z;
  __nano_kctx.thread[0] = t.x, __nano_kctx.thread[1] = t.y, __nano_kctx.thread[2] = t.z;
}

/* Runs `call` once per thread of grid x block: blocks in order, and threads in
 * a block in linear order (x fastest), like a wave of one lane at a time. */
#define NANO_LAUNCH(grid, block, call)                                                         \
  do {                                                                                         \
    nano_dim3 nano_g_ = (grid), nano_b_ = (block);                                             \
    for (uint32_t nano_bz = 0; nano_bz < nano_g_.z; nano_bz++)                                 \
      for (uint32_t nano_by = 0; nano_by < nano_g_.y; nano_by++)                               \
        for (uint32_t nano_bx = 0; nano_bx < nano_g_.x; nano_bx++)                             \
          for (uint32_t nano_tz = 0; nano_tz < nano_b_.z; nano_tz++)                           \
            for (uint32_t nano_ty = 0; nano_ty < nano_b_.y; nano_ty++)                         \
              for (uint32_t nano_tx = 0; nano_tx < nano_b_.x; nano_tx++) {                     \
                nano_kernel_set(nano_g_, nano_b_, nano_dim(nano_bx, nano_by, nano_bz),        \
                                nano_dim(nano_tx, nano_ty, nano_tz));                         \
                call;                                                                          \
              }                                                                                \
  } while (0)

#ifdef __cplusplus
}
#endif
#endif
