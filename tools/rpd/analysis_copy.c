/*
 * analysis_copy.c: copies the rows of one RPD trace into another, the engine
 * of `rpd merge` and `rpd trim` (see an_copy in analysis.h).
 *
 * The source is ATTACHed to the destination connection and copied with
 * INSERT ... SELECT inside one transaction:
 *   - ids of API calls, ops and args strings are shifted past the largest id
 *     already in the destination, so rows of several sources never collide
 *     and references stay intact;
 *   - rocpd_string rows are looked up by text in the destination (its index
 *     on string) and added when new, so names are shared across sources;
 *     only strings that the copied rows reference are copied;
 *   - pid gets node * pid_stride and gpuId (and a monitor's deviceId) gets
 *     node * gpu_stride, the destination's strides, so the views napi and nop
 *     decode the node;
 *   - schema 2 sources (no domain/category, args in rocpd_string) become
 *     schema 3 rows: domain "UserMarker" for user markers, else "";
 *   - nanoprobe's nano_thread (OS names of processes and threads) comes along,
 *     every row of it (a name of a thread with no copied call is harmless);
 *   - so do nanoprobe's other tables (cp_nano): host atomics, short calls
 *     summed, instrumented dispatches and their analyses, recording
 *     windows, their session numbers shifted past the destination's so
 *     that ids (session << 32 | n) never collide. A window keeps the samples
 *     and dispatches that start in it and the part of each recording window
 *     inside it; the atomics counts and call sums are totals of the whole
 *     run (nothing dates them) and are kept as they are;
 *   - the source's counts of records its recording dropped or lost
 *     (rocpd_metadata nano_dropped_records, nano_lost_records), which the
 *     tools sum, and why its GPU kernels ran uninstrumented
 *     (nano_gpu_unavailable): the copy says it is incomplete where the
 *     source did;
 *   - the destination's session_count moves past every id and session the
 *     copy now holds (cp_sessions), so a recording appended later does not
 *     clash with copied rows.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nano/rpdfile.h>

#include "analysis.h"
#include "nano/outfile.h"

/* Runs printf-formatted SQL on db; on error prints it for cmd and returns -1. */
static int cp_exec(const char *cmd, sqlite3 *db, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int cp_exec(const char *cmd, sqlite3 *db, const char *what, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *sql = sqlite3_vmprintf(fmt, ap);
  va_end(ap);
  if (!sql) {
    rpdtool_err(cmd, "out of memory");
    return -1;
  }
  char *err = NULL;
  int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
  sqlite3_free(sql);
  if (rc == SQLITE_OK)
    return 0;
  rpdtool_err(cmd, "%s: %s", what, err ? err : sqlite3_errmsg(db));
  sqlite3_free(err);
  return -1;
}

/* The single integer result of printf-formatted SQL on db, or -1 with *ok=0. */
static int64_t cp_int(sqlite3 *db, int *ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int64_t cp_int(sqlite3 *db, int *ok, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *sql = sqlite3_vmprintf(fmt, ap);
  va_end(ap);
  sqlite3_stmt *st = NULL;
  int64_t v = -1;
  if (sql && sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  else
    *ok = 0;
  sqlite3_finalize(st);
  sqlite3_free(sql);
  return v;
}

int64_t an_meta_int(sqlite3 *db, const char *tag, int64_t dflt) {
  char *v = NULL;
  int have = an_meta_get(db, tag, &v);
  int64_t n = dflt;
  if (have == 1) {
    char *end = NULL;
    long long x = strtoll(v, &end, 10);
    if (end != v && !*end && x > 0)
      n = x;
  }
  free(v);
  return n;
}

/* Whether schema `db` ("main" or "src") has table or view `name`; -1 on error. */
static int cp_has(sqlite3 *db, const char *schema, const char *name, int *ok) {
  return (int)cp_int(db, ok, "SELECT count(*) FROM %s.sqlite_master WHERE name = '%s'", schema,
                     name);
}

/* The first session number after those the destination's nanoprobe tables
** use (0 when none). */
static int64_t cp_next_session(sqlite3 *db, int *ok) {
  static const char *const tables[] = {"nano_atomic_site", "nano_atomic_sample", "nano_dispatch",
                                       "nano_window"};
  int64_t next = 0;
  for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
    if (cp_has(db, "main", tables[i], ok) > 0) {
      int64_t s = cp_int(db, ok, "SELECT coalesce(max(session) + 1, 0) FROM main.%s", tables[i]);
      if (s > next)
        next = s;
    }
  return next;
}

/* Makes the destination's session_count name a session whose ids (from
** session << 32 on) lie above every id now in it and past the sessions of
** nanoprobe's tables, so that a recording appended later
** (nano_rpdfile_begin_session) writes ids no copied row has; without it an
** append to a merged or trimmed trace lost its rows to id clashes. */
static int cp_sessions(const char *cmd, sqlite3 *db) {
  static const char *const tables[] = {"rocpd_api",       "rocpd_op",      "rocpd_string",
                                       "rocpd_ustring",   "rocpd_api_ops", "rocpd_monitor",
                                       "rocpd_stackframe"};
  int ok = 1;
  int64_t next = cp_next_session(db, &ok);
  for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
    if (cp_has(db, "main", tables[i], &ok) > 0) {
      int64_t top = cp_int(db, &ok, "SELECT coalesce(max(id), 0) FROM main.%s", tables[i]);
      if ((top >> 32) + 1 > next)
        next = (top >> 32) + 1;
    }
  if (!ok) {
    rpdtool_err(cmd, "reading the ids of the copy: %s", sqlite3_errmsg(db));
    return -1;
  }
  return cp_exec(cmd, db, "recording the next session",
                 "INSERT INTO main.rocpd_metadata(tag, value) SELECT 'session_count', '0' WHERE "
                 "NOT EXISTS (SELECT 1 FROM main.rocpd_metadata WHERE tag = 'session_count');"
                 "UPDATE main.rocpd_metadata SET value = CAST(max(CAST(value AS integer), %lld) "
                 "AS TEXT) WHERE tag = 'session_count';",
                 (long long)next);
}

/* Copies nanoprobe's own tables of the attached source (see the banner):
** pids get padd, sessions shift by the destination's next session, calls by
** off_api, strings through smap (empty: the id of ""). */
static int cp_nano(const char *cmd, sqlite3 *db, const struct rpdtool_trace *s,
                   const struct an_copy_opts *o, int64_t padd, int64_t off_api, int64_t empty) {
  int ok = 1;
  int atomics = cp_has(db, "src", "nano_atomic_site", &ok) > 0;
  int origin = cp_has(db, "src", "nano_atomic_origin", &ok) > 0;
  int sample = cp_has(db, "src", "nano_atomic_sample", &ok) > 0;
  int caller = cp_has(db, "src", "nano_atomic_caller", &ok) > 0;
  int calls = cp_has(db, "src", "nano_call_summary", &ok) > 0;
  int disp = cp_has(db, "src", "nano_dispatch", &ok) > 0;
  int windows = cp_has(db, "src", "nano_window", &ok) > 0;
  int64_t sess = ok ? cp_next_session(db, &ok) : 0;
  if (!ok) {
    rpdtool_err(cmd, "%s: reading nanoprobe's tables: %s", s->path, sqlite3_errmsg(db));
    return -1;
  }
  long long so = (long long)sess, idoff = (long long)nano_rpdfile_session_offset(sess);
  long long pa = (long long)padd;
  char win[160] = "1";
  if (o->window)
    snprintf(win, sizeof win, "start >= %lld AND start <= %lld", (long long)o->lo,
             (long long)o->hi);
  if (atomics &&
      (cp_exec(cmd, db, "creating the atomics tables", "%s", nano_rpdfile_atomics_schema_sql()) ||
       cp_exec(cmd, db, "copying atomic sites",
               "INSERT INTO main.nano_atomic_site(id, session, pid, kind_id, kind, memory_order, "
               "failure_order, size, flags, function, file, line, \"column\") SELECT id + %lld, "
               "session + %lld, pid + %lld, kind_id, kind, memory_order, failure_order, size, "
               "flags, function, file, line, \"column\" FROM src.nano_atomic_site; "
               "INSERT INTO main.nano_atomic_count(site_id, count) SELECT site_id + %lld, count "
               "FROM src.nano_atomic_count;",
               idoff, so, pa, idoff) ||
       (origin && cp_exec(cmd, db, "copying atomic origins",
                          "INSERT INTO main.nano_atomic_origin(site_id, function, file, line, "
                          "\"column\") SELECT site_id + %lld, function, file, line, \"column\" "
                          "FROM src.nano_atomic_origin;",
                          idoff)) ||
       (sample && cp_exec(cmd, db, "copying atomics samples",
                          "INSERT INTO main.nano_atomic_sample(session, pid, start, kind_id, kind, "
                          "count) SELECT session + %lld, pid + %lld, start, kind_id, kind, count "
                          "FROM src.nano_atomic_sample WHERE %s;",
                          so, pa, win)) ||
       (caller && cp_exec(cmd, db, "copying atomics callers",
                          "INSERT INTO main.nano_atomic_caller(site_id, function, file, line, "
                          "count) SELECT site_id + %lld, function, file, line, count FROM "
                          "src.nano_atomic_caller;",
                          idoff))))
    return -1;
  /* sums of one process and function add up (the WHERE lets SQLite parse
   * the upsert after a SELECT) */
  if (calls &&
      (cp_exec(cmd, db, "creating nano_call_summary", "%s", nano_rpdfile_calls_schema_sql()) ||
       cp_exec(cmd, db, "copying short-call sums",
               "INSERT INTO main.nano_call_summary(pid, domain_id, name_id, args_id, calls, "
               "total_ns, self_ns, min_duration_ns) SELECT C.pid + %lld, coalesce(D.new, %lld), "
               "coalesce(N.new, %lld), coalesce(A.new, %lld), C.calls, C.total_ns, C.self_ns, "
               "C.min_duration_ns FROM src.nano_call_summary C LEFT JOIN smap D ON D.old = "
               "C.domain_id LEFT JOIN smap N ON N.old = C.name_id LEFT JOIN smap A ON A.old = "
               "C.args_id WHERE 1 ON CONFLICT (pid, domain_id, name_id, args_id) DO UPDATE SET "
               "calls = calls + excluded.calls, total_ns = total_ns + excluded.total_ns, "
               "self_ns = self_ns + excluded.self_ns, min_duration_ns = "
               "max(min_duration_ns, excluded.min_duration_ns);",
               pa, (long long)empty, (long long)empty, (long long)empty)))
    return -1;
  /* a window keeps the part of each recording window inside it */
  long long lo = o->window ? (long long)o->lo : INT64_MIN,
            hi = o->window ? (long long)o->hi : INT64_MAX;
  if (windows &&
      (cp_exec(cmd, db, "creating nano_window", "%s", nano_rpdfile_window_schema_sql()) ||
       cp_exec(cmd, db, "copying the recording windows",
               "INSERT INTO main.nano_window(id, session, pid, start, \"end\") SELECT id + %lld, "
               "session + %lld, pid + %lld, max(start, %lld), min(\"end\", %lld) FROM "
               "src.nano_window WHERE start <= %lld AND \"end\" >= %lld;",
               idoff, so, pa, lo, hi, hi, lo)))
    return -1;
  if (disp) {
    char err[NANO_RPDFILE_ERRLEN];
    if (cp_exec(cmd, db, "creating the dispatch tables", "%s", nano_rpdfile_dispatch_schema_sql()))
      return -1;
    if (nano_rpdfile_dispatch_upgrade(db, "the output", err, sizeof err) != 0) {
      rpdtool_err(cmd, "%s", err);
      return -1;
    }
    /* the source's aggregate column, where its file has one */
    sqlite3_stmt *st = NULL;
    int src_agg = sqlite3_prepare_v2(db, "SELECT aggregate FROM src.nano_dispatch LIMIT 0", -1, &st,
                                     NULL) == SQLITE_OK;
    sqlite3_finalize(st);
    long long off_an =
        (long long)cp_int(db, &ok, "SELECT coalesce(max(id), 0) FROM main.nano_analysis");
    /* a launch call outside the window is not there to point at */
    char api_expr[128];
    snprintf(api_expr, sizeof api_expr,
             o->window ? "CASE WHEN api_id IN kapi THEN api_id + %lld END" : "api_id + %lld",
             (long long)off_api);
    if (!ok ||
        cp_exec(cmd, db, "copying dispatches",
                "INSERT INTO main.nano_dispatch(id, session, pid, api_id, kernel, kernel_name, "
                "kernel_dispatch, backend, arch, device, wave_size, grid_x, grid_y, grid_z, "
                "block_x, block_y, block_z, shared_bytes, start, \"end\", records, record_bytes, "
                "dropped, decode_errors, lost_bytes, aggregate) SELECT id + %lld, session + %lld, "
                "pid + %lld, %s, kernel, kernel_name, kernel_dispatch, backend, arch, device, "
                "wave_size, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes, "
                "start, \"end\", records, record_bytes, dropped, decode_errors, lost_bytes, %s "
                "FROM src.nano_dispatch WHERE %s;",
                idoff, so, pa, api_expr, src_agg ? "aggregate" : "NULL", win) ||
        cp_exec(cmd, db, "copying analyses",
                "INSERT INTO main.nano_analysis(id, dispatch_id, analyzer, report) SELECT id + "
                "%lld, dispatch_id + %lld, analyzer, report FROM src.nano_analysis WHERE "
                "dispatch_id IN (SELECT id FROM src.nano_dispatch WHERE %s);",
                off_an, idoff, win))
      return -1;
  }
  return 0;
}

/* Copies the attached source `src` into main, in the caller's transaction. */
static int cp_rows(const char *cmd, sqlite3 *db, const struct rpdtool_trace *s,
                   const struct an_copy_opts *o, struct an_copy_counts *c) {
  int ok = 1;
  int has_dom = s->has_domain;
  const char *args = s->has_ustring ? "src.rocpd_ustring" : "src.rocpd_string";
  int64_t pstride = an_meta_int(db, "pid_stride", RPDTOOL_PID_STRIDE);
  int64_t gstride = an_meta_int(db, "gpu_stride", 1000);
  int64_t padd = o->node * pstride, gadd = o->node * gstride;
  if (o->node > 0) {
    int64_t maxpid = cp_int(db, &ok, "SELECT coalesce(max(pid), 0) FROM src.rocpd_api");
    int64_t maxgpu = cp_int(db, &ok, "SELECT coalesce(max(gpuId), 0) FROM src.rocpd_op");
    if (ok && (maxpid >= pstride || maxgpu >= gstride)) {
      rpdtool_err(cmd,
                  "%s: already holds several nodes (pid %lld or gpuId %lld beyond the "
                  "strides %lld, %lld); merge its sources instead",
                  s->path, (long long)maxpid, (long long)maxgpu, (long long)pstride,
                  (long long)gstride);
      return -1;
    }
  }
  int64_t off_api = cp_int(db, &ok, "SELECT coalesce(max(id), 0) FROM main.rocpd_api");
  int64_t off_op = cp_int(db, &ok, "SELECT coalesce(max(id), 0) FROM main.rocpd_op");
  int64_t off_u = cp_int(db, &ok, "SELECT coalesce(max(id), 0) FROM main.rocpd_ustring");
  if (!ok) {
    rpdtool_err(cmd, "%s: reading ids: %s", s->path, sqlite3_errmsg(db));
    return -1;
  }
  sqlite3_stmt *look = NULL, *add = NULL;
  int64_t empty = an_intern(db, &look, &add, "");
  int64_t marker = empty < 0 || has_dom ? empty : an_intern(db, &look, &add, "UserMarker");
  sqlite3_finalize(look);
  sqlite3_finalize(add);
  if (empty < 0 || marker < 0) {
    rpdtool_err(cmd, "adding strings: %s", sqlite3_errmsg(db));
    return -1;
  }
  char api_cond[128] = "1", op_cond[160] = "1", mon_cond[128] = "1";
  if (o->window) {
    snprintf(api_cond, sizeof api_cond, "A.start >= %lld AND A.start <= %lld", (long long)o->lo,
             (long long)o->hi);
    snprintf(op_cond, sizeof op_cond,
             "O.start >= %lld AND O.start <= %lld AND O.id NOT IN (SELECT op_id FROM "
             "src.rocpd_api_ops)",
             (long long)o->lo, (long long)o->hi);
    snprintf(mon_cond, sizeof mon_cond, "M.start >= %lld AND M.start <= %lld", (long long)o->lo,
             (long long)o->hi);
  }
  /* Row filters: with a window, membership in the kept sets; else all rows. */
  const int w = o->window;
  const char *fa_id = w ? "id IN kapi" : "1", *fa_A = w ? "A.id IN kapi" : "1";
  const char *fa_ptr = w ? "api_ptr_id IN kapi" : "1", *fa_K = w ? "K.api_ptr_id IN kapi" : "1";
  const char *fa_F = w ? "F.api_ptr_id IN kapi" : "1", *fo_id = w ? "id IN kop" : "1";
  const char *fo_O = w ? "O.id IN kop" : "1", *fo_C = w ? "C.op_id IN kop" : "1";
  const char *f_links = w ? "api_id IN kapi AND op_id IN kop" : "1";
  int has_kern = 0, has_copy = 0, has_mon = 0, has_cnt = 0, has_sf = 0;
  const char *opt[] = {"rocpd_kernelapi", "rocpd_copyapi", "rocpd_monitor", "rocpd_counter",
                       "rocpd_stackframe"};
  int *flag[] = {&has_kern, &has_copy, &has_mon, &has_cnt, &has_sf};
  for (int i = 0; i < 5; i++)
    *flag[i] = (int)cp_int(db, &ok,
                           "SELECT count(*) FROM src.sqlite_master WHERE type='table' "
                           "AND name='%s'",
                           opt[i]);
  if (!ok) {
    rpdtool_err(cmd, "%s: reading the schema: %s", s->path, sqlite3_errmsg(db));
    return -1;
  }
  /* Kept calls and ops (a window only), the strings they use, the id map. */
  if (cp_exec(cmd, db, "selecting calls",
              "DROP TABLE IF EXISTS temp.kapi; DROP TABLE IF EXISTS temp.kop; "
              "DROP TABLE IF EXISTS temp.used; DROP TABLE IF EXISTS temp.smap; "
              "CREATE TEMP TABLE kapi(id INTEGER PRIMARY KEY); "
              "CREATE TEMP TABLE kop(id INTEGER PRIMARY KEY); "
              "CREATE TEMP TABLE used(old INTEGER PRIMARY KEY); "
              "CREATE TEMP TABLE smap(old INTEGER PRIMARY KEY, new INTEGER NOT NULL);") ||
      (w && cp_exec(cmd, db, "selecting calls",
                    "INSERT INTO kapi SELECT id FROM src.rocpd_api A WHERE %s; "
                    "INSERT OR IGNORE INTO kop SELECT op_id FROM src.rocpd_api_ops WHERE api_id "
                    "IN (SELECT id FROM kapi); "
                    "INSERT OR IGNORE INTO kop SELECT O.id FROM src.rocpd_op O WHERE %s;",
                    api_cond, op_cond)) ||
      cp_exec(cmd, db, "selecting strings",
              "INSERT OR IGNORE INTO used SELECT apiName_id FROM src.rocpd_api WHERE %s; "
              "INSERT OR IGNORE INTO used SELECT description_id FROM src.rocpd_op WHERE %s; "
              "INSERT OR IGNORE INTO used SELECT opType_id FROM src.rocpd_op WHERE %s;",
              fa_id, fo_id, fo_id) ||
      (has_dom && cp_exec(cmd, db, "selecting strings",
                          "INSERT OR IGNORE INTO used SELECT category_id FROM src.rocpd_api "
                          "WHERE %s; INSERT OR IGNORE INTO used SELECT domain_id FROM "
                          "src.rocpd_api WHERE %s;",
                          fa_id, fa_id)) ||
      (has_kern && cp_exec(cmd, db, "selecting strings",
                           "INSERT OR IGNORE INTO used SELECT kernelName_id FROM "
                           "src.rocpd_kernelapi WHERE %s;",
                           fa_ptr)) ||
      (has_cnt && cp_exec(cmd, db, "selecting strings",
                          "INSERT OR IGNORE INTO used SELECT name_id FROM src.rocpd_counter C "
                          "WHERE %s;",
                          fo_C)) ||
      (has_sf && cp_exec(cmd, db, "selecting strings",
                         "INSERT OR IGNORE INTO used SELECT name_id FROM src.rocpd_stackframe "
                         "WHERE %s;",
                         fa_ptr)) ||
      (cp_has(db, "src", "nano_call_summary", &ok) > 0 &&
       cp_exec(cmd, db, "selecting strings",
               "INSERT OR IGNORE INTO used SELECT domain_id FROM src.nano_call_summary; "
               "INSERT OR IGNORE INTO used SELECT name_id FROM src.nano_call_summary; "
               "INSERT OR IGNORE INTO used SELECT args_id FROM src.nano_call_summary;")) ||
      cp_exec(cmd, db, "copying strings",
              "INSERT INTO main.rocpd_string(string) SELECT DISTINCT S.string FROM "
              "src.rocpd_string S JOIN used U ON U.old = S.id WHERE NOT EXISTS (SELECT 1 FROM "
              "main.rocpd_string M WHERE M.string = S.string); "
              "INSERT INTO smap SELECT S.id, (SELECT min(M.id) FROM main.rocpd_string M WHERE "
              "M.string = S.string) FROM src.rocpd_string S JOIN used U ON U.old = S.id;"))
    return -1;
  /* Args strings (no de-duplication), calls, ops and their links. */
  if ((w || !s->has_ustring)
          ? cp_exec(cmd, db, "copying args",
                    "INSERT INTO main.rocpd_ustring(id, string) SELECT id + %lld, string FROM %s "
                    "WHERE id IN (SELECT args_id FROM src.rocpd_api WHERE %s);",
                    (long long)off_u, args, fa_id)
          : cp_exec(cmd, db, "copying args",
                    "INSERT INTO main.rocpd_ustring(id, string) SELECT id + %lld, string FROM %s;",
                    (long long)off_u, args))
    return -1;
  if (has_dom) {
    if (cp_exec(cmd, db, "copying calls",
                "INSERT INTO main.rocpd_api(id, pid, tid, start, end, apiName_id, category_id, "
                "domain_id, args_id) SELECT A.id + %lld, A.pid + %lld, A.tid, A.start, A.end, "
                "coalesce(N.new, %lld), coalesce(C.new, %lld), coalesce(D.new, %lld), "
                "A.args_id + %lld FROM src.rocpd_api A LEFT JOIN smap N ON N.old = A.apiName_id "
                "LEFT JOIN smap C ON C.old = A.category_id LEFT JOIN smap D ON D.old = "
                "A.domain_id WHERE %s;",
                (long long)off_api, (long long)padd, (long long)empty, (long long)empty,
                (long long)empty, (long long)off_u, fa_A))
      return -1;
  } else if (cp_exec(cmd, db, "copying calls",
                     "INSERT INTO main.rocpd_api(id, pid, tid, start, end, apiName_id, "
                     "category_id, domain_id, args_id) SELECT A.id + %lld, A.pid + %lld, A.tid, "
                     "A.start, A.end, coalesce(N.new, %lld), %lld, CASE WHEN N.new = %lld THEN "
                     "%lld ELSE %lld END, A.args_id + %lld FROM src.rocpd_api A LEFT JOIN smap N "
                     "ON N.old = A.apiName_id WHERE %s;",
                     (long long)off_api, (long long)padd, (long long)empty, (long long)empty,
                     (long long)marker, (long long)marker, (long long)empty, (long long)off_u,
                     fa_A)) {
    return -1;
  }
  c->api += sqlite3_changes(db);
  if (cp_exec(cmd, db, "copying ops",
              "INSERT INTO main.rocpd_op(id, gpuId, queueId, sequenceId, start, end, "
              "description_id, opType_id) SELECT O.id + %lld, O.gpuId + %lld, O.queueId, "
              "O.sequenceId, O.start, O.end, coalesce(N.new, %lld), coalesce(T.new, %lld) FROM "
              "src.rocpd_op O LEFT JOIN smap N ON N.old = O.description_id LEFT JOIN smap T ON "
              "T.old = O.opType_id WHERE %s;",
              (long long)off_op, (long long)gadd, (long long)empty, (long long)empty, fo_O))
    return -1;
  c->op += sqlite3_changes(db);
  if (cp_exec(cmd, db, "copying call-op links",
              "INSERT INTO main.rocpd_api_ops(api_id, op_id) SELECT api_id + %lld, op_id + %lld "
              "FROM src.rocpd_api_ops WHERE %s;",
              (long long)off_api, (long long)off_op, f_links))
    return -1;
  if (has_kern && cp_exec(cmd, db, "copying kernel launches",
                          "INSERT INTO main.rocpd_kernelapi(api_ptr_id, stream, gridX, gridY, "
                          "gridZ, workgroupX, workgroupY, workgroupZ, groupSegmentSize, "
                          "privateSegmentSize, kernelName_id) SELECT K.api_ptr_id + %lld, "
                          "K.stream, K.gridX, K.gridY, K.gridZ, K.workgroupX, K.workgroupY, "
                          "K.workgroupZ, K.groupSegmentSize, K.privateSegmentSize, "
                          "coalesce(N.new, %lld) FROM src.rocpd_kernelapi K LEFT JOIN smap N ON "
                          "N.old = K.kernelName_id WHERE %s;",
                          (long long)off_api, (long long)empty, fa_K))
    return -1;
  if (has_copy && cp_exec(cmd, db, "copying copies",
                          "INSERT INTO main.rocpd_copyapi(api_ptr_id, stream, size, width, "
                          "height, kind, dst, src, dstDevice, srcDevice, sync, pinned) SELECT "
                          "api_ptr_id + %lld, stream, size, width, height, kind, dst, src, "
                          "dstDevice, srcDevice, sync, pinned FROM src.rocpd_copyapi WHERE %s;",
                          (long long)off_api, fa_ptr))
    return -1;
  if (has_mon) {
    if (cp_exec(cmd, db, "copying monitor samples",
                "INSERT INTO main.rocpd_monitor(deviceType, deviceId, monitorType, start, end, "
                "value) SELECT deviceType, deviceId + %lld, monitorType, start, end, value FROM "
                "src.rocpd_monitor M WHERE %s;",
                (long long)gadd, mon_cond))
      return -1;
    c->monitor += sqlite3_changes(db);
  }
  if (has_cnt && cp_exec(cmd, db, "copying counters",
                         "INSERT INTO main.rocpd_counter(value, op_id, name_id) SELECT C.value, "
                         "C.op_id + %lld, coalesce(N.new, %lld) FROM src.rocpd_counter C LEFT "
                         "JOIN smap N ON N.old = C.name_id WHERE %s;",
                         (long long)off_op, (long long)empty, fo_C))
    return -1;
  if (has_sf && cp_exec(cmd, db, "copying stack frames",
                        "INSERT INTO main.rocpd_stackframe(api_ptr_id, depth, name_id) SELECT "
                        "F.api_ptr_id + %lld, F.depth, coalesce(N.new, %lld) FROM "
                        "src.rocpd_stackframe F LEFT JOIN smap N ON N.old = F.name_id WHERE %s;",
                        (long long)off_api, (long long)empty, fa_F))
    return -1;
  if (s->has_names &&
      (cp_exec(cmd, db, "creating nano_thread", "%s", nano_rpdfile_thread_schema_sql()) ||
       cp_exec(cmd, db, "copying thread names",
               "INSERT OR REPLACE INTO main.nano_thread(pid, tid, name) SELECT pid + %lld, tid, "
               "name FROM src.nano_thread;",
               (long long)padd)))
    return -1;
  if (cp_nano(cmd, db, s, o, padd, off_api, empty))
    return -1;
  /* What the source's recording lost (records dropped or never written:
   * counts that readers sum; GPU kernels run uninstrumented: why), so a
   * merged or trimmed trace still says it is incomplete. A window keeps them
   * all: nothing dates a loss. */
  if (cp_exec(cmd, db, "copying the counts of lost records",
              "INSERT INTO main.rocpd_metadata(tag, value) SELECT tag, value FROM "
              "src.rocpd_metadata WHERE tag IN ('nano_dropped_records', 'nano_lost_records', "
              "'" NANO_RPDFILE_TAG_GPU_UNAVAILABLE "');") ||
      cp_sessions(cmd, db))
    return -1;
  c->strings = cp_int(db, &ok, "SELECT count(*) FROM main.rocpd_string");
  return cp_exec(cmd, db, "cleaning up",
                 "DROP TABLE temp.kapi; DROP TABLE temp.kop; DROP TABLE temp.used; "
                 "DROP TABLE temp.smap;");
}

int an_copy(const char *cmd, sqlite3 *db, const struct rpdtool_trace *src,
            const struct an_copy_opts *o, struct an_copy_counts *c) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, "ATTACH DATABASE ?1 AS src", -1, &st, NULL) != SQLITE_OK ||
      sqlite3_bind_text(st, 1, src->path, -1, SQLITE_STATIC) != SQLITE_OK ||
      sqlite3_step(st) != SQLITE_DONE) {
    rpdtool_err(cmd, "%s: cannot attach: %s", src->path, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return -1;
  }
  sqlite3_finalize(st);
  int ret = -1;
  if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
    rpdtool_err(cmd, "cannot start a transaction: %s", sqlite3_errmsg(db));
  } else {
    ret = cp_rows(cmd, db, src, o, c);
    if (ret == 0 && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
      rpdtool_err(cmd, "commit failed: %s", sqlite3_errmsg(db));
      ret = -1;
    }
    if (ret)
      sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
  }
  if (sqlite3_exec(db, "DETACH DATABASE src", NULL, NULL, NULL) != SQLITE_OK && !ret) {
    rpdtool_err(cmd, "%s: cannot detach: %s", src->path, sqlite3_errmsg(db));
    ret = -1;
  }
  return ret;
}

/* ---- new output files -------------------------------------------------- */

int an_out_check(const char *cmd, const char *out, const char *tag, const char *value) {
  if (access(out, F_OK) != 0)
    return 0;
  struct rpdtool_trace t;
  char *have = NULL;
  int same = 0;
  if (rpdtool_open(cmd, out, RPDTOOL_READ, &t) == 0) {
    same = an_meta_get(t.db, tag, &have) == 1 && !strcmp(have, value);
    free(have);
    rpdtool_close(&t);
  }
  if (same)
    return AN_ALREADY;
  return rpdtool_err(cmd,
                     "%s exists and was not made by this same command; refusing to "
                     "overwrite it (remove it or choose another output)",
                     out);
}

int an_out_create(const char *cmd, const char *out, struct an_out *o) {
  char err[NANO_RPDFILE_ERRLEN];
  *o = (struct an_out){.path = out};
  int fd = nano_outfile_temp(out, &o->tmp, err, sizeof err);
  if (fd < 0)
    return rpdtool_err(cmd, "%s", err);
  close(fd); /* SQLite opens it by name: an empty file becomes a new trace */
  if (nano_rpdfile_open_write(o->tmp, 0, NANO_RPDFILE_SYNC_NORMAL, &o->db, err, sizeof err) !=
      NANO_RPDFILE_OK) {
    rpdtool_err(cmd, "%s", err);
    an_out_discard(o);
    return RPDTOOL_EXIT_FAIL;
  }
  /* A large page cache keeps the copied rows in memory until the commit. */
  if (sqlite3_exec(o->db, "PRAGMA cache_size=-131072", NULL, NULL, NULL) != SQLITE_OK) {
    rpdtool_err(cmd, "%s: cannot set the cache size: %s", o->tmp, sqlite3_errmsg(o->db));
    an_out_discard(o);
    return RPDTOOL_EXIT_FAIL;
  }
  return 0;
}

void an_out_discard(struct an_out *o) {
  char err[NANO_RPDFILE_ERRLEN];
  if (o->db)
    nano_rpdfile_close(o->db, o->tmp, err, sizeof err);
  o->db = NULL;
  if (o->tmp) {
    const char *sfx[] = {"", "-wal", "-shm", "-journal"};
    for (int i = 0; i < 4; i++) {
      char *p = sqlite3_mprintf("%s%s", o->tmp, sfx[i]);
      if (p)
        unlink(p);
      sqlite3_free(p);
    }
  }
  free(o->tmp);
  o->tmp = NULL;
}

int an_out_finish(const char *cmd, struct an_out *o, const char *tag, const char *value) {
  char err[NANO_RPDFILE_ERRLEN];
  if (an_meta_set(o->db, tag, value) != SQLITE_OK) {
    rpdtool_err(cmd, "%s: cannot write rocpd_metadata: %s", o->tmp, sqlite3_errmsg(o->db));
    an_out_discard(o);
    return RPDTOOL_EXIT_FAIL;
  }
  int rc = nano_rpdfile_close(o->db, o->tmp, err, sizeof err);
  o->db = NULL;
  if (rc != NANO_RPDFILE_OK) {
    rpdtool_err(cmd, "%s", err);
    an_out_discard(o);
    return RPDTOOL_EXIT_FAIL;
  }
  /* into place only where nothing is (an_out_check found nothing): link
   * fails rather than replace what appeared meanwhile */
  if (link(o->tmp, o->path) != 0) {
    rpdtool_err(cmd, "cannot move %s to %s: %s", o->tmp, o->path, strerror(errno));
    an_out_discard(o);
    return RPDTOOL_EXIT_FAIL;
  }
  if (unlink(o->tmp) != 0)
    rpdtool_err(cmd, "%s: cannot remove it: %s (%s is complete)", o->tmp, strerror(errno), o->path);
  free(o->tmp);
  o->tmp = NULL;
  return 0;
}
