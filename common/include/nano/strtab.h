/*
 * nano/strtab.h: the one interning table of nanoprobe: strings to dense
 * indices 0, 1, 2, ... in the order they were first seen.
 *
 * Open addressing with linear probing over slots holding index + 1 (0: an
 * empty slot), hashed with FNV-1a (nano/hash.h), at most half full. The table
 * keeps indices only: the owner stores the strings (an arena, chunks, an
 * array) and lends them through `str`, so the tracker (which must not call
 * malloc: its memory comes from mmap), the tracer (handles published to other
 * threads) and the report use one table with their own storage. Memory comes
 * from the owner's `zalloc` (zeroed) and goes back through `release`. Not
 * thread-safe: the owner locks.
 *
 * Use: nano_strtab_find; when the string is new, store it as index t->n and
 * nano_strtab_add it.
 */
#ifndef NANO_STRTAB_H
#define NANO_STRTAB_H

#include <stddef.h>
#include <stdint.h>

/* nano_strtab_find's answer for a string the table does not hold. */
#define NANO_STRTAB_NONE UINT32_MAX

struct nano_strtab {
  uint32_t *slot; /* cap slots: index + 1, or 0 */
  uint32_t cap;   /* a power of 2, or 0 before the first reserve */
  uint32_t n;     /* indices 0 .. n-1 are taken */
  /* the owner's string of index i (i < n) */
  const char *(*str)(const void *owner, uint32_t i);
  const void *owner;
  void *(*zalloc)(size_t bytes);          /* zeroed memory, or NULL */
  void (*release)(void *p, size_t bytes); /* p may be NULL */
};

/* The index of s, or NANO_STRTAB_NONE when the table does not hold it. */
uint32_t nano_strtab_find(const struct nano_strtab *t, const char *s);

/* Adds s, which the table does not hold and which the owner now lends as
 * index t->n (str(owner, t->n) is s), growing the table when it is half
 * full. Returns that index, or NANO_STRTAB_NONE when memory is short or the
 * table holds 2^30 strings: then the table is unchanged and the owner takes
 * its copy back. */
uint32_t nano_strtab_add(struct nano_strtab *t, const char *s);

/* Gives the slots back (the owner's strings stay the owner's). */
void nano_strtab_free(struct nano_strtab *t);

/* The C library's allocator, for owners that may call malloc:
 * struct nano_strtab t = {.str = ..., NANO_STRTAB_LIBC}. */
void *nano_strtab_calloc(size_t bytes);
void nano_strtab_libc_free(void *p, size_t bytes);
#define NANO_STRTAB_LIBC .zalloc = nano_strtab_calloc, .release = nano_strtab_libc_free

#endif /* NANO_STRTAB_H */
