/*
 * strtab_unit.c: the interning table gives dense indices in first-seen
 * order, the same index for an equal string across growth, and leaves the
 * table usable when its memory runs out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nano/strtab.h"

#define N 20000

static char *strs[8 * N];
static int allocs_left = -1; /* -1: no limit */

static const char *at(const void *owner, uint32_t i) {
  (void)owner;
  return strs[i];
}

static void *limited_calloc(size_t bytes) {
  if (allocs_left == 0) return NULL;
  if (allocs_left > 0) allocs_left--;
  return calloc(1, bytes);
}

static void libc_free(void *p, size_t bytes) {
  (void)bytes;
  free(p);
}

/* The index of s, storing it when new; UINT32_MAX when the table is full. */
static uint32_t intern(struct nano_strtab *t, const char *s) {
  uint32_t i = nano_strtab_find(t, s);
  if (i != NANO_STRTAB_NONE) return i;
  strs[t->n] = strdup(s);
  if ((i = nano_strtab_add(t, s)) == NANO_STRTAB_NONE) free(strs[t->n]);
  return i;
}

int main(void) {
  struct nano_strtab t = {.str = at, .zalloc = limited_calloc, .release = libc_free};
  int failures = 0;
  char buf[32];
  for (int round = 0; round < 2; round++)
    for (int i = 0; i < N; i++) {
      snprintf(buf, sizeof buf, "name-%d", i);
      uint32_t got = intern(&t, buf);
      if (got != (uint32_t)i) {
        fprintf(stderr, "strtab_unit: round %d: '%s' got index %u\n", round, buf, got);
        if (++failures > 5) return 1;
      }
    }
  if (t.n != N) fprintf(stderr, "strtab_unit: %u strings, want %d\n", t.n, N), failures++;
  if (intern(&t, "") != N || intern(&t, "") != N) fprintf(stderr, "strtab_unit: empty string\n"), failures++;
  /* fill to the next growth, then let it fail: still answers, adds nothing */
  allocs_left = 0;
  uint32_t before = t.n;
  int refused = 0;
  for (int i = 0; i < 4 * N && !refused; i++) {
    snprintf(buf, sizeof buf, "more-%d", i);
    refused = intern(&t, buf) == UINT32_MAX;
  }
  if (!refused || t.n == before) fprintf(stderr, "strtab_unit: growth never refused\n"), failures++;
  if (intern(&t, "name-17") != 17) fprintf(stderr, "strtab_unit: lookup after refusal\n"), failures++;
  for (uint32_t i = 0; i < t.n; i++) free(strs[i]);
  nano_strtab_free(&t);
  if (failures) return 1;
  puts("strtab_unit: ok");
  return 0;
}
