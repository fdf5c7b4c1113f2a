/* check.h: CHECK(cond, fmt, ...) for the device tests: on failure prints the
 * place, the condition and the message, and exits 1. */
#ifndef NANO_DEVICE_CHECK_H
#define NANO_DEVICE_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(c, ...)                                                                          \
  do {                                                                                         \
    if (!(c)) {                                                                                \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #c);                             \
      fprintf(stderr, __VA_ARGS__);                                                            \
      fputc('\n', stderr);                                                                     \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

#endif
