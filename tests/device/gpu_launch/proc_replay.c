/*
 * proc_replay.c: asks the driver's cuGetProcAddress_v2, as a program finds
 * it (dlsym of libcuda.so.1, which a preloaded tool may interpose), for each
 * request on stdin ("NAME VERSION FLAGS", as proc_recorder.c logs them) and
 * prints what it was handed:
 *   NAME VERSION FLAGS -> SYMBOL OBJECT
 * SYMBOL and OBJECT: the exported name of the function and the file that
 * holds it ("none" when the call failed). cudart_entries.py runs it with
 * libnano_cudahook.so preloaded over the stand-in driver.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

typedef int (*gpa2_fn)(const char *, void **, int, uint64_t, int *);

int main(void) {
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  gpa2_fn gpa = driver ? (gpa2_fn)dlsym(driver, "cuGetProcAddress_v2") : NULL;
  if (!gpa) {
    fprintf(stderr, "proc_replay: no cuGetProcAddress_v2 in libcuda.so.1: %s\n", dlerror());
    return 1;
  }
  char name[256];
  int version;
  unsigned long long flags;
  while (scanf("%255s %d %llu", name, &version, &flags) == 3) {
    void *fn = NULL;
    int status = -1;
    Dl_info info;
    if (gpa(name, &fn, version, flags, &status) != 0 || !fn)
      printf("%s %d %llu -> none %d\n", name, version, flags, status);
    else if (!dladdr(fn, &info) || !info.dli_sname)
      printf("%s %d %llu -> ? ?\n", name, version, flags);
    else
      printf("%s %d %llu -> %s %s\n", name, version, flags, info.dli_sname, info.dli_fname);
  }
  return ferror(stdin) ? 1 : 0;
}
