/*
 * atomics_app.c: a program with known atomic operations, compiled through
 * prelude.h (no plugin), run with the tracer preloaded: the trace must hold
 * its sites and counts (nano_atomic_* tables). usage: atomics_app [END],
 * END how it leaves after its atomics: return (default), _exit, quick_exit,
 * abort, segv, term. `atomics_app window` (under RPDT_AUTOSTART=0) records
 * two windows with rpdstart/rpdstop, with atomics before, between and after
 * them: 100 + 20 fetch_adds and 10 stores inside.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int counter;
static long flag;

/* The preloaded tracer's rpdstart or rpdstop. */
static void control(const char *name) {
  int (*fn)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, name);
  if (!fn || fn() < 0) {
    fprintf(stderr, "atomics_app: %s failed\n", name);
    exit(3);
  }
}

static int window(void) {
  for (int i = 0; i < 1000; i++) __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
  control("rpdstart");
  for (int i = 0; i < 100; i++) __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
  for (int i = 0; i < 10; i++) __atomic_store_n(&flag, i, __ATOMIC_SEQ_CST);
  control("rpdstop");
  for (int i = 0; i < 1000; i++) __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
  control("rpdstart");
  for (int i = 0; i < 20; i++) __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
  control("rpdstop");
  for (int i = 0; i < 1000; i++) __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "window"))
    return window();
  for (int i = 0; i < 1000; i++) __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
  for (int i = 0; i < 10; i++) __atomic_store_n(&flag, i, __ATOMIC_SEQ_CST);
  printf("%d %ld\n", __atomic_load_n(&counter, __ATOMIC_ACQUIRE), flag);
  fflush(stdout);
  const char *end = argc > 1 ? argv[1] : "return";
  if (!strcmp(end, "_exit"))
    _exit(0);
  if (!strcmp(end, "quick_exit"))
    quick_exit(0);
  if (!strcmp(end, "abort"))
    abort();
  if (!strcmp(end, "segv")) {
    volatile uintptr_t bad = 8; /* an unmapped address the compiler cannot see */
    *(volatile int *)bad = 1;
  }
  if (!strcmp(end, "term"))
    kill(getpid(), SIGTERM);
  return 0;
}
