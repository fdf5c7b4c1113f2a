/*
 * report.c: `rpd report FILE -o report.html`: one self-contained HTML page
 * (inline CSS, inline SVG, a little inline script; nothing fetched) about a
 * trace:
 *
 *   summary       span, calls, ops, threads, GPUs
 *   GPU busy      per GPU: op time over the ops' wall time (the busy view)
 *   timeline      an SVG overview: one lane per thread (calls) and per GPU
 *                 queue (ops), busy pixels drawn as runs, marks as ticks;
 *                 then a zoomable canvas of the longest calls, ranges and
 *                 ops with their names and nesting (report_timeline.c)
 *   top ops       GPU ops grouped by name (the top view's grouping)
 *   top calls     by inclusive and by exclusive CPU time, with GPU time, from
 *                 the same call walk as `rpd callstack`; ranges by their text,
 *                 autograd range texts by their operator name (the text
 *                 before ", seq = " or ", op_id = ")
 *   call tree     an icicle of the calls and ranges by call path (threads
 *                 merged): a box per path, as wide as its inclusive time
 *                 (top calls and the call tree: report_calls.c)
 *   autograd      operator -> kernel -> tensor sizes, collapsible, when the
 *                 file has the autograd views (`rpd autograd`)
 *   marks         zero-duration user markers (signposts)
 *   memory        instrumented kernel dispatches (nano_dispatch): per
 *                 dispatch the worst source locations by excess cache lines
 *                 and by bank conflicts (MemoryAnalysis), a heatmap strip
 *                 of the pages it touched (Heatmap), and its blocks on a lane
 *                 per unit with their spread (KernelTimeline)
 *   short calls   ranges shorter than NANO_RPD_MIN_DURATION, summed per
 *                 function by the tracer (nano_calls): calls, total, self
 *   host atomics  the atomics the tracer stored (nano_atomic_*): totals per
 *                 kind, and the busiest sites (processes and instances
 *                 merged) with their source line when the file is readable,
 *                 and where a site was inlined from (memory, short calls
 *                 and host atomics: report_analyses.c)
 *
 * The report only reads the trace. The page is written to a temporary beside OUT and renamed,
 * so OUT is either the previous page or the complete new one ("-": standard output; a device or
 * FIFO is written in place, a link refused: nano/outfile.h). The page's script marks
 * <body data-ok="1"> when it ran through, and data-error on a script error.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "commands.h"
#include "nano/outfile.h"
#include "nano/text.h"
#include "report.h"

#define RP_WIDTH 1100    /* timeline plot width, px */
#define RP_LANE 14       /* lane height, px */
#define RP_MAXLANES 48   /* lanes drawn at most (per kind) */
#define RP_MAXMARKS 300  /* marks drawn at most */
#define RP_MAXTRACK 4096 /* lanes tracked at most (the first RP_MAXLANES drawn) */

/* Writes s HTML-escaped, as valid UTF-8 whatever the trace holds: a byte that
 * starts no well-formed sequence, and a control character other than a tab or
 * newline (HTML allows none), become U+FFFD. */
void rp_esc(FILE *f, const char *s) {
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c >= 0x80) {
      int n = nano_utf8_len((const unsigned char *)s, strnlen(s, 4));
      if (n > 0) {
        fwrite(s, 1, (size_t)n, f);
        s += n - 1;
      } else {
        fputs("&#xFFFD;", f);
      }
      continue;
    }
    switch (c) {
    case '&':
      fputs("&amp;", f);
      break;
    case '<':
      fputs("&lt;", f);
      break;
    case '>':
      fputs("&gt;", f);
      break;
    case '"':
      fputs("&quot;", f);
      break;
    case '\'':
      fputs("&#39;", f);
      break;
    default:
      if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f)
        fputs("&#xFFFD;", f);
      else
        fputc(c, f);
    }
  }
}

/* Writes a duration in ns in a readable unit. */
void rp_dur(FILE *f, double ns) {
  if (ns >= 1e9)
    fprintf(f, "%.3f s", ns / 1e9);
  else if (ns >= 1e6)
    fprintf(f, "%.3f ms", ns / 1e6);
  else if (ns >= 1e3)
    fprintf(f, "%.3f µs", ns / 1e3);
  else
    fprintf(f, "%.0f ns", ns);
}

/* A cell holding a duration, sortable by its ns value. */
void rp_dur_cell(FILE *f, double ns) {
  fprintf(f, "<td class=n data-v=\"%.0f\">", ns);
  rp_dur(f, ns);
  fputs("</td>", f);
}

static const char rp_css[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff}"
    "h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}"
    "table{border-collapse:collapse;margin:6px 0}td,th{padding:2px 10px;text-align:left;"
    "border-bottom:1px solid #eee;vertical-align:top}th{background:#f4f4f4;cursor:pointer}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}.bar{background:#4a90d9;height:10px}"
    "details{margin:2px 0 2px 18px}summary{cursor:pointer}summary span{color:#666}"
    ".muted{color:#777}svg text{font:11px sans-serif}code{background:#f4f4f4;padding:0 3px}"
    "button{margin:4px 6px 4px 0}"
    ".flame,.fc{display:flex;align-items:flex-start}.fn{min-width:0;overflow:hidden}"
    ".fl{height:16px;line-height:16px;font:11px sans-serif;padding:0 2px;background:#f2b36f;"
    "border:1px solid #fff;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}";

/* Sortable tables, expand/collapse for the autograd tree, the ok mark. */
static const char rp_js[] =
    "window.onerror=function(m){document.body.setAttribute('data-error',String(m));};\n"
    "document.querySelectorAll('table.sortable').forEach(function(tb){\n"
    "  tb.querySelectorAll('th').forEach(function(th,i){\n"
    "    th.addEventListener('click',function(){\n"
    "      var rows=Array.prototype.slice.call(tb.tBodies[0].rows);\n"
    "      var asc=th.getAttribute('data-asc')!=='1';th.setAttribute('data-asc',asc?'1':'0');\n"
    "      rows.sort(function(a,b){var x=a.cells[i],y=b.cells[i];\n"
    "        var u=x.getAttribute('data-v'),v=y.getAttribute('data-v');\n"
    "        var c=(u!==null&&v!==null)?(parseFloat(u)-parseFloat(v))\n"
    "          :x.textContent.localeCompare(y.textContent);\n"
    "        return asc?c:-c;});\n"
    "      rows.forEach(function(r){tb.tBodies[0].appendChild(r);});});});});\n"
    "function rpdOpenAll(o){\n"
    "  document.querySelectorAll('#autograd details').forEach(function(d){d.open=o;});}\n"
    "var ex=document.getElementById('ag-expand'),co=document.getElementById('ag-collapse');\n"
    "if(ex)ex.addEventListener('click',function(){rpdOpenAll(true);});\n"
    "if(co)co.addEventListener('click',function(){rpdOpenAll(false);});\n"
    "document.body.setAttribute('data-ok','1');\n";

/* ---- summary and GPU busy --------------------------------------------- */

/* The summary table. Each section writer below writes its part of the page
 * to f and returns 0, or -1 after printing the error for cmd. */
static int rp_summary(const char *cmd, const struct rpdtool_trace *t, FILE *f, int64_t lo,
                      int64_t hi) {
  static const char sql[] =
      "SELECT (SELECT count(*) FROM rocpd_api), (SELECT count(*) FROM rocpd_op), "
      "(SELECT count(*) FROM (SELECT DISTINCT pid FROM rocpd_api)), "
      "(SELECT count(*) FROM (SELECT DISTINCT pid, tid FROM rocpd_api)), "
      "(SELECT count(*) FROM (SELECT DISTINCT gpuId FROM rocpd_op))";
  sqlite3_stmt *st = rpdtool_prepare(cmd, t, sql);
  if (!st)
    return -1;
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    fputs("<h2>Summary</h2><table><tbody>", f);
    fputs("<tr><th>file</th><td>", f);
    rp_esc(f, t->path);
    fprintf(f, "</td></tr><tr><th>schema version</th><td>%d</td></tr>", t->schema_version);
    fprintf(f, "<tr><th>time span</th><td>%lld .. %lld ns (", (long long)lo, (long long)hi);
    rp_dur(f, (double)rpdtool_sub(hi, lo));
    fprintf(f,
            ")</td></tr><tr><th>API calls and ranges</th><td>%lld</td></tr>"
            "<tr><th>GPU ops</th><td>%lld</td></tr><tr><th>processes / threads</th>"
            "<td>%lld / %lld</td></tr><tr><th>GPUs</th><td>%lld</td></tr></tbody></table>\n",
            (long long)sqlite3_column_int64(st, 0), (long long)sqlite3_column_int64(st, 1),
            (long long)sqlite3_column_int64(st, 2), (long long)sqlite3_column_int64(st, 3),
            (long long)sqlite3_column_int64(st, 4));
    rc = SQLITE_DONE;
  }
  return rpdtool_done(cmd, t, st, rc, NULL, NULL);
}

/* GPU busy per GPU, the busy view's definition. */
static int rp_busy(const char *cmd, const struct rpdtool_trace *t, FILE *f) {
  static const char sql[] =
      "SELECT A.gpuId, GpuTime, WallTime, GpuTime*1.0/WallTime FROM (SELECT gpuId, "
      "sum(end-start) AS GpuTime FROM rocpd_op GROUP BY gpuId) A JOIN (SELECT max(end) - "
      "min(start) AS WallTime FROM rocpd_op) ORDER BY A.gpuId";
  sqlite3_stmt *st = rpdtool_prepare(cmd, t, sql);
  if (!st)
    return -1;
  fputs("<h2 id=busy>GPU busy</h2><p class=muted>Summed op time over the wall time of all ops "
        "(the <code>busy</code> view; overlapping ops can exceed 100%).</p>"
        "<table class=sortable><thead><tr><th>gpuId</th><th>op time</th><th>wall time</th>"
        "<th>busy</th><th></th></tr></thead><tbody>\n",
        f);
  int rc, n = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    double b = sqlite3_column_double(st, 3);
    fprintf(f, "<tr><td class=n data-v=\"%lld\">%lld</td>", (long long)sqlite3_column_int64(st, 0),
            (long long)sqlite3_column_int64(st, 0));
    rp_dur_cell(f, sqlite3_column_double(st, 1));
    rp_dur_cell(f, sqlite3_column_double(st, 2));
    fprintf(f,
            "<td class=n data-v=\"%.6f\">%.1f%%</td><td><div class=bar style=\"width:%dpx\">"
            "</div></td></tr>\n",
            b, 100 * b,
            (int)(200 * (b > 1   ? 1
                         : b < 0 ? 0
                                 : b)));
    n++;
  }
  fputs("</tbody></table>\n", f);
  if (!n)
    fputs("<p class=muted>No GPU ops in this trace.</p>\n", f);
  return rpdtool_done(cmd, t, st, rc, NULL, NULL);
}

/* ---- timeline ---------------------------------------------------------- */

/* One lane of the timeline: busy pixel columns. */
struct rp_lane {
  int64_t a, b;             /* pid, tid or gpuId, queueId */
  char name[64], pname[64]; /* thread lanes: the OS names of thread and process, or "" */
  unsigned char px[RP_WIDTH];
};

/* The strip position of time t (pixels from the left; any double: callers
 * check it against [0, RP_WIDTH) before converting). */
static double rp_x(int64_t t, int64_t lo, double scale) {
  return (double)rpdtool_sub(t, lo) * scale;
}

/* qsort order of lanes: by (a, b). */
static int rp_lane_cmp(const void *pa, const void *pb) {
  const struct rp_lane *x = pa, *y = pb;
  if (x->a != y->a)
    return x->a < y->a ? -1 : 1;
  return x->b < y->b ? -1 : x->b > y->b;
}

/* Reads (a, b, start, end) rows in any order (one scan) into lanes, one per
 * distinct (a, b) up to RP_MAXTRACK, marking the pixel columns each row
 * covers; sorts them by (a, b). *lanes is malloc'd; *more gets the lanes
 * beyond RP_MAXLANES (not drawn). Returns the lane count to draw or -1. */
static int rp_lanes(const char *cmd, const struct rpdtool_trace *t, const char *sql, int64_t lo,
                    int64_t hi, struct rp_lane **lanes, int *more) {
  *lanes = NULL;
  *more = 0;
  sqlite3_stmt *st = rpdtool_prepare(cmd, t, sql);
  if (!st)
    return -1;
  struct rp_lane *l = NULL;
  int n = 0, cap = 0, last = -1, rc, lost = 0;
  double scale = hi > lo ? (double)RP_WIDTH / (double)rpdtool_sub(hi, lo) : 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t a = sqlite3_column_int64(st, 0), b = sqlite3_column_int64(st, 1);
    if (last < 0 || l[last].a != a || l[last].b != b) {
      last = -1;
      for (int i = 0; i < n && last < 0; i++)
        if (l[i].a == a && l[i].b == b)
          last = i;
      if (last < 0) {
        if (n == RP_MAXTRACK) {
          lost = 1;
          continue;
        }
        if (n == cap) {
          cap = cap ? 2 * cap : 16;
          struct rp_lane *m = realloc(l, (size_t)cap * sizeof *m);
          if (!m) {
            free(l);
            sqlite3_finalize(st);
            rpdtool_err(cmd, "out of memory");
            return -1;
          }
          l = m;
        }
        memset(&l[n], 0, sizeof l[n]);
        l[n].a = a;
        l[n].b = b;
        last = n++;
      }
    }
    double x0 = rp_x(sqlite3_column_int64(st, 2), lo, scale);
    double x1 = rp_x(sqlite3_column_int64(st, 3), lo, scale);
    if (x1 < 0 || x0 >= RP_WIDTH || x1 < x0)
      continue; /* outside the strip */
    int p0 = x0 < 0 ? 0 : (int)x0, p1 = x1 >= RP_WIDTH ? RP_WIDTH - 1 : (int)x1;
    memset(l[last].px + p0, 1, (size_t)(p1 - p0 + 1));
  }
  if (rpdtool_done(cmd, t, st, rc, NULL, NULL)) {
    free(l);
    return -1;
  }
  if (n)
    qsort(l, (size_t)n, sizeof *l, rp_lane_cmp);
  *lanes = l;
  *more = (n > RP_MAXLANES ? n - RP_MAXLANES : 0) + lost;
  return n > RP_MAXLANES ? RP_MAXLANES : n;
}

/* The zero-duration user markers (pid, tid, start, text), first by time, at
 * most RP_MAXMARKS (sqlite3_malloc'd SQL). */
static char *rp_marks_sql(const struct rpdtool_trace *t) {
  return sqlite3_mprintf("SELECT A.pid, A.tid, A.start, G.string FROM rocpd_api A JOIN %s G ON "
                         "G.id = A.args_id WHERE A.start = A.end AND A.apiName_id IN (SELECT id "
                         "FROM rocpd_string WHERE string = 'UserMarker') ORDER BY A.start "
                         "LIMIT %d",
                         t->has_ustring ? "rocpd_ustring" : "rocpd_string", RP_MAXMARKS);
}

/* Draws lanes from y on as runs of busy pixels, labelled "<what> a <sub> b"
 * (with the node of a merged trace, a / stride); returns the next y. */
static int rp_draw_lanes(FILE *f, const struct rp_lane *lanes, int n, int y, const char *what,
                         const char *sub, int64_t stride, const char *color) {
  for (int i = 0; i < n; i++, y += RP_LANE + 4) {
    fprintf(f, "<text x=\"0\" y=\"%d\">", y + RP_LANE - 3);
    int64_t a = lanes[i].a;
    if (stride > 0 && a >= stride) /* a merged trace: the node is encoded (napi, nop) */
      fprintf(f, "node %lld ", (long long)(a / stride)), a %= stride;
    if (lanes[i].name[0]) {
      /* the label has room for the name and the tid; the hover title says all */
      fputs("<title>", f);
      rp_esc(f, lanes[i].pname[0] ? lanes[i].pname : "process");
      fprintf(f, " (%s %lld), ", what, (long long)a);
      rp_esc(f, lanes[i].name);
      fprintf(f, " (%s %lld)</title>", sub, (long long)lanes[i].b);
      rp_esc(f, lanes[i].name);
      fprintf(f, " (%lld)", (long long)lanes[i].b);
    } else {
      fprintf(f, "%s %lld %s %lld", what, (long long)a, sub, (long long)lanes[i].b);
    }
    fprintf(f, "</text><rect x=\"150\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f3f3f3\"/>", y,
            RP_WIDTH, RP_LANE);
    for (int x = 0; x < RP_WIDTH;) {
      if (!lanes[i].px[x]) {
        x++;
        continue;
      }
      int e = x;
      while (e < RP_WIDTH && lanes[i].px[e])
        e++;
      fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>", 150 + x, y,
              e - x, RP_LANE, color);
      x = e;
    }
    fputc('\n', f);
  }
  return y;
}

/* Reads into buf the name nano_thread holds for (pid, tid), "" when none.
 * 0, or -1 on SQLite error. */
static int rp_name_of(sqlite3_stmt *st, int64_t pid, int64_t tid, char *buf, size_t len) {
  buf[0] = 0;
  if (sqlite3_reset(st) != SQLITE_OK || sqlite3_bind_int64(st, 1, pid) != SQLITE_OK ||
      sqlite3_bind_int64(st, 2, tid) != SQLITE_OK)
    return -1;
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW && sqlite3_column_text(st, 0))
    snprintf(buf, len, "%s", (const char *)sqlite3_column_text(st, 0));
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

/* Fills the thread and process names of the first n thread lanes from
 * nano_thread (when the trace has it). 0, or -1 after printing the error. */
static int rp_thread_names(const char *cmd, const struct rpdtool_trace *t, struct rp_lane *l,
                           int n) {
  if (!t->has_names || n <= 0)
    return 0;
  sqlite3_stmt *st =
      rpdtool_prepare(cmd, t, "SELECT name FROM nano_thread WHERE pid=?1 AND tid=?2");
  if (!st)
    return -1;
  int ret = 0;
  for (int i = 0; i < n && !ret; i++)
    ret = rp_name_of(st, l[i].a, l[i].b, l[i].name, sizeof l[i].name) ||
          rp_name_of(st, l[i].a, l[i].a % t->pid_stride, l[i].pname, sizeof l[i].pname);
  if (ret)
    rpdtool_err(cmd, "%s: query failed: %s", t->path, sqlite3_errmsg(t->db));
  sqlite3_finalize(st);
  return ret ? -1 : 0;
}

/* The SVG timeline: thread lanes, GPU queue lanes, marks. */
static int rp_timeline(const char *cmd, const struct rpdtool_trace *t, FILE *f, int64_t lo,
                       int64_t hi) {
  struct rp_lane *cpu = NULL, *gpu = NULL;
  int ret = -1, mc = 0, mg = 0;
  int nc = rp_lanes(cmd, t, "SELECT pid, tid, start, end FROM rocpd_api", lo, hi, &cpu, &mc);
  int ng = nc < 0 ? -1
                  : rp_lanes(cmd, t, "SELECT gpuId, queueId, start, end FROM rocpd_op", lo, hi,
                             &gpu, &mg);
  if (ng < 0 || rp_thread_names(cmd, t, cpu, nc) != 0)
    goto out;
  int height = (nc + ng) * (RP_LANE + 4) + 40;
  fprintf(f,
          "<h2 id=timeline>Timeline</h2><p class=muted>One lane per thread (calls and "
          "ranges) and per GPU queue (ops); a drawn pixel had activity. Marks are the red "
          "ticks (hover for the text).</p>\n<svg id=timeline-svg "
          "xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
          "viewBox=\"0 0 %d %d\">\n",
          RP_WIDTH + 160, height, RP_WIDTH + 160, height);
  int64_t gstride = an_meta_int(t->db, "gpu_stride", 0);
  int y = rp_draw_lanes(f, cpu, nc, 4, "pid", "tid", t->pid_stride, "#4a90d9");
  int ytop = 4;
  y = rp_draw_lanes(f, gpu, ng, y, "gpu", "queue", gstride, "#e39b2d");
  /* Marks: zero-duration user markers, on their thread's lane. */
  char *sql = rp_marks_sql(t);
  sqlite3_stmt *st = sql ? rpdtool_prepare(cmd, t, sql) : NULL;
  sqlite3_free(sql);
  if (!st)
    goto out;
  int rc;
  double scale = hi > lo ? (double)RP_WIDTH / (double)rpdtool_sub(hi, lo) : 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t pid = sqlite3_column_int64(st, 0), tid = sqlite3_column_int64(st, 1);
    int lane = -1;
    for (int i = 0; i < nc && lane < 0; i++)
      if (cpu[i].a == pid && cpu[i].b == tid)
        lane = i;
    if (lane < 0)
      continue;
    double xm = rp_x(sqlite3_column_int64(st, 2), lo, scale);
    if (xm < 0 || xm >= RP_WIDTH)
      continue;
    int x = 150 + (int)xm;
    int ly = ytop + lane * (RP_LANE + 4);
    fprintf(f, "<path class=mark d=\"M%d %d l-4 -6 h8 z\" fill=\"#d0021b\"><title>", x, ly + 6);
    rp_esc(f, (const char *)sqlite3_column_text(st, 3));
    fputs("</title></path>", f);
  }
  if (rpdtool_done(cmd, t, st, rc, NULL, NULL))
    goto out;
  fprintf(f, "\n<text x=\"150\" y=\"%d\">", y + 14);
  rp_dur(f, 0);
  fprintf(f, "</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">", RP_WIDTH + 150, y + 14);
  rp_dur(f, (double)rpdtool_sub(hi, lo));
  fputs("</text></svg>\n", f);
  if (mc || mg)
    fprintf(f,
            "<p class=muted>%d thread lanes and %d GPU queue lanes not drawn (the first %d "
            "of each kind are).</p>\n",
            mc, mg, RP_MAXLANES);
  ret = 0;
out:
  free(cpu);
  free(gpu);
  return ret;
}

/* ---- top ops ----------------------------------------------------------- */

/* The top GPU ops, grouped as the top view does. */
static int rp_ops(const char *cmd, const struct rpdtool_trace *t, FILE *f) {
  char *sql = sqlite3_mprintf(
      "SELECT CASE WHEN D.string = '' OR D.string IS NULL THEN T.string ELSE D.string END AS "
      "name, count(*), sum(O.end - O.start), sum(O.end - O.start) * 100.0 / (SELECT "
      "sum(end - start) FROM rocpd_op) FROM rocpd_op O LEFT JOIN rocpd_string D ON D.id = "
      "O.description_id LEFT JOIN rocpd_string T ON T.id = O.opType_id GROUP BY name ORDER BY 3 "
      "DESC LIMIT %d",
      RP_TOP);
  sqlite3_stmt *st = sql ? rpdtool_prepare(cmd, t, sql) : NULL;
  sqlite3_free(sql);
  if (!st)
    return -1;
  fprintf(f, "<h2 id=ops>Top GPU kernels and ops</h2><table class=sortable><thead><tr>"
             "<th>name</th><th>calls</th><th>total</th><th>average</th><th>%% of GPU time</th>"
             "</tr></thead><tbody>\n");
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t calls = sqlite3_column_int64(st, 1);
    double tot = sqlite3_column_double(st, 2);
    fputs("<tr><td>", f);
    rp_esc(f, (const char *)sqlite3_column_text(st, 0));
    fprintf(f, "</td><td class=n data-v=\"%lld\">%lld</td>", (long long)calls, (long long)calls);
    rp_dur_cell(f, tot);
    rp_dur_cell(f, calls ? tot / (double)calls : 0);
    fprintf(f, "<td class=n data-v=\"%.4f\">%.2f</td></tr>\n", sqlite3_column_double(st, 3),
            sqlite3_column_double(st, 3));
  }
  fputs("</tbody></table>\n", f);
  return rpdtool_done(cmd, t, st, rc, NULL, NULL);
}

/* ---- autograd ---------------------------------------------------------- */

/* The autograd operator -> kernel -> sizes tree (autogradKernel). */
static int rp_autograd(const char *cmd, const struct rpdtool_trace *t, FILE *f) {
  fputs("<h2 id=autograd>Autograd operators</h2>\n", f);
  int have = nano_rpdfile_has_object(t->db, "autogradKernel");
  if (have < 0) {
    rpdtool_err(cmd, "%s: %s", t->path, sqlite3_errmsg(t->db));
    return -1;
  }
  if (!have) {
    fputs("<p class=muted>No autograd tables in this file: run <code>rpd autograd FILE</code> "
          "first (PyTorch traces with emit_nvtx ranges).</p>\n",
          f);
    return 0;
  }
  sqlite3_stmt *ops = rpdtool_prepare(cmd, t,
                                      "SELECT autogradName, sum(calls), sum(total_gpu) FROM "
                                      "autogradKernel GROUP BY 1 ORDER BY 3 DESC, 1");
  sqlite3_stmt *ks =
      ops ? rpdtool_prepare(cmd, t,
                            "SELECT kernelName, sum(calls), sum(total_gpu) FROM "
                            "autogradKernel WHERE autogradName = ?1 GROUP BY 1 ORDER BY 3 "
                            "DESC, 1")
          : NULL;
  sqlite3_stmt *sz =
      ks ? rpdtool_prepare(cmd, t,
                           "SELECT sizes, calls, avg_gpu, total_gpu FROM "
                           "autogradKernel WHERE autogradName = ?1 AND kernelName = ?2 "
                           "ORDER BY total_gpu DESC, sizes")
         : NULL;
  if (!sz) {
    sqlite3_finalize(ops);
    sqlite3_finalize(ks);
    return -1;
  }
  fputs("<p class=muted>GPU time of the kernels launched directly inside each operator's "
        "range (<code>autogradKernel</code>), operator &rarr; kernel &rarr; tensor sizes."
        "</p><button id=ag-expand>expand all</button><button id=ag-collapse>collapse all"
        "</button>\n",
        f);
  int rc, n = 0, ok = 1;
  while (ok && (rc = sqlite3_step(ops)) == SQLITE_ROW) {
    const char *op = (const char *)sqlite3_column_text(ops, 0);
    fputs(n ? "<details class=ag-op><summary>" : "<details class=ag-op open><summary>", f);
    rp_esc(f, op);
    fprintf(f, " <span>%lld kernel calls, ", (long long)sqlite3_column_int64(ops, 1));
    rp_dur(f, sqlite3_column_double(ops, 2));
    fputs("</span></summary>\n", f);
    n++;
    sqlite3_reset(ks);
    ok = sqlite3_bind_text(ks, 1, op, -1, SQLITE_TRANSIENT) == SQLITE_OK;
    int rk;
    while (ok && (rk = sqlite3_step(ks)) == SQLITE_ROW) {
      const char *k = (const char *)sqlite3_column_text(ks, 0);
      fputs("<details class=ag-kernel><summary>", f);
      rp_esc(f, k);
      fprintf(f, " <span>%lld calls, ", (long long)sqlite3_column_int64(ks, 1));
      rp_dur(f, sqlite3_column_double(ks, 2));
      fputs("</span></summary><table><thead><tr><th>sizes</th><th>calls</th><th>average GPU"
            "</th><th>total GPU</th></tr></thead><tbody>\n",
            f);
      sqlite3_reset(sz);
      ok = sqlite3_bind_text(sz, 1, op, -1, SQLITE_TRANSIENT) == SQLITE_OK &&
           sqlite3_bind_text(sz, 2, k, -1, SQLITE_TRANSIENT) == SQLITE_OK;
      int rs;
      while (ok && (rs = sqlite3_step(sz)) == SQLITE_ROW) {
        fputs("<tr><td>", f);
        rp_esc(f, (const char *)sqlite3_column_text(sz, 0));
        fprintf(f, "</td><td class=n>%lld</td>", (long long)sqlite3_column_int64(sz, 1));
        rp_dur_cell(f, sqlite3_column_double(sz, 2));
        rp_dur_cell(f, sqlite3_column_double(sz, 3));
        fputs("</tr>\n", f);
      }
      ok = ok && rs == SQLITE_DONE;
      fputs("</tbody></table></details>\n", f);
    }
    ok = ok && rk == SQLITE_DONE;
    fputs("</details>\n", f);
  }
  if (ok && rc != SQLITE_DONE)
    ok = 0;
  if (!n && ok)
    fputs("<p class=muted>No kernels inside autograd operators.</p>\n", f);
  if (!ok)
    rpdtool_err(cmd, "%s: autograd query failed: %s", t->path, sqlite3_errmsg(t->db));
  sqlite3_finalize(ops);
  sqlite3_finalize(ks);
  sqlite3_finalize(sz);
  return ok ? 0 : -1;
}

/* ---- marks ------------------------------------------------------------- */

/* The marks table. */
static int rp_marks(const char *cmd, const struct rpdtool_trace *t, FILE *f, int64_t lo) {
  char *sql = rp_marks_sql(t);
  sqlite3_stmt *st = sql ? rpdtool_prepare(cmd, t, sql) : NULL;
  sqlite3_free(sql);
  if (!st)
    return -1;
  fputs("<h2 id=marks>Marks</h2><table class=sortable><thead><tr><th>time from start</th>"
        "<th>pid</th><th>tid</th><th>text</th></tr></thead><tbody>\n",
        f);
  int rc, n = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    fputs("<tr>", f);
    rp_dur_cell(f, (double)rpdtool_sub(sqlite3_column_int64(st, 2), lo));
    fprintf(f, "<td class=n>%lld</td><td class=n>%lld</td><td>",
            (long long)sqlite3_column_int64(st, 0), (long long)sqlite3_column_int64(st, 1));
    rp_esc(f, (const char *)sqlite3_column_text(st, 3));
    fputs("</td></tr>\n", f);
    n++;
  }
  fputs("</tbody></table>\n", f);
  if (!n)
    fputs("<p class=muted>No marks in this trace.</p>\n", f);
  return rpdtool_done(cmd, t, st, rc, NULL, NULL);
}

/* Writes the whole page for trace t to f. 0 or -1 (message printed). */
static int rp_page(const char *cmd, const struct rpdtool_trace *t, FILE *f) {
  int64_t lo = 0, hi = 0;
  if (rpdtool_span(t, &lo, &hi) < 0) {
    rpdtool_err(cmd, "%s: cannot read the time span: %s", t->path, sqlite3_errmsg(t->db));
    return -1;
  }
  fputs("<!DOCTYPE html>\n<html lang=en><head><meta charset=\"utf-8\"><title>rpd report: ", f);
  rp_esc(f, t->path);
  fprintf(f, "</title><style>%s</style></head>\n<body>\n<h1>Trace report: ", rp_css);
  rp_esc(f, t->path);
  fputs("</h1>\n<p class=muted>Written by <code>rpd report</code> (nanoprobe). Times in "
        "ns, µs, ms, s. Click a column header to sort.</p>\n",
        f);
  if (rp_summary(cmd, t, f, lo, hi) || rp_busy(cmd, t, f) || rp_timeline(cmd, t, f, lo, hi) ||
      rp_zoom_timeline(cmd, t, f, lo, hi) || rp_ops(cmd, t, f) || rp_calls(cmd, t, f) ||
      rp_autograd(cmd, t, f) || rp_short_calls(cmd, t, f) || rp_marks(cmd, t, f, lo) ||
      rp_memory(cmd, t, f) || rp_atomics(cmd, t, f))
    return -1;
  fprintf(f, "<script>\n%s</script>\n</body></html>\n", rp_js);
  return 0;
}

int rpd_cmd_report(int argc, char **argv) {
  an_sqlite_setup();
  const char *cmd = argv[0], *in, *out = NULL;
  const struct rpdtool_opt opts[] = {{"output", 'o', &out, NULL}, {NULL, 0, NULL, NULL}};
  int parsed = rpdtool_parse_args(
      argc, argv,
      "usage: rpd report FILE -o OUT.html\n\n"
      "Writes one self-contained HTML page about the trace FILE: summary, GPU busy,\n"
      "a timeline overview, top GPU ops, top calls by inclusive and exclusive time,\n"
      "the autograd operator -> kernel -> sizes tree (after 'rpd autograd'),\n"
      "the short calls summed per function (traces made with --min-duration),\n"
      "marks, the memory analyses of instrumented kernels, and the host atomics\n"
      "per kind and busiest site. FILE is only read.\n",
      opts, &in);
  if (parsed != RPDTOOL_PARSED)
    return parsed;
  if (!out)
    return rpdtool_usage(cmd, "missing -o OUT.html");
  struct rpdtool_trace t;
  int ret = rpdtool_open_view(cmd, in, &t);
  if (ret)
    return ret;
  struct nano_outfile of;
  char err[512];
  if (nano_outfile_open(&of, out, err, sizeof err) != 0) {
    ret = rpdtool_err(cmd, "%s", err);
  } else if (rp_page(cmd, &t, of.f)) {
    nano_outfile_abort(&of);
    ret = RPDTOOL_EXIT_FAIL;
  } else if (nano_outfile_commit(&of, err, sizeof err) != 0) {
    ret = rpdtool_err(cmd, "%s", err);
  } else if (strcmp(out, "-") != 0) {
    printf("rpd %s: wrote %s\n", cmd, out);
  }
  rpdtool_close(&t);
  return ret;
}
