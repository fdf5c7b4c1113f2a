/*
 * Unit tests of libnano_dh: the decoder on hand-built bytes of every
 * encoding and each malformation it must reject (with a message naming the
 * defect); the encoder's choice; site-table blobs, valid and broken; buffers
 * (records written by the host encoder come back exactly across wrap-arounds,
 * drops counted, damaged records skipped and counted); the pool and the drain
 * thread.
 */
#include "nano/dh_comms.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void unit_put(unsigned char *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

/* A header of a wave64 record with lanes 1, 5 and 63 active, in encoding
 * enc with `payload` bytes after the header; returns the record's size. */
static size_t unit_header(unsigned char *r, unsigned enc, unsigned payload) {
  uint64_t exec = 1ull << 1 | 1ull << 5 | 1ull << 63;
  memset(r, 0, 256);
  unit_put(r + NANO_DH_HDR_OFF_BYTES, NANO_DH_HDR_SIZE + payload, 2);
  r[NANO_DH_HDR_OFF_VERSION] = NANO_DH_VERSION;
  r[NANO_DH_HDR_OFF_FORMAT] = (unsigned char)(enc | NANO_DH_SPACE_SHARED << NANO_DH_FORMAT_SPACE_SHIFT);
  r[NANO_DH_HDR_OFF_LANES] = 3;
  r[NANO_DH_HDR_OFF_WAVESIZE] = 64;
  unit_put(r + NANO_DH_HDR_OFF_WAVE, 2, 2);
  unit_put(r + NANO_DH_HDR_OFF_SITE, 0xabcd000000000007ull, 8);
  unit_put(r + NANO_DH_HDR_OFF_EXEC, exec, 8);
  unit_put(r + NANO_DH_HDR_OFF_BLOCK_X, 70000, 4);
  unit_put(r + NANO_DH_HDR_OFF_BLOCK_Y, 8, 2);
  unit_put(r + NANO_DH_HDR_OFF_BLOCK_Z, 9, 2);
  unit_put(r + NANO_DH_HDR_OFF_SIZE, 4, 4);
  unit_put(r + NANO_DH_HDR_OFF_HWID, 0x55, 4);
  unit_put(r + NANO_DH_HDR_OFF_TIME, 12345, 8);
  unit_put(r + NANO_DH_HDR_OFF_BASE, 0x1000, 8);
  return NANO_DH_HDR_SIZE + payload;
}

/* The same three lanes in each encoding: stride 12 (0x1000, 0x100c, 0x1018),
 * 32-bit offsets (+0, -8, +0x7fffffff), 64-bit addresses. */
static size_t unit_record(unsigned char *r, unsigned enc) {
  unsigned char *p = r + NANO_DH_HDR_SIZE;
  size_t n;
  switch (enc) {
  case NANO_DH_ENC_STRIDE:
    n = unit_header(r, enc, 8);
    unit_put(p, 12, 8);
    return n;
  case NANO_DH_ENC_OFF32:
    n = unit_header(r, enc, 16); /* 3 x 4 bytes, padded */
    unit_put(p, 0, 4);
    unit_put(p + 4, (uint32_t)-8, 4);
    unit_put(p + 8, 0x7fffffff, 4);
    return n;
  default:
    n = unit_header(r, enc, 24);
    unit_put(p, 0x1000, 8);
    unit_put(p + 8, 0xffff800000000000ull, 8);
    unit_put(p + 16, 42, 8);
    return n;
  }
}

static void unit_records(void) {
  unsigned char r[256];
  struct nano_dh_record d;
  char err[128];
  static const uint64_t want[3][3] = {{0x1000, 0x100c, 0x1018},
                                      {0x1000, 0x1000 - 8, 0x1000 + 0x7fffffffull},
                                      {0x1000, 0xffff800000000000ull, 42}};
  for (unsigned form = 0; form < 6; form++) {
    /* each encoding decoded whole, then compact (nano_dh_decode_compact) */
    unsigned enc = form % 3, compact = form >= 3;
    size_t n = unit_record(r, enc);
    memset(&d, 0xa5, sizeof d);
    CHECK((compact ? nano_dh_decode_compact : nano_dh_decode)(r, n, &d, err, sizeof err) == (long)n,
          "encoding %u: %s", enc, err);
    uint64_t buf[64];
    const uint64_t *all = nano_dh_record_addrs(&d, buf);
    for (int i = 0; i < 3; i++)
      CHECK(nano_dh_record_addr(&d, i) == want[enc][i] && all[i] == want[enc][i],
            "encoding %u (%s) lane %d: %llx and %llx, want %llx", enc,
            compact ? "compact" : "whole", i, (unsigned long long)nano_dh_record_addr(&d, i),
            (unsigned long long)all[i], (unsigned long long)want[enc][i]);
    if (compact && enc == NANO_DH_ENC_STRIDE) {
      /* what a compact record leaves out (its point: no 64 addresses written) */
      CHECK(d.addr[2] == 0xa5a5a5a5a5a5a5a5ull, "a compact strided record has addr[2] written");
    }
    CHECK(d.lanes == 3 && d.wave_size == 64 && d.site == 0xabcd000000000007ull &&
              d.encoding == enc && d.space == NANO_DH_SPACE_SHARED,
          "encoding %u: header", enc);
    CHECK(d.lane[0] == 1 && d.lane[1] == 5 && d.lane[2] == 63, "lanes %u %u %u", d.lane[0],
          d.lane[1], d.lane[2]);
    CHECK(d.block[0] == 70000 && d.block[1] == 8 && d.block[2] == 9 && d.wave == 2 &&
              d.hw_id == 0x55 && d.size == 4 && d.time == 12345,
          "encoding %u: ids, size, time", enc);
    CHECK(nano_dh_record_thread(&d, 2) == 2 * 64 + 63, "thread %u", nano_dh_record_thread(&d, 2));
    CHECK(nano_dh_decode(r, n - 8, &d, err, sizeof err) == 0, "truncated record is incomplete");
  }
  size_t n = unit_record(r, NANO_DH_ENC_STRIDE);
  r[0] = r[1] = 0;
  CHECK(nano_dh_decode(r, n, &d, err, sizeof err) == 0, "zero size is incomplete");

  struct {
    int off, bytes;
    uint64_t v;
    const char *msg;
  } bad[] = {
      {NANO_DH_HDR_OFF_VERSION, 1, 9, "unsupported version"},
      {NANO_DH_HDR_OFF_FORMAT, 1, 3, "unknown format"},
      {NANO_DH_HDR_OFF_FORMAT, 1, 0x40, "unknown format"},
      {NANO_DH_HDR_OFF_WAVESIZE, 1, 16, "bad wave size"},
      {NANO_DH_HDR_OFF_LANES, 1, 0, "bad lane count"},
      {NANO_DH_HDR_OFF_BYTES, 2, NANO_DH_HDR_SIZE + 16, "size does not match"},
      {NANO_DH_HDR_OFF_EXEC, 8, 3, "exec mask does not match lane count"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    unit_record(r, NANO_DH_ENC_STRIDE);
    unit_put(r + bad[i].off, bad[i].v, bad[i].bytes);
    err[0] = 0;
    CHECK(nano_dh_decode(r, sizeof r, &d, err, sizeof err) == -1, "case %zu accepted", i);
    CHECK(strstr(err, bad[i].msg), "case %zu: message '%s', want '%s'", i, err, bad[i].msg);
  }
  unit_record(r, NANO_DH_ENC_STRIDE);
  r[NANO_DH_HDR_OFF_WAVESIZE] = 32;
  CHECK(nano_dh_decode(r, sizeof r, &d, err, sizeof err) == -1 && strstr(err, "exec mask"),
        "lane 63 in a wave32: %s", err);

  /* the encoder's choice (the device runtime applies the same rule) */
  struct nano_dh_record e = {.lanes = 4};
  int64_t stride;
  uint64_t coalesced[4] = {0x2000, 0x2004, 0x2008, 0x200c}, down[4] = {0x2000, 0x1ff0, 0x1fe0, 0x1fd0},
           broadcast[4] = {7, 7, 7, 7}, near[4] = {0x2000, 0x2004, 0x2000, 0x9000},
           far[4] = {0x2000, 0x2004, 0x2000, 0x2000 + (1ull << 31)};
  memcpy(e.addr, coalesced, sizeof coalesced);
  CHECK(nano_dh_encoding(&e, &stride) == NANO_DH_ENC_STRIDE && stride == 4, "coalesced");
  memcpy(e.addr, down, sizeof down);
  CHECK(nano_dh_encoding(&e, &stride) == NANO_DH_ENC_STRIDE && stride == -16, "descending");
  memcpy(e.addr, broadcast, sizeof broadcast);
  CHECK(nano_dh_encoding(&e, &stride) == NANO_DH_ENC_STRIDE && stride == 0, "broadcast");
  memcpy(e.addr, near, sizeof near);
  CHECK(nano_dh_encoding(&e, &stride) == NANO_DH_ENC_OFF32, "within 2 GiB");
  memcpy(e.addr, far, sizeof far);
  CHECK(nano_dh_encoding(&e, &stride) == NANO_DH_ENC_ADDR64, "2 GiB away");
  e.lanes = 1;
  CHECK(nano_dh_encoding(&e, &stride) == NANO_DH_ENC_STRIDE, "one lane");
}

/* A site table with 2 sites followed by 8 bytes of padding. */
static size_t unit_sites_blob(unsigned char *b) {
  const char str[] = "\0kern\0dir/k.hip";
  size_t n = NANO_DH_SITES_HDR_SIZE + 2 * NANO_DH_SITE_SIZE + sizeof str;
  memset(b, 0, 256);
  memcpy(b, NANO_DH_SITES_MAGIC, 8);
  unit_put(b + 8, NANO_DH_SITES_VERSION, 4);
  unit_put(b + 12, 0x1234abcd, 4);
  unit_put(b + 16, 2, 4);
  unit_put(b + 20, sizeof str, 4);
  for (int i = 0; i < 2; i++) {
    unsigned char *e = b + NANO_DH_SITES_HDR_SIZE + i * NANO_DH_SITE_SIZE;
    unit_put(e, 1, 4);
    unit_put(e + 4, 6, 4);
    unit_put(e + 8, 40 + (unsigned)i, 4);
    unit_put(e + 12, 3, 4);
    e[16] = i ? NANO_DH_KIND_STORE : NANO_DH_KIND_LOAD;
    e[17] = NANO_DH_AS_GLOBAL;
    unit_put(e + 20, 4, 4);
  }
  memcpy(b + NANO_DH_SITES_HDR_SIZE + 2 * NANO_DH_SITE_SIZE, str, sizeof str);
  return (n + 7) / 8 * 8 + 8;
}

static void unit_sites(void) {
  unsigned char b[256];
  char err[256];
  size_t n = unit_sites_blob(b);
  struct nano_dh_sites *s = nano_dh_sites_create();
  CHECK(s, "out of memory");
  CHECK(nano_dh_sites_add_blob(s, b, n, "blob", err, sizeof err) == 1, "%s", err);
  CHECK(nano_dh_sites_count(s) == 2, "count %zu", nano_dh_sites_count(s));
  const struct nano_dh_site *x = nano_dh_sites_find(s, 0x1234abcd00000001ull);
  CHECK(x && strcmp(x->kernel, "kern") == 0 && strcmp(x->file, "dir/k.hip") == 0 &&
            x->line == 41 && x->column == 3 && x->kind == NANO_DH_KIND_STORE && x->size == 4,
        "site 1");
  CHECK(!nano_dh_sites_find(s, 0x1234abcd00000002ull), "no site 2");
  nano_dh_sites_destroy(s);

  struct {
    int off, bytes;
    uint64_t v;
    const char *msg;
  } bad[] = {
      {0, 1, 'X', "bad magic"},
      {8, 4, 2, "unsupported version"},
      {16, 4, 200, "truncated"},
      {NANO_DH_SITES_HDR_SIZE, 4, 900, "string offset out of range"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    unit_sites_blob(b);
    unit_put(b + bad[i].off, bad[i].v, bad[i].bytes);
    s = nano_dh_sites_create();
    err[0] = 0;
    CHECK(nano_dh_sites_add_blob(s, b, n, "input.co", err, sizeof err) == -1, "case %zu", i);
    CHECK(strstr(err, bad[i].msg) && strstr(err, "input.co"), "case %zu: '%s'", i, err);
    nano_dh_sites_destroy(s);
  }
  s = nano_dh_sites_create();
  CHECK(nano_dh_sites_add_elf(s, "/nonexistent/x.co", err, sizeof err) == -1 &&
            strstr(err, "/nonexistent/x.co"),
        "missing file: '%s'", err);
  CHECK(nano_dh_sites_add_elf(s, "/proc/self/status", err, sizeof err) == -1 &&
            strstr(err, "not an ELF file"),
        "not ELF: '%s'", err);
  nano_dh_sites_destroy(s);
}

/* Consumer of unit_buffer: checks each record against the one written. */
struct unit_expect {
  const struct nano_dh_record *want;
  unsigned n, next;
  int inside; /* a drain thread is in unit_same for this buffer */
};

static int unit_same(const struct nano_dh_record *r, void *arg) {
  struct unit_expect *x = arg;
  CHECK(!__atomic_exchange_n(&x->inside, 1, __ATOMIC_ACQ_REL),
        "two drain threads in one buffer at once");
  CHECK(x->next < x->n, "record %u beyond the %u written", x->next, x->n);
  const struct nano_dh_record *w = &x->want[x->next++];
  CHECK(r->lanes == w->lanes && r->exec == w->exec && r->site == w->site && r->size == w->size &&
            r->wave == w->wave && r->wave_size == w->wave_size && r->block[0] == w->block[0] &&
            r->block[1] == w->block[1] && r->block[2] == w->block[2] && r->time == w->time &&
            r->space == w->space,
        "record %u: header differs", x->next - 1);
  for (unsigned i = 0; i < r->lanes; i++)
    CHECK(nano_dh_record_addr(r, i) == w->addr[i] && r->lane[i] == w->lane[i],
          "record %u lane %u", x->next - 1, i);
  __atomic_store_n(&x->inside, 0, __ATOMIC_RELEASE);
  return 0;
}

/* A wave32 record with `lanes` lanes from lane 0, addresses by pattern:
 * 0 coalesced, 1 scattered within 2 GiB, 2 anywhere. */
static void unit_make(struct nano_dh_record *r, unsigned k, unsigned lanes, int pattern) {
  memset(r, 0, sizeof *r);
  r->lanes = (uint8_t)lanes;
  r->wave_size = 32;
  r->wave = (uint16_t)k;
  r->site = 0x77ull << 32 | k;
  r->size = 4;
  r->block[0] = k;
  r->block[1] = 1;
  r->block[2] = 2;
  r->time = 1000 + k;
  r->space = NANO_DH_SPACE_GLOBAL;
  for (unsigned i = 0; i < lanes; i++) {
    r->exec |= 1ull << i;
    r->lane[i] = (uint8_t)i;
    r->addr[i] = pattern == 0   ? 0x10000 + 4 * i
                 : pattern == 1 ? 0x10000 + (i * 7919u % 4096) * 64
                                : (uint64_t)(i * i + 1) << 36 | k;
  }
}

static void unit_buffer(void) {
  char err[256];
  CHECK(!nano_dh_buffer_create(NULL, 3000, 0, 0, err, sizeof err) && strstr(err, "power of two"),
        "capacity not a power of two accepted: %s", err);
  CHECK(!nano_dh_buffer_create(NULL, 512, 0, 0, err, sizeof err), "capacity below the minimum");
  struct nano_dh_buffer *b = nano_dh_buffer_create(NULL, 2048, 0, 0, err, sizeof err);
  CHECK(b, "create: %s", err);
  const unsigned char *d = nano_dh_buffer_desc(b);
  uint32_t magic, version;
  memcpy(&magic, d + NANO_DH_DESC_OFF_MAGIC, 4);
  memcpy(&version, d + NANO_DH_DESC_OFF_VERSION, 4);
  CHECK(magic == NANO_DH_MAGIC && version == NANO_DH_VERSION, "magic %x version %u", magic,
        version);
  struct nano_dh_drain_stats st = {0};
  CHECK(nano_dh_buffer_drain(b, NULL, NULL, &st) == 0, "empty drain");

  /* Records of every encoding, written and drained 40 at a time: the ring
   * wraps around many times; each record comes back exactly, whole in the
   * first five rounds, compact in the last five. */
  static struct nano_dh_record want[40];
  for (unsigned round = 0; round < 10; round++) {
    nano_dh_buffer_set_compact(b, round >= 5);
    for (unsigned k = 0; k < 40; k++)
      unit_make(&want[k], round * 40 + k, 1 + k % 32, k % 3);
    struct unit_expect x = {want, 0, 0, 0};
    for (unsigned k = 0; k < 40; k++) {
      unsigned w = nano_dh_buffer_write(b, &want[k]);
      int64_t stride;
      unsigned enc = nano_dh_encoding(&want[k], &stride);
      CHECK(w == NANO_DH_HDR_SIZE + NANO_DH_PAYLOAD_BYTES(enc, want[k].lanes),
            "record %u: %u bytes", k, w);
      x.n = k + 1;
      CHECK(nano_dh_buffer_drain(b, unit_same, &x, &st) >= 0, "drain");
    }
    CHECK(x.next == 40, "round %u: %u records back", round, x.next);
  }
  CHECK(st.records == 400 && st.decode_errors == 0 && st.lost_bytes == 0, "stats %llu %llu %llu",
        (unsigned long long)st.records, (unsigned long long)st.decode_errors,
        (unsigned long long)st.lost_bytes);
  CHECK(nano_dh_buffer_dropped(b) == 0, "nothing dropped");

  /* A full ring with max_spins 0 drops at once, and counts. */
  unsigned kept = 0, dropped = 0;
  for (unsigned k = 0; k < 100; k++) {
    unit_make(&want[0], k, 32, 2); /* 56 + 256 = 312 bytes */
    if (nano_dh_buffer_write(b, &want[0]))
      kept++;
    else
      dropped++;
  }
  CHECK(kept == 2048 / 312 && dropped == 100 - kept && nano_dh_buffer_dropped(b) == dropped,
        "kept %u dropped %u counted %llu", kept, dropped,
        (unsigned long long)nano_dh_buffer_dropped(b));
  memset(&st, 0, sizeof st);
  CHECK(nano_dh_buffer_finish(b, NULL, NULL, &st) == (long)kept, "final drain");

  nano_dh_buffer_destroy(b);
}

/* unit_same, then a stop after the record x->n (the consumer has enough). */
static int unit_enough(const struct nano_dh_record *r, void *arg) {
  struct unit_expect *x = arg;
  unit_same(r, arg);
  return x->next == x->n;
}

/* A final drain whose consumer stops early: the records after the stop are
 * counted as lost and cleared, so the ring's next use sees only its own. */
static void unit_finish_stopped(void) {
  char err[256];
  struct nano_dh_buffer *b = nano_dh_buffer_create(NULL, 1024, 0, 0, err, sizeof err);
  CHECK(b, "%s", err);
  struct nano_dh_record r[3];
  for (unsigned k = 0; k < 3; k++) {
    unit_make(&r[k], k + 1, 1, 0);
    CHECK(nano_dh_buffer_write(b, &r[k]) == 64, "write %u", k);
  }
  struct nano_dh_drain_stats st = {0};
  struct unit_expect x = {r, 1, 0, 0};
  CHECK(nano_dh_buffer_finish(b, unit_enough, &x, &st) == 1 && x.next == 1, "one record taken");
  CHECK(st.records == 1 && st.lost_bytes == 128, "the two refused counted as lost: %llu %llu",
        (unsigned long long)st.records, (unsigned long long)st.lost_bytes);
  CHECK(nano_dh_buffer_write(b, &r[2]) == 64, "write after");
  memset(&st, 0, sizeof st);
  x = (struct unit_expect){&r[2], 1, 0, 0};
  CHECK(nano_dh_buffer_finish(b, unit_same, &x, &st) == 1 && st.lost_bytes == 0,
        "the next use drains its one record alone: %llu lost",
        (unsigned long long)st.lost_bytes);
  nano_dh_buffer_destroy(b);
}

/* A ring whose record gets damaged before the drain: the decoder error is
 * counted, the record skipped by its size, the next one delivered. */
static void unit_damaged(void) {
  char err[256];
  struct nano_dh_buffer *b = nano_dh_buffer_create(NULL, 1024, 0, 0, err, sizeof err);
  CHECK(b, "%s", err);
  struct nano_dh_record r[2];
  unit_make(&r[0], 1, 1, 0);
  unit_make(&r[1], 2, 1, 0);
  CHECK(nano_dh_buffer_write(b, &r[0]) == 64 && nano_dh_buffer_write(b, &r[1]) == 64, "write");
  /* the ring is the descriptor's data field; damage the first record's
   * version */
  uint64_t data;
  memcpy(&data, (const unsigned char *)nano_dh_buffer_desc(b) + NANO_DH_DESC_OFF_DATA, 8);
  ((unsigned char *)(uintptr_t)data)[NANO_DH_HDR_OFF_VERSION] = 99;
  struct nano_dh_drain_stats st = {0};
  struct unit_expect x = {&r[1], 1, 0, 0};
  CHECK(nano_dh_buffer_finish(b, unit_same, &x, &st) == 1 && x.next == 1, "second record");
  CHECK(st.decode_errors == 1 && st.lost_bytes == 64 && strstr(st.first_error, "version"),
        "errors %llu lost %llu '%s'", (unsigned long long)st.decode_errors,
        (unsigned long long)st.lost_bytes, st.first_error);
  /* a size that cannot be right: everything up to head is lost, counted */
  CHECK(nano_dh_buffer_write(b, &r[0]) == 64 && nano_dh_buffer_write(b, &r[1]) == 64, "write");
  uint64_t head;
  memcpy(&head, (const unsigned char *)nano_dh_buffer_desc(b) + NANO_DH_DESC_OFF_HEAD, 8);
  unsigned char *rec = (unsigned char *)(uintptr_t)data + ((head - 128) & 1023);
  rec[NANO_DH_HDR_OFF_VERSION] = 99;
  rec[NANO_DH_HDR_OFF_BYTES] = 3;
  memset(&st, 0, sizeof st);
  x.next = 0;
  CHECK(nano_dh_buffer_finish(b, unit_same, &x, &st) == 0, "nothing decodes");
  CHECK(st.decode_errors == 1 && st.lost_bytes == 128, "lost %llu",
        (unsigned long long)st.lost_bytes);
  nano_dh_buffer_destroy(b);
}

/* Pool: buffers reused, exhaustion answered with NULL. Drain thread: records
 * written while attached reach the consumer; detach then finish takes the
 * rest; nothing is lost or seen twice. */
static void unit_pool(void) {
  char err[256];
  /* the writer waits as long as the drain thread needs (no drops): what is
   * checked is delivery, not timing */
  struct nano_dh_pool *p = nano_dh_pool_create(NULL, 2, 4096, 0, UINT32_MAX);
  CHECK(p, "pool");
  struct nano_dh_buffer *a = nano_dh_pool_acquire(p, err, sizeof err);
  struct nano_dh_buffer *b = nano_dh_pool_acquire(p, err, sizeof err);
  CHECK(a && b && a != b, "two buffers");
  CHECK(!nano_dh_pool_acquire(p, err, sizeof err) && err[0] == 0, "third: %s", err);
  nano_dh_pool_release(p, a);
  CHECK(nano_dh_pool_acquire(p, err, sizeof err) == a, "reused");

  struct nano_dh_drainer *d = nano_dh_drainer_start(1);
  CHECK(d, "drainer");
  static struct nano_dh_record want[2000];
  for (unsigned k = 0; k < 2000; k++)
    unit_make(&want[k], k, 1 + k % 32, k % 3);
  struct unit_expect x = {want, 2000, 0, 0};
  struct nano_dh_drain_stats st = {0};
  CHECK(nano_dh_drainer_attach(d, a, unit_same, &x, &st) == 0, "attach");
  for (unsigned k = 0; k < 2000; k++)
    CHECK(nano_dh_buffer_write(a, &want[k]) > 0, "record %u dropped", k);
  nano_dh_drainer_detach(d, a);
  CHECK(nano_dh_buffer_finish(a, unit_same, &x, &st) >= 0, "finish");
  CHECK(x.next == 2000 && st.records == 2000, "%u records consumed", x.next);
  nano_dh_drainer_stop(d);
  nano_dh_pool_release(p, a);
  nano_dh_pool_release(p, b);
  nano_dh_pool_destroy(p);
}

/* Writes its buffer's records (unit_drainers). */
struct unit_writer {
  struct nano_dh_buffer *b;
  const struct nano_dh_record *want;
  unsigned n;
};
static void *unit_write(void *arg) {
  const struct unit_writer *w = arg;
  for (unsigned k = 0; k < w->n; k++)
    CHECK(nano_dh_buffer_write(w->b, &w->want[k]) > 0, "record %u dropped", k);
  return NULL;
}

/* Three drain threads, two small buffers written at once: each buffer's
 * records arrive whole and in order, never two threads in one buffer. */
static void unit_drainers(void) {
  errno = 0;
  CHECK(!nano_dh_drainer_start(0) && errno == EINVAL, "no drain thread refused");
  char err[256];
  struct nano_dh_drainer *d = nano_dh_drainer_start(3);
  CHECK(d, "drainer of 3 threads");
  enum { N = 3000 };
  static struct nano_dh_record want[2][N];
  struct nano_dh_buffer *b[2];
  struct unit_expect x[2];
  struct nano_dh_drain_stats st[2] = {{0}};
  struct unit_writer w[2];
  pthread_t t[2];
  for (int i = 0; i < 2; i++) {
    for (unsigned k = 0; k < N; k++)
      unit_make(&want[i][k], k, 1 + (k + i) % 32, (k + i) % 3);
    b[i] = nano_dh_buffer_create(NULL, 4096, 0, UINT32_MAX, err, sizeof err);
    CHECK(b[i], "buffer: %s", err);
    x[i] = (struct unit_expect){want[i], N, 0, 0};
    CHECK(nano_dh_drainer_attach(d, b[i], unit_same, &x[i], &st[i]) == 0, "attach");
    w[i] = (struct unit_writer){b[i], want[i], N};
  }
  for (int i = 0; i < 2; i++)
    CHECK(pthread_create(&t[i], NULL, unit_write, &w[i]) == 0, "writer");
  for (int i = 0; i < 2; i++) {
    CHECK(pthread_join(t[i], NULL) == 0, "join");
    nano_dh_drainer_detach(d, b[i]);
    CHECK(nano_dh_buffer_finish(b[i], unit_same, &x[i], &st[i]) >= 0, "finish");
    CHECK(x[i].next == N && st[i].records == N, "buffer %d: %u records consumed", i, x[i].next);
    nano_dh_buffer_destroy(b[i]);
  }
  nano_dh_drainer_stop(d);
}

int main(void) {
  unit_records();
  unit_sites();
  unit_buffer();
  unit_damaged();
  unit_finish_stopped();
  unit_pool();
  unit_drainers();
  printf("ok dh_comms: records, sites, buffers, pool, drain threads\n");
  return 0;
}
