/* demangle.c: nano/demangle.h. */
#define _GNU_SOURCE
#include "nano/demangle.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

char *nano_demangle(const char *name) {
  if (!name || strncmp(name, "_Z", 2) != 0)
    return NULL;
  typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);
  demangle_fn fn = (demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
  int status = -1;
  char *d = fn ? fn(name, NULL, NULL, &status) : NULL;
  if (status != 0) {
    free(d);
    return NULL;
  }
  return d;
}
