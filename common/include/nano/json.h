/*
 * nano/json.h: the one JSON string writer of nanoprobe (tracker, tools,
 * analyzers). Output is always valid JSON and valid UTF-8, whatever bytes
 * the input holds: a file path or kernel name with a stray byte must not
 * make a consumer reject the whole document.
 */
#ifndef NANO_JSON_H
#define NANO_JSON_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Writes s as a JSON string literal: quotes, backslashes and control
 * characters escaped, each byte that does not start a well-formed UTF-8
 * sequence replaced by U+FFFD. NULL is written as null. */
void nano_json_str(FILE *out, const char *s);

#ifdef __cplusplus
}
#endif
#endif
