/*
 * The device runtime's own record writer, end to end on CPU kernels
 * (cpu_kernels.c, compiled with the plugin) without the runtime library: this
 * program calls the twins itself, thread by thread (the serial NANO_LAUNCH),
 * with a buffer whose descriptor has no hook, so the device code reserves
 * and writes one-lane records exactly as it does on a GPU. The records are
 * drained, decoded, resolved against the site table of this executable, and
 * compared with exactly the accesses each thread makes. (The runtime's
 * virtual waves are tested by tests/dispatch.)
 *
 * usage: cpu_e2e records|drop|wait|drain|threads
 *   records: large buffer; every record checked, nothing dropped
 *   drop:    the smallest buffer (16 one-lane records), NANO_DH_FLAG_DROP:
 *            16 records kept, the rest dropped and counted
 *   wait:    the same with a bounded wait (no drain): same, after waiting
 *   drain:   the smallest buffer drained after every thread: no drops,
 *            records wrap around the ring and still decode exactly
 *   threads: E2E_WRITERS threads launch twins at once into the smallest
 *            buffer while a drainer consumes it: leaders that check for
 *            room together reserve past it and wait for the drain
 *            (nano_dh_reserve); every record arrives once, none dropped
 */
#define _GNU_SOURCE /* pthread_tryjoin_np */
#include <pthread.h>
#include "nano/dh_comms.h"
#include "nano/kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void k_axpy(float *y, const float *x, float a, int n);
void k_mixed(int64_t *count, char *dst, const char *src, unsigned len);
/* The twins (naming rule: nano/dh_format.h); user code never names them. */
void __nano_twin_k_axpy(float *y, const float *x, float a, int n, void *desc);
void __nano_twin_k_mixed(int64_t *count, char *dst, const char *src, unsigned len, void *desc);
extern const unsigned axpy_line, bump_line, mixed_atomic_line, mixed_cas_line, mixed_copy_line;

#include "check.h"

/* One expected access. */
struct e2e_access {
  const char *function;
  unsigned line, kind, size;
  uint64_t addr;
  uint32_t block, thread; /* block x, linear thread id */
};

struct e2e_state {
  struct nano_dh_sites *sites;
  struct e2e_access want[512];
  unsigned nwant, next;
};

static void e2e_expect(struct e2e_state *s, const char *fn, unsigned line, unsigned kind,
                       unsigned size, const void *addr, uint32_t block, uint32_t thread) {
  CHECK(s->nwant < 512, "too many expected accesses");
  s->want[s->nwant++] = (struct e2e_access){fn, line, kind, size, (uint64_t)(uintptr_t)addr,
                                            block, thread};
}

/* Compares one record with the next expected access (records of a CPU
 * kernel come in program order, thread by thread). */
static int e2e_check(const struct nano_dh_record *r, void *arg) {
  struct e2e_state *s = arg;
  CHECK(s->next < s->nwant, "record %u beyond the %u expected", s->next, s->nwant);
  struct e2e_access *w = &s->want[s->next++];
  if (w->kind == NANO_DH_KIND_LOAD && r->addr[0] != w->addr && s->next < s->nwant &&
      w[1].kind == NANO_DH_KIND_LOAD && w[1].line == w->line && w[1].addr == r->addr[0]) {
    struct e2e_access t = w[0]; /* two loads of one statement, other order */
    w[0] = w[1];
    w[1] = t;
  }
  CHECK(r->lanes == 1 && r->wave_size == 1 && r->exec == 1 && r->bytes == NANO_DH_HDR_SIZE + 8 &&
            r->encoding == NANO_DH_ENC_STRIDE,
        "lanes %u wave %u exec %llx bytes %u encoding %u", r->lanes, r->wave_size,
        (unsigned long long)r->exec, r->bytes, r->encoding);
  const struct nano_dh_site *site = nano_dh_sites_find(s->sites, r->site);
  CHECK(site, "record %u: site %llx not in the site table", s->next - 1,
        (unsigned long long)r->site);
  CHECK(strcmp(site->kernel, w->function) == 0, "record %u: function %s, want %s", s->next - 1,
        site->kernel, w->function);
  size_t fl = strlen(site->file);
  CHECK(fl >= 13 && strcmp(site->file + fl - 13, "cpu_kernels.c") == 0, "file %s", site->file);
  CHECK(site->line == w->line, "record %u (%s): line %u, want %u", s->next - 1, w->function,
        site->line, w->line);
  CHECK(site->column > 0, "no column");
  CHECK(site->kind == w->kind, "record %u: kind %s, want %s", s->next - 1,
        nano_dh_kind_name(site->kind), nano_dh_kind_name(w->kind));
  CHECK(site->addrspace == NANO_DH_AS_GENERIC, "address space %u", site->addrspace);
  CHECK(r->size == w->size, "record %u: size %u, want %u", s->next - 1, r->size, w->size);
  CHECK(site->size == 0 || site->size == w->size, "site size %u", site->size);
  CHECK(r->addr[0] == w->addr, "record %u (%s line %u): address %llx, want %llx", s->next - 1,
        w->function, w->line, (unsigned long long)r->addr[0], (unsigned long long)w->addr);
  CHECK(r->block[0] == w->block && r->block[1] == 0 && r->block[2] == 0, "block %u,%u,%u",
        r->block[0], r->block[1], r->block[2]);
  CHECK(nano_dh_record_thread(r, 0) == w->thread, "record %u: thread %u, want %u", s->next - 1,
        nano_dh_record_thread(r, 0), w->thread);
  return 0;
}

enum { E2E_GRID = 2, E2E_BLOCK = 4, E2E_N = E2E_GRID * E2E_BLOCK, E2E_LEN = 3 };

struct e2e_data {
  float x[E2E_N], y[E2E_N], y_ref[E2E_N];
  int64_t count[2], count_ref[2];
  char src[E2E_N * E2E_LEN], dst[E2E_N * E2E_LEN], dst_ref[E2E_N * E2E_LEN];
};

static void e2e_init(struct e2e_data *d) {
  for (int i = 0; i < E2E_N; i++)
    d->x[i] = (float)i, d->y[i] = d->y_ref[i] = 1.0f + (float)i;
  memset(d->count, 0, sizeof d->count);
  memset(d->count_ref, 0, sizeof d->count_ref);
  for (int i = 0; i < E2E_N * E2E_LEN; i++)
    d->src[i] = (char)('a' + i % 26), d->dst[i] = d->dst_ref[i] = 0;
}

/* The accesses of k_axpy then k_mixed for every thread, in launch order. */
static void e2e_expect_all(struct e2e_state *s, struct e2e_data *d) {
  for (uint32_t b = 0; b < E2E_GRID; b++)
    for (uint32_t t = 0; t < E2E_BLOCK; t++) {
      unsigned i = b * E2E_BLOCK + t;
      /* y[i] = a * x[i] + y[i]: the loads' order is the compiler's;
       * e2e_check accepts either. */
      e2e_expect(s, "k_axpy", axpy_line, NANO_DH_KIND_LOAD, 4, &d->x[i], b, t);
      e2e_expect(s, "k_axpy", axpy_line, NANO_DH_KIND_LOAD, 4, &d->y[i], b, t);
      e2e_expect(s, "k_axpy", axpy_line, NANO_DH_KIND_STORE, 4, &d->y[i], b, t);
    }
  for (uint32_t b = 0; b < E2E_GRID; b++)
    for (uint32_t t = 0; t < E2E_BLOCK; t++) {
      unsigned i = b * E2E_BLOCK + t;
      e2e_expect(s, "k_mixed", mixed_atomic_line, NANO_DH_KIND_ATOMIC, 8, &d->count[0], b, t);
      e2e_expect(s, "k_mixed", mixed_cas_line, NANO_DH_KIND_ATOMIC, 8, &d->count[1], b, t);
      e2e_expect(s, "k_mixed", mixed_copy_line, NANO_DH_KIND_LOAD, E2E_LEN,
                 &d->src[i * E2E_LEN], b, t);
      e2e_expect(s, "k_mixed", mixed_copy_line, NANO_DH_KIND_STORE, E2E_LEN,
                 &d->dst[i * E2E_LEN], b, t);
      e2e_expect(s, "bump", bump_line, NANO_DH_KIND_LOAD, 1, &d->dst[i * E2E_LEN], b, t);
      e2e_expect(s, "bump", bump_line, NANO_DH_KIND_STORE, 1, &d->dst[i * E2E_LEN], b, t);
    }
}

/* Drains the buffer into e2e_check when `each` is set. */
static void e2e_drain(struct nano_dh_buffer *buf, struct e2e_state *s, int each) {
  struct nano_dh_drain_stats st = {0};
  if (each) {
    nano_dh_buffer_drain(buf, e2e_check, s, &st);
    CHECK(st.decode_errors == 0, "%s", st.first_error);
  }
}

/* Runs originals and twins; checks the twins compute what the originals do. */
static void e2e_run(struct e2e_data *d, struct nano_dh_buffer *buf, struct e2e_state *s,
                    int drain_each) {
  void *desc = nano_dh_buffer_desc(buf);
  nano_dim3 grid = nano_dim(E2E_GRID, 1, 1), block = nano_dim(E2E_BLOCK, 1, 1);
  NANO_LAUNCH(grid, block, k_axpy(d->y_ref, d->x, 2.0f, E2E_N));
  NANO_LAUNCH(grid, block, k_mixed(d->count_ref, d->dst_ref, d->src, E2E_LEN));
  NANO_LAUNCH(grid, block, (__nano_twin_k_axpy(d->y, d->x, 2.0f, E2E_N, desc), e2e_drain(buf, s, drain_each)));
  NANO_LAUNCH(grid, block,
              (__nano_twin_k_mixed(d->count, d->dst, d->src, E2E_LEN, desc), e2e_drain(buf, s, drain_each)));
  CHECK(memcmp(d->y, d->y_ref, sizeof d->y) == 0, "twin of k_axpy computed another result");
  CHECK(memcmp(d->dst, d->dst_ref, sizeof d->dst) == 0, "twin of k_mixed copied differently");
  CHECK(d->count[0] == E2E_N && d->count_ref[0] == E2E_N, "count %lld", (long long)d->count[0]);
}

/* ---- threads mode ---------------------------------------------------------- */

enum { E2E_WRITERS = 4, E2E_ROUNDS = 2000 };

struct e2e_writer {
  pthread_t id;
  struct nano_dh_buffer *buf;
  struct e2e_data d;
};

static void *e2e_write(void *arg) {
  struct e2e_writer *w = arg;
  void *desc = nano_dh_buffer_desc(w->buf);
  nano_dim3 grid = nano_dim(E2E_GRID, 1, 1), block = nano_dim(E2E_BLOCK, 1, 1);
  for (int r = 0; r < E2E_ROUNDS; r++)
    NANO_LAUNCH(grid, block, __nano_twin_k_axpy(w->d.y, w->d.x, 2.0f, E2E_N, desc));
  return NULL;
}

struct e2e_tally {
  struct e2e_writer *w;
  unsigned long records, foreign;
};

/* Counts a record; one whose address lies in no writer's arrays is foreign. */
static int e2e_count(const struct nano_dh_record *r, void *arg) {
  struct e2e_tally *t = arg;
  t->records++;
  uintptr_t a = (uintptr_t)r->addr[0];
  for (int i = 0; i < E2E_WRITERS; i++) {
    const struct e2e_data *d = &t->w[i].d;
    if ((a >= (uintptr_t)d->x && a < (uintptr_t)(d->x + E2E_N)) ||
        (a >= (uintptr_t)d->y && a < (uintptr_t)(d->y + E2E_N)))
      return 0;
  }
  t->foreign++;
  return 0;
}

static int e2e_threads(void) {
  static struct e2e_writer w[E2E_WRITERS];
  char err[256];
  /* waits for room as long as it takes: the drainer never stops */
  struct nano_dh_buffer *buf =
      nano_dh_buffer_create(NULL, NANO_DH_MIN_CAPACITY, 0, UINT32_MAX, err, sizeof err);
  CHECK(buf, "cannot create a buffer: %s", err);
  for (int i = 0; i < E2E_WRITERS; i++) {
    w[i].buf = buf;
    e2e_init(&w[i].d);
    CHECK(pthread_create(&w[i].id, NULL, e2e_write, &w[i]) == 0, "pthread_create");
  }
  struct e2e_tally t = {w, 0, 0};
  struct nano_dh_drain_stats st = {0};
  int joined[E2E_WRITERS] = {0}, running = E2E_WRITERS;
  while (running) {
    nano_dh_buffer_drain(buf, e2e_count, &t, &st);
    for (int i = 0; i < E2E_WRITERS; i++)
      if (!joined[i] && pthread_tryjoin_np(w[i].id, NULL) == 0)
        joined[i] = 1, running--;
  }
  nano_dh_buffer_finish(buf, e2e_count, &t, &st);
  const unsigned long want = (unsigned long)E2E_WRITERS * E2E_ROUNDS * E2E_N * 3;
  CHECK(st.decode_errors == 0 && st.lost_bytes == 0, "decode errors %llu, lost bytes %llu: %s",
        (unsigned long long)st.decode_errors, (unsigned long long)st.lost_bytes, st.first_error);
  CHECK(nano_dh_buffer_dropped(buf) == 0, "%llu dropped",
        (unsigned long long)nano_dh_buffer_dropped(buf));
  CHECK(t.records == want, "%lu records, want %lu", t.records, want);
  CHECK(t.foreign == 0, "%lu records of addresses no writer touched", t.foreign);
  nano_dh_buffer_destroy(buf);
  printf("ok threads: %d writers, %lu records through a %u-byte ring\n", E2E_WRITERS, want,
         NANO_DH_MIN_CAPACITY);
  return 0;
}

int main(int argc, char **argv) {
  CHECK(argc == 2, "usage: %s records|drop|wait|drain|threads", argv[0]);
  const char *mode = argv[1];
  if (strcmp(mode, "threads") == 0)
    return e2e_threads();
  static struct e2e_state s;
  static struct e2e_data d;
  char err[256];
  s.sites = nano_dh_sites_create();
  CHECK(s.sites, "out of memory");
  CHECK(nano_dh_sites_add_elf(s.sites, "/proc/self/exe", err, sizeof err) >= 1, "%s", err);
  e2e_init(&d);
  e2e_expect_all(&s, &d);
  const unsigned total = s.nwant; /* 8 threads x (3 + 6) */
  const unsigned rec = NANO_DH_HDR_SIZE + 8, fit = NANO_DH_MIN_CAPACITY / rec;
  struct nano_dh_drain_stats st = {0};

  if (strcmp(mode, "records") == 0 || strcmp(mode, "drain") == 0) {
    int drain = strcmp(mode, "drain") == 0;
    struct nano_dh_buffer *buf =
        nano_dh_buffer_create(NULL, drain ? NANO_DH_MIN_CAPACITY : 1 << 16, 0, 1000, err, sizeof err);
    CHECK(buf, "cannot create a buffer: %s", err);
    e2e_run(&d, buf, &s, drain);
    if (!drain)
      CHECK(nano_dh_buffer_finish(buf, e2e_check, &s, &st) == (long)total, "%s", st.first_error);
    CHECK(s.next == total, "%u records checked, want %u", s.next, total);
    CHECK(nano_dh_buffer_dropped(buf) == 0, "%llu dropped",
          (unsigned long long)nano_dh_buffer_dropped(buf));
    nano_dh_buffer_destroy(buf);
    printf("ok %s: %u records exact\n", mode, total);
  } else if (strcmp(mode, "drop") == 0 || strcmp(mode, "wait") == 0) {
    int drop = strcmp(mode, "drop") == 0;
    struct nano_dh_buffer *buf = nano_dh_buffer_create(NULL, NANO_DH_MIN_CAPACITY,
                                                       drop ? NANO_DH_FLAG_DROP : 0, 100, err,
                                                       sizeof err);
    CHECK(buf, "cannot create a buffer: %s", err);
    e2e_run(&d, buf, &s, 0);
    CHECK(nano_dh_buffer_dropped(buf) == total - fit, "%llu dropped, want %u",
          (unsigned long long)nano_dh_buffer_dropped(buf), total - fit);
    CHECK(nano_dh_buffer_finish(buf, e2e_check, &s, &st) == (long)fit, "%s", st.first_error);
    CHECK(s.next == fit, "%u records kept, want %u", s.next, fit);
    nano_dh_buffer_destroy(buf);
    printf("ok %s: %u records kept, %u dropped and counted\n", mode, fit, total - fit);
  } else {
    CHECK(0, "unknown mode %s", mode);
  }
  nano_dh_sites_destroy(s.sites);
  return 0;
}
