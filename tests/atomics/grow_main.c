/* grow_main.c: built with NANO_ATOMICS_PROMOTE=0, so its site counts every
 * event inline (llvm-pass/README.md, "Inline counting"). Counts N events
 * (the thread's counter is bound to its array), loads LIBRARY, whose 300
 * sites registered at its load make the runtime grow the thread's array at
 * the next event, runs them once each, then counts N events more: into the
 * new array, which only a runtime that kept the bound counter current has
 * (else they land in the unmapped one). Usage: grow_main LIBRARY N */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static long own;

__attribute__((noinline)) static void count(long n) {
  for (long i = 0; i < n; i++)
    __atomic_fetch_add(&own, 1, __ATOMIC_RELAXED); /* GROW_SITE */
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s LIBRARY N\n", argv[0]);
    return 2;
  }
  long n = atol(argv[2]);
  count(n);
  void *lib = dlopen(argv[1], RTLD_NOW);
  void (*many)(void) = lib ? (void (*)(void))dlsym(lib, "grow_many") : NULL;
  if (many == NULL) {
    fprintf(stderr, "grow_main: %s\n", dlerror());
    return 1;
  }
  many();
  count(n);
  printf("own=%ld\n", own);
  return 0;
}
