/*
 * remote_path.c: where control sockets live and who may use them
 * (nano/remote.h), shared by libnano_remote.so and rpdremote.
 */
#define _GNU_SOURCE
#include <nano/remote.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "nano/settings.h"

int nano_remote_dir(uid_t uid, char *buf, size_t len) {
  const char *env = nano_env_str("NANO_REMOTE_DIR");
  int n;
  if (env) {
    n = snprintf(buf, len, "%s", env);
  } else {
    char run[64];
    struct stat sb;
    snprintf(run, sizeof run, "/run/user/%u", (unsigned)uid);
    if (lstat(run, &sb) == 0 && S_ISDIR(sb.st_mode) && sb.st_uid == uid)
      n = snprintf(buf, len, "%s/nanoprobe", run);
    else
      n = snprintf(buf, len, "/tmp/nanoprobe-%u", (unsigned)uid);
  }
  return n < 0 || (size_t)n >= len ? -1 : 0;
}

int nano_remote_socket_path(uid_t uid, pid_t pid, char *buf, size_t len) {
  if (nano_remote_dir(uid, buf, len) != 0)
    return -1;
  size_t used = 0;
  while (used < len && buf[used])
    used++;
  int n = snprintf(buf + used, len - used, "/%ld.sock", (long)pid);
  return n < 0 || (size_t)n >= len - used ? -1 : 0;
}

int nano_remote_peer_allowed(uid_t peer, uid_t self) { return peer == self || peer == 0; }
