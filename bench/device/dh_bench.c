/*
 * dh_bench: the host side of dh_comms, as ratios measured in one run.
 *
 *   1. Bytes per record by access pattern (wave64 and wave32), against
 *      dh_comms' 832 bytes for a wave64 address message.
 *   2. Drain throughput: a ring filled with records of one pattern is drained
 *      (decoded, handed to a consumer, zeroed) against a plain memcpy of the
 *      same bytes; runs interleaved, best and median of each. Target: drain
 *      >= 0.5 x memcpy. Two consumers: of whole records, touching every
 *      address (also given as address bytes, 8 per lane, delivered per
 *      second against memcpy: a strided record describes up to 8.9 times its
 *      own size), and of compact records (nano_dh_decode_compact), reading
 *      what a closed-form analyzer reads.
 *   3. The drain thread's CPU while idle: nothing attached (blocked), and one
 *      buffer attached that stays empty (sleeping up to 1 ms), as a share of
 *      one core over the same wall time.
 *   4. MemoryAnalysis: decoded warp-32 records (NVIDIA's model: 128-byte
 *      lines, 32-byte sectors) of 256 sites found in a table of 4096 as
 *      the runtime finds them, through the analyzer chain, by pattern,
 *      against the drain's consumer touching the same records; runs
 *      interleaved, best and median, and records per second. On the H100
 *      the drain alone delivered 31 M records/s: the analyzer should not be
 *      the limit.
 *   5. Drain threads: two full rings (two dispatches at once) drained by a
 *      drainer of two threads against one, interleaved, best and median.
 *
 * usage: dh_bench [REPEATS]
 */
#define _GNU_SOURCE
#include "nano/analyzers.h"
#include "nano/dh_comms.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* dh_comms' wave64 address message: 64-byte header, 4-byte lane headers,
 * 8-byte addresses (research/device-runtime.md, section 1.5). */
#define BENCH_DH_COMMS_BYTES 832.0
#define BENCH_RING (64u << 20)
#define BENCH_NS 1e9
/* How often the benchmark looks whether drain threads are done. */
#define BENCH_POLL_US 50

static double bench_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / BENCH_NS;
}

enum { PAT_COALESCED, PAT_STRIDED, PAT_BROADCAST, PAT_NEAR, PAT_FAR, PAT_HALF, PATTERNS };
static const char *const bench_pattern[PATTERNS] = {
    "coalesced (4 B apart)",  "strided (64 B apart)", "broadcast (one address)",
    "scattered within 2 GiB", "scattered anywhere",   "half the lanes, coalesced"};

/* A record of pattern p for a wave of `wave` lanes. */
static void bench_record(struct nano_dh_record *r, int p, unsigned wave, unsigned k) {
  memset(r, 0, sizeof *r);
  r->wave_size = (uint8_t)wave;
  r->site = 0x1234ull << 32 | (k & 255);
  r->size = 4;
  r->block[0] = k;
  unsigned lanes = p == PAT_HALF ? wave / 2 : wave;
  for (unsigned i = 0; i < lanes; i++) {
    uint64_t a = 0x7f0000000000ull + (uint64_t)k * 4096;
    switch (p) {
    case PAT_COALESCED:
    case PAT_HALF:
      a += 4 * i;
      break;
    case PAT_STRIDED:
      a += 64 * i;
      break;
    case PAT_BROADCAST:
      break;
    case PAT_NEAR:
      a += (uint64_t)(i * 2654435761u % 65536) * 64;
      break;
    default:
      a = (uint64_t)(i * i + 1) << 36 | k;
      break;
    }
    r->addr[i] = a;
    r->lane[i] = (uint8_t)i;
    r->exec |= 1ull << i;
  }
  r->lanes = (uint8_t)lanes;
  int64_t stride;
  r->encoding = (uint8_t)nano_dh_encoding(r, &stride); /* as the decoder gives it */
}

static void bench_sizes(void) {
  printf("== bytes per record (dh_comms: %.0f for a wave64 address message)\n",
         BENCH_DH_COMMS_BYTES);
  printf("  %-27s %8s %8s %12s\n", "pattern", "wave64", "wave32", "wave64/832");
  for (int p = 0; p < PATTERNS; p++) {
    unsigned bytes[2];
    for (int w = 0; w < 2; w++) {
      struct nano_dh_record r;
      int64_t stride;
      bench_record(&r, p, w ? 32 : 64, 1);
      unsigned enc = nano_dh_encoding(&r, &stride);
      bytes[w] = NANO_DH_HDR_SIZE + NANO_DH_PAYLOAD_BYTES(enc, r.lanes);
    }
    printf("  %-27s %8u %8u %11.1f%%\n", bench_pattern[p], bytes[0], bytes[1],
           100.0 * bytes[0] / BENCH_DH_COMMS_BYTES);
  }
}

/* The consumer of whole records: touches every address, as an analyzer
 * would at least. */
static int bench_consume(const struct nano_dh_record *r, void *arg) {
  uint64_t *sum = arg;
  for (unsigned i = 0; i < r->lanes; i++)
    *sum += r->addr[i];
  return 0;
}

/* The consumer of compact records: reads what a closed-form analyzer reads
 * (nano/aggregate.h on a progression): site, lanes, the first and the last
 * address, each through nano_dh_record_addr. */
static int bench_consume_compact(const struct nano_dh_record *r, void *arg) {
  uint64_t *sum = arg;
  *sum += r->site + r->lanes + nano_dh_record_addr(r, 0) + nano_dh_record_addr(r, r->lanes - 1u);
  return 0;
}

static int bench_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Fills b (of `capacity` bytes) to 3/4, where the writer stops before the
 * ring is full, with records of pattern p for waves of `wave` lanes; *bytes
 * gets their bytes. Returns how many. */
static unsigned bench_fill(struct nano_dh_buffer *b, int p, unsigned wave, uint64_t capacity,
                           uint64_t *bytes) {
  unsigned n = 0;
  *bytes = 0;
  for (;; n++) {
    struct nano_dh_record r;
    bench_record(&r, p, wave, n);
    if (*bytes + NANO_DH_MAX_RECORD > capacity / 4 * 3)
      return n;
    *bytes += nano_dh_buffer_write(b, &r);
  }
}

/* Seconds one drain of b (filled with n records of `bytes`) takes. */
static double bench_drain_once(struct nano_dh_buffer *b, int compact, unsigned n, uint64_t bytes,
                               uint64_t *sum) {
  struct nano_dh_drain_stats st = {0};
  nano_dh_buffer_set_compact(b, compact);
  double t0 = bench_now();
  long got = nano_dh_buffer_drain(b, compact ? bench_consume_compact : bench_consume, sum, &st);
  double t = bench_now() - t0;
  if (got != (long)n || st.bytes != bytes) {
    fprintf(stderr, "dh_bench: drained %ld of %u records\n", got, n);
    exit(1);
  }
  return t;
}

static void bench_drain(int reps) {
  char err[256];
  struct nano_dh_buffer *b = nano_dh_buffer_create(NULL, BENCH_RING, 0, 0, err, sizeof err);
  unsigned char *copy = malloc(BENCH_RING), *src = malloc(BENCH_RING);
  double *td = malloc(reps * sizeof *td), *tc = malloc(reps * sizeof *tc),
         *tm = malloc(reps * sizeof *tm);
  if (!b || !copy || !src || !td || !tc || !tm) {
    fprintf(stderr, "dh_bench: out of memory: %s\n", err);
    exit(1);
  }
  memset(src, 1, BENCH_RING);
  memset(copy, 0, BENCH_RING);
  printf("== drain throughput vs memcpy of the same bytes (%d interleaved runs, %u MiB ring;\n"
         "   whole: every address decoded and touched; compact: nano_dh_decode_compact, the\n"
         "   consumer reading site, lanes, first and last address)\n",
         reps, BENCH_RING >> 20);
  printf("  %-27s %8s %6s %7s %11s %11s %11s\n", "pattern (wave64)", "records", "MB", "memcpy",
         "whole", "compact", "whole");
  printf("  %-27s %8s %6s %7s %11s %11s %11s\n", "", "", "", "GB/s", "ring bytes", "ring bytes",
         "addr bytes");
  printf("  %-27s %8s %6s %7s %11s %11s %11s\n", "", "", "", "", "best/median", "best/median",
         "best/median");
  /* one untimed round first: the first pattern's drains ran at a third to
   * a half of the others' speed in the median without it (the ring's and
   * the decoder's first use) */
  for (int compact = 0; compact < 2; compact++) {
    uint64_t bytes, sum = 0;
    unsigned n = bench_fill(b, PAT_COALESCED, 64, BENCH_RING, &bytes);
    bench_drain_once(b, compact, n, bytes, &sum);
  }
  for (int p = 0; p < PATTERNS; p++) {
    uint64_t bytes = 0, sum = 0;
    unsigned n = 0;
    for (int k = 0; k < reps; k++) {
      n = bench_fill(b, p, 64, BENCH_RING, &bytes);
      td[k] = bench_drain_once(b, 0, n, bytes, &sum);
      bench_fill(b, p, 64, BENCH_RING, &bytes);
      tc[k] = bench_drain_once(b, 1, n, bytes, &sum);
      double t0 = bench_now();
      memcpy(copy, src, bytes);
      tm[k] = bench_now() - t0;
    }
    qsort(td, reps, sizeof *td, bench_cmp);
    qsort(tc, reps, sizeof *tc, bench_cmp);
    qsort(tm, reps, sizeof *tm, bench_cmp);
    /* what a whole drain delivers: 8 bytes per lane's address, against
     * copying as many bytes at the memcpy rate measured */
    struct nano_dh_record one;
    bench_record(&one, p, 64, 0);
    double addr_per_byte = (double)n * 8 * one.lanes / (double)bytes;
    int m = reps / 2;
    printf("  %-27s %8u %6.1f %7.2f %5.2f/%-5.2f %5.2f/%-5.2f %5.2f/%-5.2f\n", bench_pattern[p], n,
           (double)bytes / 1e6, (double)bytes / 1e9 / tm[0], tm[0] / td[0], tm[m] / td[m],
           tm[0] / tc[0], tm[m] / tc[m], addr_per_byte * tm[0] / td[0],
           addr_per_byte * tm[m] / td[m]);
    if (sum == 42)
      puts(""); /* keep the consumers' work */
  }
  nano_dh_buffer_destroy(b);
  free(copy);
  free(src);
  free(td);
  free(tc);
  free(tm);
}

static void bench_idle(void) {
  struct nano_dh_drainer *d = nano_dh_drainer_start(1);
  char err[256];
  struct nano_dh_buffer *b = nano_dh_buffer_create(NULL, 1 << 16, 0, 0, err, sizeof err);
  if (!d || !b) {
    fprintf(stderr, "dh_bench: drainer: %s\n", err);
    exit(1);
  }
  struct nano_dh_drain_stats st = {0};
  const unsigned wait_us = 1000000;
  printf("== drain thread CPU while idle (share of one core over %u s)\n", wait_us / 1000000);
  uint64_t c0 = nano_dh_drainer_cpu_ns(d);
  usleep(wait_us);
  uint64_t c1 = nano_dh_drainer_cpu_ns(d);
  nano_dh_drainer_attach(d, b, NULL, NULL, &st);
  uint64_t c2 = nano_dh_drainer_cpu_ns(d);
  usleep(wait_us);
  uint64_t c3 = nano_dh_drainer_cpu_ns(d);
  nano_dh_drainer_detach(d, b);
  printf("  nothing attached:             %.4f%% (%llu ns)\n", (double)(c1 - c0) / 1e7,
         (unsigned long long)(c1 - c0));
  printf("  an empty buffer attached:     %.4f%% (%llu ns; omniprobe's and NVBit's poll: 100%%)\n",
         (double)(c3 - c2) / 1e7, (unsigned long long)(c3 - c2));
  nano_dh_drainer_stop(d);
  nano_dh_buffer_destroy(b);
}

/* Seconds a drainer of `threads` takes to drain two full rings (attached
 * together, each into bench_consume, until every record is out). */
static double bench_two_rings(unsigned threads, struct nano_dh_buffer *b[2], uint64_t capacity) {
  struct nano_dh_drainer *d = nano_dh_drainer_start(threads);
  if (!d) {
    fprintf(stderr, "dh_bench: cannot start %u drain threads\n", threads);
    exit(1);
  }
  uint64_t bytes;
  unsigned n[2] = {bench_fill(b[0], PAT_COALESCED, 32, capacity, &bytes),
                   bench_fill(b[1], PAT_COALESCED, 32, capacity, &bytes)};
  struct nano_dh_drain_stats st[2] = {{0}};
  uint64_t sum[2] = {0, 0};
  double t0 = bench_now();
  for (int i = 0; i < 2; i++)
    nano_dh_drainer_attach(d, b[i], bench_consume, &sum[i], &st[i]);
  for (int i = 0; i < 2; i++)
    while (__atomic_load_n(&st[i].records, __ATOMIC_RELAXED) < n[i])
      usleep(BENCH_POLL_US); /* not spinning: the two cores are the threads' */
  double t = bench_now() - t0;
  for (int i = 0; i < 2; i++)
    nano_dh_drainer_detach(d, b[i]);
  nano_dh_drainer_stop(d);
  return sum[0] + sum[1] == 42 ? 0 : t; /* keep the consumer's work */
}

static void bench_threads(int reps) {
  const uint64_t capacity = BENCH_RING / 4;
  char err[256];
  struct nano_dh_buffer *b[2] = {nano_dh_buffer_create(NULL, capacity, 0, 0, err, sizeof err),
                                 nano_dh_buffer_create(NULL, capacity, 0, 0, err, sizeof err)};
  double *t1 = malloc(reps * sizeof *t1), *t2 = malloc(reps * sizeof *t2);
  if (!b[0] || !b[1] || !t1 || !t2) {
    fprintf(stderr, "dh_bench: out of memory: %s\n", err);
    exit(1);
  }
  for (int k = 0; k < reps; k++) {
    t1[k] = bench_two_rings(1, b, capacity);
    t2[k] = bench_two_rings(2, b, capacity);
  }
  qsort(t1, reps, sizeof *t1, bench_cmp);
  qsort(t2, reps, sizeof *t2, bench_cmp);
  printf("== drain threads: two full %u MiB rings of coalesced warp-32 records (%d interleaved "
         "runs)\n",
         (unsigned)(capacity >> 20), reps);
  printf("  one thread %.1f ms, two threads %.1f ms (best); speed-up best %.2f, median %.2f\n",
         t1[0] * 1e3, t2[0] * 1e3, t1[0] / t2[0], t1[reps / 2] / t2[reps / 2]);
  nano_dh_buffer_destroy(b[0]);
  nano_dh_buffer_destroy(b[1]);
  free(t1);
  free(t2);
}

/* Records of the analyzer figure: enough to run for tens of milliseconds,
 * handed round from BENCH_KEPT made ones, which stay in cache as the drain's
 * one decoded record does (a fresh record each time measured the memory
 * that streaming 150 MB of them took: a scattered record's 32 addresses are
 * four cache lines). */
#define BENCH_ANALYZED (1u << 18)
#define BENCH_KEPT 256u

/* The sites the benchmark's records name (site ids 0x1234 << 32 | 0..255)
 * among others of a program of BENCH_SITES sites, found as the runtime finds
 * them (nano_dh_sites_find: a binary search of the table by id). */
#define BENCH_SITES 4096u
static struct nano_dh_site bench_sites[BENCH_SITES];

static int bench_site_cmp(const void *a, const void *b) {
  uint64_t x = ((const struct nano_dh_site *)a)->id, y = ((const struct nano_dh_site *)b)->id;
  return x < y ? -1 : x > y;
}

static void bench_sites_make(void) {
  for (unsigned i = 0; i < BENCH_SITES; i++)
    bench_sites[i] = (struct nano_dh_site){
        0x1234ull << 32 | i, "k", "k.cu", 1 + i, 1, NANO_DH_KIND_LOAD, NANO_DH_AS_GLOBAL, 0, 4};
}

static const struct nano_dh_site *bench_find(const struct nano_dispatch_info *info, uint64_t id) {
  (void)info;
  struct nano_dh_site key = {.id = id};
  return bsearch(&key, bench_sites, BENCH_SITES, sizeof key, bench_site_cmp);
}

static int bench_store(const struct nano_dispatch_info *info, const char *analyzer,
                       const char *json) {
  (void)info, (void)analyzer, (void)json;
  return 0;
}

static void bench_analyzer(int reps) {
  struct nano_dh_record *recs = malloc(BENCH_KEPT * sizeof *recs);
  double *ta = malloc(reps * sizeof *ta), *tt = malloc(reps * sizeof *tt);
  FILE *out = fopen("/dev/null", "w");
  struct nano_analyzers *a;
  char err[256];
  if (!recs || !ta || !tt || !out ||
      nano_analyzers_load("MemoryAnalysis", "dh_bench", &a, err, sizeof err) != 0) {
    fprintf(stderr, "dh_bench: analyzer: %s\n", recs && ta && tt && out ? err : "out of memory");
    exit(1);
  }
  struct nano_dispatch_info info = {0};
  info.abi = NANO_HANDLER_ABI;
  info.size = sizeof info;
  info.kernel = info.kernel_name = "k";
  info.backend = "bench";
  info.arch = "sm_90";
  info.wave_size = 32;
  info.line_bytes = 128;
  info.sector_bytes = 32;
  info.lds_banks = 32;
  info.lds_bank_bytes = 4;
  info.lds_model = NANO_LDS_PHASED;
  info.format = NANO_FORMAT_JSON;
  info.out = out;
  info.options = "";
  info.site = bench_find;
  info.store = bench_store;
  printf("== MemoryAnalysis vs the drain's consumer (%d interleaved runs, %u warp-32 records)\n",
         reps, BENCH_ANALYZED);
  printf("  %-27s %14s %18s\n", "pattern (wave32)", "M records/s", "time / consumer's");
  printf("  %-27s %14s %18s\n", "", "best/median", "best/median");
  for (int p = 0; p < PATTERNS; p++) {
    for (unsigned k = 0; k < BENCH_KEPT; k++)
      bench_record(&recs[k], p, 32, k);
    uint64_t sum = 0;
    for (int k = 0; k < reps; k++) {
      struct nano_chain *c = nano_chain_create(a, &info);
      if (!c) {
        fprintf(stderr, "dh_bench: cannot create the analyzer chain\n");
        exit(1);
      }
      double t0 = bench_now();
      for (unsigned i = 0; i < BENCH_ANALYZED; i++)
        nano_chain_handle(&recs[i % BENCH_KEPT], c);
      double t1 = bench_now();
      for (unsigned i = 0; i < BENCH_ANALYZED; i++)
        bench_consume(&recs[i % BENCH_KEPT], &sum);
      double t2 = bench_now();
      nano_chain_report(c, 0);
      nano_chain_destroy(c);
      ta[k] = t1 - t0;
      tt[k] = t2 - t1;
    }
    double best_ratio = 1e30, ratios[64];
    int nr = reps < 64 ? reps : 64;
    for (int k = 0; k < nr; k++) {
      ratios[k] = ta[k] / tt[k];
      if (ratios[k] < best_ratio)
        best_ratio = ratios[k];
    }
    qsort(ratios, nr, sizeof *ratios, bench_cmp);
    qsort(ta, reps, sizeof *ta, bench_cmp);
    printf("  %-27s %6.1f/%-7.1f %8.1f/%.1f\n", bench_pattern[p], BENCH_ANALYZED / ta[0] / 1e6,
           BENCH_ANALYZED / ta[reps / 2] / 1e6, best_ratio, ratios[nr / 2]);
    if (sum == 42)
      puts("");
  }
  nano_analyzers_free(a);
  fclose(out);
  free(recs);
  free(ta);
  free(tt);
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 7;
  if (reps < 1) {
    fprintf(stderr, "usage: dh_bench [REPEATS >= 1]\n");
    return 2;
  }
  bench_sizes();
  bench_drain(reps);
  bench_idle();
  bench_sites_make();
  bench_analyzer(reps);
  bench_threads(reps);
  return 0;
}
