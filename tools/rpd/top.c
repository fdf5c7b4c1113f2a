/*
 * top.c: `rpd top FILE [--limit N]`: rocpd's `top` view as an aligned table:
 * GPU ops grouped by description (by opType where the description is empty),
 * longest total first.
 */
#include <getopt.h>
#include <stdio.h>

#include "commands.h"
#include "rpdtool.h"

static const char rpd_top_help[] =
    "usage: rpd top [--limit N] FILE\n"
    "Prints the trace's `top` view: GPU ops grouped by name (description, or\n"
    "opType where the description is empty) with calls, total and average\n"
    "duration in microseconds and share of all GPU time, longest first.\n"
    "  -n, --limit N   print at most N rows (default 20; 0 = all)\n";

/* The definition of rocpd's `top` view, for files written without the view
 * (a bare schema 2 file): the same grouping and column names. */
static const char rpd_top_fallback[] =
    "SELECT C.string AS Name, count(C.string) AS TotalCalls, "
    "sum(A.end-A.start)/1000 AS TotalDuration_us, "
    "(sum(A.end-A.start)/count(C.string))/1000.0 AS Ave_us, "
    "sum(A.end-A.start)*100.0/(SELECT sum(end-start) FROM rocpd_op) AS Percentage "
    "FROM (SELECT opType_id AS name_id, start, end FROM rocpd_op WHERE description_id IN "
    "(SELECT id FROM rocpd_string WHERE string='') UNION ALL "
    "SELECT description_id, start, end FROM rocpd_op WHERE description_id NOT IN "
    "(SELECT id FROM rocpd_string WHERE string='')) A "
    "JOIN rocpd_string C ON C.id=A.name_id GROUP BY Name ORDER BY TotalDuration_us DESC";

int rpd_cmd_top(int argc, char **argv) {
  static const struct option opts[] = {{"help", no_argument, NULL, 'h'},
                                       {"limit", required_argument, NULL, 'n'},
                                       {NULL, 0, NULL, 0}};
  long limit = 20;
  int c;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+:hn:", opts, NULL)) != -1) {
    switch (c) {
      case 'h':
        fputs(rpd_top_help, stdout);
        return RPDTOOL_EXIT_OK;
      case 'n':
        if (rpdtool_parse_count(optarg, &limit) != 0)
          return rpdtool_usage("top", "--limit expects a number >= 0, not '%s'", optarg);
        break;
      case ':':
        return rpdtool_usage("top", "option '%s' needs a value", argv[optind - 1]);
      default:
        return rpdtool_usage("top", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (argc - optind != 1)
    return rpdtool_usage("top", "%s", argc - optind ? "expects one FILE" : "missing FILE");
  struct rpdtool_trace t;
  int ret = rpdtool_open("top", argv[optind], RPDTOOL_READ, &t);
  if (ret) return ret;
  int view = rpdtool_has_object(t.db, "top");
  if (view < 0)
    ret = rpdtool_err("top", "%s: %s", t.path, sqlite3_errmsg(t.db));
  else
    ret = rpdtool_print_query("top", t.db, view ? "SELECT * FROM top" : rpd_top_fallback, limit,
                              stdout);
  rpdtool_close(&t);
  return ret;
}
