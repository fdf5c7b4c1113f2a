/*
 * path_unit.c: nano_path_normalize folds paths as LLVM's
 * sys::path::remove_dots(path, true) does, so the runtime's library-file
 * match agrees with the plugin's.
 */
#include <stdio.h>
#include <string.h>

#include "nano/path.h"

static int failures;

static void check(const char *in, const char *want, size_t n) {
  char out[256];
  const char *got = nano_path_normalize(in, out, n);
  if ((got == NULL) != (want == NULL) || (got && strcmp(got, want) != 0)) {
    fprintf(stderr, "path_unit: '%s' (%zu bytes): got '%s', want '%s'\n", in, n,
            got ? got : "(null)", want ? want : "(null)");
    failures++;
  }
}

int main(void) {
  char big[256];
  check("/usr/bin/../lib/gcc/x86_64-linux-gnu/12/../../../../include/c++/12/bits/shared_ptr_base.h",
        "/usr/include/c++/12/bits/shared_ptr_base.h", sizeof big);
  check("/a/./b//c/", "/a/b/c", sizeof big);
  check("/a/b/..", "/a", sizeof big);
  check("/..", "/", sizeof big);
  check("/../x", "/x", sizeof big);
  check("/", "/", sizeof big);
  check("a/../b", "b", sizeof big);
  check("a/..", ".", sizeof big);
  check("./a", "a", sizeof big);
  check("../a/../../b", "../../b", sizeof big);
  check("", ".", sizeof big);
  check("/abc/def", "/abc/def", 9);
  check("/abc/def", NULL, 8);
  check("/abc/../def", "/def", 5);
  if (failures) return 1;
  puts("path_unit: ok");
  return 0;
}
