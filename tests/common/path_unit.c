/*
 * path_unit.c: nano_path_normalize folds paths as LLVM's
 * sys::path::remove_dots(path, true) does, so the runtime's library-file
 * match agrees with the plugin's; nano_path_expand_pid puts the pid for every
 * "%p" and says when the result is cut.
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

static void check_pid(const char *tmpl, long pid, size_t n, int want_rc, const char *want) {
  char out[64];
  int rc = nano_path_expand_pid(tmpl, pid, out, n);
  if (rc != want_rc || strcmp(out, want) != 0) {
    fprintf(stderr, "path_unit: expand '%s' pid %ld (%zu bytes): got %d '%s', want %d '%s'\n",
            tmpl, pid, n, rc, out, want_rc, want);
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
  check_pid("t-%p.rpd", 4321, 64, 0, "t-4321.rpd");
  check_pid("%p/%p", 7, 64, 0, "7/7");
  check_pid("100%", 7, 64, 0, "100%");
  check_pid("%q%%p", 7, 64, 0, "%q%7");
  check_pid("abc%p", 123456, 10, 0, "abc123456");
  check_pid("abc%p", 123456, 9, -1, "abc12345");
  check_pid("abcdef", 1, 4, -1, "abc");
  if (failures) return 1;
  puts("path_unit: ok");
  return 0;
}
