/*
** kerneldb core: opening inputs, the container formats (clang offload
** bundles, compressed bundles, host ELF files with fat binary sections),
** the arena, name lookup, demangling and twin pairing.
**
** Every size and offset read from the input is checked against the bytes
** that hold it before use; decompression grows its output only as data is
** produced and stops at the claimed size and at the process-wide limit.
*/
#define _GNU_SOURCE
#include "kdb_internal.h"
#include "nano/hash.h"
#include "nano/thread.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

/* libstdc++'s demangler (C ABI). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* ---- arena --------------------------------------------------------------- */
struct kdb_arena_block {
  kdb_arena_block *next;
  size_t used, cap;
  _Alignas(16) unsigned char mem[];
};

#define KDB_ARENA_BLOCK (64 * 1024)

void *kdb_arena_alloc(kdb_arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  kdb_arena_block *b = a->head;
  if (!b || b->cap - b->used < n) {
    size_t cap = n > KDB_ARENA_BLOCK ? n : KDB_ARENA_BLOCK;
    b = calloc(1, sizeof *b + cap);
    if (!b)
      return NULL;
    b->cap = cap;
    b->next = a->head;
    a->head = b;
  }
  void *p = b->mem + b->used;
  b->used += n;
  return p;
}

char *kdb_arena_strndup(kdb_arena *a, const char *s, size_t n) {
  char *d = kdb_arena_alloc(a, n + 1);
  if (!d)
    return NULL;
  memcpy(d, s, n);
  d[n] = 0;
  return d;
}

char *kdb_arena_strdup(kdb_arena *a, const char *s) { return kdb_arena_strndup(a, s, strlen(s)); }

/* kdb_shared_str's table starts with this many slots, doubled at half full. */
#define KDB_SHARED_INITIAL 256

/* The slot of the n bytes at s in a table of cap slots (FNV-1a, linear
** probing): the string's, or the empty one it would take. */
static size_t kdb_shared_slot(const char **t, size_t cap, const char *s, size_t n) {
  size_t i = (size_t)nano_fnv64(NANO_FNV64_OFFSET, s, n) & (cap - 1);
  while (t[i] && (strncmp(t[i], s, n) != 0 || t[i][n] != 0))
    i = (i + 1) & (cap - 1);
  return i;
}

const char *kdb_shared_str(kdb *db, const char *s, size_t n) {
  if (2 * (db->shared_n + 1) > db->shared_cap) {
    size_t cap = db->shared_cap ? 2 * db->shared_cap : KDB_SHARED_INITIAL;
    const char **t = calloc(cap, sizeof *t);
    if (!t)
      return NULL;
    for (size_t i = 0; i < db->shared_cap; i++)
      if (db->shared[i])
        t[kdb_shared_slot(t, cap, db->shared[i], strlen(db->shared[i]))] = db->shared[i];
    free(db->shared);
    db->shared = t;
    db->shared_cap = cap;
  }
  size_t i = kdb_shared_slot(db->shared, db->shared_cap, s, n);
  if (!db->shared[i]) {
    if (!(db->shared[i] = kdb_arena_strndup(&db->arena, s, n)))
      return NULL;
    db->shared_n++;
  }
  return db->shared[i];
}

void kdb_arena_free(kdb_arena *a) {
  kdb_arena_block *b = a->head;
  while (b) {
    kdb_arena_block *n = b->next;
    free(b);
    b = n;
  }
  a->head = NULL;
}

/* ---- errors and arrays ---------------------------------------------------- */
int kdb_fail(kdb_err *e, const char *name, const char *fmt, ...) {
  if (e && e->buf && e->len) {
    int k = snprintf(e->buf, e->len, "%s: ", name ? name : "(input)");
    if (k >= 0 && (size_t)k < e->len) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(e->buf + k, e->len - (size_t)k, fmt, ap);
      va_end(ap);
    }
  }
  return -1;
}

/* Swaps the esz-byte elements at a and b. */
static void kdb_swap(unsigned char *a, unsigned char *b, size_t esz) {
  unsigned char t[KDB_SORT_MAX_ELEMENT];
  memcpy(t, a, esz);
  memcpy(a, b, esz);
  memcpy(b, t, esz);
}

/* Moves element i of the heap [0, n) down to its place (a max-heap by cmp). */
static void kdb_sift(unsigned char *v, size_t i, size_t n, size_t esz,
                     int (*cmp)(const void *, const void *)) {
  for (size_t c; (c = 2 * i + 1) < n; i = c) {
    if (c + 1 < n && cmp(v + c * esz, v + (c + 1) * esz) < 0)
      c++;
    if (cmp(v + i * esz, v + c * esz) >= 0)
      return;
    kdb_swap(v + i * esz, v + c * esz, esz);
  }
}

void kdb_sort(void *base, size_t n, size_t esz, int (*cmp)(const void *, const void *)) {
  unsigned char *v = base;
  if (n < 2 || esz > KDB_SORT_MAX_ELEMENT)
    return;
  for (size_t i = n / 2; i-- > 0;)
    kdb_sift(v, i, n, esz, cmp);
  for (size_t end = n - 1; end > 0; end--) {
    kdb_swap(v, v + end * esz, esz);
    kdb_sift(v, 0, end, esz, cmp);
  }
}

int kdb_reserve(void **p, size_t *cap, size_t need, size_t esz) {
  if (need <= *cap)
    return 0;
  size_t n = *cap ? *cap * 2 : 16;
  while (n < need)
    n *= 2;
  if (n > SIZE_MAX / esz)
    return -1;
  void *q = realloc(*p, n * esz);
  if (!q)
    return -1;
  *p = q;
  *cap = n;
  return 0;
}

kdb_co_priv *kdb_add_co(kdb *db) {
  if (kdb_reserve((void **)&db->cos, &db->cap_cos, db->ncos + 1, sizeof *db->cos))
    return NULL;
  kdb_co_priv *co = calloc(1, sizeof *co);
  if (!co)
    return NULL;
  if (pthread_mutex_init(&co->lock, NULL)) {
    free(co);
    return NULL;
  }
  co->pub.index = db->ncos;
  db->cos[db->ncos++] = co;
  return co;
}

kdb_kernel_priv *kdb_add_kernel(kdb *db, kdb_co_priv *co) {
  if (kdb_reserve((void **)&db->kernels, &db->cap_kernels, db->nkernels + 1, sizeof *db->kernels))
    return NULL;
  kdb_kernel_priv *k = kdb_arena_alloc(&db->arena, sizeof *k);
  if (!k)
    return NULL;
  k->pub.index = db->nkernels;
  k->pub.co = &co->pub;
  atomic_init(&k->isa, NULL);
  if (co->pub.kernel_count == 0) /* a code object's kernels are added together */
    co->first_kernel = db->nkernels;
  db->kernels[db->nkernels++] = k;
  co->pub.kernel_count++;
  return k;
}

uint32_t kdb_natural_align(uint32_t off, uint32_t size) {
  uint32_t a = 1;
  while (a < 16 && a < size && off % (a * 2) == 0)
    a *= 2;
  return a;
}

/* ---- names --------------------------------------------------------------- */
#define KDB_TWIN_PREFIX "__nano_twin_"

/* A demangled name without the return type templates carry ("void f<int>(int)"
** -> "f<int>(int)"): the part after the last space before the first '<' or '('. */
static const char *kdb_sans_return(const char *d) {
  size_t stop = strcspn(d, "<(");
  const char *r = d;
  for (size_t i = 0; i < stop; i++)
    if (d[i] == ' ')
      r = d + i + 1;
  return r;
}

const char *kdb_demangle(kdb *db, const char *name) {
  const char *body = name;
  size_t plen = strlen(KDB_TWIN_PREFIX);
  if (strncmp(name, KDB_TWIN_PREFIX, plen) == 0)
    body = name + plen;
  if (strncmp(body, "_Z", 2) != 0)
    return name;
  int status = 0;
  char *d = __cxa_demangle(body, NULL, NULL, &status);
  if (!d || status != 0) {
    free(d);
    return name;
  }
  const char *r;
  if (body != name) {
    /* The prefix goes on the function name: "void __nano_twin_f<int>(int*, void*)". */
    size_t n = plen + strlen(d), at = (size_t)(kdb_sans_return(d) - d);
    char *t = kdb_arena_alloc(&db->arena, n + 1);
    if (t)
      snprintf(t, n + 1, "%.*s%s%s", (int)at, d, KDB_TWIN_PREFIX, d + at);
    r = t ? t : name;
  } else {
    r = kdb_arena_strdup(&db->arena, d);
    if (!r)
      r = name;
  }
  free(d);
  return r;
}

/* True when the Itanium-mangled function name n has an empty parameter list
** (its encoding ends in the lone "v" of "()"), decided by the demangler. */
static int kdb_twin_is_void_list(const char *n) {
  int status = 0;
  char *d = __cxa_demangle(n, NULL, NULL, &status);
  if (!d || status != 0) {
    free(d);
    return 0;
  }
  size_t dl = strlen(d);
  int r = dl >= 2 && strcmp(d + dl - 2, "()") == 0;
  free(d);
  return r;
}

char *kdb_twin_name(const char *n) {
  size_t len = strlen(n), plen = strlen(KDB_TWIN_PREFIX);
  char *t = malloc(plen + len + 3);
  if (!t)
    return NULL;
  memcpy(t, KDB_TWIN_PREFIX, plen);
  memcpy(t + plen, n, len + 1);
  if (strncmp(n, "_Z", 2) != 0)
    return t;
  /* Itanium: one more trailing parameter "Pv"; an empty list "v" becomes "Pv". */
  if (len > 2 && n[len - 1] == 'v' && kdb_twin_is_void_list(n))
    memcpy(t + plen + len - 1, "Pv", 3);
  else
    memcpy(t + plen + len, "Pv", 3);
  return t;
}

static int kdb_cmp_strp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void kdb_pair_twins(kdb *db, size_t first) {
  size_t plen = strlen(KDB_TWIN_PREFIX), ntw = 0;
  for (size_t i = first; i < db->nkernels; i++)
    if (strncmp(db->kernels[i]->pub.name, KDB_TWIN_PREFIX, plen) == 0)
      ntw++;
  if (!ntw)
    return;
  kdb_kernel_priv **tw = malloc(ntw * sizeof *tw);
  if (!tw)
    return; /* pairing is best effort: no twins reported */
  size_t j = 0;
  for (size_t i = first; i < db->nkernels; i++)
    if (strncmp(db->kernels[i]->pub.name, KDB_TWIN_PREFIX, plen) == 0)
      tw[j++] = db->kernels[i];
  /* kdb_kernel_priv starts with kdb_kernel whose name is a const char *: sort
  ** by name through a key array to keep the comparison simple. */
  const char **keys = malloc(ntw * 2 * sizeof *keys);
  if (!keys) {
    free(tw);
    return;
  }
  for (size_t i = 0; i < ntw; i++) {
    keys[2 * i] = tw[i]->pub.name;
    keys[2 * i + 1] = (const char *)tw[i];
  }
  qsort(keys, ntw, 2 * sizeof *keys, kdb_cmp_strp);
  for (size_t i = first; i < db->nkernels; i++) {
    kdb_kernel *k = &db->kernels[i]->pub;
    if (strncmp(k->name, KDB_TWIN_PREFIX, plen) == 0)
      continue;
    char *want = kdb_twin_name(k->name);
    if (!want)
      continue;
    const char *key = want;
    const char **hit = bsearch(&key, keys, ntw, 2 * sizeof *keys, kdb_cmp_strp);
    free(want);
    if (!hit)
      continue;
    kdb_kernel *t = &((kdb_kernel_priv *)(void *)hit[1])->pub;
    k->twin = t;
    t->original = k;
    t->twin_arg_index = k->explicit_arg_count;
  }
  free(keys);
  free(tw);
}

/* ---- lookup -------------------------------------------------------------- */
static int kdb_prefix(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

long kdb_find_kernels(const kdb *db, const char *q, const char *arch, const kdb_kernel **out,
                      size_t cap) {
  size_t n = 0;
  /* Pass 0: exact names. Pass 1: prefixes, pass 2: substrings (of the
   * mangled or demangled name), each of which must name one kernel. */
  for (int pass = 0; pass < 3; pass++) {
    size_t distinct = 0;
    n = 0;
    for (size_t i = 0; i < db->nkernels; i++) {
      const kdb_kernel *k = &db->kernels[i]->pub;
      if (arch && !kdb_target_matches(k->co, arch))
        continue;
      int m = pass == 0   ? (strcmp(k->name, q) == 0 || strcmp(k->demangled, q) == 0)
              : pass == 1 ? (kdb_prefix(k->name, q) || kdb_prefix(k->demangled, q) ||
                             kdb_prefix(kdb_sans_return(k->demangled), q))
                          : (strstr(k->name, q) != NULL || strstr(k->demangled, q) != NULL);
      if (!m)
        continue;
      /* The same name in another code object is the same kernel. */
      int seen = 0;
      for (size_t j = 0; j < n && j < cap && !seen; j++)
        seen = strcmp(out[j]->name, k->name) == 0;
      if (!seen)
        distinct++;
      if (n < cap)
        out[n] = k;
      n++;
    }
    if (distinct > 1) {
      /* Keep one kernel per distinct name in out. */
      size_t w = 0;
      for (size_t j = 0; j < n && j < cap; j++) {
        int dup = 0;
        for (size_t l = 0; l < w; l++)
          if (strcmp(out[l]->name, out[j]->name) == 0)
            dup = 1;
        if (!dup)
          out[w++] = out[j];
      }
      return -(long)distinct;
    }
    if (n)
      return (long)n;
  }
  return 0;
}

/* ---- msgpack bounds check -------------------------------------------------- */
/* Skips one msgpack object at *pos; containers' counts must fit in the bytes
** left (every element needs at least one byte). Depth bounded. */
static int kdb_mp_skip(const uint8_t *p, size_t n, size_t *pos, int depth) {
  if (depth > 64 || *pos >= n)
    return -1;
  uint8_t t = p[(*pos)++];
  uint64_t cnt = 0, len = 0;
  int items = 0; /* 0 scalar/bytes, 1 array, 2 map */
#define KDB_NEED(k)                                                                                \
  do {                                                                                             \
    if (n - *pos < (k))                                                                            \
      return -1;                                                                                   \
  } while (0)
#define KDB_BE(k, v)                                                                               \
  do {                                                                                             \
    KDB_NEED(k);                                                                                   \
    v = 0;                                                                                         \
    for (int i_ = 0; i_ < (k); i_++)                                                               \
      v = (v << 8) | p[(*pos)++];                                                                  \
  } while (0)
  if (t <= 0x7f || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3)
    return 0;
  if ((t & 0xf0) == 0x80) {
    cnt = t & 0x0f;
    items = 2;
  } else if ((t & 0xf0) == 0x90) {
    cnt = t & 0x0f;
    items = 1;
  } else if ((t & 0xe0) == 0xa0)
    len = t & 0x1f;
  else
    switch (t) {
    case 0xc4:
    case 0xd9:
      KDB_BE(1, len);
      break;
    case 0xc5:
    case 0xda:
      KDB_BE(2, len);
      break;
    case 0xc6:
    case 0xdb:
      KDB_BE(4, len);
      break;
    case 0xc7:
      KDB_BE(1, len);
      len += 1;
      break;
    case 0xc8:
      KDB_BE(2, len);
      len += 1;
      break;
    case 0xc9:
      KDB_BE(4, len);
      len += 1;
      break;
    case 0xca:
    case 0xce:
    case 0xd2:
      len = 4;
      break;
    case 0xcb:
    case 0xcf:
    case 0xd3:
      len = 8;
      break;
    case 0xcc:
    case 0xd0:
      len = 1;
      break;
    case 0xcd:
    case 0xd1:
      len = 2;
      break;
    case 0xd4:
      len = 2;
      break;
    case 0xd5:
      len = 3;
      break;
    case 0xd6:
      len = 5;
      break;
    case 0xd7:
      len = 9;
      break;
    case 0xd8:
      len = 17;
      break;
    case 0xdc:
      KDB_BE(2, cnt);
      items = 1;
      break;
    case 0xdd:
      KDB_BE(4, cnt);
      items = 1;
      break;
    case 0xde:
      KDB_BE(2, cnt);
      items = 2;
      break;
    case 0xdf:
      KDB_BE(4, cnt);
      items = 2;
      break;
    default:
      return -1; /* 0xc1: never used */
    }
  if (!items) {
    KDB_NEED(len);
    *pos += len;
    return 0;
  }
  uint64_t elems = items == 2 ? cnt * 2 : cnt;
  if (elems > n - *pos)
    return -1;
  for (uint64_t i = 0; i < elems; i++)
    if (kdb_mp_skip(p, n, pos, depth + 1))
      return -1;
  return 0;
#undef KDB_NEED
#undef KDB_BE
}

int kdb_msgpack_check(const uint8_t *p, size_t n) {
  size_t pos = 0;
  return kdb_mp_skip(p, n, &pos, 0);
}

/* ---- compressed bundles ---------------------------------------------------- */
static _Atomic uint64_t kdb_decompress_limit = (uint64_t)2 << 30;

uint64_t kdb_set_decompress_limit(uint64_t bytes) {
  return atomic_exchange(&kdb_decompress_limit, bytes);
}

static uint64_t kdb_le(const uint8_t *p, int k) {
  uint64_t v = 0;
  for (int i = k - 1; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

/* Grows *buf (capacity *cap) towards want bytes, doubling, at most want. */
static int kdb_grow(uint8_t **buf, size_t *cap, size_t want) {
  size_t n = *cap ? *cap * 2 : 1 << 20;
  if (n > want)
    n = want;
  uint8_t *q = realloc(*buf, n ? n : 1);
  if (!q)
    return -1;
  *buf = q;
  *cap = n;
  return 0;
}

/* Decompresses src (zstd when zstd, else zlib) to exactly want bytes into a
** malloc'd *out. Output memory grows with the data actually produced. */
static int kdb_inflate(kdb *db, const uint8_t *src, size_t n, size_t want, int zstd, uint8_t **out,
                       const char *where, kdb_err *e) {
  uint8_t *buf = NULL;
  size_t cap = 0, got = 0;
  int rc = -1;
  if (zstd) {
    ZSTD_DCtx *z = ZSTD_createDCtx();
    if (!z)
      return kdb_fail(e, db->name, "%s: out of memory", where);
    ZSTD_inBuffer in = {src, n, 0};
    for (;;) {
      if (got == cap) {
        if (cap == want) {
          kdb_fail(e, db->name,
                   "%s: zstd data decompresses to more than the %zu bytes the header claims", where,
                   want);
          break;
        }
        if (kdb_grow(&buf, &cap, want)) {
          kdb_fail(e, db->name, "%s: out of memory decompressing %zu bytes", where, want);
          break;
        }
      }
      ZSTD_outBuffer o = {buf, cap, got};
      size_t r = ZSTD_decompressStream(z, &o, &in);
      got = o.pos;
      if (ZSTD_isError(r)) {
        kdb_fail(e, db->name, "%s: corrupt zstd data (%s)", where, ZSTD_getErrorName(r));
        break;
      }
      if (r == 0 && in.pos == in.size) {
        rc = 0;
        break;
      }
      if (in.pos == in.size && got < cap) {
        kdb_fail(e, db->name, "%s: zstd data truncated", where);
        break;
      }
      if (r == 0 && got == want && in.pos < in.size) {
        /* Frame done; anything after it is not ours. */
        rc = 0;
        break;
      }
    }
    ZSTD_freeDCtx(z);
  } else {
    z_stream s;
    memset(&s, 0, sizeof s);
    if (inflateInit(&s) != Z_OK)
      return kdb_fail(e, db->name, "%s: zlib init failed", where);
    s.next_in = (Bytef *)src;
    s.avail_in = n > UINT32_MAX ? UINT32_MAX : (uInt)n;
    for (;;) {
      if (got == cap) {
        if (cap == want) {
          kdb_fail(e, db->name,
                   "%s: zlib data decompresses to more than the %zu bytes the header claims", where,
                   want);
          break;
        }
        if (kdb_grow(&buf, &cap, want)) {
          kdb_fail(e, db->name, "%s: out of memory decompressing %zu bytes", where, want);
          break;
        }
      }
      size_t room = cap - got;
      s.next_out = buf + got;
      s.avail_out = room > UINT32_MAX ? UINT32_MAX : (uInt)room;
      uInt before = s.avail_out;
      int r = inflate(&s, Z_NO_FLUSH);
      got += before - s.avail_out;
      if (r == Z_STREAM_END) {
        rc = 0;
        break;
      }
      if (r == Z_BUF_ERROR && s.avail_in == 0) {
        kdb_fail(e, db->name, "%s: zlib data truncated", where);
        break;
      }
      if (r != Z_OK && r != Z_BUF_ERROR) {
        kdb_fail(e, db->name, "%s: corrupt zlib data (%s)", where, s.msg ? s.msg : "error");
        break;
      }
    }
    inflateEnd(&s);
  }
  if (rc == 0 && got != want) {
    rc =
        kdb_fail(e, db->name, "%s: decompressed to %zu bytes, header claims %zu", where, got, want);
  }
  if (rc) {
    free(buf);
    return -1;
  }
  *out = buf;
  return 0;
}

#define KDB_BUNDLE_MAGIC "__CLANG_OFFLOAD_BUNDLE__"
#define KDB_BUNDLE_MAGIC_LEN 24
#define KDB_CCOB_MAGIC "CCOB"

static int kdb_read_bundle(kdb *db, const uint8_t *p, size_t n, const char *where, int compressed,
                           size_t *end, kdb_err *e);

/* A compressed bundle's header, checked. */
struct kdb_ccob {
  size_t hdr;     /* header bytes */
  uint64_t total; /* bytes the bundle occupies */
  uint64_t raw;   /* bytes it decompresses to */
  int zstd;       /* method 1 (else zlib) */
};

/* Reads and checks the header of the compressed bundle at p (n bytes
** available). 0, or -1 after kdb_fail. */
static int kdb_ccob_header(kdb *db, const uint8_t *p, size_t n, const char *where,
                           struct kdb_ccob *c, kdb_err *e) {
  if (n < 8)
    return kdb_fail(e, db->name, "%s: compressed bundle header truncated", where);
  unsigned ver = (unsigned)kdb_le(p + 4, 2), method = (unsigned)kdb_le(p + 6, 2);
  uint64_t total = n, raw;
  size_t hdr;
  if (ver == 1) {
    hdr = 20;
    if (n < hdr)
      return kdb_fail(e, db->name, "%s: compressed bundle header truncated", where);
    raw = kdb_le(p + 8, 4);
  } else if (ver == 2) {
    hdr = 24;
    if (n < hdr)
      return kdb_fail(e, db->name, "%s: compressed bundle header truncated", where);
    total = kdb_le(p + 8, 4);
    raw = kdb_le(p + 12, 4);
  } else if (ver == 3) {
    hdr = 32;
    if (n < hdr)
      return kdb_fail(e, db->name, "%s: compressed bundle header truncated", where);
    total = kdb_le(p + 8, 8);
    raw = kdb_le(p + 16, 8);
  } else {
    return kdb_fail(e, db->name, "%s: compressed bundle version %u not supported (1..3)", where,
                    ver);
  }
  if (total < hdr || total > n)
    return kdb_fail(e, db->name, "%s: compressed bundle claims %llu bytes, %zu available", where,
                    (unsigned long long)total, n);
  if (method > 1)
    return kdb_fail(e, db->name, "%s: compressed bundle method %u unknown (0 zlib, 1 zstd)", where,
                    method);
  /* Bounded by the input too: no real bundle expands 4096-fold (zlib
  ** cannot exceed about 1032:1), so a larger claim is not believed. */
  uint64_t limit = db->decompress_limit, by_input = ((uint64_t)64 << 20) + (total - hdr) * 4096;
  if (by_input < limit)
    limit = by_input;
  if (raw > limit || raw > SIZE_MAX)
    return kdb_fail(e, db->name,
                    "%s: compressed bundle claims %llu bytes uncompressed, over the limit of %llu",
                    where, (unsigned long long)raw, (unsigned long long)limit);
  if (raw < KDB_BUNDLE_MAGIC_LEN)
    return kdb_fail(e, db->name, "%s: compressed bundle claims only %llu bytes uncompressed", where,
                    (unsigned long long)raw);
  *c = (struct kdb_ccob){hdr, total, raw, method == 1};
  return 0;
}

/* A compressed bundle decompressed ahead of the reader (kdb_inflate_ahead):
** its data, or the message of its failure. */
struct kdb_inflated {
  const uint8_t *at; /* where the bundle starts in the section */
  struct kdb_ccob c;
  uint8_t *out; /* NULL: failed with msg */
  char msg[KDB_DAMAGED_MSG];
  const char *where;
};

/* Reads one compressed bundle at p (n bytes available); *end receives the
** bytes it occupies. pre, when not NULL, is the bundle decompressed ahead. */
static int kdb_read_ccob(kdb *db, const uint8_t *p, size_t n, const char *where, size_t *end,
                         struct kdb_inflated *pre, kdb_err *e) {
  struct kdb_ccob c;
  uint8_t *out = NULL;
  if (pre) {
    if (!pre->out) {
      if (e && e->buf && e->len)
        snprintf(e->buf, e->len, "%s", pre->msg); /* names the input already */
      return -1;
    }
    c = pre->c;
    out = pre->out;
    pre->out = NULL; /* the payloads own it now */
  } else if (kdb_ccob_header(db, p, n, where, &c, e) ||
             kdb_inflate(db, p + c.hdr, (size_t)c.total - c.hdr, (size_t)c.raw, c.zstd, &out, where,
                         e)) {
    return -1;
  }
  if (kdb_reserve((void **)&db->payloads, &db->cap_payloads, db->npayloads + 1,
                  sizeof *db->payloads)) {
    free(out);
    return kdb_fail(e, db->name, "out of memory");
  }
  db->payloads[db->npayloads++] = out;
  *end = (size_t)c.total;
  if (memcmp(out, KDB_BUNDLE_MAGIC, KDB_BUNDLE_MAGIC_LEN) != 0)
    return kdb_fail(e, db->name, "%s: compressed bundle does not hold an offload bundle", where);
  size_t inner_end;
  return kdb_read_bundle(db, out, (size_t)c.raw, where, 1, &inner_end, e);
}

/* Frees the code objects from index `ncos` on (a reader that failed half
** way), and forgets the kernels from `nkernels` on (arena memory). */
static void kdb_drop_cos(kdb *db, size_t ncos, size_t nkernels) {
  for (size_t i = ncos; i < db->ncos; i++) {
    kdb_co_free_lazy(db->cos[i]);
    if (db->cos[i]->elf)
      elf_end(db->cos[i]->elf);
    pthread_mutex_destroy(&db->cos[i]->lock);
    free(db->cos[i]);
  }
  db->ncos = ncos;
  db->nkernels = nkernels;
}

void kdb_map_release(const kdb *db, const void *p, size_t n) {
  uintptr_t lo = (uintptr_t)p, hi = lo + n, m0 = (uintptr_t)db->map, m1 = m0 + db->map_size;
  long page = sysconf(_SC_PAGESIZE);
  if (!db->map || !n || page <= 0 || hi <= m0 || lo >= m1)
    return;
  lo = lo < m0 ? m0 : lo;
  hi = hi > m1 ? m1 : hi;
  lo = (lo + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
  hi &= ~((uintptr_t)page - 1);
  if (hi > lo)
    (void)madvise((void *)lo, hi - lo, MADV_DONTNEED); /* advice: failing costs memory only */
}

int kdb_read_entry(kdb *db, const uint8_t *p, size_t n, const char *where, const char *triple,
                   int compressed, int amdgpu, kdb_err *e) {
  size_t ncos = db->ncos, nkernels = db->nkernels;
  char msg[KDB_DAMAGED_MSG];
  kdb_err mine = {msg, sizeof msg};
  int r = amdgpu ? kdb_amdgpu_read(db, p, n, where, triple, compressed, &mine)
                 : kdb_cuda_read_cubin(db, p, n, where, &mine);
  if (r == 0)
    return 0;
  kdb_drop_cos(db, ncos, nkernels);
  const char *kept = kdb_arena_strdup(&db->arena, msg);
  if (!kept ||
      kdb_reserve((void **)&db->damaged, &db->cap_damaged, db->ndamaged + 1, sizeof *db->damaged))
    return kdb_fail(e, db->name, "out of memory");
  db->damaged[db->ndamaged++] = kept;
  return 0;
}

/* Whether a bundle entry's triple ("hipv4-amdgcn-amd-amdhsa--gfx908:xnack-")
** names a target of arch. */
static int kdb_triple_is_arch(const char *triple, const char *arch) {
  const char *id = strstr(triple, "--");
  if (!id)
    return 1; /* no target in it: read it, its ELF says */
  id += 2;
  size_t n = strcspn(id, ":");
  return strlen(arch) == n && strncmp(id, arch, n) == 0;
}

/* A code object kdb_open_arch does not read: its place in the numbering
** (kdb_code_object_at, and the indices the CLI prints, stay those of a full
** read), its target from the entry's triple, no kernels. 0 or -1 (memory). */
static int kdb_add_unread(kdb *db, const uint8_t *img, size_t n, const char *where,
                          const char *triple, int compressed) {
  kdb_co_priv *co = kdb_add_co(db);
  if (!co)
    return -1;
  const char *id = strstr(triple, "--");
  char arch[64], err[8];
  id = id ? id + 2 : "";
  co->unread = 1;
  co->pub.vendor = KDB_VENDOR_AMDGPU;
  co->pub.triple = triple;
  co->pub.container = where;
  co->pub.compressed = compressed;
  co->pub.image_size = n;
  co->image = img;
  co->image_size = n;
  if (kdb_target_parse(id, arch, sizeof arch, &co->pub.xnack, &co->pub.sramecc, err, sizeof err) !=
      0)
    snprintf(arch, sizeof arch, "unknown");
  co->pub.arch = kdb_arena_strdup(&db->arena, arch);
  co->pub.target_id = kdb_arena_strdup(&db->arena, *id ? id : arch);
  return co->pub.arch && co->pub.target_id ? 0 : -1;
}

/* Reads one uncompressed offload bundle at p; *end receives the end of its
** last entry. */
static int kdb_read_bundle(kdb *db, const uint8_t *p, size_t n, const char *where, int compressed,
                           size_t *end, kdb_err *e) {
  if (n < KDB_BUNDLE_MAGIC_LEN + 8)
    return kdb_fail(e, db->name, "%s: bundle header truncated", where);
  uint64_t count = kdb_le(p + KDB_BUNDLE_MAGIC_LEN, 8);
  size_t pos = KDB_BUNDLE_MAGIC_LEN + 8, last = pos;
  /* Each entry header takes at least 24 bytes. */
  if (count > (n - pos) / 24)
    return kdb_fail(e, db->name, "%s: bundle claims %llu entries, too many for %zu bytes", where,
                    (unsigned long long)count, n);
  for (uint64_t i = 0; i < count; i++) {
    if (n - pos < 24)
      return kdb_fail(e, db->name, "%s: bundle entry %llu header truncated", where,
                      (unsigned long long)i);
    uint64_t off = kdb_le(p + pos, 8), size = kdb_le(p + pos + 8, 8),
             tlen = kdb_le(p + pos + 16, 8);
    pos += 24;
    if (tlen > n - pos || tlen > 4096)
      return kdb_fail(e, db->name, "%s: bundle entry %llu triple length %llu out of bounds", where,
                      (unsigned long long)i, (unsigned long long)tlen);
    char *triple = kdb_arena_strndup(&db->arena, (const char *)p + pos, (size_t)tlen);
    if (!triple)
      return kdb_fail(e, db->name, "out of memory");
    pos += (size_t)tlen;
    if (off > n || size > n - off)
      return kdb_fail(
          e, db->name,
          "%s: bundle entry %llu (%s) at offset %llu size %llu lies outside the %zu-byte bundle",
          where, (unsigned long long)i, triple, (unsigned long long)off, (unsigned long long)size,
          n);
    if (off + size > last)
      last = (size_t)(off + size);
    if (size == 0 || strncmp(triple, "host-", 5) == 0)
      continue;
    char cont[256];
    snprintf(cont, sizeof cont, "%s entry %llu", where, (unsigned long long)i);
    const char *c = kdb_arena_strdup(&db->arena, cont);
    if (!c)
      return kdb_fail(e, db->name, "out of memory");
    if (strstr(triple, "amdgcn")) {
      if (db->only_arch && !kdb_triple_is_arch(triple, db->only_arch)) {
        if (kdb_add_unread(db, p + off, (size_t)size, c, triple, compressed))
          return kdb_fail(e, db->name, "out of memory");
        continue;
      }
      if (kdb_read_entry(db, p + off, (size_t)size, c, triple, compressed, 1, e))
        return -1;
    } else if (strstr(triple, "nvptx")) {
      if (kdb_read_entry(db, p + off, (size_t)size, c, NULL, 0, 0, e))
        return -1;
    }
    /* Other offload kinds (e.g. host code of another target) hold no kernels. */
  }
  if (last < pos)
    last = pos;
  *end = last;
  return 0;
}

/* The next occurrence of a magic at or after p + pos, found lazily: a search
** runs only when the position passes the occurrence found last, and never
** again once the magic is known to be absent. Listing a library of many
** compressed bundles searched the rest of the section for the plain magic
** once per bundle, quadratic in size x bundles (librocsparse: 22 s). */
struct kdb_magic_scan {
  const char *magic;
  size_t len;
  const uint8_t *next; /* NULL: not searched yet, or absent (done) */
  int done;
};

static const uint8_t *kdb_magic_next(struct kdb_magic_scan *m, const uint8_t *p, size_t pos,
                                     size_t n) {
  if (!m->done && (!m->next || m->next < p + pos)) {
    m->next = memmem(p + pos, n - pos, m->magic, m->len);
    m->done = m->next == NULL;
  }
  return m->next;
}

/* The next bundle of the section at p from pos: a compressed one that comes
** before the next plain one, else that plain one; NULL when none is left.
** *compressed says which. The compressed magic is searched for only up to
** the next plain bundle, so a section of plain bundles is not also searched
** whole for "CCOB" (librocsparse: 1.3 GB, every page touched). */
static const uint8_t *kdb_next_bundle(struct kdb_magic_scan *plain, const uint8_t *p, size_t pos,
                                      size_t n, int *compressed) {
  const uint8_t *a = kdb_magic_next(plain, p, pos, n);
  size_t lim = a ? (size_t)(a - p) : n;
  const uint8_t *b = memmem(p + pos, lim - pos, KDB_CCOB_MAGIC, 4);
  *compressed = b != NULL;
  return b ? b : a;
}

/* Threads that decompress bundles ahead of the reader: decompression is
** most of listing a compressed library (librocsparse: 1.3 GB from 111
** bundles). */
#define KDB_INFLATE_THREADS 8

struct kdb_inflate_job {
  kdb *db;
  struct kdb_inflated *v;
  size_t n;
  _Atomic size_t next; /* the next bundle to take */
};

static void *kdb_inflate_worker(void *arg) {
  struct kdb_inflate_job *j = arg;
  for (size_t i; (i = atomic_fetch_add(&j->next, 1)) < j->n;) {
    struct kdb_inflated *b = &j->v[i];
    kdb_err e = {b->msg, sizeof b->msg};
    if (kdb_inflate(j->db, b->at + b->c.hdr, (size_t)b->c.total - b->c.hdr, (size_t)b->c.raw,
                    b->c.zstd, &b->out, b->where, &e))
      b->out = NULL;
  }
  return NULL;
}

/* Finds the run of compressed bundles (versions 2 and 3, whose headers say
** where they end) from the start of the section at p and decompresses them
** on several threads. Returns them in order (*count; NULL when fewer than
** two or on any trouble: the reader then decompresses as it goes, and
** reports errors in order either way). */
static struct kdb_inflated *kdb_inflate_ahead(kdb *db, const uint8_t *p, size_t n, const char *sect,
                                              size_t *count) {
  *count = 0;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus < 2)
    return NULL;
  struct kdb_inflated *v = NULL;
  size_t nv = 0, cap = 0, pos = 0;
  struct kdb_magic_scan plain = {KDB_BUNDLE_MAGIC, KDB_BUNDLE_MAGIC_LEN, NULL, 0};
  while (pos < n) {
    int compressed;
    const uint8_t *b = kdb_next_bundle(&plain, p, pos, n, &compressed);
    if (!b || !compressed || n - (size_t)(b - p) < 8 || kdb_le(b + 4, 2) < 2)
      break; /* a plain bundle or a version-1 one: the reader goes on from here */
    struct kdb_ccob c;
    char where[128];
    snprintf(where, sizeof where, "%s bundle %zu", sect, nv);
    if (kdb_ccob_header(db, b, n - (size_t)(b - p), where, &c, NULL))
      break;
    if (kdb_reserve((void **)&v, &cap, nv + 1, sizeof *v))
      break;
    v[nv] = (struct kdb_inflated){.at = b, .c = c, .where = kdb_arena_strdup(&db->arena, where)};
    if (!v[nv].where)
      break;
    nv++;
    pos = (size_t)(b - p) + (size_t)c.total;
  }
  if (nv < 2) {
    free(v);
    return NULL;
  }
  struct kdb_inflate_job job = {db, v, nv, 0};
  pthread_t th[KDB_INFLATE_THREADS];
  size_t want = (size_t)cpus < nv ? (size_t)cpus : nv, started = 0;
  if (want > KDB_INFLATE_THREADS)
    want = KDB_INFLATE_THREADS;
  /* the calling thread is one of them; the others leave the application's
   * signals alone (kerneldb also runs inside traced programs) */
  for (; started + 1 < want; started++)
    if (nano_thread_start(&th[started], kdb_inflate_worker, &job) != 0)
      break;
  kdb_inflate_worker(&job);
  for (size_t t = 0; t < started; t++)
    pthread_join(th[t], NULL);
  *count = nv;
  return v;
}

/* Reads a sequence of bundles (plain or compressed) that a linker
** concatenated into one section, skipping the padding between them. */
static int kdb_read_bundles(kdb *db, const uint8_t *p, size_t n, const char *sect, kdb_err *e) {
  size_t pos = 0, nahead = 0, used = 0;
  int idx = 0, rc = 0;
  struct kdb_inflated *ahead = kdb_inflate_ahead(db, p, n, sect, &nahead);
  struct kdb_magic_scan plain = {KDB_BUNDLE_MAGIC, KDB_BUNDLE_MAGIC_LEN, NULL, 0};
  while (pos < n) {
    int compressed;
    const uint8_t *s = kdb_next_bundle(&plain, p, pos, n, &compressed);
    if (!s)
      break;
    char where[128];
    snprintf(where, sizeof where, "%s bundle %d", sect, idx++);
    size_t at = (size_t)(s - p), end = 0;
    struct kdb_inflated *pre = used < nahead && ahead[used].at == s ? &ahead[used++] : NULL;
    int r = compressed ? kdb_read_ccob(db, s, n - at, where, &end, pre, e)
                       : kdb_read_bundle(db, s, n - at, where, 0, &end, e);
    if (r) {
      rc = -1;
      break;
    }
    kdb_map_release(db, s, end); /* read: its pages are the file's again */
    pos = at + (end ? end : 1);
  }
  for (size_t i = 0; i < nahead; i++)
    free(ahead[i].out); /* what the reader did not take (it stopped early) */
  free(ahead);
  if (rc == 0 && idx == 0)
    return kdb_fail(e, db->name, "%s holds no offload bundle", sect);
  return rc;
}

int kdb_elf_check(kdb *db, const uint8_t *img, size_t n, const char *what, kdb_err *e) {
  if (n < sizeof(Elf64_Ehdr))
    return kdb_fail(e, db->name, "%s: truncated ELF: %zu bytes, less than the %zu-byte header",
                    what, n, sizeof(Elf64_Ehdr));
  if (img[EI_CLASS] != ELFCLASS64 || img[EI_DATA] != ELFDATA2LSB)
    return 0; /* not ours to judge */
  Elf64_Ehdr h;
  memcpy(&h, img, sizeof h);
  const struct {
    const char *table;
    uint64_t off, count, size;
  } t[] = {{"section header table", h.e_shoff, h.e_shnum, h.e_shentsize},
           {"program header table", h.e_phoff, h.e_phnum, h.e_phentsize}};
  for (int i = 0; i < 2; i++) {
    if (!t[i].count)
      continue;
    if (t[i].off > n || t[i].count * t[i].size > n - t[i].off)
      return kdb_fail(
          e, db->name,
          "%s: truncated or damaged ELF: the %s (offset %llu, %llu entries of %llu bytes) "
          "ends past the end of the %zu-byte image",
          what, t[i].table, (unsigned long long)t[i].off, (unsigned long long)t[i].count,
          (unsigned long long)t[i].size, n);
  }
  return 0;
}

/* ---- LLVM offload binaries --------------------------------------------------
** Section .llvm.offloading of an object compiled with -fgpu-rdc and the new
** offload driver (clang-22's default there) holds the device code as LLVM
** offload binaries (llvm/Object/OffloadBinary.h, version 1), back to back,
** each starting 8-aligned. Little-endian; offsets from the binary's start:
**
**   offset  bytes  binary header           offset  bytes  entry
**   0       4      magic 10 FF 10 AD       0       2      image kind
**   4       4      version (1)             2       2      offload kind
**   8       8      the binary's bytes      4       4      flags
**   16      8      entries' offset         8       8      string table offset
**   24      8      entries' bytes          16      8      strings
**                                          24      8      image offset
**                                          32      8      image bytes
**
** The string table holds (key offset, value offset) pairs of u64, each
** offset a NUL-terminated string ("triple", "arch"). */
#define KDB_OFFLOAD_MAGIC "\x10\xff\x10\xad"
#define KDB_OFFLOAD_VERSION 1
#define KDB_OFFLOAD_HEADER 32
#define KDB_OFFLOAD_ENTRY 40
#define KDB_OFFLOAD_ALIGN 8
/* image kinds (OffloadBinary's ImageKind) */
#define KDB_IMG_OBJECT 1
#define KDB_IMG_CUBIN 3
#define KDB_IMG_FATBINARY 4

/* The value of key in binary b (n bytes) whose string table is at tab with
** count pairs, or "" when absent or out of bounds. */
static const char *kdb_offload_string(const uint8_t *b, size_t n, uint64_t tab, uint64_t count,
                                      const char *key) {
  const size_t pair = 16; /* two u64 offsets */
  if (tab > n || count > (n - tab) / pair)
    return "";
  for (uint64_t i = 0; i < count; i++) {
    uint64_t k = kdb_le(b + tab + i * pair, 8), v = kdb_le(b + tab + i * pair + 8, 8);
    if (k < n && v < n && memchr(b + k, 0, n - k) && memchr(b + v, 0, n - v) &&
        strcmp((const char *)b + k, key) == 0)
      return (const char *)b + v;
  }
  return "";
}

/* Reads the device code of section sect (p, n bytes): every offload
** binary's object, cubin or fat binary image, each damage-tolerant as a
** bundle's entry. Bitcode (-foffload-lto) and PTX hold no machine code: a
** section of nothing else fails, naming them. */
static int kdb_read_offloading(kdb *db, const uint8_t *p, size_t n, const char *sect, kdb_err *e) {
  size_t pos = 0, images = 0, other = 0;
  for (int idx = 0; n - pos >= KDB_OFFLOAD_HEADER; idx++) {
    const uint8_t *b = p + pos;
    if (memcmp(b, KDB_OFFLOAD_MAGIC, 4) != 0) {
      if (idx)
        break; /* padding after the last one */
      return kdb_fail(e, db->name, "%s: not an LLVM offload binary (bad magic)", sect);
    }
    uint64_t version = kdb_le(b + 4, 4), size = kdb_le(b + 8, 8), eoff = kdb_le(b + 16, 8),
             ebytes = kdb_le(b + 24, 8);
    if (version != KDB_OFFLOAD_VERSION)
      return kdb_fail(e, db->name, "%s: offload binary %d has version %llu (kerneldb reads %d)",
                      sect, idx, (unsigned long long)version, KDB_OFFLOAD_VERSION);
    if (size < KDB_OFFLOAD_HEADER || size > n - pos || eoff > size || ebytes > size - eoff ||
        ebytes % KDB_OFFLOAD_ENTRY)
      return kdb_fail(e, db->name,
                      "%s: offload binary %d claims %llu bytes (entries at %llu, %llu bytes), "
                      "%zu available",
                      sect, idx, (unsigned long long)size, (unsigned long long)eoff,
                      (unsigned long long)ebytes, n - pos);
    for (uint64_t i = 0; i < ebytes / KDB_OFFLOAD_ENTRY; i++) {
      const uint8_t *en = b + eoff + i * KDB_OFFLOAD_ENTRY;
      unsigned kind = (unsigned)kdb_le(en, 2);
      uint64_t ioff = kdb_le(en + 24, 8), ibytes = kdb_le(en + 32, 8);
      if (ioff > size || ibytes > size - ioff)
        return kdb_fail(e, db->name,
                        "%s: offload binary %d image %llu (offset %llu, %llu bytes) lies outside "
                        "its %llu bytes",
                        sect, idx, (unsigned long long)i, (unsigned long long)ioff,
                        (unsigned long long)ibytes, (unsigned long long)size);
      const uint8_t *img = b + ioff;
      char where[256];
      snprintf(where, sizeof where, "%s binary %d image %llu (%s)", sect, idx,
               (unsigned long long)i,
               kdb_offload_string(b, (size_t)size, kdb_le(en + 8, 8), kdb_le(en + 16, 8), "arch"));
      const char *c = kdb_arena_strdup(&db->arena, where);
      if (!c)
        return kdb_fail(e, db->name, "out of memory");
      int elf = ibytes >= 20 && memcmp(img, ELFMAG, SELFMAG) == 0;
      unsigned mach = elf && img[EI_DATA] == ELFDATA2LSB ? (unsigned)kdb_le(img + 18, 2) : 0;
      int rc = 0;
      if ((kind == KDB_IMG_OBJECT || kind == KDB_IMG_CUBIN) &&
          (mach == EM_AMDGPU || mach == EM_CUDA))
        rc = kdb_read_entry(db, img, (size_t)ibytes, c, NULL, 0, mach == EM_AMDGPU, e);
      else if (kind == KDB_IMG_FATBINARY)
        rc = kdb_cuda_read_fatbin(db, img, (size_t)ibytes, c, e);
      else {
        other++;
        continue;
      }
      if (rc)
        return -1;
      images++;
    }
    pos += ((size_t)size + KDB_OFFLOAD_ALIGN - 1) & ~(size_t)(KDB_OFFLOAD_ALIGN - 1);
    if (pos > n)
      break;
  }
  if (!images && other)
    return kdb_fail(e, db->name,
                    "%s holds no machine code, only %zu LLVM bitcode or PTX image%s "
                    "(-foffload-lto?): build without it, or read the linked program",
                    sect, other, other == 1 ? "" : "s");
  return 0;
}

/* ---- host ELF -------------------------------------------------------------- */
static int kdb_read_host_elf(kdb *db, kdb_err *e) {
  if (kdb_elf_check(db, db->data, db->size, "file", e))
    return -1;
  Elf *elf = elf_memory((char *)db->data, db->size);
  if (!elf)
    return kdb_fail(e, db->name, "not a readable ELF file (%s)", elf_errmsg(-1));
  size_t shstr;
  int rc = 0;
  if (elf_getshdrstrndx(elf, &shstr) != 0) {
    rc = kdb_fail(e, db->name, "ELF section name table unreadable (%s)", elf_errmsg(-1));
    goto done;
  }
  for (Elf_Scn *s = elf_nextscn(elf, NULL); s; s = elf_nextscn(elf, s)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(s, &sh)) {
      rc = kdb_fail(e, db->name, "ELF section header unreadable (%s)", elf_errmsg(-1));
      goto done;
    }
    const char *nm = elf_strptr(elf, shstr, sh.sh_name);
    if (!nm)
      continue;
    int hip = strcmp(nm, ".hip_fatbin") == 0,
        nv = strcmp(nm, ".nv_fatbin") == 0 || strcmp(nm, "__nv_relfatbin") == 0,
        llvm = strcmp(nm, ".llvm.offloading") == 0;
    if (!hip && !nv && !llvm)
      continue;
    if (sh.sh_type == SHT_NOBITS)
      continue;
    if (sh.sh_offset > db->size || sh.sh_size > db->size - sh.sh_offset) {
      rc = kdb_fail(e, db->name,
                    "section %s (offset %llu, size %llu) lies outside the %zu-byte file", nm,
                    (unsigned long long)sh.sh_offset, (unsigned long long)sh.sh_size, db->size);
      goto done;
    }
    const uint8_t *p = db->data + sh.sh_offset;
    if (hip)
      rc = kdb_read_bundles(db, p, (size_t)sh.sh_size, nm, e);
    else if (llvm)
      rc = kdb_read_offloading(db, p, (size_t)sh.sh_size, nm, e);
    else
      rc = kdb_cuda_read_fatbin(db, p, (size_t)sh.sh_size, nm, e);
    if (rc)
      goto done;
  }
  /* without GPU code it may still hold CPU kernels' site tables */
  db->host_elf = 1;
done:
  elf_end(elf);
  return rc;
}

int kdb_read_input(kdb *db, kdb_err *e) {
  const uint8_t *p = db->data;
  size_t n = db->size;
  if (n == 0)
    return kdb_fail(e, db->name, "empty file");
  if (n >= 20 && memcmp(p, ELFMAG, SELFMAG) == 0) {
    unsigned mach = p[EI_DATA] == ELFDATA2LSB ? (unsigned)kdb_le(p + 18, 2) : 0;
    if (mach == EM_AMDGPU)
      return kdb_amdgpu_read(db, p, n, "file", NULL, 0, e);
    if (mach == EM_CUDA)
      return kdb_cuda_read_cubin(db, p, n, "file", e);
    return kdb_read_host_elf(db, e);
  }
  if (n >= KDB_BUNDLE_MAGIC_LEN && memcmp(p, KDB_BUNDLE_MAGIC, KDB_BUNDLE_MAGIC_LEN) == 0)
    return kdb_read_bundles(db, p, n, "file", e);
  if (n >= 4 && memcmp(p, KDB_CCOB_MAGIC, 4) == 0)
    return kdb_read_bundles(db, p, n, "file", e);
  if (n >= 4 && kdb_le(p, 4) == 0xBA55ED50u)
    return kdb_cuda_read_fatbin(db, p, n, "file", e);
  return kdb_fail(e, db->name,
                  "not a GPU code object, offload bundle, fat binary or ELF file (starts with %02x "
                  "%02x %02x %02x)",
                  p[0], n > 1 ? p[1] : 0, n > 2 ? p[2] : 0, n > 3 ? p[3] : 0);
}

/* ---- open / close ------------------------------------------------------------ */
static pthread_once_t kdb_elf_once = PTHREAD_ONCE_INIT;
static int kdb_elf_ok;

static void kdb_elf_init(void) { kdb_elf_ok = elf_version(EV_CURRENT) != EV_NONE; }

static kdb *kdb_new(const char *name) {
  if (pthread_once(&kdb_elf_once, kdb_elf_init) != 0 || !kdb_elf_ok)
    return NULL;
  kdb *db = calloc(1, sizeof *db);
  if (!db)
    return NULL;
  db->name = strdup(name ? name : "(memory)");
  if (!db->name) {
    free(db);
    return NULL;
  }
  db->decompress_limit = atomic_load(&kdb_decompress_limit);
  if (pthread_mutex_init(&db->isa_lock, NULL) != 0) {
    free(db->name);
    free(db);
    return NULL;
  }
  /* the default library files, compiled here: ISA builds of several code
   * objects read it at once */
  kdb_set_library_files(db, NULL, NULL, 0);
  return db;
}

static int kdb_finish_open(kdb *db, kdb **out, kdb_err *e) {
  if (kdb_read_input(db, e)) {
    kdb_close(db);
    return -1;
  }
  if (kdb_read_sites(db, e)) {
    kdb_close(db);
    return -1;
  }
  if (db->ncos == 0 && db->ndamaged > 0) { /* nothing but damage: the first says what */
    snprintf(e->buf, e->len, "%s", db->damaged[0]);
    kdb_close(db);
    return -1;
  }
  if (db->ncos == 0 && db->nsites == 0) {
    kdb_fail(e, db->name,
             db->host_elf ? "ELF file has no GPU code (no .hip_fatbin, .nv_fatbin or "
                            ".llvm.offloading section) and no nanoprobe site table"
                          : "no GPU code objects found");
    kdb_close(db);
    return -1;
  }
  *out = db;
  return 0;
}

int kdb_open_memory(const void *data, size_t size, const char *name, kdb **out, char *err,
                    size_t errlen) {
  kdb_err e = {err, errlen};
  *out = NULL;
  kdb *db = kdb_new(name);
  if (!db)
    return kdb_fail(&e, name, "libelf initialisation failed or out of memory");
  db->data = data;
  db->size = size;
  return kdb_finish_open(db, out, &e);
}

/* The most kdb_open reads from a pipe: more is refused, not buffered (a
 * runaway producer, /dev/zero through cat). */
#define KDB_MAX_STREAM_BYTES (4ull << 30)

/* How long kdb_open waits for a FIFO's writer (opening one blocks until a
 * writer comes: a FIFO nobody writes to would hold the reader forever). */
#define KDB_FIFO_WAIT_MS 10000

/* Opens path for reading; a FIFO without blocking in open, then waiting at
 * most KDB_FIFO_WAIT_MS for its first bytes. A descriptor, or -1 with e. */
static int kdb_open_fd(const char *path, kdb_err *e) {
  struct stat st;
  int fifo = stat(path, &st) == 0 && S_ISFIFO(st.st_mode);
  int fd = open(path, O_RDONLY | O_CLOEXEC | (fifo ? O_NONBLOCK : 0));
  if (fd < 0)
    return kdb_fail(e, path, "cannot open: %s", strerror(errno));
  if (!fifo)
    return fd;
  struct pollfd p = {.fd = fd, .events = POLLIN};
  int n;
  while ((n = poll(&p, 1, KDB_FIFO_WAIT_MS)) < 0 && errno == EINTR) {
  }
  int flags = fcntl(fd, F_GETFL);
  if (n <= 0 || flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    int er = errno;
    close(fd);
    if (n == 0)
      return kdb_fail(e, path, "is a FIFO nothing was written to in %d s", KDB_FIFO_WAIT_MS / 1000);
    return kdb_fail(e, path, "cannot wait for the FIFO: %s", strerror(er));
  }
  return fd;
}

int kdb_open(const char *path, kdb **out, char *err, size_t errlen) {
  return kdb_open_arch(path, NULL, out, err, errlen);
}

int kdb_open_arch(const char *path, const char *arch, kdb **out, char *err, size_t errlen) {
  kdb_err e = {err, errlen};
  *out = NULL;
  int fd = kdb_open_fd(path, &e);
  if (fd < 0)
    return -1;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int er = errno;
    close(fd);
    return kdb_fail(&e, path, "cannot stat: %s", strerror(er));
  }
  if (S_ISDIR(st.st_mode)) {
    close(fd);
    return kdb_fail(&e, path, "is a directory");
  }
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    close(fd);
    return kdb_fail(&e, path, "is a device, not a file");
  }
  kdb *db = kdb_new(path);
  if (db && arch && !(db->only_arch = strdup(arch))) {
    kdb_close(db);
    db = NULL;
  }
  if (!db) {
    close(fd);
    return kdb_fail(&e, path, "libelf initialisation failed or out of memory");
  }
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      int er = errno;
      close(fd);
      kdb_close(db);
      return kdb_fail(&e, path, "cannot map: %s", strerror(er));
    }
    db->map = m;
    db->map_size = (size_t)st.st_size;
    db->data = m;
    db->size = (size_t)st.st_size;
  } else {
    /* Pipes and empty files: read what there is. */
    uint8_t *buf = NULL;
    size_t cap = 0, len = 0;
    for (;;) {
      if (kdb_reserve((void **)&buf, &cap, len + 65536, 1)) {
        free(buf);
        close(fd);
        kdb_close(db);
        return kdb_fail(&e, path, "out of memory");
      }
      ssize_t r = read(fd, buf + len, cap - len);
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0) {
        int er = errno;
        free(buf);
        close(fd);
        kdb_close(db);
        return kdb_fail(&e, path, "read failed: %s", strerror(er));
      }
      if (r == 0)
        break;
      len += (size_t)r;
      if (len > KDB_MAX_STREAM_BYTES) {
        free(buf);
        close(fd);
        kdb_close(db);
        return kdb_fail(&e, path, "more than %llu GiB from a pipe: save it to a file first",
                        KDB_MAX_STREAM_BYTES >> 30);
      }
    }
    if (kdb_reserve((void **)&db->payloads, &db->cap_payloads, db->npayloads + 1,
                    sizeof *db->payloads)) {
      free(buf);
      close(fd);
      kdb_close(db);
      return kdb_fail(&e, path, "out of memory");
    }
    db->payloads[db->npayloads++] = buf;
    db->data = buf;
    db->size = len;
  }
  close(fd);
  return kdb_finish_open(db, out, &e);
}

void kdb_close(kdb *db) {
  if (!db)
    return;
  free(db->only_arch);
  for (size_t i = 0; i < db->nkernels; i++) {
    kdb_isa *isa = atomic_load(&db->kernels[i]->isa);
    if (isa) {
      free((void *)isa->insns);
      free(isa);
    }
  }
  kdb_drop_cos(db, 0, 0);
  pthread_mutex_destroy(&db->isa_lock);
  if (db->library_ok)
    regfree(&db->library);
  for (size_t i = 0; i < db->npayloads; i++)
    free(db->payloads[i]);
  if (db->map)
    munmap(db->map, db->map_size);
  kdb_arena_free(&db->arena);
  free(db->shared);
  free(db->payloads);
  free(db->cos);
  free(db->kernels);
  free(db->sites);
  free(db->damaged);
  free(db->name);
  free(db);
}

const char *kdb_name(const kdb *db) { return db->name; }
size_t kdb_damaged_count(const kdb *db) { return db->ndamaged; }
const char *kdb_damaged_message(const kdb *db, size_t i) {
  return i < db->ndamaged ? db->damaged[i] : NULL;
}

size_t kdb_code_object_count(const kdb *db) { return db->ncos; }
const kdb_code_object *kdb_code_object_at(const kdb *db, size_t i) {
  return i < db->ncos ? &db->cos[i]->pub : NULL;
}
const void *kdb_code_object_image(const kdb *db, const kdb_code_object *co) {
  (void)db;
  return ((const kdb_co_priv *)co)->image;
}
/* Whether section sh, named name, holds module-scope variables: allocated,
** not code, not a block's shared memory (.nv.shared*) nor a kernel's
** parameter bank (.nv.constant0.*) nor a reservation (.nv.reserved*). */
static int kdb_globals_section(const GElf_Shdr *sh, const char *name) {
  return (sh->sh_flags & SHF_ALLOC) && !(sh->sh_flags & SHF_EXECINSTR) && name &&
         strncmp(name, ".nv.shared", 10) != 0 && strncmp(name, ".nv.constant0", 13) != 0 &&
         strncmp(name, ".nv.reserved", 12) != 0;
}

long kdb_code_object_globals(kdb *db, const kdb_code_object *co, kdb_global *out, size_t cap,
                             char *err, size_t errlen) {
  kdb_co_priv *cp = (kdb_co_priv *)co;
  kdb_err e = {err, errlen};
  size_t shstrndx;
  long n = 0;
  pthread_mutex_lock(&cp->lock);
  if (!cp->elf || elf_getshdrstrndx(cp->elf, &shstrndx) != 0) {
    pthread_mutex_unlock(&cp->lock);
    return kdb_fail(&e, db->name, "%s: no section header string table", co->container);
  }
  for (Elf_Scn *scn = elf_nextscn(cp->elf, NULL); scn; scn = elf_nextscn(cp->elf, scn)) {
    GElf_Shdr sh;
    Elf_Data *d;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize ||
        !(d = elf_getdata(scn, NULL)))
      continue;
    for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
      GElf_Sym sym;
      GElf_Shdr in;
      Elf_Scn *home;
      if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_OBJECT ||
          GELF_ST_BIND(sym.st_info) == STB_LOCAL || sym.st_shndx == SHN_UNDEF ||
          sym.st_shndx >= SHN_LORESERVE || !(home = elf_getscn(cp->elf, sym.st_shndx)) ||
          !gelf_getshdr(home, &in) ||
          !kdb_globals_section(&in, elf_strptr(cp->elf, shstrndx, in.sh_name)))
        continue;
      const char *name = elf_strptr(cp->elf, sh.sh_link, sym.st_name);
      if (!name || !*name)
        continue;
      if ((size_t)n < cap)
        out[n] = (kdb_global){name, sym.st_size, (in.sh_flags & SHF_WRITE) != 0};
      n++;
    }
  }
  pthread_mutex_unlock(&cp->lock);
  return n;
}

size_t kdb_kernel_count(const kdb *db) { return db->nkernels; }
const kdb_kernel *kdb_kernel_at(const kdb *db, size_t i) {
  return i < db->nkernels ? &db->kernels[i]->pub : NULL;
}

int kdb_target_parse(const char *target, char *arch, size_t n, kdb_feature *xnack,
                     kdb_feature *sramecc, char *err, size_t errlen) {
  *xnack = *sramecc = KDB_FEATURE_ANY;
  size_t len = strcspn(target, ":");
  if (len == 0 || len >= n) {
    snprintf(err, errlen,
             "'%s' is not a target (an arch such as gfx90a or sm_90, then "
             "optional :xnack+/- and :sramecc+/-)",
             target);
    return -1;
  }
  memcpy(arch, target, len);
  arch[len] = 0;
  for (const char *p = target + len; *p == ':';) {
    const char *f = p + 1;
    size_t fl = strcspn(f, ":");
    kdb_feature *slot = fl == 6 && !strncmp(f, "xnack", 5)     ? xnack
                        : fl == 8 && !strncmp(f, "sramecc", 7) ? sramecc
                                                               : NULL;
    char sign = fl ? f[fl - 1] : 0;
    if (!slot || (sign != '+' && sign != '-')) {
      snprintf(err, errlen,
               "'%s': unknown feature '%.*s' (known: xnack+, xnack-, sramecc+, "
               "sramecc-)",
               target, (int)fl, f);
      return -1;
    }
    *slot = sign == '+' ? KDB_FEATURE_ON : KDB_FEATURE_OFF;
    p = f + fl;
  }
  return 0;
}

int kdb_target_matches(const kdb_code_object *co, const char *target) {
  char arch[64], err[8];
  kdb_feature xnack, sramecc;
  if (kdb_target_parse(target, arch, sizeof arch, &xnack, &sramecc, err, sizeof err) != 0)
    return 0;
  return strcmp(co->arch, arch) == 0 && (xnack == KDB_FEATURE_ANY || co->xnack == xnack) &&
         (sramecc == KDB_FEATURE_ANY || co->sramecc == sramecc);
}

const char *kdb_feature_name(kdb_feature f) {
  switch (f) {
  case KDB_FEATURE_ANY:
    return "any";
  case KDB_FEATURE_OFF:
    return "off";
  case KDB_FEATURE_ON:
    return "on";
  default:
    return "unsupported";
  }
}
