/*
 * backtrace.c: nano_backtrace (see nano/backtrace.h). Every shared object
 * that links nano_common has its own copy, so "own frames" are the frames of
 * that object.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>

#include "nano/backtrace.h"

/* Frames of the calling object that may sit above the user's: the caller's
 * own call chain (the tracker's hook and slow path, the tracer's recording
 * call) is shorter than this. */
#define NANO_BACKTRACE_OWN 16

typedef int (*unw_backtrace_fn)(void **buffer, int size);
static unw_backtrace_fn bt_unwind;
static pthread_once_t bt_once = PTHREAD_ONCE_INIT;
static uintptr_t bt_self_lo, bt_self_hi; /* executable range of this object */

/* Finds the executable segment of the object holding the probed address. */
static int bt_self_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  uintptr_t probe = (uintptr_t)arg;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
      continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    if (probe >= lo && probe < hi) {
      bt_self_lo = lo;
      bt_self_hi = hi;
      return 1;
    }
  }
  return 0;
}

static void bt_init(void) {
  dl_iterate_phdr(bt_self_cb, (void *)(uintptr_t)&nano_backtrace);
  void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "nanoprobe: cannot load libunwind.so.8, no call stacks: %s\n", dlerror());
    return;
  }
  bt_unwind = (unw_backtrace_fn)dlsym(h, "unw_backtrace");
  if (!bt_unwind)
    fprintf(stderr, "nanoprobe: libunwind.so.8 has no unw_backtrace, no call stacks\n");
}

int nano_backtrace(uint64_t *ips, int max) {
  pthread_once(&bt_once, bt_init);
  if (!bt_unwind || max <= 0)
    return 0;
  if (max > NANO_BACKTRACE_MAX)
    max = NANO_BACKTRACE_MAX;
  void *buf[NANO_BACKTRACE_MAX + NANO_BACKTRACE_OWN];
  int n = bt_unwind(buf, max + NANO_BACKTRACE_OWN);
  int i = 0, out = 0;
  while (i < n && (uintptr_t)buf[i] >= bt_self_lo && (uintptr_t)buf[i] < bt_self_hi)
    i++;
  for (; i < n && out < max; i++)
    ips[out++] = (uint64_t)(uintptr_t)buf[i];
  return out;
}
