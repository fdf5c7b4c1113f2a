/* symbols.c: nano/symbols.h. */
#include "nano/symbols.h"

#include <dlfcn.h>
#include <string.h>

const char *nano_symbols_resolve(void *handle, const struct nano_symbol *syms, size_t n,
                                 void *table) {
  for (size_t i = 0; i < n; i++) {
    void *f = dlsym(handle, syms[i].name);
    if (!f)
      return syms[i].name;
    memcpy((char *)table + syms[i].offset, &f, sizeof f);
  }
  return NULL;
}
