/*
 * CPU kernels with known access patterns, compiled with the plugin. Each
 * access the test checks carries a marker comment (@name) on its line; the
 * test finds the line numbers by the markers.
 */
#include "nano/kernel.h"

#include <stdint.h>
#include <string.h>

static inline unsigned gid(void) {
  return nano_block_idx().x * nano_block_dim().x + nano_thread_idx().x;
}

/* Coalesced: used = needed. */
NANO_KERNEL void k_copy(float *dst, const float *src) {
  unsigned i = gid();
  dst[i] = src[i]; /* @copy */
}

/* Strided by k elements: used = k x needed for 4k <= line size. */
NANO_KERNEL void k_stride(float *dst, const float *src, unsigned k) {
  unsigned i = gid();
  float v = src[(uint64_t)i * k]; /* @stride.load */
  dst[i] = v;                     /* @stride.store */
}

/* Lanes going down, one float apart and one float off the lines (src has
 * n + 1 floats): every record in descending progression. */
NANO_KERNEL void k_reverse(float *dst, const float *src, unsigned n) {
  unsigned i = gid();
  dst[i] = src[n - i]; /* @reverse */
}

/* Through an index array: a scattered ("random") pattern. */
NANO_KERNEL void k_gather(float *dst, const float *src, const unsigned *idx) {
  unsigned i = gid();
  unsigned j = idx[i];    /* @gather.idx */
  dst[i] = src[j];        /* @gather.load */
}

/* Shared memory, stride s words of 4 bytes, then 8-byte accesses with a
 * stride of s8 elements, then a broadcast read. */
NANO_KERNEL void k_bank(unsigned *out, unsigned s, unsigned s8) {
  unsigned t = nano_thread_idx().x;
  unsigned *sh = nano_shared();
  uint64_t *sh8 = nano_shared();
  sh[t * s] = t;                       /* @bank.store */
  sh8[t * s8 + 1] = t;                 /* @bank.store8 */
  out[gid()] = sh[0];                  /* @bank.broadcast */
}

/* A 256-byte copy per lane out of shared memory, lanes `stride` bytes apart
 * (64 words each: every bank many times over). */
NANO_KERNEL void k_bankwide(unsigned char *out, unsigned stride) {
  unsigned t = nano_thread_idx().x;
  unsigned char *sh = nano_shared();
  memcpy(out + (size_t)gid() * 256, sh + (size_t)t * stride, 256); /* @bankwide.copy */
}

/* Recursion `depth` deep, a page of stack per call: overflows a lane's small
 * stack (NANO_CPU_STACK) where a thread's own stack holds it. */
static __attribute__((noinline)) unsigned deep(unsigned depth, unsigned *out) {
  volatile unsigned char page[4096];
  page[depth % sizeof page] = (unsigned char)depth;
  return depth ? deep(depth - 1, out) + page[depth % sizeof page] : (*out = 1);
}

NANO_KERNEL void k_deep(unsigned *out, unsigned depth) { out[gid()] = deep(depth, &out[gid()]); }

/* A device function: its accesses are attributed to it. */
static __attribute__((noinline)) float helper(const float *p, unsigned i) {
  return p[i] * 3.0f; /* @calls.helper */
}

NANO_KERNEL void k_calls(float *dst, const float *src) {
  unsigned i = gid();
  dst[i] = helper(src, i); /* @calls.store */
}

/* Atomics: every lane on one counter, and each on its own. */
NANO_KERNEL void k_atomic(int *counter, int *each) {
  __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);  /* @atomic.one */
  __atomic_fetch_add(&each[gid()], 1, __ATOMIC_RELAXED); /* @atomic.each */
}

/* Divergence and reconvergence: a quarter of the lanes call one function,
 * the rest another; the store after the join is one record per wave. */
static __attribute__((noinline)) float pick_a(const float *a, unsigned i) {
  return a[i]; /* @branch.a */
}
static __attribute__((noinline)) float pick_b(const float *b, unsigned i) {
  return b[i] * 2.0f; /* @branch.b */
}

NANO_KERNEL void k_branch(float *out, const float *a, const float *b) {
  unsigned i = gid();
  float v = nano_thread_idx().x % 4 == 0 ? pick_a(a, i) : pick_b(b, i);
  out[i] = v; /* @branch.store */
}

/* A loop whose trip count differs per lane (thread % 4): lanes that leave
 * wait for the others after the loop. */
NANO_KERNEL void k_loop(float *out, const float *a) {
  unsigned i = gid();
  float s = 0.0f;
#if defined(__clang__)
#pragma clang loop unroll(disable) vectorize(disable)
#endif
  for (unsigned k = 0; k < nano_thread_idx().x % 4; k++)
    s += a[i * 4 + k]; /* @loop.body */
  out[i] = s;          /* @loop.store */
}

/* A branch inside a loop: in iteration k the lanes with (t + k) % 2 == 0
 * load. On a GPU each iteration's load is an execution of its own by half
 * the wave; the lanes that skip it wait at the loop's end. */
NANO_KERNEL void k_loopbranch(float *out, const float *a) {
  unsigned i = gid(), t = nano_thread_idx().x;
  float s = 0.0f;
#if defined(__clang__)
#pragma clang loop unroll(disable) vectorize(disable)
#endif
  for (unsigned k = 0; k < 4; k++)
    if ((t + k) % 2 == 0)
      s += a[i * 4 + k]; /* @loopbranch.load */
  out[i] = s;            /* @loopbranch.store */
}

/* The same through a call from the branch. */
static __attribute__((noinline)) float pick_c(const float *a, unsigned j) {
  return a[j]; /* @loopcall.load */
}

NANO_KERNEL void k_loopcall(float *out, const float *a) {
  unsigned i = gid(), t = nano_thread_idx().x;
  float s = 0.0f;
#if defined(__clang__)
#pragma clang loop unroll(disable) vectorize(disable)
#endif
  for (unsigned k = 0; k < 4; k++)
    if ((t + k) % 2 == 0)
      s += pick_c(a, i * 4 + k);
  out[i] = s;
}

/* Nested loops with the branch in the inner one: one execution per (k, m)
 * by half the wave. */
NANO_KERNEL void k_nested(float *out, const float *a) {
  unsigned i = gid(), t = nano_thread_idx().x;
  float s = 0.0f;
#if defined(__clang__)
#pragma clang loop unroll(disable) vectorize(disable)
#endif
  for (unsigned k = 0; k < 2; k++) {
#if defined(__clang__)
#pragma clang loop unroll(disable) vectorize(disable)
#endif
    for (unsigned m = 0; m < 2; m++)
      if ((t + k + m) % 2 == 0)
        s += a[i * 4 + k * 2 + m]; /* @nested.load */
  }
  out[i] = s;
}

/* A variable-length array of a different size per lane: the load after it
 * is one execution per wave (lanes meet by place in the code, not by the
 * stack bytes they use). */
NANO_KERNEL void k_vla(float *out, const float *a) {
  unsigned i = gid(), n = nano_thread_idx().x % 4 + 1;
  volatile float tmp[n];
  for (unsigned k = 0; k < n; k++)
    tmp[k] = (float)k;
  out[i] = a[i] + tmp[n - 1]; /* @vla.load */
}

/* One generic load whose even lanes read the block's shared memory (zeroed,
 * two words apart: bank conflicts) and odd lanes global memory (the pointer
 * hidden from the compiler so that it stays one access): each lane is
 * counted in its own space. */
NANO_KERNEL void k_mixed(float *out, const float *a) {
  unsigned t = nano_thread_idx().x, i = gid();
  const float *sh = nano_shared();
  const float *p = t % 2 ? a + i : sh + 2 * t;
  __asm__("" : "+r"(p));
  out[i] = *p; /* @mixed.load */
}
