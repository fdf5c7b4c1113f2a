/*
 * common.c: kind and order names (the public nano_kind_name family) and the
 * output helpers of internal.h, shared by libnano_tracker.so and
 * libnano_print.so.
 */
#define _GNU_SOURCE /* strdup, O_CLOEXEC */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "nano/path.h"

/* Names of enum nano_kind, indexed by value; GCC-builtin style. */
static const char *const nanot_kind_names[NANO_KIND_COUNT] = {
#define NANO_KIND(id, name, value) [NANO_KIND_##id] = "__atomic_" #name,
#include "nano/atomic_kinds.def"
};

/* Names of enum nano_order, indexed by value; NULL for unused values. */
static const char *const nanot_order_names[8] = {
    "relaxed", "consume", "acquire", "release", "acq_rel", "seq_cst", NULL, "unknown",
};

NANO_API const char *nano_kind_name(unsigned kind) {
  return kind < NANO_KIND_COUNT ? nanot_kind_names[kind] : NULL;
}

NANO_API int nano_kind_from_name(const char *name) {
  if (name == NULL)
    return -1;
  for (unsigned k = 0; k < NANO_KIND_COUNT; k++)
    if (strcmp(nanot_kind_names[k], name) == 0)
      return (int)k;
  return -1;
}

NANO_API const char *nano_order_name(unsigned order) {
  return order < 8 ? nanot_order_names[order] : NULL;
}

void nanot_warn(const char *fmt, ...) {
  char buf[1024];
  int n = snprintf(buf, sizeof buf, "nanoprobe: ");
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (m < 0)
    return;
  size_t len =
      (size_t)n + ((size_t)m < sizeof buf - (size_t)n - 1 ? (size_t)m : sizeof buf - (size_t)n - 2);
  buf[len++] = '\n';
  /* A lost warning is not worth more than trying once. */
  ssize_t w = write(STDERR_FILENO, buf, len);
  (void)w;
}

enum nanot_dest nanot_parse_dest(const char *var, const char *value, char *buf, size_t n) {
  if (value == NULL || value[0] == '\0' || strcmp(value, "stderr") == 0)
    return NANOT_DEST_STDERR;
  if (strcmp(value, "stdout") == 0)
    return NANOT_DEST_STDOUT;
  if (nano_path_expand_pid(value, (long)getpid(), buf, n) != 0) {
    nanot_warn("%s: path '%s' is too long; writing to stderr", var, value);
    return NANOT_DEST_STDERR;
  }
  return NANOT_DEST_PATH;
}
