/*
 * strtab.c: the interning table (see nano/strtab.h).
 */
#include <stdlib.h>
#include <string.h>

#include "nano/hash.h"
#include "nano/strtab.h"

/* Slots of a new table. */
#define STRTAB_FIRST_CAP 1024u
/* The most strings a table holds: its slots (twice as many) stay within
 * uint32_t. */
#define STRTAB_MAX (1u << 30)

/* The slot of s in slots[cap]: its own, or the empty one where it goes. */
static uint32_t strtab_probe(const struct nano_strtab *t, const uint32_t *slots, uint32_t cap,
                             const char *s) {
  uint32_t j = (uint32_t)nano_fnv64_str(s) & (cap - 1);
  while (slots[j] != 0 && strcmp(t->str(t->owner, slots[j] - 1), s) != 0)
    j = (j + 1) & (cap - 1);
  return j;
}

/* Makes room for one more string. Returns 0, or -1 (table unchanged). */
static int strtab_reserve(struct nano_strtab *t) {
  if ((uint64_t)2 * (t->n + 1) <= t->cap)
    return 0;
  if (t->n + 1 >= STRTAB_MAX)
    return -1;
  uint32_t cap = t->cap ? 2 * t->cap : STRTAB_FIRST_CAP;
  uint32_t *slots = t->zalloc((size_t)cap * sizeof *slots);
  if (slots == NULL)
    return -1;
  for (uint32_t i = 0; i < t->cap; i++)
    if (t->slot[i] != 0)
      slots[strtab_probe(t, slots, cap, t->str(t->owner, t->slot[i] - 1))] = t->slot[i];
  t->release(t->slot, (size_t)t->cap * sizeof *t->slot);
  t->slot = slots;
  t->cap = cap;
  return 0;
}

uint32_t nano_strtab_find(const struct nano_strtab *t, const char *s) {
  if (t->cap == 0)
    return NANO_STRTAB_NONE;
  uint32_t j = strtab_probe(t, t->slot, t->cap, s);
  return t->slot[j] ? t->slot[j] - 1 : NANO_STRTAB_NONE;
}

uint32_t nano_strtab_add(struct nano_strtab *t, const char *s) {
  if (strtab_reserve(t) != 0)
    return NANO_STRTAB_NONE;
  t->slot[strtab_probe(t, t->slot, t->cap, s)] = ++t->n;
  return t->n - 1;
}

void nano_strtab_free(struct nano_strtab *t) {
  t->release(t->slot, (size_t)t->cap * sizeof *t->slot);
  t->slot = NULL;
  t->cap = 0;
}

void *nano_strtab_calloc(size_t bytes) { return calloc(1, bytes); }

void nano_strtab_libc_free(void *p, size_t bytes) {
  (void)bytes;
  free(p);
}
