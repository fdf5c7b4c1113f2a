/* Runtime stand-in for promote-run.c: counts events per kind through
 * __nano_atomic and __nano_atomic_n (with PROMOTE_NO_N, only __nano_atomic, as
 * a runtime that predates __nano_atomic_n), the calls of each hook and the
 * largest n of one __nano_atomic_n call. Prints one line at exit. */
#include <stdint.h>
#include <stdio.h>

#include "nano/atomics.h"

static uint64_t hooks_events[NANO_KIND_COUNT];
static uint64_t hooks_calls, hooks_calls_n, hooks_max_n;

void __nano_register_module(struct nano_site_module *m) { (void)m; }

void __nano_atomic(struct nano_site *s) {
  hooks_calls++;
  hooks_events[s->kind]++;
}

#ifndef PROMOTE_NO_N
void __nano_atomic_n(struct nano_site *s, uint64_t n) {
  hooks_calls_n++;
  if (n > hooks_max_n)
    hooks_max_n = n;
  hooks_events[s->kind] += n;
}
#endif

__attribute__((destructor)) static void hooks_report(void) {
  fprintf(stderr, "hooks: fetch_add=%llu load=%llu cas=%llu calls=%llu calls_n=%llu max_n=%llu\n",
          (unsigned long long)hooks_events[NANO_KIND_FETCH_ADD],
          (unsigned long long)hooks_events[NANO_KIND_LOAD],
          (unsigned long long)hooks_events[NANO_KIND_COMPARE_EXCHANGE],
          (unsigned long long)hooks_calls, (unsigned long long)hooks_calls_n,
          (unsigned long long)hooks_max_n);
}
