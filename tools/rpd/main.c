/*
 * main.c: the `rpd` command-line tool: creates, inspects, post-processes and
 * exports RPD trace files. Dispatches `rpd <command> ARGS...` to
 * rpd_cmd_<command>(argc, argv) with argv[0] = the command name (commands.h).
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "nano/outfile.h"
#include "rpdtool.h"

struct rpd_command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
};

/* One line per command; `rpd --help` lists them in this order. */
static const struct rpd_command rpd_commands[] = {
    {"create", rpd_cmd_create, "create an empty RPD file (schema version 3)"},
    {"info", rpd_cmd_info,
     "schema version, time span, rows per table, processes, threads, GPUs, drops"},
    {"summary", rpd_cmd_summary,
     "totals, longest ranges, kernels, memory findings, atomics, losses"},
    {"top", rpd_cmd_top, "GPU ops grouped by name, longest total first"},
    {"watch", rpd_cmd_watch, "the summary, refreshed while a program records into the file"},
    {"export", rpd_cmd_export, "write Chrome trace-event JSON (Perfetto, chrome://tracing)"},
    {"callstack", rpd_cmd_callstack, "add caller/callee tables: ext_callstack, callStack_* views"},
    {"graph", rpd_cmd_graph, "add HIP/CUDA graph tables: ext_graph, graphLaunch, graphKernel"},
    {"autograd", rpd_cmd_autograd,
     "parse PyTorch emit_nvtx ranges: ext_autogradapi, autogradKernel"},
    {"report", rpd_cmd_report, "write a self-contained HTML report (tables, timeline, autograd)"},
    {"merge", rpd_cmd_merge, "combine traces of several ranks/nodes into one (node in pid, gpuId)"},
    {"trim", rpd_cmd_trim, "write the part of a trace within a time window to a new file"},
    {"index", rpd_cmd_index, "add rocmProfileData's optional indexes (faster joins and lookups)"},
};

/* Prints the tool's usage and the command list on `out`. */
static void rpd_main_usage(FILE *out) {
  fputs("usage: rpd <command> [options] FILE...\n"
        "       rpd <command> --help\n"
        "       rpd --version\n\n"
        "Commands:\n",
        out);
  for (size_t i = 0; i < sizeof rpd_commands / sizeof rpd_commands[0]; i++)
    fprintf(out, "  %-10s %s\n", rpd_commands[i].name, rpd_commands[i].summary);
  fputs("\nExit status: 0 success, 1 the operation failed, 2 bad usage or unreadable input.\n",
        out);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    rpd_main_usage(stderr);
    return RPDTOOL_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--version")) {
    puts("rpd (nanoprobe) " NANO_VERSION);
    return 0;
  }
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
    if (argc > 2 && strcmp(cmd, "help") == 0) {
      for (size_t i = 0; i < sizeof rpd_commands / sizeof rpd_commands[0]; i++)
        if (!strcmp(argv[2], rpd_commands[i].name)) {
          char *help_argv[] = {argv[2], "--help", NULL};
          return rpd_commands[i].run(2, help_argv);
        }
      fprintf(stderr, "rpd: unknown command '%s'\n", argv[2]);
      return RPDTOOL_EXIT_USAGE;
    }
    rpd_main_usage(stdout);
    return RPDTOOL_EXIT_OK;
  }
  for (size_t i = 0; i < sizeof rpd_commands / sizeof rpd_commands[0]; i++)
    if (!strcmp(cmd, rpd_commands[i].name)) {
      int rc = rpd_commands[i].run(argc - 1, argv + 1);
      if (nano_stdout_finish("rpd") != 0 && rc == RPDTOOL_EXIT_OK)
        rc = RPDTOOL_EXIT_FAIL;
      return rc;
    }
  fprintf(stderr, "rpd: unknown command '%s'\n\n", cmd);
  rpd_main_usage(stderr);
  return RPDTOOL_EXIT_USAGE;
}
