/*
 * callstack.c: `rpd callstack FILE`: the caller/callee relation of the
 * recorded calls and ranges, per process and thread, with CPU and GPU time,
 * in rocmProfileData's table and views:
 *
 *   ext_callstack(id, parent_id, child_id, depth, cpu_time, gpu_time)
 *     one row per (ancestor, call) pair including the call itself (depth 0,
 *     depth d = d levels up); cpu_time is the call's exclusive CPU time and
 *     gpu_time the summed duration of the ops linked to the call, both of the
 *     child, so that summing over parent_id gives inclusive times and summing
 *     depth 0 gives exclusive ones.
 *   callStack_inclusive, callStack_exclusive (parent_id, cpu_time, gpu_time)
 *   callStack_inclusive_name, callStack_exclusive_name
 *     (parent_id, apiName, args, cpu_time, gpu_time)
 *
 * The rows come from an_walk (analysis.c) and are inserted through a prepared
 * multi-row INSERT inside the step's one transaction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "commands.h"

#define CS_BATCH 200        /* rows per multi-row INSERT */
#define CS_CACHE_KIB 131072 /* page cache of the step: the new rows stay in memory */
/* Ancestors a call is paired with, at most (depth 0 .. CS_MAX_DEPTH - 1). The
 * table holds a row per (ancestor, call): unbounded, n calls nested n deep
 * give n^2/2 rows (20,000 levels: 200 million). Deeper calls keep their
 * nearest CS_MAX_DEPTH ancestors; the run says how many calls were cut. */
#define CS_MAX_DEPTH 1000

static const char cs_schema[] =
    "CREATE TABLE IF NOT EXISTS \"ext_callstack\" (\"id\" integer NOT NULL PRIMARY KEY "
    "AUTOINCREMENT, \"parent_id\" integer NOT NULL REFERENCES \"rocpd_api\" (\"id\") DEFERRABLE "
    "INITIALLY DEFERRED, \"child_id\" integer NOT NULL REFERENCES \"rocpd_api\" (\"id\") "
    "DEFERRABLE INITIALLY DEFERRED, \"depth\" integer NOT NULL, \"cpu_time\" integer NOT NULL "
    "DEFAULT 0, \"gpu_time\" integer NOT NULL DEFAULT 0);"
    "CREATE VIEW IF NOT EXISTS callStack_inclusive AS SELECT parent_id, sum(cpu_time) AS "
    "cpu_time, sum(gpu_time) AS gpu_time FROM ext_callstack GROUP BY parent_id;"
    "CREATE VIEW IF NOT EXISTS callStack_exclusive AS SELECT parent_id, sum(cpu_time) AS "
    "cpu_time, sum(gpu_time) AS gpu_time FROM ext_callstack WHERE depth = 0 GROUP BY parent_id;"
    "CREATE VIEW IF NOT EXISTS callStack_inclusive_name AS SELECT A.parent_id, B.apiName, "
    "B.args, sum(cpu_time) AS cpu_time, sum(gpu_time) AS gpu_time FROM ext_callstack A JOIN api "
    "B ON B.id = A.parent_id GROUP BY parent_id;"
    "CREATE VIEW IF NOT EXISTS callStack_exclusive_name AS SELECT A.parent_id, B.apiName, "
    "B.args, sum(cpu_time) AS cpu_time, sum(gpu_time) AS gpu_time FROM ext_callstack A JOIN api "
    "B ON B.id = A.parent_id WHERE A.depth = 0 GROUP BY parent_id;";

/* The insertion state of one run. */
struct cs_ctx {
  sqlite3 *db;
  sqlite3_stmt *batch, *one;
  int64_t rows[CS_BATCH][5];
  int nrows;
  int64_t total, calls, cut;
  int maxdepth;
};

/* Binds the 5 values of row `r` at parameter offset `base` and returns the
 * last bind result. */
static int cs_bind(sqlite3_stmt *st, int base, const int64_t *r) {
  int rc = SQLITE_OK;
  for (int i = 0; i < 5 && rc == SQLITE_OK; i++)
    rc = sqlite3_bind_int64(st, base + i + 1, r[i]);
  return rc;
}

/* Inserts the buffered rows: a full batch through the multi-row statement,
 * a partial one row by row. SQLite result code. */
static int cs_flush(struct cs_ctx *c) {
  int rc = SQLITE_OK;
  if (c->nrows == CS_BATCH) {
    for (int r = 0; r < CS_BATCH && rc == SQLITE_OK; r++)
      rc = cs_bind(c->batch, 5 * r, c->rows[r]);
    if (rc == SQLITE_OK)
      rc = sqlite3_step(c->batch);
    sqlite3_reset(c->batch);
  } else {
    for (int r = 0; r < c->nrows && (rc == SQLITE_OK || rc == SQLITE_DONE); r++) {
      rc = cs_bind(c->one, 0, c->rows[r]);
      if (rc == SQLITE_OK)
        rc = sqlite3_step(c->one);
      sqlite3_reset(c->one);
    }
  }
  c->total += c->nrows;
  c->nrows = 0;
  return rc == SQLITE_DONE || rc == SQLITE_OK ? SQLITE_OK : rc;
}

/* an_visit_fn: one row per frame of the stack, the call itself last. */
static int cs_visit(void *ctx, const struct an_frame *stack, int n, int64_t cpu, int64_t gpu,
                    int64_t pid, int64_t tid) {
  (void)pid, (void)tid;
  struct cs_ctx *c = ctx;
  int64_t child = stack[n - 1].id;
  c->calls++;
  if (n > c->maxdepth)
    c->maxdepth = n;
  c->cut += n > CS_MAX_DEPTH;
  for (int i = n > CS_MAX_DEPTH ? n - CS_MAX_DEPTH : 0; i < n; i++) {
    int64_t *r = c->rows[c->nrows++];
    r[0] = stack[i].id;
    r[1] = child;
    r[2] = n - 1 - i;
    r[3] = cpu;
    r[4] = gpu;
    if (c->nrows == CS_BATCH && cs_flush(c) != SQLITE_OK)
      return 1;
  }
  return 0;
}

/* Prepares the single-row and the CS_BATCH-row INSERT. SQLite result code. */
static int cs_prepare(struct cs_ctx *c) {
  static const char head[] =
      "INSERT INTO ext_callstack(parent_id, child_id, depth, cpu_time, gpu_time) VALUES ";
  char sql[sizeof head + CS_BATCH * 12];
  size_t len = strlen(head);
  memcpy(sql, head, len);
  for (int r = 0; r < CS_BATCH; r++) {
    memcpy(sql + len, r ? ",(?,?,?,?,?)" : "(?,?,?,?,?)", r ? 12 : 11);
    len += r ? 12 : 11;
  }
  sql[len] = 0;
  int rc = sqlite3_prepare_v2(c->db, sql, -1, &c->batch, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v2(c->db,
                            "INSERT INTO ext_callstack(parent_id, child_id, depth, "
                            "cpu_time, gpu_time) VALUES (?,?,?,?,?)",
                            -1, &c->one, NULL);
  return rc;
}

/* Fills ext_callstack (the step's fill; ctx is the struct cs_ctx). */
static int cs_fill(const char *cmd, const struct rpdtool_trace *t, void *ctx) {
  struct cs_ctx *c = ctx;
  char pragma[64];
  snprintf(pragma, sizeof pragma, "PRAGMA cache_size=-%d", CS_CACHE_KIB);
  if (an_exec(cmd, t, "setting the cache size", pragma))
    return RPDTOOL_EXIT_FAIL;
  /* A table without the Generated tag is a leftover of an interrupted run of
   * rocpd's Python (it commits every 100,000 rows): start it over. */
  int had = nano_rpdfile_has_object(t->db, "ext_callstack");
  if (had < 0)
    return rpdtool_err(cmd, "%s: cannot read the schema: %s", t->path, sqlite3_errmsg(t->db));
  if (an_exec(cmd, t, "creating ext_callstack", cs_schema) ||
      (had && an_exec(cmd, t, "clearing a partial ext_callstack", "DELETE FROM ext_callstack")))
    return RPDTOOL_EXIT_FAIL;
  int ret = 0;
  if (cs_prepare(c) != SQLITE_OK) {
    ret = rpdtool_err(cmd, "%s: cannot prepare the insert: %s", t->path, sqlite3_errmsg(t->db));
  } else {
    int w = an_walk(cmd, t, "callstack", cs_visit, c);
    if (w == 0 && cs_flush(c) != SQLITE_OK)
      w = 1;
    if (w > 0)
      rpdtool_err(cmd, "%s: inserting into ext_callstack failed: %s", t->path,
                  sqlite3_errmsg(t->db));
    if (w)
      ret = RPDTOOL_EXIT_FAIL;
  }
  sqlite3_finalize(c->batch);
  sqlite3_finalize(c->one);
  return ret;
}

static const struct an_step cs_step = {"Callstack", 1, "call stacks", cs_fill};

int an_callstack_run(const char *cmd, const struct rpdtool_trace *t, int64_t *rows) {
  if (rows)
    *rows = 0;
  struct cs_ctx c = {.db = t->db};
  int ret = an_step_run(cmd, t, &cs_step, &c);
  if (ret)
    return ret;
  if (rows)
    *rows = c.total;
  printf("rpd %s: %s: %lld calls, %lld ext_callstack rows, deepest stack %d\n", cmd, t->path,
         (long long)c.calls, (long long)c.total, c.maxdepth);
  if (c.cut)
    fprintf(stderr,
            "rpd %s: %s: %lld calls are nested deeper than %d levels: each is paired with its "
            "nearest %d ancestors only (the inclusive times of ancestors further up miss them)\n",
            cmd, t->path, (long long)c.cut, CS_MAX_DEPTH, CS_MAX_DEPTH);
  return 0;
}

/* `rpd callstack`'s step on an open trace. */
static int cs_run(const char *cmd, const struct rpdtool_trace *t) {
  return an_callstack_run(cmd, t, NULL);
}

int rpd_cmd_callstack(int argc, char **argv) {
  return an_step_main(
      argc, argv,
      "usage: rpd callstack FILE\n\n"
      "Adds the caller/callee relation of every recorded call and range to FILE:\n"
      "table ext_callstack(parent_id, child_id, depth, cpu_time, gpu_time) and views\n"
      "callStack_inclusive, callStack_exclusive, callStack_inclusive_name,\n"
      "callStack_exclusive_name (rocmProfileData's names and numbers). Times in ns.\n"
      "Runs in one transaction; a second run does nothing. A call nested deeper\n"
      "than 1000 levels is paired with its nearest 1000 ancestors only (said on\n"
      "stderr): the table would otherwise grow with the square of the depth.\n",
      &cs_step, cs_run);
}
