/*
 * The built-in analyzers' arithmetic on synthetic records, for the
 * architectures' models: NVIDIA (warp 32, 128-byte lines, 32-byte sectors,
 * phased banks), AMD gfx90a (wave64, 128-byte lines) and gfx906 (64-byte
 * lines), AMD's LDS lane sets, and the Heatmap's pages. Every expectation is
 * worked out by hand in the comment next to it.
 */
#define _GNU_SOURCE
#include "nano/analyzers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../device/check.h"

/* ---- a dispatch with one site per address space ----------------------------- */

enum { SITE_GLOBAL = 1, SITE_SHARED = 2, SITE_GENERIC = 3 };
static const struct nano_dh_site unit_sites[] = {
    {SITE_GLOBAL, "k", "k.cu", 10, 5, NANO_DH_KIND_LOAD, NANO_DH_AS_GLOBAL, 0, 4},
    {SITE_SHARED, "k", "k.cu", 11, 7, NANO_DH_KIND_STORE, NANO_DH_AS_SHARED, 0, 4},
    {SITE_GENERIC, "k", "k.cu", 12, 9, NANO_DH_KIND_LOAD, NANO_DH_AS_GENERIC, 0, 4},
};

static const struct nano_dh_site *unit_site(const struct nano_dispatch_info *info, uint64_t id) {
  (void)info;
  for (size_t i = 0; i < sizeof unit_sites / sizeof unit_sites[0]; i++)
    if (unit_sites[i].id == id)
      return &unit_sites[i];
  return NULL;
}

static char unit_doc[1 << 16];
/* The encoding unit_memory gives records: -1, the decoder's (nano_dh_encoding). */
static int unit_encoding = -1;

static int unit_store(const struct nano_dispatch_info *info, const char *analyzer,
                      const char *json) {
  (void)info, (void)analyzer;
  snprintf(unit_doc, sizeof unit_doc, "%s", json);
  return 0;
}

/* Models: "nvidia" (sm_90), "gfx90a", "gfx906". */
static struct nano_dispatch_info unit_info(const char *arch, FILE *out) {
  struct nano_dispatch_info i = {0};
  i.abi = NANO_HANDLER_ABI;
  i.size = sizeof i;
  i.kernel = i.kernel_name = "k";
  i.dispatch_id = i.kernel_dispatch = 1;
  i.backend = "test";
  i.arch = arch;
  int nv = strcmp(arch, "nvidia") == 0;
  i.wave_size = nv ? 32 : 64;
  i.line_bytes = strcmp(arch, "gfx906") == 0 ? 64 : 128;
  i.sector_bytes = nv ? 32 : i.line_bytes;
  i.lds_banks = 32;
  i.lds_bank_bytes = 4;
  i.lds_model = nv ? NANO_LDS_PHASED : NANO_LDS_AMD_WAVE64;
  i.format = NANO_FORMAT_JSON;
  i.out = out;
  i.options = "";
  i.site = unit_site;
  i.store = unit_store;
  return i;
}

/* A record of `lanes` lanes from lane 0 (or the lanes in `exec` when
 * non-zero), lane r at base + r * stride, `size` bytes each. */
static struct nano_dh_record unit_rec(uint64_t site, unsigned lanes, uint64_t exec,
                                      uint64_t base, int64_t stride, uint32_t size,
                                      unsigned space) {
  struct nano_dh_record r = {0};
  r.site = site;
  r.size = size;
  r.space = (uint8_t)space;
  r.wave_size = 64;
  unsigned n = 0;
  for (unsigned l = 0; l < 64 && n < (exec ? 64u : lanes); l++) {
    if (exec ? !(exec >> l & 1) : l >= lanes)
      continue;
    r.lane[n] = (uint8_t)l;
    r.addr[n] = base + (uint64_t)((int64_t)n * stride);
    r.exec |= 1ull << l;
    n++;
  }
  r.lanes = (uint8_t)n;
  return r;
}

/* The value of "key":N in the stored document (the first occurrence). */
static long long unit_field(const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(unit_doc, pat);
  CHECK(p, "no %s in %s", key, unit_doc);
  return strtoll(p + strlen(pat), NULL, 10);
}

/* Runs MemoryAnalysis over the records; the document lands in unit_doc. */
static void unit_memory(const char *arch, const struct nano_dh_record *r, size_t n) {
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  CHECK(out, "open_memstream");
  struct nano_dispatch_info info = unit_info(arch, out);
  struct nano_analyzers *a;
  char err[256];
  CHECK(nano_analyzers_load("MemoryAnalysis", "test", &a, err, sizeof err) == 0, "%s", err);
  struct nano_chain *c = nano_chain_create(a, &info);
  CHECK(c && nano_chain_size(c) == 1, "chain");
  unit_doc[0] = 0;
  for (size_t i = 0; i < n; i++) {
    struct nano_dh_record d = r[i]; /* with its encoding, as the decoder gives it */
    int64_t stride;
    d.encoding = (uint8_t)nano_dh_encoding(&d, &stride);
    if (unit_encoding >= 0)
      d.encoding = (uint8_t)unit_encoding;
    nano_chain_handle(&d, c);
  }
  nano_chain_report(c, 0);
  nano_chain_destroy(c);
  nano_analyzers_free(a);
  fclose(out);
  CHECK(strstr(text, "\"analyzer\":\"MemoryAnalysis\""), "JSON lines: %s", text);
  free(text);
}

static void unit_global(void) {
  struct nano_dh_record r[2];
  /* NVIDIA, 32 lanes x 4 B from 0x1000: 128 bytes = 1 line, 4 sectors. */
  r[0] = unit_rec(SITE_GLOBAL, 32, 0, 0x1000, 4, 4, 0);
  unit_memory("nvidia", r, 1);
  CHECK(unit_field("lines_needed") == 1 && unit_field("lines_used") == 1 &&
            unit_field("sectors_needed") == 4 && unit_field("sectors_used") == 4,
        "nvidia coalesced: %s", unit_doc);
  /* the same from 0x1010: lines 0x1000 and 0x1080 (2), sectors 0x1000 to
   * 0x1080 (5); still 1 line and 4 sectors needed */
  r[0] = unit_rec(SITE_GLOBAL, 32, 0, 0x1010, 4, 4, 0);
  unit_memory("nvidia", r, 1);
  CHECK(unit_field("lines_used") == 2 && unit_field("sectors_used") == 5 &&
            unit_field("sectors_needed") == 4,
        "nvidia misaligned: %s", unit_doc);
  /* NVIDIA stride 8 B: 32 lanes over 256 bytes = 2 lines, 8 sectors; the 128
   * distinct bytes need 1 line, 4 sectors. Two records: sums. */
  r[0] = unit_rec(SITE_GLOBAL, 32, 0, 0x2000, 8, 4, 0);
  r[1] = r[0];
  unit_memory("nvidia", r, 2);
  CHECK(unit_field("executions") == 2 && unit_field("accesses") == 64 &&
            unit_field("lines_needed") == 2 && unit_field("lines_used") == 4 &&
            unit_field("sectors_needed") == 8 && unit_field("sectors_used") == 16,
        "nvidia stride 2: %s", unit_doc);
  /* gfx90a, 64 lanes x 4 B: 256 bytes = 2 lines of 128. */
  r[0] = unit_rec(SITE_GLOBAL, 64, 0, 0x4000, 4, 4, 0);
  unit_memory("gfx90a", r, 1);
  CHECK(unit_field("lines_needed") == 2 && unit_field("lines_used") == 2 &&
            !strstr(unit_doc, "sectors"),
        "gfx90a coalesced: %s", unit_doc);
  /* gfx906, 64 lanes, stride 16 B: 1024 bytes = 16 lines of 64; the 256
   * distinct bytes need 4: used = 4 x needed. */
  r[0] = unit_rec(SITE_GLOBAL, 64, 0, 0x8000, 16, 4, 0);
  unit_memory("gfx906", r, 1);
  CHECK(unit_field("lines_needed") == 4 && unit_field("lines_used") == 16,
        "gfx906 stride 4: %s", unit_doc);
  /* a broadcast: every lane at one word needs and uses 1 line */
  r[0] = unit_rec(SITE_GLOBAL, 64, 0, 0x8000, 0, 4, 0);
  unit_memory("gfx906", r, 1);
  CHECK(unit_field("lines_needed") == 1 && unit_field("lines_used") == 1 &&
            unit_field("bytes") == 256,
        "broadcast: %s", unit_doc);
  /* lanes 1, 5 and 63 of a wave, 64 bytes apart... 3 lines used, 1 needed */
  r[0] = unit_rec(SITE_GLOBAL, 0, 1ull << 1 | 1ull << 5 | 1ull << 63, 0x9000, 64, 4, 0);
  unit_memory("gfx906", r, 1);
  CHECK(unit_field("accesses") == 3 && unit_field("lines_used") == 3 &&
            unit_field("lines_needed") == 1,
        "partial wave: %s", unit_doc);
  /* NVIDIA, lanes going down (stride -4 from 0x107c): the same line and 4
   * sectors as going up */
  r[0] = unit_rec(SITE_GLOBAL, 32, 0, 0x107c, -4, 4, 0);
  unit_memory("nvidia", r, 1);
  CHECK(unit_field("lines_needed") == 1 && unit_field("lines_used") == 1 &&
            unit_field("sectors_needed") == 4 && unit_field("sectors_used") == 4,
        "nvidia descending: %s", unit_doc);
  /* NVIDIA, 4 B at stride 64, lanes going up and going down: 32 words over
   * 2 KiB, 2 per line: 1 line and 4 sectors needed, 16 lines and 32
   * sectors used, either way */
  r[0] = unit_rec(SITE_GLOBAL, 32, 0, 0x3000, 64, 4, 0);
  r[1] = unit_rec(SITE_GLOBAL, 32, 0, 0x3000 + 31 * 64, -64, 4, 0);
  for (int k = 0; k < 2; k++) {
    unit_memory("nvidia", &r[k], 1);
    CHECK(unit_field("lines_needed") == 1 && unit_field("lines_used") == 16 &&
              unit_field("sectors_needed") == 4 && unit_field("sectors_used") == 32,
          "nvidia strided %s: %s", k ? "down" : "up", unit_doc);
  }
  /* the coalesced words in a shuffled lane order (lane i at word 7i mod 32),
   * and a second record whose lanes pair up on 16 words 64 bytes apart
   * (lane i at 0x3000 + (i mod 16) * 64, i descending): unordered lanes are
   * sorted, not miscounted. First: 1 line, 4 sectors. Second: 16 distinct
   * words = 64 bytes (1 line, 2 sectors needed) over 8 lines and 16 sectors. */
  r[0] = unit_rec(SITE_GLOBAL, 32, 0, 0x1000, 4, 4, 0);
  r[1] = r[0];
  for (unsigned i = 0; i < 32; i++) {
    r[0].addr[i] = 0x1000 + (i * 7 % 32) * 4;
    r[1].addr[i] = 0x3000 + ((31 - i) % 16) * 64;
  }
  unit_memory("nvidia", r, 2);
  CHECK(unit_field("lines_needed") == 2 && unit_field("lines_used") == 9 &&
            unit_field("sectors_needed") == 6 && unit_field("sectors_used") == 20,
        "nvidia unordered lanes: %s", unit_doc);
  /* coalesced words but the last lane far away: not in progression, though
   * its first step is the access size (1 line and 4 sectors needed, 2 lines
   * and 5 sectors used) */
  r[0] = unit_rec(SITE_GLOBAL, 32, 0, 0x1000, 4, 4, 0);
  r[0].addr[31] = 0x2000;
  unit_memory("nvidia", r, 1);
  CHECK(unit_field("lines_needed") == 1 && unit_field("lines_used") == 2 &&
            unit_field("sectors_needed") == 4 && unit_field("sectors_used") == 5,
        "nvidia one lane out of progression: %s", unit_doc);
  /* 16-byte accesses, 64 lanes contiguous: 1024 bytes = 8 lines of 128 */
  r[0] = unit_rec(SITE_GLOBAL, 64, 0, 0xa000, 16, 16, 0);
  unit_memory("gfx90a", r, 1);
  CHECK(unit_field("lines_needed") == 8 && unit_field("lines_used") == 8, "b128: %s", unit_doc);
}

/* Bank conflicts of one shared-memory record: lanes from 0 at base + lane *
 * stride, `size` bytes each, on an architecture's model. */
static const struct {
  const char *arch;
  unsigned lanes;
  uint64_t base;
  int64_t stride;
  uint32_t size;
  long long conflicts;
  const char *why;
} unit_bank_cases[] = {
    {"gfx90a", 64, 0, 8, 4, 2,
     "AMD wave64, 4 B, stride 2 words: each 32-lane half touches 16 banks with 2 words each: "
     "1 conflict per half"},
    {"gfx90a", 64, 0, 128, 4, 62, "stride 32 words: every lane of a half in bank 0: 31 + 31"},
    {"nvidia", 32, 0, 8, 4, 1, "NVIDIA, 32 lanes, stride 2 words: 1 phase, 2 words per bank"},
    {"gfx90a", 64, 0x40, 0, 4, 0, "a broadcast: one word, no conflict"},
    {"gfx90a", 64, 0, 16, 8, 4,
     "AMD, 8 B at stride 16 B (words 4t, 4t+1): in each 16-lane set lanes t and t+8 share both "
     "banks: 1 conflict per set"},
    {"nvidia", 32, 0, 16, 8, 2, "NVIDIA: the same over 32 lanes, half-warps"},
    {"gfx90a", 64, 0, 16, 16, 0,
     "16 B contiguous: AMD's b128 sets pair lanes 0-3 with 20-23 (words 0-15 and 80-95: 32 "
     "banks)"},
    {"nvidia", 32, 0, 16, 16, 0, "16 B contiguous: NVIDIA's quarter-warps neither"},
    {"nvidia", 32, 0, 32, 16, 4,
     "16 B at stride 32 B on NVIDIA: a quarter-warp of 8 lanes covers words 8t..8t+3: banks "
     "repeat every 4 lanes: 2 words per bank, 1 per phase"},
};

/* Strided records (lanes farther apart than their size) are counted in
 * closed form; the same lanes as 64-bit addresses go through the sweep: the
 * counts must agree, going up and down, aligned or not, with steps of whole,
 * partial and several blocks. */
static void unit_progressions(void) {
  static const int64_t strides[] = {5, 8, 12, 24, 32, 33, 48, 64, 96, 100, 128, 200, 256, 4096};
  static const uint32_t sizes[] = {1, 2, 4, 8, 16};
  static const uint64_t bases[] = {0x1000000, 0x1000004, 0x100007c, 0x10000f1};
  static const unsigned lanes[] = {2, 7, 32, 64};
  static const char *const archs[] = {"nvidia", "gfx90a"};
  static const char *const fields[] = {"lines_used", "lines_needed", "sectors_used",
                                       "sectors_needed"};
  unsigned checked = 0;
  for (size_t a = 0; a < 2; a++)
    for (size_t i = 0; i < sizeof strides / sizeof *strides; i++)
      for (int sign = 1; sign >= -1; sign -= 2)
        for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++)
          for (size_t b = 0; b < sizeof bases / sizeof *bases; b++)
            for (size_t l = 0; l < sizeof lanes / sizeof *lanes; l++) {
              if (strides[i] <= (int64_t)sizes[z])
                continue;
              struct nano_dh_record r =
                  unit_rec(SITE_GLOBAL, lanes[l], 0, bases[b], sign * strides[i], sizes[z], 0);
              long long closed[4], swept[4];
              size_t nf = a == 0 ? 4 : 2; /* AMD: no sectors apart from lines */
              unit_memory(archs[a], &r, 1);
              for (size_t f = 0; f < nf; f++)
                closed[f] = unit_field(fields[f]);
              unit_encoding = NANO_DH_ENC_ADDR64;
              unit_memory(archs[a], &r, 1);
              unit_encoding = -1;
              for (size_t f = 0; f < nf; f++) {
                swept[f] = unit_field(fields[f]);
                CHECK(closed[f] == swept[f],
                      "%s, %u lanes of %u B from 0x%llx at stride %lld: %s %lld in closed "
                      "form, %lld swept",
                      archs[a], lanes[l], sizes[z], (unsigned long long)bases[b],
                      (long long)(sign * strides[i]), fields[f], closed[f], swept[f]);
              }
              checked++;
            }
  CHECK(checked > 1000, "only %u strided records compared", checked);
}

static int unit_u64_cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Distinct values of v[i] >> shift (sorts v). */
static uint64_t unit_distinct(uint64_t *v, size_t n, int shift) {
  qsort(v, n, sizeof *v, unit_u64_cmp);
  uint64_t count = 0;
  for (size_t i = 0; i < n; i++)
    count += i == 0 || v[i] >> shift != v[i - 1] >> shift;
  return count;
}

/* Scattered records (lanes in any order, duplicates, aligned to their size
 * or not) against a count of every byte they touch: MemoryAnalysis's set
 * count of aligned lanes and its sweep of the others must give the bytes'
 * distinct lines and sectors, and the lines and sectors those bytes need. */
static void unit_scattered(void) {
  static const uint32_t sizes[] = {1, 2, 4, 8, 16, 32, 64, 3, 12};
  static const uint64_t spans[] = {64, 512, 4096, 1 << 20};
  static const char *const archs[] = {"nvidia", "gfx90a"};
  static uint64_t bytes[64 * 64];
  uint64_t x = 0x2545F4914F6CDD1Dull; /* xorshift state: the same records every run */
  for (int k = 0; k < 4000; k++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    int nv = k % 2 == 0;
    uint32_t size = sizes[x % (sizeof sizes / sizeof *sizes)];
    uint64_t span = spans[(x >> 8) % (sizeof spans / sizeof *spans)];
    int aligned = (x >> 16) % 4 != 0;
    unsigned lanes = 1 + (unsigned)((x >> 20) % 64);
    struct nano_dh_record r = unit_rec(SITE_GLOBAL, lanes, 0, 0, 0, size, 0);
    size_t nb = 0;
    for (unsigned i = 0; i < lanes; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      uint64_t a = 0x40000000 + x % span;
      if (aligned)
        a -= a % size;
      r.addr[i] = a;
      for (uint32_t b = 0; b < size; b++)
        bytes[nb++] = a + b;
    }
    uint32_t line = 128, sector = nv ? 32 : 128; /* unit_info's */
    uint64_t distinct = unit_distinct(bytes, nb, 0), lines = unit_distinct(bytes, nb, 7),
             sectors = unit_distinct(bytes, nb, nv ? 5 : 7);
    unit_memory(archs[!nv], &r, 1);
    CHECK(unit_field("lines_used") == (long long)lines &&
              unit_field("lines_needed") == (long long)((distinct + line - 1) / line),
          "%s, %u lanes of %u B within %llu bytes%s: %llu distinct bytes over %llu lines: %s",
          archs[!nv], lanes, size, (unsigned long long)span, aligned ? ", aligned" : "",
          (unsigned long long)distinct, (unsigned long long)lines, unit_doc);
    if (nv)
      CHECK(unit_field("sectors_used") == (long long)sectors &&
                unit_field("sectors_needed") == (long long)((distinct + sector - 1) / sector),
            "nvidia, %u lanes of %u B within %llu bytes%s: %llu distinct bytes over %llu "
            "sectors: %s",
            lanes, size, (unsigned long long)span, aligned ? ", aligned" : "",
            (unsigned long long)distinct, (unsigned long long)sectors, unit_doc);
  }
}

static void unit_banks(void) {
  struct nano_dh_record r[1];
  for (size_t i = 0; i < sizeof unit_bank_cases / sizeof unit_bank_cases[0]; i++) {
    r[0] = unit_rec(SITE_SHARED, unit_bank_cases[i].lanes, 0, unit_bank_cases[i].base,
                    unit_bank_cases[i].stride, unit_bank_cases[i].size, 0);
    unit_memory(unit_bank_cases[i].arch, r, 1);
    CHECK(unit_field("bank_conflicts") == unit_bank_cases[i].conflicts &&
              !strstr(unit_doc, "lines_used"),
          "%s (%lld conflicts): %s", unit_bank_cases[i].why, unit_bank_cases[i].conflicts,
          unit_doc);
  }
  /* a generic site whose addresses went to shared memory counts as shared */
  r[0] = unit_rec(SITE_GENERIC, 64, 0, 0, 8, 4, NANO_DH_SPACE_SHARED);
  unit_memory("gfx90a", r, 1);
  CHECK(unit_field("bank_conflicts") == 2 && strstr(unit_doc, "\"space\":\"shared\"") &&
            strstr(unit_doc, "\"site_space\":\"generic\""),
        "flat to shared: %s", unit_doc);
}

static void unit_heatmap(void) {
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  struct nano_dispatch_info info = unit_info("gfx90a", out);
  struct nano_analyzers *a;
  char err[256];
  CHECK(nano_analyzers_load("heatmap:page=1K", "test", &a, err, sizeof err) == 0, "%s", err);
  struct nano_chain *c = nano_chain_create(a, &info);
  CHECK(c && nano_chain_size(c) == 1, "chain");
  /* 1 KiB pages. 64 lanes x 4 B from 0x3e00 end at 0x3eff: all 64 on the
   * page at 0x3c00 (15360). 64 lanes at stride 32 from 0x3c00 reach 0x43e0:
   * 32 on that page, 32 on the next (16384). Totals 96 and 32. */
  struct nano_dh_record r[2] = {unit_rec(SITE_GLOBAL, 64, 0, 0x3e00, 4, 4, 0),
                                unit_rec(SITE_GLOBAL, 64, 0, 0x3c00, 32, 4, 0)};
  nano_chain_handle(&r[0], c);
  nano_chain_handle(&r[1], c);
  nano_chain_report(c, 0);
  nano_chain_destroy(c);
  nano_analyzers_free(a);
  fclose(out);
  CHECK(strstr(unit_doc, "\"page_bytes\":1024") &&
            strstr(unit_doc, "{\"start\":15360,\"end\":16383,\"accesses\":96}") &&
            strstr(unit_doc, "{\"start\":16384,\"end\":17407,\"accesses\":32}"),
        "heatmap: %s", unit_doc);
  CHECK(strstr(unit_doc, "15360") < strstr(unit_doc, "16384"), "hottest first: %s", unit_doc);
  free(text);
  /* a malformed option: the analyzer sits the dispatch out, with a message */
  out = open_memstream(&text, &len);
  info = unit_info("gfx90a", out);
  CHECK(nano_analyzers_load("Heatmap:page=lots", "test", &a, err, sizeof err) == 0, "%s", err);
  c = nano_chain_create(a, &info);
  CHECK(c && nano_chain_size(c) == 0, "a bad page size must not create the analyzer");
  nano_chain_destroy(c);
  nano_analyzers_free(a);
  fclose(out);
  free(text);
}

static void unit_load_errors(void) {
  struct nano_analyzers *a;
  char err[512];
  CHECK(nano_analyzers_load("MemoryAnalysis,Bogus", "NANO_ANALYZERS", &a, err, sizeof err) < 0 &&
            strstr(err, "NANO_ANALYZERS") && strstr(err, "'Bogus'") &&
            strstr(err, "MemoryAnalysis"),
        "unknown name: %s", err);
  CHECK(nano_analyzers_load(" , ", "NANO_ANALYZERS", &a, err, sizeof err) < 0 &&
            strstr(err, "no analyzer"),
        "empty list: %s", err);
  CHECK(nano_analyzers_load("none", "NANO_ANALYZERS", &a, err, sizeof err) == 0 &&
            nano_analyzers_count(a) == 0,
        "none: %s", err);
  nano_analyzers_free(a);
  CHECK(nano_analyzers_load("/nonexistent/libx.so", "NANO_ANALYZERS", &a, err, sizeof err) < 0 &&
            strstr(err, "/nonexistent/libx.so") && strstr(err, "does not load"),
        "missing plugin: %s", err);
  CHECK(nano_analyzers_load("AddressLogger, heatmap:page=4K ,MEMORYANALYSIS", "x", &a, err,
                            sizeof err) == 0 &&
            nano_analyzers_count(a) == 3 && strcmp(nano_analyzers_name(a, 1), "Heatmap") == 0,
        "names in any case, options, spaces: %s", err);
  nano_analyzers_free(a);
}

int main(void) {
  unit_global();
  unit_progressions();
  unit_scattered();
  unit_banks();
  unit_heatmap();
  unit_load_errors();
  printf("ok analyzers: cache lines, sectors, bank conflicts, heatmap, loading\n");
  return 0;
}
