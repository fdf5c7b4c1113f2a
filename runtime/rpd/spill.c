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
 * A region holds its parts (a ring's slots, its arena) packed on the
 * producer's thread before the file's lock is taken: copying rings into the
 * page cache was most of what a spilling producer paid (issue 42 part 2: 54%
 * of its cycles in the kernel's copy on the development VM, 3 ms a 1 MiB
 * ring). The slots are delta-coded first (below): a ring's records are mostly
 * the same words as the last record of their type and small steps of time,
 * which the code turns into 3 bytes a NANO_ZONE range in 3-4 ns, 4-5 a
 * record of nested ranges (pushes, pops and folded ranges mixed); zstd, which took
 * 26-44 ns a 64-byte slot however it was tuned (it sees every byte, 4.6 GB/s
 * even on zeros), then compresses what is left, and each part is one zstd
 * frame. A producer that cannot get a compressor writes the parts as they
 * are.
 *
 * The delta code of a part of 64-byte slots, each seen as eight 64-bit
 * words w[0..7] (a record's type is w[0]'s low byte, its t0 and t1 are w[1]
 * and w[2]), host byte order. Each slot is coded against two others (all
 * zeros where there is none): p, the slot before it, and q, the last slot
 * before it whose type has the same low 4 bits (a record's words are those
 * of the last record of its kind far more often than of its neighbour's):
 *
 *   bytes     what
 *   1         head: bits 0-1 the width class c1 of the step, bits 2-3 the
 *             class c2 of the length (a class c is 1 << c bytes), bit 4: a
 *             mask follows, bit 5: a type follows, bit 6: no length (w[2]
 *             equals q's)
 *   0 or 1    type: w[0]'s low byte, where it differs from p's (q is chosen
 *             by it)
 *   0 or 1    mask: bit 0 for w[0], bits 1-5 for w[3..7]: that word differs
 *             from q's and follows in full; a word not named equals q's
 *   1 << c1   step:   w[1] - p[1], its low bytes
 *   1 << c2   length: w[2] - w[1], its low bytes (not with bit 6)
 *   8 each    the words the mask names, in order
 *
 * A slot costs 3 bytes where only its times moved a little, 67 at most.
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
#include "rpd.h"
#include "rpd_internal.h"

#define SPILL_DEFAULT_MAX (4ull << 30) /* 4 GiB of live regions               */
/* zstd's level for rings: its fastest positive one (on rings, -1 was no
 * faster, -5 no faster and kept 3x more bytes). */
#define SPILL_ZSTD_LEVEL 1
/* The most parts a region holds (a ring's slots and arena). */
#define SPILL_PARTS_MAX 4
/* The delta code's unit: a ring slot of eight words. */
#define SPILL_SLOT_BYTES 64
#define SPILL_SLOT_WORDS 8
/* The most bytes one slot takes coded: head, type, mask, step, length, six
 * words. */
#define SPILL_SLOT_MAX (1 + 1 + 1 + 8 + 8 + 6 * 8)
/* Slots of types with the same low SPILL_KIND_BITS bits share a predictor
 * (q above; the tracer's types fit). */
#define SPILL_KIND_BITS 4
#define SPILL_KINDS (1u << SPILL_KIND_BITS)
/* Slots coded in at most this many bytes each on average are stored as
 * their code, not compressed further: a ring of NANO_ZONE ranges codes to
 * 3 bytes a slot, which zstd made 2 for another 9 ns a slot on the
 * development VM (a 15% share of the spilling producer's time), while a
 * ring of API rows, whose handles and texts differ from slot to slot, codes
 * to tens of bytes a slot that zstd still shrinks. */
#define SPILL_CODE_RAW_MAX 8
/* The head's fields (see the table above). */
#define SPILL_HEAD_MASK 0x10u
#define SPILL_HEAD_TYPE 0x20u
#define SPILL_HEAD_NO_LENGTH 0x40u
#define SPILL_HEAD_BITS 0x7fu
/* The mask's bit of w[0]; w[3..7] take bits 1-5. */
#define SPILL_MASK_W0 1u
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "a step's low bytes are its first bytes (the code is read by the process "
               "that wrote it)");
_Static_assert(sizeof(struct nano_rpd_rec) == SPILL_SLOT_BYTES, "a ring slot is the code's unit");

struct rpdi_spill_z {
  ZSTD_CCtx *cctx;
  unsigned char *buf; /* the region being made */
  size_t cap;
  unsigned char *code; /* the slots delta-coded */
  size_t code_cap;
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
static unsigned char *g_code; /* the slots' delta code, decompressed */
static size_t g_code_cap;

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
  struct iovec v[SPILL_PARTS_MAX];
  if (n > SPILL_PARTS_MAX)
    n = SPILL_PARTS_MAX;
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

/* The width class of step v: the fewest of 1, 2, 4, 8 bytes that hold it. */
static inline unsigned spill_class(uint64_t v) {
  return v <= 0xff ? 0 : v <= 0xffff ? 1 : v <= 0xffffffffu ? 2 : 3;
}

/* Delta-codes the n 64-byte slots at w into out, which has room for
 * n * SPILL_SLOT_MAX + 8 bytes (a step is stored as 8 bytes, of which the
 * next field overwrites what is not its own). Returns the code's bytes. */
static size_t spill_delta_put(const uint64_t *w, size_t n, unsigned char *out) {
  static const uint64_t none[SPILL_SLOT_WORDS];
  const uint64_t *p = none, *last[SPILL_KINDS];
  for (unsigned k = 0; k < SPILL_KINDS; k++)
    last[k] = none;
  unsigned char *o = out, ptype = 0;
  for (size_t i = 0; i < n; i++, p = w, w += SPILL_SLOT_WORDS) {
    /* q: p itself within a run of one type (the common case: no table
     * access); the table is written only where a run ends */
    unsigned type = (unsigned)(w[0] & 0xff), changed = type != ptype;
    const uint64_t *q = p;
    if (changed) {
      last[ptype & (SPILL_KINDS - 1)] = p;
      q = last[type & (SPILL_KINDS - 1)];
      ptype = (unsigned char)type;
    }
    uint64_t step = w[1] - p[1], len = w[2] - w[1];
    unsigned c1 = spill_class(step), c2 = spill_class(len);
    /* unrolled: the loop's form kept gcc from it, and this is the hot part */
    unsigned mask = (unsigned)(w[0] != q[0]) | (unsigned)(w[3] != q[3]) << 1 |
                    (unsigned)(w[4] != q[4]) << 2 | (unsigned)(w[5] != q[5]) << 3 |
                    (unsigned)(w[6] != q[6]) << 4 | (unsigned)(w[7] != q[7]) << 5;
    unsigned keep = w[2] == q[2]; /* t1 as q's: no length */
    unsigned head = c1 | (keep ? SPILL_HEAD_NO_LENGTH : c2 << 2) | (mask ? SPILL_HEAD_MASK : 0) |
                    (changed ? SPILL_HEAD_TYPE : 0);
    *o++ = (unsigned char)head;
    if (changed)
      *o++ = (unsigned char)type;
    if (mask)
      *o++ = (unsigned char)mask;
    memcpy(o, &step, 8);
    o += 1u << c1;
    if (!keep) {
      memcpy(o, &len, 8);
      o += 1u << c2;
    }
    if (__builtin_expect(mask != 0, 0)) {
      if (mask & SPILL_MASK_W0) {
        memcpy(o, &w[0], 8);
        o += 8;
      }
      for (int k = 3; k < SPILL_SLOT_WORDS; k++)
        if (mask & (1u << (k - 2))) {
          memcpy(o, &w[k], 8);
          o += 8;
        }
    }
  }
  return (size_t)(o - out);
}

/* Decodes `len` bytes of delta code into the n 64-byte slots at w, which
 * they must fill exactly; NULL, or what is wrong. */
static const char *spill_delta_get(const unsigned char *in, size_t len, uint64_t *w, size_t n) {
  static const uint64_t none[SPILL_SLOT_WORDS];
  const uint64_t *p = none, *last[SPILL_KINDS];
  for (unsigned k = 0; k < SPILL_KINDS; k++)
    last[k] = none;
  const unsigned char *end = in + len;
  unsigned ptype = 0;
  for (size_t i = 0; i < n; i++, p = w, w += SPILL_SLOT_WORDS) {
    if (in == end)
      return "fewer slots than the part holds";
    unsigned head = *in++;
    if (head & ~SPILL_HEAD_BITS)
      return "a slot's code is cut short or damaged";
    size_t w1 = (size_t)1 << (head & 3), w2 = (size_t)1 << (head >> 2 & 3);
    if (head & SPILL_HEAD_NO_LENGTH)
      w2 = 0;
    size_t fixed = !!(head & SPILL_HEAD_TYPE) + !!(head & SPILL_HEAD_MASK);
    if ((size_t)(end - in) < fixed)
      return "a slot's code is cut short or damaged";
    unsigned type = head & SPILL_HEAD_TYPE ? *in++ : ptype;
    unsigned mask = head & SPILL_HEAD_MASK ? *in++ : 0;
    const uint64_t *q = p;
    if (type != ptype) {
      last[ptype & (SPILL_KINDS - 1)] = p;
      q = last[type & (SPILL_KINDS - 1)];
      ptype = type;
    }
    size_t need = w1 + w2 + 8 * (size_t)__builtin_popcount(mask);
    if (mask > 0x3f || (size_t)(end - in) < need)
      return "a slot's code is cut short or damaged";
    uint64_t step = 0, length = 0;
    memcpy(&step, in, w1);
    in += w1;
    memcpy(&length, in, w2);
    in += w2;
    w[1] = p[1] + step;
    w[2] = head & SPILL_HEAD_NO_LENGTH ? q[2] : w[1] + length;
    w[0] = q[0];
    if (mask & SPILL_MASK_W0) {
      memcpy(&w[0], in, 8);
      in += 8;
    }
    for (int k = 3; k < SPILL_SLOT_WORDS; k++) {
      w[k] = q[k];
      if (mask & (1u << (k - 2))) {
        memcpy(&w[k], in, 8);
        in += 8;
      }
    }
    if ((w[0] & 0xff) != type)
      return "a slot's type is not the one its code names";
  }
  return in == end ? NULL : "bytes after the last slot";
}

/* The n parts packed into (*zp)->buf (the compressor made at the first
 * call): part 0 (ring slots) delta-coded, that code as it is where it is at
 * most SPILL_CODE_RAW_MAX bytes a slot (*code: its bytes) and else a zstd
 * frame (*code 0), then every other part a zstd frame. Returns their bytes
 * there, or 0 when they cannot be packed. */
static size_t spill_pack(struct rpdi_spill_z **zp, const struct iovec *iov, int n, uint32_t *code) {
  struct rpdi_spill_z *z = *zp ? *zp : (*zp = calloc(1, sizeof **zp));
  if (n > SPILL_PARTS_MAX || !z || (!z->cctx && !(z->cctx = ZSTD_createCCtx())))
    return 0;
  size_t slots = iov[0].iov_len / SPILL_SLOT_BYTES;
  if (spill_room(&z->code, &z->code_cap, slots * SPILL_SLOT_MAX + 8) != 0)
    return 0;
  size_t len = spill_delta_put(iov[0].iov_base, slots, z->code);
  *code = len <= slots * SPILL_CODE_RAW_MAX ? (uint32_t)len : 0;
  size_t bound = *code ? len : ZSTD_compressBound(len), at = 0;
  for (int i = 1; i < n; i++)
    bound += ZSTD_compressBound(iov[i].iov_len);
  if (spill_room(&z->buf, &z->cap, bound) != 0)
    return 0;
  for (int i = 0; i < n; i++) {
    const void *src = i ? iov[i].iov_base : z->code;
    size_t bytes = i ? iov[i].iov_len : len;
    size_t k = i == 0 && *code ? (memcpy(z->buf, src, bytes), bytes)
                               : ZSTD_compressCCtx(z->cctx, z->buf + at, z->cap - at, src, bytes,
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
  uint32_t code = 0;
  size_t packed = spill_pack(z, iov, n, &code);
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
  *out = (struct rpdi_spill_region){(int64_t)g_end, stored, bytes, n, packed != 0, code};
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

/* Decompresses the frame at `at` (`left` bytes from there) into `into`,
 * which it must fill exactly, or, with into NULL, into g_code (grown to
 * its size, at most `most`, stored in *len); its bytes in *frame. NULL, or
 * what is wrong. */
static const char *spill_frame(const unsigned char *at, size_t left, const struct iovec *into,
                               size_t most, size_t *len, size_t *frame) {
  *frame = ZSTD_findFrameCompressedSize(at, left);
  if (ZSTD_isError(*frame))
    return ZSTD_getErrorName(*frame);
  void *dst = into ? into->iov_base : NULL;
  size_t cap = into ? into->iov_len : 0;
  if (!into) {
    unsigned long long size = ZSTD_getFrameContentSize(at, *frame);
    if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR || size > most)
      return "a frame of no known size, or too large";
    if (spill_room(&g_code, &g_code_cap, (size_t)size) != 0)
      return "out of memory";
    dst = g_code;
    cap = (size_t)size;
  }
  size_t k = ZSTD_decompressDCtx(g_dctx, dst, cap, at, *frame);
  if (ZSTD_isError(k))
    return ZSTD_getErrorName(k);
  if (k != cap)
    return "a part of another size";
  *len = k;
  return NULL;
}

/* Unpacks region r, read into g_rbuf, into the n parts, each of which it
 * must fill exactly (part 0 through its delta code); NULL, or what is
 * wrong. */
static const char *spill_unpack(const struct rpdi_spill_region *r, const struct iovec *iov, int n) {
  if (!g_dctx && !(g_dctx = ZSTD_createDCtx()))
    return "out of memory";
  const unsigned char *at = g_rbuf;
  size_t left = r->stored;
  size_t slots = iov[0].iov_len / SPILL_SLOT_BYTES;
  for (int i = 0; i < n; i++) {
    size_t frame = r->code, len = r->code;
    const char *why = i == 0 && r->code ? (r->code > left ? "a part cut short" : NULL)
                                        : spill_frame(at, left, i ? &iov[i] : NULL,
                                                      slots * SPILL_SLOT_MAX + 8, &len, &frame);
    if (!why && i == 0)
      why = spill_delta_get(r->code ? at : g_code, len, iov[0].iov_base, slots);
    if (why)
      return why;
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
  free(g_code);
  g_code = NULL;
  g_code_cap = 0;
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
