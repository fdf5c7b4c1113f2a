/*
 * rpdfile_side.c: side files of a trace, rows a writer kept beside it while
 * another process held a read lock on it (nano/rpdfile.h, "Side files").
 *
 * A side file is written once, whole, and never changed: its writer makes an
 * exclusive temporary (nano_outfile_temp) and hard-links it to the first free
 * TRACE.pending.PID.N. So a folder may fold it whenever it sees it, and two
 * that race both apply it: the second finds every row there already, keeps
 * the trace's (SQLITE_CHANGESET_OMIT) and removes nothing twice.
 *
 * Order: a process's side files hold consecutive transactions, so they are
 * folded by (PID, N); side files of different processes touch different ids
 * (each process writes in its own session's id range).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nano/outfile.h"
#include "nano/rpdfile.h"
#include "rpdfile_internal.h"

/* The most side files of one process tried before giving up on a free name. */
#define SIDE_MAX_PER_PROCESS 100000
/* The largest side file read (a transaction the tracer holds stays far
 * below: it diverts past RPDW_HELD_MAX_ROWS rows). */
#define SIDE_MAX_BYTES (1ll << 31)

/* Writes all n bytes of buf to fd; 0, or -1 with errno. */
static int side_write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

int nano_rpdfile_side_write(const char *path, long pid, const void *changeset, int n, char *side,
                            size_t sidelen, char *err, size_t errlen) {
  char *tmp = NULL;
  int fd = nano_outfile_temp(path, &tmp, err, errlen);
  if (fd < 0)
    return NANO_RPDFILE_EIO;
  static const char magic[] = NANO_RPDFILE_SIDE_MAGIC;
  int rc = NANO_RPDFILE_EIO;
  if (side_write_all(fd, magic, sizeof magic - 1) != 0 ||
      side_write_all(fd, changeset, (size_t)n) != 0) {
    rpdfile_err(err, errlen, tmp, "cannot write: %s", strerror(errno));
    close(fd);
    goto out;
  }
  if (close(fd) != 0) {
    rpdfile_err(err, errlen, tmp, "cannot write: %s", strerror(errno));
    goto out;
  }
  for (int i = 0; i < SIDE_MAX_PER_PROCESS; i++) {
    int len = snprintf(side, sidelen, "%s" NANO_RPDFILE_SIDE_INFIX "%ld.%d", path, pid, i);
    if (len < 0 || (size_t)len >= sidelen) {
      rpdfile_err(err, errlen, path, "a side file's name is too long");
      goto out;
    }
    if (link(tmp, side) == 0) {
      rc = 0;
      goto out;
    }
    if (errno != EEXIST) {
      rpdfile_err(err, errlen, side, "cannot create: %s", strerror(errno));
      goto out;
    }
  }
  rpdfile_err(err, errlen, path, "no free side file name for process %ld", pid);
out:
  unlink(tmp);
  free(tmp);
  return rc;
}

/* A side file found beside a trace. */
struct side_name {
  long pid;
  long n;
  char *name;
};

static int side_order(const void *a, const void *b) {
  const struct side_name *x = a, *y = b;
  if (x->pid != y->pid)
    return x->pid < y->pid ? -1 : 1;
  return (x->n > y->n) - (x->n < y->n);
}

/* Whether `name` is BASE.pending.PID.N; stores PID and N. */
static int side_parse(const char *name, const char *base, long *pid, long *n) {
  size_t bl = strlen(base), il = strlen(NANO_RPDFILE_SIDE_INFIX);
  if (strncmp(name, base, bl) != 0 || strncmp(name + bl, NANO_RPDFILE_SIDE_INFIX, il) != 0)
    return 0;
  const char *p = name + bl + il;
  char *end = NULL;
  errno = 0;
  *pid = strtol(p, &end, 10);
  if (end == p || *end != '.' || errno)
    return 0;
  p = end + 1;
  *n = strtol(p, &end, 10);
  return end != p && !*end && !errno && *pid >= 0 && *n >= 0;
}

/* The side files of the trace at path, sorted (malloc'd array, *count
 * entries; names are full paths), or NULL with *count 0. */
static struct side_name *side_list(const char *path, int *count) {
  *count = 0;
  char *dcopy = strdup(path), *bcopy = strdup(path);
  struct side_name *v = NULL;
  int cap = 0;
  const char *dir = dcopy && bcopy ? dirname(dcopy) : NULL;
  DIR *d = dir ? opendir(dir) : NULL;
  if (!d)
    goto out;
  const char *base = basename(bcopy);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    long pid, n;
    if (!side_parse(e->d_name, base, &pid, &n))
      continue;
    if (*count == cap) {
      struct side_name *nv = realloc(v, (size_t)(cap = cap ? 2 * cap : 8) * sizeof *v);
      if (!nv)
        break;
      v = nv;
    }
    char *full = NULL;
    if (asprintf(&full, "%s/%s", dir, e->d_name) < 0)
      break;
    v[(*count)++] = (struct side_name){pid, n, full};
  }
  closedir(d);
  if (*count)
    qsort(v, (size_t)*count, sizeof *v, side_order);
out:
  free(dcopy);
  free(bcopy);
  return v;
}

int nano_rpdfile_side_count(const char *path) {
  int n = 0;
  struct side_name *v = side_list(path, &n);
  for (int i = 0; i < n; i++)
    free(v[i].name);
  free(v);
  return n;
}

/* Reads side file `name` whole, checks its magic and returns the changeset
 * (malloc'd, *n bytes), or NULL with err. */
static char *side_read(const char *name, int *n, char *err, size_t errlen) {
  int fd = open(name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    rpdfile_err(err, errlen, name, "cannot open: %s", strerror(errno));
    return NULL;
  }
  struct stat sb;
  static const char magic[] = NANO_RPDFILE_SIDE_MAGIC;
  const size_t ml = sizeof magic - 1;
  char *buf = NULL;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    rpdfile_err(err, errlen, name, "not a regular file");
    goto fail;
  }
  if ((size_t)sb.st_size < ml || sb.st_size > SIDE_MAX_BYTES) {
    rpdfile_err(err, errlen, name, "not a side file of a trace (%lld bytes)",
                (long long)sb.st_size);
    goto fail;
  }
  buf = malloc((size_t)sb.st_size ? (size_t)sb.st_size : 1);
  if (!buf) {
    rpdfile_err(err, errlen, name, "out of memory for %lld bytes", (long long)sb.st_size);
    goto fail;
  }
  size_t got = 0;
  while (got < (size_t)sb.st_size) {
    ssize_t r = read(fd, buf + got, (size_t)sb.st_size - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      rpdfile_err(err, errlen, name, "cannot read: %s",
                  r < 0 ? strerror(errno) : "shorter than it was");
      goto fail;
    }
    got += (size_t)r;
  }
  if (memcmp(buf, magic, ml) != 0) {
    rpdfile_err(err, errlen, name, "not a side file of a trace (no \"%.*s\" header)", (int)ml - 1,
                magic);
    goto fail;
  }
  close(fd);
  memmove(buf, buf + ml, (size_t)sb.st_size - ml);
  *n = (int)((size_t)sb.st_size - ml);
  return buf;
fail:
  free(buf);
  close(fd);
  return NULL;
}

/* The session a changeset's 'session' metadata row names ("id=N pid=P"),
 * or -1. */
static int64_t side_session(char *p, int n) {
  sqlite3_changeset_iter *it = NULL;
  if (sqlite3changeset_start(&it, n, p) != SQLITE_OK)
    return -1;
  int64_t session = -1;
  while (sqlite3changeset_next(it) == SQLITE_ROW) {
    const char *table = NULL;
    int ncol = 0, op = 0, indirect = 0;
    sqlite3_value *tag = NULL, *value = NULL;
    long long id;
    if (sqlite3changeset_op(it, &table, &ncol, &op, &indirect) == SQLITE_OK &&
        op == SQLITE_INSERT && strcmp(table, "rocpd_metadata") == 0 && ncol >= 3 &&
        sqlite3changeset_new(it, 1, &tag) == SQLITE_OK && tag &&
        sqlite3_value_type(tag) == SQLITE_TEXT &&
        strcmp((const char *)sqlite3_value_text(tag), "session") == 0 &&
        sqlite3changeset_new(it, 2, &value) == SQLITE_OK && value &&
        sqlite3_value_type(value) == SQLITE_TEXT &&
        sscanf((const char *)sqlite3_value_text(value), "id=%lld", &id) == 1 && id > session)
      session = id;
  }
  sqlite3changeset_finalize(it);
  return session;
}

int64_t nano_rpdfile_side_next_session(const char *path) {
  int count = 0;
  int64_t next = 0;
  struct side_name *v = side_list(path, &count);
  for (int i = 0; i < count; i++) {
    int n = 0;
    char *p = side_read(v[i].name, &n, NULL, 0);
    int64_t s = p ? side_session(p, n) : -1;
    if (s + 1 > next)
      next = s + 1;
    free(p);
    free(v[i].name);
  }
  free(v);
  return next;
}

/* sqlite3changeset_apply's conflict handler: the trace's row stands (a side
 * file folded before, or a row written again since is newer). */
static int side_conflict(void *ctx, int kind, sqlite3_changeset_iter *it) {
  (void)it;
  if (kind == SQLITE_CHANGESET_DATA || kind == SQLITE_CHANGESET_CONFLICT ||
      kind == SQLITE_CHANGESET_NOTFOUND)
    (*(uint64_t *)ctx)++;
  return SQLITE_CHANGESET_OMIT;
}

/* nanoprobe's tables a changeset may touch, each with the SQL that makes it:
 * the side file's transaction may have created them, and its rollback took
 * them out of the trace again. */
static const struct {
  const char *prefix;
  const char *(*schema)(void);
} side_tables[] = {
    {"nano_thread", nano_rpdfile_thread_schema_sql},
    {"nano_window", nano_rpdfile_window_schema_sql},
    {"nano_call_", nano_rpdfile_calls_schema_sql},
    {"nano_atomic_", nano_rpdfile_atomics_schema_sql},
    {"nano_dispatch", nano_rpdfile_dispatch_schema_sql},
    {"nano_analysis", nano_rpdfile_dispatch_schema_sql},
};
enum { SIDE_TABLES = sizeof side_tables / sizeof side_tables[0] };

/* Counts the changes of a changeset and marks in *tables (bit i:
 * side_tables[i]) the tables of nanoprobe's it touches; -1 when it is
 * malformed. */
static int64_t side_changes(char *p, int n, unsigned *tables) {
  sqlite3_changeset_iter *it = NULL;
  *tables = 0;
  if (sqlite3changeset_start(&it, n, p) != SQLITE_OK)
    return -1;
  int64_t count = 0;
  int rc;
  while ((rc = sqlite3changeset_next(it)) == SQLITE_ROW) {
    const char *table = NULL;
    int ncol = 0, op = 0, indirect = 0;
    if (sqlite3changeset_op(it, &table, &ncol, &op, &indirect) != SQLITE_OK)
      break;
    for (int i = 0; i < SIDE_TABLES; i++)
      if (strncmp(table, side_tables[i].prefix, strlen(side_tables[i].prefix)) == 0)
        *tables |= 1u << i;
    count++;
  }
  return sqlite3changeset_finalize(it) == SQLITE_OK && rc == SQLITE_DONE ? count : -1;
}

/* Folds one side file in a transaction of its own. */
static int side_fold_one(sqlite3 *db, const char *path, const char *name, int wait_ms,
                         struct nano_rpdfile_folded *r, char *err, size_t errlen) {
  int n = 0;
  char *p = side_read(name, &n, err, errlen);
  if (!p)
    return NANO_RPDFILE_EIO;
  unsigned tables = 0;
  int64_t changes = side_changes(p, n, &tables);
  if (changes < 0) {
    rpdfile_err(err, errlen, name, "a damaged changeset (%d bytes)", n);
    free(p);
    return NANO_RPDFILE_EIO;
  }
  int old = nano_rpdfile_busy_bound(wait_ms);
  uint64_t kept = 0;
  /* exclusive from the start: a reader that came in during the fold would
   * hold every page the fold spills, and its commit */
  int rc = nano_rpdfile_exec(db, path, "cannot lock to fold a side file", "BEGIN EXCLUSIVE", err,
                             errlen);
  for (int i = 0; i < SIDE_TABLES && rc == 0; i++)
    if (tables & (1u << i))
      rc = nano_rpdfile_exec(db, path, "cannot create nanoprobe's tables", side_tables[i].schema(),
                             err, errlen);
  if (rc == 0 && nano_rpdfile_has_object(db, "nano_dispatch") == 1)
    rc = nano_rpdfile_dispatch_upgrade(db, path, err, errlen);
  if (rc == 0 && sqlite3changeset_apply(db, n, p, NULL, side_conflict, &kept) != SQLITE_OK) {
    rpdfile_err(err, errlen, name, "cannot fold into %s: %s", path, sqlite3_errmsg(db));
    rc = NANO_RPDFILE_ESQLITE;
  }
  if (rc == 0)
    rc = nano_rpdfile_exec(db, path, "cannot commit a side file", "COMMIT", err, errlen);
  nano_rpdfile_busy_bound(old);
  free(p);
  if (rc != 0) {
    if (!sqlite3_get_autocommit(db))
      sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
  }
  r->files++;
  r->changes += (uint64_t)changes - kept;
  r->kept += kept;
  if (unlink(name) != 0 && errno != ENOENT) {
    rpdfile_err(err, errlen, name, "folded, but cannot remove it: %s", strerror(errno));
    return NANO_RPDFILE_EIO;
  }
  return 0;
}

int nano_rpdfile_fold(sqlite3 *db, const char *path, int wait_ms, struct nano_rpdfile_folded *r,
                      char *err, size_t errlen) {
  *r = (struct nano_rpdfile_folded){0};
  int count = 0, ret = 0;
  struct side_name *v = side_list(path, &count);
  for (int i = 0; i < count; i++) {
    char one[NANO_RPDFILE_ERRLEN];
    if (side_fold_one(db, path, v[i].name, wait_ms, r, one, sizeof one) != 0) {
      r->left++;
      if (ret == 0) {
        ret = NANO_RPDFILE_EIO;
        snprintf(err, errlen, "%s", one);
      }
    }
    free(v[i].name);
  }
  free(v);
  return ret;
}

int nano_rpdfile_fold_say(sqlite3 *db, const char *path, int wait_ms) {
  struct nano_rpdfile_folded r;
  char err[NANO_RPDFILE_ERRLEN];
  int rc = nano_rpdfile_fold(db, path, wait_ms, &r, err, sizeof err);
  if (r.files)
    fprintf(stderr,
            "nanoprobe: %s: folded in %d side file%s: %llu rows written while another process "
            "held the trace%s\n",
            path, r.files, r.files == 1 ? "" : "s", (unsigned long long)r.changes,
            r.kept ? " (rows it had already were kept)" : "");
  if (rc != 0)
    fprintf(stderr, "nanoprobe: %s: %d side file%s not folded in, their rows are missing: %s\n",
            path, r.left, r.left == 1 ? "" : "s", err);
  return r.left;
}
