/* writer.c: the writer thread (the tracer core, tracer.h). */
#define _GNU_SOURCE
#include "tracer.h"

#include "nano/hash.h"
#include "nano/path.h"
#include "nano/rpdfile.h"
#include "nano/settings.h"
#include "nano/thread.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#ifdef NANO_RPD_HAVE_TRACKER
#include "nano/atomics.h"
#endif
#include "writer.h"

/* ---- writer --------------------------------------------------------------- */

static const char *const rpdw_sql[ST_COUNT] = {
    "INSERT INTO rocpd_string(id, string) VALUES (?,?)",
    "INSERT INTO rocpd_kernelapi(api_ptr_id, stream, gridX, gridY, gridZ, workgroupX, workgroupY, "
    "workgroupZ, groupSegmentSize, privateSegmentSize, kernelName_id) VALUES "
    "(?,?,?,?,?,?,?,?,?,?,?)",
    "INSERT INTO rocpd_copyapi(api_ptr_id, stream, size, width, height, kind, dst, src, dstDevice, "
    "srcDevice, sync, pinned) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
    "INSERT INTO rocpd_op(id, gpuId, queueId, sequenceId, start, end, description_id, opType_id) "
    "VALUES (?,?,?,?,?,?,?,?)",
    "INSERT INTO rocpd_api_ops(id, api_id, op_id) VALUES (?,?,?)",
    "INSERT INTO rocpd_monitor(id, deviceType, deviceId, monitorType, start, end, value) "
    "VALUES (?,?,?,?,?,?,?)",
    "INSERT INTO rocpd_stackframe(id, api_ptr_id, depth, name_id) VALUES (?,?,?,?)",
    "INSERT OR REPLACE INTO nano_thread(pid, tid, name) VALUES (?,?,?)",
};

struct rpd_writer g_w;
_Atomic uint64_t g_txn_records;
_Atomic uint64_t g_txn_seq;

static void rpdw_capture_end(void);

/* The writer stops writing the file: the open transaction is rolled back
 * (SQLite may have done so already) and its rows are counted as lost. */
static void rpdw_set_failed(void) {
  if (g_w.failed)
    return;
  g_w.failed = 1;
  atomic_store(&g_writer_failed, 1);
  if (g_w.db && (g_w.in_txn || !sqlite3_get_autocommit(g_w.db))) {
    g_w.lost_rows += g_w.txn_rows;
    if (!sqlite3_get_autocommit(g_w.db))
      sqlite3_exec(g_w.db, "ROLLBACK", NULL, NULL, NULL);
  }
  rpdw_capture_end();
  g_w.in_txn = 0;
}

int rpdw_fail(const char *what) {
  if (!g_w.failed)
    rpd_log("%s: %s: %s (recording into this file stops)", g_w.path, what, sqlite3_errmsg(g_w.db));
  rpdw_set_failed();
  return -1;
}

int rpdw_exec(const char *sql, const char *what) {
  char err[NANO_RPDFILE_ERRLEN];
  if (nano_rpdfile_exec(g_w.db, g_w.path, what, sql, err, sizeof err) != 0) {
    if (!g_w.failed)
      rpd_log("%s (recording into this file stops)", err);
    rpdw_set_failed();
    return -1;
  }
  return 0;
}

/* Steps a bound insert statement and resets it (every caller binds every
 * parameter, so bindings are not cleared). `bound` is the binds' results
 * or'ed: one that failed would leave the last row's value in its place, so
 * the row is not written and the file fails. */
int rpdw_step(int which, int bound) {
  if (g_w.failed)
    return -1; /* no row outside the transaction that failed */
  sqlite3_stmt *st = g_w.st[which];
  int rc = bound == SQLITE_OK ? sqlite3_step(st) : bound;
  sqlite3_reset(st);
  if (rc != SQLITE_DONE)
    return rpdw_fail(rpdw_sql[which]);
  g_w.txn_rows++;
  return 0;
}

/* ---- Another process's read lock ---------------------------------------------
 * In rollback-journal mode a commit needs every reader of the file gone, so a
 * stranger that keeps a read transaction open (an `sqlite3` shell, a script's
 * cursor) would hold the writer's commit, and with it rpdflush, rpdstop and
 * the program's exit, for as long as it likes. So:
 *   - a transaction begins EXCLUSIVE, waiting RPDW_EXCLUSIVE_WAIT_MS at most
 *     (other appenders' commits are shorter). Then no reader can come in
 *     before its commit, and the commit waits for nobody: the common case,
 *     at no cost.
 *   - When that fails, another connection has the file: a reader, or a
 *     writer. The writer waits for writers (BEGIN IMMEDIATE, as always, then
 *     ROLLBACK) and tries EXCLUSIVE once more; failing again, a reader is
 *     there, and the transaction begins IMMEDIATE with SQLite's session
 *     extension capturing what it changes (about 2x the cost of a row, only
 *     in such transactions). The extension captures tables with a primary
 *     key, as every table the writer writes has (nano_atomic_sample since
 *     it got an id: in older files a diverted transaction's samples are not
 *     kept, their counts are).
 *   - Its commit waits RPDW_COMMIT_WAIT_MS at most while recording. Held by a
 *     reader, the transaction stays open (SQLite keeps it; its pending lock
 *     lets no new reader in, so the stranger's next read waits for the
 *     writer), rows go on into it, said once, and each round tries again:
 *     producers never wait and nothing is dropped.
 *   - On the last flush (exit, a death path) the commit waits
 *     RPDW_EXIT_WAIT_MS at most; still held, the captured changes go to a
 *     side file beside the trace (nano_rpdfile_side_write) and the
 *     transaction is rolled back; so does one that passes RPDW_HELD_MAX_ROWS
 *     rows. The next connection that may write the trace folds side files
 *     in: this writer when its next commit goes through, the next recording
 *     at its open, every rpd tool (nano_rpdfile_open_read).
 * A writer that holds the lock (another process's open write transaction)
 * still holds ours up to NANO_RPDFILE_BUSY_MS, as before: records wait in
 * the overflow store meanwhile. */
#define RPDW_EXCLUSIVE_WAIT_MS 50
#define RPDW_COMMIT_WAIT_MS 100
#define RPDW_EXIT_WAIT_MS 1000
/* Rows a held transaction may reach before it goes to a side file: its
 * pages stay in memory until then (about 100 bytes a row with the capture). */
#define RPDW_HELD_MAX_ROWS (1u << 21)

/* Starts capturing the open transaction's changes. 0, or -1 (failed). */
static int rpdw_capture_start(void) {
  sqlite3_session *s = NULL;
  if (sqlite3session_create(g_w.db, "main", &s) != SQLITE_OK ||
      sqlite3session_attach(s, NULL) != SQLITE_OK) {
    if (s)
      sqlite3session_delete(s);
    return rpdw_fail("cannot capture a transaction's rows (sqlite3session_create)");
  }
  g_w.capture = s;
  return 0;
}

static void rpdw_capture_end(void) {
  if (!g_w.capture)
    return;
  sqlite3session_delete(g_w.capture);
  g_w.capture = NULL;
  g_w.held = 0;
  (void)sqlite3_exec(g_w.db, "PRAGMA cache_spill=ON", NULL, NULL, NULL); /* a flag: no I/O */
}

/* BEGIN EXCLUSIVE, waiting ms at most: SQLITE_OK, SQLITE_BUSY or an error. */
static int rpdw_begin_exclusive(int ms) {
  int old = nano_rpdfile_busy_bound(ms);
  int rc = sqlite3_exec(g_w.db, "BEGIN EXCLUSIVE", NULL, NULL, NULL);
  nano_rpdfile_busy_bound(old);
  return rc;
}

int rpdw_begin(void) {
  if (g_w.in_txn || g_w.failed)
    return g_w.failed ? -1 : 0;
  int rc = rpdw_begin_exclusive(RPDW_EXCLUSIVE_WAIT_MS);
  if (rc == SQLITE_BUSY) {
    /* A writer's long round, or a reader. Once a writer's lock is ours,
     * writers are out of the way: a second try fails only for a reader. */
    if (rpdw_exec("BEGIN IMMEDIATE", "cannot begin a transaction") != 0 ||
        rpdw_exec("ROLLBACK", "cannot end a transaction") != 0)
      return -1;
    rc = rpdw_begin_exclusive(0);
  }
  int reader = rc == SQLITE_BUSY;
  if (reader) {
    /* No spilling of dirty pages: a spill needs the lock a reader may hold
     * (and would wait for it). The transaction's pages stay in memory. Set
     * outside a transaction: SQLite applies pager flags only there. */
    if (rpdw_exec("PRAGMA cache_spill=OFF", "cannot keep a transaction in memory") != 0 ||
        rpdw_exec("BEGIN IMMEDIATE", "cannot begin a transaction") != 0)
      return -1;
  } else if (rc != SQLITE_OK) {
    return rpdw_fail("cannot begin a transaction");
  }
  g_w.in_txn = 1;
  g_w.txn_rows = 0;
  if (reader && rpdw_capture_start() != 0)
    return -1;
  /* a diverted transaction took the tables it made out of the file again */
  if (g_w.rebuild) {
    g_w.rebuild = 0;
    g_w.nschemas = 0;
    if (rpdw_exec(nano_rpdfile_thread_schema_sql(), "cannot create nano_thread") != 0 ||
        rpdw_exec(nano_rpdfile_window_schema_sql(), "cannot create nano_window") != 0)
      return -1;
  }
  return 0;
}

/* What g_txn_records holds once the open transaction is gone (committed,
 * or diverted to a side file): the ranges the writer still holds open,
 * whose starts it took and whose rows come at their ends. */
static void rpdw_txn_records_reset(void) {
  uint64_t open = 0;
  for (struct rpd_tbuf *b = atomic_load(&g_bufs); b; b = b->next)
    open += (uint64_t)b->nopen;
  atomic_fetch_add(&g_txn_seq, 1);
  atomic_store(&g_txn_records, open);
  atomic_fetch_add(&g_txn_seq, 1);
}

/* Moves n records of ring b into the writer's hands: counted in
 * g_txn_records, then b's tail (and arena end) past them, between two steps
 * of g_txn_seq. */
static void rpdw_took(struct rpd_tbuf *b, uint64_t n, uint64_t tail, uint64_t aend) {
  atomic_fetch_add(&g_txn_seq, 1);
  atomic_fetch_add(&g_txn_records, n);
  atomic_store_explicit(&b->atail, aend, memory_order_release);
  atomic_store_explicit(&b->tail, tail, memory_order_release);
  atomic_fetch_add(&g_txn_seq, 1);
}

/* Moves the held transaction's rows to a side file and rolls it back. */
static void rpdw_divert(void) {
  int n = 0;
  void *p = NULL;
  char side[sizeof g_w.path + 64], err[sizeof g_w.path + NANO_RPDFILE_ERRLEN];
  int rc = sqlite3session_changeset(g_w.capture, &n, &p);
  if (rc != SQLITE_OK)
    snprintf(err, sizeof err, "%s: cannot read the held transaction's rows: %s", g_w.path,
             sqlite3_errstr(rc));
  else if (n > 0 && nano_rpdfile_side_write(g_w.path, (long)getpid(), p, n, side, sizeof side, err,
                                            sizeof err) != 0)
    rc = SQLITE_IOERR;
  sqlite3_free(p);
  uint64_t rows = g_w.txn_rows;
  (void)sqlite3_exec(g_w.db, "ROLLBACK", NULL, NULL, NULL);
  rpdw_capture_end();
  rpdw_txn_records_reset(); /* the rows are kept in the side file or said lost */
  g_w.in_txn = 0;
  g_w.rebuild = 1;
  if (rc != SQLITE_OK) {
    g_w.lost_rows += rows;
    rpd_log("%s (another process held a read lock on the trace: %llu rows lost)", err,
            (unsigned long long)rows);
    return;
  }
  if (n == 0) /* nothing was changed: nothing to keep */
    return;
  g_w.unfolded = 1;
  g_w.sides++;
  g_w.side_rows += rows;
  rpd_log("%s: another process held a read lock on it; %llu rows went to the side file %s "
          "instead (folded in by the next recording or rpd command that opens the trace)",
          g_w.path, (unsigned long long)rows, side);
}

/* Commits the open transaction. A commit another process's read lock holds
 * leaves it open (and returns 0), or diverts it to a side file past
 * RPDW_HELD_MAX_ROWS rows or, when `flush` is set (the end of a flush), on
 * the last flush. */
static int rpdw_commit_at(int flush) {
  if (!g_w.in_txn)
    return 0;
  rpdw_flush_queues();
  if (g_w.failed)
    return -1;
  int last = atomic_load(&g_writer_quit) || atomic_load(&g_writer_final);
  /* the last flush waits once: a reader that stayed that long is not waited for again */
  int old = nano_rpdfile_busy_bound(!g_w.capture               ? -1
                                    : last && !g_w.waited_last ? RPDW_EXIT_WAIT_MS
                                                               : RPDW_COMMIT_WAIT_MS);
  int rc = sqlite3_exec(g_w.db, "COMMIT", NULL, NULL, NULL);
  nano_rpdfile_busy_bound(old);
  if (rc == SQLITE_BUSY && g_w.capture && !sqlite3_get_autocommit(g_w.db)) {
    if (!g_w.held_said) {
      g_w.held_said = 1;
      rpd_log("%s: another process holds a read lock on it; this run's rows wait in memory and "
              "go in when it lets go (at exit, into a side file beside the trace)",
              g_w.path);
    }
    g_w.held = 1;
    g_w.waited_last |= last;
    if ((flush && last) || g_w.txn_rows > RPDW_HELD_MAX_ROWS)
      rpdw_divert();
    return 0;
  }
  if (rc != SQLITE_OK)
    return rpdw_fail("cannot commit");
  rpdw_txn_records_reset();
  g_w.in_txn = 0;
  g_w.written_rows += g_w.txn_rows;
  rpdw_capture_end();
  if (g_w.unfolded) /* the reader let go: this run's side files go in now */
    g_w.unfolded = nano_rpdfile_fold_say(g_w.db, g_w.path, RPDW_COMMIT_WAIT_MS) > 0;
  return 0;
}

static int rpdw_commit(void) { return rpdw_commit_at(0); }

/* While draining, the writer hands consumed room back to the producer every
 * RPDW_PUBLISH_EVERY records (a full producer waits on no more than that), and
 * splits a transaction past RPDW_TXN_MAX_ROWS rows (so that one busy drain
 * neither keeps other appenders off the file nor leaves a SIGKILL that much
 * to roll back). */
#define RPDW_PUBLISH_EVERY 1024
#define RPDW_TXN_MAX_ROWS 200000

/* A round of the writer holds g_wlock, and a fork waits for it (rpdw_atfork).
 * A round drains every ring, including those a producer moves on to meanwhile,
 * which under a program recording faster than the writer can write is a lot:
 * a fork waited up to a second beside two busy processes (minutes once, with
 * a thread recording all along on a loaded machine).
 * So a fork says it is waiting, and the round stops at the next publication
 * point (every RPDW_PUBLISH_EVERY records), commits what it has and lets the
 * fork through; the next round goes on where it stopped (g_w.cut_short). */
static _Atomic int g_fork_waiting;

/* Whether record r, the last of ring b, is a push that its pop may still
 * fold into (rpd.h): while recording goes on in its epoch and b is its
 * thread's current ring, it is left unread (an open range either way). */
static int rpdw_push_open(const struct rpd_tbuf *b, const struct nano_rpd_rec *r) {
  uint32_t st = atomic_load(&g_state);
  return __atomic_load_n(&r->type, __ATOMIC_ACQUIRE) == R_PUSH && r->nslots == 1 && (st & 1) &&
         (st >> 1) == r->epoch && !atomic_load_explicit(&b->seg_next, memory_order_acquire);
}

/* Drains buffer b; returns the number of records written. */
static uint64_t rpdw_drain(struct rpd_tbuf *b) {
  uint64_t head = __atomic_load_n(&b->ring.head, __ATOMIC_ACQUIRE);
  uint64_t tail = atomic_load_explicit(&b->tail, memory_order_relaxed);
  if (head == tail ||
      (head == tail + 1 && rpdw_push_open(b, &b->ring.slots[tail & (b->ring.nslots - 1)])))
    return 0;
  uint64_t aend = atomic_load_explicit(&b->atail, memory_order_relaxed), n = 0;
  if (rpdw_begin() != 0) {
    /* the file is unusable: consume so producers never block, and count */
    for (uint64_t t = tail; t < head; n++) {
      const struct nano_rpd_rec *r = &b->ring.slots[t & (b->ring.nslots - 1)];
      t += r->nslots ? r->nslots : 1;
    }
    g_w.lost_records += n;
    atomic_store_explicit(&b->atail, atomic_load_explicit(&b->ahead, memory_order_relaxed),
                          memory_order_release);
    atomic_store_explicit(&b->tail, head, memory_order_release);
    return 0;
  }
  while (tail < head) {
    const struct nano_rpd_rec *r = &b->ring.slots[tail & (b->ring.nslots - 1)];
    uint32_t ns = r->nslots ? r->nslots : 1;
    if (tail + ns == head && rpdw_push_open(b, r))
      break;
    g_w.lost_records += g_w.failed != 0; /* read (the arena moves on), not written */
    rpdw_record(b, r, &aend);
    tail += ns;
    n++;
    if (n % RPDW_PUBLISH_EVERY == 0) {
      rpdw_flush_ustrings();
      rpdw_took(b, RPDW_PUBLISH_EVERY, tail, aend);
      if (g_w.txn_rows > (g_w.held ? RPDW_HELD_MAX_ROWS : RPDW_TXN_MAX_ROWS)) {
        rpdw_commit();
        rpdw_begin();
      }
      if (atomic_load_explicit(&g_fork_waiting, memory_order_relaxed)) {
        g_w.cut_short = 1;
        break;
      }
    }
  }
  rpdw_flush_ustrings();
  rpdw_took(b, n % RPDW_PUBLISH_EVERY, tail, aend);
  return n;
}

/* Makes ring s's arrays the writer's to drain (SEG_READ), reading a spilled
 * ring back. Returns 0, or -1 when it cannot now (out of memory; the next
 * round tries again). A ring that cannot be read back is counted as lost. */
static int rpdw_seg_take(struct rpd_tbuf *s) {
  for (;;) {
    int st = SEG_MEM;
    if (atomic_compare_exchange_strong(&s->seg_state, &st, SEG_READ))
      return 0;
    if (st == SEG_SPILLING) { /* its producer is writing it out: not for long */
      struct timespec ts = {0, 50000};
      nanosleep(&ts, NULL);
      continue;
    }
    if (st != SEG_SPILLED)
      return 0;
    if (rpd_seg_readback_arrays(s) != 0)
      return -1;
    struct iovec v[2] = {{s->ring.slots, (size_t)s->ring.nslots * sizeof(struct nano_rpd_rec)},
                         {s->arena, s->asize}};
    if (rpdi_spill_read(&s->spill, v, 2) != 0) {
      uint64_t head = __atomic_load_n(&s->ring.head, __ATOMIC_SEQ_CST);
      g_w.lost_records += head - atomic_load(&s->tail); /* slots, at most that many records */
      atomic_store(&s->atail, atomic_load(&s->ahead));
      atomic_store(&s->tail, head);
    }
    rpdi_spill_release(&s->spill);
    atomic_store(&s->seg_state, SEG_READ);
    return 0;
  }
}

/* A drained ring s of thread t that its producer has left: t's spare, else
 * the pool's (rpd_seg_release). The primary (t itself) is never freed; it is the
 * spare first. */
static void rpdw_seg_recycle(struct rpd_tbuf *t, struct rpd_tbuf *s) {
  struct rpd_tbuf *old = NULL;
  if (s == t)
    old = atomic_exchange(&t->spare, s);
  else if (!atomic_compare_exchange_strong(&t->spare, &old, s))
    old = s;
  else
    old = NULL;
  if (old)
    rpd_seg_release(old);
}

/* Drains thread t's rings in order, up to the one its producer had when the
 * pass began; returns the number of records written. */
static uint64_t rpdw_drain_thread(struct rpd_tbuf *t) {
  /* The thread's ring now: rings its producer links after it are the next
   * pass's, so that a pass (and a flush) ends while a producer outpaces the
   * writer. */
  const struct rpd_tbuf *last = __atomic_load_n(&t->pseg, __ATOMIC_ACQUIRE);
  uint64_t n = 0;
  for (;;) {
    struct rpd_tbuf *s = t->wseg;
    if (rpdw_seg_take(s) != 0)
      break;
    n += rpdw_drain(s);
    struct rpd_tbuf *next = atomic_load_explicit(&s->seg_next, memory_order_acquire);
    if (next && !g_w.cut_short)
      n += rpdw_drain(s); /* what it published before it moved on */
    atomic_store(&s->seg_state, SEG_MEM);
    if (!next || g_w.cut_short)
      break;
    atomic_store(&s->seg_next, NULL);
    t->wseg = next;
    rpdw_seg_recycle(t, s);
    if (s == last)
      break;
  }
  return n;
}

/* Whether the writer has drained every ring of thread t. */
static int rpdw_thread_drained(const struct rpd_tbuf *t) {
  const struct rpd_tbuf *s = t->wseg;
  return !atomic_load(&s->seg_next) &&
         atomic_load(&s->tail) == __atomic_load_n(&s->ring.head, __ATOMIC_SEQ_CST);
}

/* Writes (pid, tid, name) into nano_thread. Returns 0, or -1 (failed). */
static int rpdw_put_name(int32_t pid, int32_t tid, const char *name) {
  if (rpdw_begin() != 0)
    return -1;
  sqlite3_stmt *st = g_w.st[ST_THREAD];
  int rc = sqlite3_bind_int(st, 1, pid) | sqlite3_bind_int(st, 2, tid) |
           sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK)
    rc = sqlite3_step(st);
  sqlite3_reset(st);
  if (rc != SQLITE_DONE) {
    rpdw_fail("INSERT INTO nano_thread");
    return -1;
  }
  return 0;
}

/* Writes the OS name of (pid, tid) unless the program named the thread, or
 * the name is `written` (the OS name last written for them, updated). */
static void rpdw_name(int32_t pid, int32_t tid, char written[16], const char *name) {
  if (!name[0] || strncmp(written, name, 15) == 0)
    return;
  if (rpd_thread_named(tid) || rpdw_put_name(pid, tid, name) != 0)
    return;
  snprintf(written, 16, "%s", name);
}

/* Reads /proc/self/task/TID/comm (tid 0: /proc/self/comm, the process's) into
 * name[16]; "" when it cannot. */
static void rpdw_read_comm(int32_t tid, char name[16]) {
  char path[64];
  if (tid)
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
  else
    snprintf(path, sizeof path, "/proc/self/comm");
  name[0] = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  ssize_t n = read(fd, name, 15);
  close(fd);
  if (n <= 0)
    n = 0;
  name[n] = 0;
  char *nl = strchr(name, '\n');
  if (nl)
    *nl = 0;
}

/* The names the program gave, then the OS names of this process and of its
 * live recording threads (threads that exited are named from their exit; see
 * rpdw_drain_all). */
static void rpdw_names(void) {
  char name[16];
  int32_t pid = (int32_t)getpid();
  rpd_given_names(rpdw_put_name, pid);
  rpdw_read_comm(0, name);
  rpdw_name(pid, pid, g_w.proc_name, name);
  for (struct rpd_tbuf *b = atomic_load(&g_bufs); b; b = b->next) {
    if (atomic_load_explicit(&b->state, memory_order_acquire) != 0 || b->tid == pid)
      continue;
    rpdw_read_comm(b->tid, name);
    rpdw_name(b->pid, b->tid, b->name, name);
  }
}

/* One pass over all buffers; frees the buffers of exited threads once empty. */
static void rpdw_drain_all(void) {
  g_w.cut_short = 0;
  for (struct rpd_tbuf *b = atomic_load(&g_bufs); b && !g_w.cut_short; b = b->next) {
    int state = atomic_load_explicit(&b->state, memory_order_acquire);
    if (state == 2)
      continue;
    rpdw_drain_thread(b);
    if (state == 1 && rpdw_thread_drained(b)) {
      uint32_t st = atomic_load(&g_state);
      rpdw_close_stale(b, (st & 1) ? st >> 1 : 0);
      /* ranges of the current epoch were closed by the thread's R_EXIT record */
      b->nopen = 0;
      rpdw_name(b->pid, b->tid, b->name, b->exit_name);
      b->name[0] = 0; /* for the buffer's next owner */
      atomic_store_explicit(&b->state, 2, memory_order_release);
    }
  }
}

/* Writes this session's dropped-record count into rocpd_metadata. */
static void rpdw_write_dropped(void) {
  uint64_t total = 0;
  for (struct rpd_tbuf *b = atomic_load(&g_bufs); b; b = b->next)
    total += atomic_load(&b->dropped);
  if (total == g_w.dropped_written || g_w.failed)
    return;
  if (rpdw_begin() != 0)
    return;
  char sql[256];
  /* by id, not UPDATE: after a side file took the row, the file gets it back,
   * newer than the side file's (which folding then leaves) */
  if (g_w.drop_meta_id)
    snprintf(sql, sizeof sql,
             "INSERT OR REPLACE INTO rocpd_metadata(id, tag, value) VALUES "
             "(%lld, 'nano_dropped_records', '%llu')",
             (long long)g_w.drop_meta_id, (unsigned long long)total);
  else
    snprintf(sql, sizeof sql,
             "INSERT INTO rocpd_metadata(tag, value) VALUES ('nano_dropped_records', '%llu')",
             (unsigned long long)total);
  if (rpdw_exec(sql, "cannot record the dropped-record count") != 0)
    return;
  if (!g_w.drop_meta_id)
    g_w.drop_meta_id = sqlite3_last_insert_rowid(g_w.db);
  g_w.dropped_written = total;
}

/* Writes (or rewrites, by id) the nano_window row of epoch's window, ending
 * at `end` (ns). */
static void rpdw_window_row(uint32_t epoch, int64_t end) {
  int64_t start = rpdw_time(atomic_load(&g_start_at[epoch % RPD_STOP_EPOCHS]));
  char sql[256];
  snprintf(sql, sizeof sql,
           "INSERT OR REPLACE INTO nano_window(id, session, pid, start, \"end\") VALUES "
           "(%lld, %lld, %d, %lld, %lld)",
           (long long)(g_w.offset + epoch), (long long)g_w.session, (int)getpid(), (long long)start,
           (long long)(end > start ? end : start));
  (void)rpdw_exec(sql, "cannot record the recording window");
}

/* The end so far of the window of state st (g_state): now while it
 * records, else its stop. */
static int64_t rpdw_window_end(uint32_t st) {
  return (st & 1) || !(st >> 1) ? rpd_clock()
                                : rpdw_time(atomic_load(&g_stop_at[(st >> 1) % RPD_STOP_EPOCHS]));
}

/* This process's recording windows (nano_window): the current one from its
 * start to its stop, or to now while recording; the one written last, when
 * another began since, to its stop. */
static void rpdw_write_windows(void) {
  uint32_t st = atomic_load(&g_state), epoch = st >> 1;
  if (g_w.failed || (!epoch && !g_w.window) || rpdw_begin() != 0)
    return;
  if (g_w.window && g_w.window != epoch)
    rpdw_window_row(g_w.window, rpdw_time(atomic_load(&g_stop_at[g_w.window % RPD_STOP_EPOCHS])));
  if (epoch)
    rpdw_window_row(epoch, rpdw_window_end(st));
  g_w.window = epoch;
}

/* Lowers the calling thread's priority `steps` nice steps below the
 * process's (Linux keeps a nice value per thread), at most to
 * RPD_MAX_WRITER_NICE; `who` names the thread in the message of a failure. */
static void rpdw_lower_priority(int steps, const char *who) {
  if (steps <= 0)
    return;
  id_t tid = (id_t)syscall(SYS_gettid);
  errno = 0;
  int level = getpriority(PRIO_PROCESS, tid);
  if (level == -1 && errno != 0) {
    rpd_log("cannot read the %s thread's priority: %s", who, strerror(errno));
    return;
  }
  level += steps;
  if (level > RPD_MAX_WRITER_NICE)
    level = RPD_MAX_WRITER_NICE;
  if (setpriority(PRIO_PROCESS, tid, level) != 0)
    rpd_log("cannot lower the %s thread's priority (by %d): %s", who, steps, strerror(errno));
}

/* ---- truncation -------------------------------------------------------------
 * A truncating recording (rpd_set_filename(path, 0)) removes the old trace
 * when it starts, in rpd_writer_start, under g_ctl: before any fork can
 * happen, so that a child forked early appends to the parent's new file
 * instead of removing it as well (the loser's connection would be left on a
 * removed file: "attempt to write a readonly database").
 * Freeing a file's blocks and cached pages costs the kernel about 0.2 to 0.5
 * ms per MiB, all inside unlink, which would delay the program (and, later,
 * every row of the new recording). So the old file is held open across the
 * removal (the name goes at once, the blocks stay), and a thread at the lowest
 * priority closes it, which frees them, on a core the program leaves idle.
 * The writer joins that thread when it closes the file. A fork waits for a
 * close under way (the lock); the child closes its inherited copy, which
 * frees nothing. */
static struct {
  pthread_mutex_t lock; /* held across the close, and across fork */
  int fd;               /* the removed file, until closed; -1 */
  pthread_t thread;
  int started; /* thread is to be joined */
} g_old = {PTHREAD_MUTEX_INITIALIZER, -1, 0, 0};

static void rpdw_old_close(void) {
  pthread_mutex_lock(&g_old.lock);
  if (g_old.fd >= 0 && close(g_old.fd) != 0)
    rpd_log("cannot close the removed trace file: %s", strerror(errno));
  g_old.fd = -1;
  pthread_mutex_unlock(&g_old.lock);
}

static void *rpdw_old_thread(void *arg) {
  (void)arg; /* started by nano_thread_start: the application's signals are blocked */
  rpdw_lower_priority(RPD_MAX_WRITER_NICE, "trace remover");
  rpdw_old_close();
  return NULL;
}

/* Removes the trace at g_w.path for a truncating start (g_truncate), which
 * is then done. A removal that fails leaves g_truncate set: the writer's
 * open tries again and says why it cannot. A FIFO or device at the path does
 * not block the hold (O_NONBLOCK). */
static void rpdw_truncate(void) {
  int fd = open(g_w.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  char err[NANO_RPDFILE_ERRLEN];
  if (nano_rpdfile_remove(g_w.path, err, sizeof err) == 0)
    g_truncate = 0;
  if (fd < 0)
    return;
  g_old.fd = fd;
  struct stat sb;
  if (!g_truncate && fstat(fd, &sb) == 0 && sb.st_nlink == 0 &&
      nano_thread_start(&g_old.thread, rpdw_old_thread, NULL) == 0) {
    g_old.started = 1;
    return;
  }
  rpdw_old_close(); /* nothing removed (frees nothing), or no thread */
}

/* Waits for the removed file's close (at the writer's close). */
static void rpdw_old_join(void) {
  if (g_old.started)
    pthread_join(g_old.thread, NULL);
  g_old.started = 0;
}

/* Writer connection setup: open the file, take a session, prepare. */
/* g_w.path: RPDT_FILENAME with %p expanded to this process's id. */
static void rpdw_set_path(void) {
  (void)nano_path_expand_pid(g_template, (long)getpid(), g_w.path, sizeof g_w.path); /* cut */
}

/* Opens g_w.path for writing and begins this process's session (on the
 * writer thread: a file locked by another process makes it wait, never the
 * program). Returns 0 or -1 (said on stderr). */
static int rpdw_open(void) {
  char err[NANO_RPDFILE_ERRLEN];
  if (nano_rpdfile_open_write(g_w.path, g_truncate, g_sync, &g_w.db, err, sizeof err) != 0) {
    rpd_log("%s", err);
    return -1;
  }
  g_truncate = 0; /* later writers (after fork) append */
  /* Debian and others build SQLite with SQLITE_SECURE_DELETE, which zeroes
   * every freed byte and every new b-tree page (a 4 KiB memset per page split,
   * about 250 instructions per row here). The writer only appends, so there is
   * nothing to scrub. synchronous was set from the file's first transaction on
   * (NANO_RPD_SYNC, OFF by default: safe against any death of the process,
   * not against an OS crash); statement journals in memory, not one temporary
   * file per queue insert; SQLite's default page cache (2 MB) rather than the
   * 32 MB nano_rpdfile_open sets for the rpd tools' queries: appends touch
   * only the right edge of each B-tree, and a cache that stays in the core's
   * L2 cut the writer's CPU time by about 8 %. */
  if (rpdw_exec("PRAGMA secure_delete=OFF", "cannot turn off secure_delete") != 0 ||
      rpdw_exec("PRAGMA temp_store=MEMORY; PRAGMA cache_size=-2000",
                "cannot set temp_store and cache_size") != 0)
    return -1;
  /* rows earlier runs kept beside the trace while a reader held it, before
   * this run takes its session */
  nano_rpdfile_fold_say(g_w.db, g_w.path, RPDW_COMMIT_WAIT_MS);
  /* The session, nano_thread and the first strings in one transaction (a
   * commit costs about half a millisecond here, and the writer's start delays
   * every row). */
  if (rpdw_begin() != 0)
    return -1;
  if (nano_rpdfile_begin_session(g_w.db, g_w.path, &g_w.session, err, sizeof err) != 0) {
    rpd_log("%s", err);
    return -1;
  }
  g_w.offset = nano_rpdfile_session_offset(g_w.session);
  if (rpdw_exec(nano_rpdfile_thread_schema_sql(), "cannot create nano_thread") != 0 ||
      rpdw_exec(nano_rpdfile_window_schema_sql(), "cannot create nano_window") != 0)
    return -1;
  for (int i = 0; i < ST_COUNT; i++) {
    if (sqlite3_prepare_v3(g_w.db, rpdw_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &g_w.st[i], NULL) !=
        SQLITE_OK) {
      rpd_log("%s: cannot prepare \"%s\": %s", g_w.path, rpdw_sql[i], sqlite3_errmsg(g_w.db));
      return -1;
    }
  }
  if (sqlite3_create_module_v2(g_w.db, "nano_rpdw_api", &rpdw_vt_api_module,
                               (void *)(intptr_t)RPDW_VT_API, NULL) != SQLITE_OK ||
      sqlite3_create_module_v2(g_w.db, "nano_rpdw_ustring", &rpdw_vt_ustring_module,
                               (void *)(intptr_t)RPDW_VT_USTRING, NULL) != SQLITE_OK ||
      sqlite3_prepare_v3(g_w.db,
                         "INSERT INTO rocpd_api(id, pid, tid, start, end, apiName_id, category_id, "
                         "domain_id, args_id) SELECT * FROM nano_rpdw_api",
                         -1, SQLITE_PREPARE_PERSISTENT, &g_w.api_ins, NULL) != SQLITE_OK ||
      sqlite3_prepare_v3(g_w.db,
                         "INSERT INTO rocpd_api(pid, tid, start, end, apiName_id, category_id, "
                         "domain_id, args_id) SELECT ?1, ?2, start, \"end\", apiName_id, ?3, ?4, "
                         "args_id FROM nano_rpdw_api",
                         -1, SQLITE_PREPARE_PERSISTENT, &g_w.api_ins_uniform, NULL) != SQLITE_OK ||
      sqlite3_prepare_v3(g_w.db,
                         "INSERT INTO rocpd_ustring(id, string) SELECT * FROM nano_rpdw_ustring",
                         -1, SQLITE_PREPARE_PERSISTENT, &g_w.ustr_ins, NULL) != SQLITE_OK ||
      sqlite3_prepare_v3(g_w.db,
                         "SELECT max((SELECT coalesce(max(rowid), 0) FROM rocpd_api), coalesce(("
                         "SELECT seq FROM sqlite_sequence WHERE name = 'rocpd_api'), 0))",
                         -1, SQLITE_PREPARE_PERSISTENT, &g_w.api_last, NULL) != SQLITE_OK) {
    rpd_log("%s: cannot prepare the queue inserts: %s", g_w.path, sqlite3_errmsg(g_w.db));
    return -1;
  }
  g_w.q = malloc(sizeof *g_w.q);
  if (!g_w.q || rpdw_map_init(&g_w.strings, 1) != 0 || rpdw_map_init(&g_w.ips, 0) != 0) {
    rpd_log("out of memory");
    return -1;
  }
  g_w.next_string = g_w.next_ustring = 1;
  g_w.next_op = g_w.next_apiops = g_w.next_monitor = g_w.next_stack = 1;
  g_w.id_empty = rpdw_string_id("");
  g_w.id_uempty = g_w.offset + g_w.next_ustring++;
  g_w.q->ustr[g_w.nustrq].id = g_w.id_uempty;
  g_w.q->ustr[g_w.nustrq++].s = "";
  g_w.id_usermarker = rpdw_string_id("UserMarker");
  return rpdw_commit();
}

static void rpdw_close(void) {
  char err[NANO_RPDFILE_ERRLEN];
  rpdw_capture_end(); /* before its connection closes, as SQLite requires */
  for (int i = 0; i < ST_COUNT; i++)
    sqlite3_finalize(g_w.st[i]);
  sqlite3_finalize(g_w.api_ins);
  sqlite3_finalize(g_w.api_ins_uniform);
  sqlite3_finalize(g_w.ustr_ins);
  sqlite3_finalize(g_w.api_last);
  if (g_w.db && nano_rpdfile_close(g_w.db, g_w.path, err, sizeof err) != 0)
    rpd_log("%s", err);
  rpdw_map_free(&g_w.strings);
  rpdw_map_free(&g_w.ips);
  free(g_w.handle_ids);
  free(g_w.pend);
  free(g_w.q);
  free(g_w.sums);
  free(g_w.sum_index);
  rpdi_stack_reset();
  memset(&g_w, 0, sizeof g_w);
  rpdw_old_join();
}

/* ---- jobs (rpdi_post) ------------------------------------------------------ */

struct rpdw_job {
  const char *schema;
  rpdi_job_fn write;
  void (*dtor)(void *);
  void *data;
  struct rpdw_job *next;
};

static pthread_mutex_t g_jobs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rpdw_job *g_jobs; /* oldest first */
static struct rpdw_job **g_jobs_tail = &g_jobs;

int rpdi_post(const char *schema, rpdi_job_fn write, void (*dtor)(void *), void *data) {
  struct rpdw_job *j = atomic_load(&g_writer_running) ? malloc(sizeof *j) : NULL;
  if (!j) {
    dtor(data);
    return -1;
  }
  *j = (struct rpdw_job){schema, write, dtor, data, NULL};
  pthread_mutex_lock(&g_jobs_lock);
  *g_jobs_tail = j;
  g_jobs_tail = &j->next;
  pthread_mutex_unlock(&g_jobs_lock);
  rpd_wake_writer();
  return 0;
}

/* A rocpd_metadata row to write (rpdi_metadata): tag and value, one block. */
struct rpdw_metadata {
  const char *tag, *value;
};

static int rpdw_metadata_write(sqlite3 *db, int64_t offset, const char *path, void *data) {
  (void)offset;
  const struct rpdw_metadata *m = data;
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db, "INSERT INTO rocpd_metadata(tag, value) VALUES (?1, ?2)", -1, &st,
                              NULL);
  if (rc == SQLITE_OK && (rc = sqlite3_bind_text(st, 1, m->tag, -1, SQLITE_STATIC)) == SQLITE_OK &&
      (rc = sqlite3_bind_text(st, 2, m->value, -1, SQLITE_STATIC)) == SQLITE_OK)
    rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
  sqlite3_finalize(st);
  if (rc != SQLITE_OK)
    rpd_log("%s: cannot record %s in rocpd_metadata: %s", path, m->tag, sqlite3_errmsg(db));
  return rc == SQLITE_OK ? 0 : -1;
}

int rpdi_metadata(const char *tag, const char *value) {
  size_t t = strlen(tag) + 1, v = strlen(value) + 1;
  struct rpdw_metadata *m = malloc(sizeof *m + t + v);
  if (!m)
    return -1;
  char *text = (char *)(m + 1);
  memcpy(text, tag, t);
  memcpy(text + t, value, v);
  *m = (struct rpdw_metadata){text, text + t};
  return rpdi_post(NULL, rpdw_metadata_write, free, m);
}

/* Runs the queued jobs (writer thread, g_wlock held). */
static void rpdw_run_jobs(void) {
  pthread_mutex_lock(&g_jobs_lock);
  struct rpdw_job *j = g_jobs;
  g_jobs = NULL;
  g_jobs_tail = &g_jobs;
  pthread_mutex_unlock(&g_jobs_lock);
  while (j) {
    struct rpdw_job *next = j->next;
    if (rpdw_begin() == 0) {
      int known = 0;
      for (int i = 0; i < g_w.nschemas; i++)
        known |= g_w.schemas[i] == j->schema;
      if (!known && j->schema && rpdw_exec(j->schema, "cannot create nanoprobe's tables") == 0 &&
          g_w.nschemas < RPDW_SCHEMAS)
        g_w.schemas[g_w.nschemas++] = j->schema;
      if (!g_w.failed)
        j->write(g_w.db, g_w.offset, g_w.path, j->data);
    }
    j->dtor(j->data);
    free(j);
    j = next;
  }
}

/* Flush work: drain, close ranges of ended epochs, dropped count, atomics
 * (when `atomics`), jobs, commit. */
static void rpdw_flush(int atomics) {
  rpdw_drain_all();
  rpdw_names();
  uint32_t st = atomic_load(&g_state);
  uint32_t cur = (st & 1) ? st >> 1 : 0;
  for (struct rpd_tbuf *b = atomic_load(&g_bufs); b; b = b->next)
    if (b->nopen) {
      if (rpdw_begin() != 0)
        break;
      rpdw_close_stale(b, cur);
    }
  for (int i = 0; i < g_w.npend; i++) {
    struct rpdw_pending *p = &g_w.pend[i];
    if (p->epoch == cur || rpdw_begin() != 0)
      continue;
    rpdw_api_row(g_w.offset + (int64_t)atomic_fetch_add(&g_api_next, 1), p->pid, p->tid, p->start,
                 rpdw_time(atomic_load(&g_stop_at[p->epoch % RPD_STOP_EPOCHS])), g_w.id_usermarker,
                 g_w.id_empty, p->domain_id, p->args_id);
    g_w.pend[i--] = g_w.pend[--g_w.npend];
  }
  rpdw_write_dropped();
  rpdw_write_windows();
  rpdw_write_sums();
  if (atomics && !g_w.cut_short && !g_w.failed && rpdw_begin() == 0) {
    rpdi_atomics_write(g_w.db, g_w.path, g_w.offset);
    /* stopped, the counts are those of the window's stop (atomics.c, "Windows") */
    rpdi_atomics_sample(g_w.db, g_w.path, g_w.offset, rpdw_window_end(atomic_load(&g_state)));
  }
  rpdw_run_jobs();
  rpdw_commit_at(1);
}

_Atomic uint32_t g_atomics_req;

/* Waits for a wake-up of the writer (its eventfd) or timeout_ms (-1: none);
 * returns poll's result: > 0 woken, 0 timed out. */
static int rpdw_wait(int timeout_ms) {
  struct pollfd pfd = {g_evfd, POLLIN, 0};
  int rc = poll(&pfd, 1, timeout_ms);
  if (rc > 0) {
    uint64_t v;
    ssize_t r = read(g_evfd, &v, sizeof v); /* resets the eventfd; nothing to read on a race */
    (void)r;
  }
  return rc;
}

/* The writer when its file cannot be opened: recording is turned off, what
 * was recorded meanwhile is consumed and counted as lost (producers never
 * wait), flushes are answered as failed, until the writer is told to quit. */
static void rpdw_discard(void) {
  char path[sizeof g_w.path];
  memcpy(path, g_w.path, sizeof path);
  rpdw_close();
  memcpy(g_w.path, path, sizeof path);
  rpdw_set_failed();
  g_w.never_opened = 1;
  rpd_mark_stopped(rpd_stamp());
  for (;;) {
    rpdw_wait(-1);
    pthread_mutex_lock(&g_wlock);
    uint32_t req = atomic_load(&g_flush_req);
    int quit = atomic_load(&g_writer_quit);
    for (struct rpd_tbuf *b = atomic_load(&g_bufs); b; b = b->next) {
      rpdw_drain_thread(b); /* the failed writer consumes and counts */
      if (atomic_load_explicit(&b->state, memory_order_acquire) == 1 && rpdw_thread_drained(b)) {
        b->nopen = 0;
        b->name[0] = 0;
        atomic_store_explicit(&b->state, 2, memory_order_release);
      }
    }
    rpdw_run_jobs();
    atomic_store(&g_flush_done, req);
    rpd_futex(&g_flush_done, FUTEX_WAKE, INT32_MAX, NULL);
    pthread_mutex_unlock(&g_wlock);
    if (quit)
      break;
  }
}

/* A writer period in ms for a rate in Hz (0: none, -1), at least 1 ms. */
static int rpdw_period_ms(double hz) {
  if (hz <= 0)
    return -1;
  int ms = (int)(1000.0 / hz);
  return ms < 1 ? 1 : ms;
}

/* While recording, a sample of the atomics totals every 1/NANO_RPD_ATOMICS_HZ
 * s (the counter tracks of `rpd export`), committed on its own: the records
 * stay in their buffers until a flush, as without sampling. Writer thread,
 * g_wlock held. */
static void rpdw_sample_atomics(int64_t *next) {
  int64_t now = rpd_clock();
  if (g_atomics_hz <= 0 || now < *next || !(atomic_load(&g_state) & 1) || g_w.failed)
    return;
  *next = now + (int64_t)(1e9 / g_atomics_hz);
  if (rpdw_begin() == 0)
    rpdi_atomics_sample(g_w.db, g_w.path, g_w.offset, now);
  rpdw_commit();
}

static void *rpdw_main(void *arg) {
  (void)arg; /* started by nano_thread_start: the application's signals are blocked */
  rpdw_lower_priority(g_writer_nice, "writer");
  pthread_mutex_lock(&g_wlock);
  int opened = rpdw_open();
  pthread_mutex_unlock(&g_wlock);
  if (opened != 0) {
    rpdw_discard();
    return NULL;
  }
  int flush_ms = rpdw_period_ms(g_autoflush_hz), sample_ms = rpdw_period_ms(g_atomics_hz);
  int timeout = flush_ms < 0 || (sample_ms >= 0 && sample_ms < flush_ms) ? sample_ms : flush_ms;
  int64_t next_flush = flush_ms < 0 ? INT64_MAX : rpd_clock() + (int64_t)flush_ms * 1000000;
  int64_t next_sample = 0;
  for (;;) {
    /* a round cut short for a fork goes on at once */
    int woken = g_w.cut_short || rpdw_wait(timeout) > 0;
    pthread_mutex_lock(&g_wlock);
    uint32_t req = atomic_load(&g_flush_req);
    int quit = atomic_load(&g_writer_quit);
    int64_t now = rpd_clock();
    int due = now >= next_flush;
    if (due)
      next_flush = now + (int64_t)flush_ms * 1000000;
    if (req != atomic_load(&g_flush_done) || quit || due) {
      uint32_t areq = atomic_exchange(&g_atomics_req, 0);
      rpdw_flush(areq != 0 || quit);
      if (g_w.cut_short) {
        atomic_fetch_add(&g_atomics_req, areq); /* asked again with the flush */
        quit = 0;                               /* the flush is served next round */
      } else {
        atomic_store(&g_flush_done, req);
        rpd_futex(&g_flush_done, FUTEX_WAKE, INT32_MAX, NULL);
      }
    } else if (woken) {
      rpdw_drain_all();
      rpdw_run_jobs();
      rpdw_commit();
    }
    rpdw_sample_atomics(&next_sample);
    pthread_mutex_unlock(&g_wlock);
    atomic_store(&g_writer_blocked, 0); /* a whole round went through */
    if (quit)
      break;
  }
  return NULL;
}

/* Asks the writer for a flush and waits up to timeout_ms (-1: forever) for its
 * commit. Async-signal-safe. Returns 0 when committed, -1 otherwise (no
 * writer, the wait timed out, or the writer could not write the file). */
int rpd_flush_wait(int timeout_ms) {
  if (!atomic_load(&g_writer_running))
    return -1;
  uint32_t ticket = atomic_fetch_add(&g_flush_req, 1) + 1;
  rpd_wake_writer();
  int64_t deadline = timeout_ms < 0 ? 0 : rpd_clock() + (int64_t)timeout_ms * 1000000;
  for (;;) {
    uint32_t done = atomic_load(&g_flush_done);
    if ((int32_t)(done - ticket) >= 0)
      return atomic_load(&g_writer_failed) ? -1 : 0;
    struct timespec ts = {0, 100000000};
    if (timeout_ms >= 0) {
      int64_t left = deadline - rpd_clock();
      if (left <= 0)
        return -1;
      if (left < 100000000)
        ts.tv_nsec = left;
    }
    rpd_futex(&g_flush_done, FUTEX_WAIT, done, &ts);
    if (!atomic_load(&g_writer_running))
      return -1;
  }
}

/* Starts the writer (file, session, thread). Called with g_ctl held. */
int rpd_writer_start(void) {
  if (atomic_load(&g_writer_running))
    return 0;
  if (g_evfd < 0) {
    g_evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (g_evfd < 0) {
      rpd_log("eventfd: %s", strerror(errno));
      return -1;
    }
  }
  rpdw_set_path(); /* rpd_status names it at once; the writer thread opens it */
  if (g_truncate)
    rpdw_truncate();
  rpdi_spill_configure(g_w.path);
  /* read at each start: `python -m nanoprobe --min-duration` sets it after load */
  uint64_t min_ns = 0;
  nano_env_duration("NANO_RPD_MIN_DURATION", 0, NANO_RPDFILE_MAX_MIN_DURATION_NS, &min_ns);
  g_w.min_ns = (int64_t)min_ns;
#ifdef NANO_RPD_HAVE_TRACKER
  /* the counts go into the trace; the tracker's exit dump only when asked */
  const char *out = getenv("NANO_TRACKER_OUTPUT");
  if (!out || !*out)
    nano_tracker_set_exit_dump(0);
#endif
  atomic_store(&g_writer_quit, 0);
  atomic_store(&g_writer_failed, 0);
  atomic_store(&g_flush_done, atomic_load(&g_flush_req));
  atomic_store(&g_writer_running, 1);
  int rc = nano_thread_start(&g_writer_thread, rpdw_main, NULL);
  if (rc != 0) {
    atomic_store(&g_writer_running, 0);
    rpd_log("cannot start the writer thread: %s", strerror(rc));
    rpdw_close();
    return -1;
  }
  return 0;
}

/* After a failure: says what was lost and tries to record it in the file
 * (space may have come back; the rows already written stay readable
 * either way). */
static void rpdw_report_lost(void) {
  if (g_w.never_opened) {
    rpd_log("%s: the trace could not be opened (said above); %llu records were not written",
            g_w.path, (unsigned long long)g_w.lost_records);
    return;
  }
  char sql[256];
  snprintf(sql, sizeof sql,
           "INSERT INTO rocpd_metadata(tag, value) VALUES ('nano_lost_records', '%llu')",
           (unsigned long long)(g_w.lost_rows + g_w.lost_records));
  int kept = g_w.db && sqlite3_exec(g_w.db, sql, NULL, NULL, NULL) == SQLITE_OK;
  rpd_log("%s: after the write failure, %llu rows were rolled back and %llu later records "
          "were not written (%s)",
          g_w.path, (unsigned long long)g_w.lost_rows, (unsigned long long)g_w.lost_records,
          kept ? "recorded as nano_lost_records in rocpd_metadata"
               : "the file could not record this either");
}

void rpd_writer_stop(void) {
  if (!atomic_load(&g_writer_running))
    return;
  atomic_store(&g_writer_quit, 1);
  rpd_wake_writer();
  pthread_join(g_writer_thread, NULL);
  atomic_store(&g_writer_running, 0);
  uint64_t dropped = 0;
  for (struct rpd_tbuf *b = atomic_load(&g_bufs); b; b = b->next)
    dropped += atomic_load(&b->dropped);
  uint64_t locked = atomic_load(&g_lock_dropped);
  if (dropped)
    rpd_log("%s: %llu records dropped because buffers were full%s", g_w.path,
            (unsigned long long)dropped,
            g_drop   ? " (NANO_RPD_DROP=1)"
            : locked ? " while the writer waited for another process's lock on the file"
                     : "");
  if (g_w.failed && (g_w.lost_rows || g_w.lost_records))
    rpdw_report_lost();
  uint64_t spilled, file;
  rpdi_spill_close(&spilled, &file);
  if (spilled)
    rpd_log("%s: the writer fell behind by more than NANO_RPD_OVERFLOW_MEMORY; up to %llu MiB "
            "of records (%llu MiB compressed) waited in a temporary file in %s",
            g_w.path, (unsigned long long)((spilled + (1u << 20) - 1) >> 20),
            (unsigned long long)((file + (1u << 20) - 1) >> 20), rpdi_spill_dir());
  /* the one line at exit that says where the records went (not under
   * `nanoprobe run`, which prints a summary of its own) */
  if (g_w.db && !g_w.failed && !g_quiet && g_w.sides)
    rpd_log("%s: %llu rows written by pid %d, %llu more in %d side file%s beside it", g_w.path,
            (unsigned long long)g_w.written_rows, (int)getpid(), (unsigned long long)g_w.side_rows,
            g_w.sides, g_w.sides == 1 ? "" : "s");
  else if (g_w.db && !g_w.failed && !g_quiet)
    rpd_log("%s: %llu rows written by pid %d", g_w.path, (unsigned long long)g_w.written_rows,
            (int)getpid());
  rpdw_close();
}

const char *rpdw_path(void) { return g_w.path; }

/* ---- fork ----------------------------------------------------------------- */

void rpdw_atfork(enum rpd_fork_phase phase) {
  switch (phase) {
  case RPD_FORK_PREPARE:
    atomic_store(&g_fork_waiting, 1); /* the writer's round stops short */
    pthread_mutex_lock(&g_wlock);
    atomic_store(&g_fork_waiting, 0);
    pthread_mutex_lock(&g_jobs_lock);
    pthread_mutex_lock(&g_old.lock);
    break;
  case RPD_FORK_PARENT:
    pthread_mutex_unlock(&g_old.lock);
    pthread_mutex_unlock(&g_jobs_lock);
    pthread_mutex_unlock(&g_wlock);
    break;
  case RPD_FORK_CHILD:
    /* the parent's writer and connection are not the child's (the
     * connection is abandoned, never used or closed, as SQLite requires) */
    pthread_mutex_init(&g_wlock, NULL);
    pthread_mutex_init(&g_jobs_lock, NULL);
    pthread_mutex_init(&g_old.lock, NULL);
    if (g_old.fd >= 0)
      close(g_old.fd); /* the parent's copy frees the blocks */
    g_old.fd = -1;
    g_old.started = 0;
    g_jobs = NULL; /* the parent's results, written by the parent */
    g_jobs_tail = &g_jobs;
    atomic_store(&g_writer_running, 0);
    memset(&g_w, 0, sizeof g_w);
    if (g_evfd >= 0)
      close(g_evfd);
    g_evfd = -1;
    break;
  }
}
