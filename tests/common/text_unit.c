/*
 * text_unit.c: nano_text_stream keeps text, newlines, tabs and well-formed
 * UTF-8 and shows everything else as \xNN, also when the stream's buffer
 * cuts a UTF-8 sequence in two.
 */
#include <stdio.h>
#include <string.h>

#include "nano/text.h"

static int failures;

/* Writes in through a safe stream with a buffer of `buf` bytes (0: the
 * default) and checks that `want` comes out. */
static void check(const char *in, const char *want, size_t buf) {
  FILE *sink = tmpfile();
  FILE *safe = sink ? nano_text_stream(sink) : NULL;
  if (!safe) {
    fprintf(stderr, "text_unit: cannot make the streams\n");
    failures++;
    return;
  }
  if (buf) setvbuf(safe, NULL, _IOFBF, buf);
  fputs(in, safe);
  fclose(safe);
  char got[512] = "";
  rewind(sink);
  size_t n = fread(got, 1, sizeof got - 1, sink);
  got[n] = 0;
  fclose(sink);
  if (strcmp(got, want) != 0) {
    fprintf(stderr, "text_unit: buffer %zu: got '%s', want '%s'\n", buf, got, want);
    failures++;
  }
}

int main(void) {
  static const char in[] = "a\tb\n"
                           "\x1b]0;title\x07" /* OSC: retitle the window */
                           "\x7f"
                           "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80" /* é € 🚀 */
                           "\xc2\x9b" /* C1 CSI */
                           "\xff\xc0\xaf" /* never UTF-8; overlong '/' */
                           "\xe2\x82"; /* a cut sequence at the end */
  static const char want[] = "a\tb\n"
                             "\\x1b]0;title\\x07"
                             "\\x7f"
                             "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80"
                             "\\xc2\\x9b"
                             "\\xff\\xc0\\xaf"
                             "\\xe2\\x82";
  for (size_t buf = 0; buf <= 7; buf++) check(in, want, buf);
  check("", "", 0);
  /* nano_utf8_len: complete, incomplete, invalid */
  if (nano_utf8_len((const unsigned char *)"\xe2\x82\xac", 3) != 3 ||
      nano_utf8_len((const unsigned char *)"\xe2\x82", 2) != -1 ||
      nano_utf8_len((const unsigned char *)"\xed\xa0\x80", 3) != 0 || /* a surrogate */
      nano_utf8_len((const unsigned char *)"\xf4\x90\x80\x80", 4) != 0) { /* > U+10FFFF */
    fprintf(stderr, "text_unit: nano_utf8_len\n");
    failures++;
  }
  if (failures) return 1;
  puts("text_unit: ok");
  return 0;
}
