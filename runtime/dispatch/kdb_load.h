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
};

/* kerneldb's functions, loaded on the first call (thread-safe); NULL with a
 * message in err when it cannot be loaded or is too old. */
const struct nano_kdb_api *nano_kdb_load(char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
