/*
 * rpd.h: the nanoprobe tracer's public C API (libnano_rpd.so).
 *
 * Records API calls, user ranges and marks, GPU ops and counters into one RPD
 * file (rocmProfileData's SQLite schema, version 3). The hot path (range push,
 * pop, mark, record) writes a fixed-size record into a per-thread buffer with
 * no lock; a writer thread interns strings and inserts in batches.
 *
 * Compile with -DNANO_DISABLE to turn every call of this header into nothing.
 */
#ifndef NANO_RPD_H
#define NANO_RPD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Arguments of a kernel launch and of a copy (rpd_record_kernelapi,
 * rpd_record_copyapi); defined under NANO_DISABLE too, so that code filling
 * them compiles either way. */
struct rpd_kernel_launch {
  const char *stream; /* "0x..." or NULL */
  int gridX, gridY, gridZ;
  int workgroupX, workgroupY, workgroupZ;
  int groupSegmentSize, privateSegmentSize;
  const char *kernelName;
};

struct rpd_copy {
  const char *stream;
  int64_t size, width, height;
  int kind;
  const char *dst, *src; /* "0x..." pointers as text */
  int dstDevice, srcDevice;
  int sync, pinned;
};

#ifndef NANO_DISABLE

/* ---- control ----------------------------------------------------------- */

/* Sets the trace file before recording first starts (overrides RPDT_FILENAME;
 * "%p" expands to the pid). append=0 truncates an existing file. Returns 0, or
 * -1 when the writer is already open. */
int rpd_set_filename(const char *path, int append);
/* Reference-counted start/stop: recording is on while the count is positive.
 * rpdstop() at zero is refused (returns -1 and says so on stderr). rpdstart
 * returns the new count, or -1 when the writer thread cannot start; rpdstop
 * the new count or -1. The first start starts the writer, which opens the
 * file and takes a session on its own thread (a file locked by another
 * process never makes the caller wait; one that cannot be opened is said on
 * stderr, recording stops, and the next flush or stop returns -1); a stop to 0 returns once
 * everything recorded is committed, and -1 when it could not be (the file cannot be written: disk
 * full, I/O error; recording has stopped all the same). Thread-safe, from
 * any thread. */
int rpdstart(void);
int rpdstop(void);
/* rpdstop without the wait: a stop to 0 ends recording now (same stop time)
 * and returns at once; the rows still in flight reach the file in the
 * background, by the next rpdflush or at the process's exit at the latest
 * (exit waits for them). A program's shutdown then overlaps the writing.
 * Returns the new count, or -1 at zero (refused, as rpdstop). */
int rpdstop_nowait(void);
/* Persists everything recorded so far; returns when it is committed: 0, or
 * -1 when it was not (no trace file; the file cannot be written: disk full,
 * I/O error; from then on every flush returns -1). */
int rpdflush(void);
/* Recording state (rpdremote status, bindings): stores the start count in
 * *count (recording is on while it is positive) and the trace file's path
 * after %p expansion into path[0..len) ("" while no file is chosen yet).
 * Either pointer may be NULL. Returns 0. */
int rpd_status(int *count, char *path, size_t len);

/* Names thread `tid` (an OS thread id, as gettid() and Python's
 * Thread.native_id give; 0: the calling thread) in the trace, in place of its
 * OS name: nanoprobe's table nano_thread, and rpd export's thread names
 * (tid = getpid() names the process). The name is written at the next flush,
 * stop or exit and stays with the tid. Returns 0, -1 for a NULL or empty name
 * or when out of memory. */
int rpd_name_thread(int tid, const char *name);

/* ---- user ranges and marks (domain "UserMarker" unless given) ------------ */

/* A range or mark is one rocpd_api row (a push/pop pair: push time to pop
 * time; a mark: zero duration), category "". domain NULL or "" means
 * "UserMarker". Without args (NULL or ""), the row is a plain user marker as
 * roctx writes it: apiName "UserMarker", args = name. With args, apiName =
 * name and args = args. Strings are copied: the caller may free them once the
 * call returns. */

/* Pushes a range on the calling thread; ranges nest per thread. A range still
 * open at rpdstop() (count reaching 0) ends at the stop time. */
void rpd_rangePush(const char *domain, const char *name, const char *args);
/* Pops the innermost range of the calling thread (no-op when none is open). */
void rpd_rangePop(void);
/* A zero-duration mark. */
void rpd_mark(const char *domain, const char *name, const char *args);

/* For bindings that push many ranges with few distinct strings (the Python
 * profiler): intern a string once, then push by handle. Handles are
 * process-wide, never 0, valid for the life of the process. rpd_intern may take
 * a lock; rpd_rangePushInterned does not. A handle of 0 means "" (or, for the
 * domain, "UserMarker"). */
uint32_t rpd_intern(const char *s);
void rpd_rangePushInterned(uint32_t domain, uint32_t name, uint32_t args);

/* ---- recording API for dispatch backends, bindings and tests ------------- */

/* CLOCK_MONOTONIC in nanoseconds, the time base of every record. */
int64_t rpd_now(void);

/* Records one finished API call; returns its handle (to link ops to it), or 0
 * when recording is off. */
uint64_t rpd_record_api(const char *domain, const char *category, const char *apiName,
                        const char *args, int64_t start, int64_t end);

/* Attaches kernel launch arguments to API call `api` (rocpd_kernelapi). */
void rpd_record_kernelapi(uint64_t api, const struct rpd_kernel_launch *launch);

/* Attaches copy arguments to API call `api` (rocpd_copyapi). */
void rpd_record_copyapi(uint64_t api, const struct rpd_copy *copy);

/* Records one GPU op; links it to API call `api` when non-zero (rocpd_api_ops). */
void rpd_record_op(uint64_t api, int gpuId, int queueId, int64_t start, int64_t end,
                   const char *description, const char *opType);

/* A monitor sample (rocpd_monitor): e.g. deviceType "gpu", monitorType "sclk". */
void rpd_record_monitor(const char *deviceType, int deviceId, const char *monitorType,
                        int64_t start, int64_t end, const char *value);

#if defined(__GNUC__)
/* ---- NANO_ZONE's inline path ----------------------------------------------
 * As Tracy's zones: a NANO_ZONE with a literal name writes its push and pop
 * records into the thread's ring itself (one rdtsc, a 64-byte record, a
 * release store), with no call, while the tracer stamps with the TSC, keeps
 * no stack frames and the ring has room (the library's `room`: half the
 * ring until it has woken the writer for it, then the rest); otherwise it
 * calls rpd_rangePushInterned / rpd_rangePop. A pop whose push is still the
 * thread's last record folds into the push's slot (a RANGE record: its end
 * in t1, the type stored last): a leaf range takes one slot, not two. The
 * writer leaves such a last push unread while recording goes on in its
 * epoch and the ring is the thread's current one, so the slot is never
 * changed after it was read. These declarations are libnano_rpd's own
 * layout and record types, versioned by the _v2 names: a library of
 * another layout does not link. Define NANO_RPD_NO_INLINE to always call.
 * Not an API. */
struct nano_rpd_rec { /* one ring slot */
  uint8_t type, nslots;
  uint16_t unused;
  uint32_t epoch;
  int64_t t0, t1;
  uint64_t h;
  uint64_t s[4];
};
enum { NANO_RPD_REC_PUSH = 1, NANO_RPD_REC_POP = 2, NANO_RPD_REC_RANGE = 12 };
#define NANO_RPD_REF_INTERNED (1ull << 63)
struct nano_rpd_ring { /* the head of a thread's ring, written by that thread */
  uint64_t head, tail_seen;
  struct nano_rpd_rec *slots;
  uint32_t nslots;
  /* slots past tail_seen the inline path may fill: half the ring until the
   * library woke the writer for it, then all of it (0, from a library that
   * predates it: every record takes the call) */
  uint32_t room;
};
struct nano_rpd_thread { /* a thread's state */
  struct nano_rpd_ring *ring;
  uint32_t depth;
  uint64_t unrecorded;
};
extern __thread struct nano_rpd_thread nano_rpd_thread_v2
    __attribute__((tls_model("initial-exec")));
extern uint32_t nano_rpd_fast_v2; /* epoch << 1 | 1 while the inline path may record, else 0 */
#endif

#if defined(__GNUC__)
/* The inline path reads and writes its shared words as volatile, not through
 * __atomic builtins: the same instructions (an aligned word's load or store is
 * one move; on x86-64 a release store is a plain store after a compiler
 * barrier), and the plugin, which counts every __atomic operation of a
 * program built with it, neither counts the tracer's nor calls its hook on
 * this path. */
#define NANO_RPD_LOAD_(p) (*(volatile __typeof__(*(p)) *)(p))
#define NANO_RPD_STORE_(p, v) (*(volatile __typeof__(*(p)) *)(p) = (v))
/* Writes a one-slot record of `type` and epoch `epoch` at time t0 with
 * string refs s0..s3 into slot r, every word of it (t1 and h 0): a slot
 * holds no words of the record it held before (which would cost a spilled
 * ring's code bytes, spill.c, and show a crash dump stale data). */
static inline void nano_rpd_put_(struct nano_rpd_rec *r, uint8_t type, uint32_t epoch, int64_t t0,
                                 uint64_t s0, uint64_t s1, uint64_t s2, uint64_t s3) {
  r->type = type;
  r->nslots = 1;
  r->unused = 0;
  r->epoch = epoch;
  r->t0 = t0;
  r->t1 = 0;
  r->h = 0;
  r->s[0] = s0;
  r->s[1] = s1;
  r->s[2] = s2;
  r->s[3] = s3;
}
/* The thread's last record when it is a push of epoch `epoch` written since
 * the ring was handed to the thread (the writer has not read it), else 0. */
static inline struct nano_rpd_rec *nano_rpd_last_push_(struct nano_rpd_ring *b, uint32_t epoch) {
  uint64_t h = b->head;
  struct nano_rpd_rec *r = &b->slots[(h - 1) & (b->nslots - 1)];
  return h != b->tail_seen && r->type == NANO_RPD_REC_PUSH && r->nslots == 1 && r->epoch == epoch
             ? r
             : 0;
}
#endif

#if defined(__GNUC__) && defined(__x86_64__) && !defined(NANO_RPD_NO_INLINE)
/* x86-64 (TSO): a store after a compiler barrier has release semantics. */
#define NANO_RPD_STORE_RELEASE_(p, v)                                                              \
  do {                                                                                             \
    __asm__ __volatile__("" ::: "memory");                                                         \
    NANO_RPD_STORE_(p, v);                                                                         \
  } while (0)
static inline struct nano_rpd_rec *nano_rpd_slot_(struct nano_rpd_ring *b) {
  uint64_t h = b->head;
  return h + 1 - b->tail_seen <= b->room ? &b->slots[h & (b->nslots - 1)] : 0;
}
static inline void nano_zone_push_(uint32_t name) {
  uint32_t st = NANO_RPD_LOAD_(&nano_rpd_fast_v2);
  struct nano_rpd_thread *t = &nano_rpd_thread_v2;
  struct nano_rpd_rec *r;
  if (__builtin_expect((st & 1) && t->ring && (r = nano_rpd_slot_(t->ring)), 1)) {
    nano_rpd_put_(r, NANO_RPD_REC_PUSH, st >> 1, (int64_t)__builtin_ia32_rdtsc(), 0,
                  name ? NANO_RPD_REF_INTERNED | name : 0, 0, 0);
    NANO_RPD_STORE_RELEASE_(&t->ring->head, t->ring->head + 1);
    t->depth++;
    return;
  }
  rpd_rangePushInterned(0, name, 0);
}
static inline void nano_zone_end_(int *unused) {
  uint32_t st = NANO_RPD_LOAD_(&nano_rpd_fast_v2);
  struct nano_rpd_thread *t = &nano_rpd_thread_v2;
  uint32_t d = t->depth - 1; /* a range at depth d < 64 not recorded has bit d */
  int inline_ok = (st & 1) && t->depth && (d >= 64 || !((t->unrecorded >> d) & 1)) && t->ring;
  struct nano_rpd_rec *r;
  (void)unused;
  if (__builtin_expect(inline_ok && (r = nano_rpd_last_push_(t->ring, st >> 1)), 1)) {
    r->t1 = (int64_t)__builtin_ia32_rdtsc();
    NANO_RPD_STORE_RELEASE_(&r->type, (uint8_t)NANO_RPD_REC_RANGE);
    t->depth = d;
    return;
  }
  if (__builtin_expect(inline_ok && (r = nano_rpd_slot_(t->ring)), 1)) {
    nano_rpd_put_(r, NANO_RPD_REC_POP, st >> 1, (int64_t)__builtin_ia32_rdtsc(), 0, 0, 0, 0);
    NANO_RPD_STORE_RELEASE_(&t->ring->head, t->ring->head + 1);
    t->depth = d;
    return;
  }
  rpd_rangePop();
}
#elif defined(__GNUC__)
static inline void nano_zone_push_(uint32_t name) { rpd_rangePushInterned(0, name, 0); }
static inline void nano_zone_end_(int *unused) {
  (void)unused;
  rpd_rangePop();
}
#endif

#if defined(__GNUC__)
/* NANO_ZONE("name"): a range from here to the end of the enclosing scope.
 * With a string literal the name is interned once per site (a static handle,
 * as Tracy's source locations) and every entry takes the inline path above;
 * any other name is copied at each entry, as rpd_rangePush does. */
static inline void nano_zone_begin_(uint32_t *site, const char *name) {
  uint32_t h = NANO_RPD_LOAD_(site);
  if (!h) {
    h = rpd_intern(name);
    NANO_RPD_STORE_(site, h);
  }
  nano_zone_push_(h);
}
#define NANO_ZONE_CAT2_(a, b) a##b
#define NANO_ZONE_CAT_(a, b) NANO_ZONE_CAT2_(a, b)
#define NANO_ZONE(name)                                                                            \
  static uint32_t NANO_ZONE_CAT_(nano_zone_site_, __LINE__);                                       \
  int NANO_ZONE_CAT_(nano_zone_, __LINE__) __attribute__((cleanup(nano_zone_end_), unused)) =      \
      (__builtin_constant_p(name)                                                                  \
           ? nano_zone_begin_(&NANO_ZONE_CAT_(nano_zone_site_, __LINE__), (name))                  \
           : rpd_rangePush(NULL, (name), NULL),                                                    \
       0)
#endif

#else /* NANO_DISABLE: the whole API compiles to nothing */

/* Calls whose value a program may use are static inline functions (a bare
 * `rpdstart();` is then no "statement with no effect"); calls without a value
 * are macros that consume their arguments unevaluated (sizeof), so a variable
 * used only in them is still used, and nothing of them is left in the code. */
static inline int rpd_set_filename(const char *path, int append) {
  (void)path, (void)append;
  return 0;
}
static inline int rpdstart(void) { return 0; }
static inline int rpdstop(void) { return 0; }
static inline int rpdstop_nowait(void) { return 0; }
static inline int rpdflush(void) { return 0; }
static inline int rpd_status(int *count, char *path, size_t len) {
  (void)count, (void)path, (void)len;
  return -1;
}
static inline int rpd_name_thread(int tid, const char *name) {
  (void)tid, (void)name;
  return 0;
}
static inline uint32_t rpd_intern(const char *s) {
  (void)s;
  return 0;
}
static inline int64_t rpd_now(void) { return 0; }
static inline uint64_t rpd_record_api(const char *domain, const char *category, const char *apiName,
                                      const char *args, int64_t start, int64_t end) {
  (void)domain, (void)category, (void)apiName, (void)args, (void)start, (void)end;
  return 0;
}
#define rpd_rangePush(d, n, a) ((void)sizeof(d), (void)sizeof(n), (void)sizeof(a))
#define rpd_rangePop() ((void)0)
#define rpd_mark(d, n, a) ((void)sizeof(d), (void)sizeof(n), (void)sizeof(a))
#define rpd_rangePushInterned(d, n, a) ((void)sizeof(d), (void)sizeof(n), (void)sizeof(a))
#define rpd_record_kernelapi(api, launch) ((void)sizeof(api), (void)sizeof(launch))
#define rpd_record_copyapi(api, copy) ((void)sizeof(api), (void)sizeof(copy))
#define rpd_record_op(api, g, q, s, e, d, t)                                                       \
  ((void)sizeof(api), (void)sizeof(g), (void)sizeof(q), (void)sizeof(s), (void)sizeof(e),          \
   (void)sizeof(d), (void)sizeof(t))
#define rpd_record_monitor(dt, id, mt, s, e, v)                                                    \
  ((void)sizeof(dt), (void)sizeof(id), (void)sizeof(mt), (void)sizeof(s), (void)sizeof(e),         \
   (void)sizeof(v))
#define NANO_ZONE(name) ((void)sizeof(name))

#endif /* NANO_DISABLE */

#ifdef __cplusplus
}
#endif
#endif /* NANO_RPD_H */
