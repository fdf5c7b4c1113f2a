/*
 * tracker.c: libnano_tracker.so, the counting runtime of host atomics.
 *
 * Instrumented code (the plugin, or prelude.h) calls __nano_atomic(&site)
 * before every atomic operation. Each site gets a process-wide id, 1, 2, ...
 * when it is registered: a module's whole table at once by
 * __nano_register_module (called from the module's constructor), or lazily
 * the first time an unregistered site is executed (prelude sites, and modules
 * whose constructor has not run yet).
 *
 * Design. The hot path is a few instructions with no lock and no atomic
 * read-modify-write: every thread owns an array of counters in initial-exec
 * TLS, indexed by id - 1 (so id 0, "unregistered", wraps around and fails the
 * bounds check), and bumps its own counter with a relaxed load and store,
 * which other threads may read at any time. Anything else takes the slow
 * path, under one mutex: registering the site, creating the thread's record,
 * growing its array to the number of registered sites.
 *
 * Counts are exact: a thread's counters are written only by that thread; when
 * it exits, a pthread key destructor folds them into a process-wide array;
 * events after that (later TLS destructors) are added to that array directly.
 * A reset does not write other threads' counters: it records them as the
 * thread's baseline, and every count reported is counter - baseline.
 *
 * The runtime copies what it needs of each site (strings interned), so a
 * library may be dlclose'd and the sites it had are still reported. It never
 * counts itself (it is not built with the plugin or the prelude).
 *
 * Re-entry. The program's own allocator may be instrumented (mimalloc or a
 * malloc wrapper built with the plugin), so the runtime never calls malloc:
 * its memory comes from mmap (nanot_map), and nothing it calls under its lock
 * can run the program's code. An atomic that still reaches the runtime while
 * it works on the same thread (libc calling an instrumented malloc from
 * pthread_once, say) is deferred: kept in the thread's short list and counted
 * when the runtime's work ends, never waited for. Only a burst beyond that
 * list is lost, and then counted as lost and reported at exit.
 *
 * Callers of library sites (NANO_ATOMICS_CALLERS=1). A site the pass flags
 * NANO_SITE_LIBRARY (every frame of its inlining chain is library code, as
 * libstdc++'s out-of-line functions at -O0) cannot name the user's line. In
 * this mode such a site's id is published with NANOT_CALLERS_BIT set, which
 * puts it past every thread's array, so only its events take the slow path,
 * which counts them as usual and also per distinct stack (NANOT_CALLER_DEPTH
 * return addresses, unwound by libunwind). The hot path of every other site
 * is unchanged. The tracer stores the stacks' first frames in the user's
 * files (nano_atomic_caller); each event costs an unwind and the lock.
 *
 * At exit (a destructor), when at least one site was registered and the exit
 * dump is on, the counts go to NANO_TRACKER_OUTPUT in NANO_TRACKER_FORMAT.
 * After fork() the child starts from zero: each process reports its own.
 */
#define _GNU_SOURCE /* strdup, O_CLOEXEC */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "nano/backtrace.h"
#include "nano/hash.h"
#include "nano/json.h"
#include "nano/outfile.h"
#include "nano/settings.h"
#include "nano/strtab.h"

/* Marks a module table as registered (struct nano_site_module.reserved). */
#define NANOT_REGISTERED 0x6e616e6f72656721ull

/* One live thread's counters; linked in nanot_threads while it runs. */
struct nanot_thread {
  uint64_t *counts; /* cap counters, index id - 1; written by the owner */
  uint64_t *base;   /* cap baselines set by reset; under nanot_lock;
                       counts + cap: one mapping (nanot_counters_size) */
  uint32_t cap;
  struct nanot_thread *next; /* list of live threads, under nanot_lock */
  struct nanot_thread **pprev;
};

/* Thread states (struct nanot_tls.state). */
enum { NANOT_NEW = 0, NANOT_LIVE = 1, NANOT_EXITED = 2 };

/* Events that reached the runtime while it worked on their thread, counted
 * when that work ends: a few, as only libc's own calls into an instrumented
 * allocator get there (static TLS is scarce: keep the block small). */
#define NANOT_DEFERRED 8

/* Counters of a program's own (struct nano_atomic_ctr: one per instrumented
 * executable, so one in practice) a thread keeps pointed at its array. */
#define NANOT_BOUND 2

/* Per-thread hot data: the counters and their bound, in one TLS block. */
struct nanot_tls {
  uint64_t *counts;
  uint32_t cap;
  uint8_t state;
  uint8_t busy;      /* the runtime is working on this thread: defer events */
  uint8_t ndeferred; /* entries of deferred in use */
  uint8_t nbound;    /* entries of bound in use */
  struct nano_atomic_ctr *bound[NANOT_BOUND]; /* (__nano_atomic_bind) */
  struct nanot_thread *rec;
  struct {
    struct nano_site *site;
    uint64_t n;
  } deferred[NANOT_DEFERRED];
};

static __thread struct nanot_tls nanot_tls __attribute__((tls_model("initial-exec")));

/* Points this thread's hot path, and every counter of the program's it was
 * bound to, at `counts` (cap entries; NULL and 0: every event to the slow
 * path). */
static void nanot_tls_set(uint64_t *counts, uint32_t cap) {
  nanot_tls.counts = counts;
  nanot_tls.cap = cap;
  for (unsigned i = 0; i < nanot_tls.nbound; i++) {
    nanot_tls.bound[i]->counts = counts;
    __atomic_store_n(&nanot_tls.bound[i]->cap, cap, __ATOMIC_RELAXED);
  }
}

/* Everything below is under nanot_lock. */
static pthread_mutex_t nanot_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nano_site *nanot_sites;          /* copies of the registered sites, index id - 1 */
static struct nano_site_origin *nanot_origins; /* their origins (file NULL: none), index id - 1 */
static uint64_t *nanot_folded;                 /* counts of exited threads, index id - 1 */
static uint32_t nanot_nsites;                  /* ids 1..nanot_nsites are taken */
static uint32_t nanot_sites_cap;
static struct nanot_thread *nanot_threads;
static int nanot_exit_dump = 1;
static char **nanot_string_v; /* interned strings by index (nanot_strtab) */
static uint32_t nanot_string_cap;

static struct nanot_thread *nanot_spare; /* records for new threads, from nanot_map */
static char *nanot_arena;                /* interned strings are bumped from here */
static size_t nanot_arena_left;
static uint64_t nanot_lost; /* events neither counted nor deferred (atomic) */

static pthread_key_t nanot_key;
static pthread_once_t nanot_once = PTHREAD_ONCE_INIT;
static int nanot_key_ok;

static void nanot_slow(struct nano_site *site, uint64_t n) __attribute__((noinline, cold));
static void *nanot_map(size_t bytes);
static void nanot_unmap(void *p, size_t bytes);

static const char *nanot_string_at(const void *owner, uint32_t i) {
  (void)owner;
  return nanot_string_v[i];
}
/* The interned strings' table (memory from nanot_map: no malloc). */
static struct nano_strtab nanot_strtab = {
    .str = nanot_string_at, .zalloc = nanot_map, .release = nanot_unmap};
/* Entries of the first array of interned strings (one 4 KiB page). */
#define NANOT_STRINGS_FIRST 512u

/* Set in a published id (struct nano_site.id of the program's table) of a
 * library site whose callers are counted: no thread's array reaches it, so
 * its events take the slow path. Ids stay below it. */
#define NANOT_CALLERS_BIT 0x80000000u
/* Return addresses kept per stack: libstdc++'s chains at -O0 are about six
 * library frames deep (shared_ptr's release), well inside this. */
#define NANOT_CALLER_DEPTH 16
/* Distinct stacks kept (each 144 bytes); the events of stacks beyond are
 * counted under depth 0, "stack not kept". */
#define NANOT_CALLERS_MAX (1u << 16)

/* One distinct stack of a library site and its count; site 0: a free slot. */
struct nanot_caller {
  uint32_t site;
  uint32_t depth; /* return addresses in ips; 0: not kept */
  uint64_t count;
  uint64_t ips[NANOT_CALLER_DEPTH];
};

/* Under nanot_lock: open addressing, power of 2, at most half full. */
static struct nanot_caller *nanot_callers;
static uint32_t nanot_callers_cap, nanot_callers_used;
static int nanot_callers_mode = -1; /* NANO_ATOMICS_CALLERS, read on first use */

/* Memory of the runtime's own: zeroed pages from mmap, NULL when there are
 * none (see "Re-entry" above for why not malloc). */
static void *nanot_map(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static void nanot_unmap(void *p, size_t bytes) {
  if (p != NULL && bytes != 0 && munmap(p, bytes) != 0)
    nanot_warn("munmap of %zu bytes failed: %s", bytes, strerror(errno));
}

/* Starts work of the runtime on this thread; returns what nanot_leave
 * restores. Events of this thread that reach the runtime meanwhile are
 * deferred. */
static int nanot_enter(void) {
  int busy = nanot_tls.busy;
  nanot_tls.busy = 1;
  return busy;
}

/* Ends the work nanot_enter started and, at the outermost level, counts the
 * events deferred meanwhile. Call it with nanot_lock released. */
static void nanot_leave(int busy) {
  nanot_tls.busy = (uint8_t)busy;
  while (!busy && nanot_tls.ndeferred) {
    unsigned i = --nanot_tls.ndeferred;
    nanot_slow(nanot_tls.deferred[i].site, nanot_tls.deferred[i].n);
  }
}

/* Keeps an event that reached the runtime during its own work. */
static void nanot_defer(struct nano_site *site, uint64_t n) {
  for (unsigned i = 0; i < nanot_tls.ndeferred; i++)
    if (nanot_tls.deferred[i].site == site) {
      nanot_tls.deferred[i].n += n;
      return;
    }
  if (nanot_tls.ndeferred == NANOT_DEFERRED) {
    __atomic_fetch_add(&nanot_lost, n, __ATOMIC_RELAXED);
    return;
  }
  nanot_tls.deferred[nanot_tls.ndeferred].site = site;
  nanot_tls.deferred[nanot_tls.ndeferred].n = n;
  nanot_tls.ndeferred++;
}

/*
 * The hook. Increments the calling thread's counter of `site`; goes to the
 * slow path when the site is unregistered or beyond the thread's array.
 */
NANO_API void __nano_atomic(struct nano_site *site) {
  uint32_t idx = __atomic_load_n(&site->id, __ATOMIC_RELAXED) - 1u;
  if (__builtin_expect(idx < nanot_tls.cap, 1)) {
    uint64_t *c = nanot_tls.counts + idx;
    __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
    return;
  }
  nanot_slow(site, 1);
}

/*
 * The slow path of a program that counts inline (nano/atomics.h): counts
 * the event, then points ctr, the program's counter of this thread, at the
 * thread's array (bound once; a thread keeps NANOT_BOUND of them, a counter
 * beyond stays at cap 0 and its events come here, still counted).
 */
NANO_API void __nano_atomic_bind(struct nano_site *site, struct nano_atomic_ctr *ctr) {
  __nano_atomic(site);
  unsigned i = 0;
  while (i < nanot_tls.nbound && nanot_tls.bound[i] != ctr)
    i++;
  if (i == nanot_tls.nbound) {
    if (i == NANOT_BOUND)
      return;
    nanot_tls.bound[nanot_tls.nbound++] = ctr;
  }
  nanot_tls_set(nanot_tls.counts, nanot_tls.cap);
}

NANO_API void __nano_atomic_n(struct nano_site *site, uint64_t n) {
  uint32_t idx = __atomic_load_n(&site->id, __ATOMIC_RELAXED) - 1u;
  if (__builtin_expect(idx < nanot_tls.cap, 1)) {
    uint64_t *c = nanot_tls.counts + idx;
    __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
    return;
  }
  if (n != 0)
    nanot_slow(site, n);
}

/* The strings' pages: a chunk serves many short strings; a longer string
 * gets pages of its own. */
#define NANOT_ARENA_CHUNK (64u << 10)

/* A copy of s that lives as long as the process, or NULL when out of
 * memory. Caller holds nanot_lock. */
static char *nanot_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  if (n > nanot_arena_left) {
    char *p = nanot_map(n > NANOT_ARENA_CHUNK ? n : NANOT_ARENA_CHUNK);
    if (p == NULL)
      return NULL;
    if (n >= NANOT_ARENA_CHUNK)
      return memcpy(p, s, n);
    nanot_arena = p;
    nanot_arena_left = NANOT_ARENA_CHUNK;
  }
  char *copy = memcpy(nanot_arena, s, n);
  nanot_arena += n;
  nanot_arena_left -= n;
  return copy;
}

/* Returns the interned copy of s (never NULL: "" when out of memory or s is
 * NULL). Caller holds nanot_lock. */
static const char *nanot_intern(const char *s) {
  if (s == NULL || s[0] == '\0')
    return "";
  uint32_t i = nano_strtab_find(&nanot_strtab, s);
  if (i != NANO_STRTAB_NONE)
    return nanot_string_v[i];
  if (nanot_strtab.n == nanot_string_cap) {
    uint32_t cap = nanot_string_cap ? 2 * nanot_string_cap : NANOT_STRINGS_FIRST;
    char **v = nanot_map((size_t)cap * sizeof *v);
    if (v == NULL)
      return "";
    if (nanot_string_cap)
      memcpy(v, nanot_string_v, (size_t)nanot_string_cap * sizeof *v);
    nanot_unmap(nanot_string_v, (size_t)nanot_string_cap * sizeof *v);
    nanot_string_v = v;
    nanot_string_cap = cap;
  }
  char *copy = nanot_strdup(s);
  if (copy == NULL)
    return "";
  nanot_string_v[nanot_strtab.n] = copy; /* the arena keeps it if the add fails */
  return nano_strtab_add(&nanot_strtab, copy) != NANO_STRTAB_NONE ? copy : "";
}

/* Makes room for `more` further sites in nanot_sites and nanot_folded.
 * Returns 0, or -1 when out of memory. Caller holds nanot_lock. */
static int nanot_reserve_sites(uint32_t more) {
  if (more > NANOT_CALLERS_BIT - 1 - nanot_nsites)
    return -1;
  uint32_t need = nanot_nsites + more;
  if (need <= nanot_sites_cap)
    return 0;
  uint32_t ncap = nanot_sites_cap ? nanot_sites_cap : 256;
  while (ncap < need)
    ncap = ncap > UINT32_MAX / 2 ? need : 2 * ncap;
  struct nano_site *s = nanot_map((size_t)ncap * sizeof *s);
  struct nano_site_origin *o = nanot_map((size_t)ncap * sizeof *o);
  uint64_t *f = nanot_map((size_t)ncap * sizeof *f);
  if (s == NULL || o == NULL || f == NULL) {
    nanot_unmap(s, (size_t)ncap * sizeof *s);
    nanot_unmap(o, (size_t)ncap * sizeof *o);
    nanot_unmap(f, (size_t)ncap * sizeof *f);
    return -1;
  }
  if (nanot_nsites) {
    memcpy(s, nanot_sites, (size_t)nanot_nsites * sizeof *s);
    memcpy(o, nanot_origins, (size_t)nanot_nsites * sizeof *o);
    memcpy(f, nanot_folded, (size_t)nanot_nsites * sizeof *f);
  }
  nanot_unmap(nanot_sites, (size_t)nanot_sites_cap * sizeof *s);
  nanot_unmap(nanot_origins, (size_t)nanot_sites_cap * sizeof *o);
  nanot_unmap(nanot_folded, (size_t)nanot_sites_cap * sizeof *f);
  nanot_sites = s;
  nanot_origins = o;
  nanot_folded = f;
  nanot_sites_cap = ncap;
  return 0;
}

/* Whether NANO_ATOMICS_CALLERS=1 asks for the callers of library sites
 * (read once). Caller holds nanot_lock. */
static int nanot_callers_on(void) {
  if (nanot_callers_mode < 0) {
    int on = 0;
    nano_env_bool("NANO_ATOMICS_CALLERS", &on);
    nanot_callers_mode = on;
  }
  return nanot_callers_mode;
}

/* The slot of stack (site, ips[depth]) in a table of cap slots: its own, or
 * the free one where it goes. */
static struct nanot_caller *nanot_caller_slot(struct nanot_caller *table, uint32_t cap,
                                              uint32_t site, const uint64_t *ips, uint32_t depth) {
  uint64_t h = nano_fnv64(NANO_FNV64_OFFSET, &site, sizeof site);
  h = nano_fnv64(h, ips, depth * sizeof *ips);
  for (uint32_t j = (uint32_t)h & (cap - 1);; j = (j + 1) & (cap - 1)) {
    struct nanot_caller *c = &table[j];
    if (c->site == 0 ||
        (c->site == site && c->depth == depth && memcmp(c->ips, ips, depth * sizeof *ips) == 0))
      return c;
  }
}

/* Counts n events of library site id with stack ips[depth]. Past
 * NANOT_CALLERS_MAX stacks (or out of memory) the events go to the site's
 * depth-0 entry; only when even that finds no slot are they left to the
 * site's own count. Caller holds nanot_lock. */
static void nanot_caller_add(uint32_t id, const uint64_t *ips, uint32_t depth, uint64_t n) {
  if (2 * (nanot_callers_used + 1) > nanot_callers_cap &&
      nanot_callers_cap < 2 * NANOT_CALLERS_MAX) {
    uint32_t ncap = nanot_callers_cap ? 2 * nanot_callers_cap : 256;
    struct nanot_caller *t = nanot_map((size_t)ncap * sizeof *t);
    if (t != NULL) {
      for (uint32_t i = 0; i < nanot_callers_cap; i++) {
        struct nanot_caller *c = &nanot_callers[i];
        if (c->site != 0)
          *nanot_caller_slot(t, ncap, c->site, c->ips, c->depth) = *c;
      }
      nanot_unmap(nanot_callers, (size_t)nanot_callers_cap * sizeof *t);
      nanot_callers = t;
      nanot_callers_cap = ncap;
    }
  }
  if (nanot_callers_cap == 0)
    return;
  struct nanot_caller *c = nanot_caller_slot(nanot_callers, nanot_callers_cap, id, ips, depth);
  if (c->site == 0 && 2 * (nanot_callers_used + 1) > nanot_callers_cap && depth != 0)
    c = nanot_caller_slot(nanot_callers, nanot_callers_cap, id, ips, depth = 0); /* full */
  if (c->site == 0) {
    if (nanot_callers_used + 2 > nanot_callers_cap)
      return; /* a probe must always meet a free slot */
    c->site = id;
    c->depth = depth;
    memcpy(c->ips, ips, depth * sizeof *ips);
    nanot_callers_used++;
  }
  c->count += n;
}

/* Gives `site` the next id and keeps a copy of it and of its origin (NULL:
 * none). Room must be reserved. Caller holds nanot_lock. */
static void nanot_add_site(struct nano_site *site, const struct nano_site_origin *origin) {
  struct nano_site *copy = &nanot_sites[nanot_nsites];
  *copy = *site;
  if (origin != NULL && origin->file != NULL) {
    struct nano_site_origin *o = &nanot_origins[nanot_nsites];
    o->function = nanot_intern(origin->function);
    o->file = nanot_intern(origin->file);
    o->line = origin->line;
    o->column = origin->column;
  }
  copy->id = ++nanot_nsites;
  copy->function = nanot_intern(site->function);
  copy->file = nanot_intern(site->file);
  copy->module = NULL; /* the table may be unloaded (dlclose); the copy outlives it */
  uint32_t published = copy->id;
  if ((site->flags & NANO_SITE_LIBRARY) && nanot_callers_on())
    published |= NANOT_CALLERS_BIT;
  __atomic_store_n(&site->id, published, __ATOMIC_RELEASE);
}

/* The oldest site-table ABI this runtime reads (1: no origins). */
#define NANOT_OLDEST_ABI 1u

/* Registers every unregistered site of module `m`, once. Returns 0, or -1
 * (with a warning) for a wrong ABI or no memory. Caller holds nanot_lock. */
static int nanot_register_module_locked(struct nano_site_module *m) {
  if (m->abi < NANOT_OLDEST_ABI || m->abi > NANO_SITE_ABI) {
    if (m->reserved != NANOT_REGISTERED)
      nanot_warn(
          "site table of '%s' has ABI %u, this runtime reads %u; its atomics are not counted",
          m->name ? m->name : "?", m->abi, NANO_SITE_ABI);
    m->reserved = NANOT_REGISTERED; /* warned once */
    return -1;
  }
  if (m->reserved == NANOT_REGISTERED)
    return 0;
  if (nanot_reserve_sites(m->count) != 0) {
    nanot_warn("out of memory registering %u sites of '%s'", m->count, m->name ? m->name : "?");
    return -1;
  }
  /* an ABI 1 table ends before `origins` */
  const struct nano_site_origin *origins = m->abi >= 2 ? m->origins : NULL;
  for (uint32_t i = 0; i < m->count; i++)
    if (m->sites[i].id == 0)
      nanot_add_site(&m->sites[i], origins ? &origins[i] : NULL);
  m->reserved = NANOT_REGISTERED;
  return 0;
}

NANO_API void __nano_register_module(struct nano_site_module *module) {
  if (module == NULL)
    return;
  int busy = nanot_enter();
  if (pthread_mutex_lock(&nanot_lock) == 0) {
    nanot_register_module_locked(module);
    pthread_mutex_unlock(&nanot_lock);
  }
  nanot_leave(busy);
}

/* A thread's counters grow by this many (counters and baselines of 256
 * sites fill one 4 KiB page). */
#define NANOT_GROW_STEP 256u

/* Bytes of the mapping of a thread's cap counters followed by its cap
 * baselines. */
static size_t nanot_counters_size(uint32_t cap) { return 2 * (size_t)cap * sizeof(uint64_t); }

/* Thread records: carved from pages and kept with their counters when the
 * thread exits, for the next thread: a program that starts a thread per
 * task maps nothing (munmap costs a TLB shootdown on every core: 100 us per
 * thread were measured). Memory follows the peak of live threads. Caller
 * holds nanot_lock. */
static struct nanot_thread *nanot_rec_new(void) {
  if (nanot_spare == NULL) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    struct nanot_thread *r = nanot_map(page);
    if (r == NULL)
      return NULL;
    for (size_t i = 0; i < page / sizeof *r; i++) {
      r[i].next = nanot_spare;
      nanot_spare = &r[i];
    }
  }
  struct nanot_thread *rec = nanot_spare;
  nanot_spare = rec->next;
  if (rec->cap)
    memset(rec->counts, 0, nanot_counters_size(rec->cap));
  rec->next = NULL;
  rec->pprev = NULL;
  return rec;
}

/* Keeps rec and its counters for the next thread. Caller holds nanot_lock;
 * rec is off the list of live threads. */
static void nanot_rec_free(struct nanot_thread *rec) {
  rec->next = nanot_spare;
  nanot_spare = rec;
}

/* Folds an exiting thread's counters into nanot_folded (key destructor). */
static void nanot_thread_exit(void *arg) {
  struct nanot_thread *rec = arg;
  int busy = nanot_enter();
  if (pthread_mutex_lock(&nanot_lock) == 0) {
    for (uint32_t i = 0; i < rec->cap; i++)
      nanot_folded[i] += __atomic_load_n(&rec->counts[i], __ATOMIC_RELAXED) - rec->base[i];
    *rec->pprev = rec->next;
    if (rec->next)
      rec->next->pprev = rec->pprev;
    nanot_tls_set(NULL, 0);
    nanot_tls.rec = NULL;
    nanot_tls.state = NANOT_EXITED;
    nanot_rec_free(rec);
    pthread_mutex_unlock(&nanot_lock);
  }
  nanot_leave(busy);
}

/* fork(): hold the lock across it, so the child's copy is consistent; the
 * other fork handlers that run meanwhile (an instrumented allocator's) have
 * their events deferred. nanot_fork_busy is the forking thread's. */
static int nanot_fork_busy, nanot_fork_locked;

static void nanot_atfork_prepare(void) {
  int busy = nanot_enter();
  int locked = pthread_mutex_lock(&nanot_lock) == 0;
  nanot_fork_busy = busy;
  nanot_fork_locked = locked;
}

static void nanot_atfork_parent(void) {
  int busy = nanot_fork_busy;
  if (nanot_fork_locked)
    pthread_mutex_unlock(&nanot_lock);
  nanot_leave(busy);
}

/* In the child only the forking thread exists: drop the other threads'
 * records and start every count from zero. */
static void nanot_atfork_child(void) {
  struct nanot_thread *self = nanot_tls.rec;
  for (struct nanot_thread *t = nanot_threads, *next; t != NULL; t = next) {
    next = t->next;
    if (t != self)
      nanot_rec_free(t);
  }
  nanot_threads = self;
  if (self != NULL) {
    self->next = NULL;
    self->pprev = &nanot_threads;
    for (uint32_t i = 0; i < self->cap; i++)
      self->base[i] = self->counts[i];
  }
  if (nanot_nsites)
    memset(nanot_folded, 0, (size_t)nanot_nsites * sizeof *nanot_folded);
  for (uint32_t i = 0; i < nanot_callers_cap; i++)
    nanot_callers[i].count = 0;
  __atomic_store_n(&nanot_lost, 0, __ATOMIC_RELAXED);
  nanot_tls.ndeferred = 0; /* the parent's, counted there */
  int busy = nanot_fork_busy;
  if (nanot_fork_locked)
    pthread_mutex_unlock(&nanot_lock);
  nanot_leave(busy);
}

static void nanot_init_once(void) {
  nanot_key_ok = pthread_key_create(&nanot_key, nanot_thread_exit) == 0;
  if (!nanot_key_ok)
    nanot_warn("pthread_key_create failed: counts of exiting threads are lost");
  if (pthread_atfork(nanot_atfork_prepare, nanot_atfork_parent, nanot_atfork_child) != 0)
    nanot_warn("pthread_atfork failed: a forked child reports its parent's counts too");
}

/* nanot_lock is a leaf: any code may reach the tracker while it holds a lock
 * of its own (an instrumented allocator called by SQLite under the tracer's
 * writer lock), so at fork it must be taken after every other lock. Fork
 * handlers prepare in the reverse order of their registration: the tracker
 * registers its own at load, before any library that depends on it (the
 * tracer, nanoprobe's Python module) registers its own in a constructor that
 * runs after this one, and before the program's main. Registered at the first
 * event instead, as before, they could come after the tracer's, and a fork
 * deadlocked against the tracer's writer (the forking thread holding
 * nanot_lock and waiting for the writer lock, the writer waiting for
 * nanot_lock in malloc). */
__attribute__((constructor)) static void nanot_at_load(void) {
  int err = pthread_once(&nanot_once, nanot_init_once);
  if (err != 0)
    nanot_warn("pthread_once failed (%s): fork handlers registered at the first event",
               strerror(err));
}

/* Grows the calling thread's arrays to nanot_nsites counters (at least
 * `need`): counters and baselines in one mapping. Returns 0, or -1 when out
 * of memory. Caller holds nanot_lock, so no reader sees the arrays while
 * they move. */
static int nanot_grow(struct nanot_thread *rec, uint32_t need) {
  uint32_t ncap = nanot_nsites > need ? nanot_nsites : need;
  if (ncap <= UINT32_MAX - NANOT_GROW_STEP)
    ncap = (ncap + NANOT_GROW_STEP - 1) / NANOT_GROW_STEP * NANOT_GROW_STEP;
  uint64_t *c = nanot_map(nanot_counters_size(ncap));
  if (c == NULL)
    return -1;
  uint64_t *b = c + ncap;
  if (rec->cap) {
    memcpy(c, rec->counts, (size_t)rec->cap * sizeof *c);
    memcpy(b, rec->base, (size_t)rec->cap * sizeof *b);
  }
  nanot_unmap(rec->counts, nanot_counters_size(rec->cap));
  rec->counts = c;
  rec->base = b;
  rec->cap = ncap;
  nanot_tls_set(c, ncap);
  return 0;
}

/*
 * Counts n events of `site`, doing what the hot path does not: registers
 * the site, creates the thread's record, grows its arrays, counts events
 * after the thread's destructor ran. Defers the event when the runtime is
 * busy on this thread; drops it when out of memory.
 */
static void nanot_slow(struct nano_site *site, uint64_t n) {
  if (nanot_tls.busy) {
    nanot_defer(site, n);
    return;
  }
  nanot_enter();
  /* a library site whose callers are counted: unwind before the lock */
  uint64_t ips[NANOT_CALLER_DEPTH];
  int depth = -1;
  if (__atomic_load_n(&site->id, __ATOMIC_RELAXED) & NANOT_CALLERS_BIT)
    depth = nano_backtrace(ips, NANOT_CALLER_DEPTH);
  int err = pthread_once(&nanot_once, nanot_init_once);
  if (err != 0 || pthread_mutex_lock(&nanot_lock) != 0) {
    __atomic_fetch_add(&nanot_lost, n, __ATOMIC_RELAXED);
    nanot_leave(0);
    return;
  }
  struct nanot_thread *born = NULL; /* this thread's new record */
  uint64_t lost = n;                /* until counted */
  uint32_t id = site->id;
  if (id == 0) {
    if (site->module != NULL) {
      if (nanot_register_module_locked(site->module) != 0)
        goto out;
    } else if (nanot_reserve_sites(1) == 0) {
      nanot_add_site(site, NULL);
    }
    id = site->id;
  }
  if (id & NANOT_CALLERS_BIT) {
    id &= ~NANOT_CALLERS_BIT;
    if (id != 0 && id <= nanot_nsites)
      nanot_caller_add(id, ips, depth > 0 ? (uint32_t)depth : 0, n);
  }
  if (id == 0 || id > nanot_nsites)
    goto out; /* out of memory, or a site id this runtime did not give */
  if (nanot_tls.state == NANOT_EXITED) {
    nanot_folded[id - 1] += n;
    lost = 0;
    goto out;
  }
  if (nanot_tls.state == NANOT_NEW) {
    struct nanot_thread *rec = nanot_rec_new();
    if (rec == NULL)
      goto out;
    rec->next = nanot_threads;
    rec->pprev = &nanot_threads;
    if (nanot_threads)
      nanot_threads->pprev = &rec->next;
    nanot_threads = rec;
    nanot_tls.rec = rec;
    nanot_tls_set(rec->counts, rec->cap);
    nanot_tls.state = NANOT_LIVE;
    born = rec;
  }
  struct nanot_thread *rec = nanot_tls.rec;
  if (id > rec->cap && nanot_grow(rec, id) != 0)
    goto out;
  rec->counts[id - 1] += n;
  lost = 0;
out:
  pthread_mutex_unlock(&nanot_lock);
  if (lost)
    __atomic_fetch_add(&nanot_lost, lost, __ATOMIC_RELAXED);
  /* outside the lock: glibc allocates the slots of keys past the first 32 */
  if (born && nanot_key_ok && pthread_setspecific(nanot_key, born) != 0)
    nanot_warn("pthread_setspecific failed: this thread's counts are lost when it exits");
  nanot_leave(0);
}

/* The total count of site id (1-based) over exited and live threads.
 * Caller holds nanot_lock. */
static uint64_t nanot_total_locked(uint32_t id) {
  uint64_t n = nanot_folded[id - 1];
  for (struct nanot_thread *t = nanot_threads; t != NULL; t = t->next)
    if (id <= t->cap)
      n += __atomic_load_n(&t->counts[id - 1], __ATOMIC_RELAXED) - t->base[id - 1];
  return n;
}

/* One site, its origin and its count, as reported. */
struct nanot_entry {
  struct nano_site site;
  struct nano_site_origin origin;
  uint64_t count;
};

/* Copies every registered site with its total count into a new array (the
 * caller releases it with nanot_unmap(e, *n * sizeof *e)) and sets *n.
 * Returns NULL with *n = 0 when there is none or memory is short (errno
 * ENOMEM). */
static struct nanot_entry *nanot_snapshot(uint32_t *n) {
  *n = 0;
  int busy = nanot_enter();
  struct nanot_entry *e = NULL;
  if (pthread_mutex_lock(&nanot_lock) != 0)
    goto out;
  if (nanot_nsites > 0) {
    e = nanot_map((size_t)nanot_nsites * sizeof *e);
    if (e != NULL) {
      for (uint32_t i = 0; i < nanot_nsites; i++) {
        e[i].site = nanot_sites[i];
        e[i].origin = nanot_origins[i];
        e[i].count = nanot_total_locked(i + 1);
      }
      *n = nanot_nsites;
    } else {
      errno = ENOMEM;
    }
  }
  pthread_mutex_unlock(&nanot_lock);
out:
  nanot_leave(busy);
  return e;
}

NANO_API void nano_tracker_reset(void) {
  int busy = nanot_enter();
  if (pthread_mutex_lock(&nanot_lock) == 0) {
    if (nanot_nsites)
      memset(nanot_folded, 0, (size_t)nanot_nsites * sizeof *nanot_folded);
    for (struct nanot_thread *t = nanot_threads; t != NULL; t = t->next)
      for (uint32_t i = 0; i < t->cap; i++)
        t->base[i] = __atomic_load_n(&t->counts[i], __ATOMIC_RELAXED);
    for (uint32_t i = 0; i < nanot_callers_cap; i++)
      nanot_callers[i].count = 0;
    pthread_mutex_unlock(&nanot_lock);
  }
  nanot_leave(busy);
}

NANO_API uint64_t nano_tracker_count(const char *kind_name) {
  int kind = nano_kind_from_name(kind_name);
  if (kind < 0)
    return 0;
  uint64_t n = 0;
  int busy = nanot_enter();
  if (pthread_mutex_lock(&nanot_lock) == 0) {
    for (uint32_t i = 0; i < nanot_nsites; i++)
      if (nanot_sites[i].kind == (unsigned)kind)
        n += nanot_total_locked(i + 1);
    pthread_mutex_unlock(&nanot_lock);
  }
  nanot_leave(busy);
  return n;
}

NANO_API int nano_tracker_foreach_site(nano_site_visitor visit, void *arg) {
  uint32_t n;
  struct nanot_entry *e = nanot_snapshot(&n);
  int rc = 0;
  for (uint32_t i = 0; i < n && rc == 0; i++)
    rc = visit(&e[i].site, e[i].count, arg);
  nanot_unmap(e, (size_t)n * sizeof *e);
  return rc;
}

NANO_API int nano_tracker_site_origin(uint32_t id, struct nano_site_origin *out) {
  int found = 0;
  int busy = nanot_enter();
  if (pthread_mutex_lock(&nanot_lock) == 0) {
    if (id >= 1 && id <= nanot_nsites && nanot_origins[id - 1].file != NULL) {
      *out = nanot_origins[id - 1];
      found = 1;
    }
    pthread_mutex_unlock(&nanot_lock);
  }
  nanot_leave(busy);
  return found;
}

NANO_API int nano_tracker_foreach_caller(nano_caller_visitor visit, void *arg) {
  int busy = nanot_enter();
  struct nanot_caller *copy = NULL;
  uint32_t n = 0;
  size_t bytes = 0; /* of copy: the table may grow once the lock is released */
  if (pthread_mutex_lock(&nanot_lock) == 0) {
    bytes = (size_t)nanot_callers_used * sizeof *copy;
    if (bytes > 0 && (copy = nanot_map(bytes)) != NULL)
      for (uint32_t i = 0; i < nanot_callers_cap; i++)
        if (nanot_callers[i].site != 0 && nanot_callers[i].count != 0)
          copy[n++] = nanot_callers[i];
    pthread_mutex_unlock(&nanot_lock);
  }
  nanot_leave(busy);
  int rc = 0;
  for (uint32_t i = 0; i < n && rc == 0; i++)
    rc = visit(copy[i].site, copy[i].ips, copy[i].depth, copy[i].count, arg);
  nanot_unmap(copy, bytes);
  return rc;
}

NANO_API void nano_tracker_set_exit_dump(int enabled) {
  __atomic_store_n(&nanot_exit_dump, enabled != 0, __ATOMIC_RELAXED);
}

/* A source position as reports order it: file, line, column, function. */
struct nanot_pos {
  const char *file;
  uint32_t line, column;
  const char *function;
};

static int nanot_pos_cmp(struct nanot_pos x, struct nanot_pos y) {
  int c = strcmp(x.file, y.file);
  if (c)
    return c;
  if (x.line != y.line)
    return x.line < y.line ? -1 : 1;
  if (x.column != y.column)
    return x.column < y.column ? -1 : 1;
  return strcmp(x.function, y.function);
}

/* Orders origins: none first, then by position. */
static int nanot_origin_cmp(const struct nano_site_origin *x, const struct nano_site_origin *y) {
  if (x->file == NULL || y->file == NULL)
    return (x->file != NULL) - (y->file != NULL);
  return nanot_pos_cmp((struct nanot_pos){x->file, x->line, x->column, x->function},
                       (struct nanot_pos){y->file, y->line, y->column, y->function});
}

/* Orders report entries by position (file, line, column, function), kind,
 * order, flags, size, origin, id. */
static int nanot_entry_cmp(const void *a, const void *b) {
  const struct nanot_entry *ea = a, *eb = b;
  const struct nano_site *x = &ea->site, *y = &eb->site;
  int c = nanot_pos_cmp((struct nanot_pos){x->file, x->line, x->column, x->function},
                        (struct nanot_pos){y->file, y->line, y->column, y->function});
  if (c)
    return c;
  if (x->kind != y->kind)
    return x->kind < y->kind ? -1 : 1;
  if (x->order != y->order)
    return x->order < y->order ? -1 : 1;
  if (x->flags != y->flags)
    return x->flags < y->flags ? -1 : 1;
  if (x->size != y->size)
    return x->size < y->size ? -1 : 1;
  c = nanot_origin_cmp(&ea->origin, &eb->origin);
  if (c)
    return c;
  return x->id < y->id ? -1 : x->id > y->id;
}

/* Whether two sites are reported as one (everything but the id is equal;
 * strings are interned, so pointers compare). */
static int nanot_site_same(const struct nanot_entry *a, const struct nanot_entry *b) {
  const struct nano_site *x = &a->site, *y = &b->site;
  const struct nano_site_origin *ox = &a->origin, *oy = &b->origin;
  return x->file == y->file && x->line == y->line && x->column == y->column &&
         x->function == y->function && x->kind == y->kind && x->order == y->order &&
         x->flags == y->flags && x->size == y->size && ox->file == oy->file &&
         ox->line == oy->line && ox->column == oy->column && ox->function == oy->function;
}

/* Writes a name or, for a value without one, the number. */
static void nanot_json_name(FILE *out, const char *name, unsigned value) {
  if (name)
    nano_json_str(out, name);
  else
    fprintf(out, "\"%u\"", value);
}

/* Writes the JSON document of docs/atomics.md ("nanoprobe-atomics", 1). */
static void nanot_dump_json(FILE *out, struct nanot_entry *e, uint32_t n, const uint64_t *kinds,
                            uint64_t lost) {
  uint64_t total = 0;
  for (unsigned k = 0; k < NANO_KIND_COUNT; k++)
    total += kinds[k];
  fprintf(out, "{\n  \"format\": \"nanoprobe-atomics\",\n  \"version\": 1,\n  \"pid\": %ld,\n",
          (long)getpid());
  if (lost)
    fprintf(out, "  \"uncounted\": %" PRIu64 ",\n", lost);
  fprintf(out, "  \"total\": %" PRIu64 ",\n  \"kinds\": {", total);
  const char *sep = "\n";
  for (unsigned k = 0; k < NANO_KIND_COUNT; k++) {
    if (kinds[k] == 0)
      continue;
    fprintf(out, "%s    \"%s\": %" PRIu64, sep, nano_kind_name(k), kinds[k]);
    sep = ",\n";
  }
  fprintf(out, "%s},\n  \"sites\": [", sep[0] == ',' ? "\n  " : "");
  qsort(e, n, sizeof *e, nanot_entry_cmp);
  sep = "\n";
  for (uint32_t i = 0; i < n;) {
    /* Sites alike in everything but their id (an unrolled loop, a macro)
     * are reported once, with their number in "instances". */
    const struct nano_site *s = &e[i].site;
    const struct nano_site_origin *o = &e[i].origin;
    uint64_t count = 0;
    uint32_t j = i;
    for (; j < n && nanot_site_same(&e[i], &e[j]); j++)
      count += e[j].count;
    uint32_t instances = j - i;
    i = j;
    if (count == 0)
      continue;
    fprintf(out, "%s    {\"kind\": ", sep);
    nanot_json_name(out, nano_kind_name(s->kind), s->kind);
    fputs(", \"order\": ", out);
    nanot_json_name(out, nano_order_name(s->order), s->order);
    if (s->kind == NANO_KIND_COMPARE_EXCHANGE) {
      fputs(", \"failure_order\": ", out);
      unsigned f = NANO_SITE_FAILURE_ORDER(s->flags);
      nanot_json_name(out, nano_order_name(f), f);
    }
    fprintf(out, ", \"size\": %u, \"flags\": [", s->size);
    static const struct {
      unsigned bit;
      const char *name;
    } flags[] = {{NANO_SITE_WEAK, "weak"},
                 {NANO_SITE_VOLATILE, "volatile"},
                 {NANO_SITE_LIBCALL, "libcall"},
                 {NANO_SITE_PRELUDE, "prelude"},
                 {NANO_SITE_LIBRARY, "library"}};
    const char *fsep = "";
    for (size_t f = 0; f < sizeof flags / sizeof flags[0]; f++)
      if (s->flags & flags[f].bit) {
        fprintf(out, "%s\"%s\"", fsep, flags[f].name);
        fsep = ", ";
      }
    fputs("], \"function\": ", out);
    nano_json_str(out, s->function);
    fputs(", \"file\": ", out);
    nano_json_str(out, s->file);
    fprintf(out, ", \"line\": %u, \"column\": %u, ", s->line, s->column);
    if (o->file != NULL) {
      fputs("\"inlined_from\": {\"function\": ", out);
      nano_json_str(out, o->function);
      fputs(", \"file\": ", out);
      nano_json_str(out, o->file);
      fprintf(out, ", \"line\": %u, \"column\": %u}, ", o->line, o->column);
    }
    fprintf(out, "\"instances\": %u, \"count\": %" PRIu64 "}", instances, count);
    sep = ",\n";
  }
  fprintf(out, "%s]\n}\n", sep[0] == ',' ? "\n  " : "");
}

NANO_API int nano_tracker_dump(FILE *out, enum nano_format format) {
  if (out == NULL || (format != NANO_FORMAT_TEXT && format != NANO_FORMAT_JSON)) {
    errno = EINVAL;
    return -1;
  }
  uint32_t n;
  errno = 0;
  struct nanot_entry *e = nanot_snapshot(&n);
  if (e == NULL && errno == ENOMEM)
    return -1;
  uint64_t lost = __atomic_load_n(&nanot_lost, __ATOMIC_RELAXED);
  uint64_t kinds[NANO_KIND_COUNT] = {0};
  for (uint32_t i = 0; i < n; i++)
    if (e[i].site.kind < NANO_KIND_COUNT)
      kinds[e[i].site.kind] += e[i].count;
  if (format == NANO_FORMAT_TEXT) {
    fputs("NANO TRACKER {\n", out);
    for (unsigned k = 0; k < NANO_KIND_COUNT; k++)
      if (kinds[k])
        fprintf(out, "  %s: %" PRIu64 "\n", nano_kind_name(k), kinds[k]);
    if (lost)
      fprintf(out, "  uncounted: %" PRIu64 "\n", lost);
    fputs("}\n", out);
  } else {
    nanot_dump_json(out, e, n, kinds, lost);
  }
  nanot_unmap(e, (size_t)n * sizeof *e);
  if (fflush(out) != 0 || ferror(out)) {
    if (errno == 0)
      errno = EIO;
    return -1;
  }
  return 0;
}

/* nano_tracker_dump_path, naming `var` as the source of `path` in warnings. */
static int nanot_dump_dest(const char *var, const char *path, enum nano_format format) {
  char buf[4096];
  enum nanot_dest dest = nanot_parse_dest(var, path, buf, sizeof buf);
  if (dest == NANOT_DEST_STDERR)
    return nano_tracker_dump(stderr, format);
  if (dest == NANOT_DEST_STDOUT)
    return nano_tracker_dump(stdout, format);
  struct nano_outfile o;
  char why[4096 + 128];
  int rc = nano_outfile_open(&o, buf, why, sizeof why);
  if (rc == 0) {
    if (nano_tracker_dump(o.f, format) != 0) {
      snprintf(why, sizeof why, "%s: write failed: %s", buf, strerror(errno));
      nano_outfile_abort(&o);
      rc = -1;
    } else {
      rc = nano_outfile_commit(&o, why, sizeof why);
    }
  }
  if (rc != 0) {
    int err = errno ? errno : EIO;
    nanot_warn("cannot write the atomic counts: %s; writing them to stderr", why);
    nano_tracker_dump(stderr, format);
    errno = err;
  }
  return rc;
}

NANO_API int nano_tracker_dump_path(const char *path, enum nano_format format) {
  return nanot_dump_dest("nano_tracker_dump_path", path, format);
}

/* NANO_TRACKER_FORMAT: text (unset, empty or malformed, with a warning) or
 * json. */
static enum nano_format nanot_env_format(void) {
  const char *fmt = nano_env_str("NANO_TRACKER_FORMAT");
  if (fmt == NULL || strcmp(fmt, "text") == 0)
    return NANO_FORMAT_TEXT;
  if (strcmp(fmt, "json") == 0)
    return NANO_FORMAT_JSON;
  nanot_warn("NANO_TRACKER_FORMAT='%s' is not 'text' or 'json'; using text", fmt);
  return NANO_FORMAT_TEXT;
}

/* The entry points of PyTorch's atomics tracker (tools/cpp_nano_regression),
 * for scripts that call them through ctypes: a reset, and a dump where the
 * exit dump goes (NANO_TRACKER_OUTPUT, NANO_TRACKER_FORMAT). */
NANO_API void nano_tracking_reset(void) { nano_tracker_reset(); }

NANO_API int nano_tracking_dump(void) {
  fflush(stdout); /* the caller's buffered output first, so that a log reads in order */
  return nanot_dump_dest("NANO_TRACKER_OUTPUT", nano_env_str("NANO_TRACKER_OUTPUT"),
                         nanot_env_format());
}

/* The exit dump: NANO_TRACKER_OUTPUT in NANO_TRACKER_FORMAT, when on and
 * when this process registered any site. */
__attribute__((destructor)) static void nanot_at_exit(void) {
  if (!__atomic_load_n(&nanot_exit_dump, __ATOMIC_RELAXED))
    return;
  uint32_t n = 0;
  if (pthread_mutex_lock(&nanot_lock) == 0) {
    n = nanot_nsites;
    pthread_mutex_unlock(&nanot_lock);
  }
  if (n == 0)
    return;
  enum nano_format format = nanot_env_format();
  uint64_t lost = __atomic_load_n(&nanot_lost, __ATOMIC_RELAXED);
  if (lost)
    nanot_warn("%" PRIu64 " atomic events were not counted (out of memory, or more nested "
               "events during the tracker's own work than it can defer)",
               lost);
  /* The program's buffered output first (libc flushes it only after the
   * destructors), so that a log reads in order. */
  fflush(stdout);
  nanot_dump_dest("NANO_TRACKER_OUTPUT", nano_env_str("NANO_TRACKER_OUTPUT"), format);
}
