/*
 * writer.h: the writer thread's state, shared by writer.c, writer_queue.c
 * and calls.c (not installed). Everything here belongs to the writer thread
 * (and to fork's child, before it has one).
 */
#ifndef NANO_RPD_WRITER_H
#define NANO_RPD_WRITER_H

#include <sqlite3.h>

#include "tracer.h"

#pragma GCC visibility push(hidden)

/* The writer's prepared single-row inserts (rpdw_sql in writer.c). */
enum { ST_STRING, ST_KERNEL, ST_COPY, ST_OP, ST_APIOPS, ST_MONITOR, ST_STACK, ST_THREAD, ST_COUNT };

/* A hash map from keys to ids (strings or 64-bit integers). */
struct rpdw_map {
  uint64_t *hash;
  char **key;     /* string keys (NULL for integer maps) */
  uint64_t *ikey; /* integer keys */
  int64_t *val;
  uint32_t size, count;
};

/* A range of rpdi_range_start awaiting its stop. */
struct rpdw_pending {
  uint64_t id;
  int64_t start;
  int32_t pid, tid;
  uint32_t epoch;
  int64_t domain_id, args_id;
};

/* Rows of the two hot tables, rocpd_api and rocpd_ustring, are queued and
 * inserted by one INSERT ... SELECT per queue from an eponymous virtual table
 * that reads the queue (rpdw_vt_*): no bind calls and one statement execution
 * per RPDW_QUEUE rows. Api rows are inserted in id order: out-of-order
 * rowids make SQLite split full pages in the middle of the table
 * (balance_nonroot) where rowids in order append (balance_quick). A range
 * takes its id when its row is written (at its pop), so rows mostly come in
 * id order already; API calls (ids taken by their threads) and ranges with
 * stack frames (ids taken at their push) are sorted in. Queued ustring texts
 * point into the producers' arenas, so that queue is flushed before an arena
 * tail moves; both are flushed before every commit. */
#define RPDW_QUEUE 4096
/* A queued api row: the values of the rocpd_api columns, in the order of the
 * virtual table's columns (so that xColumn is one load). */
enum {
  RPDW_A_ID,
  RPDW_A_PID,
  RPDW_A_TID,
  RPDW_A_START,
  RPDW_A_END,
  RPDW_A_NAME,
  RPDW_A_CAT,
  RPDW_A_DOM,
  RPDW_A_ARGS,
  RPDW_A_COUNT
};
struct rpdw_api_q {
  int64_t v[RPDW_A_COUNT];
};
struct rpdw_ustr_q {
  int64_t id;
  const char *s;
};
/* The insertion order of the api queue: (id, queue index) sorted by id;
 * autoid: the row's id is the one SQLite would choose itself (see
 * rpdw_flush_api). */
struct rpdw_api_ord {
  int64_t id;
  uint32_t i, autoid;
};
struct rpdw_queues {
  struct rpdw_api_q api[RPDW_QUEUE];
  struct rpdw_api_ord ord[RPDW_QUEUE], ord_tmp[RPDW_QUEUE];
  struct rpdw_ustr_q ustr[RPDW_QUEUE];
};

/* The rows an interned string has in this session, 0 until first written. An
 * interned text is immutable, so every api row that uses it as args can share
 * one rocpd_ustring row. */
struct rpdw_handle_ids {
  int64_t string_id;  /* rocpd_string */
  int64_t ustring_id; /* rocpd_ustring */
  int text;           /* RPDW_TEXT_*: whether the text is empty, once known */
};
enum { RPDW_TEXT_UNKNOWN, RPDW_TEXT_EMPTY, RPDW_TEXT_SET };

/* The ids of a user range/mark whose string refs are all interned (or none):
 * a direct-mapped cache in front of rpdw_user_ids' per-handle lookups. */
#define RPDW_USER_CACHE_BITS 8
struct rpdw_user_entry {
  uint64_t s[3];
  int64_t dom, name, args; /* dom 0: an empty entry */
};

/* Distinct job schemas a connection remembers having run (there is one today:
 * the dispatch layer's). */
#define RPDW_SCHEMAS 8

struct rpd_writer {
  sqlite3 *db;
  char path[4096];
  int64_t session, offset;
  sqlite3_stmt *st[ST_COUNT];
  sqlite3_stmt *api_ins, *ustr_ins; /* INSERT ... SELECT from the queues */
  sqlite3_stmt *api_ins_uniform;    /* api_ins for rows of one thread, category and domain */
  sqlite3_stmt *api_last;           /* rpdw_api_last_id */
  struct rpdw_queues *q; /* heap: a fork child forgets the parent's with the rest of g_w */
  int napiq, nustrq;
  struct rpdw_map strings, ips;
  struct rpdw_handle_ids *handle_ids; /* interned handle -> its row ids */
  struct rpdw_user_entry user_cache[1 << RPDW_USER_CACHE_BITS];
  uint32_t nhandle_ids;
  int64_t next_string, next_ustring, next_op, next_apiops, next_monitor, next_stack;
  int64_t id_usermarker, id_empty, id_uempty;
  char proc_name[16]; /* the process name as last written */
  struct rpdw_pending *pend;
  int npend, cappend;
  int in_txn;
  uint64_t txn_rows;
  /* Held commits (writer.c, "Another process's read lock"): the open
   * transaction's changes while another connection had the file when it
   * began, and whether its commit is held by a reader. */
  sqlite3_session *capture;
  int held;
  int held_said;      /* the once-per-process line is out */
  int waited_last;    /* the last flush waited RPDW_EXIT_WAIT_MS once */
  int rebuild;        /* a diverted transaction took the tables it made */
  int sides;          /* side files this process wrote */
  int unfolded;       /* some of them may still wait beside the trace */
  uint64_t side_rows; /* rows they hold */
  int cut_short;      /* the last round stopped for a fork: records are left */
  int failed;
  int never_opened;      /* the file could not be opened: nothing was written */
  uint64_t lost_rows;    /* rows of transactions the failure rolled back */
  uint64_t lost_records; /* records consumed after it, not written */
  int64_t drop_meta_id;
  uint64_t dropped_written;
  uint32_t window;                   /* the epoch of the window written last (0: none) */
  uint64_t written_rows;             /* rows committed by this process's writer */
  const char *schemas[RPDW_SCHEMAS]; /* job schemas run on this connection */
  int nschemas;
  /* NANO_RPD_MIN_DURATION (ns; 0: every range is a row): shorter ranges are
   * summed per function into nano_call_summary instead */
  int64_t min_ns;
  struct rpdw_call_sum *sums;
  int nsums, capsums;
  uint32_t sum_size; /* sum_index: sum_size slots, each an entry's index + 1 */
  uint32_t *sum_index;
  int sums_dirty;
};
extern struct rpd_writer g_w;

/* ---- writer.c ---- */

/* Says what failed (SQLite's message) and stops writing the file; -1. */
int rpdw_fail(const char *what);
/* Runs sql; on failure says `what` and stops writing the file. 0 or -1. */
int rpdw_exec(const char *sql, const char *what);
/* Begins the writer's transaction unless one is open. 0, or -1 (failed). */
int rpdw_begin(void);
/* Steps prepared statement `which` (ST_*) and resets it; `bound` is its
 * binds' results or'ed. 0, or -1 after failing the file. */
int rpdw_step(int which, int bound);

/* ---- writer_rows.c: records into rows ---- */

/* A string map (the trace's string ids, or handles): 0, or -1 (no memory). */
int rpdw_map_init(struct rpdw_map *m, int strings);
void rpdw_map_free(struct rpdw_map *m);
/* The rocpd_string id of s, made where new (0: failed). */
int64_t rpdw_string_id(const char *s);
/* Queues one rocpd_api row. */
void rpdw_api_row(int64_t id, int pid, int tid, int64_t start, int64_t end, int64_t name_id,
                  int64_t cat_id, int64_t dom_id, int64_t args_id);
/* Closes thread b's ranges left open from an epoch before cur_on_epoch. */
void rpdw_close_stale(struct rpd_tbuf *b, uint32_t cur_on_epoch);
/* Writes ring record r of buffer b as its rows; *aend follows the arena. */
void rpdw_record(struct rpd_tbuf *b, const struct nano_rpd_rec *r, uint64_t *aend);

/* ---- writer_queue.c ---- */

enum { RPDW_VT_API, RPDW_VT_USTRING };
extern const sqlite3_module rpdw_vt_api_module, rpdw_vt_ustring_module;
/* Inserts the queued ustring rows (before an arena tail moves past them). */
void rpdw_flush_ustrings(void);
/* Inserts the queued api rows, in id order. */
void rpdw_flush_api(void);
/* Both queues, before every commit. */
void rpdw_flush_queues(void);

/* ---- calls.c ---- */

/* Adds one call of open range o of process pid, `dur` ns long. Returns 0,
 * or -1 when out of memory (the caller writes a row instead). */
int rpdw_sum_add(int32_t pid, const struct rpd_open *o, int64_t dur);
/* Writes the entries that changed since the last flush, inside the
 * writer's transaction. */
void rpdw_write_sums(void);

#pragma GCC visibility pop

#endif /* NANO_RPD_WRITER_H */
