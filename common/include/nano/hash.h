/*
 * nano/hash.h: the one string hash of nanoprobe, FNV-1a (Fowler, Noll, Vo),
 * for the interning tables of the tracker and the tracer, the report's
 * aggregation and the plugin's stable names. Header-only and allocation-free
 * (the tracker hashes while the program's own allocator may be unusable).
 */
#ifndef NANO_HASH_H
#define NANO_HASH_H

#include <stddef.h>
#include <stdint.h>

#define NANO_FNV64_OFFSET 14695981039346656037ull /* FNV-1a 64-bit offset basis */
#define NANO_FNV64_PRIME 1099511628211ull         /* FNV-1a 64-bit prime        */
#define NANO_FNV32_OFFSET 2166136261u             /* FNV-1a 32-bit offset basis */
#define NANO_FNV32_PRIME 16777619u                /* FNV-1a 32-bit prime        */

/* Continues 64-bit FNV-1a hash h over the n bytes at p. */
static inline uint64_t nano_fnv64(uint64_t h, const void *p, size_t n) {
  const unsigned char *c = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ c[i]) * NANO_FNV64_PRIME;
  return h;
}

/* 64-bit FNV-1a of the NUL-terminated string s. */
static inline uint64_t nano_fnv64_str(const char *s) {
  uint64_t h = NANO_FNV64_OFFSET;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * NANO_FNV64_PRIME;
  return h;
}

/* Continues 32-bit FNV-1a hash h over the n bytes at p. */
static inline uint32_t nano_fnv32(uint32_t h, const void *p, size_t n) {
  const unsigned char *c = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ c[i]) * NANO_FNV32_PRIME;
  return h;
}

#endif
