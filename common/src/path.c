/*
 * path.c: nano_path_normalize and nano_path_expand_pid (see nano/path.h).
 */
#include <stdio.h>
#include <string.h>

#include "nano/path.h"

char *nano_path_normalize(const char *path, char *out, size_t n) {
  if (n == 0)
    return NULL;
  int absolute = path[0] == '/';
  size_t len = 0;  /* bytes of out in use, without the NUL */
  size_t keep = 0; /* leading "../" components of a relative path stay */
  if (absolute)
    out[len++] = '/';
  const char *p = path;
  while (*p) {
    while (*p == '/')
      p++;
    const char *end = p;
    while (*end && *end != '/')
      end++;
    size_t part = (size_t)(end - p);
    if (part == 0 || (part == 1 && p[0] == '.')) {
      /* nothing */
    } else if (part == 2 && p[0] == '.' && p[1] == '.') {
      size_t base = absolute ? 1 : 0;
      if (len > base + keep) {
        while (len > base && out[len - 1] != '/')
          len--;
        if (len > base)
          len--; /* the separator before the dropped component */
        if (len == 0 && absolute)
          len = 1;
      } else if (!absolute) {
        if (len + 3 >= n)
          return NULL;
        if (len > 0)
          out[len++] = '/';
        memcpy(out + len, "..", 2);
        len += 2;
        keep = len;
      }
    } else {
      if (len + (len > (size_t)absolute) + part >= n)
        return NULL;
      if (len > (size_t)absolute)
        out[len++] = '/';
      memcpy(out + len, p, part);
      len += part;
    }
    p = end;
  }
  if (len == 0) {
    if (n < 2)
      return NULL;
    out[len++] = '.';
  }
  out[len] = '\0';
  return out;
}

int nano_path_expand_pid(const char *tmpl, long pid, char *out, size_t n) {
  if (n == 0)
    return -1;
  char num[24];
  int numlen = snprintf(num, sizeof num, "%ld", pid);
  size_t o = 0;
  for (const char *t = tmpl; *t; t++) {
    const char *piece = t;
    size_t len = 1;
    if (t[0] == '%' && t[1] == 'p') {
      piece = num;
      len = (size_t)numlen;
      t++;
    }
    if (o + len >= n) { /* as much as fits, and say it did not */
      size_t room = n - 1 - o;
      memcpy(out + o, piece, room);
      out[n - 1] = '\0';
      return -1;
    }
    memcpy(out + o, piece, len);
    o += len;
  }
  out[o] = '\0';
  return 0;
}
