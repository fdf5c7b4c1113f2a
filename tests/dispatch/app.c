/*
 * The program the dispatch tests run: one scenario per run, every kernel
 * launched with NANO_LAUNCH and its results checked against the same
 * computation done here (so a twin must compute what its original does).
 * Prints one JSON line: the scenario's arrays (4 KiB-aligned) and launch
 * shape, for the test to compute exact expectations from.
 *
 * usage: app SCENARIO [ARG]
 *   copy [BLOCKS]   k_copy over BLOCKS (default 4) blocks of 128 threads
 *   stride K        k_stride with stride K, 2 blocks of 128
 *   gather          k_gather through a scattered index, 2 blocks of 128
 *   reverse         k_reverse, lanes reading downwards, 2 blocks of 128
 *   bank S          k_bank, one block of 64, 8 KiB shared, stride S (4 B) and 2 (8 B)
 *   bankwide S      k_bankwide, one block of 64, 256 B per lane out of shared memory at stride S B
 *   deep D          k_deep, one block of 64, recursing D calls of a page of stack each
 *   calls           k_calls, 2 blocks of 128
 *   atomic          k_atomic, 2 blocks of 128
 *   branch          k_branch, 2 blocks of 128
 *   loop            k_loop, 2 blocks of 128
 *   loopbranch, loopcall, nested, vla
 *                   k_loopbranch, k_loopcall, k_nested, k_vla, 2 blocks of 128
 *   mixed           k_mixed, 2 blocks of 128, 1 KiB shared
 *   repeat N        k_copy and k_calls, N times each, 1 block of 64
 */
#include "nano/kernel.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void k_copy(float *dst, const float *src);
void k_stride(float *dst, const float *src, unsigned k);
void k_reverse(float *dst, const float *src, unsigned n);
void k_gather(float *dst, const float *src, const unsigned *idx);
void k_bank(unsigned *out, unsigned s, unsigned s8);
void k_bankwide(unsigned char *out, unsigned stride);
void k_deep(unsigned *out, unsigned depth);
void k_calls(float *dst, const float *src);
void k_atomic(int *counter, int *each);
void k_branch(float *out, const float *a, const float *b);
void k_loop(float *out, const float *a);
void k_loopbranch(float *out, const float *a);
void k_loopcall(float *out, const float *a);
void k_nested(float *out, const float *a);
void k_vla(float *out, const float *a);
void k_mixed(float *out, const float *a);

enum { BLOCK = 128, PAGE = 4096 };

static void *app_alloc(size_t bytes) {
  void *p = aligned_alloc(PAGE, (bytes + PAGE - 1) / PAGE * PAGE);
  if (!p) {
    perror("aligned_alloc");
    exit(2);
  }
  memset(p, 0, bytes);
  return p;
}

static float *app_floats(size_t n) {
  float *p = app_alloc(n * sizeof *p);
  for (size_t i = 0; i < n; i++)
    p[i] = (float)(i % 1000) * 0.5f + 1.0f;
  return p;
}

static void app_fail(const char *what, size_t i) {
  fprintf(stderr, "app: %s: wrong result at %zu\n", what, i);
  exit(1);
}

/* What k_loopbranch, k_loopcall and k_nested leave in out[i] for thread t:
 * the sum, in k order, of the a[i * 4 + k] whose iteration took the branch. */
static float app_halves(const char *sc, const float *a, unsigned i, unsigned t) {
  float s = 0.0f;
  for (unsigned k = 0; k < 4; k++) {
    unsigned parity = strcmp(sc, "nested") == 0 ? t + k / 2 + k % 2 : t + k;
    if (parity % 2 == 0)
      s += a[i * 4 + k];
  }
  return s;
}

/* The scattered index of the gather scenario (the test computes the same). */
static unsigned app_index(unsigned i, unsigned n) { return (i * i * 31u + 17u) % n; }

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: app SCENARIO [ARG]\n");
    return 2;
  }
  const char *sc = argv[1];
  unsigned arg = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 0;
  unsigned blocks = 2, n;
  if (strcmp(sc, "copy") == 0) {
    blocks = arg ? arg : 4;
    n = blocks * BLOCK;
    float *src = app_floats(n), *dst = app_alloc(n * sizeof(float));
    NANO_LAUNCH(nano_dim(blocks, 1, 1), nano_dim(BLOCK, 1, 1), k_copy(dst, src));
    for (unsigned i = 0; i < n; i++)
      if (dst[i] != src[i])
        app_fail(sc, i);
    printf("{\"n\":%u,\"block\":%u,\"src\":%llu,\"dst\":%llu}\n", n, BLOCK,
           (unsigned long long)(uintptr_t)src, (unsigned long long)(uintptr_t)dst);
  } else if (strcmp(sc, "stride") == 0) {
    n = blocks * BLOCK;
    float *src = app_floats((size_t)n * arg), *dst = app_alloc(n * sizeof(float));
    NANO_LAUNCH(nano_dim(blocks, 1, 1), nano_dim(BLOCK, 1, 1), k_stride(dst, src, arg));
    for (unsigned i = 0; i < n; i++)
      if (dst[i] != src[(size_t)i * arg])
        app_fail(sc, i);
    printf("{\"n\":%u,\"block\":%u,\"k\":%u}\n", n, BLOCK, arg);
  } else if (strcmp(sc, "reverse") == 0) {
    n = blocks * BLOCK;
    float *src = app_floats(n + 1), *dst = app_alloc(n * sizeof(float));
    NANO_LAUNCH(nano_dim(blocks, 1, 1), nano_dim(BLOCK, 1, 1), k_reverse(dst, src, n));
    for (unsigned i = 0; i < n; i++)
      if (dst[i] != src[n - i])
        app_fail(sc, i);
    printf("{\"n\":%u,\"block\":%u,\"src\":%llu,\"dst\":%llu}\n", n, BLOCK,
           (unsigned long long)(uintptr_t)src, (unsigned long long)(uintptr_t)dst);
  } else if (strcmp(sc, "gather") == 0) {
    n = blocks * BLOCK;
    float *src = app_floats(n), *dst = app_alloc(n * sizeof(float));
    unsigned *idx = app_alloc(n * sizeof *idx);
    for (unsigned i = 0; i < n; i++)
      idx[i] = app_index(i, n);
    NANO_LAUNCH(nano_dim(blocks, 1, 1), nano_dim(BLOCK, 1, 1), k_gather(dst, src, idx));
    for (unsigned i = 0; i < n; i++)
      if (dst[i] != src[idx[i]])
        app_fail(sc, i);
    printf("{\"n\":%u,\"block\":%u,\"src\":%llu}\n", n, BLOCK, (unsigned long long)(uintptr_t)src);
  } else if (strcmp(sc, "bank") == 0) {
    n = 64;
    unsigned *out = app_alloc(n * sizeof *out);
    NANO_LAUNCH_SHARED(nano_dim(1, 1, 1), nano_dim(64, 1, 1), 8192, k_bank(out, arg, 2));
    for (unsigned i = 0; i < n; i++)
      if (out[i] != 0)
        app_fail(sc, i); /* sh[0] is thread 0's value, 0, or not yet written, 0 */
    printf("{\"n\":%u,\"block\":64,\"s\":%u}\n", n, arg);
  } else if (strcmp(sc, "deep") == 0) {
    n = 64;
    unsigned *out = app_alloc(n * sizeof *out);
    NANO_LAUNCH(nano_dim(1, 1, 1), nano_dim(64, 1, 1), k_deep(out, arg));
    printf("{\"n\":%u,\"block\":64,\"depth\":%u}\n", n, arg);
  } else if (strcmp(sc, "bankwide") == 0) {
    n = 64;
    unsigned char *out = app_alloc(n * 256);
    memset(out, 0xff, n * 256);
    NANO_LAUNCH_SHARED(nano_dim(1, 1, 1), nano_dim(64, 1, 1), 64 * arg + 256,
                       k_bankwide(out, arg));
    for (unsigned i = 0; i < n * 256; i++)
      if (out[i] != 0)
        app_fail(sc, i); /* shared memory starts zeroed */
    printf("{\"n\":%u,\"block\":64,\"s\":%u}\n", n, arg);
  } else if (strcmp(sc, "loopbranch") == 0 || strcmp(sc, "loopcall") == 0 ||
             strcmp(sc, "nested") == 0 || strcmp(sc, "vla") == 0) {
    n = blocks * BLOCK;
    float *a = app_floats(4 * (size_t)n), *out = app_alloc(n * sizeof(float));
    if (strcmp(sc, "loopbranch") == 0)
      NANO_LAUNCH(nano_dim(blocks, 1, 1), nano_dim(BLOCK, 1, 1), k_loopbranch(out, a));
    else if (strcmp(sc, "loopcall") == 0)
      NANO_LAUNCH(nano_dim(blocks, 1, 1), nano_dim(BLOCK, 1, 1), k_loopcall(out, a));
    else if (strcmp(sc, "nested") == 0)
      NANO_LAUNCH(nano_dim(blocks, 1, 1), nano_dim(BLOCK, 1, 1), k_nested(out, a));
    else
      NANO_LAUNCH(nano_dim(blocks, 1, 1), nano_dim(BLOCK, 1, 1), k_vla(out, a));
    for (unsigned i = 0; i < n; i++) {
      unsigned t = i % BLOCK;
      float want = 0.0f;
      if (strcmp(sc, "vla") == 0)
        want = a[i] + (float)(t % 4);
      else
        want = app_halves(sc, a, i, t);
      if (out[i] != want)
        app_fail(sc, i);
    }
    printf("{\"n\":%u,\"block\":%u,\"a\":%llu}\n", n, BLOCK, (unsigned long long)(uintptr_t)a);
  } else if (strcmp(sc, "calls") == 0 || strcmp(sc, "branch") == 0 || strcmp(sc, "loop") == 0) {
    n = blocks * BLOCK;
    float *a = app_floats(4 * (size_t)n), *b = app_floats(n), *out = app_alloc(n * sizeof(float));
    if (strcmp(sc, "calls") == 0)
      NANO_LAUNCH(nano_dim(blocks, 1, 1), nano_dim(BLOCK, 1, 1), k_calls(out, a));
    else if (strcmp(sc, "branch") == 0)
      NANO_LAUNCH(nano_dim(blocks, 1, 1), nano_dim(BLOCK, 1, 1), k_branch(out, a, b));
    else
      NANO_LAUNCH(nano_dim(blocks, 1, 1), nano_dim(BLOCK, 1, 1), k_loop(out, a));
    for (unsigned i = 0; i < n; i++) {
      unsigned t = i % BLOCK;
      float want = 0.0f;
      if (strcmp(sc, "calls") == 0)
        want = a[i] * 3.0f;
      else if (strcmp(sc, "branch") == 0)
        want = t % 4 == 0 ? a[i] : b[i] * 2.0f;
      else
        for (unsigned k = 0; k < t % 4; k++)
          want += a[i * 4 + k];
      if (out[i] != want)
        app_fail(sc, i);
    }
    printf("{\"n\":%u,\"block\":%u}\n", n, BLOCK);
  } else if (strcmp(sc, "mixed") == 0) {
    n = blocks * BLOCK;
    float *a = app_floats(n), *out = app_alloc(n * sizeof(float));
    NANO_LAUNCH_SHARED(nano_dim(blocks, 1, 1), nano_dim(BLOCK, 1, 1), 2 * BLOCK * sizeof(float),
                       k_mixed(out, a));
    for (unsigned i = 0; i < n; i++)
      if (out[i] != (i % BLOCK % 2 ? a[i] : 0.0f)) /* shared memory starts zeroed */
        app_fail(sc, i);
    printf("{\"n\":%u,\"block\":%u,\"a\":%llu}\n", n, BLOCK, (unsigned long long)(uintptr_t)a);
  } else if (strcmp(sc, "atomic") == 0) {
    n = blocks * BLOCK;
    int *counter = app_alloc(sizeof(int)), *each = app_alloc(n * sizeof(int));
    NANO_LAUNCH(nano_dim(blocks, 1, 1), nano_dim(BLOCK, 1, 1), k_atomic(counter, each));
    if (*counter != (int)n)
      app_fail(sc, 0);
    for (unsigned i = 0; i < n; i++)
      if (each[i] != 1)
        app_fail(sc, i);
    printf("{\"n\":%u,\"block\":%u}\n", n, BLOCK);
  } else if (strcmp(sc, "repeat") == 0) {
    n = 64;
    float *src = app_floats(n), *dst = app_alloc(n * sizeof(float));
    for (unsigned r = 0; r < arg; r++) {
      NANO_LAUNCH(nano_dim(1, 1, 1), nano_dim(64, 1, 1), k_copy(dst, src));
      NANO_LAUNCH(nano_dim(1, 1, 1), nano_dim(64, 1, 1), k_calls(dst, src));
    }
    for (unsigned i = 0; i < n; i++)
      if (dst[i] != src[i] * 3.0f)
        app_fail(sc, i);
    printf("{\"n\":%u,\"block\":64,\"repeat\":%u}\n", n, arg);
  } else {
    fprintf(stderr, "app: unknown scenario %s\n", sc);
    return 2;
  }
  return 0;
}
