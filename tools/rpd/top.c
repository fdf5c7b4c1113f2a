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

/* Gives a trace written without the `top` view (a bare schema 2 file) the
 * view of nano_rpdfile_schema_sql() as a TEMP view, so that both kinds of file
 * answer from one definition. Returns 0, or 1 after reporting. */
static int rpd_top_temp_view(struct rpdtool_trace *t) {
  static const char key[] = "CREATE VIEW top AS ";
  const char *def = strstr(nano_rpdfile_schema_sql(), key);
  const char *end = def ? strchr(def, ';') : NULL;
  if (!end) return rpdtool_err("top", "internal: no top view in the RPD schema");
  def += sizeof key - 1;
  char *sql = sqlite3_mprintf("CREATE TEMP VIEW top AS %.*s", (int)(end - def), def);
  if (!sql) return rpdtool_err("top", "out of memory");
  int rc = sqlite3_exec(t->db, sql, NULL, NULL, NULL);
  sqlite3_free(sql);
  if (rc != SQLITE_OK)
    return rpdtool_err("top", "%s: cannot define the top view: %s", t->path, sqlite3_errmsg(t->db));
  return 0;
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
  ret = rpdtool_open("top", file, RPDTOOL_READ, &t);
  if (ret) return ret;
  int view = rpdtool_has_object(t.db, "top");
  if (view < 0)
    ret = rpdtool_err("top", "%s: %s", t.path, sqlite3_errmsg(t.db));
  else if (view || !(ret = rpd_top_temp_view(&t)))
    ret = rpdtool_print_query("top", t.db, "SELECT * FROM top", limit, stdout);
  rpdtool_close(&t);
  return ret;
}
