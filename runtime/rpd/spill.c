/*
 * spill.c: the overflow store's file (see "segments" in producer.c).
 *
 * When the rings a writer has not drained yet hold more than
 * NANO_RPD_OVERFLOW_MEMORY bytes, a producer that fills a ring writes it here
 * and frees its arrays; the writer reads it back when it gets to it. One
 * file per process, created at the first spill and unlinked at once
 * (O_TMPFILE, else mkstemp + unlink), in NANO_RPD_OVERFLOW_DIR or the trace's
 * folder: the data of a trace goes where the trace goes, never to a /tmp
 * that may be small or in memory. What it holds is lost on SIGKILL, as the
 * rings in memory are; a crash signal's bounded wait covers it as it covers
 * them.
 *
 * Layout: regions appended at g_end; a region read back is released (its
 * blocks punched out, so the disk holds only what is live), and when nothing
 * is live the file is truncated and regions start at 0 again. The bound,
 * NANO_RPD_OVERFLOW_FILE, applies to the live bytes (to the file's end where
 * the filesystem cannot punch holes).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "nano/settings.h"
#include "rpd_internal.h"

#define SPILL_DEFAULT_MAX (4ull << 30) /* 4 GiB of live regions               */

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* everything below */
static uint64_t g_max = SPILL_DEFAULT_MAX;               /* NANO_RPD_OVERFLOW_FILE; 0: never  */
static char g_dir[PATH_MAX];                             /* where the file goes              */
static int g_fd = -1;
static uint64_t g_end;  /* next region's offset             */
static uint64_t g_live; /* bytes of regions not released    */
static uint64_t g_peak; /* most live bytes at once          */
static int g_no_punch;  /* the filesystem cannot punch holes */
static int g_failed;    /* the file could not be made or written */

void rpdi_spill_init(void) {
  nano_env_size("NANO_RPD_OVERFLOW_FILE", 0, RPDI_MAX_OVERFLOW_BYTES, &g_max);
}

void rpdi_spill_configure(const char *trace_path) {
  pthread_mutex_lock(&g_mu);
  const char *dir = nano_env_str("NANO_RPD_OVERFLOW_DIR");
  if (dir && *dir) {
    snprintf(g_dir, sizeof g_dir, "%s", dir);
  } else {
    snprintf(g_dir, sizeof g_dir, "%s", trace_path);
    char *slash = strrchr(g_dir, '/');
    if (!slash)
      snprintf(g_dir, sizeof g_dir, ".");
    else if (slash == g_dir)
      slash[1] = 0;
    else
      *slash = 0;
  }
  g_failed = 0;
  pthread_mutex_unlock(&g_mu);
}

/* Creates the unlinked file in g_dir. g_mu held. Returns 0 or -1 (said). */
static int spill_create(void) {
  g_fd = open(g_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (g_fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/.nanoprobe-overflow-XXXXXX", g_dir);
    g_fd = mkostemp(path, O_CLOEXEC);
    if (g_fd >= 0 && unlink(path) != 0) {
      fprintf(stderr, "nanoprobe rpd: cannot unlink the overflow file %s: %s\n", path,
              strerror(errno));
    }
  }
  if (g_fd < 0) {
    fprintf(stderr,
            "nanoprobe rpd: cannot create the overflow file in %s: %s (set "
            "NANO_RPD_OVERFLOW_DIR); producers wait for the writer instead\n",
            g_dir, strerror(errno));
    return -1;
  }
  return 0;
}

/* Moves the vector v[first..] past `len` bytes done; returns the new first. */
static int spill_advance(struct iovec *v, int first, size_t len) {
  while (len) {
    size_t step = len < v[first].iov_len ? len : v[first].iov_len;
    v[first].iov_base = (char *)v[first].iov_base + step;
    v[first].iov_len -= step;
    len -= step;
    if (!v[first].iov_len)
      first++;
  }
  return first;
}

/* Writes (or reads) the n (at most 4) parts, `bytes` in all, at `off` of fd,
 * through short transfers and EINTR. Returns 0, or an errno value (ENOSPC
 * for a write that wrote nothing, EIO for a read past the end). */
static int spill_io(int write, int fd, const struct iovec *iov, int n, int64_t off,
                    uint64_t bytes) {
  struct iovec v[4];
  if (n > 4)
    n = 4;
  memcpy(v, iov, (size_t)n * sizeof *v);
  uint64_t done = 0;
  int first = 0;
  while (done < bytes) {
    off_t at = off + (off_t)done;
    ssize_t k =
        write ? pwritev(fd, v + first, n - first, at) : preadv(fd, v + first, n - first, at);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return k < 0 ? errno : write ? ENOSPC : EIO;
    done += (uint64_t)k;
    first = spill_advance(v, first, (size_t)k);
  }
  return 0;
}

int64_t rpdi_spill_write(const struct iovec *iov, int n, uint64_t bytes) {
  pthread_mutex_lock(&g_mu);
  uint64_t used = g_no_punch ? g_end : g_live;
  if (g_failed || used + bytes > g_max || (g_fd < 0 && spill_create() != 0)) {
    if (g_fd < 0)
      g_failed = 1;
    pthread_mutex_unlock(&g_mu);
    return -1;
  }
  int64_t off = (int64_t)g_end;
  g_end += bytes;
  g_live += bytes;
  int fd = g_fd;
  pthread_mutex_unlock(&g_mu);

  int err = spill_io(1, fd, iov, n, off, bytes); /* the region is ours: no lock */
  if (err) {
    pthread_mutex_lock(&g_mu);
    if (!g_failed)
      fprintf(stderr,
              "nanoprobe rpd: cannot write the overflow file in %s: %s; producers wait for "
              "the writer instead\n",
              g_dir, strerror(err));
    g_failed = 1;
    pthread_mutex_unlock(&g_mu);
    rpdi_spill_release(off, bytes);
    return -1;
  }
  pthread_mutex_lock(&g_mu);
  if (g_live > g_peak)
    g_peak = g_live;
  pthread_mutex_unlock(&g_mu);
  return off;
}

int rpdi_spill_read(int64_t off, const struct iovec *iov, int n, uint64_t bytes) {
  int err = spill_io(0, g_fd, iov, n, off, bytes);
  if (err)
    fprintf(stderr, "nanoprobe rpd: cannot read the overflow file in %s: %s\n", g_dir,
            strerror(err));
  return err ? -1 : 0;
}

void rpdi_spill_release(int64_t off, uint64_t bytes) {
  pthread_mutex_lock(&g_mu);
  if (!g_no_punch &&
      fallocate(g_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, (off_t)bytes) != 0)
    g_no_punch = 1; /* the bound then holds the file's end */
  g_live -= bytes;
  if (g_live == 0) {
    g_end = 0;
    if (ftruncate(g_fd, 0) != 0)
      g_no_punch = 1;
  }
  pthread_mutex_unlock(&g_mu);
}

uint64_t rpdi_spill_close(void) {
  pthread_mutex_lock(&g_mu);
  if (g_fd >= 0)
    close(g_fd);
  g_fd = -1;
  g_end = g_live = 0;
  uint64_t peak = g_peak;
  g_peak = 0;
  pthread_mutex_unlock(&g_mu);
  return peak;
}

const char *rpdi_spill_dir(void) { return g_dir; }

void rpdi_spill_atfork_prepare(void) { pthread_mutex_lock(&g_mu); }
void rpdi_spill_atfork_parent(void) { pthread_mutex_unlock(&g_mu); }

/* The parent's file is not the child's: its regions are the parent's. */
void rpdi_spill_atfork_child(void) {
  pthread_mutex_init(&g_mu, NULL);
  if (g_fd >= 0)
    close(g_fd);
  g_fd = -1;
  g_end = g_live = g_peak = 0;
  g_failed = 0;
}
