/*
 * index.c: `rpd index FILE`: adds rocmProfileData's optional indexes
 * (nano_rpdfile_index_sql: its index2Schema.cmd) to a trace, in one
 * transaction; an index that exists is kept. They speed up joins of calls to
 * ops and lookups by name in large traces, at the cost of file size, which is
 * why the tracer does not create them while recording.
 */
#include <stdio.h>

#include <nano/rpdfile.h>

#include "analysis.h"
#include "commands.h"

/* Creates the indexes (the step's fill). */
static int rpd_index_fill(const char *cmd, const struct rpdtool_trace *t, void *ctx) {
  (void)ctx;
  return an_exec(cmd, t, "cannot create the indexes", nano_rpdfile_index_sql());
}

/* No tag: a second run keeps the indexes there and adds any missing. */
static const struct an_step rpd_index_step = {NULL, 0, "indexes", rpd_index_fill};

/* Creates the indexes inside one transaction. 0 or the exit code. */
static int rpd_index_run(const char *cmd, const struct rpdtool_trace *t) {
  int ret = an_step_run(cmd, t, &rpd_index_step, NULL);
  if (!ret)
    printf("rpd %s: %s: rocmProfileData's optional indexes are in place\n", cmd, t->path);
  return ret;
}

int rpd_cmd_index(int argc, char **argv) {
  return an_step_main(argc, argv,
                      "usage: rpd index FILE\n"
                      "Adds rocmProfileData's optional indexes (calls to ops, and the string\n"
                      "ids of ops, calls, counters and kernel launches) to FILE, in one\n"
                      "transaction; indexes already there are kept.\n",
                      &rpd_index_step, rpd_index_run);
}
