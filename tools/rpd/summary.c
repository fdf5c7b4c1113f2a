/*
 * summary.c: `rpd summary FILE [--limit N]`: what a user wants first after a
 * run, as nsys's stats: one line of totals, then only the sections the trace
 * has rows for:
 *
 *   ranges and API calls   by name (a user range's message), longest total
 *                          first; a nested range counts in its own total only
 *   GPU ops                rpd top's table
 *   instrumented kernels   nano_dispatch by kernel: dispatches, time, records
 *   memory findings        nano_memory lines that use more cache lines than
 *                          they need, worst ratio first
 *   atomics                totals per kind, then the busiest sites
 *   losses                 dropped and lost records, when there are any
 *
 * `nanoprobe run` prints it after the application ends.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "rpdtool.h"

/* Rows per section unless --limit says otherwise. */
#define SUMMARY_DEFAULT_LIMIT 5

static const char rpd_summary_help[] =
    "usage: rpd summary [--limit N] [--atomics] FILE\n"
    "Prints a short summary of an RPD trace: totals; the longest ranges and API\n"
    "calls; GPU ops; instrumented kernels; memory findings (source lines that use\n"
    "more cache lines than they need); atomics per kind and the busiest sites;\n"
    "dropped or lost records. Sections without rows are left out.\n"
    "  -n, --limit N   rows per section (default 5; 0 = all)\n"
    "  --atomics       say so when the trace has no atomics counts\n";

/* One section: its title and table, when its query has rows (each query
 * runs once). */
static int summary_section(const char *title, sqlite3 *db, const char *sql, long limit) {
  return rpdtool_print_section("summary", db, sql, limit, title, stdout);
}

/* The totals line. 0, or RPDTOOL_EXIT_FAIL after saying why. */
static int summary_totals(struct rpdtool_trace *t) {
  int64_t procs = 0, api = 0, ops = 0, dispatches = 0, lo = 0, hi = 0;
  /* the processes that recorded something: API rows, or only atomics */
  int atomics = rpdtool_has_object(t->db, "nano_atomic_site");
  char *pids = atomics < 0 ? NULL
               : sqlite3_mprintf("SELECT count(*) FROM (SELECT pid FROM rocpd_api%s)",
                                 atomics ? " UNION SELECT pid FROM nano_atomic_site" : "");
  int rc = pids ? rpdtool_int(t->db, pids, &procs) : -1;
  sqlite3_free(pids);
  if (rc ||
      rpdtool_int(t->db, "SELECT count(*) FROM rocpd_api", &api) ||
      rpdtool_int(t->db, "SELECT count(*) FROM rocpd_op", &ops) ||
      (t->has_dispatches &&
       rpdtool_int(t->db, "SELECT count(*) FROM nano_dispatch", &dispatches)) ||
      rpdtool_span(t, &lo, &hi) < 0)
    return rpdtool_err("summary", "%s: %s", t->path, sqlite3_errmsg(t->db));
  printf("%s: %" PRId64 " process%s, %.6f s; %" PRId64 " ranges and API calls, %" PRId64
         " GPU ops, %" PRId64 " instrumented dispatches\n",
         t->path, procs, procs == 1 ? "" : "es", (double)rpdtool_sub(hi, lo) / 1e9, api, ops,
         dispatches);
  return 0;
}

/* The losses line: records the tracer dropped or lost, and records of
 * instrumented dispatches dropped. 0, or RPDTOOL_EXIT_FAIL. */
static int summary_losses(struct rpdtool_trace *t) {
  int64_t dropped = 0, lost = 0, dispatch_dropped = 0;
  if (rpdtool_metadata_sum(t, "nano_dropped_records", &dropped) ||
      rpdtool_metadata_sum(t, "nano_lost_records", &lost) ||
      (t->has_dispatches &&
       rpdtool_int(t->db, "SELECT coalesce(sum(dropped), 0) FROM nano_dispatch",
                   &dispatch_dropped)))
    return rpdtool_err("summary", "%s: %s", t->path, sqlite3_errmsg(t->db));
  if (dropped || lost || dispatch_dropped)
    printf("\nlosses: %" PRId64 " records dropped, %" PRId64 " lost to write failures, %" PRId64
           " kernel records dropped (rpd info says more)\n",
           dropped, lost, dispatch_dropped);
  return 0;
}

int rpd_cmd_summary(int argc, char **argv) {
  long limit = SUMMARY_DEFAULT_LIMIT;
  const char *limit_s = NULL, *file;
  int want_atomics = 0;
  const struct rpdtool_opt opts[] = {{"limit", 'n', &limit_s, NULL},
                                     {"atomics", 0, NULL, &want_atomics},
                                     {NULL, 0, NULL, NULL}};
  int ret = rpdtool_parse_args(argc, argv, rpd_summary_help, opts, &file);
  if (ret != RPDTOOL_PARSED) return ret;
  if (limit_s && rpdtool_parse_count(limit_s, &limit) != 0)
    return rpdtool_usage("summary", "--limit expects a number >= 0, not '%s'", limit_s);
  struct rpdtool_trace t;
  ret = rpdtool_open_view("summary", file, &t);
  if (ret) return ret;
  ret = summary_totals(&t);

  char *ranges = rpdtool_ranges_sql(&t);
  if (!ranges) ret = rpdtool_err("summary", "out of memory");
  if (!ret) ret = summary_section("ranges and API calls, longest total first", t.db, ranges, limit);
  sqlite3_free(ranges);

  if (!ret) {
    int has = rpdtool_has_rows(t.db, "rocpd_op");
    char *top = has > 0 ? rpdtool_top_sql("summary", &t) : NULL;
    if (has < 0 || (has > 0 && !top))
      ret = RPDTOOL_EXIT_FAIL;
    else if (top)
      ret = summary_section("GPU ops, longest total first", t.db, top, limit);
    sqlite3_free(top);
  }
  if (!ret && t.has_dispatches)
    ret = summary_section(
        "instrumented kernels", t.db,
        "SELECT kernel_name AS kernel, count(*) AS dispatches, "
        "sum(\"end\" - start) / 1e6 AS total_ms, sum(records) AS records, "
        "sum(dropped) AS dropped FROM nano_dispatch GROUP BY kernel_name "
        "ORDER BY sum(\"end\" - start) DESC",
        limit);
  if (!ret && rpdtool_has_rows(t.db, "nano_analysis") > 0)
    ret = summary_section(
        "memory findings: cache lines used per line needed, worst first", t.db,
        "SELECT kernel, file || ':' || line AS location, kind, lines_used, lines_needed, "
        "lines_used * 1.0 / lines_needed AS ratio, bank_conflicts FROM nano_memory "
        "WHERE lines_needed > 0 AND lines_used > lines_needed "
        "ORDER BY lines_used * 1.0 / lines_needed DESC, lines_used DESC",
        limit);
  int atomics = ret ? 0 : rpdtool_has_rows(t.db, "nano_atomic_count");
  if (atomics == 0 && !ret && want_atomics)
    printf("\natomics: none counted; a program counts its atomics when it is built with the "
           "plugin (docs/atomics.md)\n");
  if (atomics > 0) {
    ret = summary_section("atomics per kind", t.db,
                          "SELECT kind, count FROM nano_atomic_totals ORDER BY count DESC", 0);
    if (!ret)
      ret = summary_section(
          "busiest atomic sites", t.db,
          "SELECT S.kind, S.function, S.file || ':' || S.line AS location, C.count "
          "FROM nano_atomic_count C JOIN nano_atomic_site S ON S.id = C.site_id "
          "WHERE C.count > 0 ORDER BY C.count DESC",
          limit);
  }
  if (!ret) ret = summary_losses(&t);
  rpdtool_close(&t);
  return ret;
}
