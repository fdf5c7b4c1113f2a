/*
 * internal.h: code shared by libnano_tracker.so and libnano_print.so (not
 * installed). Both libraries define the hooks of nano/atomics.h; this header
 * holds the pieces they have in common: kind and order names, output
 * destinations, warnings.
 */
#ifndef NANO_TRACKER_INTERNAL_H
#define NANO_TRACKER_INTERNAL_H

#include <stddef.h>

#include "nano/atomics.h"

/* Marks a function exported from the shared library (the rest is hidden). */
#define NANO_API __attribute__((visibility("default")))

/* Destinations of an output variable (NANO_TRACKER_OUTPUT, NANO_PRINT_OUTPUT). */
enum nanot_dest { NANOT_DEST_STDERR = 0, NANOT_DEST_STDOUT = 1, NANOT_DEST_PATH = 2 };

/*
 * Parses an output destination: NULL or "" or "stderr" is stderr, "stdout" is
 * stdout, anything else a path in which "%p" expands to the process id. For a
 * path, writes the expanded path (NUL-terminated) into buf[0..n) and returns
 * NANOT_DEST_PATH; a path too long for buf gets a warning naming `var` and
 * stderr.
 */
enum nanot_dest nanot_parse_dest(const char *var, const char *value, char *buf, size_t n);

/* Writes "nanoprobe: <message>\n" to stderr in one write. */
void nanot_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* NANO_TRACKER_INTERNAL_H */
