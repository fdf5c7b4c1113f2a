/*
 * json.c: nano_json_str (nano/json.h).
 */
#include "nano/json.h"

/* Length of the well-formed UTF-8 sequence starting at p (RFC 3629: no
 * overlong forms, no surrogates, nothing above U+10FFFF), or 0. */
static int json_utf8_len(const unsigned char *p) {
  unsigned char c = p[0];
  int n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  for (int i = 1; i < n; i++)
    if ((p[i] & 0xC0) != 0x80)
      return 0;
  if (n == 3 && ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] > 0x9F)))
    return 0;
  if (n == 4 && ((c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] > 0x8F)))
    return 0;
  return n;
}

void nano_json_str(FILE *out, const char *s) {
  if (!s) {
    fputs("null", out);
    return;
  }
  const unsigned char *p = (const unsigned char *)s;
  fputc('"', out);
  while (*p) {
    unsigned char c = *p;
    if (c == '"' || c == '\\') {
      fputc('\\', out);
      fputc(c, out);
      p++;
    } else if (c < 0x20) {
      switch (c) {
      case '\n': fputs("\\n", out); break;
      case '\r': fputs("\\r", out); break;
      case '\t': fputs("\\t", out); break;
      default: fprintf(out, "\\u%04x", c); break;
      }
      p++;
    } else if (c < 0x80) {
      fputc(c, out);
      p++;
    } else {
      int n = json_utf8_len(p);
      if (n) {
        fwrite(p, 1, (size_t)n, out);
        p += n;
      } else {
        fputs("\\ufffd", out);
        p++;
      }
    }
  }
  fputc('"', out);
}
