/*
 * demangle_unit.c: nano_kernel_shown names a kernel as traces show it: a
 * mangled name demangled, a twin (nano/dh_format.h: NANO_TWIN_PREFIX + the
 * mangled name with a trailing "Pv" parameter; an extern "C" name as is) as
 * the kernel the program launched, marked " [instrumented]", anything else
 * as it is (NULL). The expected names are written from the C++ ABI's
 * demangling rules by hand. Linked with libstdc++, whose __cxa_demangle the
 * process then has, as every C++ program.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nano/demangle.h"

/* libstdc++'s demangler, named so that the link keeps libstdc++ (as-needed
 * drops a library nothing refers to); nano_demangle finds it by dlsym. */
char *__cxa_demangle(const char *mangled, char *out, size_t *n, int *status);
char *(*volatile demangler)(const char *, char *, size_t *, int *) = __cxa_demangle;

static int failures;

static void check(const char *name, const char *want) {
  char *got = nano_kernel_shown(name);
  if ((got == NULL) != (want == NULL) || (got && strcmp(got, want) != 0)) {
    fprintf(stderr, "demangle_unit: '%s': got '%s', want '%s'\n", name, got ? got : "(null)",
            want ? want : "(null)");
    failures++;
  }
  free(got);
}

int main(void) {
  check("_Z4axpyfPKfPfi", "axpy(float, float const*, float*, int)");
  check("__nano_twin__Z4axpyfPKfPfiPv", "axpy(float, float const*, float*, int) [instrumented]");
  check("__nano_twin__Z6noargsPv", "noargs() [instrumented]"); /* a lone "v" became "Pv" */
  check("__nano_twin__Z4fillIdEvPT_S0_Pv", "void fill<double>(double*, double) [instrumented]");
  check("__nano_twin_plain_c", "plain_c [instrumented]"); /* extern "C": T = N */
  check("plain_c", NULL);
  check("__nano_twin__Zbroken", "_Zbroken [instrumented]"); /* the demangler refuses it */
  if (failures)
    return 1;
  printf("demangle_unit: all names as traces show them\n");
  return 0;
}
