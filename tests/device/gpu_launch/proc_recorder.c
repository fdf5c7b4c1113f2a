/*
 * proc_recorder.c: a libcuda.so.1 that records which driver entry points a
 * program asks cuGetProcAddress for, as cudart_entries.py uses it on nvcc's
 * static cudart. It answers cuInit and cuDriverGetVersion (CUDA 13.0) and
 * hands out cuGetProcAddress itself in both ABIs; every other entry point is
 * a function that fails with CUDA_ERROR_STUB_LIBRARY, as the toolkit's stub
 * driver does, so that the runtime stops at its first call after loading
 * its table. Each request is one line of $PROC_RECORDER_LOG:
 *   NAME VERSION FLAGS CALLER
 * CALLER: the file of the object whose code called cuGetProcAddress (the
 * program itself, or a tool standing in front of the driver).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUDA_ERROR_STUB_LIBRARY 34
#define RECORDER_DRIVER_VERSION 13000

static int stub(void) { return CUDA_ERROR_STUB_LIBRARY; }
static int init(unsigned flags) {
  (void)flags;
  return 0;
}
static int driver_version(int *v) {
  *v = RECORDER_DRIVER_VERSION;
  return 0;
}
static int gpa_v1(const char *symbol, void **pfn, int version, uint64_t flags);
int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, int *status);

/* Appends one request to the log, naming the object at `caller`. */
static void record(const char *symbol, int version, uint64_t flags, const void *caller) {
  const char *path = getenv("PROC_RECORDER_LOG");
  Dl_info info;
  FILE *f = path ? fopen(path, "a") : NULL;
  if (!f)
    abort(); /* the test's run would say nothing */
  fprintf(f, "%s %d %llu %s\n", symbol, version, (unsigned long long)flags,
          dladdr(caller, &info) && info.dli_fname ? info.dli_fname : "?");
  if (fclose(f) != 0)
    abort();
}

static int answer(const char *symbol, void **pfn, int version, uint64_t flags, int *status,
                  const void *caller) {
  record(symbol, version, flags, caller);
  *pfn = !strcmp(symbol, "cuInit")               ? (void *)init
         : !strcmp(symbol, "cuDriverGetVersion") ? (void *)driver_version
         : !strcmp(symbol, "cuGetProcAddress")
             ? (version >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)gpa_v1)
             : (void *)stub;
  if (status)
    *status = 0; /* CU_GET_PROC_ADDRESS_SUCCESS */
  return 0;
}

int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags,
                        int *status) {
  return answer(symbol, pfn, version, flags, status, __builtin_return_address(0));
}
static int gpa_v1(const char *symbol, void **pfn, int version, uint64_t flags) {
  return answer(symbol, pfn, version, flags, NULL, __builtin_return_address(0));
}
int cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags) {
  return answer(symbol, pfn, version, flags, NULL, __builtin_return_address(0));
}
int cuInit(unsigned flags) { return init(flags); }
int cuDriverGetVersion(int *v) { return driver_version(v); }
