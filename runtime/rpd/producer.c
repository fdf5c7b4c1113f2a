/* producer.c: the producer side: rings, the overflow store, the recording API
 * (the tracer core, tracer.h). */
#define _GNU_SOURCE
#include "tracer.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>

#include "nano/backtrace.h"

/* ---- producer side -------------------------------------------------------- */

struct rpd_strs;
static struct nano_rpd_rec *rpd_reserve(struct rpd_tbuf **bp, uint32_t nslots,
                                        struct rpd_strs *strs, uint64_t *refs, uint64_t *blobref);
static inline void rpd_publish(struct rpd_tbuf *b, uint32_t nslots);
static inline uint32_t rpd_on(void);
static struct nano_rpd_rec *rpd_record_open(uint8_t type, uint32_t nslots, uint64_t h,
                                            const char *const *strs, int n, struct rpd_tbuf **bp);

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
static _Atomic uint64_t g_range_next = 1; /* rpdi_range_start ids            */
static _Atomic int64_t g_ring_bytes;      /* arrays of all rings in memory          */
static _Atomic int64_t g_base_bytes;      /* one ring per thread: not overflow      */
/* Drained rings kept for any thread's next (their pages are in place, which
 * costs more than the records on some machines, see rpd_seg_arrays), up to
 * RPD_POOL_MAX and within NANO_RPD_OVERFLOW_MEMORY, as whose part they count. */
#define RPD_POOL_MAX 64
static pthread_mutex_t g_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rpd_tbuf *g_pool[RPD_POOL_MAX];
static int g_npool;
/* One drained ring past the bound whose arrays wait for the writer's next
 * read-back of a spilled ring (rpd_seg_readback_arrays) instead of being
 * unmapped: in a burst that outpaces the writer each ring read back took
 * fresh pages, whose zeroing was a tenth of the writer's cycles on the
 * development VM (issue 42 part 2). Under g_pool_lock. */
static struct rpd_tbuf *g_stash;

size_t rpd_seg_bytes(const struct rpd_tbuf *b) {
  return (size_t)b->ring.nslots * sizeof(struct nano_rpd_rec) + b->asize;
}

/* Rings of at least RPD_HUGE_MIN bytes are mapped in transparent huge pages
 * of RPD_HUGE_BYTES where the kernel offers them (enabled: always or
 * madvise): a fresh ring then costs one fault per 2 MiB instead of one per
 * 4 KiB, which is what sustained tracing pays when it outpaces the writer
 * (each record in fresh memory: 56-85 ns in 4 KiB pages, 3-4 ns in huge
 * pages, on the development VM). The mapping is rounded up to whole huge
 * pages (a default ring, 1.25 MiB, takes 2 MiB). Overflow rings only
 * (rpd_seg_map_bytes). */
#define RPD_HUGE_BYTES ((size_t)2 << 20)
#define RPD_HUGE_MIN ((size_t)1 << 20)
#define RPD_THP_SETTING "/sys/kernel/mm/transparent_hugepage/enabled"

/* Whether the kernel gives transparent huge pages to a region that asks. */
static int rpd_thp(void) {
  static _Atomic int known; /* 0: not read yet, 1: yes, 2: no */
  int k = atomic_load_explicit(&known, memory_order_relaxed);
  if (!k) {
    char line[128] = "";
    FILE *f = fopen(RPD_THP_SETTING, "r");
    if (f) {
      if (!fgets(line, sizeof line, f))
        line[0] = 0;
      fclose(f);
    }
    k = strstr(line, "[always]") || strstr(line, "[madvise]") ? 1 : 2;
    atomic_store_explicit(&known, k, memory_order_relaxed);
  }
  return k == 1;
}

/* The bytes ring b's arrays take in memory (what the overflow bound counts):
 * overflow rings in huge pages; a thread's primary ring, made once and
 * reused, in small pages (a program of many threads keeps its footprint). */
static size_t rpd_seg_map_bytes(const struct rpd_tbuf *b) {
  size_t n = rpd_seg_bytes(b);
  return b->owner != b && n >= RPD_HUGE_MIN && rpd_thp()
             ? (n + RPD_HUGE_BYTES - 1) / RPD_HUGE_BYTES * RPD_HUGE_BYTES
             : n;
}

/* A mapping of n bytes (a multiple of RPD_HUGE_BYTES) aligned to a huge
 * page and advised to be one; MAP_FAILED when none can be made. */
static void *rpd_map_huge(size_t n) {
  size_t len = n + RPD_HUGE_BYTES;
  char *raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED)
    return MAP_FAILED;
  char *p = (char *)(((uintptr_t)raw + RPD_HUGE_BYTES - 1) & ~(uintptr_t)(RPD_HUGE_BYTES - 1));
  if ((p > raw && munmap(raw, (size_t)(p - raw)) != 0) ||
      (raw + len > p + n && munmap(p + n, (size_t)(raw + len - (p + n))) != 0))
    rpd_log("munmap of a ring's alignment: %s", strerror(errno)); /* kept mapped: harmless */
  if (madvise(p, n, MADV_HUGEPAGE) != 0) /* advice: small pages still work */
    rpd_log("huge pages for a ring: %s", strerror(errno));
  return p;
}

/* Allocates ring b's arrays (one mapping: slots, then the arena), with the
 * slots' pages in place: a producer that moves to a fresh ring would
 * otherwise take a page fault every 64 records, which on some virtual
 * machines costs more than the records (12 us a fault where populating costs
 * 3 us a page). The arena's pages come when texts use them (interned names,
 * the common case of NANO_ZONE and Python, use none). Returns 0, or -1 (out
 * of memory). */
int rpd_seg_arrays(struct rpd_tbuf *b) {
  size_t bytes = rpd_seg_map_bytes(b), slots = (size_t)b->ring.nslots * sizeof(struct nano_rpd_rec);
  void *p = bytes != rpd_seg_bytes(b)
                ? rpd_map_huge(bytes)
                : mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return -1;
  if (madvise(p, slots, MADV_POPULATE_WRITE) != 0) { /* before Linux 5.14: fault them now */
    for (size_t off = 0; off < slots; off += RPD_PAGE_BYTES)
      ((volatile char *)p)[off] = 0;
  }
  b->ring.slots = p;
  b->arena = (char *)p + (size_t)b->ring.nslots * sizeof(struct nano_rpd_rec);
  atomic_fetch_add(&g_ring_bytes, (int64_t)bytes);
  return 0;
}

/* A death path counts the records not yet in the trace by walking every
 * thread's rings (rpd_records_pending) while other threads run on: the
 * writer recycles drained rings, producers spill filled ones. Frees of a
 * ring's arrays or of a ring go between rpd_seg_free_begin and _end; once a
 * death path has set g_dying and seen no free in progress, none happens
 * until its count is done (what would have been freed stays), so the walk
 * never reads freed memory. Sequentially consistent: either the free sees
 * g_dying, or the death path sees it in progress and waits it out. */
static _Atomic int g_dying, g_freeing;
/* How long a death path waits for a free in progress, in polls. */
#define RPD_FREE_WAIT_POLLS 100000000
/* Rings a death path's count follows per thread at most (a thread's rings
 * form a list the producer extends while it is walked). */
#define RPD_PENDING_MAX_RINGS 1000000
/* Counts rpd_records_pending takes at most to find one no batch moved under
 * (the writer moves one every RPDW_PUBLISH_EVERY records). */
#define RPD_PENDING_TRIES 16

/* Whether a free may go ahead (then rpd_seg_free_end after it). */
static int rpd_seg_free_begin(void) {
  atomic_fetch_add(&g_freeing, 1);
  if (!atomic_load(&g_dying))
    return 1;
  atomic_fetch_sub(&g_freeing, 1);
  return 0;
}

static void rpd_seg_free_end(void) { atomic_fetch_sub(&g_freeing, 1); }

/* Unmaps ring b's arrays, if it has them (inside rpd_seg_free_begin/_end). */
static void rpd_seg_unmap(struct rpd_tbuf *b) {
  if (!b->ring.slots)
    return;
  size_t bytes = rpd_seg_map_bytes(b);
  atomic_fetch_sub(&g_ring_bytes, (int64_t)bytes);
  if (munmap(b->ring.slots, bytes) != 0)
    rpd_log("munmap of a ring: %s", strerror(errno));
  b->ring.slots = NULL;
  b->arena = NULL;
}

static void rpd_seg_free_arrays(struct rpd_tbuf *b) {
  if (rpd_seg_free_begin()) {
    rpd_seg_unmap(b);
    rpd_seg_free_end();
  }
}

void rpd_seg_release(struct rpd_tbuf *b) {
  int64_t over = atomic_load(&g_ring_bytes) - atomic_load(&g_base_bytes);
  pthread_mutex_lock(&g_pool_lock);
  if (g_npool < RPD_POOL_MAX && over <= (int64_t)g_ovf_memory_max) {
    g_pool[g_npool++] = b;
    b = NULL;
  } else if (!g_stash) {
    g_stash = b;
    b = NULL;
  }
  pthread_mutex_unlock(&g_pool_lock);
  if (b && rpd_seg_free_begin()) {
    rpd_seg_unmap(b);
    free(b);
    rpd_seg_free_end();
  }
}

/* Gives ring `from`'s arrays to ring `to`, which has none and takes arrays
 * of the same mapping size. A move, as a free, waits for no death path's
 * walk (rpd_seg_free_begin): the walk reads them as from's while they are.
 * 0, or -1 while a death path counts (nothing moved). */
static int rpd_seg_move_arrays(struct rpd_tbuf *from, struct rpd_tbuf *to) {
  if (!rpd_seg_free_begin())
    return -1;
  to->arena = from->arena;
  __atomic_store_n(&to->ring.slots, from->ring.slots, __ATOMIC_RELEASE);
  __atomic_store_n(&from->ring.slots, NULL, __ATOMIC_RELEASE);
  from->arena = NULL;
  rpd_seg_free_end();
  return 0;
}

int rpd_seg_readback_arrays(struct rpd_tbuf *s) {
  pthread_mutex_lock(&g_pool_lock);
  struct rpd_tbuf *d =
      g_stash && rpd_seg_map_bytes(g_stash) == rpd_seg_map_bytes(s) ? g_stash : NULL;
  if (d)
    g_stash = NULL;
  pthread_mutex_unlock(&g_pool_lock);
  if (!d || rpd_seg_move_arrays(d, s) != 0) /* a death path counting: d stays as it is */
    return rpd_seg_arrays(s);
  free(d);
  return 0;
}

/* Sets the room of ring b's inline path (rpd.h): half the ring past the
 * producer's view of the tail until the writer was woken for the ring, then
 * the whole ring. The inline path used to stop at half a ring always: past
 * the overflow store's memory bound, where the writer drains no ring the
 * producer fills, every record of a ring's second half then took the call
 * (9% of a sustained producer's cycles in perf, issue 42 part 2). Call it
 * whenever tail_seen or wake_sent changes. */
static inline void rpd_ring_room(struct rpd_tbuf *b) {
  b->ring.room = b->wake_sent ? b->ring.nslots : b->ring.nslots / 2;
}

/* Hands ring b to its producer: its view of the writer's tails, no wake
 * sent yet, the inline path's room. */
static void rpd_ring_take(struct rpd_tbuf *b) {
  b->ring.tail_seen = atomic_load(&b->tail);
  b->atail_seen = atomic_load(&b->atail);
  b->wake_sent = 0;
  rpd_ring_room(b);
}

/* A ring of the configured size for thread `owner`, or (NULL) a new
 * thread's primary buffer, without its arrays. NULL when out of memory. */
static struct rpd_tbuf *rpd_seg_alloc(struct rpd_tbuf *owner) {
  struct rpd_tbuf *b = calloc(1, sizeof *b);
  if (!b)
    return NULL;
  b->ring.nslots = owner ? owner->ring.nslots : g_cfg_slots;
  b->asize = b->ring.nslots * 16;
  b->owner = owner ? owner : b;
  b->pseg = b->wseg = b;
  return b;
}

/* rpd_seg_alloc with new arrays. NULL when out of memory. */
static struct rpd_tbuf *rpd_seg_new(struct rpd_tbuf *owner) {
  struct rpd_tbuf *b = rpd_seg_alloc(owner);
  if (b && rpd_seg_arrays(b) != 0) {
    free(b);
    return NULL;
  }
  return b;
}

/* Records of ring b not drained yet: those from its tail to its head in its
 * arrays (records, not slots: a record spans its nslots; one per slot
 * unless the ring is `mixed`), or, spilled, as many as it had when it was.
 * Async-signal-safe. */
static uint64_t rpd_ring_records(const struct rpd_tbuf *b) {
  const struct nano_rpd_rec *slots = __atomic_load_n(&b->ring.slots, __ATOMIC_ACQUIRE);
  if (!slots)
    return b->spill_records;
  uint64_t n = 0, head = __atomic_load_n(&b->ring.head, __ATOMIC_ACQUIRE);
  uint64_t at = atomic_load_explicit(&b->tail, memory_order_acquire);
  if (!__atomic_load_n(&b->mixed, __ATOMIC_RELAXED))
    return at < head && head - at <= b->ring.nslots ? head - at : 0;
  while (at < head && head - at <= b->ring.nslots) {
    uint8_t k = slots[at & (b->ring.nslots - 1)].nslots;
    at += k ? k : 1;
    n++;
  }
  return n;
}

/* Writes the filled ring b to the spill file, unless the writer is draining
 * it, and gives its arrays to ring `into` (which has none, and takes arrays
 * of the same size), else frees them: the producer's next ring then needs
 * no fresh pages, whose zeroing cost a spilling producer as much as the
 * spill's writes (issue 42 part 2). Returns 0 when spilled. */
static int rpd_seg_spill(struct rpd_tbuf *b, struct rpd_tbuf *into) {
  int expect = SEG_MEM;
  if (!atomic_compare_exchange_strong(&b->seg_state, &expect, SEG_SPILLING))
    return -1;
  b->spill_records = rpd_ring_records(b); /* the writer cannot drain it now */
  struct iovec v[2] = {{b->ring.slots, (size_t)b->ring.nslots * sizeof(struct nano_rpd_rec)},
                       {b->arena, b->asize}};
  /* the arena only where records left in the ring have texts there */
  int parts = atomic_load(&b->atail) == atomic_load(&b->ahead) ? 1 : 2;
  if (rpdi_spill_write(&b->owner->spill_z, v, parts, &b->spill) != 0) {
    atomic_store(&b->seg_state, SEG_MEM);
    return -1;
  }
  if (!into || rpd_seg_map_bytes(into) != rpd_seg_map_bytes(b) || rpd_seg_move_arrays(b, into) != 0)
    rpd_seg_free_arrays(b);
  atomic_store_explicit(&b->seg_state, SEG_SPILLED, memory_order_release);
  return 0;
}

/* The calling thread's ring b is full: links a fresh ring after it and makes
 * that the thread's. Returns it, or NULL when overflow is off or neither
 * memory nor the spill file has room (the caller waits or drops). */
static struct rpd_tbuf *rpd_seg_next(struct rpd_tbuf *b) {
  if (!g_overflow)
    return NULL;
  struct rpd_tbuf *t = b->owner;
  struct rpd_tbuf *n = atomic_exchange(&t->spare, NULL);
  if (!n) {
    pthread_mutex_lock(&g_pool_lock);
    if (g_npool && g_pool[g_npool - 1]->ring.nslots == b->ring.nslots)
      n = g_pool[--g_npool];
    pthread_mutex_unlock(&g_pool_lock);
    if (n)
      n->owner = t;
  }
  if (!n) {
    int64_t over = atomic_load(&g_ring_bytes) - atomic_load(&g_base_bytes);
    int spill = over + (int64_t)rpd_seg_map_bytes(b) > (int64_t)g_ovf_memory_max;
    n = rpd_seg_alloc(t);
    if (!n || (spill && rpd_seg_spill(b, n) != 0) || (!n->ring.slots && rpd_seg_arrays(n) != 0)) {
      free(n);
      return NULL;
    }
  }
  rpd_ring_take(n);
  n->mixed = 0; /* drained: none of its records is left */
  atomic_store(&n->seg_next, NULL);
  atomic_store_explicit(&b->seg_next, n, memory_order_release);
  __atomic_store_n(&t->pseg, n, __ATOMIC_RELEASE); /* the writer's bound of a pass */
  rpd_tls_set_buf(n);
  rpd_wake_writer();
  return n;
}

/* Thread exit: ranges the thread left open end now (an R_EXIT record), then
 * the buffer is handed to the writer for draining and reuse. */
void rpd_tls_destructor(void *p) {
  struct rpd_tbuf *t = p;
  if (!t)
    return;
  if (prctl(PR_GET_NAME, t->exit_name) != 0)
    t->exit_name[0] = 0;
  uint32_t epoch = rpd_on();
  if (epoch && tls.depth > 0) {
    struct rpd_tbuf *b = t->pseg;
    struct nano_rpd_rec *r = rpd_reserve(&b, 1, NULL, NULL, NULL);
    if (r) {
      nano_rpd_put_(r, R_EXIT, epoch, rpd_stamp(), 0, 0, 0, 0);
      rpd_publish(b, 1);
    }
  }
  rpd_tls_set_buf(NULL); /* a record made later in this thread's exit gets a new buffer */
  atomic_store_explicit(&t->state, 1, memory_order_release);
  rpd_altstack_drop();
}

/* The records in every live thread's rings of this process (rpd_records_pending). */
static uint64_t rpd_ring_pending(void) {
  uint64_t n = 0;
  pid_t pid = getpid();
  for (struct rpd_tbuf *t = atomic_load(&g_bufs); t; t = t->next) {
    if (t->pid != pid || atomic_load_explicit(&t->state, memory_order_acquire) == 2)
      continue;
    /* the writer's ring, then the ones its producer filled after it */
    struct rpd_tbuf *s = __atomic_load_n(&t->wseg, __ATOMIC_ACQUIRE);
    for (size_t k = 0; s && k < RPD_PENDING_MAX_RINGS; k++) {
      n += rpd_ring_records(s);
      s = atomic_load_explicit(&s->seg_next, memory_order_acquire);
    }
  }
  return n;
}

uint64_t rpd_records_pending(int *exact) {
  *exact = 0;
  atomic_store(&g_dying, 1);
  for (long i = 0; atomic_load(&g_freeing) && i < RPD_FREE_WAIT_POLLS; i++)
    ; /* a free in progress ends within microseconds */
  if (atomic_load(&g_freeing))
    return atomic_load(&g_txn_records);
  /* The writer's hands first, then the rings: a batch it moves meanwhile
   * leaves a ring uncounted and is not in the count taken before (a lower
   * bound, never a record twice); exact when the sequence did not move. */
  uint64_t n = 0;
  for (int k = 0; k < RPD_PENDING_TRIES && !*exact; k++) {
    uint64_t seq = atomic_load(&g_txn_seq);
    n = atomic_load(&g_txn_records);
    n += rpd_ring_pending();
    *exact = !(seq & 1) && atomic_load(&g_txn_seq) == seq;
  }
  atomic_store(&g_dying, 0); /* counted: rings may be freed again (a failed exec goes on) */
  return n;
}

/* Returns the calling thread's buffer, creating (or reusing) one. NULL when
 * out of memory. */
static struct rpd_tbuf *rpd_tbuf_slow(void) {
  struct rpd_tbuf *b;
  pid_t pid = getpid(), tid = (pid_t)syscall(SYS_gettid);
  for (b = atomic_load(&g_bufs); b; b = b->next) {
    int expect = 2;
    if (b->ring.nslots == g_cfg_slots && atomic_compare_exchange_strong(&b->state, &expect, 0))
      break;
  }
  if (!b) {
    b = rpd_seg_new(NULL);
    if (!b)
      return NULL;
    atomic_fetch_add(&g_base_bytes, (int64_t)rpd_seg_map_bytes(b));
    struct rpd_tbuf *head = atomic_load(&g_bufs);
    do
      b->next = head;
    while (!atomic_compare_exchange_weak(&g_bufs, &head, b));
  }
  b->pid = pid;
  b->tid = tid;
  struct rpd_tbuf *ring = b->pseg;
  rpd_ring_take(ring);
  rpd_tls_set_buf(ring);
  pthread_setspecific(g_tls_key, b);
  rpd_altstack_take(); /* a thread that records gets its death recorded too */
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
  if (off + len > asize)
    p += asize - off;
  *pos = p + len;
  return p;
}

/* Reserves nslots contiguous slots and arena room for `strs` in the calling
 * thread's ring *bp (which a full ring replaces, see "segments"), copies the
 * strings and fills refs[] (and *blobref). Returns the first slot, or NULL
 * when the record was dropped (counted). */
static struct nano_rpd_rec *rpd_reserve(struct rpd_tbuf **bp, uint32_t nslots,
                                        struct rpd_strs *strs, uint64_t *refs, uint64_t *blobref) {
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
        if (!strs->p[i])
          continue;
        if (strs->len[i] + 1 > cap)
          strs->len[i] = cap - 1;
        rpd_arena_place(&aend, strs->len[i] + 1, b->asize);
      }
      if (strs->bloblen) {
        aend = (aend + 7) & ~7ull;
        rpd_arena_place(&aend, strs->bloblen, b->asize);
      }
    }
    if (head + pad + nslots - b->ring.tail_seen <= b->ring.nslots &&
        aend - b->atail_seen <= b->asize)
      break;
    b->ring.tail_seen = atomic_load_explicit(&b->tail, memory_order_acquire);
    b->atail_seen = atomic_load_explicit(&b->atail, memory_order_acquire);
    rpd_ring_room(b);
    if (head + pad + nslots - b->ring.tail_seen <= b->ring.nslots &&
        aend - b->atail_seen <= b->asize)
      break;
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
    if (spins == 0)
      rpd_wake_writer();
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
  }
  if (pad || nslots > 1)
    b->mixed = 1;
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
  rpd_ring_room(b);
}

/* Publishes a record of nslots reserved by rpd_reserve; wakes the writer
 * when the ring is more than half full. */
static inline void rpd_publish(struct rpd_tbuf *b, uint32_t nslots) {
  uint64_t head = __atomic_load_n(&b->ring.head, __ATOMIC_RELAXED) + nslots;
  __atomic_store_n(&b->ring.head, head, __ATOMIC_RELEASE);
  if (__builtin_expect(head - b->ring.tail_seen > b->ring.nslots / 2, 0))
    rpd_publish_check(b, head);
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
  if (g_stack_depth <= 0)
    return;
  int n = nano_backtrace(ips, g_stack_depth);
  if (n > 0) {
    s->blob = ips;
    s->bloblen = (uint32_t)n * 8;
  }
}

/* User range text: see rpd.h (args NULL or "": apiName UserMarker, text=name). */
static int rpd_push_refs(uint32_t epoch, const char *domain, const char *name, const char *args,
                         const uint64_t *pre) {
  struct rpd_tbuf *b = rpd_tbuf();
  if (!b)
    return -1;
  struct rpd_strs s = {0};
  uint64_t refs[4] = {0}, stack = 0, ips[RPD_MAX_STACK_DEPTH];
  if (!pre) {
    rpd_strs_add(&s, domain);
    rpd_strs_add(&s, name);
    rpd_strs_add(&s, args);
  }
  rpd_strs_stack(&s, ips);
  struct nano_rpd_rec *r = rpd_reserve(&b, 1, (s.n || s.bloblen) ? &s : NULL, refs, &stack);
  if (!r)
    return -1;
  const uint64_t *ref = pre ? pre : refs;
  nano_rpd_put_(r, R_PUSH, epoch, rpd_stamp(), ref[0], ref[1], ref[2], stack);
  rpd_publish(b, 1);
  return 0;
}

/* Enters a range at the current depth, recorded or not (its pop matches). */
static inline void rpd_depth_push(int recorded) {
  uint32_t d = tls.depth++;
  if (!recorded && d < 64)
    tls.unrecorded |= 1ull << d;
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
      nano_rpd_put_(r, R_PUSH, epoch, rpd_stamp(), rpd_ref_interned(domain), rpd_ref_interned(name),
                    rpd_ref_interned(args), 0);
      rpd_publish(b, 1);
      tls.depth++;
      return;
    }
  }
  rpd_push_interned_slow(epoch, domain, name, args);
}

static inline void rpd_put_pop(struct rpd_tbuf *b, struct nano_rpd_rec *r, uint32_t epoch) {
  nano_rpd_put_(r, R_POP, epoch, rpd_stamp(), 0, 0, 0, 0);
  rpd_publish(b, 1);
}

/* rpdi_pop past the depth bookkeeping, when the ring seemed full or the
 * thread has no buffer yet: records the pop of depth d. */
static __attribute__((noinline)) int rpd_pop_slow(uint32_t d, uint32_t epoch) {
  struct rpd_tbuf *b = rpd_tbuf();
  struct nano_rpd_rec *r = b ? rpd_reserve(&b, 1, NULL, NULL, NULL) : NULL;
  if (r)
    rpd_put_pop(b, r, epoch);
  return (int)d;
}

int rpdi_pop(void) {
  if (tls.depth == 0)
    return -1;
  uint32_t d = --tls.depth;
  if (d < 64 && (tls.unrecorded >> d) & 1) {
    tls.unrecorded &= ~(1ull << d);
    return (int)d;
  }
  uint32_t epoch = rpd_on();
  if (!epoch)
    return (int)d;
  struct rpd_tbuf *b = rpd_tls_buf();
  if (__builtin_expect(!b, 0))
    return rpd_pop_slow(d, epoch);
  struct nano_rpd_rec *last = nano_rpd_last_push_(&b->ring, epoch);
  if (last) { /* a leaf range: one slot (rpd.h) */
    last->t1 = rpd_stamp();
    __atomic_store_n(&last->type, (uint8_t)R_RANGE, __ATOMIC_RELEASE);
    return (int)d;
  }
  uint64_t head = __atomic_load_n(&b->ring.head, __ATOMIC_RELAXED);
  if (__builtin_expect(head + 1 - b->ring.tail_seen > b->ring.nslots, 0))
    return rpd_pop_slow(d, epoch);
  rpd_put_pop(b, &b->ring.slots[head & (b->ring.nslots - 1)], epoch);
  return (int)d;
}

RPDI_EXPORT void rpd_rangePop(void) { rpdi_pop(); }

RPDI_EXPORT void rpd_mark(const char *domain, const char *name, const char *args) {
  uint32_t epoch = rpd_on();
  if (!epoch)
    return;
  struct rpd_tbuf *b = rpd_tbuf();
  if (!b)
    return;
  struct rpd_strs s = {0};
  uint64_t refs[4] = {0}, stack = 0, ips[RPD_MAX_STACK_DEPTH];
  rpd_strs_add(&s, domain);
  rpd_strs_add(&s, name);
  rpd_strs_add(&s, args);
  rpd_strs_stack(&s, ips);
  struct nano_rpd_rec *r = rpd_reserve(&b, 1, &s, refs, &stack);
  if (!r)
    return;
  nano_rpd_put_(r, R_MARK, epoch, rpd_stamp(), refs[0], refs[1], refs[2], stack);
  rpd_publish(b, 1);
}

uint64_t rpdi_range_start(const char *domain, const char *text) {
  uint64_t id = atomic_fetch_add(&g_range_next, 1);
  const char *strs[] = {domain, text};
  struct rpd_tbuf *b;
  struct nano_rpd_rec *r = rpd_record_open(R_RSTART, 1, id, strs, 2, &b);
  if (r) {
    r->t0 = rpd_stamp();
    rpd_publish(b, 1);
  }
  return id;
}

void rpdi_range_stop(uint64_t id) {
  struct rpd_tbuf *b;
  struct nano_rpd_rec *r = rpd_record_open(R_RSTOP, 1, id, NULL, 0, &b);
  if (r) {
    r->t0 = rpd_stamp();
    rpd_publish(b, 1);
  }
}

uint64_t rpdi_api_handle(void) {
  return atomic_fetch_add_explicit(&g_api_next, 1, memory_order_relaxed);
}

RPDI_EXPORT uint64_t rpd_record_api(const char *domain, const char *category, const char *apiName,
                                    const char *args, int64_t start, int64_t end) {
  return rpdi_record_api_as(0, domain, category, apiName, args, start, end);
}

uint64_t rpdi_record_api_as(uint64_t h, const char *domain, const char *category,
                            const char *apiName, const char *args, int64_t start, int64_t end) {
  uint32_t epoch = rpd_on();
  if (!epoch)
    return 0;
  struct rpd_tbuf *b = rpd_tbuf();
  if (!b)
    return 0;
  struct rpd_strs s = {0};
  uint64_t refs[4] = {0}, stack = 0, ips[RPD_MAX_STACK_DEPTH];
  rpd_strs_add(&s, domain);
  rpd_strs_add(&s, category);
  rpd_strs_add(&s, apiName);
  rpd_strs_add(&s, args);
  rpd_strs_stack(&s, ips);
  uint32_t n = s.bloblen ? 2 : 1;
  struct nano_rpd_rec *r = rpd_reserve(&b, n, &s, refs, &stack);
  if (!r)
    return 0;
  if (!h)
    h = rpdi_api_handle();
  r->type = R_API;
  r->nslots = (uint8_t)n;
  r->unused = 0;
  r->epoch = epoch;
  r->t0 = start;
  r->t1 = end;
  r->h = h;
  memcpy(r->s, refs, sizeof r->s);
  if (n == 2) {
    union rpd_ext *x = rpd_ext_put(r);
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
  if (!epoch)
    return NULL;
  struct rpd_tbuf *b = rpd_tbuf();
  if (!b)
    return NULL;
  struct rpd_strs s = {0};
  uint64_t refs[4] = {0};
  for (int i = 0; i < n; i++)
    rpd_strs_add(&s, strs[i]);
  struct nano_rpd_rec *r = rpd_reserve(&b, nslots, &s, refs, NULL);
  if (!r)
    return NULL;
  memset(r, 0, nslots * sizeof *r); /* no words of the slots' last records (rpd.h) */
  r->type = type;
  r->nslots = (uint8_t)nslots;
  r->epoch = epoch;
  r->h = h;
  for (int i = 0; i < n; i++)
    r->s[i] = refs[i];
  *bp = b;
  return r;
}

RPDI_EXPORT void rpd_record_kernelapi(uint64_t api, const struct rpd_kernel_launch *k) {
  if (!api || !k)
    return;
  const char *strs[] = {k->stream, k->kernelName};
  struct rpd_tbuf *b;
  struct nano_rpd_rec *r = rpd_record_open(R_KERNEL, 2, api, strs, 2, &b);
  if (!r)
    return;
  union rpd_ext *x = rpd_ext_put(r);
  x->kernel = (typeof(x->kernel)){{k->gridX, k->gridY, k->gridZ},
                                  {k->workgroupX, k->workgroupY, k->workgroupZ},
                                  k->groupSegmentSize,
                                  k->privateSegmentSize};
  rpd_publish(b, 2);
}

void rpdi_copy_args(uint64_t api, const void *dst, const void *src, const void *stream,
                    const struct rpd_copy *numbers) {
  char sname[32] = "", d[32], s[32];
  struct rpd_copy c = *numbers;
  if (!c.sync)
    snprintf(sname, sizeof sname, "%p", stream);
  snprintf(d, sizeof d, "%p", dst);
  snprintf(s, sizeof s, "%p", src);
  c.stream = c.sync ? NULL : sname;
  c.dst = d;
  c.src = s;
  rpd_record_copyapi(api, &c);
}

RPDI_EXPORT void rpd_record_copyapi(uint64_t api, const struct rpd_copy *c) {
  if (!api || !c)
    return;
  const char *strs[] = {c->stream, c->dst, c->src};
  struct rpd_tbuf *b;
  struct nano_rpd_rec *r = rpd_record_open(R_COPY, 2, api, strs, 3, &b);
  if (!r)
    return;
  union rpd_ext *x = rpd_ext_put(r);
  x->copy = (typeof(x->copy)){c->size,      c->width,     c->height, c->kind,
                              c->dstDevice, c->srcDevice, c->sync,   c->pinned};
  rpd_publish(b, 2);
}

RPDI_EXPORT void rpd_record_op(uint64_t api, int gpuId, int queueId, int64_t start, int64_t end,
                               const char *description, const char *opType) {
  const char *strs[] = {description, opType};
  struct rpd_tbuf *b;
  struct nano_rpd_rec *r = rpd_record_open(R_OP, 1, api, strs, 2, &b);
  if (!r)
    return;
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
  if (!r)
    return;
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
    if (g_names[i].tid == tid)
      return &g_names[i];
  return NULL;
}

RPDI_EXPORT int rpd_name_thread(int tid, const char *name) {
  if (!name || !*name)
    return -1;
  if (tid == 0)
    tid = (int)syscall(SYS_gettid);
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

int rpd_thread_named(int32_t tid) {
  pthread_mutex_lock(&g_names_lock);
  int given = rpd_tname_find(tid) != NULL;
  pthread_mutex_unlock(&g_names_lock);
  return given;
}

void rpd_given_names(int (*put)(int32_t pid, int32_t tid, const char *name), int32_t pid) {
  pthread_mutex_lock(&g_names_lock);
  for (int i = 0; i < g_nnames; i++)
    if (!g_names[i].written && put(pid, g_names[i].tid, g_names[i].name) == 0)
      g_names[i].written = 1;
  pthread_mutex_unlock(&g_names_lock);
}

/* ---- fork ----------------------------------------------------------------- */

void rpd_producer_atfork(enum rpd_fork_phase phase) {
  switch (phase) {
  case RPD_FORK_PREPARE:
    pthread_mutex_lock(&g_names_lock);
    pthread_mutex_lock(&g_pool_lock);
    break;
  case RPD_FORK_PARENT:
    pthread_mutex_unlock(&g_pool_lock);
    pthread_mutex_unlock(&g_names_lock);
    break;
  case RPD_FORK_CHILD:
    pthread_mutex_init(&g_names_lock, NULL);
    g_nnames = 0; /* the parent's threads, not the child's */
    atomic_store(&g_bufs, NULL);
    atomic_store(&g_ring_bytes, 0);
    atomic_store(&g_base_bytes, 0);
    pthread_mutex_init(&g_pool_lock, NULL);
    g_npool = 0; /* the parent's rings: left as they are, as its buffers */
    rpd_tls_set_buf(NULL);
    tls.depth = 0;
    tls.unrecorded = 0;
    pthread_setspecific(g_tls_key, NULL);
    break;
  }
}
