/*
 * fake_sites.h: the site ids the stand-in runtimes' emulated twins record
 * under (tests/device/gpu_launch/fake_cudart.c, tests/hsa/standin_hsa.cpp):
 * FAKE_SITES, hexadecimal ids separated by spaces, the order each stand-in
 * documents.
 */
#ifndef NANO_TESTS_FAKE_SITES_H
#define NANO_TESTS_FAKE_SITES_H

#include <stdint.h>
#include <stdlib.h>

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

#endif
