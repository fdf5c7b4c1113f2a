/*
 * rpdtool.h: helpers shared by the subcommands of the `rpd` tool.
 *
 * Every subcommand (see commands.h) uses these instead of its own copy:
 *
 *   rpdtool_open / rpdtool_close   open a trace with a clear error for every kind
 *                                  of bad input (missing file, not SQLite, SQLite
 *                                  but not RPD, newer schema version) and learn
 *                                  which schema generation (2 or 3) it has.
 *   rpdtool_span                   the trace's time span (for windows, percentages).
 *   rpdtool_name_label             a process's or thread's name, or a generic label.
 *   rpdtool_api_sql                the schema-independent SELECT over API rows
 *                                  with their strings (v2 has no domain/category
 *                                  and keeps args in rocpd_string).
 *   rpdtool_table_*                an aligned text table (numbers right-aligned).
 *   rpdtool_print_query            run a query and print its result as such a table.
 *   rpdtool_parse_args             the options and the one FILE of a subcommand,
 *                                  -h/--help included.
 *   rpdtool_parse_time             --start/--end style values: absolute ns, a
 *                                  percentage of the trace span, or an offset
 *                                  from the trace start with a unit.
 *   rpdtool_parse_count            a non-negative integer option (--limit).
 *   rpdtool_progress_*             a progress line on stderr, only when stderr
 *                                  is a terminal.
 *   rpdtool_err / rpdtool_usage    messages "rpd <cmd>: ..." on stderr; return
 *                                  the exit code to pass on (1 or 2).
 *
 * Exit codes follow commands.h: 0 success, 1 the operation failed, 2 bad usage
 * or unreadable input.
 */
#ifndef NANO_RPDTOOL_H
#define NANO_RPDTOOL_H

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

#include <nano/rpdfile.h>

#define RPDTOOL_EXIT_OK 0
#define RPDTOOL_EXIT_FAIL 1
#define RPDTOOL_EXIT_USAGE 2

/* rocpd's pid_stride, for traces whose rocpd_metadata has none. */
#define RPDTOOL_PID_STRIDE 10000000

/* ---- messages ----------------------------------------------------------- */

/* Prints "rpd <cmd>: <message>\n" on stderr; returns RPDTOOL_EXIT_FAIL. */
int rpdtool_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "rpd <cmd>: <message>\nTry 'rpd <cmd> --help'.\n" on stderr; returns
 * RPDTOOL_EXIT_USAGE. */
int rpdtool_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- arguments ---------------------------------------------------------- */

/* One option of a subcommand: its long name ("output"), its short letter or 0,
 * and either `value` (the option takes an argument, stored there) or `flag`
 * (set to 1). A list of options ends with an entry whose name is NULL. */
struct rpdtool_opt {
  const char *name;
  int letter;
  const char **value;
  int *flag;
};

/* Returned by rpdtool_parse_args when the subcommand should go on. */
#define RPDTOOL_PARSED (-1)

/* Parses the arguments of subcommand argv[0] with getopt_long (options may
 * follow FILE): -h/--help prints `help` on stdout; each option of `opts` (at
 * most 8) stores its value or sets its flag; exactly one FILE goes to *file.
 * Returns RPDTOOL_PARSED to go on, else the exit code to return: 0 after the
 * help, RPDTOOL_EXIT_USAGE (a message on stderr) for an unknown option, an
 * option without its value, no FILE or more than one. */
int rpdtool_parse_args(int argc, char **argv, const char *help, const struct rpdtool_opt *opts,
                       const char **file);

/* ---- opening traces ---------------------------------------------------- */

enum { RPDTOOL_READ = 0, RPDTOOL_WRITE = 1 };

struct rpdtool_trace {
  sqlite3 *db;
  const char *path;
  int schema_version; /* 2 or 3 (a file without the tag counts as 2) */
  int has_domain;     /* rocpd_api has domain_id and category_id (v3) */
  int has_ustring;    /* args live in rocpd_ustring (v3), else rocpd_string */
  int has_names;      /* nanoprobe's nano_thread: the OS names of processes and threads */
  int has_dispatches; /* nanoprobe's nano_dispatch and nano_analysis: instrumented kernels */
  int strings_cut;    /* rpdtool_open_view shadowed a string table with cut strings */
  /* where each dispatch's sums were made, as SQL over nano_dispatch:
   * "coalesce(aggregate, 'host')", or "'host'" for files older than the column */
  const char *dispatch_where_sql;
  int64_t pid_stride; /* rocpd_metadata's pid_stride (rpd merge: node k adds k * stride to
                         pids), RPDTOOL_PID_STRIDE when missing; the nano_thread row naming process
                         pid has tid = pid % pid_stride */
};

/* Opens the RPD file `path` (mode RPDTOOL_READ or RPDTOOL_WRITE) for subcommand
 * `cmd` through nano_rpdfile_open_read (nano/rpdfile.h, the one place that
 * knows the schema). On success fills *t and returns 0. Otherwise prints why, naming the
 * file ("no such file", "not an SQLite database", "an SQLite database but not
 * an RPD trace", "schema version N is newer than ...") and returns
 * RPDTOOL_EXIT_USAGE; *t is then empty and needs no close. */
int rpdtool_open(const char *cmd, const char *path, int mode, struct rpdtool_trace *t);

/* Longest string (characters) that info, top, export and report show; a
 * longer one is cut there and ends in "…" (U+2026). */
#define RPDTOOL_MAX_TEXT 16384

/* rpdtool_open for a command that only reads and names rows (info, top,
 * export, report). When rocpd_string or rocpd_ustring holds strings longer
 * than RPDTOOL_MAX_TEXT, a TEMP copy with them cut shadows the table on this
 * connection (one stderr line says how many), so that each long string is
 * read once, not once per row naming it: a 5 MB name on 600 rows took info
 * 90 s and export 127 s. Returns as rpdtool_open. */
int rpdtool_open_view(const char *cmd, const char *path, struct rpdtool_trace *t);
/* Closes a trace opened by rpdtool_open (harmless on an empty one). */
void rpdtool_close(struct rpdtool_trace *t);

/* Returns a SELECT (static storage, for this trace's schema) yielding the API
 * rows with columns id, pid, tid, start, end, domain, category, apiName, args
 * (strings, never NULL), usable as a subquery: "SELECT ... FROM (<sql>) ...". */
const char *rpdtool_api_sql(const struct rpdtool_trace *t);

/* The time span of the trace: the earliest start and latest end over API
 * calls, GPU ops, monitor samples, host atomics samples and recording
 * windows (nano_window). Returns 1 with *lo, *hi set, 0 for a
 * trace with no rows (both set to 0), -1 on SQLite error. */
int rpdtool_span(const struct rpdtool_trace *t, int64_t *lo, int64_t *hi);

/* The processes that recorded something into the trace: API rows, or only
 * atomics counts (what `rpd summary` and `rpd info` both count). 0, or -1 on
 * SQLite error. */
int rpdtool_processes(const struct rpdtool_trace *t, int64_t *n);

/* Writes the label of process pid (tid < 0) or of its thread tid into buf:
 * `name` (the OS name from nano_thread) when it is neither NULL nor empty,
 * else "process P", "main thread T" (tid == pid) or "thread T". */
void rpdtool_name_label(char *buf, size_t len, int64_t pid, int64_t tid, const char *name);

/* The sum of the integer values rocpd_metadata holds under `tag` (one row
 * per session: 'nano_dropped_records', 'nano_lost_records'), 0 when none,
 * into *out: 0, or -1 on SQLite error. */
int rpdtool_metadata_sum(const struct rpdtool_trace *t, const char *tag, int64_t *out);

/* Prepares sql on t's connection; on failure says so for cmd ("query
 * failed") and returns NULL. */
sqlite3_stmt *rpdtool_prepare(const char *cmd, const struct rpdtool_trace *t, const char *sql);
/* Finalizes st, stepped until its last step returned rc. Returns 0 when rc
 * is SQLITE_DONE, else RPDTOOL_EXIT_FAIL after saying the query failed. out
 * (NULL: none) is the output written meanwhile: a write error on it is said
 * first, naming out_name (a full disk fails the output before SQLite's
 * temporary files). */
int rpdtool_done(const char *cmd, const struct rpdtool_trace *t, sqlite3_stmt *st, int rc,
                 FILE *out, const char *out_name);

/* Runs `sql`, a query of one integer, into *out: 0, or -1 (no row, SQLite error). */
int rpdtool_int(sqlite3 *db, const char *sql, int64_t *out);

/* The query of `rpd top`'s table: the trace's own `top` view, or for a trace written
 * without it (a bare schema 2 file), or whose strings rpdtool_open_view cut
 * (the file's view would read the file's uncut ones), that view's definition
 * in nano_rpdfile_schema_sql(), so that both kinds of file answer from one
 * definition. sqlite3_malloc'd; NULL after reporting. */
char *rpdtool_top_sql(const char *cmd, struct rpdtool_trace *t);

/* 1 when table or view `name` exists and has rows, 0 when not, -1 on error. */
int rpdtool_has_rows(sqlite3 *db, const char *name);

/* The query of the ranges and API calls by name (a user range by its
 * message) and domain: calls, total ms, average us, longest total first. The
 * total sums every call, so nested calls of a recursive function count at
 * each level (the report's call walk counts them once).
 * sqlite3_malloc'd; NULL when out of memory. */
char *rpdtool_ranges_sql(const struct rpdtool_trace *t);

/* ---- tables ------------------------------------------------------------- */

struct rpdtool_table {
  int ncols;
  char **header;        /* ncols strings */
  unsigned char *right; /* per column: 1 right-aligned, 0 left */
  char **cells;         /* nrows * ncols strings */
  size_t nrows, cap;
};

/* Starts a table with `ncols` columns named by `header`. 0 or -1 (no memory). */
int rpdtool_table_init(struct rpdtool_table *tb, int ncols, const char *const *header);
/* Right-aligns column `col` (numbers). */
void rpdtool_table_right(struct rpdtool_table *tb, int col);
/* Appends a row of ncols strings (copied; NULL prints as empty). 0 or -1. */
int rpdtool_table_add(struct rpdtool_table *tb, const char *const *cells);
/* Prints the header, a rule and the rows with every column padded to its
 * widest cell (widths counted in UTF-8 characters). */
void rpdtool_table_print(const struct rpdtool_table *tb, FILE *out);
void rpdtool_table_free(struct rpdtool_table *tb);

/* Runs `sql` on `db` and prints the result as a table with the statement's
 * column names: integers and reals (2 decimals) right-aligned, text left, NULL
 * empty; at most `limit` rows (0: all). Returns 0, or RPDTOOL_EXIT_FAIL after
 * printing the SQLite error for `cmd`. */
int rpdtool_print_query(const char *cmd, sqlite3 *db, const char *sql, long limit, FILE *out);
/* rpdtool_print_query under a title: nothing at all when the query has no
 * row, else "\n<title>:" (or "\n<title> (limit of N):" when rows were left
 * out) and the table. */
int rpdtool_print_section(const char *cmd, sqlite3 *db, const char *sql, long limit,
                          const char *title, FILE *out);

/* ---- option values ------------------------------------------------------ */

/* Parses a point in time of a trace spanning [lo, hi] ns:
 *   "123456789"       absolute nanoseconds (the trace's own clock)
 *   "25%" / "12.5%"   that fraction of the span from lo (0% = lo, 100% = hi)
 *   "1.5ms", "+1.5ms" an offset from lo with a unit ns, us, ms or s
 * Returns 0 and sets *out, or -1 for a malformed value. */
int rpdtool_parse_time(const char *s, int64_t lo, int64_t hi, int64_t *out);
/* The window [*a, *b] of --start/--end (NULL: lo, hi) for a trace spanning
 * [lo, hi]: parsed, in order, and with a warning on stderr for an absolute
 * time outside [lo, hi] (a number without a unit is nanoseconds on the
 * trace's clock, so "--start 5" is almost surely meant as "5us"). Returns 0,
 * or the usage exit status after a message. */
int rpdtool_window(const char *cmd, const char *start, const char *end, int64_t lo, int64_t hi,
                   int64_t *a, int64_t *b);
/* Parses a non-negative decimal integer; 0 and *out, or -1. */
int rpdtool_parse_count(const char *s, long *out);

/* ---- progress ----------------------------------------------------------- */

struct rpdtool_progress {
  int on; /* stderr is a terminal */
  const char *label;
  uint64_t total, done;
  int shown; /* last percentage printed, -1 none */
};

/* Starts a progress line "label  NN%" for `total` units (shown on a tty only). */
void rpdtool_progress_start(struct rpdtool_progress *p, const char *label, uint64_t total);
/* Adds `n` finished units; redraws when the percentage changes. */
void rpdtool_progress_add(struct rpdtool_progress *p, uint64_t n);
/* Clears the progress line. */
void rpdtool_progress_end(struct rpdtool_progress *p);

/* Time arithmetic on values read from a trace, saturated at INT64_MIN and
 * INT64_MAX: a damaged or crafted file may hold any times, and a signed
 * overflow is undefined behaviour, not a wrong number. */
static inline int64_t rpdtool_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r))
    return b < 0 ? INT64_MAX : INT64_MIN;
  return r;
}
static inline int64_t rpdtool_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return b < 0 ? INT64_MIN : INT64_MAX;
  return r;
}

#endif /* NANO_RPDTOOL_H */
