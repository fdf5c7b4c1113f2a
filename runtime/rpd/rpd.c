/*
 * rpd.c: the nanoprobe tracer core (libnano_rpd.so).
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
 * the previous disposition and re-raises. The file uses WAL journaling (see
 * nano/rpdfile.h), so SIGKILL leaves it consistent.
 *
 * fork: the child starts with no buffers and, when recording, a fresh writer
 * and session (its own pid and tids). exec: a preloaded library initialises
 * again in the new image and appends a session to the same file.
 */
#define _GNU_SOURCE
#include "rpd.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "nano/rpdfile.h"
#include "nano/hash.h"
#include "nano/settings.h"
#include "nano/thread.h"
#ifdef NANO_RPD_HAVE_TRACKER
#include "nano/atomics.h"
#endif
#include "rpd_internal.h"
#include "../dispatch/dispatch.h"

/* ---- records ------------------------------------------------------------- */

/* A record is one ring slot, struct nano_rpd_rec of rpd.h (NANO_ZONE's
 * inline path writes PUSH and POP records itself); a record of two slots
 * carries its extension (union rpd_ext) in the second. The fields by type,
 * where s[] are string refs (0 none, RPD_REF_INTERNED | handle, else arena
 * position + 1): */
enum rpd_rec_type {
  R_PAD = 0,   /* filler before a 2-slot record at the end of the ring          */
  R_PUSH = NANO_RPD_REC_PUSH, /* t0, s[0..2] domain/name/args, s[3] stack        */
  R_POP = NANO_RPD_REC_POP,   /* t0                                              */
  R_MARK,      /* t0, s[0..2], s[3] stack                                        */
  R_API,       /* t0, t1, h handle, s[0..3] domain/category/apiName/args; ext.api */
  R_KERNEL,    /* h api, s[0] stream, s[1] kernelName; ext.kernel                */
  R_COPY,      /* h api, s[0] stream, s[1] dst, s[2] src; ext.copy               */
  R_OP,        /* h api, t0, t1, s[0] description, s[1] opType, s[2] gpu|queue  */
  R_MONITOR,   /* t0, t1, s[0] deviceType, s[1] monitorType, s[2] value, s[3] id */
  R_RSTART,    /* h range id, t0, s[0] domain, s[1] text                         */
  R_RSTOP,     /* h range id, t0                                                 */
  R_EXIT,      /* t0: the thread exits; its open ranges end here                 */
};

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
_Static_assert(sizeof(union rpd_ext) <= sizeof(struct nano_rpd_rec), "an extension is one slot");

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
  int wake_sent;          /* producer asked the writer to drain               */
  /* the producer's fields above share one cache line; the writer's begin here */
  _Alignas(64) _Atomic uint64_t tail;
  _Atomic uint64_t atail;
  int32_t pid, tid;       /* the owner's, set when it takes the buffer        */
  _Atomic uint64_t dropped;
  _Atomic int state;      /* 0 live, 1 owner exited, 2 free for reuse         */
  char exit_name[16];     /* the owner's name at exit (set before state 1)    */
  struct rpd_tbuf *next;  /* global list, push-only                           */
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
  int64_t spill_off;                   /* SEG_SPILLED: where, in the spill file */
  /* primary only */
  struct rpd_tbuf *pseg;               /* the producer's ring (tls.ring)     */
  struct rpd_tbuf *wseg;               /* the writer's ring: oldest not drained */
  _Atomic(struct rpd_tbuf *) spare;    /* a drained ring for the producer's next */
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
#define RPD_DEFAULT_SLOTS (1u << 14)   /* records per thread buffer            */
#define RPD_MIN_SLOTS 64u              /* below this, a buffer fills per call  */
#define RPD_PAGE_BYTES 4096            /* the smallest page: touched to fault it */
#define RPD_MAX_SLOTS (1u << 24)       /* 16 Mi records: a GiB-scale buffer    */
#define RPD_DEFAULT_STACK_DEPTH 32     /* frames per stack (RPDT_STACKFRAMES)  */
#define RPD_STACK_COUNT_BITS 8         /* a stack ref: (arena pos + 1) << 8 | depth */
#define RPD_MAX_STACK_DEPTH ((1 << RPD_STACK_COUNT_BITS) - 1)
#define RPD_DEFAULT_CRASH_WAIT_MS 5000 /* a crash handler's wait for the writer */
#define RPD_MAX_CRASH_WAIT_MS 600000   /* ten minutes: bounded, never forever  */
#define RPD_MAX_AUTOFLUSH_HZ 1000.0    /* the writer's poll has 1 ms steps     */
#define RPD_DEFAULT_ATOMICS_HZ 10.0    /* atomics samples: a 100 ms counter track */
#define RPD_DEFAULT_OVERFLOW_MEMORY (256ull << 20) /* filled rings kept in memory */

static char g_template[4096] = "./trace.rpd"; /* RPDT_FILENAME, %p = pid    */
static int g_truncate;                         /* rpd_set_filename(.., 0)    */
static double g_autoflush_hz;                  /* RPDT_AUTOFLUSH             */
static double g_atomics_hz = RPD_DEFAULT_ATOMICS_HZ; /* NANO_RPD_ATOMICS_HZ    */
static int g_stack_depth;                      /* RPDT_STACKFRAMES/NANO_RPD_STACKDEPTH */
static int g_drop;                             /* NANO_RPD_DROP              */
static int g_overflow = 1;                     /* NANO_RPD_OVERFLOW          */
static uint64_t g_ovf_memory_max = RPD_DEFAULT_OVERFLOW_MEMORY; /* NANO_RPD_OVERFLOW_MEMORY */
static int g_quiet;                            /* NANO_RPD_QUIET             */
static const char *g_sync_mode = "OFF";        /* NANO_RPD_SYNC              */
static uint32_t g_cfg_slots = RPD_DEFAULT_SLOTS; /* NANO_RPD_BUFFER          */
static int g_crash_wait_ms = RPD_DEFAULT_CRASH_WAIT_MS; /* NANO_RPD_CRASH_WAIT_MS */

/* A boolean setting: `dflt` when unset, off when malformed (nano/settings.h). */
static int rpd_env_bool(const char *name, int dflt) {
  int v = dflt;
  nano_env_bool(name, &v);
  return v;
}

/* An integer setting in [lo, hi]: `dflt` when unset or outside. */
static uint64_t rpd_env_uint(const char *name, uint64_t lo, uint64_t hi, uint64_t dflt) {
  uint64_t v = dflt;
  nano_env_uint(name, lo, hi, &v);
  return v;
}

/* Set when the writer has waited NANO_RPDFILE_BUSY_SAY_MS for a lock another
 * process holds on the file (nano_rpdfile's busy hook; shorter waits, such as
 * other appenders' commits, keep producers waiting as before), cleared after
 * each round the writer completes: while set, a producer whose buffer is full drops the record
 * (g_lock_dropped) rather than waiting for the writer. */
static _Atomic int g_writer_blocked;
static _Atomic uint64_t g_lock_dropped;
static void rpd_writer_waits(void) { atomic_store(&g_writer_blocked, 1); }

static _Atomic uint32_t g_state;               /* epoch << 1 | on            */
/* g_state while NANO_ZONE's inline path may record (TSC stamps, no stack
 * frames: g_fast), else 0 */
RPDI_EXPORT uint32_t nano_rpd_fast_v1;
static int g_fast;

/* Sets the recording state (async-signal-safe). */
static void rpd_set_state(uint32_t st) {
  __atomic_store_n(&nano_rpd_fast_v1, g_fast ? st : 0, __ATOMIC_SEQ_CST);
  atomic_store(&g_state, st);
}
/* Stop stamps of the last RPD_STOP_EPOCHS epochs, by epoch modulo their number
 * (rpd_stamp units): a record of an epoch that ended has its range closed at
 * its epoch's stop. The writer trails the producers by far fewer epochs. */
#define RPD_STOP_EPOCHS 256u
static _Atomic int64_t g_stop_at[RPD_STOP_EPOCHS];

/* Marks the current epoch stopped at stamp t (rpd_stamp(); async-signal-safe). */
static void rpd_mark_stopped(int64_t t) {
  uint32_t st = atomic_load(&g_state);
  if (!(st & 1)) return;
  atomic_store(&g_stop_at[(st >> 1) % RPD_STOP_EPOCHS], t);
  rpd_set_state(st & ~1u);
}
static pthread_mutex_t g_ctl = PTHREAD_MUTEX_INITIALIZER;
static int g_refs;                             /* start/stop reference count */
static uint32_t g_epoch;

static _Atomic(struct rpd_tbuf *) g_bufs;
static _Atomic uint64_t g_api_next = 1;        /* api handles, process-wide  */
static _Atomic uint64_t g_range_next = 1;      /* rpdi_range_start ids       */

/* A thread's state, one initial-exec TLS block (struct nano_rpd_thread,
 * exported for NANO_ZONE's inline path): its ring (a struct rpd_tbuf), its
 * range depth, and bit d of `unrecorded` set while the range open at depth
 * d < 64 was not recorded (recording off, or dropped), so its pop is not
 * either; the pop clears it. */
RPDI_EXPORT __thread struct nano_rpd_thread nano_rpd_thread_v1
    __attribute__((tls_model("initial-exec")));
#define tls nano_rpd_thread_v1
static inline struct rpd_tbuf *rpd_tls_buf(void) { return (struct rpd_tbuf *)tls.ring; }
static inline void rpd_tls_set_buf(struct rpd_tbuf *b) { tls.ring = (struct nano_rpd_ring *)b; }
static pthread_key_t g_tls_key;

/* Flush protocol: a requester increments g_flush_req, writes the eventfd and
 * waits until g_flush_done reaches its ticket (a futex word). */
static _Atomic uint32_t g_flush_req;
static _Atomic uint32_t g_flush_done;
static int g_evfd = -1;
static _Atomic int g_writer_running;
static _Atomic int g_writer_quit;
/* The writer could not write the file (disk full, I/O error): flushes and
 * the final stop report it; what it consumes afterwards is counted as lost. */
static _Atomic int g_writer_failed;
static pthread_t g_writer_thread;
/* Held by the writer while it works in SQLite; fork() takes it so that the
 * child never inherits SQLite's internal mutexes in a locked state. */
static pthread_mutex_t g_wlock = PTHREAD_MUTEX_INITIALIZER;

static void rpd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void rpd_log(const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= sizeof buf) n = sizeof buf - 1;
  fprintf(stderr, "nanoprobe rpd: %.*s\n", n, buf);
}

/* Array a of n elements of `size` bytes, *cap allocated: returns it with
 * room for one more (doubling its allocation, from 64), or NULL when out of
 * memory (a unchanged). */
static void *rpd_grow(void *a, int n, int *cap, size_t size) {
  if (n < *cap) return a;
  int c = *cap ? *cap * 2 : 64;
  void *p = realloc(a, (size_t)c * size);
  if (p) *cap = c;
  return p;
}

/* CLOCK_MONOTONIC ns; inlined in the library (rpd_now goes through the PLT). */
static inline int64_t rpd_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

RPDI_EXPORT int64_t rpd_now(void) { return rpd_clock(); }

/* ---- the time of ranges and marks ------------------------------------------
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
static int g_tsc;

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
static inline int64_t rpd_ticks(void) { return (int64_t)__rdtsc(); }
#else
static inline int64_t rpd_ticks(void) { return rpd_clock(); }
#endif

static inline int64_t rpd_stamp(void) { return g_tsc ? rpd_ticks() : rpd_clock(); }

/* A (ticks, ns) pair read as close together as possible: the tightest of 32
 * bracketed reads (a preemption inside one bracket would skew it). */
static void rpd_tsc_sample(int64_t *ticks, int64_t *ns) {
  int64_t best = INT64_MAX;
  for (int i = 0; i < 32; i++) {
    int64_t a = rpd_ticks();
    int64_t n = rpd_clock();
    int64_t b = rpd_ticks();
    if (b - a < best) {
      best = b - a;
      *ticks = a + (b - a) / 2;
      *ns = n;
    }
  }
}

struct rpd_tsc_seg {
  int64_t ticks, ns; /* start of the segment */
  double slope;      /* ns per tick */
};

/* Writer-side state of the map; the load sample is taken by rpd_tsc_init. */
static struct rpd_tsc_map {
  int64_t sample_ticks, sample_ns; /* the last sample */
  int64_t refit_ns, refit_ticks;   /* the re-fit interval, in ns and ticks */
  struct rpd_tsc_seg *segs;
  int n, cap;
  int failed; /* out of memory: the last segment goes on */
} g_tsc_map;

/* The first fit spans at least RPD_TSC_FIRST_NS (a short program's writer
 * waits for no more); the re-fit interval then doubles up to a second, so
 * each segment's slope comes from an interval at least half its own length
 * and its error stays within a few sample jitters (~0.1 us). */
enum { RPD_TSC_FIRST_NS = 1000000, RPD_TSC_REFIT_MAX_NS = 1000000000 };
/* The most a new segment's slope may differ from the measured rate (1000
 * ppm), so one bad sample after a long stall cannot bend the map. */
#define RPD_TSC_MAX_SKEW 1e-3

/* Why the TSC cannot serve as the clock here, or NULL when it can. */
static const char *rpd_tsc_unusable(void) {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000007, &a, &b, &c, &d) || !(d & (1u << 8)))
    return "the CPU has no invariant TSC";
  char src[64] = "";
  FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (f) {
    if (!fgets(src, sizeof src, f)) src[0] = 0;
    fclose(f);
  }
  if (strcmp(src, "tsc\n") != 0) return "the kernel's clocksource is not tsc";
  return NULL;
#else
  return "the TSC clock needs x86-64";
#endif
}

/* NANO_RPD_CLOCK: unset, malformed or "auto" (TSC where usable), "tsc" (the
 * same, with a warning where unusable), "monotonic". */
static void rpd_tsc_init(void) {
  static const char *const clocks[] = {"auto", "tsc", "monotonic", NULL};
  int clock = 0;
  nano_env_choice("NANO_RPD_CLOCK", clocks, &clock);
  if (clock == 2) return;
  int asked = clock == 1;
  const char *why = rpd_tsc_unusable();
  if (why) {
    if (asked) rpd_log("NANO_RPD_CLOCK=tsc: %s; using monotonic", why);
    return;
  }
  g_tsc_map.segs = rpd_grow(NULL, 0, &g_tsc_map.cap, sizeof *g_tsc_map.segs);
  if (!g_tsc_map.segs) {
    rpd_log("out of memory for the TSC map; using monotonic");
    return;
  }
  g_tsc = 1;
  rpd_tsc_sample(&g_tsc_map.sample_ticks, &g_tsc_map.sample_ns);
}

/* Appends segment s; out of memory, the map keeps its last segment. */
static void rpd_tsc_add(struct rpd_tsc_seg s) {
  struct rpd_tsc_map *m = &g_tsc_map;
  struct rpd_tsc_seg *segs = rpd_grow(m->segs, m->n, &m->cap, sizeof *segs);
  if (!segs) {
    if (!m->failed) rpd_log("out of memory for the TSC map; its last segment goes on");
    m->failed = 1;
    return;
  }
  m->segs = segs;
  m->segs[m->n++] = s;
}

/* A re-fit interval, at most RPD_TSC_REFIT_MAX_NS. */
static int64_t rpd_tsc_refit(int64_t ns) {
  return ns < RPD_TSC_REFIT_MAX_NS ? ns : RPD_TSC_REFIT_MAX_NS;
}

static int64_t rpd_tsc_at(const struct rpd_tsc_seg *s, int64_t t) {
  return s->ns + (int64_t)((double)(t - s->ticks) * s->slope);
}

/* Extends the map with a segment from a fresh sample: the first once
 * RPD_TSC_FIRST_NS have passed since load (waiting for them), then at each
 * re-fit interval (of stamps: the writer checks each stamp against the last
 * sample, with no clock read). */
static void rpd_tsc_extend(void) {
  struct rpd_tsc_map *m = &g_tsc_map;
  int64_t ticks, ns;
  double slope;
  if (m->n == 0) {
    int64_t wait = m->sample_ns + RPD_TSC_FIRST_NS - rpd_clock();
    if (wait > 0) {
      struct timespec ts = {wait / 1000000000, wait % 1000000000};
      nanosleep(&ts, NULL);
    }
    rpd_tsc_sample(&ticks, &ns);
    slope = ticks > m->sample_ticks ? (double)(ns - m->sample_ns) / (double)(ticks - m->sample_ticks)
                                    : 1.0;
    rpd_tsc_add((struct rpd_tsc_seg){m->sample_ticks, m->sample_ns, slope}); /* room from init */
    m->refit_ns = rpd_tsc_refit(2 * (ns - m->sample_ns));
  } else {
    if (m->failed) return;
    rpd_tsc_sample(&ticks, &ns);
    if (ticks <= m->sample_ticks || ns <= m->sample_ns) return;
    double rate = (double)(ns - m->sample_ns) / (double)(ticks - m->sample_ticks);
    /* No stamp past `edge` has been converted yet (it would have called this
     * first). When this sample lies well past it (the writer converted
     * nothing for a while), a segment from the edge straight to this sample
     * keeps the stamps in between from being extrapolated over that time. */
    int64_t edge = m->sample_ticks + m->refit_ticks;
    if (ticks - edge >= m->refit_ticks) {
      int64_t edge_ns = rpd_tsc_at(&m->segs[m->n - 1], edge);
      double bridge = ns > edge_ns ? (double)(ns - edge_ns) / (double)(ticks - edge) : rate;
      if (bridge > rate * (1 + RPD_TSC_MAX_SKEW)) bridge = rate * (1 + RPD_TSC_MAX_SKEW);
      if (bridge < rate * (1 - RPD_TSC_MAX_SKEW)) bridge = rate * (1 - RPD_TSC_MAX_SKEW);
      rpd_tsc_add((struct rpd_tsc_seg){edge, edge_ns, bridge});
    }
    const struct rpd_tsc_seg *last = &m->segs[m->n - 1];
    m->refit_ns = rpd_tsc_refit(2 * m->refit_ns);
    /* the offset left at this sample, closed over the next interval; at most
     * 1000 ppm of correction, so the slope stays sane after a long stall */
    double fix = (double)(ns - rpd_tsc_at(last, ticks)) / (double)m->refit_ns;
    if (fix > RPD_TSC_MAX_SKEW) fix = RPD_TSC_MAX_SKEW;
    if (fix < -RPD_TSC_MAX_SKEW) fix = -RPD_TSC_MAX_SKEW;
    slope = rate * (1 + fix);
    rpd_tsc_add((struct rpd_tsc_seg){ticks, rpd_tsc_at(last, ticks), slope});
  }
  m->refit_ticks = (int64_t)((double)m->refit_ns / slope);
  m->sample_ticks = ticks;
  m->sample_ns = ns;
}

/* rpdw_time past its common case. */
static __attribute__((noinline)) int64_t rpdw_time_slow(int64_t t) {
  struct rpd_tsc_map *m = &g_tsc_map;
  if (m->n == 0 || t - m->sample_ticks >= m->refit_ticks) rpd_tsc_extend();
  int i = m->n - 1;
  if (i > 0 && t < m->segs[i].ticks && t >= m->segs[i - 1].ticks) {
    i--; /* the backlog a re-fit leaves behind: the segment before the newest */
  } else if (t < m->segs[i].ticks) { /* an older stamp */
    int lo = 0, hi = i;
    while (lo < hi) {
      int mid = (lo + hi + 1) / 2;
      if (m->segs[mid].ticks <= t)
        lo = mid;
      else
        hi = mid - 1;
    }
    i = lo;
  }
  return rpd_tsc_at(&m->segs[i], t);
}

/* Writer side: the CLOCK_MONOTONIC time of a range/mark stamp. The common
 * case, a stamp on the newest segment before the next re-fit, is inline. */
static inline int64_t rpdw_time(int64_t t) {
  if (!g_tsc) return t;
  const struct rpd_tsc_map *m = &g_tsc_map;
  if (__builtin_expect(m->n && t - m->sample_ticks < m->refit_ticks && t >= m->segs[m->n - 1].ticks, 1))
    return rpd_tsc_at(&m->segs[m->n - 1], t);
  return rpdw_time_slow(t);
}

static long rpd_futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts) {
  return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

/* Wakes the writer (async-signal-safe). */
static void rpd_wake_writer(void) {
  if (g_evfd >= 0) {
    uint64_t one = 1;
    ssize_t r = write(g_evfd, &one, sizeof one);
    (void)r; /* EAGAIN: the counter is already non-zero, the writer will wake */
  }
}

/* ---- interned strings (rpd_intern) ---------------------------------------- */

#define INTERN_CHUNK 4096u
#define INTERN_CHUNKS 4096u
static _Atomic(const char **) g_intern_chunks[INTERN_CHUNKS];
static uint32_t g_intern_count;
static _Atomic uint32_t g_intern_count_pub; /* g_intern_count, readable without the lock */
static pthread_mutex_t g_intern_lock = PTHREAD_MUTEX_INITIALIZER;
/* open-addressing map string -> handle, guarded by g_intern_lock */
static uint32_t *g_intern_map;
static uint32_t g_intern_map_size;


static const char *rpd_intern_get(uint32_t h) {
  if (h == 0) return NULL;
  const char **chunk = atomic_load_explicit(&g_intern_chunks[(h - 1) / INTERN_CHUNK], memory_order_acquire);
  return chunk ? chunk[(h - 1) % INTERN_CHUNK] : NULL;
}

const char *rpdi_intern_str(uint32_t handle) {
  return handle <= g_intern_count_pub ? rpd_intern_get(handle) : NULL;
}

static int rpd_intern_grow_map(void) {
  uint32_t nsize = g_intern_map_size ? g_intern_map_size * 2 : 1024;
  uint32_t *nmap = calloc(nsize, sizeof *nmap);
  if (!nmap) return -1;
  for (uint32_t i = 0; i < g_intern_map_size; i++) {
    uint32_t h = g_intern_map[i];
    if (!h) continue;
    uint64_t k = nano_fnv64_str(rpd_intern_get(h)) & (nsize - 1);
    while (nmap[k]) k = (k + 1) & (nsize - 1);
    nmap[k] = h;
  }
  free(g_intern_map);
  g_intern_map = nmap;
  g_intern_map_size = nsize;
  return 0;
}

RPDI_EXPORT uint32_t rpd_intern(const char *s) {
  if (!s || !*s) return 0;
  pthread_mutex_lock(&g_intern_lock);
  uint32_t result = 0;
  if ((g_intern_count + 1) * 2 > g_intern_map_size && rpd_intern_grow_map() != 0) goto out;
  uint64_t k = nano_fnv64_str(s) & (g_intern_map_size - 1);
  while (g_intern_map[k]) {
    if (strcmp(rpd_intern_get(g_intern_map[k]), s) == 0) {
      result = g_intern_map[k];
      goto out;
    }
    k = (k + 1) & (g_intern_map_size - 1);
  }
  if (g_intern_count >= INTERN_CHUNK * INTERN_CHUNKS) goto out;
  uint32_t idx = g_intern_count;
  const char **chunk = atomic_load_explicit(&g_intern_chunks[idx / INTERN_CHUNK], memory_order_relaxed);
  if (!chunk) {
    chunk = calloc(INTERN_CHUNK, sizeof *chunk);
    if (!chunk) goto out;
    atomic_store_explicit(&g_intern_chunks[idx / INTERN_CHUNK], chunk, memory_order_release);
  }
  char *copy = strdup(s);
  if (!copy) goto out;
  chunk[idx % INTERN_CHUNK] = copy;
  /* publish the string before the handle can be used by another thread */
  atomic_thread_fence(memory_order_release);
  g_intern_count++;
  atomic_store_explicit(&g_intern_count_pub, g_intern_count, memory_order_release);
  result = idx + 1;
  g_intern_map[k] = result;
out:
  pthread_mutex_unlock(&g_intern_lock);
  if (!result) rpd_log("rpd_intern: out of memory; the string is recorded as empty");
  return result;
}

/* ---- producer side -------------------------------------------------------- */

struct rpd_strs;
static struct nano_rpd_rec *rpd_reserve(struct rpd_tbuf **bp, uint32_t nslots, struct rpd_strs *strs,
                                   uint64_t *refs, uint64_t *blobref);
static inline void rpd_publish(struct rpd_tbuf *b, uint32_t nslots);
static inline uint32_t rpd_on(void);

/* ---- segments: the overflow store ------------------------------------------
 * A producer whose ring is full does not wait for the writer: it links a
 * fresh ring (a segment) after the full one and goes on in that. The writer
 * drains a thread's segments in order (all of a filled ring before the next)
 * and hands a drained one back as the thread's spare (one per thread; others
 * are freed). The file written is the same; the program under measurement no
 * longer waits while SQLite writes. Filled rings past NANO_RPD_OVERFLOW_MEMORY
 * bytes (beyond one ring per thread) go to the spill file (spill.c) and come
 * back when the writer gets to them. Past both bounds, or with
 * NANO_RPD_OVERFLOW=0, a producer waits as before (drops, while the writer
 * waits for another process's lock; NANO_RPD_DROP=1 drops at once).
 *
 * Hand-overs: the producer stores seg_next (release) after the last record
 * of the ring it leaves. A ring's arrays move SEG_MEM -> SEG_SPILLING ->
 * SEG_SPILLED by the producer that filled it, and SEG_MEM <-> SEG_READ by
 * the writer, each step a compare-and-swap from SEG_MEM: a ring the writer
 * is draining is never spilled, one being spilled is waited for.
 */
static _Atomic int64_t g_ring_bytes; /* arrays of all rings in memory          */
static _Atomic int64_t g_base_bytes; /* one ring per thread: not overflow      */
/* Drained rings kept for any thread's next (their pages are in place, which
 * costs more than the records on some machines, see rpd_seg_arrays), up to
 * RPD_POOL_MAX and within NANO_RPD_OVERFLOW_MEMORY, as whose part they count. */
#define RPD_POOL_MAX 64
static pthread_mutex_t g_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rpd_tbuf *g_pool[RPD_POOL_MAX];
static int g_npool;

static size_t rpd_seg_bytes(const struct rpd_tbuf *b) {
  return (size_t)b->ring.nslots * sizeof(struct nano_rpd_rec) + b->asize;
}

/* Allocates ring b's arrays (one mapping: slots, then the arena), with the
 * slots' pages in place: a producer that moves to a fresh ring would
 * otherwise take a page fault every 64 records, which on some virtual
 * machines costs more than the records (12 us a fault where populating costs
 * 3 us a page). The arena's pages come when texts use them (interned names,
 * the common case of NANO_ZONE and Python, use none). Returns 0, or -1 (out
 * of memory). */
static int rpd_seg_arrays(struct rpd_tbuf *b) {
  size_t bytes = rpd_seg_bytes(b), slots = (size_t)b->ring.nslots * sizeof(struct nano_rpd_rec);
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return -1;
  if (madvise(p, slots, MADV_POPULATE_WRITE) != 0) { /* before Linux 5.14: fault them now */
    for (size_t off = 0; off < slots; off += RPD_PAGE_BYTES) ((volatile char *)p)[off] = 0;
  }
  b->ring.slots = p;
  b->arena = (char *)p + (size_t)b->ring.nslots * sizeof(struct nano_rpd_rec);
  atomic_fetch_add(&g_ring_bytes, (int64_t)bytes);
  return 0;
}

static void rpd_seg_free_arrays(struct rpd_tbuf *b) {
  if (!b->ring.slots) return;
  size_t bytes = rpd_seg_bytes(b);
  atomic_fetch_sub(&g_ring_bytes, (int64_t)bytes);
  if (munmap(b->ring.slots, bytes) != 0) rpd_log("munmap of a ring: %s", strerror(errno));
  b->ring.slots = NULL;
  b->arena = NULL;
}

/* A new ring of the configured size for thread `owner`, or (NULL) a new
 * thread's primary buffer. NULL when out of memory. */
static struct rpd_tbuf *rpd_seg_new(struct rpd_tbuf *owner) {
  struct rpd_tbuf *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  b->ring.nslots = owner ? owner->ring.nslots : g_cfg_slots;
  b->asize = b->ring.nslots * 16;
  if (rpd_seg_arrays(b) != 0) {
    free(b);
    return NULL;
  }
  b->owner = owner ? owner : b;
  b->pseg = b->wseg = b;
  return b;
}

/* Writes the filled ring b to the spill file and frees its arrays, unless
 * the writer is draining it. Returns 0 when spilled. */
static int rpd_seg_spill(struct rpd_tbuf *b) {
  int expect = SEG_MEM;
  if (!atomic_compare_exchange_strong(&b->seg_state, &expect, SEG_SPILLING)) return -1;
  struct iovec v[2] = {{b->ring.slots, (size_t)b->ring.nslots * sizeof(struct nano_rpd_rec)},
                       {b->arena, b->asize}};
  int64_t off = rpdi_spill_write(v, 2, rpd_seg_bytes(b));
  if (off < 0) {
    atomic_store(&b->seg_state, SEG_MEM);
    return -1;
  }
  b->spill_off = off;
  rpd_seg_free_arrays(b);
  atomic_store_explicit(&b->seg_state, SEG_SPILLED, memory_order_release);
  return 0;
}

/* The calling thread's ring b is full: links a fresh ring after it and makes
 * that the thread's. Returns it, or NULL when overflow is off or neither
 * memory nor the spill file has room (the caller waits or drops). */
static struct rpd_tbuf *rpd_seg_next(struct rpd_tbuf *b) {
  if (!g_overflow) return NULL;
  struct rpd_tbuf *t = b->owner;
  struct rpd_tbuf *n = atomic_exchange(&t->spare, NULL);
  if (!n) {
    pthread_mutex_lock(&g_pool_lock);
    if (g_npool && g_pool[g_npool - 1]->ring.nslots == b->ring.nslots) n = g_pool[--g_npool];
    pthread_mutex_unlock(&g_pool_lock);
    if (n) n->owner = t;
  }
  if (!n) {
    int64_t over = atomic_load(&g_ring_bytes) - atomic_load(&g_base_bytes);
    if (over + (int64_t)rpd_seg_bytes(b) > (int64_t)g_ovf_memory_max && rpd_seg_spill(b) != 0)
      return NULL;
    n = rpd_seg_new(t);
    if (!n) return NULL;
  }
  n->ring.tail_seen = atomic_load(&n->tail);
  n->atail_seen = atomic_load(&n->atail);
  n->wake_sent = 0;
  atomic_store(&n->seg_next, NULL);
  atomic_store_explicit(&b->seg_next, n, memory_order_release);
  t->pseg = n;
  rpd_tls_set_buf(n);
  rpd_wake_writer();
  return n;
}

/* Thread exit: ranges the thread left open end now (an R_EXIT record), then
 * the buffer is handed to the writer for draining and reuse. */
static void rpd_tls_destructor(void *p) {
  struct rpd_tbuf *t = p;
  if (!t) return;
  if (prctl(PR_GET_NAME, t->exit_name) != 0) t->exit_name[0] = 0;
  uint32_t epoch = rpd_on();
  if (epoch && tls.depth > 0) {
    struct rpd_tbuf *b = t->pseg;
    struct nano_rpd_rec *r = rpd_reserve(&b, 1, NULL, NULL, NULL);
    if (r) {
      r->type = R_EXIT;
      r->nslots = 1;
      r->epoch = epoch;
      r->t0 = rpd_stamp();
      rpd_publish(b, 1);
    }
  }
  rpd_tls_set_buf(NULL); /* a record made later in this thread's exit gets a new buffer */
  atomic_store_explicit(&t->state, 1, memory_order_release);
}

/* Returns the calling thread's buffer, creating (or reusing) one. NULL when
 * out of memory. */
static struct rpd_tbuf *rpd_tbuf_slow(void) {
  struct rpd_tbuf *b;
  pid_t pid = getpid(), tid = (pid_t)syscall(SYS_gettid);
  for (b = atomic_load(&g_bufs); b; b = b->next) {
    int expect = 2;
    if (b->ring.nslots == g_cfg_slots && atomic_compare_exchange_strong(&b->state, &expect, 0)) break;
  }
  if (!b) {
    b = rpd_seg_new(NULL);
    if (!b) return NULL;
    atomic_fetch_add(&g_base_bytes, (int64_t)rpd_seg_bytes(b));
    struct rpd_tbuf *head = atomic_load(&g_bufs);
    do b->next = head;
    while (!atomic_compare_exchange_weak(&g_bufs, &head, b));
  }
  b->pid = pid;
  b->tid = tid;
  struct rpd_tbuf *ring = b->pseg;
  ring->ring.tail_seen = atomic_load(&ring->tail);
  ring->atail_seen = atomic_load(&ring->atail);
  ring->wake_sent = 0;
  rpd_tls_set_buf(ring);
  pthread_setspecific(g_tls_key, b);
  return ring;
}

static inline struct rpd_tbuf *rpd_tbuf(void) {
  struct rpd_tbuf *b = rpd_tls_buf();
  return b ? b : rpd_tbuf_slow();
}

/* Strings a record carries into the arena. */
struct rpd_strs {
  const char *p[4];
  uint32_t len[4];
  int n;
  const void *blob; /* stack ips */
  uint32_t bloblen;
};

/* Places len bytes at arena position *pos (skipping to the ring start when
 * they would straddle the end); returns the position used. */
static inline uint64_t rpd_arena_place(uint64_t *pos, uint32_t len, uint32_t asize) {
  uint64_t p = *pos;
  uint32_t off = (uint32_t)(p & (asize - 1));
  if (off + len > asize) p += asize - off;
  *pos = p + len;
  return p;
}

/* Reserves nslots contiguous slots and arena room for `strs` in the calling
 * thread's ring *bp (which a full ring replaces, see "segments"), copies the
 * strings and fills refs[] (and *blobref). Returns the first slot, or NULL
 * when the record was dropped (counted). */
static struct nano_rpd_rec *rpd_reserve(struct rpd_tbuf **bp, uint32_t nslots, struct rpd_strs *strs,
                                   uint64_t *refs, uint64_t *blobref) {
  struct rpd_tbuf *b = *bp;
  uint64_t head, apos, aend;
  uint32_t pad;
  for (int spins = 0;; spins++) {
    head = __atomic_load_n(&b->ring.head, __ATOMIC_RELAXED);
    pad = 0;
    if (nslots > 1 && ((head + nslots - 1) & (b->ring.nslots - 1)) < (head & (b->ring.nslots - 1)))
      pad = b->ring.nslots - (uint32_t)(head & (b->ring.nslots - 1));
    apos = aend = atomic_load_explicit(&b->ahead, memory_order_relaxed);
    if (strs) {
      uint32_t cap = b->asize / 8;
      for (int i = 0; i < strs->n; i++) {
        if (!strs->p[i]) continue;
        if (strs->len[i] + 1 > cap) strs->len[i] = cap - 1;
        rpd_arena_place(&aend, strs->len[i] + 1, b->asize);
      }
      if (strs->bloblen) {
        aend = (aend + 7) & ~7ull;
        rpd_arena_place(&aend, strs->bloblen, b->asize);
      }
    }
    if (head + pad + nslots - b->ring.tail_seen <= b->ring.nslots && aend - b->atail_seen <= b->asize) break;
    b->ring.tail_seen = atomic_load_explicit(&b->tail, memory_order_acquire);
    b->atail_seen = atomic_load_explicit(&b->atail, memory_order_acquire);
    if (head + pad + nslots - b->ring.tail_seen <= b->ring.nslots && aend - b->atail_seen <= b->asize) break;
    if (g_drop || !atomic_load_explicit(&g_writer_running, memory_order_acquire)) {
      atomic_fetch_add_explicit(&b->owner->dropped, 1, memory_order_relaxed);
      return NULL;
    }
    struct rpd_tbuf *n = rpd_seg_next(b);
    if (n) {
      *bp = b = n;
      continue;
    }
    if (atomic_load_explicit(&g_writer_blocked, memory_order_relaxed)) {
      /* the writer waits for another process's lock on the file and the
       * overflow store is full: the program does not wait with it (counted,
       * said at exit) */
      atomic_fetch_add_explicit(&b->owner->dropped, 1, memory_order_relaxed);
      atomic_fetch_add_explicit(&g_lock_dropped, 1, memory_order_relaxed);
      return NULL;
    }
    if (spins == 0) rpd_wake_writer();
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
  }
  if (pad) {
    struct nano_rpd_rec *p = &b->ring.slots[head & (b->ring.nslots - 1)];
    p->type = R_PAD;
    p->nslots = (uint8_t)(pad > 255 ? 255 : pad);
    /* a pad longer than 255 slots cannot happen: nslots <= 2 */
    head += pad;
    __atomic_store_n(&b->ring.head, head, __ATOMIC_RELEASE);
  }
  if (strs) {
    uint64_t pos = apos;
    for (int i = 0; i < strs->n; i++) {
      if (!strs->p[i]) {
        refs[i] = 0;
        continue;
      }
      uint64_t at = rpd_arena_place(&pos, strs->len[i] + 1, b->asize);
      char *dst = b->arena + (at & (b->asize - 1));
      memcpy(dst, strs->p[i], strs->len[i]);
      dst[strs->len[i]] = 0;
      refs[i] = at + 1;
    }
    if (strs->bloblen) {
      pos = (pos + 7) & ~7ull;
      uint64_t at = rpd_arena_place(&pos, strs->bloblen, b->asize);
      memcpy(b->arena + (at & (b->asize - 1)), strs->blob, strs->bloblen);
      *blobref = ((at + 1) << RPD_STACK_COUNT_BITS) | (strs->bloblen / 8);
    }
    atomic_store_explicit(&b->ahead, aend, memory_order_relaxed);
  }
  return &b->ring.slots[head & (b->ring.nslots - 1)];
}

static __attribute__((noinline)) void rpd_publish_check(struct rpd_tbuf *b, uint64_t head) {
  b->ring.tail_seen = atomic_load_explicit(&b->tail, memory_order_acquire);
  if (head - b->ring.tail_seen > b->ring.nslots / 2) {
    if (!b->wake_sent) {
      b->wake_sent = 1;
      rpd_wake_writer();
    }
  } else {
    b->wake_sent = 0;
  }
}

/* Publishes a record of nslots reserved by rpd_reserve; wakes the writer
 * when the ring is more than half full. */
static inline void rpd_publish(struct rpd_tbuf *b, uint32_t nslots) {
  uint64_t head = __atomic_load_n(&b->ring.head, __ATOMIC_RELAXED) + nslots;
  __atomic_store_n(&b->ring.head, head, __ATOMIC_RELEASE);
  if (__builtin_expect(head - b->ring.tail_seen > b->ring.nslots / 2, 0)) rpd_publish_check(b, head);
}

/* Recording state: returns the epoch when on, 0 when off. */
static inline uint32_t rpd_on(void) {
  uint32_t st = atomic_load_explicit(&g_state, memory_order_relaxed);
  return (st & 1) ? (st >> 1) : 0;
}

static inline void rpd_strs_add(struct rpd_strs *s, const char *p) {
  s->p[s->n] = p;
  s->len[s->n] = p ? (uint32_t)strlen(p) : 0;
  s->n++;
}

/* Captures the stack into s when stack frames are on. */
static void rpd_strs_stack(struct rpd_strs *s, uint64_t *ips) {
  if (g_stack_depth <= 0) return;
  int n = rpdi_stack_capture(ips, g_stack_depth);
  if (n > 0) {
    s->blob = ips;
    s->bloblen = (uint32_t)n * 8;
  }
}

/* User range text: see rpd.h (args NULL or "": apiName UserMarker, text=name). */
static int rpd_push_refs(uint32_t epoch, const char *domain, const char *name, const char *args,
                         const uint64_t *pre) {
  struct rpd_tbuf *b = rpd_tbuf();
  if (!b) return -1;
  struct rpd_strs s = {0};
  uint64_t refs[4] = {0}, stack = 0, ips[RPD_MAX_STACK_DEPTH];
  if (!pre) {
    rpd_strs_add(&s, domain);
    rpd_strs_add(&s, name);
    rpd_strs_add(&s, args);
  }
  rpd_strs_stack(&s, ips);
  struct nano_rpd_rec *r = rpd_reserve(&b, 1, (s.n || s.bloblen) ? &s : NULL, refs, &stack);
  if (!r) return -1;
  r->type = R_PUSH;
  r->nslots = 1;
  r->epoch = epoch;
  r->t0 = rpd_stamp();
  if (pre) {
    r->s[0] = pre[0];
    r->s[1] = pre[1];
    r->s[2] = pre[2];
  } else {
    r->s[0] = refs[0];
    r->s[1] = refs[1];
    r->s[2] = refs[2];
  }
  r->s[3] = stack;
  rpd_publish(b, 1);
  return 0;
}

/* Enters a range at the current depth, recorded or not (its pop matches). */
static inline void rpd_depth_push(int recorded) {
  uint32_t d = tls.depth++;
  if (!recorded && d < 64) tls.unrecorded |= 1ull << d;
}

int rpdi_push(const char *domain, const char *name, const char *args) {
  uint32_t depth = tls.depth;
  uint32_t epoch = rpd_on();
  int ok = epoch && rpd_push_refs(epoch, domain, name, args, NULL) == 0;
  rpd_depth_push(ok);
  return (int)depth;
}

RPDI_EXPORT void rpd_rangePush(const char *domain, const char *name, const char *args) {
  rpdi_push(domain, name, args);
}

static inline uint64_t rpd_ref_interned(uint32_t handle) {
  return handle ? RPD_REF_INTERNED | handle : 0;
}

static __attribute__((noinline)) void rpd_push_interned_slow(uint32_t epoch, uint32_t domain,
                                                              uint32_t name, uint32_t args) {
  int ok = 0;
  if (epoch) {
    uint64_t pre[3] = {rpd_ref_interned(domain), rpd_ref_interned(name), rpd_ref_interned(args)};
    ok = rpd_push_refs(epoch, NULL, NULL, NULL, pre) == 0;
  }
  rpd_depth_push(ok);
}

/* The hot path of NANO_ZONE and the Python profiler: one record, no strings,
 * no stack; everything else (no buffer yet, a full ring, stack frames on)
 * takes rpd_push_refs. */
RPDI_EXPORT void rpd_rangePushInterned(uint32_t domain, uint32_t name, uint32_t args) {
  uint32_t epoch = rpd_on();
  struct rpd_tbuf *b = rpd_tls_buf();
  if (__builtin_expect(epoch && b && g_stack_depth <= 0, 1)) {
    uint64_t head = __atomic_load_n(&b->ring.head, __ATOMIC_RELAXED);
    if (__builtin_expect(head + 1 - b->ring.tail_seen <= b->ring.nslots, 1)) {
      struct nano_rpd_rec *r = &b->ring.slots[head & (b->ring.nslots - 1)];
      r->type = R_PUSH;
      r->nslots = 1;
      r->epoch = epoch;
      r->t0 = rpd_stamp();
      r->s[0] = rpd_ref_interned(domain);
      r->s[1] = rpd_ref_interned(name);
      r->s[2] = rpd_ref_interned(args);
      r->s[3] = 0;
      rpd_publish(b, 1);
      tls.depth++;
      return;
    }
  }
  rpd_push_interned_slow(epoch, domain, name, args);
}

static inline void rpd_put_pop(struct rpd_tbuf *b, struct nano_rpd_rec *r, uint32_t epoch) {
  r->type = R_POP;
  r->nslots = 1;
  r->epoch = epoch;
  r->t0 = rpd_stamp();
  rpd_publish(b, 1);
}

/* rpdi_pop past the depth bookkeeping, when the ring seemed full or the
 * thread has no buffer yet: records the pop of depth d. */
static __attribute__((noinline)) int rpd_pop_slow(uint32_t d, uint32_t epoch) {
  struct rpd_tbuf *b = rpd_tbuf();
  struct nano_rpd_rec *r = b ? rpd_reserve(&b, 1, NULL, NULL, NULL) : NULL;
  if (r) rpd_put_pop(b, r, epoch);
  return (int)d;
}

int rpdi_pop(void) {
  if (tls.depth == 0) return -1;
  uint32_t d = --tls.depth;
  if (d < 64 && (tls.unrecorded >> d) & 1) {
    tls.unrecorded &= ~(1ull << d);
    return (int)d;
  }
  uint32_t epoch = rpd_on();
  if (!epoch) return (int)d;
  struct rpd_tbuf *b = rpd_tls_buf();
  if (__builtin_expect(!b, 0)) return rpd_pop_slow(d, epoch);
  uint64_t head = __atomic_load_n(&b->ring.head, __ATOMIC_RELAXED);
  if (__builtin_expect(head + 1 - b->ring.tail_seen > b->ring.nslots, 0)) return rpd_pop_slow(d, epoch);
  rpd_put_pop(b, &b->ring.slots[head & (b->ring.nslots - 1)], epoch);
  return (int)d;
}

RPDI_EXPORT void rpd_rangePop(void) { rpdi_pop(); }

RPDI_EXPORT void rpd_mark(const char *domain, const char *name, const char *args) {
  uint32_t epoch = rpd_on();
  if (!epoch) return;
  struct rpd_tbuf *b = rpd_tbuf();
  if (!b) return;
  struct rpd_strs s = {0};
  uint64_t refs[4] = {0}, stack = 0, ips[RPD_MAX_STACK_DEPTH];
  rpd_strs_add(&s, domain);
  rpd_strs_add(&s, name);
  rpd_strs_add(&s, args);
  rpd_strs_stack(&s, ips);
  struct nano_rpd_rec *r = rpd_reserve(&b, 1, &s, refs, &stack);
  if (!r) return;
  r->type = R_MARK;
  r->nslots = 1;
  r->epoch = epoch;
  r->t0 = rpd_stamp();
  r->s[0] = refs[0];
  r->s[1] = refs[1];
  r->s[2] = refs[2];
  r->s[3] = stack;
  rpd_publish(b, 1);
}

uint64_t rpdi_range_start(const char *domain, const char *text) {
  uint64_t id = atomic_fetch_add(&g_range_next, 1);
  uint32_t epoch = rpd_on();
  if (!epoch) return id;
  struct rpd_tbuf *b = rpd_tbuf();
  if (!b) return id;
  struct rpd_strs s = {0};
  uint64_t refs[4] = {0};
  rpd_strs_add(&s, domain);
  rpd_strs_add(&s, text);
  struct nano_rpd_rec *r = rpd_reserve(&b, 1, &s, refs, NULL);
  if (!r) return id;
  r->type = R_RSTART;
  r->nslots = 1;
  r->epoch = epoch;
  r->h = id;
  r->t0 = rpd_stamp();
  r->s[0] = refs[0];
  r->s[1] = refs[1];
  rpd_publish(b, 1);
  return id;
}

void rpdi_range_stop(uint64_t id) {
  uint32_t epoch = rpd_on();
  if (!epoch) return;
  struct rpd_tbuf *b = rpd_tbuf();
  if (!b) return;
  struct nano_rpd_rec *r = rpd_reserve(&b, 1, NULL, NULL, NULL);
  if (!r) return;
  r->type = R_RSTOP;
  r->nslots = 1;
  r->epoch = epoch;
  r->h = id;
  r->t0 = rpd_stamp();
  rpd_publish(b, 1);
}

RPDI_EXPORT uint64_t rpd_record_api(const char *domain, const char *category, const char *apiName,
                                    const char *args, int64_t start, int64_t end) {
  uint32_t epoch = rpd_on();
  if (!epoch) return 0;
  struct rpd_tbuf *b = rpd_tbuf();
  if (!b) return 0;
  struct rpd_strs s = {0};
  uint64_t refs[4] = {0}, stack = 0, ips[RPD_MAX_STACK_DEPTH];
  rpd_strs_add(&s, domain);
  rpd_strs_add(&s, category);
  rpd_strs_add(&s, apiName);
  rpd_strs_add(&s, args);
  rpd_strs_stack(&s, ips);
  uint32_t n = s.bloblen ? 2 : 1;
  struct nano_rpd_rec *r = rpd_reserve(&b, n, &s, refs, &stack);
  if (!r) return 0;
  uint64_t h = atomic_fetch_add_explicit(&g_api_next, 1, memory_order_relaxed);
  r->type = R_API;
  r->nslots = (uint8_t)n;
  r->epoch = epoch;
  r->t0 = start;
  r->t1 = end;
  r->h = h;
  memcpy(r->s, refs, sizeof r->s);
  if (n == 2) {
    union rpd_ext *x = (union rpd_ext *)(r + 1);
    memset(x, 0, sizeof *x);
    x->api.stack = stack;
  }
  rpd_publish(b, n);
  return h;
}

/* Opens a record of the recording API on the calling thread's buffer: type,
 * nslots slots, handle h, and the n (at most 4) strings strs[] copied into the
 * arena and referenced from s[0..n). Returns the record for the caller to fill
 * and publish with rpd_publish(*bp, nslots), or NULL when recording is off or
 * the record was dropped (counted). */
static struct nano_rpd_rec *rpd_record_open(uint8_t type, uint32_t nslots, uint64_t h,
                                       const char *const *strs, int n, struct rpd_tbuf **bp) {
  assert(n <= 4);
  uint32_t epoch = rpd_on();
  if (!epoch) return NULL;
  struct rpd_tbuf *b = rpd_tbuf();
  if (!b) return NULL;
  struct rpd_strs s = {0};
  uint64_t refs[4] = {0};
  for (int i = 0; i < n; i++) rpd_strs_add(&s, strs[i]);
  struct nano_rpd_rec *r = rpd_reserve(&b, nslots, &s, refs, NULL);
  if (!r) return NULL;
  r->type = type;
  r->nslots = (uint8_t)nslots;
  r->epoch = epoch;
  r->h = h;
  for (int i = 0; i < n; i++) r->s[i] = refs[i];
  *bp = b;
  return r;
}

RPDI_EXPORT void rpd_record_kernelapi(uint64_t api, const struct rpd_kernel_launch *k) {
  if (!api || !k) return;
  const char *strs[] = {k->stream, k->kernelName};
  struct rpd_tbuf *b;
  struct nano_rpd_rec *r = rpd_record_open(R_KERNEL, 2, api, strs, 2, &b);
  if (!r) return;
  union rpd_ext *x = (union rpd_ext *)(r + 1);
  x->kernel = (typeof(x->kernel)){{k->gridX, k->gridY, k->gridZ},
                                  {k->workgroupX, k->workgroupY, k->workgroupZ},
                                  k->groupSegmentSize, k->privateSegmentSize};
  rpd_publish(b, 2);
}

RPDI_EXPORT void rpd_record_copyapi(uint64_t api, const struct rpd_copy *c) {
  if (!api || !c) return;
  const char *strs[] = {c->stream, c->dst, c->src};
  struct rpd_tbuf *b;
  struct nano_rpd_rec *r = rpd_record_open(R_COPY, 2, api, strs, 3, &b);
  if (!r) return;
  union rpd_ext *x = (union rpd_ext *)(r + 1);
  x->copy = (typeof(x->copy)){c->size, c->width, c->height, c->kind, c->dstDevice, c->srcDevice,
                              c->sync, c->pinned};
  rpd_publish(b, 2);
}

RPDI_EXPORT void rpd_record_op(uint64_t api, int gpuId, int queueId, int64_t start, int64_t end,
                               const char *description, const char *opType) {
  const char *strs[] = {description, opType};
  struct rpd_tbuf *b;
  struct nano_rpd_rec *r = rpd_record_open(R_OP, 1, api, strs, 2, &b);
  if (!r) return;
  r->t0 = start;
  r->t1 = end;
  r->s[2] = (uint64_t)(uint32_t)gpuId | ((uint64_t)(uint32_t)queueId << 32);
  rpd_publish(b, 1);
}

RPDI_EXPORT void rpd_record_monitor(const char *deviceType, int deviceId, const char *monitorType,
                                    int64_t start, int64_t end, const char *value) {
  const char *strs[] = {deviceType, monitorType, value};
  struct rpd_tbuf *b;
  struct nano_rpd_rec *r = rpd_record_open(R_MONITOR, 1, 0, strs, 3, &b);
  if (!r) return;
  r->t0 = start;
  r->t1 = end;
  r->s[3] = (uint64_t)(uint32_t)deviceId;
  rpd_publish(b, 1);
}

/* ---- thread names given by the program ------------------------------------
 * rpd_name_thread is rare and not on a hot path: a list under a mutex, which
 * the writer reads when it writes names. */
struct rpd_tname {
  int32_t tid;
  int written; /* the writer has stored this name */
  char name[128];
};
static pthread_mutex_t g_names_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rpd_tname *g_names;
static int g_nnames, g_capnames;

/* The entry of tid, or NULL (g_names_lock held). */
static struct rpd_tname *rpd_tname_find(int32_t tid) {
  for (int i = 0; i < g_nnames; i++)
    if (g_names[i].tid == tid) return &g_names[i];
  return NULL;
}

RPDI_EXPORT int rpd_name_thread(int tid, const char *name) {
  if (!name || !*name) return -1;
  if (tid == 0) tid = (int)syscall(SYS_gettid);
  pthread_mutex_lock(&g_names_lock);
  struct rpd_tname *e = rpd_tname_find(tid);
  if (!e) {
    struct rpd_tname *names = rpd_grow(g_names, g_nnames, &g_capnames, sizeof *names);
    if (names) {
      g_names = names;
      e = &g_names[g_nnames++];
    }
  }
  if (e) {
    e->tid = tid;
    e->written = 0;
    snprintf(e->name, sizeof e->name, "%s", name);
  }
  pthread_mutex_unlock(&g_names_lock);
  return e ? 0 : -1;
}

/* ---- writer --------------------------------------------------------------- */

enum { ST_STRING, ST_KERNEL, ST_COPY, ST_OP, ST_APIOPS, ST_MONITOR, ST_STACK, ST_THREAD, ST_COUNT };
static const char *const rpdw_sql[ST_COUNT] = {
    "INSERT INTO rocpd_string(id, string) VALUES (?,?)",
    "INSERT INTO rocpd_kernelapi(api_ptr_id, stream, gridX, gridY, gridZ, workgroupX, workgroupY, "
    "workgroupZ, groupSegmentSize, privateSegmentSize, kernelName_id) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
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

/* A hash map from keys to ids (strings or 64-bit integers). */
struct rpdw_map {
  uint64_t *hash;
  char **key;      /* string keys (NULL for integer maps) */
  uint64_t *ikey;  /* integer keys */
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
enum { RPDW_A_ID, RPDW_A_PID, RPDW_A_TID, RPDW_A_START, RPDW_A_END, RPDW_A_NAME, RPDW_A_CAT,
       RPDW_A_DOM, RPDW_A_ARGS, RPDW_A_COUNT };
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
  int failed;
  uint64_t lost_rows;    /* rows of transactions the failure rolled back */
  uint64_t lost_records; /* records consumed after it, not written */
  int64_t drop_meta_id;
  uint64_t dropped_written;
  uint64_t written_rows; /* rows committed by this process's writer */
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
static struct rpd_writer g_w;

/* The writer stops writing the file: the open transaction is rolled back
 * (SQLite may have done so already) and its rows are counted as lost. */
static void rpdw_set_failed(void) {
  if (g_w.failed) return;
  g_w.failed = 1;
  atomic_store(&g_writer_failed, 1);
  if (g_w.db && (g_w.in_txn || !sqlite3_get_autocommit(g_w.db))) {
    g_w.lost_rows += g_w.txn_rows;
    if (!sqlite3_get_autocommit(g_w.db)) sqlite3_exec(g_w.db, "ROLLBACK", NULL, NULL, NULL);
  }
  g_w.in_txn = 0;
}

static int rpdw_fail(const char *what) {
  if (!g_w.failed)
    rpd_log("%s: %s: %s (recording into this file stops)", g_w.path, what, sqlite3_errmsg(g_w.db));
  rpdw_set_failed();
  return -1;
}

static int rpdw_exec(const char *sql, const char *what) {
  char err[NANO_RPDFILE_ERRLEN];
  if (nano_rpdfile_exec(g_w.db, g_w.path, what, sql, err, sizeof err) != 0) {
    if (!g_w.failed) rpd_log("%s (recording into this file stops)", err);
    rpdw_set_failed();
    return -1;
  }
  return 0;
}

/* Steps a bound insert statement and resets it (every caller binds every
 * parameter, so bindings are not cleared). */
static int rpdw_step(int which) {
  if (g_w.failed) return -1; /* no row outside the transaction that failed */
  sqlite3_stmt *st = g_w.st[which];
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  if (rc != SQLITE_DONE) return rpdw_fail(rpdw_sql[which]);
  g_w.txn_rows++;
  return 0;
}

static int rpdw_begin(void) {
  if (g_w.in_txn || g_w.failed) return g_w.failed ? -1 : 0;
  if (rpdw_exec("BEGIN IMMEDIATE", "cannot begin a transaction") != 0) return -1;
  g_w.in_txn = 1;
  g_w.txn_rows = 0;
  return 0;
}

/* ---- the queue virtual tables ----
 * Eponymous virtual tables (no CREATE VIRTUAL TABLE, nothing in the file)
 * registered on the writer's connection only: nano_rpdw_api yields the api
 * queue in id order, nano_rpdw_ustring the ustring queue in queue order. */

enum { RPDW_VT_API, RPDW_VT_USTRING };

struct rpdw_vt {
  sqlite3_vtab base;
  int which;
};
struct rpdw_vt_cursor {
  sqlite3_vtab_cursor base;
  int which, i, n;
  const int64_t *row; /* nano_rpdw_api: the values of row i */
  int autoid;         /* and whether its id reads as NULL */
};

/* Points cursor c of nano_rpdw_api at its row i (in id order). */
static void rpdw_vt_api_row(struct rpdw_vt_cursor *c) {
  if (c->which == RPDW_VT_API && c->i < c->n) {
    c->row = g_w.q->api[g_w.q->ord[c->i].i].v;
    c->autoid = (int)g_w.q->ord[c->i].autoid;
  }
}

static int rpdw_vt_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                           sqlite3_vtab **out, char **err) {
  (void)argc;
  (void)argv;
  (void)err;
  int which = (int)(intptr_t)aux;
  int rc = sqlite3_declare_vtab(
      db, which == RPDW_VT_API ? "CREATE TABLE x(id, pid, tid, start, \"end\", apiName_id, "
                                 "category_id, domain_id, args_id)"
                               : "CREATE TABLE x(id, string)");
  if (rc != SQLITE_OK) return rc;
  struct rpdw_vt *t = sqlite3_malloc(sizeof *t);
  if (!t) return SQLITE_NOMEM;
  memset(t, 0, sizeof *t);
  t->which = which;
  *out = &t->base;
  return SQLITE_OK;
}

static int rpdw_vt_disconnect(sqlite3_vtab *t) {
  sqlite3_free(t);
  return SQLITE_OK;
}

static int rpdw_vt_best_index(sqlite3_vtab *t, sqlite3_index_info *info) {
  struct rpdw_vt *vt = (struct rpdw_vt *)t;
  info->estimatedCost = 1.0;
  info->estimatedRows = vt->which == RPDW_VT_API ? g_w.napiq : g_w.nustrq;
  return SQLITE_OK;
}

static int rpdw_vt_open(sqlite3_vtab *t, sqlite3_vtab_cursor **out) {
  struct rpdw_vt_cursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  c->which = ((struct rpdw_vt *)t)->which;
  *out = &c->base;
  return SQLITE_OK;
}

static int rpdw_vt_close(sqlite3_vtab_cursor *c) {
  sqlite3_free(c);
  return SQLITE_OK;
}

static int rpdw_vt_filter(sqlite3_vtab_cursor *cur, int idx, const char *idxstr, int argc,
                          sqlite3_value **argv) {
  (void)idx;
  (void)idxstr;
  (void)argc;
  (void)argv;
  struct rpdw_vt_cursor *c = (struct rpdw_vt_cursor *)cur;
  c->i = 0;
  c->n = c->which == RPDW_VT_API ? g_w.napiq : g_w.nustrq;
  rpdw_vt_api_row(c);
  return SQLITE_OK;
}

static int rpdw_vt_next(sqlite3_vtab_cursor *cur) {
  struct rpdw_vt_cursor *c = (struct rpdw_vt_cursor *)cur;
  c->i++;
  rpdw_vt_api_row(c);
  return SQLITE_OK;
}

static int rpdw_vt_eof(sqlite3_vtab_cursor *cur) {
  struct rpdw_vt_cursor *c = (struct rpdw_vt_cursor *)cur;
  return c->i >= c->n;
}

static int rpdw_vt_api_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  const struct rpdw_vt_cursor *c = (const struct rpdw_vt_cursor *)cur;
  if (col < 0 || col >= RPDW_A_COUNT) return SQLITE_ERROR;
  if (col == RPDW_A_ID && c->autoid)
    sqlite3_result_null(ctx);
  else
    sqlite3_result_int64(ctx, c->row[col]);
  return SQLITE_OK;
}

static int rpdw_vt_ustring_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  const struct rpdw_ustr_q *u = &g_w.q->ustr[((const struct rpdw_vt_cursor *)cur)->i];
  if (col == 0)
    sqlite3_result_int64(ctx, u->id);
  else
    sqlite3_result_text(ctx, u->s, -1, SQLITE_STATIC);
  return SQLITE_OK;
}

static int rpdw_vt_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = ((struct rpdw_vt_cursor *)cur)->i;
  return SQLITE_OK;
}

#define RPDW_VT_MODULE(column)                                                                     \
  {                                                                                                \
    .iVersion = 0, .xCreate = NULL /* eponymous only */, .xConnect = rpdw_vt_connect,             \
    .xBestIndex = rpdw_vt_best_index, .xDisconnect = rpdw_vt_disconnect,                          \
    .xDestroy = rpdw_vt_disconnect, .xOpen = rpdw_vt_open, .xClose = rpdw_vt_close,               \
    .xFilter = rpdw_vt_filter, .xNext = rpdw_vt_next, .xEof = rpdw_vt_eof, .xColumn = column,     \
    .xRowid = rpdw_vt_rowid,                                                                       \
  }
static const sqlite3_module rpdw_vt_api_module = RPDW_VT_MODULE(rpdw_vt_api_column);
static const sqlite3_module rpdw_vt_ustring_module = RPDW_VT_MODULE(rpdw_vt_ustring_column);

/* Sorts g_w.q->ord[0..n) by id: an LSD radix sort on id - min, 11 bits a
 * pass (the ids of one queue span a few times its length, so two or three
 * passes; a comparison sort cost several times more per row). */
static void rpdw_sort_api(int n) {
  struct rpdw_api_ord *a = g_w.q->ord, *t = g_w.q->ord_tmp;
  int64_t lo = a[0].id, hi = a[0].id;
  for (int i = 1; i < n; i++) {
    if (a[i].id < lo) lo = a[i].id;
    if (a[i].id > hi) hi = a[i].id;
  }
  uint64_t span = (uint64_t)hi - (uint64_t)lo;
  for (int shift = 0; shift < 64 && (span >> shift) != 0; shift += 11) {
    uint32_t count[2048] = {0};
    for (int i = 0; i < n; i++) count[(((uint64_t)a[i].id - (uint64_t)lo) >> shift) & 2047]++;
    uint32_t sum = 0;
    for (int d = 0; d < 2048; d++) {
      uint32_t c = count[d];
      count[d] = sum;
      sum += c;
    }
    for (int i = 0; i < n; i++) t[count[(((uint64_t)a[i].id - (uint64_t)lo) >> shift) & 2047]++] = a[i];
    struct rpdw_api_ord *x = a;
    a = t;
    t = x;
  }
  if (a != g_w.q->ord) memcpy(g_w.q->ord, a, (size_t)n * sizeof *a);
}

/* Runs one queue's INSERT ... SELECT. */
static void rpdw_insert_queue(sqlite3_stmt *st, const char *what) {
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  if (rc != SQLITE_DONE) rpdw_fail(what);
}

/* Inserts the queued ustring rows. */
static void rpdw_flush_ustrings(void) {
  if (g_w.nustrq && !g_w.failed)
    rpdw_insert_queue(g_w.ustr_ins, "INSERT INTO rocpd_ustring ... FROM nano_rpdw_ustring");
  g_w.nustrq = 0;
}

/* The id SQLite would give a row of rocpd_api inserted with a NULL id now,
 * minus one: the larger of its largest rowid and its AUTOINCREMENT sequence.
 * -1 when the query fails (every row then gets its id explicitly). */
static int64_t rpdw_api_last_id(void) {
  sqlite3_stmt *st = g_w.api_last;
  int64_t last = -1;
  if (sqlite3_step(st) == SQLITE_ROW) last = sqlite3_column_int64(st, 0);
  sqlite3_reset(st);
  return last;
}

/* Inserts the queued api rows, in id order. A row whose id is the one SQLite
 * would choose itself (one above the largest so far: the rows of one session
 * are mostly consecutive) goes in with a NULL id: SQLite then appends at the
 * end of the table without the search an explicit rowid costs (about a
 * quarter of the writer's work per row), and the id stored is the same. The
 * writer holds the write lock, so no other process inserts meanwhile. */
static void rpdw_flush_api(void) {
  int n = g_w.napiq;
  if (n && !g_w.failed) {
    int sorted = 1;
    for (int i = 0; i < n; i++) {
      g_w.q->ord[i].id = g_w.q->api[i].v[RPDW_A_ID];
      g_w.q->ord[i].i = (uint32_t)i;
      if (i && g_w.q->ord[i].id < g_w.q->ord[i - 1].id) sorted = 0;
    }
    if (!sorted) rpdw_sort_api(n);
    int64_t last = rpdw_api_last_id();
    const int64_t *first = g_w.q->api[0].v;
    int uniform = 1;
    for (int i = 0; i < n; i++) {
      struct rpdw_api_ord *o = &g_w.q->ord[i];
      const int64_t *v = g_w.q->api[o->i].v;
      o->autoid = last >= 0 && o->id == last + 1;
      if (o->id > last) last = o->id;
      uniform &= o->autoid & (v[RPDW_A_PID] == first[RPDW_A_PID]) &
                 (v[RPDW_A_TID] == first[RPDW_A_TID]) & (v[RPDW_A_CAT] == first[RPDW_A_CAT]) &
                 (v[RPDW_A_DOM] == first[RPDW_A_DOM]);
    }
    /* The usual case (one thread's ranges of one domain, ids SQLite's own):
     * the statement without the id column that takes pid, tid, category and
     * domain as parameters spares SQLite per row four virtual-table column
     * reads (about a tenth of the writer's work per row), the check of a
     * given id and the B-tree search for it. */
    sqlite3_stmt *st = g_w.api_ins_uniform;
    if (!uniform || sqlite3_bind_int64(st, 1, first[RPDW_A_PID]) != SQLITE_OK ||
        sqlite3_bind_int64(st, 2, first[RPDW_A_TID]) != SQLITE_OK ||
        sqlite3_bind_int64(st, 3, first[RPDW_A_CAT]) != SQLITE_OK ||
        sqlite3_bind_int64(st, 4, first[RPDW_A_DOM]) != SQLITE_OK)
      st = g_w.api_ins;
    rpdw_insert_queue(st, "INSERT INTO rocpd_api ... FROM nano_rpdw_api");
  }
  g_w.napiq = 0;
}

static void rpdw_flush_queues(void) {
  rpdw_flush_ustrings();
  rpdw_flush_api();
}

static int rpdw_commit(void) {
  if (!g_w.in_txn) return 0;
  rpdw_flush_queues();
  if (g_w.failed) return -1;
  if (rpdw_exec("COMMIT", "cannot commit") != 0) return -1;
  g_w.in_txn = 0;
  g_w.written_rows += g_w.txn_rows;
  return 0;
}

static int rpdw_map_init(struct rpdw_map *m, int strings) {
  memset(m, 0, sizeof *m);
  m->size = 4096;
  m->hash = calloc(m->size, sizeof *m->hash);
  m->val = calloc(m->size, sizeof *m->val);
  if (strings)
    m->key = calloc(m->size, sizeof *m->key);
  else
    m->ikey = calloc(m->size, sizeof *m->ikey);
  return (m->hash && m->val && (m->key || m->ikey)) ? 0 : -1;
}

static void rpdw_map_free(struct rpdw_map *m) {
  if (m->key)
    for (uint32_t i = 0; i < m->size; i++) free(m->key[i]);
  free(m->hash);
  free(m->key);
  free(m->ikey);
  free(m->val);
  memset(m, 0, sizeof *m);
}

/* Finds the slot of a key (string s or integer ik with hash h). */
static uint32_t rpdw_map_slot(const struct rpdw_map *m, uint64_t h, const char *s, uint64_t ik) {
  uint32_t i = (uint32_t)h & (m->size - 1);
  while (m->hash[i]) {
    if (m->hash[i] == h && (s ? strcmp(m->key[i], s) == 0 : m->ikey[i] == ik)) return i;
    i = (i + 1) & (m->size - 1);
  }
  return i;
}

static int rpdw_map_grow(struct rpdw_map *m) {
  struct rpdw_map n = *m;
  n.size = m->size * 2;
  n.hash = calloc(n.size, sizeof *n.hash);
  n.val = calloc(n.size, sizeof *n.val);
  n.key = m->key ? calloc(n.size, sizeof *n.key) : NULL;
  n.ikey = m->ikey ? calloc(n.size, sizeof *n.ikey) : NULL;
  if (!n.hash || !n.val || (!n.key && !n.ikey)) {
    free(n.hash);
    free(n.val);
    free(n.key);
    free(n.ikey);
    return -1;
  }
  for (uint32_t i = 0; i < m->size; i++) {
    if (!m->hash[i]) continue;
    uint32_t j = (uint32_t)m->hash[i] & (n.size - 1);
    while (n.hash[j]) j = (j + 1) & (n.size - 1);
    n.hash[j] = m->hash[i];
    n.val[j] = m->val[i];
    if (n.key) n.key[j] = m->key[i];
    if (n.ikey) n.ikey[j] = m->ikey[i];
  }
  free(m->hash);
  free(m->val);
  free(m->key);
  free(m->ikey);
  *m = n;
  return 0;
}

/* The rocpd_string id of s, inserting it when new. Returns -1 on failure. */
/* The rocpd_string id of s (a new row the first time); *kept (when not
 * NULL) gets the writer's own copy of s, which lives as long as the
 * connection. */
static int64_t rpdw_string_kept(const char *s, const char **kept) {
  if (!s) s = "";
  uint64_t h = nano_fnv64_str(s) | 1;
  uint32_t i = rpdw_map_slot(&g_w.strings, h, s, 0);
  if (g_w.strings.hash[i]) {
    if (kept) *kept = g_w.strings.key[i];
    return g_w.strings.val[i];
  }
  if ((g_w.strings.count + 1) * 2 > g_w.strings.size) {
    if (rpdw_map_grow(&g_w.strings) != 0) return -1;
    i = rpdw_map_slot(&g_w.strings, h, s, 0);
  }
  char *copy = strdup(s);
  if (!copy) return -1;
  int64_t id = g_w.offset + g_w.next_string++;
  sqlite3_bind_int64(g_w.st[ST_STRING], 1, id);
  sqlite3_bind_text(g_w.st[ST_STRING], 2, s, -1, SQLITE_STATIC);
  if (rpdw_step(ST_STRING) != 0) {
    free(copy);
    return -1;
  }
  g_w.strings.hash[i] = h;
  g_w.strings.key[i] = copy;
  g_w.strings.val[i] = id;
  g_w.strings.count++;
  if (kept) *kept = copy;
  return id;
}

static int64_t rpdw_string_id(const char *s) { return rpdw_string_kept(s, NULL); }

/* A new rocpd_ustring row for s ("" and NULL share the empty row). */
static int64_t rpdw_ustring_id(const char *s) {
  if (!s || !*s) return g_w.id_uempty;
  int64_t id = g_w.offset + g_w.next_ustring++;
  if (g_w.nustrq == RPDW_QUEUE) rpdw_flush_ustrings();
  g_w.q->ustr[g_w.nustrq].id = id;
  g_w.q->ustr[g_w.nustrq].s = s;
  g_w.nustrq++;
  g_w.txn_rows++;
  return id;
}

/* The text of a string ref of buffer b (NULL for "none"); extends *aend past
 * the arena bytes it occupies. */
static const char *rpdw_text(const struct rpd_tbuf *b, uint64_t ref, uint64_t *aend) {
  if (!ref) return NULL;
  if (ref & RPD_REF_INTERNED) return rpd_intern_get((uint32_t)ref);
  uint64_t pos = ref - 1;
  const char *p = b->arena + (pos & (b->asize - 1));
  uint64_t end = pos + strlen(p) + 1;
  if (end > *aend) *aend = end;
  return p;
}

/* The cached row ids of interned handle h, growing the cache as needed;
 * NULL when out of memory (callers then write without caching). */
static struct rpdw_handle_ids *rpdw_handle(uint32_t h) {
  if (h >= g_w.nhandle_ids) {
    uint32_t n = g_w.nhandle_ids ? g_w.nhandle_ids : 1024;
    while (n <= h) n *= 2;
    struct rpdw_handle_ids *a = realloc(g_w.handle_ids, n * sizeof *a);
    if (!a) return NULL;
    memset(a + g_w.nhandle_ids, 0, (n - g_w.nhandle_ids) * sizeof *a);
    g_w.handle_ids = a;
    g_w.nhandle_ids = n;
  }
  return &g_w.handle_ids[h];
}

/* The rocpd_string id of a string ref; interned handles are cached. */
static int64_t rpdw_ref_id(const struct rpd_tbuf *b, uint64_t ref, const char *dflt, uint64_t *aend) {
  if (ref & RPD_REF_INTERNED) {
    struct rpdw_handle_ids *c = rpdw_handle((uint32_t)ref);
    if (c && c->string_id) return c->string_id;
    int64_t id = rpdw_string_id(rpd_intern_get((uint32_t)ref));
    if (c && id > 0) c->string_id = id;
    return id;
  }
  const char *t = rpdw_text(b, ref, aend);
  return rpdw_string_id(t ? t : dflt);
}

/* The rocpd_ustring id of a string ref: a new row for an arena text, one
 * shared row per interned handle. */
static int64_t rpdw_ref_uid(const struct rpd_tbuf *b, uint64_t ref, uint64_t *aend) {
  if (ref & RPD_REF_INTERNED) {
    struct rpdw_handle_ids *c = rpdw_handle((uint32_t)ref);
    if (c && c->ustring_id) return c->ustring_id;
    int64_t id = rpdw_ustring_id(rpd_intern_get((uint32_t)ref));
    if (c) c->ustring_id = id;
    return id;
  }
  return rpdw_ustring_id(rpdw_text(b, ref, aend));
}

/* Inserts the stack frames stored at stack ref `ref` for api row api_id. */
static void rpdw_stack(const struct rpd_tbuf *b, uint64_t ref, int64_t api_id, uint64_t *aend) {
  if (!ref) return;
  uint64_t pos = (ref >> RPD_STACK_COUNT_BITS) - 1;
  uint32_t n = (uint32_t)(ref & RPD_MAX_STACK_DEPTH);
  const uint64_t *ips = (const uint64_t *)(b->arena + (pos & (b->asize - 1)));
  if (pos + n * 8 > *aend) *aend = pos + n * 8;
  for (uint32_t d = 0; d < n; d++) {
    uint64_t ip = ips[d];
    uint64_t h = (ip * 0x9E3779B97F4A7C15ull) | 1;
    uint32_t i = rpdw_map_slot(&g_w.ips, h, NULL, ip);
    int64_t sid;
    if (g_w.ips.hash[i]) {
      sid = g_w.ips.val[i];
    } else {
      char name[1024];
      rpdi_stack_symbolize(ip, name, sizeof name);
      sid = rpdw_string_id(name);
      if (sid < 0) return;
      if ((g_w.ips.count + 1) * 2 > g_w.ips.size) {
        if (rpdw_map_grow(&g_w.ips) != 0) return;
        i = rpdw_map_slot(&g_w.ips, h, NULL, ip);
      }
      g_w.ips.hash[i] = h;
      g_w.ips.ikey[i] = ip;
      g_w.ips.val[i] = sid;
      g_w.ips.count++;
    }
    sqlite3_stmt *st = g_w.st[ST_STACK];
    sqlite3_bind_int64(st, 1, g_w.offset + g_w.next_stack++);
    sqlite3_bind_int64(st, 2, api_id);
    sqlite3_bind_int(st, 3, (int)d);
    sqlite3_bind_int64(st, 4, sid);
    if (rpdw_step(ST_STACK) != 0) return;
  }
}

static void rpdw_api_row(int64_t id, int pid, int tid, int64_t start, int64_t end, int64_t name_id,
                         int64_t cat_id, int64_t dom_id, int64_t args_id) {
  if (g_w.napiq == RPDW_QUEUE) rpdw_flush_api();
  int64_t *a = g_w.q->api[g_w.napiq++].v;
  a[RPDW_A_ID] = id;
  a[RPDW_A_PID] = pid;
  a[RPDW_A_TID] = tid;
  a[RPDW_A_START] = start;
  a[RPDW_A_END] = end;
  a[RPDW_A_NAME] = name_id;
  a[RPDW_A_CAT] = cat_id;
  a[RPDW_A_DOM] = dom_id;
  a[RPDW_A_ARGS] = args_id;
  g_w.txn_rows++;
}

/* Whether string ref `ref` has no text (none, or ""); the answer for an
 * interned handle is cached. */
static int rpdw_ref_empty(const struct rpd_tbuf *b, uint64_t ref, uint64_t *aend) {
  if (!ref) return 1;
  if (ref & RPD_REF_INTERNED) {
    struct rpdw_handle_ids *c = rpdw_handle((uint32_t)ref);
    if (c && c->text != RPDW_TEXT_UNKNOWN) return c->text == RPDW_TEXT_EMPTY;
    const char *t = rpd_intern_get((uint32_t)ref);
    int empty = !t || !*t;
    if (c) c->text = empty ? RPDW_TEXT_EMPTY : RPDW_TEXT_SET;
    return empty;
  }
  const char *t = rpdw_text(b, ref, aend);
  return !t || !*t;
}

/* Resolves the strings of a user range/mark record into ids following the
 * rule of rpd.h: domain NULL or "" is "UserMarker"; with non-empty args,
 * apiName = name and args = args; without, apiName "UserMarker" and
 * args = name. */
static uint64_t rpdw_user_dom_name(const struct rpd_tbuf *b, const struct nano_rpd_rec *r,
                                   uint64_t *aend, int64_t *dom, int64_t *name) {
  if (rpdw_ref_empty(b, r->s[0], aend))
    *dom = g_w.id_usermarker;
  else
    *dom = rpdw_ref_id(b, r->s[0], "", aend);
  if (!rpdw_ref_empty(b, r->s[2], aend)) {
    *name = rpdw_ref_id(b, r->s[1], "", aend);
    return r->s[2];
  }
  *name = g_w.id_usermarker;
  return r->s[1];
}

static void rpdw_user_ids_uncached(const struct rpd_tbuf *b, const struct nano_rpd_rec *r,
                                   uint64_t *aend, int64_t *dom, int64_t *name, int64_t *args) {
  *args = rpdw_ref_uid(b, rpdw_user_dom_name(b, r, aend, dom, name), aend);
}

/* A range push under NANO_RPD_MIN_DURATION: ids as rpdw_user_ids gives, but
 * the args only as the key of its function (a rocpd_string id) and a way to
 * its text; its rocpd_ustring row waits for the pop (rpdw_range_args_id). */
static void rpdw_range_keys(const struct rpd_tbuf *b, const struct nano_rpd_rec *r, uint64_t *aend,
                            struct rpd_open *o) {
  uint64_t ref = rpdw_user_dom_name(b, r, aend, &o->domain_id, &o->name_id);
  o->args_id = 0;
  if (ref & RPD_REF_INTERNED) {
    o->args_ref = ref;
    o->args_key = rpdw_ref_id(b, ref, "", aend);
  } else {
    const char *t = rpdw_text(b, ref, aend);
    o->args_ref = 0;
    o->args_key = rpdw_string_kept(t ? t : "", &o->args_text);
  }
}

/* The rocpd_ustring id of an open range's args (made now when deferred). */
static int64_t rpdw_range_args_id(const struct rpd_open *o) {
  if (o->args_id) return o->args_id;
  return o->args_ref ? rpdw_ref_uid(NULL, o->args_ref, NULL) : rpdw_ustring_id(o->args_text);
}

/* rpdw_user_ids_uncached, through the cache when no ref is an arena text. */
static void rpdw_user_ids(const struct rpd_tbuf *b, const struct nano_rpd_rec *r, uint64_t *aend,
                          int64_t *dom, int64_t *name, int64_t *args) {
  const uint64_t *k = r->s;
  for (int i = 0; i < 3; i++)
    if (k[i] && !(k[i] & RPD_REF_INTERNED)) {
      rpdw_user_ids_uncached(b, r, aend, dom, name, args);
      return;
    }
  uint64_t h = (k[0] * 0x9E3779B97F4A7C15ull) ^ (k[1] * 0xC2B2AE3D27D4EB4Full) ^
               (k[2] * 0x165667B19E3779F9ull);
  struct rpdw_user_entry *e = &g_w.user_cache[h >> (64 - RPDW_USER_CACHE_BITS)];
  if (!(e->dom && e->s[0] == k[0] && e->s[1] == k[1] && e->s[2] == k[2])) {
    rpdw_user_ids_uncached(b, r, aend, dom, name, args);
    if (*dom > 0 && *name > 0 && *args > 0)
      *e = (struct rpdw_user_entry){{k[0], k[1], k[2]}, *dom, *name, *args};
    return;
  }
  *dom = e->dom;
  *name = e->name;
  *args = e->args;
}

/* ---- short calls summed (NANO_RPD_MIN_DURATION) ----
 * One entry per (pid, domain, name, args) of ranges shorter than the bound:
 * calls, total and self time (total less the time of ranges nested in them),
 * written to nano_call_summary at each flush (the rows that changed). */
struct rpdw_call_sum {
  int32_t pid;
  int64_t dom, name, args;
  int64_t calls, total_ns, self_ns;
  int dirty;
};
#define RPDW_SUM_MIN_SLOTS 1024

static uint64_t rpdw_sum_hash(int32_t pid, int64_t dom, int64_t name, int64_t args) {
  return ((uint64_t)pid * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)dom * 0xC2B2AE3D27D4EB4Full) ^
         ((uint64_t)name * 0x165667B19E3779F9ull) ^ ((uint64_t)args * 0x27D4EB2F165667C5ull);
}

/* The slot of sum_index holding (pid, dom, name, args), or the empty one
 * where it goes. */
static uint32_t rpdw_sum_slot(int32_t pid, int64_t dom, int64_t name, int64_t args) {
  uint32_t mask = g_w.sum_size - 1, i = (uint32_t)(rpdw_sum_hash(pid, dom, name, args) >> 32) & mask;
  for (;; i = (i + 1) & mask) {
    uint32_t e = g_w.sum_index[i];
    if (!e) return i;
    const struct rpdw_call_sum *c = &g_w.sums[e - 1];
    if (c->pid == pid && c->dom == dom && c->name == name && c->args == args) return i;
  }
}

/* Doubles sum_index (or makes the first). Returns 0, or -1 (out of memory). */
static int rpdw_sum_grow(void) {
  uint32_t size = g_w.sum_size ? g_w.sum_size * 2 : RPDW_SUM_MIN_SLOTS;
  uint32_t *index = calloc(size, sizeof *index);
  if (!index) return -1;
  free(g_w.sum_index);
  g_w.sum_index = index;
  g_w.sum_size = size;
  for (int e = 0; e < g_w.nsums; e++) {
    const struct rpdw_call_sum *c = &g_w.sums[e];
    g_w.sum_index[rpdw_sum_slot(c->pid, c->dom, c->name, c->args)] = (uint32_t)e + 1;
  }
  return 0;
}

/* Adds one call of open range o of process pid, `dur` ns long. Returns 0,
 * or -1 when out of memory (the caller writes a row instead). */
static int rpdw_sum_add(int32_t pid, const struct rpd_open *o, int64_t dur) {
  if ((uint32_t)(g_w.nsums + 1) * 2 > g_w.sum_size && rpdw_sum_grow() != 0) return -1;
  uint32_t i = rpdw_sum_slot(pid, o->domain_id, o->name_id, o->args_key);
  if (!g_w.sum_index[i]) {
    struct rpdw_call_sum *sums = rpd_grow(g_w.sums, g_w.nsums, &g_w.capsums, sizeof *sums);
    if (!sums) return -1;
    g_w.sums = sums;
    sums[g_w.nsums] = (struct rpdw_call_sum){pid, o->domain_id, o->name_id, o->args_key, 0, 0, 0, 0};
    g_w.sum_index[i] = (uint32_t)++g_w.nsums;
  }
  struct rpdw_call_sum *c = &g_w.sums[g_w.sum_index[i] - 1];
  int64_t self = dur - o->child_ns;
  c->calls++;
  c->total_ns += dur;
  c->self_ns += self > 0 ? self : 0;
  c->dirty = 1;
  g_w.sums_dirty = 1;
  return 0;
}

/* Writes the entries that changed since the last flush. Inside the writer's
 * transaction. */
static void rpdw_write_sums(void) {
  if (!g_w.sums_dirty || g_w.failed || rpdw_begin() != 0) return;
  if (rpdw_exec(nano_rpdfile_calls_schema_sql(), "cannot create nano_call_summary") != 0) return;
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(g_w.db,
                         "INSERT INTO nano_call_summary (pid, domain_id, name_id, args_id, calls, "
                         "total_ns, self_ns, min_duration_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
                         "ON CONFLICT (pid, domain_id, name_id, args_id) DO UPDATE SET "
                         "calls = excluded.calls, total_ns = excluded.total_ns, "
                         "self_ns = excluded.self_ns",
                         -1, &st, NULL) != SQLITE_OK) {
    rpdw_fail("INSERT INTO nano_call_summary");
    return;
  }
  for (int e = 0; e < g_w.nsums; e++) {
    struct rpdw_call_sum *c = &g_w.sums[e];
    if (!c->dirty) continue;
    int64_t v[] = {c->pid, c->dom, c->name, c->args, c->calls, c->total_ns, c->self_ns, g_w.min_ns};
    for (int k = 0; k < 8; k++) sqlite3_bind_int64(st, k + 1, v[k]);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
      rpdw_fail("INSERT INTO nano_call_summary");
      break;
    }
    c->dirty = 0;
    g_w.txn_rows++;
  }
  sqlite3_finalize(st);
  g_w.sums_dirty = 0;
}

/* Ends the open range o of thread b at `end`: an api row, or, when shorter
 * than NANO_RPD_MIN_DURATION (and without stack frames, whose rows refer to
 * it), one more call in its function's summary. Its time counts as nested
 * time of `parent` (NULL: none, or not known). */
static void rpdw_close_range(const struct rpd_tbuf *b, struct rpd_open *o, int64_t end,
                             struct rpd_open *parent) {
  if (end < o->start) end = o->start; /* a stop stamped by another clock than the push */
  if (parent) parent->child_ns += end - o->start;
  if (g_w.min_ns > 0 && !o->api_id && end - o->start < g_w.min_ns &&
      rpdw_sum_add(b->pid, o, end - o->start) == 0)
    return;
  int64_t id = o->api_id ? o->api_id : g_w.offset + (int64_t)atomic_fetch_add(&g_api_next, 1);
  rpdw_api_row(id, b->pid, b->tid, o->start, end, o->name_id, g_w.id_empty, o->domain_id,
               rpdw_range_args_id(o));
}

/* Closes every open range of b pushed in an epoch that has ended. */
static void rpdw_close_stale(struct rpd_tbuf *b, uint32_t cur_on_epoch) {
  int keep = 0;
  for (int i = 0; i < b->nopen; i++) {
    struct rpd_open *o = &b->open[i];
    if (o->epoch != cur_on_epoch)
      rpdw_close_range(b, o, rpdw_time(atomic_load(&g_stop_at[o->epoch % RPD_STOP_EPOCHS])), NULL);
    else
      b->open[keep++] = *o;
  }
  b->nopen = keep;
}

/* Writes record r of ring b (its texts are in b's arena; the thread's state
 * is b's owner's). */
static void rpdw_record(struct rpd_tbuf *b, const struct nano_rpd_rec *r, uint64_t *aend) {
  struct rpd_tbuf *t = b->owner;
  switch (r->type) {
  case R_PAD:
    break;
  case R_PUSH: {
    struct rpd_open *opens = rpd_grow(t->open, t->nopen, &t->capopen, sizeof *opens);
    if (!opens) return;
    t->open = opens;
    struct rpd_open *o = &t->open[t->nopen++];
    o->start = rpdw_time(r->t0);
    o->epoch = r->epoch;
    /* The id is taken at the pop (rows then come in id order, see
     * rpdw_flush_api) unless stack frames need it now. */
    o->api_id = r->s[3] ? g_w.offset + (int64_t)atomic_fetch_add(&g_api_next, 1) : 0;
    o->child_ns = 0;
    if (g_w.min_ns > 0)
      rpdw_range_keys(b, r, aend, o);
    else
      rpdw_user_ids(b, r, aend, &o->domain_id, &o->name_id, &o->args_id);
    rpdw_stack(b, r->s[3], o->api_id, aend);
    break;
  }
  case R_POP: {
    /* Ranges of an ended epoch end at their stop. A thread stamps its pushes
     * with the epoch it reads and epochs only grow, so the epochs of its open
     * ranges never decrease from the bottom of the stack up: when the bottom
     * one is of this pop's epoch, none is stale (no scan of the stack per pop). */
    if (t->nopen && t->open[0].epoch != r->epoch) rpdw_close_stale(t, r->epoch);
    if (t->nopen > 0) {
      t->nopen--;
      rpdw_close_range(t, &t->open[t->nopen], rpdw_time(r->t0),
                       t->nopen ? &t->open[t->nopen - 1] : NULL);
    }
    break;
  }
  case R_EXIT: {
    rpdw_close_stale(t, r->epoch);
    int64_t end = rpdw_time(r->t0);
    for (int i = t->nopen - 1; i >= 0; i--)
      rpdw_close_range(t, &t->open[i], end, i ? &t->open[i - 1] : NULL);
    t->nopen = 0;
    break;
  }
  case R_MARK: {
    int64_t dom, name, args, id = g_w.offset + (int64_t)atomic_fetch_add(&g_api_next, 1);
    rpdw_user_ids(b, r, aend, &dom, &name, &args);
    int64_t at = rpdw_time(r->t0);
    rpdw_api_row(id, t->pid, t->tid, at, at, name, g_w.id_empty, dom, args);
    rpdw_stack(b, r->s[3], id, aend);
    break;
  }
  case R_API: {
    int64_t id = g_w.offset + (int64_t)r->h;
    int64_t dom = rpdw_ref_id(b, r->s[0], "", aend);
    int64_t cat = rpdw_ref_id(b, r->s[1], "", aend);
    int64_t name = rpdw_ref_id(b, r->s[2], "", aend);
    int64_t args = rpdw_ref_uid(b, r->s[3], aend);
    rpdw_api_row(id, t->pid, t->tid, r->t0, r->t1, name, cat, dom, args);
    if (r->nslots == 2) rpdw_stack(b, ((const union rpd_ext *)(r + 1))->api.stack, id, aend);
    break;
  }
  case R_KERNEL: {
    const union rpd_ext *x = (const union rpd_ext *)(r + 1);
    sqlite3_stmt *st = g_w.st[ST_KERNEL];
    const char *stream = rpdw_text(b, r->s[0], aend);
    int64_t kname = rpdw_ref_id(b, r->s[1], "", aend);
    sqlite3_bind_int64(st, 1, g_w.offset + (int64_t)r->h);
    sqlite3_bind_text(st, 2, stream ? stream : "", -1, SQLITE_STATIC);
    for (int i = 0; i < 3; i++) {
      sqlite3_bind_int(st, 3 + i, x->kernel.grid[i]);
      sqlite3_bind_int(st, 6 + i, x->kernel.workgroup[i]);
    }
    sqlite3_bind_int(st, 9, x->kernel.group_segment_size);
    sqlite3_bind_int(st, 10, x->kernel.private_segment_size);
    sqlite3_bind_int64(st, 11, kname);
    rpdw_step(ST_KERNEL);
    break;
  }
  case R_COPY: {
    const union rpd_ext *x = (const union rpd_ext *)(r + 1);
    sqlite3_stmt *st = g_w.st[ST_COPY];
    const char *stream = rpdw_text(b, r->s[0], aend);
    const char *dst = rpdw_text(b, r->s[1], aend);
    const char *src = rpdw_text(b, r->s[2], aend);
    sqlite3_bind_int64(st, 1, g_w.offset + (int64_t)r->h);
    sqlite3_bind_text(st, 2, stream ? stream : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, x->copy.size);
    sqlite3_bind_int64(st, 4, x->copy.width);
    sqlite3_bind_int64(st, 5, x->copy.height);
    sqlite3_bind_int(st, 6, x->copy.kind);
    sqlite3_bind_text(st, 7, dst ? dst : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 8, src ? src : "", -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 9, x->copy.dst_device);
    sqlite3_bind_int(st, 10, x->copy.src_device);
    sqlite3_bind_int(st, 11, x->copy.sync != 0);
    sqlite3_bind_int(st, 12, x->copy.pinned != 0);
    rpdw_step(ST_COPY);
    break;
  }
  case R_OP: {
    sqlite3_stmt *st = g_w.st[ST_OP];
    int64_t seq = g_w.next_op++;
    int64_t id = g_w.offset + seq;
    int64_t desc = rpdw_ref_id(b, r->s[0], "", aend);
    int64_t type = rpdw_ref_id(b, r->s[1], "", aend);
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int(st, 2, (int32_t)(uint32_t)r->s[2]);
    sqlite3_bind_int(st, 3, (int32_t)(uint32_t)(r->s[2] >> 32));
    sqlite3_bind_int64(st, 4, seq);
    sqlite3_bind_int64(st, 5, r->t0);
    sqlite3_bind_int64(st, 6, r->t1);
    sqlite3_bind_int64(st, 7, desc);
    sqlite3_bind_int64(st, 8, type);
    if (rpdw_step(ST_OP) != 0 || !r->h) break;
    st = g_w.st[ST_APIOPS];
    sqlite3_bind_int64(st, 1, g_w.offset + g_w.next_apiops++);
    sqlite3_bind_int64(st, 2, g_w.offset + (int64_t)r->h);
    sqlite3_bind_int64(st, 3, id);
    rpdw_step(ST_APIOPS);
    break;
  }
  case R_MONITOR: {
    sqlite3_stmt *st = g_w.st[ST_MONITOR];
    const char *dt = rpdw_text(b, r->s[0], aend);
    const char *mt = rpdw_text(b, r->s[1], aend);
    const char *v = rpdw_text(b, r->s[2], aend);
    sqlite3_bind_int64(st, 1, g_w.offset + g_w.next_monitor++);
    sqlite3_bind_text(st, 2, dt ? dt : "", -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, (int32_t)r->s[3]);
    sqlite3_bind_text(st, 4, mt ? mt : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, r->t0);
    sqlite3_bind_int64(st, 6, r->t1);
    sqlite3_bind_text(st, 7, v ? v : "", -1, SQLITE_STATIC);
    rpdw_step(ST_MONITOR);
    break;
  }
  case R_RSTART: {
    struct rpdw_pending *pend = rpd_grow(g_w.pend, g_w.npend, &g_w.cappend, sizeof *pend);
    if (!pend) return;
    g_w.pend = pend;
    struct rpdw_pending *p = &g_w.pend[g_w.npend++];
    const char *d = rpdw_text(b, r->s[0], aend);
    p->id = r->h;
    p->start = rpdw_time(r->t0);
    p->pid = t->pid;
    p->tid = t->tid;
    p->epoch = r->epoch;
    p->domain_id = (d && *d) ? rpdw_string_id(d) : g_w.id_usermarker;
    p->args_id = rpdw_ref_uid(b, r->s[1], aend);
    break;
  }
  case R_RSTOP:
    for (int i = 0; i < g_w.npend; i++) {
      struct rpdw_pending *p = &g_w.pend[i];
      if (p->id != r->h) continue;
      int64_t end = p->epoch == r->epoch ? rpdw_time(r->t0) : rpdw_time(atomic_load(&g_stop_at[p->epoch % RPD_STOP_EPOCHS]));
      rpdw_api_row(g_w.offset + (int64_t)atomic_fetch_add(&g_api_next, 1), p->pid, p->tid, p->start,
                   end, g_w.id_usermarker, g_w.id_empty, p->domain_id, p->args_id);
      g_w.pend[i] = g_w.pend[--g_w.npend];
      break;
    }
    break;
  default:
    break;
  }
}

/* While draining, the writer hands consumed room back to the producer every
 * RPDW_PUBLISH_EVERY records (a full producer waits on no more than that), and
 * splits a transaction past RPDW_TXN_MAX_ROWS rows (so one busy drain does not
 * grow the WAL without bound). */
#define RPDW_PUBLISH_EVERY 1024
#define RPDW_TXN_MAX_ROWS 200000

/* Drains buffer b; returns the number of records written. */
static uint64_t rpdw_drain(struct rpd_tbuf *b) {
  uint64_t head = __atomic_load_n(&b->ring.head, __ATOMIC_ACQUIRE);
  uint64_t tail = atomic_load_explicit(&b->tail, memory_order_relaxed);
  if (head == tail) return 0;
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
    g_w.lost_records += g_w.failed != 0; /* read (the arena moves on), not written */
    rpdw_record(b, r, &aend);
    tail += ns;
    n++;
    if (n % RPDW_PUBLISH_EVERY == 0) {
      rpdw_flush_ustrings();
      atomic_store_explicit(&b->atail, aend, memory_order_release);
      atomic_store_explicit(&b->tail, tail, memory_order_release);
      if (g_w.txn_rows > RPDW_TXN_MAX_ROWS) {
        rpdw_commit();
        rpdw_begin();
      }
    }
  }
  rpdw_flush_ustrings();
  atomic_store_explicit(&b->atail, aend, memory_order_release);
  atomic_store_explicit(&b->tail, tail, memory_order_release);
  return n;
}

/* Makes ring s's arrays the writer's to drain (SEG_READ), reading a spilled
 * ring back. Returns 0, or -1 when it cannot now (out of memory; the next
 * round tries again). A ring that cannot be read back is counted as lost. */
static int rpdw_seg_take(struct rpd_tbuf *s) {
  for (;;) {
    int st = SEG_MEM;
    if (atomic_compare_exchange_strong(&s->seg_state, &st, SEG_READ)) return 0;
    if (st == SEG_SPILLING) { /* its producer is writing it out: not for long */
      struct timespec ts = {0, 50000};
      nanosleep(&ts, NULL);
      continue;
    }
    if (st != SEG_SPILLED) return 0;
    if (rpd_seg_arrays(s) != 0) return -1;
    struct iovec v[2] = {{s->ring.slots, (size_t)s->ring.nslots * sizeof(struct nano_rpd_rec)},
                         {s->arena, s->asize}};
    if (rpdi_spill_read(s->spill_off, v, 2, rpd_seg_bytes(s)) != 0) {
      uint64_t head = __atomic_load_n(&s->ring.head, __ATOMIC_SEQ_CST);
      g_w.lost_records += head - atomic_load(&s->tail); /* slots, at most that many records */
      atomic_store(&s->atail, atomic_load(&s->ahead));
      atomic_store(&s->tail, head);
    }
    rpdi_spill_release(s->spill_off, rpd_seg_bytes(s));
    atomic_store(&s->seg_state, SEG_READ);
    return 0;
  }
}

/* A drained ring s of thread t that its producer has left: t's spare, else
 * the pool's, else freed. The primary (t itself) is never freed; it is the
 * spare first. */
static void rpdw_seg_recycle(struct rpd_tbuf *t, struct rpd_tbuf *s) {
  struct rpd_tbuf *old = NULL;
  if (s == t)
    old = atomic_exchange(&t->spare, s);
  else if (!atomic_compare_exchange_strong(&t->spare, &old, s))
    old = s;
  else
    old = NULL;
  if (!old) return;
  int64_t over = atomic_load(&g_ring_bytes) - atomic_load(&g_base_bytes);
  pthread_mutex_lock(&g_pool_lock);
  if (g_npool < RPD_POOL_MAX && over <= (int64_t)g_ovf_memory_max) {
    g_pool[g_npool++] = old;
    old = NULL;
  }
  pthread_mutex_unlock(&g_pool_lock);
  if (old) {
    rpd_seg_free_arrays(old);
    free(old);
  }
}

/* Drains thread t's rings in order; returns the number of records written. */
static uint64_t rpdw_drain_thread(struct rpd_tbuf *t) {
  uint64_t n = 0;
  for (;;) {
    struct rpd_tbuf *s = t->wseg;
    if (rpdw_seg_take(s) != 0) break;
    n += rpdw_drain(s);
    struct rpd_tbuf *next = atomic_load_explicit(&s->seg_next, memory_order_acquire);
    if (next) n += rpdw_drain(s); /* what it published before it moved on */
    atomic_store(&s->seg_state, SEG_MEM);
    if (!next) break;
    atomic_store(&s->seg_next, NULL);
    t->wseg = next;
    rpdw_seg_recycle(t, s);
  }
  return n;
}

/* Whether the writer has drained every ring of thread t. */
static int rpdw_thread_drained(const struct rpd_tbuf *t) {
  const struct rpd_tbuf *s = t->wseg;
  return !atomic_load(&s->seg_next) && atomic_load(&s->tail) == __atomic_load_n(&s->ring.head, __ATOMIC_SEQ_CST);
}

/* Writes (pid, tid, name) into nano_thread. Returns 0, or -1 (failed). */
static int rpdw_put_name(int32_t pid, int32_t tid, const char *name) {
  if (rpdw_begin() != 0) return -1;
  sqlite3_stmt *st = g_w.st[ST_THREAD];
  sqlite3_bind_int(st, 1, pid);
  sqlite3_bind_int(st, 2, tid);
  sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st);
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
  if (!name[0] || strncmp(written, name, 15) == 0) return;
  pthread_mutex_lock(&g_names_lock);
  int given = rpd_tname_find(tid) != NULL;
  pthread_mutex_unlock(&g_names_lock);
  if (given || rpdw_put_name(pid, tid, name) != 0) return;
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
  if (fd < 0) return;
  ssize_t n = read(fd, name, 15);
  close(fd);
  if (n <= 0) n = 0;
  name[n] = 0;
  char *nl = strchr(name, '\n');
  if (nl) *nl = 0;
}

/* The names the program gave, then the OS names of this process and of its
 * live recording threads (threads that exited are named from their exit; see
 * rpdw_drain_all). */
static void rpdw_names(void) {
  char name[16];
  int32_t pid = (int32_t)getpid();
  pthread_mutex_lock(&g_names_lock);
  for (int i = 0; i < g_nnames; i++)
    if (!g_names[i].written && rpdw_put_name(pid, g_names[i].tid, g_names[i].name) == 0)
      g_names[i].written = 1;
  pthread_mutex_unlock(&g_names_lock);
  rpdw_read_comm(0, name);
  rpdw_name(pid, pid, g_w.proc_name, name);
  for (struct rpd_tbuf *b = atomic_load(&g_bufs); b; b = b->next) {
    if (atomic_load_explicit(&b->state, memory_order_acquire) != 0 || b->tid == pid) continue;
    rpdw_read_comm(b->tid, name);
    rpdw_name(b->pid, b->tid, b->name, name);
  }
}

/* One pass over all buffers; frees the buffers of exited threads once empty. */
static void rpdw_drain_all(void) {
  for (struct rpd_tbuf *b = atomic_load(&g_bufs); b; b = b->next) {
    int state = atomic_load_explicit(&b->state, memory_order_acquire);
    if (state == 2) continue;
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
  for (struct rpd_tbuf *b = atomic_load(&g_bufs); b; b = b->next) total += atomic_load(&b->dropped);
  if (total == g_w.dropped_written || g_w.failed) return;
  if (rpdw_begin() != 0) return;
  char sql[256];
  if (g_w.drop_meta_id)
    snprintf(sql, sizeof sql, "UPDATE rocpd_metadata SET value = '%llu' WHERE id = %lld",
             (unsigned long long)total, (long long)g_w.drop_meta_id);
  else
    snprintf(sql, sizeof sql,
             "INSERT INTO rocpd_metadata(tag, value) VALUES ('nano_dropped_records', '%llu')",
             (unsigned long long)total);
  if (rpdw_exec(sql, "cannot record the dropped-record count") != 0) return;
  if (!g_w.drop_meta_id) g_w.drop_meta_id = sqlite3_last_insert_rowid(g_w.db);
  g_w.dropped_written = total;
}

/* Writer connection setup: open the file, take a session, prepare. */
/* g_w.path: RPDT_FILENAME with %p expanded to this process's id. */
static void rpdw_set_path(void) {
  char *o = g_w.path, *end = g_w.path + sizeof g_w.path - 1;
  for (const char *t = g_template; *t && o < end; t++) {
    if (t[0] == '%' && t[1] == 'p') {
      o += snprintf(o, (size_t)(end - o), "%ld", (long)getpid());
      if (o > end) o = end;
      t++;
    } else {
      *o++ = *t;
    }
  }
  *o = 0;
}

/* Opens g_w.path for writing and begins this process's session (on the
 * writer thread: a file locked by another process makes it wait, never the
 * program). Returns 0 or -1 (said on stderr). */
static int rpdw_open(void) {
  char err[NANO_RPDFILE_ERRLEN];
  if (nano_rpdfile_open_write(g_w.path, g_truncate, &g_w.db, err, sizeof err) != 0) {
    rpd_log("%s", err);
    return -1;
  }
  g_truncate = 0; /* later writers (after fork) append */
  if (nano_rpdfile_begin_session(g_w.db, g_w.path, &g_w.session, err, sizeof err) != 0) {
    rpd_log("%s", err);
    sqlite3_close(g_w.db);
    g_w.db = NULL;
    return -1;
  }
  g_w.offset = nano_rpdfile_session_offset(g_w.session);
  /* Debian and others build SQLite with SQLITE_SECURE_DELETE, which zeroes
   * every freed byte and every new b-tree page (a 4 KiB memset per page split,
   * about 250 instructions per row here). The writer only appends, so there is
   * nothing to scrub. synchronous: NANO_RPD_SYNC (OFF by default: safe against
   * any death of the process, not against an OS crash); statement journals in
   * memory, not one temporary file per queue insert; SQLite's default page
   * cache (2 MB) rather than the 32 MB nano_rpdfile_open sets for the rpd
   * tools' queries: appends touch only the right edge of each B-tree, and a
   * cache that stays in the core's L2 cut the writer's CPU time by about 8 %. */
  char sync_sql[96];
  snprintf(sync_sql, sizeof sync_sql,
           "PRAGMA synchronous=%s; PRAGMA temp_store=MEMORY; PRAGMA cache_size=-2000", g_sync_mode);
  if (rpdw_exec("PRAGMA secure_delete=OFF", "cannot turn off secure_delete") != 0 ||
      rpdw_exec(sync_sql, "cannot set synchronous, temp_store and cache_size") != 0 ||
      rpdw_exec(nano_rpdfile_thread_schema_sql(), "cannot create nano_thread") != 0)
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
  if (rpdw_begin() != 0) return -1;
  g_w.id_empty = rpdw_string_id("");
  g_w.id_uempty = g_w.offset + g_w.next_ustring++;
  g_w.q->ustr[g_w.nustrq].id = g_w.id_uempty;
  g_w.q->ustr[g_w.nustrq++].s = "";
  g_w.id_usermarker = rpdw_string_id("UserMarker");
  return rpdw_commit();
}

static void rpdw_close(void) {
  char err[NANO_RPDFILE_ERRLEN];
  for (int i = 0; i < ST_COUNT; i++) sqlite3_finalize(g_w.st[i]);
  sqlite3_finalize(g_w.api_ins);
  sqlite3_finalize(g_w.api_ins_uniform);
  sqlite3_finalize(g_w.ustr_ins);
  sqlite3_finalize(g_w.api_last);
  if (g_w.db && nano_rpdfile_close(g_w.db, g_w.path, err, sizeof err) != 0) rpd_log("%s", err);
  rpdw_map_free(&g_w.strings);
  rpdw_map_free(&g_w.ips);
  free(g_w.handle_ids);
  free(g_w.pend);
  free(g_w.q);
  free(g_w.sums);
  free(g_w.sum_index);
  rpdi_stack_reset();
  memset(&g_w, 0, sizeof g_w);
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
static struct rpdw_job *g_jobs;       /* oldest first */
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
      if (!g_w.failed) j->write(g_w.db, g_w.offset, g_w.path, j->data);
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
      if (rpdw_begin() != 0) break;
      rpdw_close_stale(b, cur);
    }
  for (int i = 0; i < g_w.npend; i++) {
    struct rpdw_pending *p = &g_w.pend[i];
    if (p->epoch == cur || rpdw_begin() != 0) continue;
    rpdw_api_row(g_w.offset + (int64_t)atomic_fetch_add(&g_api_next, 1), p->pid, p->tid, p->start,
                 rpdw_time(atomic_load(&g_stop_at[p->epoch % RPD_STOP_EPOCHS])), g_w.id_usermarker, g_w.id_empty,
                 p->domain_id, p->args_id);
    g_w.pend[i--] = g_w.pend[--g_w.npend];
  }
  rpdw_write_dropped();
  rpdw_write_sums();
  if (atomics && !g_w.failed && rpdw_begin() == 0) {
    rpdi_atomics_write(g_w.db, g_w.path, g_w.offset);
    rpdi_atomics_sample(g_w.db, g_w.path, g_w.offset, rpd_clock());
  }
  rpdw_run_jobs();
  rpdw_commit();
}

static _Atomic uint32_t g_atomics_req; /* flush tickets that want atomics */

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
    if (quit) break;
  }
}

/* A writer period in ms for a rate in Hz (0: none, -1), at least 1 ms. */
static int rpdw_period_ms(double hz) {
  if (hz <= 0) return -1;
  int ms = (int)(1000.0 / hz);
  return ms < 1 ? 1 : ms;
}

/* While recording, a sample of the atomics totals every 1/NANO_RPD_ATOMICS_HZ
 * s (the counter tracks of `rpd export`), committed on its own: the records
 * stay in their buffers until a flush, as without sampling. Writer thread,
 * g_wlock held. */
static void rpdw_sample_atomics(int64_t *next) {
  int64_t now = rpd_clock();
  if (g_atomics_hz <= 0 || now < *next || !(atomic_load(&g_state) & 1) || g_w.failed) return;
  *next = now + (int64_t)(1e9 / g_atomics_hz);
  if (rpdw_begin() == 0) rpdi_atomics_sample(g_w.db, g_w.path, g_w.offset, now);
  rpdw_commit();
}

static void *rpdw_main(void *arg) {
  (void)arg;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
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
    int woken = rpdw_wait(timeout) > 0;
    pthread_mutex_lock(&g_wlock);
    uint32_t req = atomic_load(&g_flush_req);
    int quit = atomic_load(&g_writer_quit);
    int64_t now = rpd_clock();
    int due = now >= next_flush;
    if (due) next_flush = now + (int64_t)flush_ms * 1000000;
    if (req != atomic_load(&g_flush_done) || quit || due) {
      uint32_t areq = atomic_exchange(&g_atomics_req, 0);
      rpdw_flush(areq != 0 || quit);
      atomic_store(&g_flush_done, req);
      rpd_futex(&g_flush_done, FUTEX_WAKE, INT32_MAX, NULL);
    } else if (woken) {
      rpdw_drain_all();
      rpdw_run_jobs();
      rpdw_commit();
    }
    rpdw_sample_atomics(&next_sample);
    pthread_mutex_unlock(&g_wlock);
    atomic_store(&g_writer_blocked, 0); /* a whole round went through */
    if (quit) break;
  }
  return NULL;
}

/* Asks the writer for a flush and waits up to timeout_ms (-1: forever) for its
 * commit. Async-signal-safe. Returns 0 when committed, -1 otherwise (no
 * writer, the wait timed out, or the writer could not write the file). */
static int rpd_flush_wait(int timeout_ms) {
  if (!atomic_load(&g_writer_running)) return -1;
  uint32_t ticket = atomic_fetch_add(&g_flush_req, 1) + 1;
  rpd_wake_writer();
  int64_t deadline = timeout_ms < 0 ? 0 : rpd_clock() + (int64_t)timeout_ms * 1000000;
  for (;;) {
    uint32_t done = atomic_load(&g_flush_done);
    if ((int32_t)(done - ticket) >= 0) return atomic_load(&g_writer_failed) ? -1 : 0;
    struct timespec ts = {0, 100000000};
    if (timeout_ms >= 0) {
      int64_t left = deadline - rpd_clock();
      if (left <= 0) return -1;
      if (left < 100000000) ts.tv_nsec = left;
    }
    rpd_futex(&g_flush_done, FUTEX_WAIT, done, &ts);
    if (!atomic_load(&g_writer_running)) return -1;
  }
}

/* Starts the writer (file, session, thread). Called with g_ctl held. */
static int rpd_writer_start(void) {
  if (atomic_load(&g_writer_running)) return 0;
  if (g_evfd < 0) {
    g_evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (g_evfd < 0) {
      rpd_log("eventfd: %s", strerror(errno));
      return -1;
    }
  }
  rpdw_set_path(); /* rpd_status names it at once; the writer thread opens it */
  rpdi_spill_configure(g_w.path);
  /* read at each start: `python -m nanoprobe --min-duration` sets it after load */
  uint64_t min_ns = 0;
  nano_env_duration("NANO_RPD_MIN_DURATION", 0, NANO_RPDFILE_MAX_MIN_DURATION_NS, &min_ns);
  g_w.min_ns = (int64_t)min_ns;
#ifdef NANO_RPD_HAVE_TRACKER
  /* the counts go into the trace; the tracker's exit dump only when asked */
  const char *out = getenv("NANO_TRACKER_OUTPUT");
  if (!out || !*out) nano_tracker_set_exit_dump(0);
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

/* Stops the writer after a final flush (atomics included) and closes the file. */
/* After a failure: says what was lost and tries to record it in the file
 * (space may have come back; the rows already written stay readable
 * either way). */
static void rpdw_report_lost(void) {
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

static void rpd_writer_stop(void) {
  if (!atomic_load(&g_writer_running)) return;
  atomic_store(&g_writer_quit, 1);
  rpd_wake_writer();
  pthread_join(g_writer_thread, NULL);
  atomic_store(&g_writer_running, 0);
  uint64_t dropped = 0;
  for (struct rpd_tbuf *b = atomic_load(&g_bufs); b; b = b->next) dropped += atomic_load(&b->dropped);
  uint64_t locked = atomic_load(&g_lock_dropped);
  if (dropped)
    rpd_log("%s: %llu records dropped because buffers were full%s", g_w.path,
            (unsigned long long)dropped,
            g_drop ? " (NANO_RPD_DROP=1)"
            : locked ? " while the writer waited for another process's lock on the file" : "");
  if (g_w.failed && (g_w.lost_rows || g_w.lost_records)) rpdw_report_lost();
  uint64_t spilled = rpdi_spill_close();
  if (spilled)
    rpd_log("%s: the writer fell behind by more than NANO_RPD_OVERFLOW_MEMORY; up to %llu MiB "
            "of records waited in a temporary file in %s",
            g_w.path, (unsigned long long)((spilled + (1u << 20) - 1) >> 20), rpdi_spill_dir());
  /* the one line at exit that says where the records went (not under
   * `nanoprobe run`, which prints a summary of its own) */
  if (g_w.db && !g_w.failed && !g_quiet)
    rpd_log("%s: %llu rows written by pid %d", g_w.path, (unsigned long long)g_w.written_rows,
            (int)getpid());
  rpdw_close();
}

/* ---- control -------------------------------------------------------------- */

RPDI_EXPORT int rpd_set_filename(const char *path, int append) {
  if (!path || !*path) return -1;
  pthread_mutex_lock(&g_ctl);
  int ret = -1;
  if (!atomic_load(&g_writer_running) && strlen(path) < sizeof g_template) {
    strcpy(g_template, path);
    g_truncate = !append;
    ret = 0;
  }
  pthread_mutex_unlock(&g_ctl);
  return ret;
}


static void rpd_install_signals(void);

RPDI_EXPORT int rpdstart(void) {
  pthread_mutex_lock(&g_ctl);
  int ret;
  if (g_refs == 0) {
    if (rpd_writer_start() != 0) {
      pthread_mutex_unlock(&g_ctl);
      return -1;
    }
    rpd_install_signals();
    g_epoch++;
    if (g_epoch == 0 || (g_epoch << 1) == 0) g_epoch = 1;
    rpd_set_state((g_epoch << 1) | 1);
  }
  ret = ++g_refs;
  pthread_mutex_unlock(&g_ctl);
  return ret;
}

RPDI_EXPORT int rpdstop(void) {
  pthread_mutex_lock(&g_ctl);
  if (g_refs == 0) {
    pthread_mutex_unlock(&g_ctl);
    rpd_log("rpdstop() refused: recording is not started (start count is 0)");
    return -1;
  }
  int ret = --g_refs;
  if (ret == 0) rpd_mark_stopped(rpd_stamp());
  pthread_mutex_unlock(&g_ctl);
  if (ret == 0) {
    atomic_fetch_add(&g_atomics_req, 1);
    if (rpd_flush_wait(-1) != 0) return -1; /* stopped, but the rows did not reach the file */
  }
  return ret;
}

RPDI_EXPORT int rpd_status(int *count, char *path, size_t len) {
  pthread_mutex_lock(&g_ctl);
  if (count) *count = g_refs;
  if (path && len) {
    snprintf(path, len, "%s", atomic_load(&g_writer_running) ? g_w.path : "");
  }
  pthread_mutex_unlock(&g_ctl);
  return 0;
}

RPDI_EXPORT int rpdflush(void) {
  if (!atomic_load(&g_writer_running)) return 0;
  atomic_fetch_add(&g_atomics_req, 1);
  return rpd_flush_wait(-1);
}

/* ---- signals -------------------------------------------------------------- */

static const int rpd_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM, SIGINT};
#define RPD_NSIG (int)(sizeof rpd_signals / sizeof rpd_signals[0])
static struct sigaction g_old_act[RPD_NSIG];
static int g_signals_installed;

/* The handler. With the default action in place before us, the signal ends
 * the process: recording stops (open ranges end now), the writer commits
 * (bounded wait), the default action is restored and the signal re-raised (a
 * fault re-executes and faults again on return). With an application handler
 * before us, SIGTERM/SIGINT only flush (recording goes on) and faults and
 * SIGABRT go straight to that handler (a runtime may use SIGSEGV itself). */
static void rpd_signal_handler(int sig, siginfo_t *info, void *ctx) {
  int saved_errno = errno;
  int k = 0;
  while (k < RPD_NSIG && rpd_signals[k] != sig) k++;
  if (k == RPD_NSIG) return;
  struct sigaction *old = &g_old_act[k];
  int user = (old->sa_flags & SA_SIGINFO) ? old->sa_sigaction != NULL
                                          : (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN);
  int writer = atomic_load(&g_writer_running) && !pthread_equal(pthread_self(), g_writer_thread);
  if (!user) {
    if (writer) {
      rpd_mark_stopped(rpd_stamp());
      rpd_flush_wait(g_crash_wait_ms);
    }
    sigaction(sig, old, NULL);
    if ((sig != SIGSEGV && sig != SIGBUS && sig != SIGILL && sig != SIGFPE) ||
        (info && info->si_code <= 0)) {
      /* not a fault that re-executes: raise it again, unblocked */
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, sig);
      pthread_sigmask(SIG_UNBLOCK, &set, NULL);
      raise(sig);
    }
    errno = saved_errno;
    return;
  }
  if (writer && (sig == SIGTERM || sig == SIGINT)) rpd_flush_wait(g_crash_wait_ms);
  errno = saved_errno;
  if (old->sa_flags & SA_SIGINFO)
    old->sa_sigaction(sig, info, ctx);
  else
    old->sa_handler(sig);
}

static void rpd_install_signals(void) {
  if (g_signals_installed) return;
  g_signals_installed = 1;
  if (!rpd_env_bool("NANO_RPD_SIGNALS", 1)) return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = rpd_signal_handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < RPD_NSIG; i++) {
    struct sigaction old;
    if (sigaction(rpd_signals[i], NULL, &old) != 0) continue;
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) continue; /* keep ignoring */
    g_old_act[i] = old;
    if (sigaction(rpd_signals[i], &sa, NULL) != 0)
      rpd_log("cannot install the handler of signal %d: %s", rpd_signals[i], strerror(errno));
  }
}

/* ---- _exit, _Exit and quick_exit ------------------------------------------ */

/* A process that ends through _exit or _Exit (a fork child's usual way out) or
 * quick_exit runs no destructors, so the writer's last commit would not
 * happen. These keep what a fatal signal keeps: recording stops (open ranges
 * end now) and the writer commits, waiting at most NANO_RPD_CRASH_WAIT_MS, as
 * async-signal-safe as the signal path (a signal handler may call _exit).
 * _exit and _Exit are seen where this library comes before libc in symbol
 * lookup (LD_PRELOAD, or linked with -lnano_rpd); glibc's internal calls and a
 * raw exit_group system call are not. A vfork child (the parent's memory, no
 * fork handlers) is told by its pid and left alone. */
static pid_t g_tracer_pid; /* the process this tracer's state belongs to */

static void rpd_exit_flush(void) {
  if (getpid() != g_tracer_pid) return;
  if (!atomic_load(&g_writer_running) || pthread_equal(pthread_self(), g_writer_thread)) return;
  rpd_mark_stopped(rpd_stamp());
  rpd_flush_wait(g_crash_wait_ms);
}

RPDI_EXPORT void _exit(int status) {
  rpd_exit_flush();
  for (;;) syscall(SYS_exit_group, status);
}

RPDI_EXPORT void _Exit(int status) {
  rpd_exit_flush();
  for (;;) syscall(SYS_exit_group, status);
}

/* ---- fork ----------------------------------------------------------------- */

static void rpd_atfork_prepare(void) {
  pthread_mutex_lock(&g_ctl);
  pthread_mutex_lock(&g_intern_lock);
  pthread_mutex_lock(&g_wlock);
  pthread_mutex_lock(&g_names_lock);
  pthread_mutex_lock(&g_jobs_lock);
  pthread_mutex_lock(&g_pool_lock);
  rpdi_spill_atfork_prepare();
}

static void rpd_atfork_parent(void) {
  rpdi_spill_atfork_parent();
  pthread_mutex_unlock(&g_pool_lock);
  pthread_mutex_unlock(&g_jobs_lock);
  pthread_mutex_unlock(&g_names_lock);
  pthread_mutex_unlock(&g_wlock);
  pthread_mutex_unlock(&g_intern_lock);
  pthread_mutex_unlock(&g_ctl);
}

/* The child: the parent's buffers, writer and connection are not ours (the
 * connection is abandoned, never used or closed, as SQLite requires). */
static void rpd_atfork_child(void) {
  g_tracer_pid = getpid();
  pthread_mutex_init(&g_wlock, NULL);
  pthread_mutex_init(&g_names_lock, NULL);
  g_nnames = 0; /* the parent's threads, not the child's */
  pthread_mutex_init(&g_intern_lock, NULL);
  pthread_mutex_init(&g_ctl, NULL);
  pthread_mutex_init(&g_jobs_lock, NULL);
  g_jobs = NULL; /* the parent's results, written by the parent */
  g_jobs_tail = &g_jobs;
  atomic_store(&g_bufs, NULL);
  atomic_store(&g_ring_bytes, 0);
  atomic_store(&g_base_bytes, 0);
  pthread_mutex_init(&g_pool_lock, NULL);
  g_npool = 0; /* the parent's rings: left as they are, as its buffers */
  rpdi_spill_atfork_child();
  rpd_tls_set_buf(NULL);
  tls.depth = 0;
  tls.unrecorded = 0;
  pthread_setspecific(g_tls_key, NULL);
  atomic_store(&g_writer_running, 0);
  rpdi_stack_reset();
  memset(&g_w, 0, sizeof g_w);
  if (g_evfd >= 0) close(g_evfd);
  g_evfd = -1;
  if (g_refs > 0) {
    uint32_t st = atomic_load(&g_state);
    rpd_set_state(st & ~1u);
    if (rpd_writer_start() == 0) {
      g_epoch++;
      rpd_set_state((g_epoch << 1) | 1);
    } else {
      g_refs = 0;
    }
  }
}

/* ---- load and exit -------------------------------------------------------- */

__attribute__((constructor)) static void rpd_init(void) {
  if (pthread_key_create(&g_tls_key, rpd_tls_destructor) != 0)
    rpd_log("pthread_key_create failed: ranges open at a thread's exit stay open");
  if (pthread_atfork(rpd_atfork_prepare, rpd_atfork_parent, rpd_atfork_child) != 0)
    rpd_log("pthread_atfork failed: a fork child may inherit held locks");
  g_tracer_pid = getpid();
  nano_rpdfile_on_busy(rpd_writer_waits);
  if (at_quick_exit(rpd_exit_flush) != 0) rpd_log("at_quick_exit failed: quick_exit will lose records");
  const char *e = getenv("RPDT_FILENAME");
  if (e && *e) {
    if (strlen(e) < sizeof g_template)
      strcpy(g_template, e);
    else
      rpd_log("RPDT_FILENAME is too long; using %s", g_template);
  }
  nano_env_real("RPDT_AUTOFLUSH", 0, RPD_MAX_AUTOFLUSH_HZ, &g_autoflush_hz);
  nano_env_real("NANO_RPD_ATOMICS_HZ", 0, RPD_MAX_AUTOFLUSH_HZ, &g_atomics_hz);
  if (rpd_env_bool("RPDT_STACKFRAMES", 0))
    g_stack_depth = (int)rpd_env_uint("NANO_RPD_STACKDEPTH", 1, RPD_MAX_STACK_DEPTH,
                                      RPD_DEFAULT_STACK_DEPTH);
  g_drop = rpd_env_bool("NANO_RPD_DROP", 0);
  g_overflow = rpd_env_bool("NANO_RPD_OVERFLOW", 1);
  nano_env_size("NANO_RPD_OVERFLOW_MEMORY", 0, RPDI_MAX_OVERFLOW_BYTES, &g_ovf_memory_max);
  rpdi_spill_init();
  g_quiet = rpd_env_bool("NANO_RPD_QUIET", 0);
  uint64_t slots = rpd_env_uint("NANO_RPD_BUFFER", 1, RPD_MAX_SLOTS, RPD_DEFAULT_SLOTS);
  uint32_t p = RPD_MIN_SLOTS;
  while (p < slots) p <<= 1;
  g_cfg_slots = p;
  g_crash_wait_ms = (int)rpd_env_uint("NANO_RPD_CRASH_WAIT_MS", 0, RPD_MAX_CRASH_WAIT_MS,
                                      RPD_DEFAULT_CRASH_WAIT_MS);
  static const char *const syncs[] = {"off", "normal", "full", NULL};
  static const char *const sync_modes[] = {"OFF", "NORMAL", "FULL"};
  int sync;
  if (nano_env_choice("NANO_RPD_SYNC", syncs, &sync) > 0) g_sync_mode = sync_modes[sync];
  rpd_tsc_init();
  g_fast = g_tsc && g_stack_depth <= 0;
  if (rpd_env_bool("RPDT_AUTOSTART", 1)) rpdstart();
}

__attribute__((destructor)) static void rpd_fini(void) {
  /* the dispatch layer's last reports go into the trace: before the writer stops */
  nano_dispatch_fini();
  pthread_mutex_lock(&g_ctl);
  rpd_mark_stopped(rpd_stamp());
  rpd_writer_stop();
  pthread_mutex_unlock(&g_ctl);
}
