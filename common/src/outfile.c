/*
 * Output files that never clobber what is not a file of ours (nano/outfile.h).
 */
#include "nano/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Names tried for a temporary before giving up (each taken one is EEXIST). */
#define OUTFILE_TMP_TRIES 100

/* nano_outfile_kind, also handing back what lstat saw at path (st_mode 0
 * when absent). */
static enum nano_outfile_kind outfile_classify(const char *path, struct stat *st, char *err,
                                               size_t n) {
  if (lstat(path, st) != 0) {
    if (errno == ENOENT) {
      st->st_mode = 0;
      return NANO_OUTFILE_ABSENT;
    }
    snprintf(err, n, "%s: cannot look at it: %s", path, strerror(errno));
    return NANO_OUTFILE_REFUSED;
  }
  if (S_ISREG(st->st_mode))
    return NANO_OUTFILE_REGULAR;
  if (S_ISCHR(st->st_mode) || S_ISFIFO(st->st_mode))
    return NANO_OUTFILE_IN_PLACE;
  if (S_ISLNK(st->st_mode)) {
    struct stat target;
    if (stat(path, &target) == 0 && (S_ISCHR(target.st_mode) || S_ISFIFO(target.st_mode)))
      return NANO_OUTFILE_IN_PLACE;
    snprintf(err, n,
             "%s is a symbolic link; refusing to write through it or to replace it (name the "
             "file it points to, or remove the link)",
             path);
    return NANO_OUTFILE_REFUSED;
  }
  const char *what = S_ISDIR(st->st_mode)    ? "a folder"
                     : S_ISBLK(st->st_mode)  ? "a block device"
                     : S_ISSOCK(st->st_mode) ? "a socket"
                                             : "not a regular file";
  snprintf(err, n, "%s is %s; refusing to write to it", path, what);
  return NANO_OUTFILE_REFUSED;
}

enum nano_outfile_kind nano_outfile_kind(const char *path, char *err, size_t n) {
  struct stat st;
  return outfile_classify(path, &st, err, n);
}

/* Opens the device or FIFO at path for writing in place; checks that what was
 * opened is still one (path may have changed since it was classified). */
static int outfile_open_in_place(const char *path, int flags, char *err, size_t n) {
  int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY | flags);
  if (fd < 0) {
    snprintf(err, n, "%s: cannot write: %s", path, strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
    snprintf(err, n, "%s changed while it was being opened; refusing to write to it", path);
    close(fd);
    return -1;
  }
  return fd;
}

int nano_outfile_temp(const char *path, char **tmp, char *err, size_t n) {
  static unsigned serial;
  size_t len = strlen(path) + 64;
  char *name = malloc(len);
  if (!name) {
    snprintf(err, n, "%s: out of memory", path);
    return -1;
  }
  for (int i = 0; i < OUTFILE_TMP_TRIES; i++) {
    snprintf(name, len, "%s.tmp.%ld.%u", path, (long)getpid(), serial++);
    int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0) {
      *tmp = name;
      return fd;
    }
    if (errno != EEXIST)
      break;
  }
  snprintf(err, n, "%s: cannot create a temporary beside it (%s): %s", path, name, strerror(errno));
  free(name);
  return -1;
}

int nano_outfile_open(struct nano_outfile *o, const char *path, char *err, size_t n) {
  memset(o, 0, sizeof *o);
  o->path = path;
  if (!strcmp(path, "-")) {
    o->f = stdout;
    return 0;
  }
  struct stat st;
  enum nano_outfile_kind kind = outfile_classify(path, &st, err, n);
  if (kind == NANO_OUTFILE_REFUSED)
    return -1;
  int fd;
  if (kind == NANO_OUTFILE_IN_PLACE) {
    fd = outfile_open_in_place(path, 0, err, n);
    if (fd < 0)
      return -1;
  } else {
    fd = nano_outfile_temp(path, &o->tmp, err, n);
    if (fd < 0)
      return -1;
    if (kind == NANO_OUTFILE_REGULAR && fchmod(fd, st.st_mode & 07777) != 0) {
      snprintf(err, n, "%s: cannot give it the mode of %s: %s", o->tmp, path, strerror(errno));
      close(fd);
      nano_outfile_abort(o);
      return -1;
    }
  }
  o->f = fdopen(fd, "w");
  if (!o->f) {
    snprintf(err, n, "%s: cannot write: %s", o->tmp ? o->tmp : path, strerror(errno));
    close(fd);
    nano_outfile_abort(o);
    return -1;
  }
  return 0;
}

int nano_outfile_commit(struct nano_outfile *o, char *err, size_t n) {
  const char *name = o->tmp ? o->tmp : o->path;
  int bad = 0;
  if (fflush(o->f) != 0 || ferror(o->f)) {
    snprintf(err, n, "%s: write failed: %s", o->f == stdout ? "standard output" : name,
             strerror(errno ? errno : EIO));
    bad = 1;
  }
  if (o->f != stdout && fclose(o->f) != 0 && !bad) {
    snprintf(err, n, "%s: write failed: %s", name, strerror(errno));
    bad = 1;
  }
  o->f = NULL;
  if (o->tmp && !bad && rename(o->tmp, o->path) != 0) {
    snprintf(err, n, "cannot rename %s to %s: %s", o->tmp, o->path, strerror(errno));
    bad = 1;
  }
  if (bad || !o->tmp) {
    nano_outfile_abort(o);
    return bad ? -1 : 0;
  }
  free(o->tmp);
  o->tmp = NULL;
  return 0;
}

void nano_outfile_abort(struct nano_outfile *o) {
  if (o->f && o->f != stdout)
    fclose(o->f);
  o->f = NULL;
  if (o->tmp)
    unlink(o->tmp);
  free(o->tmp);
  o->tmp = NULL;
}

int nano_outfile_stream(const char *path, int append, char *err, size_t n) {
  if (!strcmp(path, "-"))
    return STDOUT_FILENO;
  int extra = append ? O_APPEND : 0;
  struct stat st;
  switch (outfile_classify(path, &st, err, n)) {
  case NANO_OUTFILE_REFUSED:
    return -1;
  case NANO_OUTFILE_IN_PLACE:
    return outfile_open_in_place(path, extra, err, n);
  case NANO_OUTFILE_ABSENT:
  case NANO_OUTFILE_REGULAR:
    break;
  }
  int fd =
      open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | extra, 0666);
  if (fd < 0) {
    snprintf(err, n, "%s: cannot write: %s", path,
             errno == ELOOP ? "it became a symbolic link" : strerror(errno));
    return -1;
  }
  if (fstat(fd, &st) != 0 ||
      !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
    snprintf(err, n, "%s changed while it was being opened; refusing to write to it", path);
    close(fd);
    return -1;
  }
  return fd;
}

int nano_stdout_finish(const char *prog) {
  errno = 0;
  if (fflush(stdout) == 0 && !ferror(stdout))
    return 0;
  fprintf(stderr, "%s: cannot write standard output: %s\n", prog, strerror(errno ? errno : EIO));
  return -1;
}
