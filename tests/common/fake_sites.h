/*
 * fake_sites.h: what the stand-in runtimes' emulated twins
 * (tests/device/gpu_launch/fake_cudart.c, tests/hsa/standin_hsa.cpp) share:
 * the site ids they record under (FAKE_SITES, hexadecimal ids separated by
 * spaces, the order each stand-in documents) and the block-times entry
 * each block stamps as the device runtime's GPU build does.
 */
#ifndef NANO_TESTS_FAKE_SITES_H
#define NANO_TESTS_FAKE_SITES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nano/dh_format.h"

/* The site id of the i-th access FAKE_SITES names; 0 where it names none. */
static inline uint64_t fake_site(int i) {
  const char *v = getenv("FAKE_SITES");
  char *end;
  uint64_t id = 0;
  for (int k = 0; v && k <= i; k++, v = end)
    if ((id = strtoull(v, &end, 16)) == 0 && end == v)
      return 0;
  return id;
}

/* The block-times entry of linear block b at position block[3] in the
 * twin's descriptor, or NULL (no table, a block past it or outside the
 * block filter). */
static inline uint64_t *fake_block_entry(const char *desc, unsigned b, const uint32_t block[3]) {
  uint64_t table;
  uint32_t n, lo[3], hi[3];
  memcpy(&table, desc + NANO_DH_DESC_OFF_BLOCKS, sizeof table);
  memcpy(&n, desc + NANO_DH_DESC_OFF_NBLOCKS, sizeof n);
  memcpy(lo, desc + NANO_DH_DESC_OFF_BLOCK_LO, sizeof lo);
  memcpy(hi, desc + NANO_DH_DESC_OFF_BLOCK_HI, sizeof hi);
  for (int i = 0; i < 3; i++)
    if (block[i] < lo[i] || block[i] > hi[i])
      return NULL;
  return table && b < n ? (uint64_t *)(uintptr_t)table + NANO_DH_BLOCK_WORDS * b : NULL;
}

#endif
