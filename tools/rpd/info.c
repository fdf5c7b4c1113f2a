/*
 * info.c: `rpd info FILE`: what is in a trace: schema version, time span,
 * dropped records, rows per table, processes, threads (with the names the
 * OS gave them, when the tracer stored them), GPUs with their queues, and the
 * instrumented kernel dispatches with the analyses stored for them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "rpdtool.h"

#define RPD_INFO_THREADS 64 /* threads listed at most */
#define RPD_INFO_STR(x) #x
#define RPD_INFO_XSTR(x) RPD_INFO_STR(x)
#define RPD_INFO_THREADS_STR RPD_INFO_XSTR(RPD_INFO_THREADS)

static const char rpd_info_help[] =
    "usage: rpd info FILE\n"
    "Prints what an RPD trace holds: schema version, time span, dropped records,\n"
    "rows per table, processes (threads, API calls), threads (name, API calls; the\n"
    "first " RPD_INFO_THREADS_STR "), GPUs (queues, ops, busy time), instrumented kernel\n"
    "dispatches (the first " RPD_INFO_THREADS_STR "; records, drops) and the analyses stored\n"
    "for them (see 'rpd report'), and the host atomics per kind.\n";

/* Prints the row count of every table (not views, not SQLite's own). 0 or 1. */
static int rpd_info_tables(struct rpdtool_trace *t) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(t->db,
                         "SELECT name FROM sqlite_master WHERE type='table' "
                         "AND name NOT LIKE 'sqlite_%' ORDER BY name",
                         -1, &st, NULL) != SQLITE_OK)
    return rpdtool_err("info", "%s: %s", t->path, sqlite3_errmsg(t->db));
  static const char *const hdr[] = {"table", "rows"};
  struct rpdtool_table tb;
  if (rpdtool_table_init(&tb, 2, hdr) != 0) {
    sqlite3_finalize(st);
    return rpdtool_err("info", "out of memory");
  }
  rpdtool_table_right(&tb, 1);
  int rc, ret = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *name = (const char *)sqlite3_column_text(st, 0);
    char *sql = sqlite3_mprintf("SELECT count(*) FROM \"%w\"", name);
    int64_t n = 0;
    if (!sql || rpdtool_int(t->db, sql, &n) != 0) {
      ret = rpdtool_err("info", "%s: cannot count table %s: %s", t->path, name,
                        sqlite3_errmsg(t->db));
      sqlite3_free(sql);
      break;
    }
    sqlite3_free(sql);
    char num[32];
    snprintf(num, sizeof num, "%" PRId64, n);
    const char *cells[] = {name, num};
    if (rpdtool_table_add(&tb, cells) != 0) {
      ret = rpdtool_err("info", "out of memory");
      break;
    }
  }
  if (!ret && rc != SQLITE_DONE)
    ret = rpdtool_err("info", "%s: %s", t->path, sqlite3_errmsg(t->db));
  if (!ret) {
    printf("\nrows per table:\n");
    rpdtool_table_print(&tb, stdout);
  }
  rpdtool_table_free(&tb);
  sqlite3_finalize(st);
  return ret;
}

/* The host atomics the tracer stored (nano_atomic_totals, atomics.c of the
 * tracer): totals per kind, when the trace has any. 0 or 1. */
static int rpd_info_atomics(struct rpdtool_trace *t) {
  int has = nano_rpdfile_has_object(t->db, "nano_atomic_totals");
  int64_t n = 0;
  if (has < 0 || (has && rpdtool_int(t->db, "SELECT count(*) FROM nano_atomic_totals", &n)))
    return rpdtool_err("info", "%s: %s", t->path, sqlite3_errmsg(t->db));
  if (n == 0)
    return 0;
  printf("\nhost atomics per kind:\n");
  return rpdtool_print_query("info", t->db, "SELECT kind, count FROM nano_atomic_totals", 0,
                             stdout);
}

/* The select-list item "name" of rows X (columns pid, tid): the OS name the
 * tracer stored in nano_thread for (X.pid, tid_expr) (see pid_stride in
 * rpdtool.h for the row naming a process); "" when the trace has no names.
 * sqlite3_malloc'd (NULL: no memory). */
static char *rpd_info_name_column(const struct rpdtool_trace *t, const char *tid_expr) {
  if (!t->has_names)
    return sqlite3_mprintf("%s", "");
  return sqlite3_mprintf(
      "(SELECT name FROM nano_thread N WHERE N.pid=X.pid AND N.tid=%s) AS name, ", tid_expr);
}

/* The instrumented dispatches (nano_dispatch) and the analyses stored for
 * them (nano_analysis). 0 or 1. */
static int rpd_info_dispatches(struct rpdtool_trace *t) {
  int64_t n = 0, dropped = 0;
  if (rpdtool_int(t->db, "SELECT count(*) FROM nano_dispatch", &n) ||
      rpdtool_int(t->db, "SELECT coalesce(sum(dropped), 0) FROM nano_dispatch", &dropped))
    return rpdtool_err("info", "%s: %s", t->path, sqlite3_errmsg(t->db));
  printf("\ninstrumented dispatches: %" PRId64 ", records dropped in them: %" PRId64 "\n", n,
         dropped);
  if (!n)
    return 0;
  printf("dispatches%s:\n", n > RPD_INFO_THREADS ? " (the first " RPD_INFO_THREADS_STR ")" : "");
  char *sql = sqlite3_mprintf(
      "SELECT id, kernel_name AS kernel, kernel_dispatch AS nth, backend, arch, wave_size AS wave, "
      "grid_x || 'x' || grid_y || 'x' || grid_z AS grid, "
      "block_x || 'x' || block_y || 'x' || block_z AS block, %s AS summed, records, dropped, "
      "\"end\" - start AS duration_ns FROM nano_dispatch ORDER BY id",
      t->dispatch_where_sql);
  if (!sql)
    return rpdtool_err("info", "out of memory");
  int ret = rpdtool_print_query("info", t->db, sql, RPD_INFO_THREADS, stdout);
  sqlite3_free(sql);
  if (ret)
    return ret;
  printf("\nanalyses:\n");
  return rpdtool_print_query("info", t->db,
                             "SELECT analyzer, count(*) AS dispatches, sum(length(report)) AS "
                             "report_bytes FROM nano_analysis GROUP BY analyzer ORDER BY analyzer",
                             0, stdout);
}

/* SQLite's quick_check of the whole file (every page read once: linear, and
 * about what counting the rows costs). Returns 0 with *problem NULL when the
 * file is sound, 0 with *problem (sqlite3_free) naming the first problem, -1
 * when the check itself cannot run. */
static int rpd_info_integrity(struct rpdtool_trace *t, char **problem) {
  *problem = NULL;
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(t->db, "PRAGMA main.quick_check(1)", -1, &st, NULL) != SQLITE_OK)
    return -1;
  int rc = sqlite3_step(st), ret = 0;
  if (rc == SQLITE_ROW) {
    const char *v = (const char *)sqlite3_column_text(st, 0);
    if (!v || strcmp(v, "ok") != 0) {
      static const char banner[] = "*** in database main ***\n";
      if (v && !strncmp(v, banner, sizeof banner - 1))
        v += sizeof banner - 1;
      *problem = sqlite3_mprintf("%s", v ? v : "(no answer)");
      for (char *c = *problem; c && *c; c++)
        if (*c == '\n')
          *c = ' ';
    }
  } else if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB) {
    *problem = sqlite3_mprintf("%s", sqlite3_errmsg(t->db));
  } else {
    ret = -1;
  }
  sqlite3_finalize(st);
  return ret;
}

/* Prints why the run's GPU kernels ran uninstrumented where the runtime
 * recorded it (rocpd_metadata nano_gpu_unavailable: its GPU back end could
 * not start), one line per reason. 0, or RPDTOOL_EXIT_FAIL (said). */
static int rpd_info_gpu_unavailable(const struct rpdtool_trace *t) {
  sqlite3_stmt *st = rpdtool_prepare(
      "info", t,
      "SELECT DISTINCT value FROM rocpd_metadata WHERE tag = '" NANO_RPDFILE_TAG_GPU_UNAVAILABLE
      "'");
  if (!st)
    return RPDTOOL_EXIT_FAIL;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    printf("GPU back end:    %s\n", (const char *)sqlite3_column_text(st, 0));
  return rpdtool_done("info", t, st, rc, stdout, "standard output");
}

int rpd_cmd_info(int argc, char **argv) {
  const char *file;
  int ret = rpdtool_parse_args(argc, argv, rpd_info_help, NULL, &file);
  if (ret != RPDTOOL_PARSED)
    return ret;
  struct rpdtool_trace t;
  ret = rpdtool_open_view("info", file, &t);
  if (ret)
    return ret;
  char *damage = NULL; /* quick_check's first problem */

  int64_t lo, hi;
  int has = rpdtool_span(&t, &lo, &hi);
  int64_t dropped = 0;
  if (has < 0 || rpdtool_metadata_sum(&t, "nano_dropped_records", &dropped) != 0) {
    ret = rpdtool_err("info", "%s: %s", t.path, sqlite3_errmsg(t.db));
    goto out;
  }
  printf("file:            %s\n", t.path);
  printf("schema version:  %d\n", t.schema_version);
  if (has && hi == lo) /* an atomics-only trace: its one sample, at exit */
    printf("time span:       none: everything at %" PRId64 " ns (atomics counts sampled once, "
           "no timed records)\n",
           lo);
  else if (has)
    printf("time span:       %" PRId64 " .. %" PRId64 " ns (%.6f s)\n", lo, hi,
           (double)rpdtool_sub(hi, lo) / 1e9);
  else
    printf("time span:       empty (no records)\n");
  printf("dropped records: %" PRId64 "\n", dropped);
  if ((ret = rpd_info_gpu_unavailable(&t)))
    goto out;
  if (rpd_info_integrity(&t, &damage) != 0) {
    ret = rpdtool_err("info", "%s: cannot check the file: %s", t.path, sqlite3_errmsg(t.db));
    goto out;
  }
  printf("integrity:       %s\n", damage ? "DAMAGED (see the end)" : "ok (SQLite quick_check)");
  if ((ret = rpd_info_tables(&t)))
    goto out;

  char pexpr[48];
  snprintf(pexpr, sizeof pexpr, "X.pid %% %" PRId64, t.pid_stride);
  char *pname = rpd_info_name_column(&t, pexpr), *tname = rpd_info_name_column(&t, "X.tid");
  char *sql =
      pname
          ? sqlite3_mprintf("SELECT pid, %s count(DISTINCT tid) AS threads, count(*) AS api_calls, "
                            "sum(domain='UserMarker' OR apiName='UserMarker') AS user_markers, "
                            "min(start) AS first_ns, max(end) AS last_ns "
                            "FROM (%s) X GROUP BY pid ORDER BY pid",
                            pname, rpdtool_api_sql(&t))
          : NULL;
  char *threads = tname ? sqlite3_mprintf("SELECT pid, tid, %s count(*) AS api_calls, "
                                          "min(start) AS first_ns, max(end) AS last_ns "
                                          "FROM rocpd_api X GROUP BY pid, tid ORDER BY pid, tid",
                                          tname)
                        : NULL;
  sqlite3_free(pname);
  sqlite3_free(tname);
  if (!sql || !threads) {
    sqlite3_free(sql);
    sqlite3_free(threads);
    ret = rpdtool_err("info", "out of memory");
    goto out;
  }
  int64_t np = 0, nt = 0, ng = 0;
  if (rpdtool_processes(&t, &np) ||
      rpdtool_int(t.db, "SELECT count(*) FROM (SELECT DISTINCT pid, tid FROM rocpd_api)", &nt) ||
      rpdtool_int(t.db, "SELECT count(DISTINCT gpuId) FROM rocpd_op", &ng)) {
    sqlite3_free(sql);
    sqlite3_free(threads);
    ret = rpdtool_err("info", "%s: %s", t.path, sqlite3_errmsg(t.db));
    goto out;
  }
  printf("\nprocesses: %" PRId64 ", threads: %" PRId64 "\n", np, nt);
  if (nt) /* the threads that made API rows */
    ret = rpdtool_print_query("info", t.db, sql, 0, stdout);
  sqlite3_free(sql);
  if (!ret && nt) {
    printf("\nthreads%s:\n", nt > RPD_INFO_THREADS ? " (the first " RPD_INFO_THREADS_STR ")" : "");
    ret = rpdtool_print_query("info", t.db, threads, RPD_INFO_THREADS, stdout);
  }
  sqlite3_free(threads);
  if (ret)
    goto out;
  printf("\nGPUs: %" PRId64 "\n", ng);
  if (ng)
    ret = rpdtool_print_query(
        "info", t.db,
        "SELECT gpuId AS gpu, count(DISTINCT queueId) AS queues, count(*) AS ops, "
        "sum(end-start) AS busy_ns, min(start) AS first_ns, max(end) AS last_ns "
        "FROM rocpd_op GROUP BY gpuId ORDER BY gpuId",
        0, stdout);
  if (!ret && t.has_dispatches)
    ret = rpd_info_dispatches(&t);
  if (!ret)
    ret = rpd_info_atomics(&t);
  if (damage) {
    fflush(stdout);
    ret = rpdtool_err("info",
                      "%s: the file is damaged (SQLite quick_check: %s); what is shown "
                      "above may be incomplete or wrong",
                      t.path, damage);
  }
out:
  sqlite3_free(damage);
  rpdtool_close(&t);
  return ret;
}
