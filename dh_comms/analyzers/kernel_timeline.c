/*
 * kernel_timeline.c: the KernelTimeline analyzer. Where and when each block
 * (workgroup) of a dispatch ran, as Tracy's device profiler shows every
 * core's work: the runtime times the blocks (info->block_times) and this
 * analyzer reports their spread:
 *
 *   blocks, units       blocks timed, distinct units (SMs, CUs, CPU workers)
 *   span                first block's start to last block's end
 *   block time          min, median, max of the blocks' durations
 *   unit busy           min, mean, max over units of their blocks' summed
 *                       durations; imbalance = max / mean
 *   tail                the last block's end minus the moment the first unit
 *                       finished its last block: how long part of the machine
 *                       waited for the rest
 *
 * Text: a few lines per dispatch. JSON: one object per dispatch with those
 * figures ("timed": false and none where the back end does not time blocks,
 * CUDA and HIP today). The trace gets them and "rows": [[x, y, z, unit, start, end], ...]
 * (view nano_block). It needs no record: alone, it lets the runtime run the
 * original kernel, timed per block (NANO_HANDLER_BLOCK_TIMES).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"

struct timeline {
  struct nano_handler h;
  const struct nano_dispatch_info *info;
};

/* The figures of the file comment. */
struct tl_figures {
  size_t blocks, units;
  int64_t span, block_min, block_median, block_max, busy_min, busy_max, tail;
  double busy_mean, imbalance;
};

static int tl_handle(struct nano_handler *h, const struct nano_dh_record *r) {
  (void)h, (void)r;
  return NANO_RECORD_PASS;
}

static void tl_aggregates(struct nano_handler *h, const struct nano_aggregates *a) {
  (void)h, (void)a; /* it reads block times, not sums */
}

static int tl_i64_cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static int tl_unit_cmp(const void *a, const void *b) {
  const struct nano_block_time *x = a, *y = b;
  return x->unit < y->unit ? -1 : x->unit > y->unit;
}

/* Computes f from the n blocks of b (sorted by unit here). -1 when out of
 * memory. */
static int tl_figures(struct nano_block_time *b, size_t n, struct tl_figures *f) {
  memset(f, 0, sizeof *f);
  f->blocks = n;
  if (!n)
    return 0;
  int64_t *d = malloc(n * sizeof *d);
  if (!d)
    return -1;
  int64_t first = b[0].start, last = b[0].end;
  for (size_t i = 0; i < n; i++) {
    d[i] = b[i].end - b[i].start;
    if (b[i].start < first)
      first = b[i].start;
    if (b[i].end > last)
      last = b[i].end;
  }
  qsort(d, n, sizeof *d, tl_i64_cmp);
  f->span = last - first;
  f->block_min = d[0];
  f->block_median = d[n / 2];
  f->block_max = d[n - 1];
  free(d);
  qsort(b, n, sizeof *b, tl_unit_cmp);
  int64_t total = 0, first_idle = INT64_MAX;
  f->busy_min = INT64_MAX;
  for (size_t i = 0; i < n;) {
    int64_t busy = 0, unit_end = b[i].end;
    size_t j = i;
    for (; j < n && b[j].unit == b[i].unit; j++) {
      busy += b[j].end - b[j].start;
      if (b[j].end > unit_end)
        unit_end = b[j].end;
    }
    f->units++;
    total += busy;
    if (busy < f->busy_min)
      f->busy_min = busy;
    if (busy > f->busy_max)
      f->busy_max = busy;
    if (unit_end < first_idle)
      first_idle = unit_end;
    i = j;
  }
  f->busy_mean = (double)total / (double)f->units;
  f->imbalance = f->busy_mean > 0 ? (double)f->busy_max / f->busy_mean : 1.0;
  f->tail = last - first_idle;
  return 0;
}

static void tl_json_figures(FILE *out, const struct tl_figures *f, uint64_t dropped) {
  fprintf(out,
          ",\"blocks\":%zu,\"blocks_dropped\":%" PRIu64 ",\"units\":%zu,\"span_ns\":%" PRId64
          ",\"block_ns\":{\"min\":%" PRId64 ",\"median\":%" PRId64 ",\"max\":%" PRId64
          "},\"unit_busy_ns\":{\"min\":%" PRId64 ",\"mean\":%.1f,\"max\":%" PRId64
          "},\"imbalance\":%.4f,\"tail_ns\":%" PRId64,
          f->blocks, dropped, f->units, f->span, f->block_min, f->block_median, f->block_max,
          f->units ? f->busy_min : 0, f->busy_mean, f->busy_max, f->imbalance, f->tail);
}

static void tl_text(FILE *out, const struct nano_dispatch_info *info, const struct tl_figures *f,
                    uint64_t dropped) {
  fprintf(out,
          "=== KernelTimeline: %s, dispatch %" PRIu64 " (%s): %zu blocks on %zu units over %.3f "
          "ms ===\n",
          info->kernel_name, info->dispatch_id, info->arch, f->blocks, f->units, f->span / 1e6);
  if (f->blocks) {
    fprintf(out, "    block time: min %.3f ms, median %.3f ms, max %.3f ms\n", f->block_min / 1e6,
            f->block_median / 1e6, f->block_max / 1e6);
    fprintf(out, "    units busy: min %.3f ms, mean %.3f ms, max %.3f ms (imbalance %.2fx)\n",
            f->busy_min / 1e6, f->busy_mean / 1e6, f->busy_max / 1e6, f->imbalance);
    fprintf(out, "    tail: %.3f ms from the first unit's last block to the last block's end\n",
            f->tail / 1e6);
  }
  if (dropped)
    fprintf(out, "    %" PRIu64 " blocks beyond the %u timed are not shown\n", dropped,
            NANO_BLOCK_TIMES_MAX);
  fputs("=== end of KernelTimeline ===\n", out);
}

static void tl_report(struct nano_handler *h) {
  struct timeline *t = (struct timeline *)h;
  const struct nano_dispatch_info *info = t->info;
  size_t n = 0;
  uint64_t dropped = 0;
  const struct nano_block_time *given = NULL;
  if (info->size >= offsetof(struct nano_dispatch_info, block_times) + sizeof info->block_times &&
      info->block_times)
    given = info->block_times(info, &n, &dropped);
  if (!given) { /* said, never an empty timeline */
    if (info->format == NANO_FORMAT_JSON) {
      fputc('{', info->out);
      nano_analyzer_json_head(info->out, info, "KernelTimeline");
      fputs(",\"timed\":false}\n", info->out);
    } else {
      fprintf(info->out,
              "KernelTimeline: dispatch %" PRIu64 " of %s: the %s back end does not time "
              "blocks yet\n",
              info->dispatch_id, info->kernel_name, info->backend);
    }
    return;
  }
  struct nano_block_time *b = malloc((n ? n : 1) * sizeof *b);
  struct tl_figures f;
  if (b && n)
    memcpy(b, given, n * sizeof *b);
  if (!b || tl_figures(b, n, &f) != 0) {
    fprintf(stderr,
            "nanoprobe: KernelTimeline: out of memory for the report of dispatch %" PRIu64 "\n",
            info->dispatch_id);
    free(b);
    return;
  }
  if (info->format == NANO_FORMAT_JSON) {
    fputc('{', info->out);
    nano_analyzer_json_head(info->out, info, "KernelTimeline");
    tl_json_figures(info->out, &f, dropped);
    fputs("}\n", info->out);
  } else {
    tl_text(info->out, info, &f, dropped);
  }
  fflush(info->out);
  struct nano_analyzer_doc doc;
  FILE *mem = nano_analyzer_doc_begin(info, "KernelTimeline", &doc);
  if (mem) {
    tl_json_figures(mem, &f, dropped);
    fputs(",\"rows\":[", mem);
    for (size_t i = 0; i < n; i++) /* the runtime's order: by start */
      fprintf(mem, "%s[%u,%u,%u,%u,%" PRId64 ",%" PRId64 "]", i ? "," : "", given[i].block[0],
              given[i].block[1], given[i].block[2], given[i].unit, given[i].start, given[i].end);
    fputc(']', mem);
    nano_analyzer_doc_store(info, "KernelTimeline", mem, &doc);
  }
  free(b);
}

static void tl_clear(struct nano_handler *h) { (void)h; }

static void tl_destroy(struct nano_handler *h) { free(h); }

static const struct nano_handler_ops tl_ops = {tl_handle, tl_report, tl_clear, tl_destroy,
                                               tl_aggregates};

struct nano_handler *nano_kernel_timeline_create(const struct nano_dispatch_info *info) {
  struct timeline *t = calloc(1, sizeof *t);
  if (!t)
    return NULL;
  t->h = (struct nano_handler){
      &tl_ops, "KernelTimeline",
      NANO_HANDLER_PASS_THROUGH | NANO_HANDLER_COMPACT_RECORDS | NANO_HANDLER_BLOCK_TIMES, 0};
  t->info = info;
  return &t->h;
}
