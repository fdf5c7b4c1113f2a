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
 *                 and where a site was inlined from
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
#include "nano/hash.h"
#include "nano/outfile.h"
#include "nano/text.h"
#include "report.h"

#define RP_XSTR(x) #x
#define RP_STR(x) RP_XSTR(x)
#define RP_WIDTH 1100        /* timeline plot width, px */
#define RP_LANE 14           /* lane height, px */
#define RP_MAXLANES 48       /* lanes drawn at most (per kind) */
#define RP_MAXMARKS 300      /* marks drawn at most */
#define RP_MAXTRACK 4096     /* lanes tracked at most (the first RP_MAXLANES drawn) */
#define RP_TOP 25            /* rows of the top tables */
#define RP_MEM_ROWS 10       /* locations per dispatch in the memory section */
#define RP_MEM_DISPATCHES 50 /* dispatches in the memory section at most */
#define RP_HEAT_PAGES 256    /* pages drawn in a heatmap strip at most */
#define RP_HEAT_CELL 4       /* px per page in the strip */
#define RP_BLOCK_LANES 64    /* units drawn as lanes of a dispatch's blocks at most */
#define RP_BLOCKS_DRAWN 8192 /* blocks drawn per dispatch at most */
#define RP_BLOCK_WIDTH 800   /* px of a dispatch's block lanes */
#define RP_BLOCK_LANE 10     /* px per lane */
#define RP_SRC_LINE 240      /* characters of a source line shown at most */
#define RP_FLAME_NODES 20000 /* call paths kept in the call tree at most */
#define RP_FLAME_MIN 0.001   /* a path narrower than this share of all is not drawn */

/* Writes s HTML-escaped, as valid UTF-8 whatever the trace holds: a byte that
 * starts no well-formed sequence, and a control character other than a tab or
 * newline (HTML allows none), become U+FFFD. */
static void rp_esc(FILE *f, const char *s) {
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
static void rp_dur(FILE *f, double ns) {
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
static void rp_dur_cell(FILE *f, double ns) {
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

/* ---- top calls --------------------------------------------------------- */

/* The calls of one label: a call's apiName, a range's text (an autograd range
 * text cut to its operator name). */
struct rp_agg {
  char *label;
  int range;
  int64_t calls, incl, excl, gincl, gpu;
};

/* The report's call walk: aggregates per label in memory. Labels are found
 * through an open-addressing table of agg indexes keyed by (range, label);
 * apiName ids of calls map to their agg through a second one keyed by id. */
struct rp_walk {
  sqlite3_stmt *name, *args; /* string by id: rocpd_string, the args table */
  int64_t *marker;           /* the ids of the string "UserMarker" */
  int nmarker;
  struct rp_agg *agg;
  size_t nagg, capagg;
  int *bylabel;   /* slots: agg index or -1; size cap (power of 2) */
  int64_t *idkey; /* name id per slot of byid */
  int *byid;
  size_t cap;   /* slots of both tables */
  int64_t *acc; /* acc[d]: inclusive GPU time of finished children at depth d+1 */
  int capacc;
  struct {      /* agg and call-tree node of the enclosing call at each depth, */
    int64_t id; /* found once per call */
    int agg, node;
  } * open;
  int capopen;
  struct rp_fnode *fn; /* the call tree; fn[0] is its root */
  int nfn, capfn;
  int fn_full; /* paths past RP_FLAME_NODES were left out */
};

/* A call path of the call tree: its last call's label and the summed
 * inclusive time and count of the calls that ended it. */
struct rp_fnode {
  const char *label; /* the agg's label (stable: agg structs move, labels do not) */
  int agg, child, next;
  int64_t incl, calls;
};

/* FNV-1a of (range, label). */
static uint64_t rp_hash(int range, const char *s, size_t len) {
  return nano_fnv64(NANO_FNV64_OFFSET ^ (uint64_t)range, s, len);
}

/* Rebuilds both tables with twice the slots. 0 or -1. */
static int rp_grow(struct rp_walk *w) {
  size_t cap = w->cap ? 2 * w->cap : 1024;
  int *bl = malloc(cap * sizeof *bl), *bi = malloc(cap * sizeof *bi);
  int64_t *ik = malloc(cap * sizeof *ik);
  if (!bl || !bi || !ik) {
    free(bl), free(bi), free(ik);
    return -1;
  }
  for (size_t i = 0; i < cap; i++)
    bl[i] = bi[i] = -1;
  for (size_t a = 0; a < w->nagg; a++) {
    const struct rp_agg *g = &w->agg[a];
    size_t h = rp_hash(g->range, g->label, strlen(g->label)) & (cap - 1);
    while (bl[h] >= 0)
      h = (h + 1) & (cap - 1);
    bl[h] = (int)a;
  }
  for (size_t i = 0; i < w->cap; i++)
    if (w->byid[i] >= 0) {
      size_t h = ((uint64_t)w->idkey[i] * 11400714819323198485ull) & (cap - 1);
      while (bi[h] >= 0)
        h = (h + 1) & (cap - 1);
      bi[h] = w->byid[i];
      ik[h] = w->idkey[i];
    }
  free(w->bylabel), free(w->byid), free(w->idkey);
  w->bylabel = bl, w->byid = bi, w->idkey = ik, w->cap = cap;
  return 0;
}

/* The agg of (range, label[0..len)), added when new. Index or -1. */
static int rp_label(struct rp_walk *w, int range, const char *label, size_t len) {
  if (2 * (w->nagg + 1) > w->cap && rp_grow(w) != 0)
    return -1;
  size_t h = rp_hash(range, label, len) & (w->cap - 1);
  for (; w->bylabel[h] >= 0; h = (h + 1) & (w->cap - 1)) {
    const struct rp_agg *g = &w->agg[w->bylabel[h]];
    if (g->range == range && !strncmp(g->label, label, len) && !g->label[len])
      return w->bylabel[h];
  }
  if (w->nagg == w->capagg) {
    size_t c = w->capagg ? 2 * w->capagg : 256;
    struct rp_agg *a = realloc(w->agg, c * sizeof *a);
    if (!a)
      return -1;
    w->agg = a;
    w->capagg = c;
  }
  struct rp_agg *g = &w->agg[w->nagg];
  memset(g, 0, sizeof *g);
  if (!(g->label = strndup(label, len)))
    return -1;
  g->range = range;
  w->bylabel[h] = (int)w->nagg;
  return (int)w->nagg++;
}

/* The text of string `id` through statement st (NULL when absent). */
static const char *rp_string(sqlite3_stmt *st, int64_t id) {
  sqlite3_reset(st);
  if (sqlite3_bind_int64(st, 1, id) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW)
    return NULL;
  return (const char *)sqlite3_column_text(st, 0);
}

/* 1 when string id is "UserMarker" (a range or mark of the user's). */
static int rp_is_marker(const struct rp_walk *w, int64_t id) {
  for (int i = 0; i < w->nmarker; i++)
    if (id == w->marker[i])
      return 1;
  return 0;
}

/* The agg of a call: by its args text for a range, by its apiName else. */
static int rp_agg_of(struct rp_walk *w, const struct an_frame *f) {
  if (rp_is_marker(w, f->name_id)) {
    const char *s = rp_string(w->args, f->args_id);
    if (!s)
      s = "";
    const char *cut = strstr(s, ", seq = ");
    if (!cut || cut == s)
      cut = strstr(s, ", op_id = ");
    size_t len = cut && cut > s ? (size_t)(cut - s) : strlen(s);
    return rp_label(w, 1, s, len);
  }
  if (2 * (w->nagg + 1) > w->cap && rp_grow(w) != 0)
    return -1;
  size_t h = ((uint64_t)f->name_id * 11400714819323198485ull) & (w->cap - 1);
  for (; w->byid[h] >= 0; h = (h + 1) & (w->cap - 1))
    if (w->idkey[h] == f->name_id)
      return w->byid[h];
  const char *s = rp_string(w->name, f->name_id);
  int a = rp_label(w, 0, s ? s : "", s ? strlen(s) : 0);
  if (a < 0)
    return -1;
  /* rp_label may have grown the tables: find the free slot again. */
  h = ((uint64_t)f->name_id * 11400714819323198485ull) & (w->cap - 1);
  while (w->byid[h] >= 0)
    h = (h + 1) & (w->cap - 1);
  w->byid[h] = a;
  w->idkey[h] = f->name_id;
  return a;
}

/* The call-tree node under `parent` for agg a (created when new; `parent`
 * itself when the tree is full). -1 when out of memory. */
static int rp_fnode_of(struct rp_walk *w, int parent, int a) {
  for (int c = w->fn[parent].child; c >= 0; c = w->fn[c].next)
    if (w->fn[c].agg == a)
      return c;
  if (w->nfn == RP_FLAME_NODES) {
    w->fn_full = 1;
    return parent;
  }
  if (w->nfn == w->capfn) {
    int cap = w->capfn ? 2 * w->capfn : 256;
    struct rp_fnode *m = realloc(w->fn, (size_t)cap * sizeof *m);
    if (!m)
      return -1;
    w->fn = m;
    w->capfn = cap;
  }
  struct rp_fnode *n = &w->fn[w->nfn];
  n->label = w->agg[a].label;
  n->agg = a;
  n->child = -1;
  n->next = w->fn[parent].child;
  n->incl = n->calls = 0;
  w->fn[parent].child = w->nfn;
  return w->nfn++;
}

/* Brings w->open up to date for the enclosing calls stack[0..n-2] (their agg
 * and call-tree node, found once per call), and sets *nested when one of
 * them has agg a (a recursive call: its time is inside that one's already).
 * Returns the tree node of the enclosing call (0, the root, at the top), or
 * -1 on error. */
static int rp_enclosing(struct rp_walk *w, const struct an_frame *stack, int n, int a,
                        int *nested) {
  if (n > w->capopen) {
    int cap = 2 * n + 16;
    void *p = realloc(w->open, (size_t)cap * sizeof *w->open);
    if (!p)
      return -1;
    w->open = p;
    for (int d = w->capopen; d < cap; d++)
      w->open[d].id = -1;
    w->capopen = cap;
  }
  *nested = 0;
  int node = 0;
  for (int d = 0; d < n - 1; d++) {
    if (w->open[d].id != stack[d].id) {
      int ad = rp_agg_of(w, &stack[d]);
      int nd = ad < 0 ? -1 : rp_fnode_of(w, node, ad);
      if (nd < 0)
        return -1;
      w->open[d].id = stack[d].id;
      w->open[d].agg = ad;
      w->open[d].node = nd;
      w->open[d + 1].id = -1; /* a new call here: what was open below it is not */
    }
    node = w->open[d].node;
    if (w->open[d].agg == a)
      *nested = 1;
  }
  return node;
}

/* an_visit_fn of the report. A recursive call adds its calls and own times
 * but not its inclusive ones (they are in its outermost call's); a mark (a
 * user marker of no duration) is not a call: it is in the marks section. */
static int rp_visit(void *ctx, const struct an_frame *stack, int n, int64_t cpu, int64_t gpu,
                    int64_t pid, int64_t tid) {
  (void)pid, (void)tid;
  struct rp_walk *w = ctx;
  if (n >= w->capacc) {
    int cap = 2 * n + 16;
    int64_t *a = realloc(w->acc, (size_t)cap * sizeof *a);
    if (!a)
      return 1;
    memset(a + w->capacc, 0, (size_t)(cap - w->capacc) * sizeof *a);
    w->acc = a;
    w->capacc = cap;
  }
  const struct an_frame *f = &stack[n - 1];
  int64_t gincl = rpdtool_add(gpu, w->acc[n]);
  w->acc[n] = 0;
  w->acc[n - 1] = rpdtool_add(w->acc[n - 1], gincl);
  if (f->end == f->start && rp_is_marker(w, f->name_id))
    return 0;
  int a = rp_agg_of(w, f);
  if (a < 0)
    return 1;
  int nested;
  int parent = rp_enclosing(w, stack, n, a, &nested);
  int node = parent < 0 ? -1 : rp_fnode_of(w, parent, a);
  if (node < 0)
    return 1;
  if (node != parent) { /* else the tree is full: the path is left out */
    w->fn[node].incl = rpdtool_add(w->fn[node].incl, rpdtool_sub(f->end, f->start));
    w->fn[node].calls++;
  }
  struct rp_agg *g = &w->agg[a];
  g->calls++;
  if (!nested) {
    g->incl = rpdtool_add(g->incl, rpdtool_sub(f->end, f->start));
    g->gincl = rpdtool_add(g->gincl, gincl);
  }
  g->excl = rpdtool_add(g->excl, cpu);
  g->gpu = rpdtool_add(g->gpu, gpu);
  return 0;
}

/* Sort orders of the top tables: by inclusive, by exclusive time. */
static int rp_by_incl(const void *pa, const void *pb) {
  const struct rp_agg *a = pa, *b = pb;
  return a->incl != b->incl ? (a->incl > b->incl ? -1 : 1) : strcmp(a->label, b->label);
}
static int rp_by_excl(const void *pa, const void *pb) {
  const struct rp_agg *a = pa, *b = pb;
  return a->excl != b->excl ? (a->excl > b->excl ? -1 : 1) : strcmp(a->label, b->label);
}

/* One top-calls table. */
static void rp_calls_table(FILE *f, struct rp_walk *w, const char *id, const char *title,
                           int (*order)(const void *, const void *)) {
  if (w->nagg)
    qsort(w->agg, w->nagg, sizeof *w->agg, order);
  fprintf(f,
          "<h2 id=calls-%s>%s</h2><table class=sortable><thead><tr><th>call or range</th>"
          "<th>kind</th><th>calls</th><th>inclusive CPU</th><th>exclusive CPU</th>"
          "<th>inclusive GPU</th><th>own GPU</th></tr></thead><tbody>\n",
          id, title);
  for (size_t i = 0; i < w->nagg && i < RP_TOP; i++) {
    const struct rp_agg *g = &w->agg[i];
    fputs("<tr><td>", f);
    rp_esc(f, g->label);
    fprintf(f, "</td><td>%s</td><td class=n data-v=\"%lld\">%lld</td>", g->range ? "range" : "call",
            (long long)g->calls, (long long)g->calls);
    rp_dur_cell(f, (double)g->incl);
    rp_dur_cell(f, (double)g->excl);
    rp_dur_cell(f, (double)g->gincl);
    rp_dur_cell(f, (double)g->gpu);
    fputs("</tr>\n", f);
  }
  fputs("</tbody></table>\n", f);
}

/* Writes node i of the call tree and its children as nested boxes, each as
 * wide as its share of its parent's inclusive time (parent_incl), children
 * narrower than RP_FLAME_MIN of the whole (total) left out. */
static void rp_flame_node(FILE *f, const struct rp_walk *w, int i, int64_t parent_incl,
                          int64_t total, int depth) {
  const struct rp_fnode *n = &w->fn[i];
  fprintf(f, "<div class=fn style=\"width:%.3f%%\" data-label=\"",
          parent_incl > 0 ? 100.0 * (double)n->incl / (double)parent_incl : 0);
  rp_esc(f, n->label);
  fprintf(f, "\" data-depth=%d data-incl=%lld><div class=fl title=\"", depth, (long long)n->incl);
  rp_esc(f, n->label);
  fputs(": ", f);
  rp_dur(f, (double)n->incl);
  fprintf(f, " (%.1f%% of all), %lld calls\">", 100.0 * (double)n->incl / (double)total,
          (long long)n->calls);
  rp_esc(f, n->label);
  fputs("</div><div class=fc>", f);
  for (int c = n->child; c >= 0; c = w->fn[c].next)
    if ((double)w->fn[c].incl >= RP_FLAME_MIN * (double)total)
      rp_flame_node(f, w, c, n->incl, total, depth + 1);
  fputs("</div></div>", f);
}

/* The call tree as an icicle: outermost calls on top, callees below. */
static void rp_flame(FILE *f, const struct rp_walk *w) {
  int64_t total = 0;
  for (int c = w->fn[0].child; c >= 0; c = w->fn[c].next)
    total = rpdtool_add(total, w->fn[c].incl);
  fputs("<h2 id=flame>Call tree</h2><p class=muted>Calls and ranges by call path, all threads "
        "together: each box is as wide as its share of the time of the box above it (outermost "
        "calls share all the calls' time); what a box leaves uncovered below it is its own time. "
        "Hover a box for its time and calls.</p>\n",
        f);
  if (total <= 0) {
    fputs("<p class=muted>No calls or ranges with a duration.</p>\n", f);
    return;
  }
  fputs("<div class=flame>", f);
  for (int c = w->fn[0].child; c >= 0; c = w->fn[c].next)
    if ((double)w->fn[c].incl >= RP_FLAME_MIN * (double)total)
      rp_flame_node(f, w, c, total, total, 0);
  fputs("</div>\n", f);
  if (w->fn_full)
    fprintf(f,
            "<p class=muted>More than %d call paths: the ones found after those are left "
            "out.</p>\n",
            RP_FLAME_NODES);
}

/* Walks the calls (the walk of `rpd callstack`), groups them by label and
 * writes the two top tables and the call tree. */
static int rp_calls(const char *cmd, const struct rpdtool_trace *t, FILE *f) {
  struct rp_walk w = {0};
  int ret = -1;
  char *asql = sqlite3_mprintf("SELECT string FROM %s WHERE id = ?1",
                               t->has_ustring ? "rocpd_ustring" : "rocpd_string");
  sqlite3_stmt *m = NULL;
  if (!asql || !(w.args = rpdtool_prepare(cmd, t, asql)) ||
      !(w.name = rpdtool_prepare(cmd, t, "SELECT string FROM rocpd_string WHERE id = ?1")) ||
      !(m = rpdtool_prepare(cmd, t, "SELECT id FROM rocpd_string WHERE string = 'UserMarker'")))
    goto out;
  int rc;
  while ((rc = sqlite3_step(m)) == SQLITE_ROW) {
    int64_t *x = realloc(w.marker, (size_t)(w.nmarker + 1) * sizeof *x);
    if (!x)
      goto oom;
    w.marker = x;
    w.marker[w.nmarker++] = sqlite3_column_int64(m, 0);
  }
  if (rc != SQLITE_DONE) {
    rpdtool_err(cmd, "%s: %s", t->path, sqlite3_errmsg(t->db));
    goto out;
  }
  if (rp_grow(&w) != 0)
    goto oom;
  w.fn = malloc(256 * sizeof *w.fn);
  if (!w.fn)
    goto oom;
  w.capfn = 256;
  w.nfn = 1;
  w.fn[0] = (struct rp_fnode){"", -1, -1, -1, 0, 0};
  rc = an_walk(cmd, t, "report", rp_visit, &w);
  if (rc > 0)
    goto oom;
  if (rc)
    goto out;
  rp_calls_table(f, &w, "incl", "Top calls and ranges by inclusive CPU time", rp_by_incl);
  rp_calls_table(f, &w, "excl", "Top calls and ranges by exclusive CPU time", rp_by_excl);
  rp_flame(f, &w);
  ret = 0;
  goto out;
oom:
  rpdtool_err(cmd, "out of memory (or a string lookup failed: %s)", sqlite3_errmsg(t->db));
out:
  sqlite3_free(asql);
  sqlite3_finalize(m);
  sqlite3_finalize(w.args);
  sqlite3_finalize(w.name);
  for (size_t i = 0; i < w.nagg; i++)
    free(w.agg[i].label);
  free(w.agg), free(w.bylabel), free(w.byid), free(w.idkey), free(w.acc), free(w.marker);
  free(w.open);
  free(w.fn);
  return ret;
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
static int rp_memory(const char *cmd, const struct rpdtool_trace *t, FILE *f) {
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
static int rp_atomic_callers(const char *cmd, const struct rpdtool_trace *t, FILE *f) {
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
static int rp_atomics(const char *cmd, const struct rpdtool_trace *t, FILE *f) {
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
static int rp_short_calls(const char *cmd, const struct rpdtool_trace *t, FILE *f) {
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
