/*
 * main.c: the `nanoprobe` command: dispatches to its subcommands.
 */
#include <stdio.h>
#include <string.h>

#include "nanoprobe.h"

static const struct {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *help;
} nanoprobe_cmds[] = {
    {"run", nanoprobe_cmd_run,
     "run a program with tracing; print where the trace went and a summary"},
    {"cc", nanoprobe_cmd_cc, "compile with the plugin that matches the compiler"},
    {"cflags", nanoprobe_cmd_cflags, "the flags that build with nanoprobe, for a compiler"},
    {"cache", nanoprobe_cmd_cache,
     "build a kernel cache (code objects with twins) or list what one holds"},
    {"gate", nanoprobe_cmd_gate, "compare a command's atomics (or instructions) with a baseline"},
};

static void nanoprobe_usage(FILE *out) {
  fputs("usage: nanoprobe <command> [options]\ncommands:\n", out);
  for (size_t i = 0; i < sizeof nanoprobe_cmds / sizeof nanoprobe_cmds[0]; i++)
    fprintf(out, "  %-8s %s\n", nanoprobe_cmds[i].name, nanoprobe_cmds[i].help);
  fputs("`nanoprobe <command> --help` describes a command; `nanoprobe --version`.\n", out);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    nanoprobe_usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "--version") == 0) {
    puts("nanoprobe " NANO_VERSION);
    return 0;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    nanoprobe_usage(stdout);
    return 0;
  }
  for (size_t i = 0; i < sizeof nanoprobe_cmds / sizeof nanoprobe_cmds[0]; i++)
    if (strcmp(argv[1], nanoprobe_cmds[i].name) == 0)
      return nanoprobe_cmds[i].run(argc - 1, argv + 1);
  fprintf(stderr, "nanoprobe: unknown command '%s'\n", argv[1]);
  nanoprobe_usage(stderr);
  return 2;
}
