/* dl_main.c: loads LIBRARY with dlopen, calls dl_work(N), unloads it (the
 * tracker's report after dlclose must still name the library's sites), and
 * does one atomic of its own. Usage: dl_main LIBRARY N */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static long own;

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s LIBRARY N\n", argv[0]);
    return 2;
  }
  __atomic_fetch_add(&own, 1, __ATOMIC_SEQ_CST);
  void *lib = dlopen(argv[1], RTLD_NOW);
  if (lib == NULL) {
    fprintf(stderr, "dl_main: %s\n", dlerror());
    return 1;
  }
  long (*work)(long) = (long (*)(long))dlsym(lib, "dl_work");
  if (work == NULL) {
    fprintf(stderr, "dl_main: %s\n", dlerror());
    return 1;
  }
  printf("dl_work=%ld\n", work(atol(argv[2])));
  if (dlclose(lib) != 0) {
    fprintf(stderr, "dl_main: %s\n", dlerror());
    return 1;
  }
  return 0;
}
