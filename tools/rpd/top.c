/*
 * top.c: `rpd top FILE [--limit N]`: rocpd's `top` view as an aligned table:
 * GPU ops grouped by description (by opType where the description is empty),
 * longest total first.
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
    "duration in microseconds and share of all GPU time, longest first.\n"
    "  -n, --limit N   print at most N rows (default 20; 0 = all)\n";

/* The query of the table: the trace's own `top` view, or for a trace written
 * without it (a bare schema 2 file) that view's definition in
 * nano_rpdfile_schema_sql(), so that both kinds of file answer from one
 * definition. sqlite3_malloc'd; NULL after reporting. */
static char *rpd_top_sql(struct rpdtool_trace *t) {
  int view = rpdtool_has_object(t->db, "top");
  if (view < 0) {
    rpdtool_err("top", "%s: %s", t->path, sqlite3_errmsg(t->db));
    return NULL;
  }
  static const char key[] = "CREATE VIEW top AS ";
  const char *def = view ? NULL : strstr(nano_rpdfile_schema_sql(), key);
  const char *end = def ? strchr(def, ';') : NULL;
  if (!view && !end) {
    rpdtool_err("top", "internal: no top view in the RPD schema");
    return NULL;
  }
  const char *body = def ? def + sizeof key - 1 : NULL;
  char *sql = view ? sqlite3_mprintf("SELECT * FROM top")
                   : sqlite3_mprintf("%.*s", (int)(end - body), body);
  if (!sql) rpdtool_err("top", "out of memory");
  return sql;
}

int rpd_cmd_top(int argc, char **argv) {
  long limit = 20;
  const char *limit_s = NULL, *file;
  const struct rpdtool_opt opts[] = {{"limit", 'n', &limit_s, NULL}, {NULL, 0, NULL, NULL}};
  int ret = rpdtool_parse_args(argc, argv, rpd_top_help, opts, &file);
  if (ret != RPDTOOL_PARSED) return ret;
  if (limit_s && rpdtool_parse_count(limit_s, &limit) != 0)
    return rpdtool_usage("top", "--limit expects a number >= 0, not '%s'", limit_s);
  struct rpdtool_trace t;
  ret = rpdtool_open_view("top", file, &t);
  if (ret) return ret;
  char *sql = rpd_top_sql(&t);
  ret = sql ? rpdtool_print_query("top", t.db, sql, limit, stdout) : RPDTOOL_EXIT_FAIL;
  sqlite3_free(sql);
  rpdtool_close(&t);
  return ret;
}
