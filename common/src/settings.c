/*
 * settings.c: environment readers with one policy (nano/settings.h).
 */
#include "nano/settings.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nano/hash.h"

/* Bits of the variables whose empty value was said (by a hash of the name:
 * one message per variable and process, whichever reader meets it). */
#define SETTINGS_SAID_BITS 1024u
static _Atomic unsigned char settings_said[SETTINGS_SAID_BITS / 8];

/* Says once that `name` is set but empty. */
static void settings_say_empty(const char *name) {
  uint32_t h = nano_fnv32(NANO_FNV32_OFFSET, name, strlen(name)) % SETTINGS_SAID_BITS;
  unsigned char bit = (unsigned char)(1u << (h % 8));
  if (__atomic_fetch_or(&settings_said[h / 8], bit, __ATOMIC_RELAXED) & bit)
    return;
  fprintf(stderr,
          "nanoprobe: %s is set but empty: its default is used (unset it, or give it a value)\n",
          name);
}

const char *nano_env_str(const char *name) {
  const char *v = getenv(name);
  if (v && !*v)
    settings_say_empty(name);
  return v && *v ? v : NULL;
}

/* The value of `name` for the typed readers: NULL when unset; an empty value
 * is a value like any other (each reader's message says what it expected). */
static const char *settings_value(const char *name) { return getenv(name); }

int nano_env_bool(const char *name, int *out) {
  static const char *const on[] = {"1", "on", "true", "yes"};
  static const char *const off[] = {"0", "off", "false", "no"};
  const char *v = settings_value(name);
  if (!v)
    return 0;
  for (int i = 0; i < 4; i++) {
    if (strcasecmp(v, on[i]) == 0) {
      *out = 1;
      return 1;
    }
    if (strcasecmp(v, off[i]) == 0) {
      *out = 0;
      return 1;
    }
  }
  fprintf(stderr, "nanoprobe: %s=%s: expected 1/0, on/off, true/false or yes/no; taken as off\n",
          name, v);
  *out = 0;
  return -1;
}

/* Parses a decimal number with an optional K/M/G suffix (when `suffix`). */
static int settings_number(const char *s, int suffix, uint64_t *out) {
  if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
    return -1;
  errno = 0;
  char *end;
  uint64_t n = strtoull(s, &end, 10);
  if (end == s || errno == ERANGE)
    return -1;
  unsigned shift = 0;
  if (suffix && *end) {
    shift = *end == 'K' || *end == 'k'   ? 10
            : *end == 'M' || *end == 'm' ? 20
            : *end == 'G' || *end == 'g' ? 30
                                         : 64;
    if (shift == 64 || end[1])
      return -1;
    if (n > (UINT64_MAX >> shift))
      return -1;
  } else if (*end) {
    return -1;
  }
  *out = n << shift;
  return 0;
}

int nano_parse_size(const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
  uint64_t n;
  if (settings_number(s, 1, &n) != 0 || n < lo || n > hi)
    return -1;
  *out = n;
  return 0;
}

int nano_env_uint(const char *name, uint64_t lo, uint64_t hi, uint64_t *out) {
  const char *v = settings_value(name);
  if (!v)
    return 0;
  uint64_t n;
  if (settings_number(v, 0, &n) != 0 || n < lo || n > hi) {
    fprintf(stderr, "nanoprobe: %s=%s: expected an integer from %" PRIu64 " to %" PRIu64 "\n", name,
            v, lo, hi);
    return -1;
  }
  *out = n;
  return 1;
}

int nano_env_real(const char *name, double lo, double hi, double *out) {
  const char *v = settings_value(name);
  if (!v)
    return 0;
  /* digits with at most one point: strtod alone would take "inf", "nan", hex
   * and exponents */
  int digits = 0, points = 0;
  for (const char *c = v; *c; c++) {
    if (*c >= '0' && *c <= '9')
      digits++;
    else if (*c == '.')
      points++;
    else
      digits = -1000;
  }
  double x = digits > 0 && points <= 1 ? strtod(v, NULL) : -1;
  if (digits <= 0 || points > 1 || x < lo || x > hi) {
    fprintf(stderr, "nanoprobe: %s=%s: expected a number from %g to %g\n", name, v, lo, hi);
    return -1;
  }
  *out = x;
  return 1;
}

/* A reader over `parse` (nano_parse_size, nano_parse_duration): the message
 * says "expected a WHAT from LO to HI UNIT (FORM)". */
static int settings_env_parsed(const char *name, uint64_t lo, uint64_t hi, uint64_t *out,
                               int (*parse)(const char *, uint64_t, uint64_t, uint64_t *),
                               const char *what, const char *unit, const char *form) {
  const char *v = settings_value(name);
  if (!v)
    return 0;
  if (parse(v, lo, hi, out) != 0) {
    fprintf(stderr, "nanoprobe: %s=%s: expected a %s from %" PRIu64 " to %" PRIu64 " %s (%s)\n",
            name, v, what, lo, hi, unit, form);
    return -1;
  }
  return 1;
}

int nano_env_size(const char *name, uint64_t lo, uint64_t hi, uint64_t *out) {
  return settings_env_parsed(name, lo, hi, out, nano_parse_size, "size", "bytes",
                             "a number, optionally with K, M or G");
}

int nano_parse_duration(const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
  static const struct {
    const char *unit;
    double ns;
  } units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"", 1}};
  if (!s || !*s)
    return -1;
  /* digits with at most one point, then a unit: strtod alone would take
   * "inf", "nan", hex and exponents */
  const char *c = s;
  int digits = 0, points = 0;
  for (; (*c >= '0' && *c <= '9') || *c == '.'; c++)
    *c == '.' ? points++ : digits++;
  if (!digits || points > 1)
    return -1;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcmp(c, units[i].unit) != 0)
      continue;
    double ns = strtod(s, NULL) * units[i].ns;
    if (ns < (double)lo || ns > (double)hi)
      return -1;
    *out = (uint64_t)(ns + 0.5);
    return 0;
  }
  return -1;
}

int nano_env_duration(const char *name, uint64_t lo, uint64_t hi, uint64_t *out) {
  return settings_env_parsed(name, lo, hi, out, nano_parse_duration, "duration", "ns",
                             "a number with ns, us, ms or s; ns without");
}

int nano_env_choice(const char *name, const char *const *choices, int *out) {
  const char *v = settings_value(name);
  if (!v)
    return 0;
  for (int i = 0; choices[i]; i++)
    if (strcmp(v, choices[i]) == 0) {
      *out = i;
      return 1;
    }
  fprintf(stderr, "nanoprobe: %s=%s: expected one of", name, v);
  for (int i = 0; choices[i]; i++)
    fprintf(stderr, "%s %s", i ? "," : "", choices[i]);
  fputc('\n', stderr);
  return -1;
}

int nano_regcomp_whole(regex_t *re, const char *pattern) {
  size_t len = strlen(pattern) + sizeof "^()$";
  char *anchored = malloc(len);
  if (!anchored)
    return REG_ESPACE;
  snprintf(anchored, len, "^(%s)$", pattern);
  int rc = regcomp(re, anchored, REG_EXTENDED | REG_NOSUB);
  free(anchored);
  return rc;
}
