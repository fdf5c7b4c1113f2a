/* demangle.c: nano/demangle.h. */
#define _GNU_SOURCE
#include "nano/demangle.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../dh_comms/include/nano/dh_format.h" /* the twins' naming rule */

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

char *nano_kernel_shown(const char *name) {
  size_t plen = strlen(NANO_TWIN_PREFIX);
  if (!name || strncmp(name, NANO_TWIN_PREFIX, plen) != 0)
    return nano_demangle(name);
  const char *body = name + plen;
  char *d = nano_demangle(body), *shown = NULL;
  static const char more[] = ", void*)", only[] = "(void*)";
  size_t n = d ? strlen(d) : 0, ml = sizeof more - 1, ol = sizeof only - 1;
  int r;
  if (n >= ml && strcmp(d + n - ml, more) == 0)
    r = asprintf(&shown, "%.*s)%s", (int)(n - ml), d, NANO_KERNEL_TWIN_MARK);
  else if (n >= ol && strcmp(d + n - ol, only) == 0)
    r = asprintf(&shown, "%.*s()%s", (int)(n - ol), d, NANO_KERNEL_TWIN_MARK);
  else /* an extern "C" kernel (T = N), or a name the demangler refuses */
    r = asprintf(&shown, "%s%s", d ? d : body, NANO_KERNEL_TWIN_MARK);
  free(d);
  return r < 0 ? NULL : shown;
}
