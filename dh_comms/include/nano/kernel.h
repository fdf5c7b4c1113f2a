/*
 * nano/kernel.h: CPU kernels for nanoprobe.
 *
 * A C (or C++) function marked NANO_KERNEL is a kernel to the pass, exactly
 * like an amdgpu_kernel or a CUDA __global__ function: compiled with
 * -fpass-plugin=libNanoPass.so it gets an instrumented twin whose loads,
 * stores and atomics are recorded. The original is unchanged.
 *
 *   NANO_KERNEL void vadd(float *c, const float *a, const float *b) {
 *     unsigned i = nano_block_idx().x * nano_block_dim().x + nano_thread_idx().x;
 *     c[i] = a[i] + b[i];
 *   }
 *   NANO_LAUNCH(nano_dim(4, 1, 1), nano_dim(64, 1, 1), vadd(c, a, b));
 *
 * NANO_LAUNCH(grid, block, kernel(args...)) runs the kernel once per thread
 * of the grid. Where the launching code was built with the plugin and the
 * runtime (libnano_rpd.so) is loaded, the runtime runs it: blocks in parallel
 * on worker threads, and, with NANO_INSTRUMENT=1 for a selected dispatch,
 * the twin instead of the original, as virtual waves (NANO_CPU_WAVE lanes)
 * whose accesses at one site form one record, as a GPU wave's do. Otherwise
 * (no plugin, no runtime) the calling thread runs every thread in order:
 * blocks in order, threads of a block in linear order (x fastest). The call
 * must be a direct call of a NANO_KERNEL function; its arguments are
 * evaluated once, as a GPU launch's are.
 *
 * NANO_LAUNCH_SHARED(grid, block, bytes, call) also gives every block
 * `bytes` of shared memory (nano_shared()), private to the block and zeroed
 * at its start, as a GPU's dynamic shared memory; accesses to it count as LDS/shared accesses (bank
 * conflicts in MemoryAnalysis). There is no barrier: a block's threads do not
 * run in a defined order relative to each other.
 *
 * Inside a kernel, nano_thread_idx(), nano_block_idx(), nano_block_dim(),
 * nano_grid_dim() and nano_shared() give the position in the grid.
 */
#ifndef NANO_KERNEL_H
#define NANO_KERNEL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nano/dh_format.h"

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

typedef struct nano_dim3 {
  uint32_t x, y, z;
} nano_dim3;

static inline nano_dim3 nano_dim(uint32_t x, uint32_t y, uint32_t z) {
  nano_dim3 d = {x, y, z};
  return d;
}

/* The position of a CPU kernel thread. The running thread's is reached
 * through a thread-local pointer, __nano_kctx, that the launcher sets (one
 * store per kernel thread: copying the 64 bytes in, then reading a field
 * back at once, stalled every thread on some CPUs) and the device runtime
 * restores after each recorded access of a virtual wave. Layout:
 * NANO_DH_KCTX_SIZE bytes (nano/dh_format.h). */
struct nano_kernel_ctx {
  uint32_t thread[3], block[3], block_dim[3], grid_dim[3];
  void *shared;          /* the block's shared memory, or NULL */
  uint32_t shared_bytes; /* its size                           */
  uint32_t depth;        /* calls the twin is in (virtual waves: __nano_dh_enter) */
};
#ifdef __cplusplus
static_assert(sizeof(struct nano_kernel_ctx) == NANO_DH_KCTX_SIZE, "kernel context size");
#else
_Static_assert(sizeof(struct nano_kernel_ctx) == NANO_DH_KCTX_SIZE, "kernel context size");
#endif

/* What the pass emits per launched kernel (constant, in the launching
 * module). Fields are only ever added at the end. */
struct nano_cpu_kernel {
  uint32_t abi;       /* NANO_CPU_LAUNCH_ABI (nano/dh_format.h)              */
  uint32_t arg_bytes; /* size of the argument block                           */
  const char *name;   /* the kernel's (mangled) name                          */
  /* Runs one kernel thread: enters *pos (nano_kernel_enter of the launching
   * module), then calls the kernel with the arguments in args, or, with a
   * descriptor, its twin. */
  void (*thread)(const void *args, void *desc, const struct nano_kernel_ctx *pos);
  const void *twin; /* the twin, NULL when it was not built (weak)          */
};

/* The runtime includes this header for the types only (it must not define
 * the program's thread position). */
#ifndef NANO_KERNEL_TYPES_ONLY
/* Outside any launch the position is all zeros. One weak definition of each
 * per program (a const object needs `extern` for external linkage in C++). */
#ifdef __cplusplus
#define NANO_KCTX_LINKAGE extern
#else
#define NANO_KCTX_LINKAGE
#endif
__attribute__((weak)) NANO_KCTX_LINKAGE const struct nano_kernel_ctx __nano_kctx_none = {
    {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, 0, 0, 0};
__attribute__((weak)) NANO_THREAD_LOCAL const struct nano_kernel_ctx *__nano_kctx =
    &__nano_kctx_none;

static inline nano_dim3 nano_thread_idx(void) {
  return nano_dim(__nano_kctx->thread[0], __nano_kctx->thread[1], __nano_kctx->thread[2]);
}
static inline nano_dim3 nano_block_idx(void) {
  return nano_dim(__nano_kctx->block[0], __nano_kctx->block[1], __nano_kctx->block[2]);
}
static inline nano_dim3 nano_block_dim(void) {
  return nano_dim(__nano_kctx->block_dim[0], __nano_kctx->block_dim[1], __nano_kctx->block_dim[2]);
}
static inline nano_dim3 nano_grid_dim(void) {
  return nano_dim(__nano_kctx->grid_dim[0], __nano_kctx->grid_dim[1], __nano_kctx->grid_dim[2]);
}
static inline void *nano_shared(void) { return __nano_kctx->shared; }

/* Makes *pos (which must outlive the kernel thread) the position of the
 * calling thread. The runtime calls it, through the launch the pass builds,
 * before each kernel thread. */
static inline void nano_kernel_enter(const struct nano_kernel_ctx *pos) { __nano_kctx = pos; }

/* ---- launching --------------------------------------------------------------
 * The pass (PipelineStart, host modules) finds every call of
 * __nano_launch_route, turns it into "is the runtime loaded", and replaces
 * the kernel call under it with a call of the runtime's __nano_cpu_launch,
 * passing a struct nano_cpu_kernel and the arguments, evaluated once, in a
 * block. Without the pass the route is never taken. */

#ifdef __cplusplus
#define NANO_NOTHROW_ATTR
#define NANO_NOEXCEPT noexcept
#else
#define NANO_NOTHROW_ATTR __attribute__((nothrow))
#define NANO_NOEXCEPT
#endif
/* One symbol name in C and C++ (a static function is mangled in C++ even in
 * an extern "C" block), and never an invoke. */
NANO_NOTHROW_ATTR static inline int
__nano_launch_route(nano_dim3 *grid, nano_dim3 *block, uint32_t shared,
                    void (*enter)(const struct nano_kernel_ctx *)) NANO_NOEXCEPT
    __asm__("__nano_launch_route");
NANO_NOTHROW_ATTR static inline int
__nano_launch_route(nano_dim3 *grid, nano_dim3 *block, uint32_t shared,
                    void (*enter)(const struct nano_kernel_ctx *)) NANO_NOEXCEPT {
  (void)grid, (void)block, (void)shared, (void)enter;
  return 0;
}

#define NANO_LAUNCH_SHARED(nano_grid, nano_block, nano_bytes, nano_call)                           \
  do {                                                                                             \
    nano_dim3 nano_g_ = (nano_grid), nano_b_ = (nano_block);                                       \
    uint32_t nano_s_ = (uint32_t)(nano_bytes);                                                     \
    if (__nano_launch_route(&nano_g_, &nano_b_, nano_s_, nano_kernel_enter)) {                     \
      nano_call;                                                                                   \
    } else {                                                                                       \
      struct nano_kernel_ctx nano_p_ = {{0, 0, 0},                                                 \
                                        {0, 0, 0},                                                 \
                                        {nano_b_.x, nano_b_.y, nano_b_.z},                         \
                                        {nano_g_.x, nano_g_.y, nano_g_.z},                         \
                                        nano_s_ ? calloc(1, nano_s_) : NULL,                       \
                                        nano_s_,                                                   \
                                        0};                                                        \
      nano_kernel_enter(&nano_p_);                                                                 \
      for (nano_p_.block[2] = 0; nano_p_.block[2] < nano_g_.z; nano_p_.block[2]++)                 \
        for (nano_p_.block[1] = 0; nano_p_.block[1] < nano_g_.y; nano_p_.block[1]++)               \
          for (nano_p_.block[0] = 0; nano_p_.block[0] < nano_g_.x; nano_p_.block[0]++) {           \
            if (nano_p_.shared)                                                                    \
              memset(nano_p_.shared, 0, nano_s_);                                                  \
            for (nano_p_.thread[2] = 0; nano_p_.thread[2] < nano_b_.z; nano_p_.thread[2]++)        \
              for (nano_p_.thread[1] = 0; nano_p_.thread[1] < nano_b_.y; nano_p_.thread[1]++)      \
                for (nano_p_.thread[0] = 0; nano_p_.thread[0] < nano_b_.x; nano_p_.thread[0]++) {  \
                  nano_call;                                                                       \
                }                                                                                  \
          }                                                                                        \
      free(nano_p_.shared);                                                                        \
      nano_kernel_enter(&__nano_kctx_none);                                                        \
    }                                                                                              \
  } while (0)

#define NANO_LAUNCH(grid, block, call) NANO_LAUNCH_SHARED(grid, block, 0, call)
#endif /* NANO_KERNEL_TYPES_ONLY */

#ifdef __cplusplus
}
#endif
#endif
