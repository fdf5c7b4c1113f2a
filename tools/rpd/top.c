/*
 * top.c: `rpd top FILE [--limit N]`: rocpd's `top` view as an aligned table:
 * GPU ops grouped by description (by opType where the description is empty),
 * longest total first. A trace with no GPU op (a CPU program) gets its ranges
 * and API calls instead, as `rpd summary` lists them.
 */
#include <stdio.h>
#include <string.h>

#include <nano/rpdfile.h>

#include "commands.h"
#include "rpdtool.h"

static const char rpd_top_help[] =
    "usage: rpd top [--limit N] FILE\n"
    "Prints the trace's `top` view: GPU ops grouped by name (description, or\n"
    "opType where the description is empty) with calls, total and average\n"
    "duration in microseconds and share of all GPU time, longest first. A trace\n"
    "without GPU ops shows its ranges and API calls by total time instead (the\n"
    "sum over calls: a recursive function's nested calls count at each level;\n"
    "`rpd report` counts them once).\n"
    "  -n, --limit N   print at most N rows (default 20; 0 = all)\n";

int rpd_cmd_top(int argc, char **argv) {
  long limit = 20;
  const char *limit_s = NULL, *file;
  const struct rpdtool_opt opts[] = {{"limit", 'n', &limit_s, NULL}, {NULL, 0, NULL, NULL}};
  int ret = rpdtool_parse_args(argc, argv, rpd_top_help, opts, &file);
  if (ret != RPDTOOL_PARSED)
    return ret;
  if (limit_s && rpdtool_parse_count(limit_s, &limit) != 0)
    return rpdtool_usage("top", "--limit expects a number >= 0, not '%s'", limit_s);
  struct rpdtool_trace t;
  ret = rpdtool_open_view("top", file, &t);
  if (ret)
    return ret;
  int ops = rpdtool_has_rows(t.db, "rocpd_op");
  char *sql = NULL;
  if (ops < 0) {
    ret = rpdtool_err("top", "%s: %s", t.path, sqlite3_errmsg(t.db));
  } else if (ops) {
    sql = rpdtool_top_sql("top", &t);
  } else {
    printf("no GPU ops in %s: its ranges and API calls, longest total first\n", t.path);
    sql = rpdtool_ranges_sql(&t);
    if (!sql)
      rpdtool_err("top", "out of memory");
  }
  if (!ret)
    ret = sql ? rpdtool_print_query("top", t.db, sql, limit, stdout) : RPDTOOL_EXIT_FAIL;
  sqlite3_free(sql);
  rpdtool_close(&t);
  return ret;
}
