/*
 * kdb_load.h: kerneldb, opened at run time by libnano_rpd.so (which does not
 * link it: only GPU dispatches need it, and its decompressors and metadata
 * reader with it). Found next to libnano_rpd.so, on the library search path,
 * or in the build tree. Used for the site tables of GPU code objects
 * (dispatch.c) and for the kernel cache's code objects (hsa_tool.cpp).
 */
#ifndef NANO_KDB_LOAD_H
#define NANO_KDB_LOAD_H

#include <stddef.h>

#include "kerneldb.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The kerneldb functions libnano_rpd.so calls, by kerneldb.h's names. */
struct nano_kdb_api {
  int (*open)(const char *, kdb **, char *, size_t);
  int (*open_memory)(const void *, size_t, const char *, kdb **, char *, size_t);
  size_t (*count)(const kdb *);
  const kdb_code_object *(*at)(const kdb *, size_t);
  const void *(*image)(const kdb *, const kdb_code_object *);
  size_t (*kernel_count)(const kdb *);
  const kdb_kernel *(*kernel_at)(const kdb *, size_t);
  void (*close)(kdb *);
  long (*globals)(kdb *, const kdb_code_object *, kdb_global *, size_t, char *, size_t);
  const kdb_site *(*site_find)(const kdb *, uint64_t);
  kdb_site_isa (*site_isa_width)(kdb *, const kdb_site *, uint32_t *);
};

/* kerneldb's functions, loaded on the first call (thread-safe); NULL with a
 * message in err when it cannot be loaded or is too old. */
const struct nano_kdb_api *nano_kdb_load(char *err, size_t errlen);

/* A kernel cache file kerneldb read (db, closed after the call), for
 * nano_kcache_each. */
typedef void (*nano_kcache_fn)(const char *path, kdb *db, void *ctx);
/* What nano_kcache_each says: a folder it cannot read, a file kerneldb does
 * not read (each once: the walk is made once per process or device). */
typedef void (*nano_kcache_say_fn)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Calls fn for every regular file of the ':'-separated folders `dirs`
 * (NANO_KERNEL_CACHE) that kerneldb reads: folders in the order given,
 * files in name order, so that the first folder holding a kernel wins. */
void nano_kcache_each(const struct nano_kdb_api *api, const char *dirs, nano_kcache_fn fn,
                      void *ctx, nano_kcache_say_fn say);

#ifdef __cplusplus
}
#endif

#endif
