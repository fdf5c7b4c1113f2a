/*
 * report_calls.c: the "top calls" section of `rpd report`: the call tree of
 * every thread's ranges and API calls (analysis.c's walk) folded by label,
 * the inclusive and exclusive tables, and the flame graph.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "nano/hash.h"
#include "report.h"

#define RP_FLAME_NODES 20000 /* call paths kept in the call tree at most */
#define RP_FLAME_MIN 0.001   /* a path narrower than this share of all is not drawn */

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
int rp_calls(const char *cmd, const struct rpdtool_trace *t, FILE *f) {
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
