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
 *
 * A region holds its parts (a ring's slots, its arena) as zstd frames, one
 * per part, made on the producer's thread before the file's lock is taken:
 * a ring's slots are mostly zeros and small steps of time (a 1 MiB ring of
 * NANO_ZONE ranges takes 32 KiB), and copying rings into the page cache was
 * most of what a spilling producer paid (issue 42 part 2: 54% of its cycles
 * in the kernel's copy on the development VM, 3 ms a ring, against 0.5 ms
 * to compress one). A producer that cannot get a compressor writes the
 * parts as they are.
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
#include <zstd.h>

#include "nano/settings.h"
#include "rpd_internal.h"

#define SPILL_DEFAULT_MAX (4ull << 30) /* 4 GiB of live regions               */
/* zstd's level for rings: its fastest positive one (on rings, -1 was no
 * faster, -5 no faster and kept 3x more bytes). */
#define SPILL_ZSTD_LEVEL 1

struct rpdi_spill_z {
  ZSTD_CCtx *cctx;
  unsigned char *buf; /* the region being made */
  size_t cap;
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* everything below */
static uint64_t g_max = SPILL_DEFAULT_MAX;               /* NANO_RPD_OVERFLOW_FILE; 0: never  */
static char g_dir[PATH_MAX];                             /* where the file goes              */
static int g_fd = -1;
static uint64_t g_end;                          /* next region's offset             */
static uint64_t g_live;                         /* bytes of regions not released    */
static uint64_t g_peak;                         /* most live bytes at once          */
static uint64_t g_live_records, g_peak_records; /* the same, of the parts they hold */
static int g_no_punch;                          /* the filesystem cannot punch holes */
static int g_failed;                            /* the file could not be made or written */
/* The writer's decompressor and the buffer it reads regions into
 * (rpdi_spill_read: the writer's thread only). */
static ZSTD_DCtx *g_dctx;
static unsigned char *g_rbuf;
static size_t g_rcap;

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

/* *buf grown to hold n bytes (its contents not kept); 0, or -1. */
static int spill_room(unsigned char **buf, size_t *cap, size_t n) {
  if (*cap >= n)
    return 0;
  unsigned char *grown = malloc(n);
  if (!grown)
    return -1;
  free(*buf);
  *buf = grown;
  *cap = n;
  return 0;
}

/* The n parts compressed into (*zp)->buf, one frame each (the compressor
 * made at the first call): their bytes there, or 0 when they cannot be. */
static size_t spill_pack(struct rpdi_spill_z **zp, const struct iovec *iov, int n) {
  struct rpdi_spill_z *z = *zp ? *zp : (*zp = calloc(1, sizeof **zp));
  if (!z || (!z->cctx && !(z->cctx = ZSTD_createCCtx())))
    return 0;
  size_t bound = 0, at = 0;
  for (int i = 0; i < n; i++)
    bound += ZSTD_compressBound(iov[i].iov_len);
  if (spill_room(&z->buf, &z->cap, bound) != 0)
    return 0;
  for (int i = 0; i < n; i++) {
    size_t k = ZSTD_compressCCtx(z->cctx, z->buf + at, z->cap - at, iov[i].iov_base, iov[i].iov_len,
                                 SPILL_ZSTD_LEVEL);
    if (ZSTD_isError(k))
      return 0;
    at += k;
  }
  return at;
}

int rpdi_spill_write(struct rpdi_spill_z **z, const struct iovec *iov, int n,
                     struct rpdi_spill_region *out) {
  uint64_t bytes = 0;
  for (int i = 0; i < n; i++)
    bytes += iov[i].iov_len;
  size_t packed = spill_pack(z, iov, n);
  struct iovec frames = {packed ? (*z)->buf : NULL, packed};
  uint64_t stored = packed ? packed : bytes;
  pthread_mutex_lock(&g_mu);
  uint64_t used = g_no_punch ? g_end : g_live;
  if (g_failed || used + stored > g_max || (g_fd < 0 && spill_create() != 0)) {
    if (g_fd < 0)
      g_failed = 1;
    pthread_mutex_unlock(&g_mu);
    return -1;
  }
  *out = (struct rpdi_spill_region){(int64_t)g_end, stored, bytes, n, packed != 0};
  g_end += stored;
  g_live += stored;
  g_live_records += bytes;
  int fd = g_fd;
  pthread_mutex_unlock(&g_mu);

  /* the region is ours: no lock */
  int err = packed ? spill_io(1, fd, &frames, 1, out->off, stored)
                   : spill_io(1, fd, iov, n, out->off, stored);
  if (err) {
    pthread_mutex_lock(&g_mu);
    if (!g_failed)
      fprintf(stderr,
              "nanoprobe rpd: cannot write the overflow file in %s: %s; producers wait for "
              "the writer instead\n",
              g_dir, strerror(err));
    g_failed = 1;
    pthread_mutex_unlock(&g_mu);
    rpdi_spill_release(out);
    return -1;
  }
  pthread_mutex_lock(&g_mu);
  if (g_live > g_peak)
    g_peak = g_live;
  if (g_live_records > g_peak_records)
    g_peak_records = g_live_records;
  pthread_mutex_unlock(&g_mu);
  return 0;
}

/* Decompresses the frames of region r, read into g_rbuf, into the n
 * parts, each of which they must fill exactly; NULL, or what is wrong. */
static const char *spill_unpack(const struct rpdi_spill_region *r, const struct iovec *iov, int n) {
  if (!g_dctx && !(g_dctx = ZSTD_createDCtx()))
    return "out of memory";
  const unsigned char *at = g_rbuf;
  size_t left = r->stored;
  for (int i = 0; i < n; i++) {
    size_t frame = ZSTD_findFrameCompressedSize(at, left);
    if (ZSTD_isError(frame))
      return ZSTD_getErrorName(frame);
    size_t k = ZSTD_decompressDCtx(g_dctx, iov[i].iov_base, iov[i].iov_len, at, frame);
    if (ZSTD_isError(k))
      return ZSTD_getErrorName(k);
    if (k != iov[i].iov_len)
      return "a part of another size";
    at += frame;
    left -= frame;
  }
  return left ? "bytes after the last part" : NULL;
}

int rpdi_spill_read(const struct rpdi_spill_region *r, const struct iovec *iov, int n) {
  const char *why = NULL;
  if (n > r->parts)
    n = r->parts;
  if (!r->packed) {
    int err = spill_io(0, g_fd, iov, n, r->off, r->stored);
    why = err ? strerror(err) : NULL;
  } else if (spill_room(&g_rbuf, &g_rcap, r->stored) != 0) {
    why = "out of memory";
  } else {
    struct iovec all = {g_rbuf, r->stored};
    int err = spill_io(0, g_fd, &all, 1, r->off, r->stored);
    why = err ? strerror(err) : spill_unpack(r, iov, n);
  }
  if (why)
    fprintf(stderr, "nanoprobe rpd: cannot read the overflow file in %s: %s\n", g_dir, why);
  return why ? -1 : 0;
}

void rpdi_spill_release(const struct rpdi_spill_region *r) {
  pthread_mutex_lock(&g_mu);
  if (!g_no_punch &&
      fallocate(g_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, r->off, (off_t)r->stored) != 0)
    g_no_punch = 1; /* the bound then holds the file's end */
  g_live -= r->stored;
  g_live_records -= r->bytes;
  if (g_live == 0) {
    g_end = 0;
    if (ftruncate(g_fd, 0) != 0)
      g_no_punch = 1;
  }
  pthread_mutex_unlock(&g_mu);
}

void rpdi_spill_close(uint64_t *peak_records, uint64_t *peak_file) {
  pthread_mutex_lock(&g_mu);
  if (g_fd >= 0)
    close(g_fd);
  g_fd = -1;
  g_end = g_live = g_live_records = 0;
  *peak_records = g_peak_records;
  *peak_file = g_peak;
  g_peak = g_peak_records = 0;
  ZSTD_freeDCtx(g_dctx); /* the writer's, which ends here */
  g_dctx = NULL;
  free(g_rbuf);
  g_rbuf = NULL;
  g_rcap = 0;
  pthread_mutex_unlock(&g_mu);
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
  g_end = g_live = g_peak = g_live_records = g_peak_records = 0;
  g_failed = 0;
}
