/*
 * report_analyses.c: the sections of `rpd report` that come from nanoprobe's
 * own tables: instrumented dispatches (MemoryAnalysis rows, Heatmap strips,
 * KernelTimeline block lanes), host atomics (kinds, sites with their source
 * lines, library callers) and short calls summed (nano_calls).
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "nano/json.h"
#include "report.h"

#define RP_MEM_ROWS 10       /* locations per dispatch in the memory section */
#define RP_MEM_DISPATCHES 50 /* dispatches in the memory section at most */
#define RP_HEAT_PAGES 256    /* pages drawn in a heatmap strip at most */
#define RP_HEAT_CELL 4       /* px per page in the strip */
#define RP_BLOCK_LANES 64    /* units drawn as lanes of a dispatch's blocks at most */
#define RP_BLOCKS_DRAWN 8192 /* blocks drawn per dispatch at most */
#define RP_BLOCK_WIDTH 800   /* px of a dispatch's block lanes */
#define RP_BLOCK_LANE 10     /* px per lane */
#define RP_SRC_LINE 240      /* characters of a source line shown at most */

/* ---- memory analyses ------------------------------------------------------ */

/* The heatmap strip of dispatch `id`: one cell per page in address order,
 * darker for more accesses, the hottest pages listed under it. */
static int rp_heatmap(const char *cmd, const struct rpdtool_trace *t, FILE *f, int64_t id) {
  sqlite3_stmt *st =
      rpdtool_prepare(cmd, t,
                      "SELECT start, \"end\", accesses, max(accesses) OVER (), count(*) OVER () "
                      "FROM nano_heatmap WHERE dispatch_id = ? ORDER BY start");
  if (!st)
    return -1;
  if (sqlite3_bind_int64(st, 1, id) != SQLITE_OK)
    return rpdtool_done(cmd, t, st, SQLITE_ERROR, NULL, NULL);
  int rc, n = 0, cell = RP_HEAT_CELL;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW && n < RP_HEAT_PAGES) {
    if (n == 0) {
      /* the strip is RP_HEAT_PAGES cells wide; fewer pages get wider cells */
      int64_t pages = sqlite3_column_int64(st, 4);
      if (pages < RP_HEAT_PAGES)
        cell = (int)(RP_HEAT_PAGES * RP_HEAT_CELL / pages);
      fprintf(f,
              "<p>Heatmap (%lld pages in address order, darker = more accesses):</p>"
              "<svg width=%d height=24 class=heatmap>",
              (long long)pages, RP_HEAT_PAGES * RP_HEAT_CELL);
    }
    int64_t acc = sqlite3_column_int64(st, 2), most = sqlite3_column_int64(st, 3);
    double shade = most > 0 ? (double)acc / (double)most : 0;
    fprintf(f,
            "<rect x=%d y=0 width=%d height=24 fill=\"rgb(%d,%d,%d)\" data-accesses=%lld>"
            "<title>0x%llx-0x%llx: %lld accesses</title></rect>",
            n * cell, cell - 1, (int)(255 - 200 * shade), (int)(255 - 150 * shade),
            (int)(255 - 40 * shade), (long long)acc,
            (unsigned long long)sqlite3_column_int64(st, 0),
            (unsigned long long)sqlite3_column_int64(st, 1), (long long)acc);
    n++;
  }
  if (n)
    fputs("</svg>\n", f);
  if (rpdtool_done(cmd, t, st, rc == SQLITE_ROW ? SQLITE_DONE : rc, NULL, NULL))
    return -1;
  if (!n)
    return 0;
  st = rpdtool_prepare(cmd, t,
                       "SELECT start, \"end\", accesses FROM nano_heatmap WHERE dispatch_id = ? "
                       "ORDER BY accesses DESC, start LIMIT 5");
  if (!st)
    return -1;
  if (sqlite3_bind_int64(st, 1, id) != SQLITE_OK)
    return rpdtool_done(cmd, t, st, SQLITE_ERROR, NULL, NULL);
  fputs("<table class=heat><thead><tr><th>hottest pages</th><th>accesses</th></tr></thead><tbody>",
        f);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    fprintf(f, "<tr><td><code>0x%llx-0x%llx</code></td><td class=n>%lld</td></tr>",
            (unsigned long long)sqlite3_column_int64(st, 0),
            (unsigned long long)sqlite3_column_int64(st, 1),
            (long long)sqlite3_column_int64(st, 2));
  fputs("</tbody></table>\n", f);
  return rpdtool_done(cmd, t, st, rc, NULL, NULL);
}

/* One dispatch's worst locations (MemoryAnalysis): global ones by excess
 * lines, shared ones by bank conflicts. */
static int rp_memory_rows(const char *cmd, const struct rpdtool_trace *t, FILE *f, int64_t id) {
  sqlite3_stmt *st = rpdtool_prepare(
      cmd, t,
      "SELECT file, line, \"column\", function, kind, space, access_bytes, executions, bytes, "
      "lines_needed, lines_used, bank_conflicts FROM nano_memory WHERE dispatch_id = ? "
      "ORDER BY coalesce(lines_used - lines_needed, 0) DESC, coalesce(bank_conflicts, 0) DESC, "
      "file, line, \"column\" LIMIT " RP_STR(RP_MEM_ROWS));
  if (!st)
    return -1;
  if (sqlite3_bind_int64(st, 1, id) != SQLITE_OK)
    return rpdtool_done(cmd, t, st, SQLITE_ERROR, NULL, NULL);
  fputs("<table class=\"sortable memory\"><thead><tr><th>location</th><th>function</th>"
        "<th>access</th><th>executions</th><th>bytes</th><th>lines needed</th>"
        "<th>lines used</th><th>used / needed</th><th>bank conflicts</th></tr></thead><tbody>\n",
        f);
  int rc, n = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *file = (const char *)sqlite3_column_text(st, 0);
    const char *base = file ? strrchr(file, '/') : NULL;
    fputs("<tr><td><code title=\"", f);
    rp_esc(f, file);
    fputs("\">", f);
    rp_esc(f, base ? base + 1 : file);
    fprintf(f, ":%lld:%lld</code></td><td>", (long long)sqlite3_column_int64(st, 1),
            (long long)sqlite3_column_int64(st, 2));
    rp_esc(f, (const char *)sqlite3_column_text(st, 3));
    fputs("</td><td>", f);
    rp_esc(f, (const char *)sqlite3_column_text(st, 4));
    fprintf(f, " %lld B, ", (long long)sqlite3_column_int64(st, 6));
    rp_esc(f, (const char *)sqlite3_column_text(st, 5));
    fprintf(f, "</td><td class=n>%lld</td><td class=n>%lld</td>",
            (long long)sqlite3_column_int64(st, 7), (long long)sqlite3_column_int64(st, 8));
    if (sqlite3_column_type(st, 9) == SQLITE_NULL) {
      fputs("<td></td><td></td><td></td>", f);
    } else {
      int64_t need = sqlite3_column_int64(st, 9), used = sqlite3_column_int64(st, 10);
      fprintf(f, "<td class=n>%lld</td><td class=n>%lld</td><td class=n data-v=\"%.4f\">%.2fx</td>",
              (long long)need, (long long)used, need ? (double)used / (double)need : 0,
              need ? (double)used / (double)need : 0);
    }
    if (sqlite3_column_type(st, 11) == SQLITE_NULL)
      fputs("<td></td></tr>\n", f);
    else
      fprintf(f, "<td class=n>%lld</td></tr>\n", (long long)sqlite3_column_int64(st, 11));
    n++;
  }
  fputs("</tbody></table>\n", f);
  if (!n)
    fputs("<p class=muted>No MemoryAnalysis results for this dispatch.</p>\n", f);
  return rpdtool_done(cmd, t, st, rc, NULL, NULL);
}

/* KernelTimeline's figures and block lanes of dispatch id, when it ran. 0, or
 * -1 after a message. */
static int rp_blocks(const char *cmd, const struct rpdtool_trace *t, FILE *f, int64_t id) {
  int has = nano_rpdfile_has_object(t->db, "nano_block");
  if (has <= 0)
    return has < 0 ? rpdtool_done(cmd, t, NULL, SQLITE_ERROR, NULL, NULL) : 0;
  sqlite3_stmt *st = rpdtool_prepare(
      cmd, t,
      "SELECT json_extract(report, '$.blocks'), json_extract(report, '$.units'), "
      "json_extract(report, '$.span_ns'), json_extract(report, '$.block_ns.min'), "
      "json_extract(report, '$.block_ns.median'), json_extract(report, '$.block_ns.max'), "
      "json_extract(report, '$.imbalance'), json_extract(report, '$.tail_ns') "
      "FROM nano_analysis WHERE dispatch_id = ? AND analyzer = 'KernelTimeline' LIMIT 1");
  if (!st)
    return -1;
  if (sqlite3_bind_int64(st, 1, id) != SQLITE_OK)
    return rpdtool_done(cmd, t, st, SQLITE_ERROR, NULL, NULL);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    fprintf(f, "<p class=blocks>Blocks (KernelTimeline): %lld on %lld units over ",
            (long long)sqlite3_column_int64(st, 0), (long long)sqlite3_column_int64(st, 1));
    rp_dur(f, sqlite3_column_double(st, 2));
    fputs("; block time min ", f);
    rp_dur(f, sqlite3_column_double(st, 3));
    fputs(", median ", f);
    rp_dur(f, sqlite3_column_double(st, 4));
    fputs(", max ", f);
    rp_dur(f, sqlite3_column_double(st, 5));
    fprintf(f, "; busiest unit %.2fx the mean; tail ", sqlite3_column_double(st, 6));
    rp_dur(f, sqlite3_column_double(st, 7));
    fputs(" (the last block's end after the first unit's last)</p>\n", f);
  }
  if (rpdtool_done(cmd, t, st, rc == SQLITE_ROW ? SQLITE_DONE : rc, NULL, NULL))
    return -1;
  if (rc != SQLITE_ROW)
    return 0;
  st =
      rpdtool_prepare(cmd, t,
                      "SELECT unit, start, \"end\", block_x, block_y, block_z, min(start) OVER (), "
                      "max(\"end\") OVER () FROM nano_block WHERE dispatch_id = ? "
                      "ORDER BY unit, start LIMIT " RP_STR(RP_BLOCKS_DRAWN));
  if (!st)
    return -1;
  if (sqlite3_bind_int64(st, 1, id) != SQLITE_OK)
    return rpdtool_done(cmd, t, st, SQLITE_ERROR, NULL, NULL);
  int lane = -1, lanes_cut = 0;
  int64_t unit = -1;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t u = sqlite3_column_int64(st, 0), b0 = sqlite3_column_int64(st, 1),
            b1 = sqlite3_column_int64(st, 2), lo = sqlite3_column_int64(st, 6),
            hi = sqlite3_column_int64(st, 7);
    if (lane < 0)
      fprintf(f, "<svg width=%d height=%d class=blocks>", RP_BLOCK_WIDTH,
              RP_BLOCK_LANES * RP_BLOCK_LANE);
    if (u != unit) {
      unit = u;
      if (++lane == RP_BLOCK_LANES) {
        lanes_cut = 1;
        break;
      }
    }
    double scale = hi > lo ? (double)RP_BLOCK_WIDTH / (double)(hi - lo) : 0;
    fprintf(f,
            "<rect x=%.1f y=%d width=%.1f height=%d fill=\"#4a7ab5\" data-unit=%lld>"
            "<title>block (%lld,%lld,%lld) on unit %lld: %lld ns</title></rect>",
            (double)(b0 - lo) * scale, lane * RP_BLOCK_LANE,
            (double)(b1 - b0) * scale > 1 ? (double)(b1 - b0) * scale : 1.0, RP_BLOCK_LANE - 2,
            (long long)u, (long long)sqlite3_column_int64(st, 3),
            (long long)sqlite3_column_int64(st, 4), (long long)sqlite3_column_int64(st, 5),
            (long long)u, (long long)(b1 - b0));
  }
  if (lane >= 0)
    fputs("</svg>\n", f);
  if (lanes_cut)
    fputs("<p class=muted>(the first " RP_STR(RP_BLOCK_LANES) " units are drawn)</p>\n", f);
  return rpdtool_done(cmd, t, st, rc == SQLITE_ROW ? SQLITE_DONE : rc, NULL, NULL);
}

/* The memory section: every instrumented dispatch (the first
 * RP_MEM_DISPATCHES) with its analyses. */
int rp_memory(const char *cmd, const struct rpdtool_trace *t, FILE *f) {
  if (!t->has_dispatches)
    return 0;
  sqlite3_stmt *st = rpdtool_prepare(
      cmd, t,
      "SELECT id, kernel_name, kernel_dispatch, arch, wave_size, grid_x, grid_y, grid_z, block_x, "
      "block_y, block_z, records, dropped, \"end\" - start FROM nano_dispatch ORDER BY id "
      "LIMIT " RP_STR(RP_MEM_DISPATCHES));
  if (!st)
    return -1;
  fputs("<h2 id=memory>Memory analysis of instrumented kernels</h2><p class=muted>Per "
        "dispatch: the source locations that use the most cache lines beyond what their "
        "accesses need, and the LDS/shared bank conflicts (MemoryAnalysis); the pages "
        "touched (Heatmap).</p>\n",
        f);
  int rc, n = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t id = sqlite3_column_int64(st, 0);
    fprintf(f, "<h3 class=dispatch data-id=%lld>", (long long)id);
    rp_esc(f, (const char *)sqlite3_column_text(st, 1));
    fprintf(f, " <span class=muted>#%lld (dispatch %lld; ", (long long)sqlite3_column_int64(st, 2),
            (long long)id);
    rp_esc(f, (const char *)sqlite3_column_text(st, 3));
    fprintf(f,
            ", wave %lld, grid %lldx%lldx%lld, block %lldx%lldx%lld, %lld records, "
            "%lld dropped, ",
            (long long)sqlite3_column_int64(st, 4), (long long)sqlite3_column_int64(st, 5),
            (long long)sqlite3_column_int64(st, 6), (long long)sqlite3_column_int64(st, 7),
            (long long)sqlite3_column_int64(st, 8), (long long)sqlite3_column_int64(st, 9),
            (long long)sqlite3_column_int64(st, 10), (long long)sqlite3_column_int64(st, 11),
            (long long)sqlite3_column_int64(st, 12));
    rp_dur(f, (double)sqlite3_column_int64(st, 13));
    fputs(")</span></h3>\n", f);
    if (rp_memory_rows(cmd, t, f, id) || rp_heatmap(cmd, t, f, id) || rp_blocks(cmd, t, f, id)) {
      sqlite3_finalize(st);
      return -1;
    }
    n++;
  }
  if (!n)
    fputs("<p class=muted>No instrumented dispatches in this trace.</p>\n", f);
  return rpdtool_done(cmd, t, st, rc, NULL, NULL);
}

/* ---- host atomics ------------------------------------------------------ */

/* Line `line` (1-based) of the text file `path` into buf, without its newline
 * and cut to n - 1 characters; "" when the file or the line cannot be read
 * (the report may be written on another machine than the trace). */
static void rp_source_line(const char *path, int64_t line, char *buf, size_t n) {
  buf[0] = '\0';
  FILE *src = path && *path && line > 0 ? fopen(path, "r") : NULL;
  if (!src)
    return;
  char *text = NULL;
  size_t cap = 0;
  ssize_t len = 0;
  for (int64_t i = 1; i <= line && (len = getline(&text, &cap, src)) >= 0; i++) {
  }
  if (len > 0) {
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
      len--;
    size_t k = (size_t)len < n - 1 ? (size_t)len : n - 1;
    memcpy(buf, text, k);
    buf[k] = '\0';
  }
  free(text);
  fclose(src);
}

/* The callers of library atomics (nano_atomic_callers), when the trace was
 * recorded with NANO_ATOMICS_CALLERS=1. */
int rp_atomic_callers(const char *cmd, const struct rpdtool_trace *t, FILE *f) {
  int has = nano_rpdfile_has_object(t->db, "nano_atomic_callers");
  if (has < 0) {
    rpdtool_err(cmd, "%s: %s", t->path, sqlite3_errmsg(t->db));
    return -1;
  }
  if (!has)
    return 0;
  char *sql = sqlite3_mprintf("SELECT count, kind, library_function, caller, file, line "
                              "FROM nano_atomic_callers LIMIT %d",
                              RP_TOP);
  sqlite3_stmt *st = sql ? rpdtool_prepare(cmd, t, sql) : NULL;
  sqlite3_free(sql);
  if (!st)
    return -1;
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW)
    fputs("<h3>Library atomics by caller</h3><p class=muted>Atomics of library functions "
          "that were not inlined into your code (libstdc++ at -O0), counted per call "
          "stack and shown at the first frame in your files.</p>\n<table class=sortable>"
          "<thead><tr><th>count</th><th>kind</th><th>library function</th><th>called from</th>"
          "<th>where</th><th>source</th></tr></thead><tbody>\n",
          f);
  char line[RP_SRC_LINE + 1];
  int any = rc == SQLITE_ROW;
  for (; rc == SQLITE_ROW; rc = sqlite3_step(st)) {
    long long n = sqlite3_column_int64(st, 0);
    const char *file = (const char *)sqlite3_column_text(st, 4);
    int64_t ln = sqlite3_column_int64(st, 5);
    fprintf(f, "<tr><td class=n data-v=\"%lld\">%lld</td><td>", n, n);
    rp_esc(f, (const char *)sqlite3_column_text(st, 1));
    fputs("</td><td><code>", f);
    rp_esc(f, (const char *)sqlite3_column_text(st, 2));
    fputs("</code></td><td><code>", f);
    if (file && *file) {
      rp_esc(f, (const char *)sqlite3_column_text(st, 3));
      fputs("</code></td><td>", f);
      rp_esc(f, file);
      fprintf(f, ":%lld</td><td><code>", (long long)ln);
      rp_source_line(file, ln, line, sizeof line);
      rp_esc(f, line);
    } else {
      fputs("</code></td><td>no frame in your files</td><td><code>", f);
    }
    fputs("</code></td></tr>\n", f);
  }
  if (any)
    fputs("</tbody></table>\n", f);
  return rpdtool_done(cmd, t, st, rc, NULL, NULL);
}

/* The host atomics section, when the tracer stored atomics. */
int rp_atomics(const char *cmd, const struct rpdtool_trace *t, FILE *f) {
  int has = nano_rpdfile_has_object(t->db, "nano_atomic_totals");
  int origins = has > 0 ? nano_rpdfile_has_object(t->db, "nano_atomic_origin") : 0;
  if (has < 0 || origins < 0) {
    rpdtool_err(cmd, "%s: %s", t->path, sqlite3_errmsg(t->db));
    return -1;
  }
  if (!has)
    return 0;
  sqlite3_stmt *st = rpdtool_prepare(cmd, t, "SELECT kind, count FROM nano_atomic_totals");
  if (!st)
    return -1;
  fputs("<h2 id=atomics>Host atomics</h2><p class=muted>Atomic operations the instrumented "
        "code executed (built with the plugin, traced with the tracker), per kind and per "
        "site. A site inlined from library code is shown at the user's line, with the "
        "library location it came from.</p>\n<table class=sortable><thead><tr><th>kind</th>"
        "<th>count</th></tr></thead><tbody>\n",
        f);
  int rc, kinds = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    long long n = sqlite3_column_int64(st, 1);
    fputs("<tr><td>", f);
    rp_esc(f, (const char *)sqlite3_column_text(st, 0));
    fprintf(f, "</td><td class=n data-v=\"%lld\">%lld</td></tr>\n", n, n);
    kinds++;
  }
  fputs("</tbody></table>\n", f);
  if (rpdtool_done(cmd, t, st, rc, NULL, NULL))
    return -1;
  if (!kinds) {
    fputs("<p class=muted>No instrumented atomic ran.</p>\n", f);
    return 0;
  }
  char *sql = sqlite3_mprintf(
      "SELECT sum(C.count) AS n, S.kind, S.memory_order, S.function, S.file, S.line, S.column, "
      "%s FROM nano_atomic_count C JOIN nano_atomic_site S ON S.id = C.site_id %s "
      "GROUP BY S.kind_id, S.memory_order, S.function, S.file, S.line, S.column, 8, 9 "
      "HAVING n > 0 ORDER BY n DESC LIMIT %d",
      origins ? "O.file, O.line" : "NULL, NULL",
      origins ? "LEFT JOIN nano_atomic_origin O ON O.site_id = S.id" : "", RP_TOP);
  st = sql ? rpdtool_prepare(cmd, t, sql) : NULL;
  sqlite3_free(sql);
  if (!st)
    return -1;
  fputs("<h3>Busiest sites</h3><table class=sortable><thead><tr><th>count</th><th>kind</th>"
        "<th>order</th><th>function</th><th>where</th><th>source</th><th>inlined from</th>"
        "</tr></thead><tbody>\n",
        f);
  char line[RP_SRC_LINE + 1];
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    long long n = sqlite3_column_int64(st, 0);
    const char *file = (const char *)sqlite3_column_text(st, 4);
    int64_t ln = sqlite3_column_int64(st, 5);
    fprintf(f, "<tr><td class=n data-v=\"%lld\">%lld</td><td>", n, n);
    rp_esc(f, (const char *)sqlite3_column_text(st, 1));
    fputs("</td><td>", f);
    rp_esc(f, (const char *)sqlite3_column_text(st, 2));
    fputs("</td><td><code>", f);
    rp_esc(f, (const char *)sqlite3_column_text(st, 3));
    fputs("</code></td><td>", f);
    rp_esc(f, file && *file ? file : "?");
    fprintf(f, ":%lld:%lld</td><td><code>", (long long)ln, (long long)sqlite3_column_int64(st, 6));
    rp_source_line(file, ln, line, sizeof line);
    rp_esc(f, line);
    fputs("</code></td><td>", f);
    const char *lib = (const char *)sqlite3_column_text(st, 7);
    if (lib) {
      const char *base = strrchr(lib, '/');
      rp_esc(f, base ? base + 1 : lib);
      fprintf(f, ":%lld", (long long)sqlite3_column_int64(st, 8));
    }
    fputs("</td></tr>\n", f);
  }
  fputs("</tbody></table>\n", f);
  if (rpdtool_done(cmd, t, st, rc, NULL, NULL))
    return -1;
  return rp_atomic_callers(cmd, t, f);
}

/* The short-calls section, when the tracer summed calls (--min-duration):
 * the functions with the most total time in calls not stored as ranges. */
int rp_short_calls(const char *cmd, const struct rpdtool_trace *t, FILE *f) {
  int has = nano_rpdfile_has_object(t->db, "nano_calls");
  if (has < 0) {
    rpdtool_err(cmd, "%s: %s", t->path, sqlite3_errmsg(t->db));
    return -1;
  }
  if (!has)
    return 0;
  char *sql = sqlite3_mprintf(
      "SELECT domain, CASE WHEN name = 'UserMarker' THEN args ELSE name END, "
      "CASE WHEN name = 'UserMarker' THEN '' ELSE args END, sum(calls), sum(total_ns), "
      "sum(self_ns), max(min_duration_ns) FROM nano_calls GROUP BY domain, name, args "
      "ORDER BY 5 DESC LIMIT %d",
      RP_TOP);
  sqlite3_stmt *st = sql ? rpdtool_prepare(cmd, t, sql) : NULL;
  sqlite3_free(sql);
  if (!st)
    return -1;
  fputs("<h2 id=short>Short calls</h2><p class=muted>Calls shorter than the bound the trace "
        "was recorded with (<code>--min-duration</code>) are not ranges in the timeline or "
        "the tables above: the tracer summed them per function (processes merged). Total "
        "is the sum of their durations (a recursive function's nested calls count in each); "
        "self leaves out the time of the calls nested in them.</p>\n<table class=sortable>"
        "<thead><tr><th>function</th><th>where</th><th>domain</th><th>calls</th><th>total</th>"
        "<th>self</th><th>bound</th></tr></thead><tbody>\n",
        f);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    long long calls = sqlite3_column_int64(st, 3);
    fputs("<tr><td><code>", f);
    rp_esc(f, (const char *)sqlite3_column_text(st, 1));
    fputs("</code></td><td>", f);
    rp_esc(f, (const char *)sqlite3_column_text(st, 2));
    fputs("</td><td>", f);
    rp_esc(f, (const char *)sqlite3_column_text(st, 0));
    fprintf(f, "</td><td class=n data-v=\"%lld\">%lld</td>", calls, calls);
    for (int c = 4; c <= 6; c++)
      rp_dur_cell(f, (double)sqlite3_column_int64(st, c));
    fputs("</tr>\n", f);
  }
  fputs("</tbody></table>\n", f);
  return rpdtool_done(cmd, t, st, rc, NULL, NULL);
}
