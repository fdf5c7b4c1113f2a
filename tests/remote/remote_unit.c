/*
 * remote_unit.c: the access rule and the socket-path rule of nano/remote.h.
 */
#define _GNU_SOURCE
#include <nano/remote.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                     \
    }                                                                 \
  } while (0)

int main(void) {
  /* Same user or root, nobody else. */
  CHECK(nano_remote_peer_allowed(1000, 1000));
  CHECK(nano_remote_peer_allowed(0, 1000));
  CHECK(!nano_remote_peer_allowed(1001, 1000));
  CHECK(!nano_remote_peer_allowed(65534, 0));
  CHECK(nano_remote_peer_allowed(0, 0));

  char buf[108];
  unsetenv("NANO_REMOTE_DIR");
  /* No /run/user/<uid> for this uid: the /tmp fallback. */
  CHECK(nano_remote_socket_path(4000000, 42, buf, sizeof buf) == 0);
  CHECK(!strcmp(buf, "/tmp/nanoprobe-4000000/42.sock"));
  setenv("NANO_REMOTE_DIR", "/some/dir", 1);
  CHECK(nano_remote_socket_path(1000, 7, buf, sizeof buf) == 0);
  CHECK(!strcmp(buf, "/some/dir/7.sock"));
  /* Too long for sun_path: refused, not truncated. */
  char longdir[200];
  memset(longdir, 'x', sizeof longdir - 1);
  longdir[0] = '/';
  longdir[sizeof longdir - 1] = 0;
  setenv("NANO_REMOTE_DIR", longdir, 1);
  CHECK(nano_remote_socket_path(1000, 7, buf, sizeof buf) == -1);
  CHECK(nano_remote_dir(1000, buf, sizeof buf) == -1);
  if (failures) return 1;
  puts("remote_unit: ok");
  return 0;
}
