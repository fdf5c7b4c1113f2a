/*
 * tracer.h: what the files of the tracer core share (not installed).
 *
 * Design. Producers (any application thread) write fixed-size 64-byte records
 * into a per-thread ring of slots, and the strings they pass into a per-thread
 * string arena (a byte ring), so a caller may free its string as soon as the
 * call returns. Neither needs a lock: the owning thread is the only writer of
 * its head, the writer thread the only writer of its tail. A range push and a
 * pop are two records (PUSH with the start time and text, POP with the end
 * time); the writer thread pairs them on a per-thread stack, which lets it
 * close every range still open at a stop (or a crash) at the stop time.
 *
 * One writer thread per process drains all rings, interns strings
 * (rocpd_string, with a hash map), writes one-off texts to rocpd_ustring and
 * inserts rows with prepared statements in batched transactions. Ids carry the
 * session offset (session << 32) taken from the file (nano/rpdfile.h).
 *
 * Full rings: the producer goes on in a fresh ring linked after the full
 * one (the overflow store, see "segments"; filled rings past a memory bound
 * wait in a temporary file), so it never waits for SQLite; past the store's
 * bounds, or with NANO_RPD_OVERFLOW=0, it wakes the writer and waits. With
 * NANO_RPD_DROP=1 it drops the record and counts it; the count goes to the
 * trace (rocpd_metadata tag 'nano_dropped_records', one row per session) and
 * to stderr at exit.
 *
 * Recording state is one atomic word: (epoch << 1) | on. rpdstart/rpdstop
 * keep a reference count under a mutex; the epoch increases at each start, so
 * the writer knows which open ranges a stop ended.
 *
 * Durability: fatal signals (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) and
 * SIGTERM/SIGINT are caught; the handler only does atomic stores, write() to
 * an eventfd and a bounded futex wait for the writer's commit, then restores
 * the previous disposition and re-raises. The file has a rollback journal
 * (see nano/rpdfile.h), so SIGKILL leaves it consistent.
 *
 * fork: the child starts with no buffers and, when recording, a fresh writer
 * and session (its own pid and tids). exec: a preloaded library initialises
 * again in the new image and appends a session to the same file.
 *
 * The files, one job each:
 *   tracer.h        records and ring layout, settings, shared state
 *   clock.c         the time of ranges and marks (TSC probe and map)
 *   intern.c        interned strings (rpd_intern)
 *   producer.c      the producer hot path, the overflow store's rings,
 *                   the recording API (rpd.h) and thread names
 *   writer.c        the writer thread: rings drained, files, jobs, flush
 *   writer_rows.c   records into rows: strings, API rows, ranges
 *   writer.h        the writer's state, shared by the three files below
 *   writer_queue.c  the queues of api and ustring rows (virtual tables)
 *   calls.c         short calls summed (NANO_RPD_MIN_DURATION)
 *   rpd.c           settings, control, signals, exit, fork, load
 */
#ifndef NANO_RPD_TRACER_H
#define NANO_RPD_TRACER_H

#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "rpd.h"
#include "rpd_internal.h"

#pragma GCC visibility push(hidden)

/* ---- records ------------------------------------------------------------- */

/* A record is one ring slot, struct nano_rpd_rec of rpd.h (NANO_ZONE's
 * inline path writes PUSH and POP records itself); a record of two slots
 * carries its extension (union rpd_ext) in the second. The fields by type,
 * where s[] are string refs (0 none, RPD_REF_INTERNED | handle, else arena
 * position + 1): */
enum rpd_rec_type {
  R_PAD = 0,                  /* filler before a 2-slot record at the end of the ring          */
  R_PUSH = NANO_RPD_REC_PUSH, /* t0, s[0..2] domain/name/args, s[3] stack        */
  R_POP = NANO_RPD_REC_POP,   /* t0                                              */
  R_MARK,                     /* t0, s[0..2], s[3] stack                                        */
  R_API,                      /* t0, t1, h handle, s[0..3] domain/category/apiName/args; ext.api */
  R_KERNEL,                   /* h api, s[0] stream, s[1] kernelName; ext.kernel                */
  R_COPY,                     /* h api, s[0] stream, s[1] dst, s[2] src; ext.copy               */
  R_OP,                       /* h api, t0, t1, s[0] description, s[1] opType, s[2] gpu|queue  */
  R_MONITOR,                  /* t0, t1, s[0] deviceType, s[1] monitorType, s[2] value, s[3] id */
  R_RSTART,                   /* h range id, t0, s[0] domain, s[1] text                         */
  R_RSTOP,                    /* h range id, t0                                                 */
  R_EXIT,                     /* t0: the thread exits; its open ranges end here                 */
  R_RANGE = NANO_RPD_REC_RANGE, /* a PUSH its pop folded into: t1 its end (rpd.h's inline path) */
  R_EXT,                        /* the second slot of a 2-slot record (struct rpd_ext_slot)     */
};
_Static_assert(R_RANGE > R_EXIT, "a RANGE record has a type of its own");

_Static_assert(sizeof(struct nano_rpd_rec) == 64, "a record is one cache line");

/* The second slot of an R_API record with stack frames, R_KERNEL, R_COPY. */
union rpd_ext {
  struct {
    uint64_t stack; /* stack ref: (arena pos + 1) << RPD_STACK_COUNT_BITS | frames */
  } api;
  struct { /* struct rpd_kernel_launch's numbers */
    int32_t grid[3], workgroup[3];
    int32_t group_segment_size, private_segment_size;
  } kernel;
  struct { /* struct rpd_copy's numbers */
    int64_t size, width, height;
    int32_t kind, dst_device, src_device, sync, pinned;
  } copy;
};
/* The second slot of a 2-slot record: R_EXT first, so that a check of a
 * ring's last slot (rpd.h's fold of a pop into the last push) never takes
 * it for a record, then the extension. */
struct rpd_ext_slot {
  uint8_t type; /* R_EXT */
  uint8_t unused[7];
  union rpd_ext x;
};
_Static_assert(sizeof(struct rpd_ext_slot) <= sizeof(struct nano_rpd_rec),
               "an extension is one slot");

/* The extension of 2-slot record r, its slot marked (writing it). */
static inline union rpd_ext *rpd_ext_put(struct nano_rpd_rec *r) {
  struct rpd_ext_slot *e = (struct rpd_ext_slot *)(r + 1);
  e->type = R_EXT;
  return &e->x;
}
/* The extension of 2-slot record r (reading it). */
static inline const union rpd_ext *rpd_ext_get(const struct nano_rpd_rec *r) {
  return &((const struct rpd_ext_slot *)(r + 1))->x;
}

#define RPD_REF_INTERNED NANO_RPD_REF_INTERNED

/* One thread's buffers. head/ahead are written by the owner only, tail/atail
 * by the writer only. */
struct rpd_tbuf {
  /* first, for NANO_ZONE's inline path (rpd.h): head, the next slot the
   * producer writes (published with a release store), tail_seen, its last
   * view of tail, and the slots, nslots of them (a power of two) */
  struct nano_rpd_ring ring;
  uint32_t asize;         /* arena bytes, a power of two                      */
  _Atomic uint64_t ahead; /* next arena byte (relaxed: read by a failed writer) */
  uint64_t atail_seen;
  int wake_sent; /* producer asked the writer to drain               */
  /* a record of more than one slot, or a pad, was made since the ring was
   * handed to its producer (rpd_ring_records then walks it) */
  uint32_t mixed;
  /* the producer's fields above share one cache line; the writer's begin here */
  _Alignas(64) _Atomic uint64_t tail;
  _Atomic uint64_t atail;
  int32_t pid, tid; /* the owner's, set when it takes the buffer        */
  _Atomic uint64_t dropped;
  _Atomic int state;     /* 0 live, 1 owner exited, 2 free for reuse         */
  char exit_name[16];    /* the owner's name at exit (set before state 1)    */
  struct rpd_tbuf *next; /* global list, push-only                           */
  char *arena;
  /* writer-only: open ranges of this thread */
  struct rpd_open *open;
  int nopen, capopen;
  char name[16]; /* writer-only: the owner's name as last written */
  /* Segments (the overflow store, see "segments" below). Every ring belongs
   * to a thread's primary buffer, `owner`, the one on g_bufs that holds the
   * thread's state above; a ring the producer filled is followed by the one
   * it moved on to. */
  struct rpd_tbuf *owner;              /* the primary (itself for a primary) */
  _Atomic(struct rpd_tbuf *) seg_next; /* set after the ring's last record   */
  _Atomic int seg_state;               /* enum rpd_seg_state                 */
  struct rpdi_spill_region spill;      /* SEG_SPILLED: where, in the spill file */
  uint64_t spill_records;              /* SEG_SPILLED: its records not drained  */
  /* primary only */
  struct rpd_tbuf *pseg;            /* the producer's ring (tls.ring)     */
  struct rpd_tbuf *wseg;            /* the writer's ring: oldest not drained */
  _Atomic(struct rpd_tbuf *) spare; /* a drained ring for the producer's next */
  struct rpdi_spill_z *spill_z;     /* the producer's compressor of spilled rings */
};

/* A segment's arrays: in memory (the writer may be draining it: SEG_READ),
 * being written to the spill file by the producer that filled it, or there
 * (arrays freed until the writer reads them back). */
enum rpd_seg_state { SEG_MEM, SEG_READ, SEG_SPILLING, SEG_SPILLED };

/* NANO_ZONE's inline path (rpd.h) reads tls.ring as the ring. */
_Static_assert(offsetof(struct rpd_tbuf, ring) == 0, "a thread's ring is its buffer");
_Static_assert(offsetof(struct rpd_tbuf, tail) == 64, "the producer's fields fit one cache line");

/* A range the writer has seen pushed and not yet popped. */
struct rpd_open {
  int64_t start;
  uint32_t epoch;
  int64_t api_id;
  int64_t domain_id, name_id, args_id; /* args_id 0: resolved at the row */
  int64_t child_ns;                    /* time in ranges nested in it, ended */
  /* with NANO_RPD_MIN_DURATION: the args as a rocpd_string id (the key short
   * calls are summed under) and how to make its rocpd_ustring row if the
   * range is long enough for one: an interned ref, else a kept text */
  int64_t args_key;
  uint64_t args_ref;
  const char *args_text;
};

/* ---- configuration and global state --------------------------------------- */

/* Settings' defaults and ranges (docs/ENVIRONMENT.md). A value outside its
 * range is refused with one line naming the variable; the default stays. */
#define RPD_DEFAULT_SLOTS (1u << 14) /* records per thread buffer            */
#define RPD_MIN_SLOTS 64u            /* below this, a buffer fills per call  */
#define RPD_PAGE_BYTES 4096          /* the smallest page: touched to fault it */
#define RPD_MAX_SLOTS (1u << 24)     /* 16 Mi records: a GiB-scale buffer    */
#define RPD_DEFAULT_STACK_DEPTH 32   /* frames per stack (RPDT_STACKFRAMES)  */
#define RPD_STACK_COUNT_BITS 8       /* a stack ref: (arena pos + 1) << 8 | depth */
#define RPD_MAX_STACK_DEPTH ((1 << RPD_STACK_COUNT_BITS) - 1)
#define RPD_DEFAULT_CRASH_WAIT_MS 5000            /* a crash handler's wait for the writer */
#define RPD_MAX_CRASH_WAIT_MS 600000              /* ten minutes: bounded, never forever  */
#define RPD_MAX_AUTOFLUSH_HZ 1000.0               /* the writer's poll has 1 ms steps     */
#define RPD_DEFAULT_ATOMICS_HZ 10.0               /* atomics samples: a 100 ms counter track */
#define RPD_DEFAULT_OVERFLOW_MEMORY (16ull << 20) /* filled rings kept in memory */
/* The writer thread's nice value above the program's: where the program's
 * threads and the writer compete for cores, the program goes first (a
 * 2-core VM with one busy process beside a profiled Python program: fib's
 * perturbation 1.90 -> 1.31 of cProfile's at 10, its time to file 1.75 ->
 * 1.90; the records wait in the overflow store). 19 is Linux's lowest. */
#define RPD_DEFAULT_WRITER_NICE 10
#define RPD_MAX_WRITER_NICE 19

/* ---- settings (rpd.c reads them at load) ---------------------------------- */

extern char g_template[4096];
extern int g_truncate;
extern double g_autoflush_hz;
extern double g_atomics_hz;
extern int g_stack_depth;
extern int g_drop;
extern int g_overflow;
extern uint64_t g_ovf_memory_max;
extern int g_quiet;
extern enum nano_rpdfile_sync g_sync;
extern int g_writer_nice;
extern uint32_t g_cfg_slots;

/* ---- shared state ------------------------------------------------------------ */

/* Set when the writer has waited NANO_RPDFILE_BUSY_SAY_MS for a lock another
 * process holds on the file (nano_rpdfile's busy hook; shorter waits, such as
 * other appenders' commits, keep producers waiting as before), cleared after
 * each round the writer completes: while set, a producer whose buffer is full
 * drops the record (g_lock_dropped) rather than waiting for the writer. */
extern _Atomic int g_writer_blocked;
extern _Atomic uint64_t g_lock_dropped;

/* The recording state: epoch << 1 | on. */
extern _Atomic uint32_t g_state;
/* Stop stamps of the last RPD_STOP_EPOCHS epochs, by epoch modulo their number
 * (rpd_stamp units): a record of an epoch that ended has its range closed at
 * its epoch's stop. The writer trails the producers by far fewer epochs. */
#define RPD_STOP_EPOCHS 256u
extern _Atomic int64_t g_stop_at[RPD_STOP_EPOCHS];
/* Start stamps of the same epochs (the recording windows, nano_window). */
extern _Atomic int64_t g_start_at[RPD_STOP_EPOCHS];
/* Marks the current epoch stopped at stamp t (rpd_stamp(); async-signal-safe). */
void rpd_mark_stopped(int64_t t);
/* Held by rpdstart/rpdstop, the writer's start and stop, and fork. */
extern pthread_mutex_t g_ctl;

/* Every thread's primary buffer (push-only list). */
extern _Atomic(struct rpd_tbuf *) g_bufs;
extern _Atomic uint64_t g_api_next; /* api handles, process-wide */

/* A thread's state, one initial-exec TLS block (struct nano_rpd_thread,
 * exported for NANO_ZONE's inline path): its ring (a struct rpd_tbuf), its
 * range depth, and bit d of `unrecorded` set while the range open at depth
 * d < 64 was not recorded (recording off, or dropped), so its pop is not
 * either; the pop clears it. */
#define tls nano_rpd_thread_v2
static inline struct rpd_tbuf *rpd_tls_buf(void) { return (struct rpd_tbuf *)tls.ring; }
static inline void rpd_tls_set_buf(struct rpd_tbuf *b) { tls.ring = (struct nano_rpd_ring *)b; }
/* Its destructor (rpd_tls_destructor) ends the thread's ranges at its exit. */
extern pthread_key_t g_tls_key;

/* Flush protocol: a requester increments g_flush_req, writes the eventfd and
 * waits until g_flush_done reaches its ticket (a futex word). */
extern _Atomic uint32_t g_flush_req;
extern _Atomic uint32_t g_flush_done;
extern int g_evfd;
extern _Atomic int g_writer_running;
extern _Atomic int g_writer_quit;
/* Set on a death path (rpd_last_flush): the flush it asks for is the last,
 * so a commit another process's read lock holds goes to a side file. */
extern _Atomic int g_writer_final;
/* Records the writer has taken from the rings and not committed: those of
 * its open transaction, and the starts of the ranges it holds open (their
 * rows are written at their ends). A death before the next commit loses
 * them: rpd_records_pending counts them. */
extern _Atomic uint64_t g_txn_records;
/* Odd while the writer moves records from a ring into g_txn_records (or
 * resets it), even otherwise: a count that saw it even and unchanged saw no
 * record in both places (rpd_records_pending). */
extern _Atomic uint64_t g_txn_seq;
/* The writer could not write the file (disk full, I/O error): flushes and
 * the final stop report it; what it consumes afterwards is counted as lost. */
extern _Atomic int g_writer_failed;
extern pthread_t g_writer_thread;
/* Held by the writer while it works in SQLite; fork() takes it so that the
 * child never inherits SQLite's internal mutexes in a locked state. */
extern pthread_mutex_t g_wlock;

/* One line on stderr, "nanoprobe rpd: " and the message. */
void rpd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Array a of n elements of `size` bytes, *cap allocated: returns it with
 * room for one more (doubling its allocation, from 64), or NULL when out of
 * memory (a unchanged). */
void *rpd_grow(void *a, int n, int *cap, size_t size);

/* ---- the clock (clock.c) ---------------------------------------------------- */

/* CLOCK_MONOTONIC ns; inlined in the library (rpd_now goes through the PLT). */
static inline int64_t rpd_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * Producers stamp with raw TSC ticks (one rdtsc, the cheapest precise clock)
 * where the TSC is invariant and is the kernel's clocksource, so that
 * CLOCK_MONOTONIC itself is derived from it; elsewhere, or with
 * NANO_RPD_CLOCK=monotonic, with CLOCK_MONOTONIC ns.
 *
 * The writer converts ticks to CLOCK_MONOTONIC ns with a piecewise-linear map
 * (rpd_tsc_map). The first segment is fitted between a sample taken at load
 * and one taken at the first conversion (at least 1 ms later). At re-fit
 * intervals that double up to a second the writer takes a fresh (ticks, ns)
 * sample and starts a segment there: it begins where the previous one ends
 * (continuous, so times stay monotonic) and its slope is the measured rate
 * plus the remaining offset spread over the next interval, so the
 * trace follows CLOCK_MONOTONIC (and GPU times in that domain) through NTP
 * slewing instead of drifting by the calibration error. Only the writer adds
 * segments, at "now", after every stamp it has converted: no converted stamp
 * lies beyond a segment added later, so a stamp converts the same way forever. */
extern int g_tsc;

#if defined(__x86_64__)
static inline int64_t rpd_ticks(void) { return (int64_t)__rdtsc(); }
#else
static inline int64_t rpd_ticks(void) { return rpd_clock(); }
#endif

static inline int64_t rpd_stamp(void) { return g_tsc ? rpd_ticks() : rpd_clock(); }

struct rpd_tsc_seg {
  int64_t ticks, ns; /* start of the segment */
  double slope;      /* ns per tick */
};

/* Writer-side state of the map; the load sample is taken by rpd_tsc_init. */
struct rpd_tsc_map {
  int64_t sample_ticks, sample_ns; /* the last sample */
  int64_t refit_ns, refit_ticks;   /* the re-fit interval, in ns and ticks */
  struct rpd_tsc_seg *segs;
  int n, cap;
  int failed; /* out of memory: the last segment goes on */
};
extern struct rpd_tsc_map g_tsc_map;

static inline int64_t rpd_tsc_at(const struct rpd_tsc_seg *s, int64_t t) {
  return s->ns + (int64_t)((double)(t - s->ticks) * s->slope);
}

/* rpdw_time past its common case. */
int64_t rpdw_time_slow(int64_t t);
/* Writer side: the CLOCK_MONOTONIC time of a range/mark stamp. The common
 * case, a stamp on the newest segment before the next re-fit, is inline. */
static inline int64_t rpdw_time(int64_t t) {
  if (!g_tsc)
    return t;
  const struct rpd_tsc_map *m = &g_tsc_map;
  if (__builtin_expect(m->n && t - m->sample_ticks < m->refit_ticks && t >= m->segs[m->n - 1].ticks,
                       1))
    return rpd_tsc_at(&m->segs[m->n - 1], t);
  return rpdw_time_slow(t);
}

static inline long rpd_futex(_Atomic uint32_t *addr, int op, uint32_t val,
                             const struct timespec *ts) {
  return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

/* Wakes the writer (async-signal-safe). */
static inline void rpd_wake_writer(void) {
  if (g_evfd >= 0) {
    uint64_t one = 1;
    ssize_t r = write(g_evfd, &one, sizeof one);
    (void)r; /* EAGAIN: the counter is already non-zero, the writer will wake */
  }
}

/* NANO_RPD_CLOCK: picks the clock and takes the TSC map's first sample. */
void rpd_tsc_init(void);

/* ---- what the files offer each other ---------------------------------------- */

/* fork's three moments; each part takes its locks before fork (rpd.c's
 * rpd_atfork_prepare gives the order) and resets its state in the child. */
enum rpd_fork_phase { RPD_FORK_PREPARE, RPD_FORK_PARENT, RPD_FORK_CHILD };

/* intern.c */
/* The string of interned handle h (NULL for 0 or a handle not yet published). */
const char *rpd_intern_get(uint32_t h);
void rpd_intern_atfork(enum rpd_fork_phase phase);

/* producer.c */
/* The bytes of ring b's arrays (slots and arena). */
size_t rpd_seg_bytes(const struct rpd_tbuf *b);
/* Maps ring b's arrays, the slots' pages in place. Returns 0, or -1 (out of
 * memory). */
int rpd_seg_arrays(struct rpd_tbuf *b);
/* Arrays for spilled ring s to be read back into: a drained ring's kept for
 * it (rpd_seg_release), else fresh ones (rpd_seg_arrays). 0, or -1. */
int rpd_seg_readback_arrays(struct rpd_tbuf *s);
/* A drained ring nobody uses any more: into the pool of rings for any
 * thread's next (within RPD_POOL_MAX and NANO_RPD_OVERFLOW_MEMORY), else
 * kept for the next read-back (one ring), else freed. */
void rpd_seg_release(struct rpd_tbuf *b);
/* pthread key destructor: the exiting thread's open ranges end (R_EXIT) and
 * its buffer goes back to the writer. */
void rpd_tls_destructor(void *p);
/* Whether the program named thread tid (rpd_name_thread). */
int rpd_thread_named(int32_t tid);
/* put(pid, tid, name) for each name the program gave that put has not taken
 * yet (it takes one by returning 0). */
void rpd_given_names(int (*put)(int32_t pid, int32_t tid, const char *name), int32_t pid);
void rpd_producer_atfork(enum rpd_fork_phase phase);
/* For a death path only: the records not in the trace now, in every
 * thread's rings (the writer's and those filled after it, in memory or
 * spilled) and in the writer's hands (g_txn_records): what a death before
 * the writer's next commit loses. No ring is freed while it counts
 * (rpd_seg_free_begin); no ring is counted when a free in progress does not
 * end. Exact when no batch moved while it counted (g_txn_seq), else a lower
 * bound, said by *exact. Async-signal-safe; one death path at a time. */
uint64_t rpd_records_pending(int *exact);

/* writer.c */
/* Starts the writer (file, session, thread). Called with g_ctl held. 0 or -1. */
int rpd_writer_start(void);
/* Stops the writer after a final flush (atomics included) and closes the
 * file. Called with g_ctl held. */
void rpd_writer_stop(void);
/* Asks the writer for a flush and waits up to timeout_ms (-1: forever) for
 * its commit. Async-signal-safe. Returns 0 when committed, -1 otherwise (no
 * writer, the wait timed out, or the writer could not write the file). */
int rpd_flush_wait(int timeout_ms);
/* Flush tickets that want the atomics' counts too (rpdflush). */
extern _Atomic uint32_t g_atomics_req;
/* The file the writer writes (rpd_status; g_ctl held). */
const char *rpdw_path(void);
void rpdw_atfork(enum rpd_fork_phase phase);
#pragma GCC visibility pop

#endif /* NANO_RPD_TRACER_H */
