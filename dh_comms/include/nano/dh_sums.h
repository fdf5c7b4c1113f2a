/*
 * nano/dh_sums.h: the arithmetic of a wave access's sums that both places
 * which make them share: the device runtime (dh_comms/device/dh_device.c,
 * sums made where the waves run) and the host (dh_comms/analyzers/
 * aggregate.c, sums of records). What the sums mean: aggregate.c's banner.
 *
 * Plain C with no includes (the device runtime has no libc), every function
 * static inline.
 */
#ifndef NANO_DH_SUMS_H
#define NANO_DH_SUMS_H

/* Lanes per phase of the phased LDS/shared model, by access size. */
#define NANO_DH_PHASE_LANES_4B 32u
#define NANO_DH_PHASE_LANES_8B 16u
#define NANO_DH_PHASE_LANES_16B 8u

/* omniprobe's lane sets of a 16-byte LDS access on AMD wave64
 * (ds_read_b128/ds_write_b128): set index of each lane. */
static const unsigned char nano_dh_amd_b128_set[64] = {
    0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 3, 3, 3, 3, 2, 2, 2, 2,
    4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 5, 5, 5, 5, 4, 4, 4, 4, 7, 7, 7, 7, 6, 6, 6, 6};

/* The phase (set of lanes served together) of lane `lane` for an LDS/shared
 * access of `size` bytes: AMD wave64's sets, else 32, 16 or 8 lanes. */
static inline unsigned nano_dh_phase(int amd_wave64, unsigned lane, unsigned size) {
  if (amd_wave64) {
    if (size <= 4)
      return lane / 32;
    if (size <= 8)
      return lane / 16;
    return nano_dh_amd_b128_set[lane & 63];
  }
  return lane / (size <= 4   ? NANO_DH_PHASE_LANES_4B
                 : size <= 8 ? NANO_DH_PHASE_LANES_8B
                             : NANO_DH_PHASE_LANES_16B);
}

/* The block of `unit` bytes that holds byte x; shift = log2(unit) when unit
 * is a power of two (no division), else -1. */
static inline unsigned long long nano_dh_block_of(unsigned long long x, unsigned unit, int shift) {
  return shift >= 0 ? x >> shift : x / unit;
}

/* Blocks of `unit` bytes that the bytes [lo, hi) touch, hi > lo. */
static inline unsigned long long nano_dh_span(unsigned long long lo, unsigned long long hi,
                                              unsigned unit, int shift) {
  return nano_dh_block_of(hi - 1, unit, shift) - nano_dh_block_of(lo, unit, shift) + 1;
}

/* Blocks of `unit` bytes that n accesses of `size` bytes cover, the first at
 * lo, each `step` bytes after the last, step > size (so none overlap). */
static inline unsigned long long nano_dh_progression_units(unsigned long long lo,
                                                           unsigned long long step, unsigned n,
                                                           unsigned size, unsigned unit,
                                                           int shift) {
  unsigned long long hi = lo + (n - 1) * step + size;
  /* gaps shorter than a block: no block lies in one, so every block from the
   * first to the last is covered */
  if (step - size < unit)
    return nano_dh_span(lo, hi, unit, shift);
  /* gaps of a block or more: no two accesses share a block; with a step of
   * whole blocks every access covers as many */
  if ((shift >= 0 ? step & (unit - 1) : step % unit) == 0)
    return n * nano_dh_span(lo, lo + size, unit, shift);
  unsigned long long count = 0;
  for (unsigned k = 0; k < n; k++, lo += step)
    count += nano_dh_span(lo, lo + size, unit, shift);
  return count;
}

/* What lanes in arithmetic progression cover: distinct bytes, and blocks of
 * `line` and `sector` bytes (shifts as nano_dh_block_of takes them). */
struct nano_dh_cover {
  unsigned long long bytes, lines, sectors;
};

/* The cover of n accesses of `size` bytes, the first at lo, each `step`
 * bytes after the last (0: one access, or a broadcast), in closed form: one
 * interval whose blocks are all used where they touch or overlap (step <=
 * size), else nano_dh_progression_units. */
static inline struct nano_dh_cover nano_dh_progression_cover(unsigned long long lo,
                                                             unsigned long long step, unsigned n,
                                                             unsigned size, unsigned line, int ls,
                                                             unsigned sector, int ss) {
  struct nano_dh_cover c;
  if (step <= size) {
    unsigned long long hi = lo + (n - 1) * step + size;
    c.bytes = hi - lo;
    c.lines = nano_dh_span(lo, hi, line, ls);
    c.sectors = nano_dh_span(lo, hi, sector, ss);
  } else {
    c.bytes = (unsigned long long)n * size;
    c.lines = nano_dh_progression_units(lo, step, n, size, line, ls);
    c.sectors = nano_dh_progression_units(lo, step, n, size, sector, ss);
  }
  return c;
}

#endif
