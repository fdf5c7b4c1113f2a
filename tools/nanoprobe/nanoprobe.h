/*
 * nanoprobe.h: the subcommands of the `nanoprobe` command and what they
 * share. Each subcommand is `int nanoprobe_cmd_<name>(int argc, char **argv)`
 * in its own file, argv[0] being the subcommand's name; it returns the
 * process exit status.
 */
#ifndef NANOPROBE_TOOL_H
#define NANOPROBE_TOOL_H

#include <jansson.h>
#include <limits.h>
#include <stddef.h>

/* nanoprobe gate: compare atomics or instructions with a baseline (gate.c). */
int nanoprobe_cmd_gate(int argc, char **argv);
/* nanoprobe run: run an application with tracing (run.c). */
int nanoprobe_cmd_cache(int argc, char **argv);
int nanoprobe_cmd_run(int argc, char **argv);
/* nanoprobe cc / cflags: compile with the plugin for a compiler (cc.c). */
int nanoprobe_cmd_cc(int argc, char **argv);
int nanoprobe_cmd_cflags(int argc, char **argv);

/* ---- gate_trace.c: the host atomics of an RPD trace -------------------- */

/* 1 when path is an SQLite database (an RPD trace), by its header. */
int gate_is_trace(const char *path);
/* The atomics the tracer stored in trace `path`, as the tracker's JSON
 * document ("nanoprobe-atomics" 1: kinds and sites, inlined_from kept).
 * NULL after a message naming `what` (the trace cannot be read, or holds no
 * atomics). */
json_t *gate_trace_atomics(const char *path, const char *what);

/* ---- locate.c: nanoprobe's parts, relative to this executable ---------- */

enum nanoprobe_part {
  NANOPROBE_TRACKER,  /* libnano_tracker.so */
  NANOPROBE_RPD_LIB,  /* libnano_rpd.so     */
  NANOPROBE_CUDAHOOK, /* libnano_cudahook.so: the kernel cache for CUDA */
  NANOPROBE_RPD_TOOL, /* the rpd command    */
  NANOPROBE_PYTHON,   /* the folder holding the nanoprobe Python package */
};

/* The absolute path of `part` in buf (the build tree's, else the installed
 * one); NULL when neither exists. */
const char *nanoprobe_locate(enum nanoprobe_part part, char *buf, size_t len);
/* 1 when this executable runs from the build tree. */
int nanoprobe_in_build_tree(void);

struct nanoprobe_plugin {
  int major; /* the LLVM it is built for */
  char path[PATH_MAX];
};
/* The plugins there are (at most max): the build tree's, else the installed
 * ones. Returns how many. */
int nanoprobe_plugins(struct nanoprobe_plugin *out, int max);
/* The folders of nanoprobe's headers, ':'-separated, in buf; NULL if none. */
const char *nanoprobe_include_dirs(char *buf, size_t len);
/* The path of command `cmd` as execvp would find it, in buf; NULL if none. */
const char *nanoprobe_which(const char *cmd, char *buf, size_t len);

#endif
