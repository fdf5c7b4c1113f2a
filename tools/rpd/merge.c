/*
 * merge.c: `rpd merge OUT IN...`: combines the traces of several ranks or
 * nodes into one new RPD file. Input k is node k (or the node given with
 * --nodes): its pids get node * pid_stride and its gpuIds node * gpu_stride
 * (the output's strides, rocpd_metadata), so the views napi and nop show
 * node, pid and gpuId apart. Strings are shared, ids renumbered (see
 * analysis_copy.c), nanoprobe's tables with them. Post-processing tables of
 * the inputs are not copied: run the steps on the merged file.
 */
#define _XOPEN_SOURCE 700
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "commands.h"

#define MG_MAXNODE 100000

/* Prints the usage of `rpd merge` on `out`. */
static void mg_usage(FILE *out) {
  fputs("usage: rpd merge OUT IN1 IN2... [--nodes N1,N2,...]\n\n"
        "Writes a new RPD file OUT with every call, op and sample of the inputs. Input k\n"
        "is node k unless --nodes gives one node per input (ranks of one node share a\n"
        "node number). The node is encoded as pid + node*pid_stride and\n"
        "gpuId + node*gpu_stride; the views napi and nop decode it. OUT must not exist\n"
        "(a second identical run does nothing).\n",
        out);
}

/* Parses "N1,N2,..." into nodes[0..n). 0 or -1. */
static int mg_nodes(const char *s, long *nodes, int n) {
  for (int i = 0; i < n; i++) {
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end == s || v < 0 || v >= MG_MAXNODE)
      return -1;
    nodes[i] = v;
    s = end;
    if (i + 1 < n) {
      if (*s != ',')
        return -1;
      s++;
    }
  }
  return *s ? -1 : 0;
}

int rpd_cmd_merge(int argc, char **argv) {
  an_sqlite_setup();
  const char *cmd = argv[0], *nodes_arg = NULL;
  const char **files = calloc((size_t)argc, sizeof *files);
  int nfiles = 0;
  if (!files)
    return rpdtool_err(cmd, "out of memory");
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      mg_usage(stdout);
      free(files);
      return 0;
    }
    if (!strcmp(argv[i], "--nodes")) {
      if (++i == argc) {
        free(files);
        return rpdtool_usage(cmd, "--nodes needs a value");
      }
      nodes_arg = argv[i];
    } else if (argv[i][0] == '-' && argv[i][1]) {
      free(files);
      return rpdtool_usage(cmd, "unknown option '%s'", argv[i]);
    } else {
      files[nfiles++] = argv[i];
    }
  }
  if (nfiles < 2) {
    free(files);
    return rpdtool_usage(cmd, "needs an output file and at least one input");
  }
  const char *out = files[0];
  int nin = nfiles - 1;
  long *nodes = calloc((size_t)nin, sizeof *nodes);
  char *tagval = NULL;
  int ret = 0;
  struct an_out o = {0};
  if (!nodes) {
    ret = rpdtool_err(cmd, "out of memory");
    goto done;
  }
  for (int i = 0; i < nin; i++)
    nodes[i] = i;
  if (nodes_arg && mg_nodes(nodes_arg, nodes, nin) != 0) {
    ret = rpdtool_usage(cmd, "--nodes wants %d numbers 0..%d separated by commas, got '%s'", nin,
                        MG_MAXNODE - 1, nodes_arg);
    goto done;
  }
  /* The record of what was merged, for the idempotence check. */
  tagval = sqlite3_mprintf("%s", "");
  for (int i = 0; i < nin && tagval; i++) {
    char *next = sqlite3_mprintf("%s%snode=%ld %s", tagval, i ? "\n" : "", nodes[i], files[i + 1]);
    sqlite3_free(tagval);
    tagval = next;
  }
  if (!tagval) {
    ret = rpdtool_err(cmd, "out of memory");
    goto done;
  }
  /* Every input must be a readable trace and none may be the output. */
  char rout[PATH_MAX];
  int have_out = realpath(out, rout) != NULL;
  for (int i = 0; i < nin; i++) {
    char rin[PATH_MAX];
    if (have_out && realpath(files[i + 1], rin) && !strcmp(rin, rout)) {
      ret = rpdtool_usage(cmd, "the output %s is also an input", out);
      goto done;
    }
    struct rpdtool_trace t;
    if ((ret = rpdtool_open(cmd, files[i + 1], RPDTOOL_READ, &t)))
      goto done;
    rpdtool_close(&t);
  }
  ret = an_out_check(cmd, out, "Merge::Inputs", tagval);
  if (ret == AN_ALREADY) {
    printf("rpd %s: %s was merged from these inputs already; nothing to do\n", cmd, out);
    ret = 0;
    goto done;
  }
  if (ret || (ret = an_out_create(cmd, out, &o)))
    goto done;
  struct an_copy_counts c = {0};
  struct rpdtool_progress prog;
  rpdtool_progress_start(&prog, "merge", (uint64_t)nin);
  for (int i = 0; i < nin; i++) {
    struct rpdtool_trace t;
    struct an_copy_opts copy = {.node = nodes[i]};
    if ((ret = rpdtool_open(cmd, files[i + 1], RPDTOOL_READ, &t)))
      break;
    if (an_copy(cmd, o.db, &t, &copy, &c) != 0)
      ret = RPDTOOL_EXIT_FAIL;
    rpdtool_close(&t);
    if (ret)
      break;
    rpdtool_progress_add(&prog, 1);
  }
  rpdtool_progress_end(&prog);
  if (ret) {
    an_out_discard(&o);
    goto done;
  }
  if ((ret = an_out_finish(cmd, &o, "Merge::Inputs", tagval)))
    goto done;
  printf("rpd %s: %s: %d inputs, %lld calls, %lld GPU ops, %lld monitor samples, %lld strings\n",
         cmd, out, nin, (long long)c.api, (long long)c.op, (long long)c.monitor,
         (long long)c.strings);
done:
  sqlite3_free(tagval);
  free(nodes);
  free(files);
  return ret;
}
