/*
 * The ISA width correction of MemoryAnalysis on a real code object: the
 * merged4 kernel of samples/merged.hip built for gfx90a, where the backend
 * turned four 4-byte loads into one global_load_dwordx4. kerneldb answers the
 * runtime's isa_width service (the adapter below is what a GPU backend wires
 * into its dispatch info); the records are what the twin, whose loads stay
 * apart, writes for one full wave64: lane l loads in[4l + k] at site k and
 * stores out[l].
 *
 * Worked out by hand (128-byte lines, 64 lanes):
 *   without the ISA, site 0 (lane l at base + 16l, 4 bytes) spans 1024 bytes
 *   = 8 lines for 256 distinct bytes = 2 lines needed: a false "stride 4".
 *   With it, site 0 moves 16 bytes per lane: 1024 distinct bytes, 8 lines
 *   used and needed; sites 1-3 are folded into it (merged, no lines); the
 *   store (256 contiguous bytes) uses and needs 2 lines either way.
 *
 * usage: device_hip_isa_width MERGED_GFX90A_CO
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kerneldb.h"
#include "nano/analyzers.h"

enum { WAVE = 64, LINE_BYTES = 128, LOADS = 4 };
static const uint64_t IN_BASE = 0x100000, OUT_BASE = 0x200000;

static struct nano_dh_sites *sites;

static const struct nano_dh_site *isa_site(const struct nano_dispatch_info *info, uint64_t id) {
  (void)info;
  return nano_dh_sites_find(sites, id);
}

/* The runtime's isa_width service over kerneldb. */
static int isa_width(const struct nano_dispatch_info *info, uint64_t id, uint32_t *width) {
  kdb *db = info->kerneldb;
  const kdb_site *s = kdb_site_find(db, id);
  *width = 0;
  return s ? (int)kdb_site_isa_width(db, s, width) : NANO_ISA_UNKNOWN;
}

/* One full wave's record of site: lane l at base + l * stride, 4 bytes. */
static struct nano_dh_record wave_record(uint64_t site, uint64_t base, uint32_t stride) {
  struct nano_dh_record r = {0};
  r.site = site;
  r.size = 4;
  r.space = NANO_DH_AS_GLOBAL;
  r.wave_size = WAVE;
  r.lanes = WAVE;
  r.exec = ~0ull;
  for (unsigned l = 0; l < WAVE; l++) {
    r.lane[l] = (uint8_t)l;
    r.addr[l] = base + (uint64_t)l * stride;
  }
  int64_t s;
  r.encoding = (uint8_t)nano_dh_encoding(&r, &s);
  return r;
}

/* MemoryAnalysis's output over the records, with or without the ISA. */
static char *analyze(kdb *db, const struct nano_dh_record *r, size_t n, int with_isa,
                     enum nano_format format) {
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  CHECK(out, "open_memstream");
  struct nano_dispatch_info info = {0};
  info.abi = NANO_HANDLER_ABI;
  info.size = sizeof info;
  info.kernel = "_Z7merged4PfPKfi";
  info.kernel_name = "merged4(float*, float const*, int)";
  info.dispatch_id = info.kernel_dispatch = 1;
  info.backend = "test";
  info.arch = "gfx90a";
  info.wave_size = WAVE;
  info.line_bytes = info.sector_bytes = LINE_BYTES;
  info.lds_banks = 32;
  info.lds_bank_bytes = 4;
  info.lds_model = NANO_LDS_AMD_WAVE64;
  info.format = format;
  info.out = out;
  info.options = "";
  info.sites = sites;
  info.site = isa_site;
  info.kerneldb = db;
  info.isa_width = with_isa ? isa_width : NULL;
  struct nano_analyzers *a;
  char err[256];
  CHECK(nano_analyzers_load("MemoryAnalysis", "test", &a, err, sizeof err) == 0, "%s", err);
  struct nano_chain *c = nano_chain_create(a, &info);
  CHECK(c, "chain");
  for (size_t i = 0; i < n; i++)
    nano_chain_handle(&r[i], c);
  nano_chain_report(c, 0);
  nano_chain_destroy(c);
  nano_analyzers_free(a);
  CHECK(fclose(out) == 0, "fclose");
  return text;
}

/* The JSON line of source line `line`, NUL-terminated in a static buffer. */
static const char *row(const char *text, uint32_t line) {
  static char buf[4096];
  char key[32];
  snprintf(key, sizeof key, "\"line\":%u,", line);
  const char *p = strstr(text, key);
  CHECK(p, "no row for line %u in\n%s", line, text);
  const char *start = p, *end = strchr(p, '\n');
  while (start > text && start[-1] != '\n')
    start--;
  size_t n = end ? (size_t)(end - start) : strlen(start);
  CHECK(n < sizeof buf, "row too long");
  memcpy(buf, start, n);
  buf[n] = 0;
  return buf;
}

static long long field(const char *line, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(line, pat);
  return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

int main(int argc, char **argv) {
  CHECK(argc == 2, "usage: %s MERGED_GFX90A_CO", argv[0]);
  char err[512];
  kdb *db;
  CHECK(kdb_open(argv[1], &db, err, sizeof err) == 0, "%s", err);
  sites = nano_dh_sites_create();
  CHECK(sites && nano_dh_sites_add_elf(sites, argv[1], err, sizeof err) > 0, "%s", err);
  CHECK(kdb_site_count(db) == LOADS + 1, "%zu sites, merged4 has 5", kdb_site_count(db));

  /* sites in id order: the four loads, then the store (program order) */
  struct nano_dh_record r[LOADS + 1];
  uint32_t lines[LOADS + 1];
  for (unsigned k = 0; k <= LOADS; k++) {
    const kdb_site *s = kdb_site_at(db, k);
    lines[k] = s->line;
    r[k] = k < LOADS ? wave_record(s->id, IN_BASE + 4 * k, 16) : wave_record(s->id, OUT_BASE, 4);
    CHECK(s->kind == (k < LOADS ? NANO_DH_KIND_LOAD : NANO_DH_KIND_STORE), "site %u kind", k);
  }

  char *plain = analyze(db, r, LOADS + 1, 0, NANO_FORMAT_JSON);
  const char *p0 = row(plain, lines[0]);
  CHECK(field(p0, "lines_needed") == 2 && field(p0, "lines_used") == 8 && !strstr(p0, "isa_bytes"),
        "without the ISA, site 0 looks strided: %s", p0);

  char *isa = analyze(db, r, LOADS + 1, 1, NANO_FORMAT_JSON);
  const char *w = row(isa, lines[0]);
  CHECK(field(w, "isa_bytes") == 16 && field(w, "lines_needed") == 8 &&
            field(w, "lines_used") == 8 && field(w, "access_bytes") == 4 &&
            !strstr(w, "\"merged\":"),
        "the widened load: %s", w);
  for (unsigned k = 1; k < LOADS; k++) {
    const char *m = row(isa, lines[k]);
    CHECK(strstr(m, "\"merged\":true") && field(m, "executions") == 1 &&
              field(m, "accesses") == WAVE && field(m, "lines_used") == 0,
          "load %u folded into the first: %s", k, m);
  }
  const char *st = row(isa, lines[LOADS]);
  CHECK(field(st, "lines_needed") == 2 && field(st, "lines_used") == 2 &&
            !strstr(st, "isa_bytes") && !strstr(st, "\"merged\":"),
        "the store: %s", st);
  char *text = analyze(db, r, LOADS + 1, 1, NANO_FORMAT_TEXT);
  const char *widened = strstr(text, "machine code: 16 bytes per lane");
  CHECK(widened && strstr(widened, "cache lines: 8 used, 8 needed (1.00x)"),
        "text names the widened instruction: %s", text);
  char *folded = text;
  for (unsigned k = 1; k < LOADS; k++) {
    folded = strstr(folded, "folded into a neighbouring access's wider instruction");
    CHECK(folded, "text: load %u folded: %s", k, text);
    folded++;
  }
  free(text);
  free(plain);
  free(isa);
  nano_dh_sites_destroy(sites);
  kdb_close(db);
  printf("ok MemoryAnalysis takes the global_load_dwordx4 of merged4 from kerneldb\n");
  return 0;
}
