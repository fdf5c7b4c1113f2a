/*
 * locate.c: where nanoprobe's parts are, seen from the `nanoprobe`
 * executable (paths.h: the build tree's layout first, then the installed
 * one), and execvp's search of a command.
 */
#define _GNU_SOURCE /* asprintf, strchrnul */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nanoprobe.h"
#include "paths.h"

/* The folder of this executable in buf; NULL when /proc cannot tell. */
static const char *locate_self_dir(char *buf, size_t len) {
  ssize_t n = readlink("/proc/self/exe", buf, len - 1);
  if (n <= 0)
    return NULL;
  buf[n] = '\0';
  char *slash = strrchr(buf, '/');
  if (!slash)
    return NULL;
  *slash = '\0';
  return buf;
}

/* dir/rel in buf when that file exists; NULL otherwise. */
static const char *locate_try(const char *dir, const char *rel, char *buf, size_t len) {
  int n = snprintf(buf, len, "%s/%s", dir, rel);
  if (n < 0 || (size_t)n >= len || access(buf, F_OK) != 0)
    return NULL;
  char *real = realpath(buf, NULL);
  if (!real)
    return NULL;
  n = snprintf(buf, len, "%s", real);
  free(real);
  return (size_t)n < len ? buf : NULL;
}

int nanoprobe_in_build_tree(void) {
  char dir[PATH_MAX], path[PATH_MAX];
  return locate_self_dir(dir, sizeof dir) &&
         locate_try(dir, NANOPROBE_RPD_LIB_BUILD, path, sizeof path) != NULL;
}

const char *nanoprobe_locate(enum nanoprobe_part part, char *buf, size_t len) {
  static const char *const rel[][2] = {
      [NANOPROBE_TRACKER] = {NANOPROBE_TRACKER_BUILD, NANOPROBE_TRACKER_INSTALL},
      [NANOPROBE_RPD_LIB] = {NANOPROBE_RPD_LIB_BUILD, NANOPROBE_RPD_LIB_INSTALL},
      [NANOPROBE_CUDAHOOK] = {NANOPROBE_CUDAHOOK_BUILD, NANOPROBE_CUDAHOOK_INSTALL},
      [NANOPROBE_RPD_TOOL] = {NANOPROBE_RPD_TOOL_BUILD, NANOPROBE_RPD_TOOL_INSTALL},
      [NANOPROBE_PYTHON] = {NANOPROBE_PYTHON_BUILD, NANOPROBE_PYTHON_INSTALL},
  };
  char dir[PATH_MAX];
  if (!locate_self_dir(dir, sizeof dir))
    return NULL;
  for (int i = 0; i < 2; i++)
    if (locate_try(dir, rel[part][i], buf, len))
      return buf;
  return NULL;
}

int nanoprobe_plugins(struct nanoprobe_plugin *out, int max) {
  char dir[PATH_MAX];
  if (!locate_self_dir(dir, sizeof dir))
    return 0;
  int n = 0;
  const char *p = NANOPROBE_PLUGINS_BUILD;
  while (*p && n < max) {
    const char *end = strchrnul(p, ',');
    char entry[PATH_MAX];
    snprintf(entry, sizeof entry, "%.*s", (int)(end - p), p);
    char *bar = strchr(entry, '|');
    if (bar && locate_try(dir, bar + 1, out[n].path, sizeof out[n].path)) {
      out[n].major = atoi(entry);
      n++;
    }
    p = *end ? end + 1 : end;
  }
  if (n > 0)
    return n;
  char root[PATH_MAX];
  if (!locate_try(dir, NANOPROBE_PLUGINS_INSTALL, root, sizeof root))
    return 0;
  DIR *d = opendir(root);
  if (!d)
    return 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && n < max) {
    char rel[NAME_MAX + 32];
    if (strncmp(e->d_name, "llvm-", 5) != 0 || atoi(e->d_name + 5) <= 0)
      continue;
    snprintf(rel, sizeof rel, "%s/libNanoPass.so", e->d_name);
    if (locate_try(root, rel, out[n].path, sizeof out[n].path)) {
      out[n].major = atoi(e->d_name + 5);
      n++;
    }
  }
  closedir(d);
  return n;
}

const char *nanoprobe_include_dirs(char *buf, size_t len) {
  if (nanoprobe_in_build_tree()) {
    int n = snprintf(buf, len, "%s", NANOPROBE_INCLUDE_BUILD);
    return n >= 0 && (size_t)n < len ? buf : NULL;
  }
  char dir[PATH_MAX];
  if (!locate_self_dir(dir, sizeof dir))
    return NULL;
  return locate_try(dir, NANOPROBE_INCLUDE_INSTALL, buf, len);
}

const char *nanoprobe_which(const char *cmd, char *buf, size_t len) {
  if (strchr(cmd, '/'))
    return access(cmd, X_OK) == 0 ? cmd : NULL;
  const char *path = getenv("PATH");
  for (const char *p = path ? path : ""; *p;) {
    const char *colon = strchrnul(p, ':');
    if (snprintf(buf, len, "%.*s/%s", (int)(colon - p), p, cmd) < (int)len &&
        access(buf, X_OK) == 0)
      return buf;
    p = *colon ? colon + 1 : colon;
  }
  return NULL;
}
