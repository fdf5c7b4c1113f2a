/*
 * heatmap.c: the Heatmap analyzer. Counts the lane accesses of a dispatch
 * per memory page (option page=SIZE, default HEATMAP_PAGE_DEFAULT) and
 * reports the pages hottest first: as text, omniprobe's lines
 *   page[0x7f01c0000000:7f01c0000fff] 256 accesses
 * under a heading; as JSON one object per dispatch with "page_bytes" and
 * "pages": [{"start", "end", "accesses"}] (also stored in the trace).
 * An access that spans pages counts once, on the page of its first byte.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "nano/aggregate.h"

/* The default page: the operating system's base page. omniprobe's default is
 * 1 MiB, which puts all the arrays of a small kernel on one page. */
#define HEATMAP_PAGE_DEFAULT 4096u
struct heatmap {
  struct nano_handler h;
  const struct nano_dispatch_info *info;
  uint64_t page_bytes;
  struct nano_aggregate *agg;          /* the counts of the records handed to it */
  const struct nano_aggregates *given; /* the device's counts, when handed over  */
};

static int heatmap_handle(struct nano_handler *h, const struct nano_dh_record *r) {
  nano_aggregate_add(((struct heatmap *)h)->agg, r);
  return NANO_RECORD_PASS;
}

static void heatmap_aggregates(struct nano_handler *h, const struct nano_aggregates *a) {
  ((struct heatmap *)h)->given = a;
}

/* Hottest first, then by address. */
static int heatmap_cmp(const void *a, const void *b) {
  const struct nano_page_counts *x = a, *y = b;
  if (x->accesses != y->accesses)
    return x->accesses > y->accesses ? -1 : 1;
  return x->page < y->page ? -1 : x->page > y->page;
}

/* Writes the JSON document of the dispatch (one line, no newline). */
static void heatmap_json(FILE *out, const struct heatmap *m, const struct nano_aggregates *v,
                         const struct nano_page_counts *pages) {
  fputc('{', out);
  nano_analyzer_json_head(out, m->info, "Heatmap");
  fprintf(out, ",\"aggregate\":\"%s\",\"page_bytes\":%" PRIu64 ",\"accesses\":%" PRIu64, v->where,
          m->page_bytes, v->page_accesses);
  if (v->pages_lost)
    fprintf(out, ",\"uncounted_accesses\":%" PRIu64, v->pages_lost);
  fprintf(out, ",\"complete\":%s,\"pages\":[",
          v->pages_lost || nano_dispatch_lost(m->info) ? "false" : "true");
  for (size_t i = 0; i < v->npages; i++) {
    uint64_t start = pages[i].page * m->page_bytes;
    fprintf(out, "%s{\"start\":%" PRIu64 ",\"end\":%" PRIu64 ",\"accesses\":%" PRIu64 "}",
            i ? "," : "", start, start + m->page_bytes - 1, pages[i].accesses);
  }
  fputs("]}", out);
}

static void heatmap_report(struct nano_handler *h) {
  struct heatmap *m = (struct heatmap *)h;
  const struct nano_dispatch_info *info = m->info;
  struct nano_aggregates own;
  const struct nano_aggregates *v = nano_aggregate_report(m->agg, m->given, &own);
  struct nano_page_counts *pages = v ? malloc((v->npages ? v->npages : 1) * sizeof *pages) : NULL;
  if (!pages) {
    fprintf(stderr, "nanoprobe: Heatmap: out of memory for the report of dispatch %" PRIu64 "\n",
            info->dispatch_id);
    return;
  }
  size_t n = v->npages;
  memcpy(pages, v->pages, n * sizeof *pages);
  qsort(pages, n, sizeof *pages, heatmap_cmp);
  char *doc = NULL;
  size_t doclen = 0;
  FILE *mem = open_memstream(&doc, &doclen);
  if (mem) {
    heatmap_json(mem, m, v, pages);
    fclose(mem);
  }
  if (info->format == NANO_FORMAT_JSON) {
    if (doc)
      fprintf(info->out, "%s\n", doc);
  } else {
    fprintf(info->out,
            "memory heatmap report(%s[%" PRIu64 "]): %" PRIu64 " accesses on %zu pages\n"
            "\tpage size = %" PRIu64 "\n",
            info->kernel_name, info->dispatch_id, v->page_accesses, n, m->page_bytes);
    for (size_t i = 0; i < n; i++) {
      uint64_t start = pages[i].page * m->page_bytes;
      fprintf(info->out, "\tpage[0x%" PRIx64 ":0x%" PRIx64 "] %" PRIu64 " accesses\n", start,
              start + m->page_bytes - 1, pages[i].accesses);
    }
    if (v->pages_lost)
      fprintf(info->out, "\t(incomplete: %" PRIu64 " accesses not counted: out of memory)\n",
              v->pages_lost);
    if (nano_dispatch_lost(info))
      fprintf(info->out, "\t(incomplete: %" PRIu64 " records of the dispatch were lost)\n",
              nano_dispatch_lost(info));
  }
  fflush(info->out);
  if (doc && info->store)
    info->store(info, "Heatmap", doc);
  free(doc);
  free(pages);
}

static void heatmap_clear(struct nano_handler *h) {
  struct heatmap *m = (struct heatmap *)h;
  nano_aggregate_clear(m->agg);
  m->given = NULL;
}

static void heatmap_destroy(struct nano_handler *h) {
  struct heatmap *m = (struct heatmap *)h;
  nano_aggregate_destroy(m->agg);
  free(m);
}

static const struct nano_handler_ops heatmap_ops = {heatmap_handle, heatmap_report, heatmap_clear,
                                                    heatmap_destroy, heatmap_aggregates};

struct nano_handler *nano_heatmap_create(const struct nano_dispatch_info *info) {
  uint64_t page = HEATMAP_PAGE_DEFAULT;
  if (nano_analyzer_size_option(info, "Heatmap", "page", &page) < 0)
    return NULL;
  struct heatmap *m = calloc(1, sizeof *m);
  if (!m)
    return NULL;
  m->h = (struct nano_handler){
      &heatmap_ops, "Heatmap",
      NANO_HANDLER_PASS_THROUGH | NANO_HANDLER_COMPACT_RECORDS | NANO_HANDLER_PAGE_COUNTS, page};
  m->info = info;
  m->page_bytes = page;
  if (!(m->agg = nano_aggregate_create(info, NANO_AGG_PAGES, page))) {
    free(m);
    return NULL;
  }
  return &m->h;
}
