/*
 * graph.c: `rpd graph FILE`: HIP/CUDA graphs from their API rows, in
 * rocmProfileData's tables and views:
 *
 *   rocpd_graphapi, rocpd_graphLaunchapi  the graph API calls (capture begin
 *     and end, instantiate; launches) with their "key = value | ..." args as
 *     columns (rocpd's "subclass" tables), and views graphapi, graphLaunchapi
 *   ext_graph(graph, graphExec, stream, start, end)  one row per captured
 *     graph and executable instantiated from it; start..end is the capture
 *     (begin-capture start to end-capture end on the stream)
 *   ext_graph_kernelapis(graph_id, api_id, sequence)  the kernel launches
 *     captured into each graph, in order
 *   graphLaunch  each launch: API time, op span and GPU busy time (µs)
 *   graphKernel  the kernels of each executable graph with their sizes
 *
 * The SQL of ext_graph, ext_graph_kernelapis and the views is rocpd's
 * (graph.py), so the answers are the same as `python -m rocpd.graph`.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "commands.h"

#define GR_MAXKEYS 64

/* The API names of graph creation and of graph launch (rocpd's lists, plus
 * the CUDA names without a version suffix as nanoprobe's backends record). */
static const char *const gr_graph_apis[] = {"hipStreamBeginCapture",
                                            "hipStreamEndCapture",
                                            "hipGraphInstantiate",
                                            "hipGraphInstantiateWithFlags",
                                            "cudaStreamBeginCapture_v10000",
                                            "cudaStreamBeginCapture_ptsz_v10000",
                                            "cudaStreamEndCapture_v10000",
                                            "cudaStreamEndCapture_ptsz_v10000",
                                            "cudaGraphInstantiate_v10000",
                                            "cudaGraphInstantiateWithFlags_v11040",
                                            "cudaStreamBeginCapture",
                                            "cudaStreamEndCapture",
                                            "cudaGraphInstantiate",
                                            "cudaGraphInstantiateWithFlags",
                                            NULL};
static const char *const gr_launch_apis[] = {"hipGraphLaunch", "cudaGraphLaunch_v10000",
                                             "cudaGraphLaunch_ptsz_v10000", "cudaGraphLaunch",
                                             NULL};

static const char gr_schema[] =
    "CREATE TABLE IF NOT EXISTS \"ext_graph\" (\"id\" integer NOT NULL PRIMARY KEY "
    "AUTOINCREMENT, \"graph\" varchar(18) NOT NULL, \"graphExec\" varchar(18) NOT NULL, "
    "\"stream\" varchar(18) NOT NULL, \"start\" integer NOT NULL, \"end\" integer NOT NULL);"
    "CREATE TABLE IF NOT EXISTS \"ext_graph_kernelapis\" (\"id\" integer NOT NULL PRIMARY KEY "
    "AUTOINCREMENT, \"graph_id\" integer NOT NULL REFERENCES \"ext_graph\" (\"id\") DEFERRABLE "
    "INITIALLY DEFERRED, \"api_id\" integer NOT NULL REFERENCES \"rocpd_api\" (\"id\") "
    "DEFERRABLE INITIALLY DEFERRED, \"sequence\" integer NOT NULL);"
    "CREATE VIEW IF NOT EXISTS graphLaunch AS SELECT B.id, pid, tid, E.string AS apiName, "
    "A.graphExec, A.stream, D.gpuId, D.queueId, (B.end - B.start)/1000 AS apiDuration_usec, "
    "(max(D.end) - min(D.start))/1000 AS opDuration_usec, sum((D.end - D.start)/1000) AS "
    "gpuTime_usec FROM rocpd_graphLaunchapi A JOIN rocpd_api B ON B.id = A.api_ptr_id JOIN "
    "rocpd_api_ops C ON C.api_id = A.api_ptr_id JOIN rocpd_op D ON D.id = C.op_id JOIN "
    "rocpd_string E ON B.apiName_id = E.id GROUP BY B.id;"
    "CREATE VIEW IF NOT EXISTS graphKernel AS SELECT graphExec, sequence, D.string AS "
    "kernelName, gridX, gridY, gridZ, workgroupX, workgroupY, workgroupZ, groupSegmentSize, "
    "privateSegmentSize FROM ext_graph_kernelapis A JOIN ext_graph B ON B.id = A.graph_id JOIN "
    "rocpd_kernelapi C ON C.api_ptr_id = A.api_id JOIN rocpd_string D ON D.id = "
    "C.kernelName_id;";

/* rocpd's ext_graph fill: each end-capture row (it carries the graph) takes
 * the start of the row before it on its stream (the begin-capture) and is
 * joined with every instantiation of its graph. rocpd's window runs over all
 * streams at once, so a stream's first row took another stream's start, or
 * none (NOT NULL failed on a trace trimmed mid-capture): here the window is
 * the stream's own, and a capture whose begin is not in the trace starts at
 * its end-capture call. */
static const char gr_fill_graph[] =
    "INSERT INTO ext_graph(graph, graphExec, stream, start, end) SELECT B.graph, B.graphExec, "
    "stream, start, end FROM (SELECT stream, graph, coalesce(lag(start) OVER (PARTITION BY stream "
    "ORDER BY start ASC), start) AS start, end FROM (SELECT * FROM rocpd_graphapi A JOIN rocpd_api "
    "B ON B.id = A.api_ptr_id "
    "WHERE stream != '' ORDER BY stream, start ASC)) A JOIN (SELECT graph, graphExec FROM "
    "rocpd_graphapi WHERE graph != '' AND graphExec != '') B ON B.graph = A.graph";

/* rocpd's kernel list of one graph: kernel launches on the captured stream
 * that end within the capture. */
static const char gr_fill_kernels[] =
    "INSERT INTO ext_graph_kernelapis(graph_id, api_id, sequence) SELECT ?1, B.id, ROW_NUMBER() "
    "OVER (ORDER BY B.start) FROM rocpd_kernelapi A JOIN rocpd_api B ON B.id = A.api_ptr_id "
    "WHERE A.stream = ?2 AND B.end >= ?3 AND B.end <= ?4 ORDER BY B.start";

/* The argument names found in one subclass (rocpd's superset of keys). */
struct gr_keys {
  char *name[GR_MAXKEYS];
  int n;
};

/* Copies s[0..len) without leading/trailing white space (Python's strip()). */
static char *gr_strip(const char *s, size_t len) {
  while (len && isspace((unsigned char)*s))
    s++, len--;
  while (len && isspace((unsigned char)s[len - 1]))
    len--;
  return strndup(s, len);
}

/* Splits args "k1 = v1 | k2 = v2" at '|' and the first '=' of each part,
 * calling fn(ctx, key, value) with stripped, malloc'd strings (fn owns them).
 * Returns 0 or -1 (no memory). */
static int gr_split(const char *args, int (*fn)(void *, char *, char *), void *ctx) {
  const char *p = args;
  for (;;) {
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    const char *eq = memchr(p, '=', len);
    char *k = gr_strip(p, eq ? (size_t)(eq - p) : len);
    char *v = eq ? gr_strip(eq + 1, len - (size_t)(eq + 1 - p)) : strdup("");
    if (!k || !v || fn(ctx, k, v) != 0) {
      free(k);
      free(v);
      return -1;
    }
    if (!bar)
      return 0;
    p = bar + 1;
  }
}

/* gr_split callback of the key scan: adds the key (quotes stripped, as rocpd
 * does for column names) when new. */
static int gr_add_key(void *ctx, char *k, char *v) {
  struct gr_keys *keys = ctx;
  free(v);
  size_t len = strlen(k);
  size_t a = 0;
  while (a < len && k[a] == '"')
    a++;
  while (len > a && k[len - 1] == '"')
    len--;
  memmove(k, k + a, len - a);
  k[len - a] = 0;
  int skip = !*k || !strcmp(k, "s_api") || !strcmp(k, "s_op");
  for (int i = 0; i < keys->n && !skip; i++)
    skip = !strcmp(keys->name[i], k);
  if (skip || keys->n == GR_MAXKEYS) {
    free(k);
    return 0;
  }
  keys->name[keys->n++] = k;
  return 0;
}

/* The values of one row, by key index. */
struct gr_row {
  const struct gr_keys *keys;
  char *val[GR_MAXKEYS];
};

/* gr_split callback of the row fill: the last value of a key wins. */
static int gr_add_val(void *ctx, char *k, char *v) {
  struct gr_row *row = ctx;
  for (int i = 0; i < row->keys->n; i++)
    if (!strcmp(row->keys->name[i], k)) {
      free(row->val[i]);
      row->val[i] = v;
      v = NULL;
      break;
    }
  free(k);
  free(v);
  return 0;
}

/* Returns "SELECT A.id, ARGS FROM rocpd_api ... WHERE apiName in (names)"
 * for this trace (sqlite3_malloc'd), args from rocpd_ustring or rocpd_string. */
static char *gr_rows_sql(const struct rpdtool_trace *t, const char *const *names, int distinct) {
  char *in = sqlite3_mprintf("%s", "");
  for (int i = 0; names[i] && in; i++) {
    char *next = sqlite3_mprintf("%s%s%Q", in, i ? "," : "", names[i]);
    sqlite3_free(in);
    in = next;
  }
  if (!in)
    return NULL;
  char *sql = sqlite3_mprintf(
      "SELECT %s FROM rocpd_api A JOIN %s B ON B.id = A.args_id WHERE A.apiName_id IN "
      "(SELECT id FROM rocpd_string WHERE string IN (%s))",
      distinct ? "DISTINCT B.string" : "A.id, B.string",
      t->has_ustring ? "rocpd_ustring" : "rocpd_string", in);
  sqlite3_free(in);
  return sql;
}

/* Creates and fills rocpd_<sub>api for the API calls named in `names` and
 * the view <sub>api. Columns: stream, graph, graphExec, then every further key
 * of their args. Returns 0 or RPDTOOL_EXIT_FAIL (message printed); *count
 * gets the rows written. */
static int gr_subclass(const char *cmd, const struct rpdtool_trace *t, const char *sub,
                       const char *const *names, int64_t *count) {
  struct gr_keys keys = {.n = 0};
  int ret = 0, rc;
  sqlite3_stmt *st = NULL, *ins = NULL;
  char *sql = NULL;
  const char *fixed[] = {"stream", "graph", "graphExec"};
  for (int i = 0; i < 3; i++)
    if (!(keys.name[keys.n++] = strdup(fixed[i])))
      goto oom;
  if (!(sql = gr_rows_sql(t, names, 1)))
    goto oom;
  if (sqlite3_prepare_v2(t->db, sql, -1, &st, NULL) != SQLITE_OK)
    goto sqlerr;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *a = (const char *)sqlite3_column_text(st, 0);
    if (gr_split(a ? a : "", gr_add_key, &keys) != 0)
      goto oom;
  }
  if (rc != SQLITE_DONE)
    goto sqlerr;
  sqlite3_finalize(st);
  st = NULL;
  sqlite3_free(sql);
  /* CREATE TABLE and the INSERT with one column per key. */
  sql = sqlite3_mprintf("CREATE TABLE IF NOT EXISTS \"rocpd_%wapi\" (\"api_ptr_id\" integer NOT "
                        "NULL PRIMARY KEY REFERENCES \"rocpd_api\" (\"id\") DEFERRABLE INITIALLY "
                        "DEFERRED",
                        sub);
  char *isql = sqlite3_mprintf("INSERT INTO \"rocpd_%wapi\"(api_ptr_id", sub);
  for (int i = 0; i < keys.n && sql && isql; i++) {
    char *s2 = sqlite3_mprintf("%s, \"%w\" %s", sql, keys.name[i],
                               i < 3 ? "varchar(18) NOT NULL" : "varchar(255)");
    char *i2 = sqlite3_mprintf("%s, \"%w\"", isql, keys.name[i]);
    sqlite3_free(sql);
    sqlite3_free(isql);
    sql = s2;
    isql = i2;
  }
  if (sql && isql) {
    char *s2 = sqlite3_mprintf("%s); CREATE VIEW IF NOT EXISTS \"%wapi\" AS SELECT * FROM api A "
                               "JOIN \"rocpd_%wapi\" B ON B.api_ptr_id=A.id;",
                               sql, sub, sub);
    char *i2 = sqlite3_mprintf("%s) VALUES (?1", isql);
    for (int i = 0; i < keys.n && i2; i++) {
      char *i3 = sqlite3_mprintf("%s, ?%d", i2, i + 2);
      sqlite3_free(i2);
      i2 = i3;
    }
    char *i3 = i2 ? sqlite3_mprintf("%s)", i2) : NULL;
    sqlite3_free(i2);
    sqlite3_free(sql);
    sqlite3_free(isql);
    sql = s2;
    isql = i3;
  }
  if (!sql || !isql) {
    sqlite3_free(isql);
    goto oom;
  }
  ret = an_exec(cmd, t, "creating the graph API table", sql);
  sqlite3_free(sql);
  sql = NULL;
  if (!ret && sqlite3_prepare_v2(t->db, isql, -1, &ins, NULL) != SQLITE_OK) {
    sqlite3_free(isql);
    goto sqlerr;
  }
  sqlite3_free(isql);
  if (ret)
    goto out;
  if (!(sql = gr_rows_sql(t, names, 0)))
    goto oom;
  if (sqlite3_prepare_v2(t->db, sql, -1, &st, NULL) != SQLITE_OK)
    goto sqlerr;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    struct gr_row row = {.keys = &keys};
    const char *a = (const char *)sqlite3_column_text(st, 1);
    int bad = gr_split(a ? a : "", gr_add_val, &row) != 0;
    int brc = sqlite3_bind_int64(ins, 1, sqlite3_column_int64(st, 0));
    for (int i = 0; i < keys.n && brc == SQLITE_OK; i++)
      brc = sqlite3_bind_text(ins, i + 2, row.val[i] ? row.val[i] : "", -1, SQLITE_TRANSIENT);
    for (int i = 0; i < keys.n; i++)
      free(row.val[i]);
    if (bad)
      goto oom;
    if (brc != SQLITE_OK || sqlite3_step(ins) != SQLITE_DONE)
      goto sqlerr;
    sqlite3_reset(ins);
    (*count)++;
  }
  if (rc != SQLITE_DONE)
    goto sqlerr;
  goto out;
oom:
  ret = rpdtool_err(cmd, "out of memory");
  goto out;
sqlerr:
  ret =
      rpdtool_err(cmd, "%s: graph API table rocpd_%sapi: %s", t->path, sub, sqlite3_errmsg(t->db));
out:
  sqlite3_finalize(st);
  sqlite3_finalize(ins);
  sqlite3_free(sql);
  for (int i = 0; i < keys.n; i++)
    free(keys.name[i]);
  return ret;
}

/* Fills ext_graph_kernelapis for every ext_graph row. 0 or RPDTOOL_EXIT_FAIL. */
static int gr_kernels(const char *cmd, const struct rpdtool_trace *t, int64_t *count) {
  sqlite3_stmt *g = NULL, *ins = NULL;
  int ret = 0, rc;
  if (sqlite3_prepare_v2(t->db, "SELECT id, stream, start, end FROM ext_graph ORDER BY id", -1, &g,
                         NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(t->db, gr_fill_kernels, -1, &ins, NULL) != SQLITE_OK)
    goto sqlerr;
  while ((rc = sqlite3_step(g)) == SQLITE_ROW) {
    if (sqlite3_bind_int64(ins, 1, sqlite3_column_int64(g, 0)) != SQLITE_OK ||
        sqlite3_bind_value(ins, 2, sqlite3_column_value(g, 1)) != SQLITE_OK ||
        sqlite3_bind_int64(ins, 3, sqlite3_column_int64(g, 2)) != SQLITE_OK ||
        sqlite3_bind_int64(ins, 4, sqlite3_column_int64(g, 3)) != SQLITE_OK ||
        sqlite3_step(ins) != SQLITE_DONE)
      goto sqlerr;
    *count += sqlite3_changes(t->db);
    sqlite3_reset(ins);
  }
  if (rc == SQLITE_DONE)
    goto out;
sqlerr:
  ret = rpdtool_err(cmd, "%s: filling ext_graph_kernelapis: %s", t->path, sqlite3_errmsg(t->db));
out:
  sqlite3_finalize(g);
  sqlite3_finalize(ins);
  return ret;
}

/* What the graph step made. */
struct gr_counts {
  int64_t napi, nlaunch, nkern, ngraph;
};

/* Fills the graph tables (the step's fill; ctx is the struct gr_counts). */
static int gr_fill(const char *cmd, const struct rpdtool_trace *t, void *ctx) {
  struct gr_counts *n = ctx;
  /* Tables without the Generated tag are leftovers of an interrupted run of
   * rocpd's Python (it commits as it goes): start over. */
  int ret =
      an_exec(cmd, t, "removing leftover graph tables",
              "DROP VIEW IF EXISTS graphLaunch; DROP VIEW IF EXISTS graphKernel; "
              "DROP VIEW IF EXISTS graphapi; DROP VIEW IF EXISTS graphLaunchapi; "
              "DROP TABLE IF EXISTS rocpd_graphapi; DROP TABLE IF EXISTS rocpd_graphLaunchapi; "
              "DROP TABLE IF EXISTS ext_graph_kernelapis; DROP TABLE IF EXISTS ext_graph;");
  if (!ret)
    ret = gr_subclass(cmd, t, "graph", gr_graph_apis, &n->napi);
  if (!ret)
    ret = gr_subclass(cmd, t, "graphLaunch", gr_launch_apis, &n->nlaunch);
  if (!ret)
    ret = an_exec(cmd, t, "creating the graph tables", gr_schema);
  if (!ret)
    ret = an_exec(cmd, t, "filling ext_graph", gr_fill_graph);
  if (!ret)
    n->ngraph = sqlite3_changes(t->db);
  if (!ret)
    ret = gr_kernels(cmd, t, &n->nkern);
  return ret;
}

static const struct an_step gr_step = {"Graph", 0, "graph tables", gr_fill};

/* `rpd graph`'s step on an open trace. 0, AN_ALREADY or RPDTOOL_EXIT_FAIL. */
static int gr_run(const char *cmd, const struct rpdtool_trace *t) {
  struct gr_counts n = {0};
  int ret = an_step_run(cmd, t, &gr_step, &n);
  if (ret)
    return ret;
  printf("rpd %s: %s: %lld graph API calls, %lld graphs, %lld captured kernel launches, "
         "%lld graph launches\n",
         cmd, t->path, (long long)n.napi, (long long)n.ngraph, (long long)n.nkern,
         (long long)n.nlaunch);
  return 0;
}

int rpd_cmd_graph(int argc, char **argv) {
  return an_step_main(
      argc, argv,
      "usage: rpd graph FILE\n\n"
      "Adds HIP/CUDA graph tables to FILE from the graph API calls (stream capture,\n"
      "instantiate, launch with args 'graph = 0x.. | graphExec = 0x.. | stream = ..'):\n"
      "ext_graph, ext_graph_kernelapis, views graphLaunch and graphKernel\n"
      "(rocmProfileData's names). One transaction; a second run does nothing.\n",
      &gr_step, gr_run);
}
