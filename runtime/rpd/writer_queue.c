/* writer_queue.c: the writer's queues of api and ustring rows (the tracer core, tracer.h). */
#define _GNU_SOURCE
#include "tracer.h"

#include "writer.h"
#include <stdlib.h>
#include <string.h>

/* ---- the queue virtual tables ----
 * Eponymous virtual tables (no CREATE VIRTUAL TABLE, nothing in the file)
 * registered on the writer's connection only: nano_rpdw_api yields the api
 * queue in id order, nano_rpdw_ustring the ustring queue in queue order. */

struct rpdw_vt {
  sqlite3_vtab base;
  int which;
};
struct rpdw_vt_cursor {
  sqlite3_vtab_cursor base;
  int which, i, n;
  const int64_t *row; /* nano_rpdw_api: the values of row i */
  int autoid;         /* and whether its id reads as NULL */
};

/* Points cursor c of nano_rpdw_api at its row i (in id order). */
static void rpdw_vt_api_row(struct rpdw_vt_cursor *c) {
  if (c->which == RPDW_VT_API && c->i < c->n) {
    c->row = g_w.q->api[g_w.q->ord[c->i].i].v;
    c->autoid = (int)g_w.q->ord[c->i].autoid;
  }
}

static int rpdw_vt_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                           sqlite3_vtab **out, char **err) {
  (void)argc;
  (void)argv;
  (void)err;
  int which = (int)(intptr_t)aux;
  int rc = sqlite3_declare_vtab(
      db, which == RPDW_VT_API ? "CREATE TABLE x(id, pid, tid, start, \"end\", apiName_id, "
                                 "category_id, domain_id, args_id)"
                               : "CREATE TABLE x(id, string)");
  if (rc != SQLITE_OK)
    return rc;
  struct rpdw_vt *t = sqlite3_malloc(sizeof *t);
  if (!t)
    return SQLITE_NOMEM;
  memset(t, 0, sizeof *t);
  t->which = which;
  *out = &t->base;
  return SQLITE_OK;
}

static int rpdw_vt_disconnect(sqlite3_vtab *t) {
  sqlite3_free(t);
  return SQLITE_OK;
}

static int rpdw_vt_best_index(sqlite3_vtab *t, sqlite3_index_info *info) {
  struct rpdw_vt *vt = (struct rpdw_vt *)t;
  info->estimatedCost = 1.0;
  info->estimatedRows = vt->which == RPDW_VT_API ? g_w.napiq : g_w.nustrq;
  return SQLITE_OK;
}

static int rpdw_vt_open(sqlite3_vtab *t, sqlite3_vtab_cursor **out) {
  struct rpdw_vt_cursor *c = sqlite3_malloc(sizeof *c);
  if (!c)
    return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  c->which = ((struct rpdw_vt *)t)->which;
  *out = &c->base;
  return SQLITE_OK;
}

static int rpdw_vt_close(sqlite3_vtab_cursor *c) {
  sqlite3_free(c);
  return SQLITE_OK;
}

static int rpdw_vt_filter(sqlite3_vtab_cursor *cur, int idx, const char *idxstr, int argc,
                          sqlite3_value **argv) {
  (void)idx;
  (void)idxstr;
  (void)argc;
  (void)argv;
  struct rpdw_vt_cursor *c = (struct rpdw_vt_cursor *)cur;
  c->i = 0;
  c->n = c->which == RPDW_VT_API ? g_w.napiq : g_w.nustrq;
  rpdw_vt_api_row(c);
  return SQLITE_OK;
}

static int rpdw_vt_next(sqlite3_vtab_cursor *cur) {
  struct rpdw_vt_cursor *c = (struct rpdw_vt_cursor *)cur;
  c->i++;
  rpdw_vt_api_row(c);
  return SQLITE_OK;
}

static int rpdw_vt_eof(sqlite3_vtab_cursor *cur) {
  struct rpdw_vt_cursor *c = (struct rpdw_vt_cursor *)cur;
  return c->i >= c->n;
}

static int rpdw_vt_api_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  const struct rpdw_vt_cursor *c = (const struct rpdw_vt_cursor *)cur;
  if (col < 0 || col >= RPDW_A_COUNT)
    return SQLITE_ERROR;
  if (col == RPDW_A_ID && c->autoid)
    sqlite3_result_null(ctx);
  else
    sqlite3_result_int64(ctx, c->row[col]);
  return SQLITE_OK;
}

static int rpdw_vt_ustring_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  const struct rpdw_ustr_q *u = &g_w.q->ustr[((const struct rpdw_vt_cursor *)cur)->i];
  if (col == 0)
    sqlite3_result_int64(ctx, u->id);
  else
    sqlite3_result_text(ctx, u->s, -1, SQLITE_STATIC);
  return SQLITE_OK;
}

static int rpdw_vt_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = ((struct rpdw_vt_cursor *)cur)->i;
  return SQLITE_OK;
}

#define RPDW_VT_MODULE(column)                                                                     \
  {                                                                                                \
    .iVersion = 0, .xCreate = NULL /* eponymous only */, .xConnect = rpdw_vt_connect,              \
    .xBestIndex = rpdw_vt_best_index, .xDisconnect = rpdw_vt_disconnect,                           \
    .xDestroy = rpdw_vt_disconnect, .xOpen = rpdw_vt_open, .xClose = rpdw_vt_close,                \
    .xFilter = rpdw_vt_filter, .xNext = rpdw_vt_next, .xEof = rpdw_vt_eof, .xColumn = column,      \
    .xRowid = rpdw_vt_rowid,                                                                       \
  }
const sqlite3_module rpdw_vt_api_module = RPDW_VT_MODULE(rpdw_vt_api_column);
const sqlite3_module rpdw_vt_ustring_module = RPDW_VT_MODULE(rpdw_vt_ustring_column);

/* Sorts g_w.q->ord[0..n) by id: an LSD radix sort on id - min, 11 bits a
 * pass (the ids of one queue span a few times its length, so two or three
 * passes; a comparison sort cost several times more per row). */
static void rpdw_sort_api(int n) {
  struct rpdw_api_ord *a = g_w.q->ord, *t = g_w.q->ord_tmp;
  int64_t lo = a[0].id, hi = a[0].id;
  for (int i = 1; i < n; i++) {
    if (a[i].id < lo)
      lo = a[i].id;
    if (a[i].id > hi)
      hi = a[i].id;
  }
  uint64_t span = (uint64_t)hi - (uint64_t)lo;
  for (int shift = 0; shift < 64 && (span >> shift) != 0; shift += 11) {
    uint32_t count[2048] = {0};
    for (int i = 0; i < n; i++)
      count[(((uint64_t)a[i].id - (uint64_t)lo) >> shift) & 2047]++;
    uint32_t sum = 0;
    for (int d = 0; d < 2048; d++) {
      uint32_t c = count[d];
      count[d] = sum;
      sum += c;
    }
    for (int i = 0; i < n; i++)
      t[count[(((uint64_t)a[i].id - (uint64_t)lo) >> shift) & 2047]++] = a[i];
    struct rpdw_api_ord *x = a;
    a = t;
    t = x;
  }
  if (a != g_w.q->ord)
    memcpy(g_w.q->ord, a, (size_t)n * sizeof *a);
}

/* Runs one queue's INSERT ... SELECT. */
static void rpdw_insert_queue(sqlite3_stmt *st, const char *what) {
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  if (rc != SQLITE_DONE)
    rpdw_fail(what);
}

/* Inserts the queued ustring rows. */
void rpdw_flush_ustrings(void) {
  if (g_w.nustrq && !g_w.failed)
    rpdw_insert_queue(g_w.ustr_ins, "INSERT INTO rocpd_ustring ... FROM nano_rpdw_ustring");
  g_w.nustrq = 0;
}

/* The id SQLite would give a row of rocpd_api inserted with a NULL id now,
 * minus one: the larger of its largest rowid and its AUTOINCREMENT sequence.
 * -1 when the query fails (every row then gets its id explicitly). */
static int64_t rpdw_api_last_id(void) {
  sqlite3_stmt *st = g_w.api_last;
  int64_t last = -1;
  if (sqlite3_step(st) == SQLITE_ROW)
    last = sqlite3_column_int64(st, 0);
  sqlite3_reset(st);
  return last;
}

/* Inserts the queued api rows, in id order. A row whose id is the one SQLite
 * would choose itself (one above the largest so far: the rows of one session
 * are mostly consecutive) goes in with a NULL id: SQLite then appends at the
 * end of the table without the search an explicit rowid costs (about a
 * quarter of the writer's work per row), and the id stored is the same. The
 * writer holds the write lock, so no other process inserts meanwhile. */
void rpdw_flush_api(void) {
  int n = g_w.napiq;
  if (n && !g_w.failed) {
    int sorted = 1;
    for (int i = 0; i < n; i++) {
      g_w.q->ord[i].id = g_w.q->api[i].v[RPDW_A_ID];
      g_w.q->ord[i].i = (uint32_t)i;
      if (i && g_w.q->ord[i].id < g_w.q->ord[i - 1].id)
        sorted = 0;
    }
    if (!sorted)
      rpdw_sort_api(n);
    int64_t last = rpdw_api_last_id();
    const int64_t *first = g_w.q->api[0].v;
    int uniform = 1;
    for (int i = 0; i < n; i++) {
      struct rpdw_api_ord *o = &g_w.q->ord[i];
      const int64_t *v = g_w.q->api[o->i].v;
      o->autoid = last >= 0 && o->id == last + 1;
      if (o->id > last)
        last = o->id;
      uniform &= o->autoid & (v[RPDW_A_PID] == first[RPDW_A_PID]) &
                 (v[RPDW_A_TID] == first[RPDW_A_TID]) & (v[RPDW_A_CAT] == first[RPDW_A_CAT]) &
                 (v[RPDW_A_DOM] == first[RPDW_A_DOM]);
    }
    /* The usual case (one thread's ranges of one domain, ids SQLite's own):
     * the statement without the id column that takes pid, tid, category and
     * domain as parameters spares SQLite per row four virtual-table column
     * reads (about a tenth of the writer's work per row), the check of a
     * given id and the B-tree search for it. */
    sqlite3_stmt *st = g_w.api_ins_uniform;
    if (!uniform || sqlite3_bind_int64(st, 1, first[RPDW_A_PID]) != SQLITE_OK ||
        sqlite3_bind_int64(st, 2, first[RPDW_A_TID]) != SQLITE_OK ||
        sqlite3_bind_int64(st, 3, first[RPDW_A_CAT]) != SQLITE_OK ||
        sqlite3_bind_int64(st, 4, first[RPDW_A_DOM]) != SQLITE_OK)
      st = g_w.api_ins;
    rpdw_insert_queue(st, "INSERT INTO rocpd_api ... FROM nano_rpdw_api");
  }
  g_w.napiq = 0;
}

void rpdw_flush_queues(void) {
  rpdw_flush_ustrings();
  rpdw_flush_api();
}
