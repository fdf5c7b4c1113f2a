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
 *   atomics                totals per kind, then the busiest sites; while a
 *                          program runs (or after it died before its last
 *                          flush), the totals of the latest samples
 *   losses                 dropped and lost records, when there are any
 *
 * `nanoprobe run` prints it after the application ends. `rpd watch FILE`
 * prints it again every few seconds while a program records into FILE.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
  if (rpdtool_processes(t, &procs) || rpdtool_int(t->db, "SELECT count(*) FROM rocpd_api", &api) ||
      rpdtool_int(t->db, "SELECT count(*) FROM rocpd_op", &ops) ||
      (t->has_dispatches &&
       rpdtool_int(t->db, "SELECT count(*) FROM nano_dispatch", &dispatches)) ||
      rpdtool_span(t, &lo, &hi) < 0)
    return rpdtool_err("summary", "%s: %s", t->path, sqlite3_errmsg(t->db));
  char span[64];
  if (hi == lo) /* nothing timed (an atomics-only trace: one sample, at exit) */
    snprintf(span, sizeof span, "no time span");
  else
    snprintf(span, sizeof span, "%.6f s", (double)rpdtool_sub(hi, lo) / 1e9);
  printf("%s: %" PRId64 " process%s, %s; %" PRId64 " ranges and API calls, %" PRId64
         " GPU ops, %" PRId64 " instrumented dispatches\n",
         t->path, procs, procs == 1 ? "" : "es", span, api, ops, dispatches);
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

/* The totals per kind of the latest atomics samples of every process and
 * session (nano_atomic_sample): the live counts before a flush stores them. */
static const char summary_sampled_atomics_sql[] =
    "SELECT S.kind, sum(S.count) AS count FROM nano_atomic_sample S JOIN "
    "(SELECT session, pid, kind_id, max(start) AS last FROM nano_atomic_sample "
    "GROUP BY session, pid, kind_id) L ON S.session = L.session AND S.pid = L.pid AND "
    "S.kind_id = L.kind_id AND S.start = L.last GROUP BY S.kind_id, S.kind ORDER BY count DESC";

/* Library atomics (NANO_SITE_LIBRARY) per caller in the user's code. */
static const char summary_callers_sql[] =
    "SELECT kind, library_function, CASE WHEN file = '' THEN '(none in your files)' "
    "ELSE caller END AS caller, CASE WHEN file = '' THEN '' ELSE file || ':' || line END "
    "AS location, count FROM nano_atomic_callers";

/* Everything after the totals line. 0 or RPDTOOL_EXIT_FAIL. */
static int summary_sections(struct rpdtool_trace *t, long limit, int want_atomics) {
  int ret = 0;

  char *ranges = rpdtool_ranges_sql(t);
  if (!ranges)
    ret = rpdtool_err("summary", "out of memory");
  if (!ret)
    ret = summary_section("ranges and API calls, longest total first", t->db, ranges, limit);
  sqlite3_free(ranges);

  if (!ret) {
    int has = rpdtool_has_rows(t->db, "rocpd_op");
    char *top = has > 0 ? rpdtool_top_sql("summary", t) : NULL;
    if (has < 0 || (has > 0 && !top))
      ret = RPDTOOL_EXIT_FAIL;
    else if (top)
      ret = summary_section("GPU ops, longest total first", t->db, top, limit);
    sqlite3_free(top);
  }
  if (!ret && t->has_dispatches) {
    char *sql = sqlite3_mprintf(
        "SELECT kernel_name AS kernel, count(*) AS dispatches, "
        "sum(\"end\" - start) / 1e6 AS total_ms, group_concat(DISTINCT %s) AS summed, "
        "sum(records) AS records, sum(dropped) AS dropped FROM nano_dispatch "
        "GROUP BY kernel_name ORDER BY sum(\"end\" - start) DESC",
        t->dispatch_where_sql);
    ret = sql ? summary_section("instrumented kernels", t->db, sql, limit)
              : rpdtool_err("summary", "out of memory");
    sqlite3_free(sql);
  }
  if (!ret && rpdtool_has_rows(t->db, "nano_analysis") > 0)
    ret = summary_section(
        "memory findings: cache lines used per line needed, worst first", t->db,
        "SELECT kernel, file || ':' || line AS location, kind, lines_used, lines_needed, "
        "lines_used * 1.0 / lines_needed AS ratio, bank_conflicts FROM nano_memory "
        "WHERE lines_needed > 0 AND lines_used > lines_needed "
        "ORDER BY lines_used * 1.0 / lines_needed DESC, lines_used DESC",
        limit);
  int atomics = ret ? 0 : rpdtool_has_rows(t->db, "nano_atomic_count");
  int sampled = atomics || ret ? 0 : rpdtool_has_rows(t->db, "nano_atomic_sample");
  if (atomics == 0 && sampled == 0 && !ret && want_atomics)
    printf("\natomics: none counted; a program counts its atomics when it is built with the "
           "plugin (docs/atomics.md)\n");
  if (atomics > 0) {
    ret = summary_section("atomics per kind", t->db,
                          "SELECT kind, count FROM nano_atomic_totals ORDER BY count DESC", 0);
    if (!ret)
      ret = summary_section(
          "busiest atomic sites", t->db,
          /* copies of one site (an unrolled loop, processes) are one row */
          "SELECT S.kind, S.function, S.file || ':' || S.line AS location, sum(C.count) AS count "
          "FROM nano_atomic_count C JOIN nano_atomic_site S ON S.id = C.site_id "
          "GROUP BY S.kind, S.function, S.file, S.line HAVING sum(C.count) > 0 "
          "ORDER BY sum(C.count) DESC",
          limit);
    if (!ret && rpdtool_has_rows(t->db, "nano_atomic_caller") > 0)
      ret = summary_section("library atomics by caller (--atomics-callers)", t->db,
                            summary_callers_sql, limit);
  } else if (sampled > 0) {
    ret = summary_section("atomics per kind (latest samples; sites come at the next flush)", t->db,
                          summary_sampled_atomics_sql, 0);
  }
  if (!ret)
    ret = summary_losses(t);
  return ret;
}

int rpd_cmd_summary(int argc, char **argv) {
  long limit = SUMMARY_DEFAULT_LIMIT;
  const char *limit_s = NULL, *file;
  int want_atomics = 0;
  const struct rpdtool_opt opts[] = {
      {"limit", 'n', &limit_s, NULL}, {"atomics", 0, NULL, &want_atomics}, {NULL, 0, NULL, NULL}};
  int ret = rpdtool_parse_args(argc, argv, rpd_summary_help, opts, &file);
  if (ret != RPDTOOL_PARSED)
    return ret;
  if (limit_s && rpdtool_parse_count(limit_s, &limit) != 0)
    return rpdtool_usage("summary", "--limit expects a number >= 0, not '%s'", limit_s);
  struct rpdtool_trace t;
  ret = rpdtool_open_view("summary", file, &t);
  if (ret)
    return ret;
  ret = summary_totals(&t);
  if (!ret)
    ret = summary_sections(&t, limit, want_atomics);
  rpdtool_close(&t);
  return ret;
}

/* Refreshes of `rpd watch` unless --interval says otherwise, in seconds. */
#define WATCH_DEFAULT_INTERVAL 2
/* The longest --interval, an hour. */
#define WATCH_MAX_INTERVAL 3600

static const char rpd_watch_help[] =
    "usage: rpd watch [--interval S] [--count N] [--limit N] FILE\n"
    "Prints `rpd summary` of FILE every S seconds while a program records into\n"
    "it (the screen is cleared between prints on a terminal), until interrupted\n"
    "or after N prints. Readers never block the tracer. What the tracer has not\n"
    "committed yet is not shown: record with RPDT_AUTOFLUSH=1 (Hz) for rows at\n"
    "least every second; atomics totals are sampled at NANO_RPD_ATOMICS_HZ.\n"
    "  -i, --interval S   seconds between prints (default 2)\n"
    "  -c, --count N      stop after N prints (default 0: until interrupted)\n"
    "  -n, --limit N      rows per section (default 5; 0 = all)\n";

int rpd_cmd_watch(int argc, char **argv) {
  long limit = SUMMARY_DEFAULT_LIMIT, interval = WATCH_DEFAULT_INTERVAL, count = 0;
  const char *limit_s = NULL, *interval_s = NULL, *count_s = NULL, *file;
  const struct rpdtool_opt opts[] = {{"limit", 'n', &limit_s, NULL},
                                     {"interval", 'i', &interval_s, NULL},
                                     {"count", 'c', &count_s, NULL},
                                     {NULL, 0, NULL, NULL}};
  int ret = rpdtool_parse_args(argc, argv, rpd_watch_help, opts, &file);
  if (ret != RPDTOOL_PARSED)
    return ret;
  if (limit_s && rpdtool_parse_count(limit_s, &limit) != 0)
    return rpdtool_usage("watch", "--limit expects a number >= 0, not '%s'", limit_s);
  if (interval_s && (rpdtool_parse_count(interval_s, &interval) != 0 || interval < 1 ||
                     interval > WATCH_MAX_INTERVAL))
    return rpdtool_usage("watch", "--interval expects seconds from 1 to %d, not '%s'",
                         WATCH_MAX_INTERVAL, interval_s);
  if (count_s && rpdtool_parse_count(count_s, &count) != 0)
    return rpdtool_usage("watch", "--count expects a number >= 0, not '%s'", count_s);
  int tty = isatty(STDOUT_FILENO);
  for (long n = 1;; n++) {
    if (tty)
      fputs("\033[H\033[2J", stdout); /* home, clear */
    time_t now = time(NULL);
    char at[16] = "";
    struct tm tm;
    if (localtime_r(&now, &tm))
      strftime(at, sizeof at, "%H:%M:%S", &tm);
    printf("rpd watch: %s at %s (every %ld s)\n", file, at, interval);
    struct rpdtool_trace t;
    if (access(file, F_OK) != 0) {
      printf("waiting for %s to be created\n", file);
    } else {
      ret = rpdtool_open_view("watch", file, &t);
      if (ret)
        return ret;
      ret = summary_totals(&t);
      if (!ret)
        ret = summary_sections(&t, limit, 0);
      rpdtool_close(&t);
      if (ret)
        return ret;
    }
    fflush(stdout);
    if (count && n >= count)
      return 0;
    sleep((unsigned)interval);
  }
}
