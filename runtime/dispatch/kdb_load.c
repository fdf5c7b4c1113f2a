/*
 * kdb_load.c: kerneldb opened at run time (kdb_load.h).
 */
#define _GNU_SOURCE /* dladdr */
#include "kdb_load.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "nano/symbols.h"

static struct nano_kdb_api g_api;
static int g_usable;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void *kdb_try(const char *dir, const char *name) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s%s%s", dir, *dir ? "/" : "", name) >= (int)sizeof path)
    return NULL;
  return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

static void kdb_load_once(void) {
  Dl_info self;
  void *h = NULL;
  if (dladdr((void *)kdb_load_once, &self) && self.dli_fname) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", self.dli_fname);
    char *slash = strrchr(dir, '/');
    if (slash) {
      *slash = 0;
      h = kdb_try(dir, "libkerneldb.so");
    }
  }
  if (!h)
    h = kdb_try("", "libkerneldb.so");
#ifdef NANO_KERNELDB_BUILD_PATH
  if (!h)
    h = kdb_try("", NANO_KERNELDB_BUILD_PATH);
#endif
  if (!h)
    return;
  static const struct nano_symbol fns[] = {
      NANO_SYMBOL(struct nano_kdb_api, open, kdb_open),
      NANO_SYMBOL(struct nano_kdb_api, open_memory, kdb_open_memory),
      NANO_SYMBOL(struct nano_kdb_api, count, kdb_code_object_count),
      NANO_SYMBOL(struct nano_kdb_api, at, kdb_code_object_at),
      NANO_SYMBOL(struct nano_kdb_api, image, kdb_code_object_image),
      NANO_SYMBOL(struct nano_kdb_api, kernel_count, kdb_kernel_count),
      NANO_SYMBOL(struct nano_kdb_api, kernel_at, kdb_kernel_at),
      NANO_SYMBOL(struct nano_kdb_api, close, kdb_close),
  };
  g_usable = !nano_symbols_resolve(h, fns, sizeof fns / sizeof fns[0], &g_api);
}

const struct nano_kdb_api *nano_kdb_load(char *err, size_t errlen) {
  pthread_once(&g_once, kdb_load_once);
  if (!g_usable)
    snprintf(err, errlen,
             "kerneldb (libkerneldb.so, which reads GPU code objects) cannot be loaded or is "
             "too old");
  return g_usable ? &g_api : NULL;
}
