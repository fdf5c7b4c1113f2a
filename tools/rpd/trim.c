/*
 * trim.c: `rpd trim FILE [--start T] [--end T] -o OUT`: writes the part of a
 * trace within a time window into a new RPD file, the input untouched.
 *
 * The window follows rocmProfileData's rpd_trim.py: T is absolute ns, a
 * percentage of the span of the API calls (min start .. max end), or
 * "+<n><unit>" from that start; a call is kept when it starts within the
 * window, a GPU op when the call that caused it is kept (an op with no call:
 * when it starts within the window), a monitor sample when it starts within
 * the window. Only the strings the kept rows use are written.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "commands.h"

static const char tr_help[] =
    "usage: rpd trim FILE [--start T] [--end T] -o OUT\n\n"
    "Writes the calls starting within [start, end] (with the GPU ops they caused,\n"
    "and samples and unlinked ops starting within it) to a new RPD file OUT.\n"
    "T: absolute ns ('1234567'), a percentage of the calls' span ('10%'), or an\n"
    "offset from the first call ('+1.5ms', units ns us ms s). Defaults: the whole\n"
    "span. Strings no kept row uses are dropped. FILE is not changed.\n";

int rpd_cmd_trim(int argc, char **argv) {
  an_sqlite_setup();
  const char *cmd = argv[0], *in, *out = NULL, *s_start = NULL, *s_end = NULL;
  const struct rpdtool_opt opts[] = {{"output", 'o', &out, NULL},
                                     {"start", 0, &s_start, NULL},
                                     {"end", 0, &s_end, NULL},
                                     {NULL, 0, NULL, NULL}};
  int parsed = rpdtool_parse_args(argc, argv, tr_help, opts, &in);
  if (parsed != RPDTOOL_PARSED)
    return parsed;
  if (!out)
    return rpdtool_usage(cmd, "missing -o OUT (the input is never changed)");
  struct rpdtool_trace t;
  int ret = rpdtool_open(cmd, in, RPDTOOL_READ, &t);
  if (ret)
    return ret;
  sqlite3_stmt *st = NULL;
  int64_t lo = 0, hi = 0, total = 0;
  if (sqlite3_prepare_v2(t.db, "SELECT min(start), max(end), count(*) FROM rocpd_api", -1, &st,
                         NULL) != SQLITE_OK ||
      sqlite3_step(st) != SQLITE_ROW) {
    ret = rpdtool_err(cmd, "%s: cannot read rocpd_api: %s", in, sqlite3_errmsg(t.db));
  } else {
    lo = sqlite3_column_int64(st, 0);
    hi = sqlite3_column_int64(st, 1);
    total = sqlite3_column_int64(st, 2);
  }
  sqlite3_finalize(st);
  int64_t a = lo, b = hi;
  if (!ret && total == 0)
    ret = rpdtool_err(cmd, "%s: the trace has no API calls to trim", in);
  if (!ret)
    ret = rpdtool_window(cmd, s_start, s_end, lo, hi, &a, &b);
  char *tagval = ret ? NULL : sqlite3_mprintf("%s [%lld, %lld]", in, (long long)a, (long long)b);
  if (!ret && !tagval)
    ret = rpdtool_err(cmd, "out of memory");
  if (!ret)
    ret = an_out_check(cmd, out, "Trim::Window", tagval);
  if (ret == AN_ALREADY) {
    printf("rpd %s: %s holds this window of %s already; nothing to do\n", cmd, out, in);
    ret = 0;
  } else if (!ret) {
    struct an_out o;
    struct an_copy_counts c = {0};
    struct an_copy_opts copy = {.node = 0, .window = 1, .lo = a, .hi = b};
    if (!(ret = an_out_create(cmd, out, &o))) {
      if (an_copy(cmd, o.db, &t, &copy, &c) != 0) {
        an_out_discard(&o);
        ret = RPDTOOL_EXIT_FAIL;
      } else if (!(ret = an_out_finish(cmd, &o, "Trim::Window", tagval))) {
        printf("rpd %s: %s: window [%lld, %lld] ns: %lld of %lld calls, %lld GPU ops, %lld "
               "monitor samples, %lld strings\n",
               cmd, out, (long long)a, (long long)b, (long long)c.api, (long long)total,
               (long long)c.op, (long long)c.monitor, (long long)c.strings);
      }
    }
  }
  sqlite3_free(tagval);
  rpdtool_close(&t);
  return ret;
}
