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

/* The default page: the operating system's base page. omniprobe's default is
 * 1 MiB, which puts all the arrays of a small kernel on one page. */
#define HEATMAP_PAGE_DEFAULT 4096u
/* Initial slots of the page table (a power of two); it doubles at 1/2 full. */
#define HEATMAP_INITIAL_SLOTS 256u

struct heatmap_page {
  uint64_t page; /* page index + 1 (0 marks a free slot) */
  uint64_t accesses;
};

struct heatmap {
  struct nano_handler h;
  const struct nano_dispatch_info *info;
  uint64_t page_bytes;
  struct heatmap_page *slots;
  size_t cap, used;
  uint64_t accesses;
  int failed; /* out of memory: the report says the counts are incomplete */
};

/* Slot of page index+1 `key` (free or holding it). */
static struct heatmap_page *heatmap_slot(struct heatmap_page *slots, size_t cap, uint64_t key) {
  size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
  while (slots[i].page && slots[i].page != key)
    i = (i + 1) & (cap - 1);
  return &slots[i];
}

static int heatmap_grow(struct heatmap *m) {
  size_t cap = m->cap ? m->cap * 2 : HEATMAP_INITIAL_SLOTS;
  struct heatmap_page *s = calloc(cap, sizeof *s);
  if (!s)
    return -1;
  for (size_t i = 0; i < m->cap; i++)
    if (m->slots[i].page)
      *heatmap_slot(s, cap, m->slots[i].page) = m->slots[i];
  free(m->slots);
  m->slots = s;
  m->cap = cap;
  return 0;
}

static int heatmap_handle(struct nano_handler *h, const struct nano_dh_record *r) {
  struct heatmap *m = (struct heatmap *)h;
  for (unsigned i = 0; i < r->lanes && !m->failed; i++) {
    if (2 * (m->used + 1) > m->cap && heatmap_grow(m) != 0) {
      m->failed = 1;
      break;
    }
    uint64_t key = r->addr[i] / m->page_bytes + 1;
    struct heatmap_page *p = heatmap_slot(m->slots, m->cap, key);
    if (!p->page) {
      p->page = key;
      m->used++;
    }
    p->accesses++;
    m->accesses++;
  }
  return NANO_RECORD_PASS;
}

/* Hottest first, then by address. */
static int heatmap_cmp(const void *a, const void *b) {
  const struct heatmap_page *x = a, *y = b;
  if (x->accesses != y->accesses)
    return x->accesses > y->accesses ? -1 : 1;
  return x->page < y->page ? -1 : x->page > y->page;
}

/* Writes the JSON document of the dispatch (one line, no newline). */
static void heatmap_json(FILE *out, const struct heatmap *m, const struct heatmap_page *pages) {
  fputc('{', out);
  nano_analyzer_json_head(out, m->info, "Heatmap");
  fprintf(out, ",\"page_bytes\":%" PRIu64 ",\"accesses\":%" PRIu64 ",\"complete\":%s,\"pages\":[",
          m->page_bytes, m->accesses, m->failed || nano_dispatch_lost(m->info) ? "false" : "true");
  for (size_t i = 0; i < m->used; i++) {
    uint64_t start = (pages[i].page - 1) * m->page_bytes;
    fprintf(out, "%s{\"start\":%" PRIu64 ",\"end\":%" PRIu64 ",\"accesses\":%" PRIu64 "}",
            i ? "," : "", start, start + m->page_bytes - 1, pages[i].accesses);
  }
  fputs("]}", out);
}

static void heatmap_report(struct nano_handler *h) {
  struct heatmap *m = (struct heatmap *)h;
  const struct nano_dispatch_info *info = m->info;
  struct heatmap_page *pages = malloc((m->used ? m->used : 1) * sizeof *pages);
  if (!pages) {
    fprintf(stderr, "nanoprobe: Heatmap: out of memory for the report of dispatch %" PRIu64 "\n",
            info->dispatch_id);
    return;
  }
  size_t n = 0;
  for (size_t i = 0; i < m->cap; i++)
    if (m->slots[i].page)
      pages[n++] = m->slots[i];
  qsort(pages, n, sizeof *pages, heatmap_cmp);
  char *doc = NULL;
  size_t doclen = 0;
  FILE *mem = open_memstream(&doc, &doclen);
  if (mem) {
    heatmap_json(mem, m, pages);
    fclose(mem);
  }
  if (info->format == NANO_FORMAT_JSON) {
    if (doc)
      fprintf(info->out, "%s\n", doc);
  } else {
    fprintf(info->out,
            "memory heatmap report(%s[%" PRIu64 "]): %" PRIu64 " accesses on %zu pages\n"
            "\tpage size = %" PRIu64 "\n",
            info->kernel_name, info->dispatch_id, m->accesses, n, m->page_bytes);
    for (size_t i = 0; i < n; i++) {
      uint64_t start = (pages[i].page - 1) * m->page_bytes;
      fprintf(info->out, "\tpage[0x%" PRIx64 ":0x%" PRIx64 "] %" PRIu64 " accesses\n", start,
              start + m->page_bytes - 1, pages[i].accesses);
    }
    if (m->failed)
      fputs("\t(incomplete: out of memory while counting)\n", info->out);
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
  memset(m->slots, 0, m->cap * sizeof *m->slots);
  m->used = 0;
  m->accesses = 0;
  m->failed = 0;
}

static void heatmap_destroy(struct nano_handler *h) {
  struct heatmap *m = (struct heatmap *)h;
  free(m->slots);
  free(m);
}

static const struct nano_handler_ops heatmap_ops = {heatmap_handle, heatmap_report, heatmap_clear,
                                                    heatmap_destroy};

struct nano_handler *nano_heatmap_create(const struct nano_dispatch_info *info) {
  uint64_t page = HEATMAP_PAGE_DEFAULT;
  if (nano_analyzer_size_option(info, "Heatmap", "page", &page) < 0)
    return NULL;
  struct heatmap *m = calloc(1, sizeof *m);
  if (!m)
    return NULL;
  m->h = (struct nano_handler){&heatmap_ops, "Heatmap", NANO_HANDLER_PASS_THROUGH};
  m->info = info;
  m->page_bytes = page;
  if (heatmap_grow(m) != 0) {
    free(m);
    return NULL;
  }
  return &m->h;
}
