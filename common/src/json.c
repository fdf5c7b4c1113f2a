/*
 * json.c: nano_json_str (nano/json.h).
 */
#include "nano/json.h"

#include "nano/text.h"

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
      case '\n':
        fputs("\\n", out);
        break;
      case '\r':
        fputs("\\r", out);
        break;
      case '\t':
        fputs("\\t", out);
        break;
      default:
        fprintf(out, "\\u%04x", c);
        break;
      }
      p++;
    } else if (c < 0x80) {
      fputc(c, out);
      p++;
    } else {
      /* a NUL ends any sequence (not a continuation byte): 4 never reads past it */
      int n = nano_utf8_len(p, 4);
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
