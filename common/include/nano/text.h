/*
 * nano/text.h: text from untrusted bytes made safe for a terminal, and the
 * UTF-8 check it shares with the JSON writer.
 *
 * Names read from a damaged file (a kernel name, a range text) can hold
 * escape sequences; printed raw they move the cursor, retitle the window or
 * worse. nano_text_stream wraps a stream so that what is written through it
 * keeps newlines, tabs and well-formed UTF-8 and shows every other byte
 * (control characters, DEL, C1 controls, bytes that start no well-formed
 * UTF-8 sequence) as \xNN.
 */
#ifndef NANO_TEXT_H
#define NANO_TEXT_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Length of the well-formed UTF-8 sequence of at most avail bytes at p
 * (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), 0
 * when none starts there, -1 when the avail bytes are a correct but
 * incomplete start. */
int nano_utf8_len(const unsigned char *p, size_t avail);

/* A stream that writes the safe form of its text to `out` (not closed with
 * it), or NULL with errno set. */
FILE *nano_text_stream(FILE *out);

/* The safe form of s on one line (newlines and tabs escaped too; "" for
 * NULL), malloc'd; NULL when out of memory. For table cells. */
char *nano_text_line(const char *s);

#ifdef __cplusplus
}
#endif
#endif
