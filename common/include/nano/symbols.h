/*
 * nano/symbols.h: a library's functions resolved into a table of pointers at
 * run time (the CUDA driver, CUPTI, libunwind: libraries nanoprobe loads only
 * where it needs them, so it links against none).
 */
#ifndef NANO_SYMBOLS_H
#define NANO_SYMBOLS_H

#include <stddef.h>

/* One function: its name in the library, and where in the table its
 * address goes (offsetof the table's field). */
struct nano_symbol {
  const char *name;
  size_t offset;
};
#define NANO_SYMBOL(table_type, field, name)                                                       \
  { #name, offsetof(table_type, field) }

/* Resolves every symbol of syms[0..n) in the library `handle` into table.
 * Returns NULL when all resolved, else the name of the first missing one
 * (the table is then partly filled: do not use it). */
const char *nano_symbols_resolve(void *handle, const struct nano_symbol *syms, size_t n,
                                 void *table);

#endif /* NANO_SYMBOLS_H */
