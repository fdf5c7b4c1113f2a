/*
 * report_timeline.c: the zoomable timeline of `rpd report`.
 *
 * The page gets the longest RP_TL_SLICES calls, ranges and GPU ops as one
 * JSON document in a <script type="application/json"> block, and a canvas
 * that draws them with their names: one lane per thread, its calls and
 * ranges nested one row per depth, then one lane per GPU queue. The wheel
 * zooms around the pointer, dragging pans, a double click shows everything;
 * hovering a slice shows its name and duration. Nothing is fetched.
 *
 * Document:
 *   {"span": ns, "lanes": [{"name": text, "rows": depth count}],
 *    "names": [text...],
 *    "s": [[lane, depth, start ns from the trace start, duration ns, name index]...],
 *    "total": slices in the trace, "kept": slices in "s"}
 *
 * Depth is found per thread from the kept slices sorted by start (longest
 * first at equal starts): a slice is one deeper than the open slices that
 * contain it. Keeping the longest slices keeps every parent of a kept slice.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nano/json.h"
#include "nano/strtab.h"
#include "report.h"

#define RP_TL_SLICES 50000 /* slices on the page at most: the longest */
#define RP_TL_DEPTH 64     /* nesting rows per thread at most (deeper: the last row) */

/* One kept slice while the document is built. */
struct rp_tl_slice {
  int64_t a, b, start, end; /* a, b: pid, tid (kind 0) or gpuId, queueId (kind 1) */
  int kind;
  int name; /* index into the names */
  int lane, depth;
};

/* The names by index, interned through tab. */
struct rp_tl_names {
  char **v;
  size_t cap; /* entries of v; tab.n are used */
  struct nano_strtab tab;
};

static const char *rp_tl_name_at(const void *owner, uint32_t i) {
  return ((const struct rp_tl_names *)owner)->v[i];
}

/* The index of name s, added when new; -1 when out of memory. */
static int rp_tl_intern(struct rp_tl_names *t, const char *s) {
  uint32_t i = nano_strtab_find(&t->tab, s);
  if (i != NANO_STRTAB_NONE)
    return (int)i;
  if (t->tab.n == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 256;
    char **v = realloc(t->v, cap * sizeof *v);
    if (!v)
      return -1;
    t->v = v;
    t->cap = cap;
  }
  if (!(t->v[t->tab.n] = strdup(s)))
    return -1;
  if ((i = nano_strtab_add(&t->tab, s)) == NANO_STRTAB_NONE) {
    free(t->v[t->tab.n]);
    return -1;
  }
  return (int)i;
}

/* Lane order (threads, then GPU queues), then start, the enclosing first. */
static int rp_tl_cmp(const void *pa, const void *pb) {
  const struct rp_tl_slice *x = pa, *y = pb;
  if (x->kind != y->kind)
    return x->kind - y->kind;
  if (x->a != y->a)
    return x->a < y->a ? -1 : 1;
  if (x->b != y->b)
    return x->b < y->b ? -1 : 1;
  if (x->start != y->start)
    return x->start < y->start ? -1 : 1;
  return x->end > y->end ? -1 : x->end < y->end;
}

/* Whether slices x and y are on one lane. */
static int rp_tl_same_lane(const struct rp_tl_slice *x, const struct rp_tl_slice *y) {
  return x->kind == y->kind && x->a == y->a && x->b == y->b;
}

/* Writes lane x's label: the thread's OS name and tid when nano_thread has
 * it (names: its lookup statement, or NULL), else "pid P tid T" (with the
 * node of a merged trace); "GPU G queue Q" for ops. */
static void rp_tl_lane_name(FILE *out, const struct rpdtool_trace *t, sqlite3_stmt *names,
                            const struct rp_tl_slice *x) {
  char label[160];
  const unsigned char *name = NULL;
  if (!x->kind && names && sqlite3_reset(names) == SQLITE_OK &&
      sqlite3_bind_int64(names, 1, x->a) == SQLITE_OK &&
      sqlite3_bind_int64(names, 2, x->b) == SQLITE_OK && sqlite3_step(names) == SQLITE_ROW)
    name = sqlite3_column_text(names, 0);
  if (name && *name)
    snprintf(label, sizeof label, "%s (pid %" PRId64 " tid %" PRId64 ")", (const char *)name, x->a,
             x->b);
  else if (x->kind)
    snprintf(label, sizeof label, "GPU %" PRId64 " queue %" PRId64, x->a, x->b);
  else if (t->pid_stride > 0 && x->a >= t->pid_stride)
    snprintf(label, sizeof label, "node %" PRId64 " pid %" PRId64 " tid %" PRId64,
             x->a / t->pid_stride, x->a % t->pid_stride, x->b);
  else
    snprintf(label, sizeof label, "pid %" PRId64 " tid %" PRId64, x->a, x->b);
  nano_json_str(out, label);
}

/* Writes the JSON document into out. 0, or -1 after a message. */
static int rp_tl_document(const char *cmd, const struct rpdtool_trace *t, FILE *out, int64_t lo,
                          int64_t hi) {
  const char *args = t->has_ustring ? "rocpd_ustring" : "rocpd_string";
  char *sql = sqlite3_mprintf(
      "SELECT * FROM (SELECT 0 AS kind, A.pid AS a, A.tid AS b, A.start AS s, A.end AS e, "
      "CASE WHEN N.string = 'UserMarker' THEN G.string ELSE N.string END AS name "
      "FROM rocpd_api A JOIN rocpd_string N ON N.id = A.apiName_id "
      "LEFT JOIN %s G ON G.id = A.args_id WHERE A.end > A.start "
      "UNION ALL SELECT 1, O.gpuId, O.queueId, O.start, O.end, CASE WHEN D.string = '' OR "
      "D.string IS NULL THEN T.string ELSE D.string END FROM rocpd_op O "
      "LEFT JOIN rocpd_string D ON D.id = O.description_id "
      "LEFT JOIN rocpd_string T ON T.id = O.opType_id WHERE O.end > O.start) "
      "ORDER BY e - s DESC LIMIT %d",
      args, RP_TL_SLICES);
  static const char count_sql[] = "SELECT (SELECT count(*) FROM rocpd_api WHERE end > start) + "
                                  "(SELECT count(*) FROM rocpd_op WHERE end > start)";
  sqlite3_stmt *st = NULL, *cnt = NULL, *tnames = NULL;
  struct rp_tl_slice *s = NULL;
  struct rp_tl_names names = {.tab = {.str = rp_tl_name_at, NANO_STRTAB_LIBC}};
  names.tab.owner = &names;
  int *rows = NULL; /* nesting rows per lane */
  size_t n = 0, cap = 0;
  int ret = -1, rc;
  if (!sql)
    goto oom;
  if (sqlite3_prepare_v2(t->db, sql, -1, &st, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(t->db, count_sql, -1, &cnt, NULL) != SQLITE_OK ||
      (t->has_names && sqlite3_prepare_v2(t->db,
                                          "SELECT name FROM nano_thread WHERE pid = ?1 "
                                          "AND tid = ?2",
                                          -1, &tnames, NULL) != SQLITE_OK))
    goto sqlerr;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (n == cap) {
      cap = cap ? 2 * cap : 1024;
      struct rp_tl_slice *m = realloc(s, cap * sizeof *m);
      if (!m)
        goto oom;
      s = m;
    }
    const char *name = (const char *)sqlite3_column_text(st, 5);
    struct rp_tl_slice *x = &s[n++];
    x->kind = sqlite3_column_int(st, 0);
    x->a = sqlite3_column_int64(st, 1);
    x->b = sqlite3_column_int64(st, 2);
    x->start = sqlite3_column_int64(st, 3);
    x->end = sqlite3_column_int64(st, 4);
    if ((x->name = rp_tl_intern(&names, name ? name : "")) < 0)
      goto oom;
  }
  if (rc != SQLITE_DONE || sqlite3_step(cnt) != SQLITE_ROW)
    goto sqlerr;
  int64_t total = sqlite3_column_int64(cnt, 0);
  if (n)
    qsort(s, n, sizeof *s, rp_tl_cmp);

  /* lanes and depths: the ends of the open slices of the current lane */
  int64_t open[RP_TL_DEPTH];
  int lanes = 0;
  if (n && !(rows = calloc(n, sizeof *rows)))
    goto oom;
  for (size_t i = 0; i < n; i++) {
    if (i == 0 || !rp_tl_same_lane(&s[i], &s[i - 1])) {
      lanes++;
      for (int d = 0; d < RP_TL_DEPTH; d++)
        open[d] = INT64_MIN;
    }
    int depth = 0;
    while (depth < RP_TL_DEPTH - 1 && open[depth] > s[i].start)
      depth++;
    open[depth] = s[i].end;
    for (int d = depth + 1; d < RP_TL_DEPTH; d++)
      open[d] = INT64_MIN;
    s[i].lane = lanes - 1;
    s[i].depth = depth;
    if (depth + 1 > rows[lanes - 1])
      rows[lanes - 1] = depth + 1;
  }

  fprintf(out, "{\"span\":%" PRId64 ",\"total\":%" PRId64 ",\"kept\":%zu,\"lanes\":[",
          rpdtool_sub(hi, lo), total, n);
  for (size_t i = 0; i < n; i++)
    if (i == 0 || s[i].lane != s[i - 1].lane) {
      fputs(s[i].lane ? ",{\"name\":" : "{\"name\":", out);
      rp_tl_lane_name(out, t, tnames, &s[i]);
      fprintf(out, ",\"rows\":%d}", rows[s[i].lane]);
    }
  fputs("],\"names\":[", out);
  for (size_t i = 0; i < names.tab.n; i++) {
    if (i)
      fputc(',', out);
    nano_json_str(out, names.v[i]);
  }
  fputs("],\"s\":[", out);
  for (size_t i = 0; i < n; i++)
    fprintf(out, "%s[%d,%d,%" PRId64 ",%" PRId64 ",%d]", i ? "," : "", s[i].lane, s[i].depth,
            rpdtool_sub(s[i].start, lo), rpdtool_sub(s[i].end, s[i].start), s[i].name);
  fputs("]}", out);
  ret = 0;
  goto out;
sqlerr:
  rpdtool_err(cmd, "%s: timeline query failed: %s", t->path, sqlite3_errmsg(t->db));
  goto out;
oom:
  rpdtool_err(cmd, "out of memory building the timeline");
out:
  sqlite3_finalize(st);
  sqlite3_finalize(cnt);
  sqlite3_finalize(tnames);
  sqlite3_free(sql);
  free(s);
  free(rows);
  for (size_t i = 0; i < names.tab.n; i++)
    free(names.v[i]);
  free(names.v);
  nano_strtab_free(&names.tab);
  return ret;
}

/* The timeline's drawing: a canvas per page, driven by the JSON document. */
static const char rp_tl_js[] =
    "(function(){\n"
    "var D=JSON.parse(document.getElementById('tl-data').textContent);\n"
    "var cv=document.getElementById('tl'),tip=document.getElementById('tl-tip');\n"
    "var ROW=16,HEAD=16,LEFT=0,v0=0,v1=Math.max(D.span,1),drag=null;\n"
    "var byLane=D.lanes.map(function(){return [];});\n"
    "D.s.forEach(function(x){byLane[x[0]].push(x);});\n"
    "var tops=[],y=0;D.lanes.forEach(function(l){tops.push(y);y+=HEAD+l.rows*ROW+4;});\n"
    "cv.height=Math.max(y,20);cv.setAttribute('data-slices',String(D.s.length));\n"
    "function fmt(ns){if(ns>=1e9)return (ns/1e9).toFixed(3)+' s';if(ns>=1e6)return "
    "(ns/1e6).toFixed(3)+' ms';if(ns>=1e3)return (ns/1e3).toFixed(3)+' us';return ns+' ns';}\n"
    "function color(i){var h=(i*47)%360;return 'hsl('+h+',55%,72%)';}\n"
    "function draw(){\n"
    "  cv.width=cv.parentNode.clientWidth||1100;var g=cv.getContext('2d'),W=cv.width;\n"
    "  var k=W/(v1-v0),drawn=0;g.clearRect(0,0,W,cv.height);g.font='11px sans-serif';\n"
    "  D.lanes.forEach(function(l,li){var t=tops[li];g.fillStyle='#333';\n"
    "    g.fillText(l.name,2,t+12);g.fillStyle='#f6f6f6';g.fillRect(0,t+HEAD,W,l.rows*ROW);\n"
    "    byLane[li].forEach(function(x){var a=(x[2]-v0)*k,w=x[3]*k;\n"
    "      if(a+w<0||a>W)return;if(a<0){w+=a;a=0;}if(w<0.5)w=0.5;\n"
    "      var yy=t+HEAD+x[1]*ROW;g.fillStyle=color(x[4]);g.fillRect(a,yy,w,ROW-1);drawn++;\n"
    "      if(w>40){g.fillStyle='#111';g.save();g.beginPath();g.rect(a,yy,w,ROW);g.clip();\n"
    "        g.fillText(D.names[x[4]],a+2,yy+12);g.restore();}});});\n"
    "  cv.setAttribute('data-drawn',String(drawn));\n"
    "  document.getElementById('tl-range').textContent=fmt(v0)+' .. '+fmt(v1)+' of "
    "'+fmt(D.span);}\n"
    "function at(ev){var r=cv.getBoundingClientRect();return "
    "{x:ev.clientX-r.left,y:ev.clientY-r.top};}\n"
    "function zoom(f,x){var W=cv.width,t=v0+(v1-v0)*x/W,nv0=t-(t-v0)*f,nv1=t+(v1-t)*f;\n"
    "  if(nv1-nv0<100)return;v0=Math.max(0,nv0);v1=Math.min(Math.max(D.span,1),nv1);draw();}\n"
    "cv.addEventListener('wheel',function(ev){ev.preventDefault();\n"
    "  zoom(ev.deltaY<0?0.8:1.25,at(ev).x);});\n"
    "cv.addEventListener('mousedown',function(ev){drag={x:at(ev).x,v0:v0,v1:v1};});\n"
    "window.addEventListener('mouseup',function(){drag=null;});\n"
    "cv.addEventListener('mousemove',function(ev){var p=at(ev);\n"
    "  if(drag){var d=(p.x-drag.x)*(drag.v1-drag.v0)/cv.width;var w=drag.v1-drag.v0;\n"
    "    v0=Math.min(Math.max(0,drag.v0-d),Math.max(D.span,1)-w);v1=v0+w;draw();return;}\n"
    "  var hit=null;D.lanes.forEach(function(l,li){var t=tops[li]+HEAD;\n"
    "    if(p.y<t||p.y>=t+l.rows*ROW)return;var row=Math.floor((p.y-t)/ROW),"
    "tt=v0+(v1-v0)*p.x/cv.width;\n"
    "    byLane[li].forEach(function(x){if(x[1]===row&&x[2]<=tt&&tt<=x[2]+x[3])hit=x;});});\n"
    "  if(hit){tip.style.display='block';tip.style.left=(ev.pageX+12)+'px';"
    "tip.style.top=(ev.pageY+12)+'px';\n"
    "    tip.textContent=D.names[hit[4]]+': '+fmt(hit[3])+' at +'+fmt(hit[2]);}\n"
    "  else tip.style.display='none';});\n"
    "cv.addEventListener('dblclick',function(){v0=0;v1=Math.max(D.span,1);draw();});\n"
    "document.getElementById('tl-in').addEventListener('click',function(){zoom(0.5,cv.width/"
    "2);});\n"
    "document.getElementById('tl-out').addEventListener('click',function(){zoom(2,cv.width/2);});\n"
    "document.getElementById('tl-all').addEventListener('click',function(){v0=0;"
    "v1=Math.max(D.span,1);draw();});\n"
    "draw();})();\n";

int rp_zoom_timeline(const char *cmd, const struct rpdtool_trace *t, FILE *f, int64_t lo,
                     int64_t hi) {
  char *doc = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&doc, &len);
  if (!mem) {
    rpdtool_err(cmd, "out of memory building the timeline");
    return -1;
  }
  int ret = rp_tl_document(cmd, t, mem, lo, hi);
  if (fclose(mem) != 0 && !ret) {
    rpdtool_err(cmd, "out of memory building the timeline");
    ret = -1;
  }
  if (!ret) {
    fputs("<h2 id=zoom>Timeline, zoomable</h2><p class=muted>Calls and ranges per thread (nested: "
          "one row per depth) and ops per GPU queue, with their names. Wheel: zoom at the "
          "pointer; drag: pan; double click: all; hover: name and duration. <button id=tl-in>"
          "zoom in</button><button id=tl-out>zoom out</button><button id=tl-all>all</button> "
          "<span id=tl-range></span></p>\n<div style=\"position:relative;width:100%\"><canvas "
          "id=tl height=20></canvas></div><div id=tl-tip style=\"display:none;position:absolute;"
          "background:#fffbe6;border:1px solid #ccc;padding:2px 6px;font:12px sans-serif\">"
          "</div>\n<script type=\"application/json\" id=tl-data>",
          f);
    /* '<' only occurs inside JSON strings: escaped, no text can close the script */
    for (size_t i = 0; i < len; i++)
      if (doc[i] == '<')
        fputs("\\u003c", f);
      else
        fputc(doc[i], f);
    fprintf(f, "</script>\n<script>\n%s</script>\n", rp_tl_js);
  }
  free(doc);
  return ret;
}
