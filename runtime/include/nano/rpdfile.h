/*
 * nano/rpdfile.h: opening and creating RPD files (static library nano_rpdfile).
 *
 * One place knows the RPD schema (rocmProfileData's SQLite layout, version 3)
 * and how to tell an RPD file from other files. The tracer (libnano_rpd.so) and
 * the tools (rpd, analysis) use it:
 *
 *   nano_rpdfile_open_write   open for appending; creates the schema in a
 *                             missing, empty or table-less file
 *   nano_rpdfile_open_read    open an existing trace of schema 2 or 3
 *   nano_rpdfile_remove       remove a trace and its side files (truncation)
 *   nano_rpdfile_check        classify an open database (version or why not)
 *   nano_rpdfile_begin_session take the next session number (rocmProfileData's
 *                             multi-writer scheme: ids get session << 32)
 *   nano_rpdfile_schema_sql   the SQL that creates a version-3 file
 *   nano_rpdfile_thread_schema_sql  nanoprobe's table of thread names
 *   nano_rpdfile_calls_schema_sql  nanoprobe's table of short calls summed
 *   nano_rpdfile_dispatch_schema_sql  nanoprobe's tables of instrumented
 *                             dispatches and analyzer results
 *   nano_rpdfile_index_sql    rocmProfileData's optional indexes (rpd index)
 *   nano_rpdfile_has_object   whether a table or view exists (tools, the gate)
 *   nano_rpdfile_side_write   keep a transaction a stranger's lock held in a
 *                             side file beside the trace
 *   nano_rpdfile_fold         fold side files into the trace
 *
 * Errors are written into a caller buffer as one line naming the path and what
 * is wrong, e.g. "trace.rpd: not an SQLite database". Every function returns 0
 * on success and a negative NANO_RPDFILE_E* code otherwise.
 *
 * Journal mode: a file opened for writing is in rollback-journal mode
 * (journal_mode=DELETE), with the synchronous setting its caller asks for
 * (the rpd tools NORMAL; the tracer OFF by default, see NANO_RPD_SYNC).
 * Appends journal only the pages at the right edge of each B-tree; WAL would
 * write every page twice. A process killed at any point (SIGKILL included)
 * leaves the database consistent: committed transactions are in the file; an
 * uncommitted one is rolled back from its hot journal (-journal) by the next
 * connection. A file found in WAL mode (left so by another tool, or by a
 * writer killed while others had it open) is switched back when this
 * connection is its only one, else written in WAL mode (folded in every
 * 10000 pages and by the last connection to close, nano_rpdfile_close). No
 * side files remain after the last writer closes, so readers need no write
 * access. The page cache of a writing connection is 32 MB.
 *
 * Threads: a connection these functions open has no SQLite mutex of its own
 * (SQLITE_OPEN_NOMUTEX); use it from one thread at a time.
 */
#ifndef NANO_RPDFILE_H
#define NANO_RPDFILE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The schema version nanoprobe writes, and the range it reads. */
#define NANO_RPD_SCHEMA_VERSION 3
#define NANO_RPD_SCHEMA_MIN_READ 2

/* Default strides written into a new file's rocpd_metadata. */
#define NANO_RPD_GPU_STRIDE 1000
#define NANO_RPD_PID_STRIDE 10000000

/* Error codes (negative). */
enum nano_rpdfile_error {
  NANO_RPDFILE_OK = 0,
  NANO_RPDFILE_ESQLITE = -1, /* an SQLite call failed (message in err)            */
  NANO_RPDFILE_ENOENT = -2,  /* the file does not exist (reading)                 */
  NANO_RPDFILE_ENOTDB = -3,  /* the file is not an SQLite database                */
  NANO_RPDFILE_ENOTRPD = -4, /* an SQLite database without the RPD tables         */
  NANO_RPDFILE_ENEWER = -5,  /* schema version newer than this build handles      */
  NANO_RPDFILE_EOLDER = -6,  /* schema version too old (writing needs version 3)  */
  NANO_RPDFILE_EIO = -7,     /* the file cannot be opened/read (errno in message) */
};

/* SQLite's synchronous setting of a writing connection (nano_rpdfile_open_write):
 * OFF never waits for the disk (safe against the death of the process, not
 * against an OS crash or power loss); NORMAL and FULL sync at every commit. */
enum nano_rpdfile_sync {
  NANO_RPDFILE_SYNC_OFF = 0,
  NANO_RPDFILE_SYNC_NORMAL = 1,
  NANO_RPDFILE_SYNC_FULL = 2,
};

/* Waiting for a lock. Every connection opened here waits at most
 * NANO_RPDFILE_BUSY_MS for a lock another connection holds (SQLite's busy
 * handler), and says so once per process on stderr when a wait passes
 * NANO_RPDFILE_BUSY_SAY_MS: "nanoprobe: FILE: waiting for its lock, held by
 * another process". `hook`, when set, is called while a wait lasts longer
 * than that (the tracer's writer uses it to stop producers from waiting in
 * turn; the short waits of processes appending to one file do not call it). */
#define NANO_RPDFILE_BUSY_MS 60000
#define NANO_RPDFILE_BUSY_SAY_MS 1000
void nano_rpdfile_on_busy(void (*hook)(void));
/* Bounds this thread's waits for a lock to `ms` (-1: NANO_RPDFILE_BUSY_MS
 * again) and returns the bound it replaces. A wait shorter than
 * NANO_RPDFILE_BUSY_SAY_MS is never said. The tracer's writer bounds the
 * waits a stranger's read lock could stretch (its commits, at exit). */
int nano_rpdfile_busy_bound(int ms);

/* Side files. A writer that cannot commit because another process holds a
 * read lock on the trace past the writer's bound (the tracer: at exit, or
 * when the rows it holds pass a bound) keeps what the transaction changed in
 * a side file beside the trace, TRACE.pending.PID.N (made whole: an
 * exclusive temporary linked into place, never over an existing one), and
 * rolls back. The next connection that may write the trace folds every side
 * file into it (nano_rpdfile_fold: the tracer when it opens the trace or
 * commits again, every tool that opens it), and removes it. Format:
 *
 *   bytes       what
 *   ----------  --------------------------------------------------------
 *   0 .. 23     NANO_RPDFILE_SIDE_MAGIC, "nanoprobe pending rows 1\n"
 *   24 .. end   an SQLite changeset of the rows (SQLite's session
 *               extension: sqlite3session_changeset), applied with
 *               sqlite3changeset_apply
 *
 * Folding is idempotent: a row the trace already has (a side file folded
 * before, or written again since) is kept as the trace has it. */
#define NANO_RPDFILE_SIDE_MAGIC "nanoprobe pending rows 1\n"
#define NANO_RPDFILE_SIDE_INFIX ".pending."

/* Writes `changeset` (n bytes) into a new side file of the trace at `path`
 * for process `pid`, the first free TRACE.pending.PID.N; its name goes into
 * side (sidelen bytes). 0, or NANO_RPDFILE_EIO with err naming the file. */
int nano_rpdfile_side_write(const char *path, long pid, const void *changeset, int n, char *side,
                            size_t sidelen, char *err, size_t errlen);

/* What nano_rpdfile_fold did. */
struct nano_rpdfile_folded {
  int files;        /* side files folded (and removed) */
  int left;         /* side files still there: locked, unreadable or damaged */
  uint64_t changes; /* rows they added or changed */
  uint64_t kept;    /* rows the trace had already (left as they were) */
};

/* Folds the trace's side files into db (a writing connection on `path`,
 * outside a transaction), each in a transaction of its own, oldest first,
 * waiting at most wait_ms for the lock. Returns 0 with *r filled, or
 * NANO_RPDFILE_EIO/_ESQLITE with err naming the first side file left and
 * why (the others are still tried; r->left counts them all). */
int nano_rpdfile_fold(sqlite3 *db, const char *path, int wait_ms, struct nano_rpdfile_folded *r,
                      char *err, size_t errlen);
/* nano_rpdfile_fold, then says on stderr what it folded and what it left
 * ("nanoprobe: TRACE: folded in 1 side file: N rows written while another
 * process held the trace"); silent when there was nothing to fold. Returns
 * the number of side files left. */
int nano_rpdfile_fold_say(sqlite3 *db, const char *path, int wait_ms);
/* How long a tool opening a trace waits for its lock to fold side files. */
#define NANO_RPDFILE_FOLD_WAIT_MS 1000
/* The first session number no side file of the trace at `path` uses (0
 * when none): a side file's transaction took its session, and its rollback
 * gave the number back to the trace (nano_rpdfile_begin_session skips it). */
int64_t nano_rpdfile_side_next_session(const char *path);
/* The number of side files the trace at `path` has (0 when none or when its
 * folder cannot be read). */
int nano_rpdfile_side_count(const char *path);

/* Size of an error buffer that always holds a full message. */
#define NANO_RPDFILE_ERRLEN 512

/* The rocpd_metadata tag of why GPU kernels ran uninstrumented (a back end
 * or a device that could not be used): one row per cause, its sentence as
 * the value (runtime/rpd/README.md). */
#define NANO_RPDFILE_TAG_GPU_UNAVAILABLE "nano_gpu_unavailable"

/* The SQL script that creates an empty version-3 RPD file: tables, indexes,
 * views and the metadata rows. Static storage. */
const char *nano_rpdfile_schema_sql(void);
/* The SQL of rocmProfileData's optional indexes (its index2Schema.cmd: on
 * rocpd_api_ops, the string ids of rocpd_op, rocpd_api, rocpd_counter and
 * rocpd_kernelapi), each IF NOT EXISTS: what `rpd index` adds. */
const char *nano_rpdfile_index_sql(void);

/* 1 when db has a table or view `name`, 0 when not, -1 on SQLite error. */
int nano_rpdfile_has_object(sqlite3 *db, const char *name);
/* 1 when table `table` has column `column`, 0 when not, -1 on SQLite error. */
int nano_rpdfile_has_column(sqlite3 *db, const char *table, const char *column);
/* Adds the columns nano_dispatch gained since files were first written
 * (aggregate) to a file's older table (the main database's, which must have
 * one). 0, or an NANO_RPDFILE_E* code with the message in err. */
int nano_rpdfile_dispatch_upgrade(sqlite3 *db, const char *path, char *err, size_t errlen);

/* The SQL that creates nanoprobe's own table of process and thread names,
 * nano_thread(pid, tid, name) (the OS names, 15 characters at most; the row
 * with tid = pid names the process), if it is missing. The writer creates it;
 * rpd merge and trim carry it over; rpd info, report and export show it.
 * Static storage. */
const char *nano_rpdfile_thread_schema_sql(void);

/* nanoprobe's table of recording windows, if missing: nano_window, one row
 * per process and window (from a start of recording, rpdstart or the
 * automatic one at load, to its stop, or to exit): id (session offset + the
 * process's window number), session, pid, start, end (ns, the trace's
 * clock; while recording, end is the writer's last commit). A trace's span
 * includes its windows: a short run that records only counts (host
 * atomics) still has one. The writer creates it; rpd merge and trim carry
 * it over. Static storage. */
const char *nano_rpdfile_window_schema_sql(void);

/* nanoprobe's tables of instrumented kernel dispatches, if missing (the
 * runtime's dispatch layer writes them; runtime/dispatch/README.md):
 *   nano_dispatch  one row per reported dispatch: id (session offset + the
 *                  process's dispatch number), session, pid, api_id (the
 *                  launch's rocpd_api row, NULL when none), kernel (mangled),
 *                  kernel_name, kernel_dispatch (n-th of its kernel),
 *                  backend, arch, device, wave_size, grid_x/y/z (blocks),
 *                  block_x/y/z (threads), shared_bytes, start, end (ns),
 *                  records, record_bytes, dropped, decode_errors, lost_bytes,
 *                  aggregate ('device': the analyzers' sums were made where
 *                  the waves ran, no record crossed; 'host': from records;
 *                  NULL in files written before the column existed)
 *   nano_analysis  one row per analyzer and dispatch: dispatch_id ->
 *                  nano_dispatch, analyzer, report (the analyzer's JSON)
 * and the views over the built-in analyzers' reports (SQLite's JSON
 * functions): nano_memory (MemoryAnalysis: one row per source location),
 * nano_heatmap (Heatmap: one row per page), nano_address (AddressLogger with
 * its `trace` option: one row per access), nano_block (KernelTimeline: one
 * row per block: dispatch_id, block_x/y/z, unit, start, end). */
const char *nano_rpdfile_dispatch_schema_sql(void);
/* nanoprobe's table of short calls summed per function (NANO_RPD_MIN_DURATION):
 * nano_call_summary (pid, domain_id, name_id, args_id: rocpd_string ids;
 * calls, total_ns, self_ns; min_duration_ns, the bound in effect) and the
 * view nano_calls with the strings. */
const char *nano_rpdfile_calls_schema_sql(void);
/* nanoprobe's tables of host atomics counts (the tracer writes them from
 * libnano_tracker.so; the columns are described in runtime/rpd/atomics.c):
 * nano_atomic_site, nano_atomic_count, nano_atomic_origin,
 * nano_atomic_sample, nano_atomic_caller and the views nano_atomic_totals,
 * nano_atomic_callers. Site ids are session offset + the tracker's id. */
const char *nano_rpdfile_atomics_schema_sql(void);
/* The largest NANO_RPD_MIN_DURATION (an hour, in ns): no call is shorter. */
#define NANO_RPDFILE_MAX_MIN_DURATION_NS 3600000000000ull

/* Classifies the open database `db` (opened from `path`, used in messages).
 * On success stores the schema version (2 or 3; a file with RPD tables but no
 * schema_version tag counts as 2) in *version and returns 0. Returns
 * NANO_RPDFILE_ENOTDB, _ENOTRPD or _ENEWER (with *version set to the file's
 * version) or _ESQLITE, with a message in err. An SQLite file with no tables
 * at all is reported as _ENOTRPD with *version = 0. */
int nano_rpdfile_check(sqlite3 *db, const char *path, int *version, char *err, size_t errlen);

/* Removes the SQLite file at `path` with its journal side files (-wal, -shm,
 * -journal), as a truncating open does first. Nothing there, or an empty
 * file: nothing to do. Anything else is refused (not SQLite: _ENOTDB; a
 * folder, unreadable: _EIO). Returns 0 or the error. */
int nano_rpdfile_remove(const char *path, char *err, size_t errlen);

/* Opens `path` for writing. A missing file, an empty (0-byte) file or an
 * SQLite file without any table gets the version-3 schema (created under an
 * write transaction, so concurrent creators produce one schema). A file
 * holding a version-3 RPD trace is opened for appending (the check under a
 * write transaction that ends with ROLLBACK, so that a reader of the trace
 * does not hold it). Anything else is
 * refused: not SQLite, SQLite but not RPD, version 2 (older) or newer.
 * truncate != 0 first removes an existing SQLite file (nano_rpdfile_remove;
 * only when no other process has it open: the caller's business). The connection has a busy timeout
 * of 60 s, a rollback journal and `sync` from its first transaction on (the schema's and the
 * session's included). Returns 0 and *db, or an error (then *db is NULL). */
int nano_rpdfile_open_write(const char *path, int truncate, enum nano_rpdfile_sync sync,
                            sqlite3 **db, char *err, size_t errlen);

/* Opens an existing RPD file of schema 2 or 3 for reading (readonly != 0) or
 * for post-processing writes (readonly == 0). Stores its version in *version.
 * A reader gets a read-write connection in query_only mode where this process
 * may write the file and its folder (so that, last to close, it removes the
 * WAL side files), else a read-only one; it can create no TEMP objects either.
 * Where it may write, a version-3 trace's side files are folded in first
 * (nano_rpdfile_fold_say, waiting NANO_RPDFILE_FOLD_WAIT_MS at most); where
 * it may not, their number is said on stderr.
 * Returns 0 and *db, or NANO_RPDFILE_ENOENT, _EIO, _ENOTDB, _ENOTRPD, _ENEWER,
 * _ESQLITE (then *db is NULL). */
int nano_rpdfile_open_read(const char *path, int readonly, sqlite3 **db, int *version, char *err,
                           size_t errlen);

/* Takes the next session number of the file: reads rocpd_metadata
 * 'session_count' (absent means 0), stores value + 1, and adds a 'session' row
 * "id=N pid=P". Outside a transaction it runs in an exclusive one of its own;
 * inside one that holds the write lock (BEGIN IMMEDIATE or EXCLUSIVE) it
 * joins it, and the number is the caller's once the caller commits (one
 * commit less at a writer's start). Returns 0 with *session = N; the writer
 * then adds N << 32 to every id and reference it writes. */
int nano_rpdfile_begin_session(sqlite3 *db, const char *path, int64_t *session, char *err,
                               size_t errlen);

/* The id offset of a session: session << 32. */
static inline int64_t nano_rpdfile_session_offset(int64_t session) {
  return (int64_t)((uint64_t)session << 32);
}

/* Closes a connection opened by this library: checkpoints a WAL-mode file's
 * WAL (folding it into the main file when no other connection is open),
 * leaves the file in rollback-journal mode when db writes and is the only connection (never
 * waiting for others), and closes. Returns 0
 * or NANO_RPDFILE_ESQLITE with a message (the connection is closed anyway).
 * db may be NULL. */
int nano_rpdfile_close(sqlite3 *db, const char *path, char *err, size_t errlen);

/* Runs `sql` (one or more statements) on db; on failure writes
 * "<path>: <what>: <sqlite message>" into err and returns NANO_RPDFILE_ESQLITE. */
int nano_rpdfile_exec(sqlite3 *db, const char *path, const char *what, const char *sql, char *err,
                      size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* NANO_RPDFILE_H */
