/*
 * memory_analysis.c: the MemoryAnalysis analyzer.
 *
 * Per source location (file, line, column) and access kind it answers how
 * well the wave accesses there use memory: for global memory the cache lines
 * (and on NVIDIA the 32-byte sectors) the waves used against the fewest that
 * could hold the bytes they touched, for LDS/shared memory the bank
 * conflicts. The arithmetic and the per-site sums are aggregate.c's: made
 * here from the records (NANO_AGGREGATE=host) or handed over by the back end
 * that made them where the waves ran (device); the report is the same.
 *
 * Results: executions (records), accesses (lanes), bytes, lines_needed,
 * lines_used (and sectors_*), bank_conflicts. Text: one block per location,
 * worst first, with the source line and a caret under the column (as
 * omniprobe prints). JSON: one object per location and dispatch, one per
 * line; the trace gets one document per dispatch with "locations".
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "nano/aggregate.h"
#include "nano/json.h"

struct memory_analysis {
  struct nano_handler h;
  const struct nano_dispatch_info *info;
  struct nano_aggregate *agg;          /* the sums of the records handed to it */
  const struct nano_aggregates *given; /* the device's sums, when handed over  */
};

static int ma_handle(struct nano_handler *h, const struct nano_dh_record *r) {
  struct memory_analysis *m = (struct memory_analysis *)h;
  nano_aggregate_add(m->agg, r);
  return NANO_RECORD_PASS;
}

static void ma_aggregates(struct nano_handler *h, const struct nano_aggregates *a) {
  ((struct memory_analysis *)h)->given = a;
}

/* ---- report --------------------------------------------------------------- */

/* One reported location: the sites of one file:line:column, kind and space
 * summed (an unrolled loop or inlined code gives several sites there). */
struct ma_row {
  const struct nano_dh_site *site; /* the first; names the location */
  unsigned space;
  uint32_t size, isa_size;
  int merged; /* every site of the location folded into a wider neighbour */
  uint64_t executions, accesses, bytes;
  uint64_t lines_needed, lines_used, sectors_needed, sectors_used, bank_conflicts;
};

static int ma_same_location(const struct ma_row *a, const struct nano_dh_site *site,
                            unsigned space) {
  return a->space == space && a->site->kind == site->kind && a->site->line == site->line &&
         a->site->column == site->column && strcmp(a->site->file, site->file) == 0;
}

/* Worst first: excess lines, then bank conflicts, then by position. */
static int ma_row_cmp(const void *a, const void *b) {
  const struct ma_row *x = a, *y = b;
  uint64_t ex = x->lines_used - x->lines_needed, ey = y->lines_used - y->lines_needed;
  if (ex != ey)
    return ex > ey ? -1 : 1;
  if (x->bank_conflicts != y->bank_conflicts)
    return x->bank_conflicts > y->bank_conflicts ? -1 : 1;
  int c = strcmp(x->site->file, y->site->file);
  if (c)
    return c;
  if (x->site->line != y->site->line)
    return x->site->line < y->site->line ? -1 : 1;
  if (x->site->column != y->site->column)
    return x->site->column < y->site->column ? -1 : 1;
  return (int)x->site->kind - (int)y->site->kind;
}

static const char *ma_space_name(unsigned space) { return nano_dh_addrspace_name(space); }

/* Writes the fields of one location (no braces). */
static void ma_json_row(FILE *out, const struct nano_dispatch_info *info, const struct ma_row *r) {
  fputs("\"file\":", out);
  nano_json_str(out, r->site->file);
  fprintf(out, ",\"line\":%u,\"column\":%u,\"function\":", r->site->line, r->site->column);
  nano_json_str(out, r->site->kernel);
  fprintf(out,
          ",\"kind\":\"%s\",\"space\":\"%s\",\"site_space\":\"%s\",\"access_bytes\":%u,"
          "\"executions\":%" PRIu64 ",\"accesses\":%" PRIu64 ",\"bytes\":%" PRIu64,
          nano_dh_kind_name(r->site->kind), ma_space_name(r->space),
          nano_dh_addrspace_name(r->site->addrspace), r->size, r->executions, r->accesses,
          r->bytes);
  if (r->isa_size)
    fprintf(out, ",\"isa_bytes\":%u", r->isa_size);
  if (r->merged)
    fputs(",\"merged\":true", out);
  if (r->space == NANO_DH_AS_SHARED) {
    fprintf(out, ",\"bank_conflicts\":%" PRIu64, r->bank_conflicts);
    return;
  }
  fprintf(out, ",\"line_bytes\":%u,\"lines_needed\":%" PRIu64 ",\"lines_used\":%" PRIu64,
          info->line_bytes, r->lines_needed, r->lines_used);
  if (info->sector_bytes != info->line_bytes)
    fprintf(out, ",\"sector_bytes\":%u,\"sectors_needed\":%" PRIu64 ",\"sectors_used\":%" PRIu64,
            info->sector_bytes, r->sectors_needed, r->sectors_used);
}

static void ma_text(FILE *out, const struct memory_analysis *m, const struct nano_aggregates *v,
                    const struct ma_row *rows, size_t n) {
  const struct nano_dispatch_info *info = m->info;
  size_t excess = 0, conflicted = 0;
  fprintf(out, "=== MemoryAnalysis: %s, dispatch %" PRIu64 " (%s, wave %u, %u-byte lines",
          info->kernel_name, info->dispatch_id, info->arch, info->wave_size, info->line_bytes);
  if (info->sector_bytes != info->line_bytes)
    fprintf(out, ", %u-byte sectors", info->sector_bytes);
  fputs(") ===\n", out);
  for (size_t i = 0; i < n; i++) {
    const struct ma_row *r = &rows[i];
    fprintf(out, "%s:%u:%u: %s of %u bytes (%s), executed %" PRIu64 " times by %" PRIu64 " lanes\n",
            *r->site->file ? r->site->file : "<unknown file>", r->site->line, r->site->column,
            nano_dh_kind_name(r->site->kind), r->size, ma_space_name(r->space), r->executions,
            r->accesses);
    nano_analyzer_source(out, info, r->site->file, r->site->line, r->site->column);
    if (r->merged) {
      fputs("    folded into a neighbouring access's wider instruction: counted there\n", out);
      continue;
    }
    if (r->isa_size)
      fprintf(out, "    machine code: %u bytes per lane (the backend merged accesses)\n",
              r->isa_size);
    if (r->space == NANO_DH_AS_SHARED) {
      fprintf(out, "    %" PRIu64 " bank conflicts\n", r->bank_conflicts);
      conflicted += r->bank_conflicts > 0;
      continue;
    }
    fprintf(out, "    cache lines: %" PRIu64 " used, %" PRIu64 " needed", r->lines_used,
            r->lines_needed);
    if (r->lines_needed)
      fprintf(out, " (%.2fx)", (double)r->lines_used / (double)r->lines_needed);
    if (info->sector_bytes != info->line_bytes)
      fprintf(out, "; sectors: %" PRIu64 " used, %" PRIu64 " needed", r->sectors_used,
              r->sectors_needed);
    fputc('\n', out);
    excess += r->lines_used > r->lines_needed;
  }
  fprintf(out,
          "=== end of MemoryAnalysis: %zu locations, %zu with excess cache lines, %zu with bank "
          "conflicts",
          n, excess, conflicted);
  if (v->unknown_site_records)
    fprintf(out, "; %" PRIu64 " records of sites no site table names", v->unknown_site_records);
  if (v->sites_lost)
    fprintf(out, "; incomplete: out of memory for %" PRIu64 " records", v->sites_lost);
  if (nano_dispatch_lost(m->info))
    fprintf(out, "; incomplete: %" PRIu64 " records of the dispatch were lost",
            nano_dispatch_lost(m->info));
  fputs(" ===\n", out);
}

static void ma_report(struct nano_handler *h) {
  struct memory_analysis *m = (struct memory_analysis *)h;
  const struct nano_dispatch_info *info = m->info;
  struct nano_aggregates own;
  const struct nano_aggregates *v = nano_aggregate_report(m->agg, m->given, &own);
  struct ma_row *rows = v ? calloc(v->nsites ? v->nsites : 1, sizeof *rows) : NULL;
  if (!rows) {
    fprintf(stderr,
            "nanoprobe: MemoryAnalysis: out of memory for the report of dispatch %" PRIu64 "\n",
            info->dispatch_id);
    return;
  }
  size_t n = 0;
  for (size_t i = 0; i < v->nsites; i++) {
    const struct nano_site_counts *s = &v->sites[i];
    const struct nano_dh_site *site = info->site ? info->site(info, s->site) : NULL;
    if (!site)
      continue;
    size_t j = 0;
    while (j < n && !ma_same_location(&rows[j], site, s->space))
      j++;
    if (j == n)
      rows[n++] = (struct ma_row){.site = site, .space = s->space, .size = s->size, .merged = 1};
    struct ma_row *r = &rows[j];
    r->merged &= s->merged != 0;
    if (s->isa_size > r->isa_size)
      r->isa_size = s->isa_size;
    r->executions += s->executions;
    r->accesses += s->accesses;
    r->bytes += s->bytes;
    r->lines_needed += s->lines_needed;
    r->lines_used += s->lines_used;
    r->sectors_needed += s->sectors_needed;
    r->sectors_used += s->sectors_used;
    r->bank_conflicts += s->bank_conflicts;
  }
  qsort(rows, n, sizeof *rows, ma_row_cmp);
  if (info->format == NANO_FORMAT_JSON) {
    for (size_t i = 0; i < n; i++) {
      fputc('{', info->out);
      nano_analyzer_json_head(info->out, info, "MemoryAnalysis");
      fputc(',', info->out);
      ma_json_row(info->out, info, &rows[i]);
      fputs("}\n", info->out);
    }
  } else {
    ma_text(info->out, m, v, rows, n);
  }
  fflush(info->out);
  struct nano_analyzer_doc doc;
  FILE *mem = nano_analyzer_doc_begin(info, "MemoryAnalysis", &doc);
  if (mem) {
    fprintf(mem,
            ",\"aggregate\":\"%s\",\"line_bytes\":%u,\"sector_bytes\":%u,"
            "\"unknown_site_records\":%" PRIu64 ",\"complete\":%s,\"locations\":[",
            v->where, info->line_bytes, info->sector_bytes, v->unknown_site_records,
            v->sites_lost || nano_dispatch_lost(info) ? "false" : "true");
    for (size_t i = 0; i < n; i++) {
      fputs(i ? ",{" : "{", mem);
      ma_json_row(mem, info, &rows[i]);
      fputc('}', mem);
    }
    fputc(']', mem);
    nano_analyzer_doc_store(info, "MemoryAnalysis", mem, &doc);
  }
  free(rows);
}

static void ma_clear(struct nano_handler *h) {
  struct memory_analysis *m = (struct memory_analysis *)h;
  nano_aggregate_clear(m->agg);
  m->given = NULL;
}

static void ma_destroy(struct nano_handler *h) {
  struct memory_analysis *m = (struct memory_analysis *)h;
  nano_aggregate_destroy(m->agg);
  free(m);
}

static const struct nano_handler_ops ma_ops = {ma_handle, ma_report, ma_clear, ma_destroy,
                                               ma_aggregates};

struct nano_handler *nano_memory_analysis_create(const struct nano_dispatch_info *info) {
  if (!info->line_bytes || !info->sector_bytes) {
    fprintf(stderr, "nanoprobe: MemoryAnalysis: the dispatch of %s names no cache line size\n",
            info->kernel_name);
    return NULL;
  }
  struct memory_analysis *m = calloc(1, sizeof *m);
  if (!m)
    return NULL;
  m->h = (struct nano_handler){
      &ma_ops, "MemoryAnalysis",
      NANO_HANDLER_PASS_THROUGH | NANO_HANDLER_COMPACT_RECORDS | NANO_HANDLER_SITE_COUNTS, 0};
  m->info = info;
  if (!(m->agg = nano_aggregate_create(info, NANO_AGG_SITES, 0))) {
    free(m);
    return NULL;
  }
  return &m->h;
}
