/*
 * zone_disabled.c: the tracer API under -DNANO_DISABLE compiles to nothing.
 * This program is built without libnano_rpd (the link would fail on any call
 * left behind) and prints the values the disabled API evaluates to.
 */
#include <stdio.h>

#include "rpd.h"

int main(void) {
  int sum = 0;
  for (int i = 0; i < 3; i++) {
    NANO_ZONE("disabled-zone");
    rpd_rangePush(NULL, "disabled-range", NULL);
    rpd_mark(NULL, "disabled-mark", NULL);
    rpd_rangePop();
    sum += rpdstart() + rpdstop() + rpdstop_nowait() + rpdflush() + (int)rpd_now() + (int)rpd_intern("x");
  }
  printf("disabled api sum %d\n", sum);
  return 0;
}
