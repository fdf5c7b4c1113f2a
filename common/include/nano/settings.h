/*
 * nano/settings.h: reading nanoprobe's environment variables with one policy.
 *
 * Each reader returns 0 when the variable is unset (the caller keeps its
 * default), 1 when it is set to a valid value (stored in *out), and -1 when
 * the value is invalid, an empty one included: then one line on stderr
 * names the variable, the value and what is expected, and *out is
 * untouched. An empty value is never silently taken as unset (`NAME= cmd`
 * may mean a forgotten value): the typed readers refuse it, nano_env_str
 * says so once per variable and gives the default. What the caller does on
 * -1 is its policy, but it must never be "the opposite of what was meant":
 * a malformed switch that could turn something on stays off.
 */
#ifndef NANO_SETTINGS_H
#define NANO_SETTINGS_H

#include <regex.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1/0, on/off, true/false, yes/no, in any case. A malformed value is off:
 * *out = 0 (so the program runs with the switch's feature off, whatever its
 * default), the return -1 and the message as for every reader. */
int nano_env_bool(const char *name, int *out);
/* A decimal integer in [lo, hi]. */
int nano_env_uint(const char *name, uint64_t lo, uint64_t hi, uint64_t *out);
/* A finite decimal number (fractions allowed, no exponent) in [lo, hi]. */
int nano_env_real(const char *name, double lo, double hi, double *out);
/* A size: a decimal integer with an optional K, M or G suffix (powers of
 * 1024), in [lo, hi] bytes. */
int nano_env_size(const char *name, uint64_t lo, uint64_t hi, uint64_t *out);
/* A duration: a decimal number (fractions allowed) with a unit, ns, us, ms
 * or s (ns without one), in [lo, hi] nanoseconds; *out in nanoseconds. */
int nano_env_duration(const char *name, uint64_t lo, uint64_t hi, uint64_t *out);
/* One of `choices` (NULL-terminated; case-sensitive): *out gets its index. */
int nano_env_choice(const char *name, const char *const *choices, int *out);
/* The value, or NULL when unset or empty (an empty one said on stderr once
 * per variable: the caller's default is used). */
const char *nano_env_str(const char *name);

/* Compiles pattern as a POSIX extended regular expression that must match a
 * whole name ("^(pattern)$", REG_NOSUB), as NANO_KERNELS and nanoprobe run -k
 * read it. regcomp's result (REG_ESPACE when out of memory). */
int nano_regcomp_whole(regex_t *re, const char *pattern);

/* Parses a size as nano_env_size does, from a string; 0 on success, -1
 * when malformed or outside [lo, hi]. */
int nano_parse_size(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);
/* Parses a duration as nano_env_duration does; 0 on success, -1 otherwise. */
int nano_parse_duration(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

#ifdef __cplusplus
}
#endif
#endif
