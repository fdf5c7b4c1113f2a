/* rpdfile_internal.h: what rpdfile.c and rpdfile_side.c share (not installed). */
#ifndef NANO_RPDFILE_INTERNAL_H
#define NANO_RPDFILE_INTERNAL_H

#include <stddef.h>

/* Formats "<path>: <message>" into err (when err is non-NULL). */
void rpdfile_err(char *err, size_t errlen, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5), visibility("hidden")));

#endif /* NANO_RPDFILE_INTERNAL_H */
