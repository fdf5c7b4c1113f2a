/*
 * analysis.h: the pieces shared by the post-processing subcommands of `rpd`
 * (callstack, graph, autograd, report, merge, trim), on top of rpdtool.h.
 *
 *   an_open_step / an_begin   open a trace for a step that writes it and take
 *                             the write lock (BEGIN IMMEDIATE) with a clear
 *                             error for a file locked by a writer or read-only.
 *   an_meta_get / an_meta_set rocpd_metadata tags: every step records that it
 *                             ran under rocmProfileData's own tag
 *                             ("Callstack::Generated", ...), so running a step
 *                             twice does nothing, here and in rocpd's Python.
 *   an_walk                   one pass over rocpd_api ordered by pid, tid,
 *                             start with an explicit stack per thread: calls
 *                             back once per call with its ancestors, its
 *                             exclusive CPU time and its GPU time.
 *   an_callstack_run          the `rpd callstack` step itself, so that
 *                             `rpd autograd` can run it when needed.
 *   an_intern                 look up or add a rocpd_string row.
 *
 * Every step writes inside one transaction: an interrupted step leaves the
 * file as it was.
 */
#ifndef NANO_RPD_ANALYSIS_H
#define NANO_RPD_ANALYSIS_H

#include <sqlite3.h>
#include <stdint.h>

#include "rpdtool.h"

/* Returned by a step that found its metadata tag (or an output file made by
 * the same command): nothing to do. */
#define AN_ALREADY 100

/* ---- steps that write a trace ------------------------------------------ */

/* Tunes SQLite for a one-threaded command before its first use: no mutexes
 * (SQLITE_CONFIG_MULTITHREAD) and no memory statistics. The analysis
 * commands call it first; a call after SQLite started changes nothing. */
void an_sqlite_setup(void);

/* Opens the trace `path` for a step that writes into it: like rpdtool_open
 * (RPDTOOL_WRITE), after checking that the file and its directory (journal)
 * are writable, with a clear message when not. 0 or the exit code. */
int an_open_write(const char *cmd, const char *path, struct rpdtool_trace *t);

/* A step that writes into the trace in one transaction (callstack, graph,
 * autograd, index). */
struct an_step {
  /* rocmProfileData's tag prefix: rocpd_metadata "<name>::Generated" = True
   * marks the step done, so a second run (here or in rocpd's Python) does
   * nothing; NULL: no tag, the step may run again */
  const char *name;
  int table_tag;    /* also sets "<name>::Table" = True, as rocpd's callstack and autograd do */
  const char *what; /* what it makes, for messages ("call stacks") */
  /* Fills the step's tables inside its transaction (ctx: an_step_run's).
   * Returns 0, or RPDTOOL_EXIT_FAIL after saying what failed. */
  int (*fill)(const char *cmd, const struct rpdtool_trace *t, void *ctx);
};

/* Whether step s ran on t already (its Generated tag): 1, 0, or -1 after
 * saying that rocpd_metadata cannot be read. */
int an_step_done(const char *cmd, const struct rpdtool_trace *t, const struct an_step *s);

/* Runs step s on t: AN_ALREADY when it ran already; else one transaction
 * (an_begin, s->fill, the tags, an_commit), rolled back on any failure.
 * Returns 0, AN_ALREADY or RPDTOOL_EXIT_FAIL. */
int an_step_run(const char *cmd, const struct rpdtool_trace *t, const struct an_step *s, void *ctx);

/* The main of a one-FILE step: parses its one FILE with rpdtool_parse_args
 * (`usage` for -h/--help, no other options), opens FILE with an_open_write,
 * calls run(cmd, t) (which runs step s, and prints what it made), and
 * reports AN_ALREADY as "nothing to do" (exit 0). Returns the exit code. */
int an_step_main(int argc, char **argv, const char *usage, const struct an_step *s,
                 int (*run)(const char *cmd, const struct rpdtool_trace *t));

/* Runs `sql` (one or more statements) on t->db; on failure prints
 * "rpd <cmd>: <path>: <what>: <sqlite error>" and returns RPDTOOL_EXIT_FAIL,
 * else 0. */
int an_exec(const char *cmd, const struct rpdtool_trace *t, const char *what, const char *sql);

/* Starts the step's write transaction (BEGIN IMMEDIATE, waiting up to two
 * seconds for another writer). Returns 0, or prints why not ("locked by
 * another writer", "read-only") and returns RPDTOOL_EXIT_FAIL. */
int an_begin(const char *cmd, const struct rpdtool_trace *t);
/* Commits the step's transaction; 0 or RPDTOOL_EXIT_FAIL with the error. */
int an_commit(const char *cmd, const struct rpdtool_trace *t);
/* Rolls the step's transaction back (after an error); never fails loudly. */
void an_rollback(const struct rpdtool_trace *t);

/* Reads tag `tag` of rocpd_metadata. Returns 1 and a malloc'd copy of the
 * value in *value (NULL allowed: only tests presence), 0 when the tag is
 * absent, -1 on SQLite error. */
int an_meta_get(sqlite3 *db, const char *tag, char **value);
/* Sets tag `tag` to `value` (updating every row of that tag, inserting one
 * when none exists). SQLite result code. */
int an_meta_set(sqlite3 *db, const char *tag, const char *value);

/* Looks up `s` in rocpd_string and returns its id, inserting a row when the
 * string is new. Uses *lookup and *insert as statement caches (NULL at first;
 * the caller finalizes them). Returns the id, or -1 on SQLite error. */
int64_t an_intern(sqlite3 *db, sqlite3_stmt **lookup, sqlite3_stmt **insert, const char *s);

/* Reads an integer tag of rocpd_metadata (e.g. "pid_stride"); `dflt` when it
 * is absent, not a positive number or unreadable. */
int64_t an_meta_int(sqlite3 *db, const char *tag, int64_t dflt);

/* ---- copying traces (analysis_copy.c) ---------------------------------- */

struct an_copy_opts {
  int64_t node; /* pid += node * pid_stride, gpuId += node * gpu_stride */
  int window;   /* non-zero: copy only what starts within [lo, hi] */
  int64_t lo, hi;
};

struct an_copy_counts {
  int64_t api, op, monitor, strings;
};

/* Copies the trace `src` (opened with rpdtool_open; only its path and schema
 * are used) into the RPD database `db` (schema 3) in one transaction: every
 * call, op, link, kernel and copy launch, monitor sample, counter and stack
 * frame, or with o->window only the calls starting within [lo, hi], the ops
 * they caused and the unlinked ops and samples starting within [lo, hi].
 * Strings referenced by the copied rows are shared by text; ids are shifted
 * past those in db; the node is encoded in pid and gpuId with db's strides.
 * Adds to *c. Returns 0, or -1 after printing why (db unchanged). */
int an_copy(const char *cmd, sqlite3 *db, const struct rpdtool_trace *src,
            const struct an_copy_opts *o, struct an_copy_counts *c);

/* New output files of merge and trim, built in a temporary beside the
 * output and moved into place when complete, so a command killed halfway
 * leaves no output for its rerun to refuse. an_out_check: 0 when `out` does
 * not exist; AN_ALREADY when it is an RPD file whose metadata tag `tag`
 * equals `value` (the same command made it: nothing to do); otherwise prints
 * that it refuses to overwrite and returns RPDTOOL_EXIT_FAIL. an_out_create:
 * creates the schema-3 temporary, o->db open on it (0 or RPDTOOL_EXIT_FAIL).
 * an_out_finish: records tag = value, closes, and moves the temporary to
 * `out` where nothing is there (0, or RPDTOOL_EXIT_FAIL with the temporary
 * removed). an_out_discard: closes o->db and removes the temporary with its
 * journals, so a failed command leaves nothing behind. */
struct an_out {
  const char *path; /* the output */
  char *tmp;        /* the temporary it is built in */
  sqlite3 *db;      /* open on tmp */
};
int an_out_check(const char *cmd, const char *out, const char *tag, const char *value);
int an_out_create(const char *cmd, const char *out, struct an_out *o);
int an_out_finish(const char *cmd, struct an_out *o, const char *tag, const char *value);
void an_out_discard(struct an_out *o);

/* ---- the call walk ----------------------------------------------------- */

struct an_frame {
  int64_t id, start, end;
  int64_t name_id;    /* rocpd_api.apiName_id */
  int64_t args_id;    /* rocpd_api.args_id */
  int64_t child_incl; /* sum of the direct children's durations so far */
};

/* Called once per call when it is complete: stack[0..n-1] are its enclosing
 * calls outermost first and stack[n-1] is the call itself; cpu is its
 * exclusive CPU time (duration minus its direct children's durations), gpu
 * the summed duration of the ops linked to it through rocpd_api_ops (0 when
 * none). Returns 0 to go on, non-zero to stop the walk with that value. */
typedef int (*an_visit_fn)(void *ctx, const struct an_frame *stack, int n, int64_t cpu, int64_t gpu,
                           int64_t pid, int64_t tid);

/* Walks every call of rocpd_api per (pid, tid) in start order (ties: the
 * longer first, then by id). A call is a child of the innermost earlier call
 * of its thread that still encloses its end (parent.end >= call.end);
 * calls are properly nested on a thread, so this is the caller relation.
 * Shows a progress line labelled `label` on a terminal. Returns 0, the first
 * non-zero visit result, or -1 on SQLite error / no memory (after printing
 * the error for `cmd`). */
int an_walk(const char *cmd, const struct rpdtool_trace *t, const char *label, an_visit_fn visit,
            void *ctx);

/* ---- steps run by other steps ------------------------------------------ */

/* The `rpd callstack` step on an open trace: creates ext_callstack and its
 * views and fills them in one transaction, unless the file records that it
 * was done ("Callstack::Generated"). Returns 0 done, AN_ALREADY when it had
 * been done already (nothing changed), or RPDTOOL_EXIT_FAIL after printing why
 * (the file unchanged). *rows gets the count of rows written (may be NULL). */
int an_callstack_run(const char *cmd, const struct rpdtool_trace *t, int64_t *rows);

#endif /* NANO_RPD_ANALYSIS_H */
