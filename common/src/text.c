/*
 * text.c: nano_utf8_len and nano_text_stream (nano/text.h).
 */
#define _GNU_SOURCE /* fopencookie */
#include "nano/text.h"

#include <stdlib.h>
#include <string.h>

int nano_utf8_len(const unsigned char *p, size_t avail) {
  if (avail == 0)
    return 0;
  unsigned char c = p[0];
  int n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (n == 0)
    return 0;
  for (int i = 1; i < n; i++) {
    if ((size_t)i >= avail)
      return -1;
    if ((p[i] & 0xC0) != 0x80)
      return 0;
    if (i == 1 && ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] > 0x9F) ||
                   (c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] > 0x8F)))
      return 0;
  }
  return n;
}

/* The longest UTF-8 sequence: what may wait for the next write. */
#define TEXT_UTF8_MAX 4

/* A safe stream's state: the stream written to, and the start of a UTF-8
 * sequence that the last write cut. */
struct text_cookie {
  FILE *out;
  int one_line; /* newlines and tabs are escaped too */
  unsigned char held[TEXT_UTF8_MAX];
  size_t nheld;
};

/* Writes bytes p[0..n) safely; keeps an incomplete UTF-8 start at the end
 * when `more` may follow. */
static void text_put(struct text_cookie *c, const unsigned char *p, size_t n, int more) {
  for (size_t i = 0; i < n;) {
    unsigned char b = p[i];
    if ((b >= 0x20 && b < 0x7f) || (!c->one_line && (b == '\n' || b == '\t'))) {
      fputc(b, c->out);
      i++;
      continue;
    }
    int len = b >= 0x80 ? nano_utf8_len(p + i, n - i) : 0;
    if (len < 0 && more) { /* cut by the buffer: wait for the rest */
      memcpy(c->held, p + i, n - i);
      c->nheld = n - i;
      return;
    }
    /* C1 controls (U+0080..U+009F, C2 80..C2 9F) act as escapes too */
    if (len > 0 && !(b == 0xC2 && p[i + 1] < 0xA0)) {
      fwrite(p + i, 1, (size_t)len, c->out);
      i += (size_t)len;
    } else {
      fprintf(c->out, "\\x%02x", b);
      i++;
    }
  }
}

static ssize_t text_write(void *cookie, const char *buf, size_t size) {
  struct text_cookie *c = cookie;
  const unsigned char *p = (const unsigned char *)buf;
  size_t used = 0;
  if (c->nheld) { /* complete the held start with the first new bytes */
    unsigned char seq[2 * TEXT_UTF8_MAX];
    size_t take = size < TEXT_UTF8_MAX ? size : TEXT_UTF8_MAX;
    memcpy(seq, c->held, c->nheld);
    memcpy(seq + c->nheld, p, take);
    size_t have = c->nheld + take;
    int len = nano_utf8_len(seq, have);
    size_t nheld = c->nheld;
    c->nheld = 0;
    if (len > 0) {
      text_put(c, seq, (size_t)len, 0);
      used = (size_t)len - nheld;
    } else if (len < 0) { /* still incomplete: hold it all */
      memcpy(c->held, seq, have);
      c->nheld = have;
      return (ssize_t)size;
    } else {
      text_put(c, seq, 1, 0); /* the held start was no sequence: escape its first byte */
      text_put(c, seq + 1, nheld - 1, 1);
    }
  }
  text_put(c, p + used, size - used, 1);
  return ferror(c->out) ? -1 : (ssize_t)size;
}

static int text_close(void *cookie) {
  struct text_cookie *c = cookie;
  if (c->nheld)
    text_put(c, c->held, c->nheld, 0); /* a cut sequence at the end */
  /* no flush: the owner of out flushes it, and sees its error with errno */
  int rc = ferror(c->out) ? EOF : 0;
  free(c);
  return rc;
}

FILE *nano_text_stream(FILE *out) {
  struct text_cookie *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  c->out = out;
  cookie_io_functions_t io = {NULL, text_write, NULL, text_close};
  FILE *f = fopencookie(c, "w", io);
  if (!f)
    free(c);
  return f;
}

char *nano_text_line(const char *s) {
  char *buf = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&buf, &len);
  if (!mem)
    return NULL;
  struct text_cookie c = {mem, 1, {0}, 0};
  if (s)
    text_put(&c, (const unsigned char *)s, strlen(s), 0);
  if (fclose(mem) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}
