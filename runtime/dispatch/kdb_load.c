/*
 * kdb_load.c: kerneldb opened at run time (kdb_load.h).
 */
#define _GNU_SOURCE /* dladdr */
#include "kdb_load.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
      NANO_SYMBOL(struct nano_kdb_api, globals, kdb_code_object_globals),
      NANO_SYMBOL(struct nano_kdb_api, site_find, kdb_site_find),
      NANO_SYMBOL(struct nano_kdb_api, site_isa_width, kdb_site_isa_width),
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

static int kcache_name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The visible entries of folder dir as "dir/name", sorted; *n of them. NULL
 * with *n 0 when it cannot be read (errno set) or holds nothing. */
static char **kcache_list(const char *dir, size_t *n) {
  *n = 0;
  DIR *d = opendir(dir);
  if (!d)
    return NULL;
  char **names = NULL;
  size_t cap = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.')
      continue;
    if (*n == cap) {
      char **grown = realloc(names, (cap = cap ? 2 * cap : 16) * sizeof *names);
      if (!grown)
        break;
      names = grown;
    }
    if (asprintf(&names[*n], "%s/%s", dir, e->d_name) >= 0)
      (*n)++;
  }
  closedir(d);
  if (*n)
    qsort(names, *n, sizeof *names, kcache_name_cmp);
  return names;
}

void nano_kcache_each(const struct nano_kdb_api *api, const char *dirs, nano_kcache_fn fn,
                      void *ctx, nano_kcache_say_fn say) {
  char *copy = strdup(dirs), *save = NULL, err[512];
  for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir;
       dir = strtok_r(NULL, ":", &save)) {
    size_t n;
    errno = 0;
    char **names = kcache_list(dir, &n);
    if (!names && errno) {
      say("NANO_KERNEL_CACHE: %s: %s", dir, strerror(errno));
      continue;
    }
    for (size_t i = 0; i < n; i++) {
      struct stat st;
      kdb *db;
      if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
        if (api->open(names[i], &db, err, sizeof err) != 0) {
          say("kernel cache: %s is not a code object kerneldb reads (%s); skipped", names[i], err);
        } else {
          fn(names[i], db, ctx);
          api->close(db);
        }
      }
      free(names[i]);
    }
    free(names);
  }
  free(copy);
}
