/*
 * address_logger.c: the AddressLogger analyzer. Writes every access (one
 * line per lane of every record) as it is drained:
 *   text: CSV, header once per process:
 *     kernel,dispatch,site,file,line,column,kind,space,block_x,block_y,
 *     block_z,wave,lane,thread,address,size
 *   json: one object per access with the same fields ("block": [x, y, z]).
 * Option `trace` also stores the accesses in the trace (nano_analysis, view
 * nano_address), at most ADDRLOG_TRACE_MAX per dispatch ("truncated": true
 * beyond).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "nano/json.h"

/* Accesses of one dispatch kept for the trace: the document is one SQLite
 * value, which must stay well under SQLite's 1 GB limit. */
#define ADDRLOG_TRACE_MAX 1000000u

/* The CSV header goes out once per process (all dispatches share one
 * output stream). */
static int addrlog_header_done;

struct addrlog {
  struct nano_handler h;
  const struct nano_dispatch_info *info;
  FILE *trace; /* open_memstream of the trace document, or NULL */
  char *doc;
  size_t doclen;
  uint64_t kept, seen;
};

static int addrlog_handle(struct nano_handler *h, const struct nano_dh_record *r) {
  struct addrlog *a = (struct addrlog *)h;
  const struct nano_dispatch_info *info = a->info;
  FILE *out = info->out;
  const struct nano_dh_site *s = info->site ? info->site(info, r->site) : NULL;
  const char *file = s ? s->file : "";
  unsigned line = s ? s->line : 0, column = s ? s->column : 0;
  const char *kind = s ? nano_dh_kind_name(s->kind) : "unknown";
  const char *space = s ? nano_dh_addrspace_name(nano_analyzer_space(s, r)) : "unknown";
  if (info->format != NANO_FORMAT_JSON &&
      !__atomic_exchange_n(&addrlog_header_done, 1, __ATOMIC_RELAXED))
    fputs("kernel,dispatch,site,file,line,column,kind,space,block_x,block_y,block_z,wave,lane,"
          "thread,address,size\n",
          out);
  uint64_t buf[64];
  const uint64_t *addr = nano_dh_record_addrs(r, buf);
  for (unsigned i = 0; i < r->lanes; i++) {
    uint32_t thread = nano_dh_record_thread(r, i);
    if (info->format == NANO_FORMAT_JSON) {
      /* the stream's lock keeps the line whole when dispatches run at once */
      flockfile(out);
      fputs("{\"analyzer\":\"AddressLogger\",\"kernel\":", out);
      nano_json_str(out, info->kernel);
      fprintf(out, ",\"dispatch\":%" PRIu64 ",\"site\":%" PRIu64 ",\"file\":", info->dispatch_id,
              r->site);
      nano_json_str(out, file);
      fprintf(out,
              ",\"line\":%u,\"column\":%u,\"kind\":\"%s\",\"space\":\"%s\",\"block\":[%u,%u,%u],"
              "\"wave\":%u,\"lane\":%u,\"thread\":%u,\"address\":%" PRIu64 ",\"size\":%u}\n",
              line, column, kind, space, r->block[0], r->block[1], r->block[2], r->wave, r->lane[i],
              thread, addr[i], r->size);
      funlockfile(out);
    } else {
      /* A file name with a comma or quote is quoted, as CSV wants. */
      int quote = strpbrk(file, ",\"\n") != NULL;
      fprintf(out,
              "%s,%" PRIu64 ",0x%" PRIx64 ",%s%s%s,%u,%u,%s,%s,%u,%u,%u,%u,%u,%u,0x%" PRIx64
              ",%u\n",
              info->kernel, info->dispatch_id, r->site, quote ? "\"" : "", file, quote ? "\"" : "",
              line, column, kind, space, r->block[0], r->block[1], r->block[2], r->wave, r->lane[i],
              thread, addr[i], r->size);
    }
    a->seen++;
    if (a->trace && a->kept < ADDRLOG_TRACE_MAX) {
      fprintf(a->trace, "%s[%" PRIu64 ",%u,%u,%u,%u,%u,%u,%" PRIu64 ",%u]", a->kept ? "," : "",
              r->site, r->block[0], r->block[1], r->block[2], r->wave, r->lane[i], thread, addr[i],
              r->size);
      a->kept++;
    }
  }
  return NANO_RECORD_PASS;
}

static void addrlog_report(struct nano_handler *h) {
  struct addrlog *a = (struct addrlog *)h;
  fflush(a->info->out);
  if (!a->trace)
    return;
  fprintf(a->trace, "],\"accesses\":%" PRIu64 ",\"truncated\":%s}", a->seen,
          a->seen > a->kept ? "true" : "false");
  if (fclose(a->trace) == 0 && a->info->store)
    a->info->store(a->info, "AddressLogger", a->doc);
  a->trace = NULL;
}

/* Starts the trace document (NULL trace when out of memory: then only the
 * output stream gets the accesses). */
static void addrlog_open_trace(struct addrlog *a) {
  free(a->doc);
  a->doc = NULL;
  a->trace = open_memstream(&a->doc, &a->doclen);
  if (!a->trace)
    return;
  fputc('{', a->trace);
  nano_analyzer_json_head(a->trace, a->info, "AddressLogger");
  fputs(",\"columns\":[\"site\",\"block_x\",\"block_y\",\"block_z\",\"wave\",\"lane\",\"thread\","
        "\"address\",\"size\"],\"rows\":[",
        a->trace);
}

static void addrlog_clear(struct nano_handler *h) {
  struct addrlog *a = (struct addrlog *)h;
  int wanted = a->trace != NULL || a->doc != NULL;
  if (a->trace)
    fclose(a->trace);
  a->trace = NULL;
  a->kept = a->seen = 0;
  if (wanted)
    addrlog_open_trace(a);
}

static void addrlog_destroy(struct nano_handler *h) {
  struct addrlog *a = (struct addrlog *)h;
  if (a->trace)
    fclose(a->trace);
  free(a->doc);
  free(a);
}

/* every record, so no aggregates op */
static const struct nano_handler_ops addrlog_ops = {addrlog_handle, addrlog_report, addrlog_clear,
                                                    addrlog_destroy, NULL};

struct nano_handler *nano_address_logger_create(const struct nano_dispatch_info *info) {
  struct addrlog *a = calloc(1, sizeof *a);
  if (!a)
    return NULL;
  a->h = (struct nano_handler){&addrlog_ops, "AddressLogger",
                               NANO_HANDLER_PASS_THROUGH | NANO_HANDLER_COMPACT_RECORDS, 0};
  a->info = info;
  if (nano_analyzer_flag_option(info, "trace"))
    addrlog_open_trace(a);
  return &a->h;
}
