/*
 * dispatch.c: the dispatch layer (dispatch.h).
 *
 * Settings are read once, at the first launch any back end reports. A bad
 * setting (a malformed NANO_KERNELS regex, an unknown analyzer, a plugin that
 * does not load or has another ABI, a malformed number) gets one message
 * naming the variable and the program runs uninstrumented.
 *
 * Selection, per launch: NANO_INSTRUMENT=1, a twin exists, NANO_KERNELS
 * matches the mangled, demangled or bare name (whole match, as the pass's
 * filter), and NANO_DISPATCHES picks it:
 *   all      every dispatch
 *   first    the first dispatch of each kernel
 *   N        the N-th dispatch of each kernel (from 1)
 *   random   one dispatch of each kernel, uniformly among all its dispatches:
 *            reservoir sampling (dispatch n is recorded with probability 1/n
 *            and replaces the earlier pick), so the reports come at exit.
 *
 * A selected dispatch takes a buffer of the pool (none free: it runs
 * uninstrumented, counted) and attaches it to the drain thread with a chain
 * of handlers; its end detaches it, drains what is left, and reports: one
 * summary line (records, bytes, drops) and every analyzer's report on
 * NANO_ANALYZER_OUTPUT, and rows in the trace (nano_dispatch, nano_analysis)
 * when the tracer records.
 */
#define _GNU_SOURCE
#include "dispatch.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <link.h>
#include <pthread.h>
#include <regex.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kdb_load.h"
#include "nano/aggregate.h"
#include "nano/analyzers.h"
#include "nano/demangle.h"
#include "nano/handler.h"
#include "nano/hash.h"
#include "nano/json.h"
#include "nano/outfile.h"
#include "nano/path.h"
#include "nano/rpdfile.h"
#include "nano/settings.h"
#include "nano/symbols.h"
#include "rpd.h"
#include "rpd_internal.h"

/* Defaults of the settings (docs/ENVIRONMENT.md). */
#define DISPATCH_DEFAULT_ANALYZERS "MemoryAnalysis"
#define DISPATCH_DEFAULT_BUFFER (16u << 20) /* bytes per dispatch buffer          */
/* Bytes per graph node's buffer: each launch captured into a graph (or kernel
 * node added by hand) keeps one for the life of the process, and a graph of
 * 500 kernels at 16 MiB each would pin 8 GiB of host memory; a replay's
 * drain keeps up with a 1 MiB ring as with any other. */
#define DISPATCH_DEFAULT_GRAPH_BUFFER (1u << 20)
#define DISPATCH_DEFAULT_POOL 8u       /* dispatches instrumented at once    */
#define DISPATCH_DEFAULT_SPINS 100000u /* polls of a full buffer, then drop  */
#define DISPATCH_DEFAULT_CPU_WAVE 64u
#define DISPATCH_DEFAULT_CPU_STACK (256u << 10)
#define DISPATCH_MAX_BUFFER (1ull << 32)
#define DISPATCH_MAX_POOL 1024u
#define DISPATCH_MAX_CPU_THREADS 1024u
/* Drain threads by default: one. More drain several dispatches at once in
 * parallel, but on the development VM two threads draining two full rings
 * took 0.75 to 1.08 times one thread's time (memory-bound there, or its two
 * vCPUs share a core): a choice for the user until a GPU host measures it. */
#define DISPATCH_DEFAULT_DRAIN_THREADS 1u
#define DISPATCH_MAX_DRAIN_THREADS 64u
#define DISPATCH_MIN_CPU_STACK (16u << 10)
#define DISPATCH_MAX_CPU_STACK (64u << 20)
/* Block times kept before the first growth of a dispatch's array. */
#define DISPATCH_INITIAL_BLOCKS 256u
/* A GPU dispatch's sums table (nano/dh_format.h): copies of the counters (a
 * wave adds to its SM's or CU's: hot sites do not serialise on one atomic),
 * fewer where the counters of that many would pass the most bytes they may
 * take; Heatmap's page slots (16 bytes each; pages past them are counted,
 * not lost silently). */
#define DISPATCH_SUMS_SHARDS 16u
#define DISPATCH_SUMS_MAX_COUNTS (1u << 20)
#define DISPATCH_SUMS_PAGE_SLOTS (1u << 16)
/* Buckets of the kernels' index at its first use (doubled as it fills). */
#define DISPATCH_KERNEL_BUCKETS 64u

enum dispatch_pick { PICK_ALL, PICK_FIRST, PICK_NTH, PICK_RANDOM };
/* NANO_AGGREGATE: where the analyzers' sums are made. */
enum dispatch_where { WHERE_AUTO, WHERE_DEVICE, WHERE_HOST };

/* One kernel's dispatch history. */
struct kernel_state {
  char *name;
  char *demangled; /* once, at first sight; NULL: not a mangled name */
  uint64_t count;  /* dispatches seen                              */
  int selected;    /* NANO_KERNELS selects it                      */
  int noted_no_twin;
  struct nano_dispatch *kept; /* random: the current pick, reported at exit */
  /* its GPU sums table (made at its first dispatch summed there, for that
   * dispatch's geometry; never changed after) */
  int sums_made;
  struct dispatch_sums *sums;
  int dispatched;  /* an instrumented dispatch of it had handlers        */
  int block_times; /* a handler of its last one read block times          */
  uint64_t hash;   /* of its name (nano_fnv64_str)                         */
  struct kernel_state *next, *next_in_bucket;
};

/* The site tables of one code object (an executable, shared library, GPU
 * code object), loaded once and never changed after. */
struct code_object {
  char *path, *arch;
  struct nano_dh_sites *sites;
  /* AMDGPU code: kerneldb over the file, kept open for what the machine code
   * made of each site (isa_width), and its answers per site of `sites`
   * (0: not asked yet, else (verdict + 1) << 32 | width); else NULL */
  kdb *db;
  _Atomic uint64_t *isa;
  struct code_object *next;
};

/* The buffers of one placement (host memory, a GPU context's). */
struct placement_pool {
  const struct nano_dh_memory *memory;
  struct nano_dh_pool *pool;
  struct placement_pool *next;
};

/* A kernel's sums table as the device gets it, and what it was made for. */
struct dispatch_sums {
  void *image;
  uint64_t bytes, head;
  unsigned what;
  uint64_t page_bytes;
  uint32_t line_bytes, sector_bytes, lds_model;
};

struct nano_dispatch {
  struct nano_dispatch_info info;
  const struct code_object *co; /* its site tables (NULL: none) */
  char *kernel, *kernel_name;
  struct kernel_state *ks;
  struct nano_dh_pool *pool;
  struct nano_dh_buffer *buf;
  struct nano_chain *chain;
  struct nano_dh_drain_stats st;
  uint64_t dropped_before, dropped;
  int64_t start, end;
  uint64_t api;
  int64_t session_offset; /* the trace's when the dispatch began (-1: none) */
  /* summed where the waves run (NANO_AGGREGATE): no records, no drain; with
   * a table (GPUs) the accesses the twin could not sum are records, drained
   * into the shard `fallback` */
  int on_device;
  const struct dispatch_sums *table;
  struct nano_aggregate *fallback;
  uint32_t block_table; /* blocks of the twin's block-times table (GPUs) */
  unsigned agg_what;
  uint64_t agg_page_bytes;
  int no_access; /* no handler reads an access (block times only) */
  pthread_mutex_t shard_lock;
  struct nano_aggregate **shards; /* one per thread of the back end that ran waves */
  size_t nshards;
  _Atomic uint64_t agg_lost; /* wave accesses no shard took (out of memory) */
  struct nano_aggregates view;
  uint64_t agg_records; /* wave accesses summed */
  /* the blocks' times, when a handler reads them (under shard_lock) */
  int time_blocks;
  struct nano_block_time *blocks;
  size_t nblocks, blocks_cap;
  uint64_t blocks_dropped;
};

static struct {
  pthread_once_t once;
  int instrument;
  int have_regex;
  char *kernels_setting; /* NANO_KERNELS as given, for the message at exit */
  regex_t regex;
  enum dispatch_pick pick;
  uint64_t nth;
  uint64_t rng;
  struct nano_analyzers *analyzers;
  FILE *out;
  int out_owned;
  uint32_t format;
  uint32_t block_lo[3], block_hi[3];
  uint64_t buffer_bytes, graph_buffer_bytes;
  unsigned pool_size;
  uint32_t spins;
  uint32_t cpu_wave;
  unsigned cpu_threads;
  uint64_t cpu_stack;
  unsigned drain_threads;
  enum dispatch_where where;

  pthread_mutex_t lock; /* everything below */
  struct kernel_state *kernels;
  /* the same kernels by name (chained buckets, a power of two of them,
   * doubled when they hold two kernels each on average): a program with
   * thousands of kernels (PyTorch) looks one up per dispatch */
  struct kernel_state **kernel_index;
  size_t kernel_buckets, nkernels;
  struct code_object *cos;
  struct placement_pool *pools;
  struct nano_dh_drainer *drainer;
  struct nano_source_cache *sources;
  uint64_t next_id;
  uint64_t pool_exhausted;
  int noted_pool;
  int noted_where;
  int noted_blocks;
  int finished;
} g_d = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

static void dispatch_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void dispatch_log(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rpdi_logv("nanoprobe: ", fmt, ap);
  va_end(ap);
}

/* ---- settings ------------------------------------------------------------- */

/* NANO_BLOCKS: "x=N[:M],y=...,z=..." (inclusive ranges). 0, or -1 with a
 * message. */
static int dispatch_parse_blocks(const char *v) {
  char *copy = strdup(v), *save = NULL;
  if (!copy)
    return -1;
  int rc = 0;
  for (char *t = strtok_r(copy, ",", &save); t && rc == 0; t = strtok_r(NULL, ",", &save)) {
    int dim = t[0] == 'x' ? 0 : t[0] == 'y' ? 1 : t[0] == 'z' ? 2 : -1;
    char *end;
    unsigned long lo, hi;
    if (dim < 0 || t[1] != '=' || t[2] < '0' || t[2] > '9')
      goto bad;
    errno = 0;
    lo = strtoul(t + 2, &end, 10);
    hi = lo;
    if (*end == ':') {
      if (end[1] < '0' || end[1] > '9')
        goto bad;
      hi = strtoul(end + 1, &end, 10);
    }
    if (*end || errno || lo > hi || hi > UINT32_MAX)
      goto bad;
    g_d.block_lo[dim] = (uint32_t)lo;
    g_d.block_hi[dim] = (uint32_t)hi;
    continue;
  bad:
    dispatch_log("NANO_BLOCKS=%s: '%s' is not x=, y= or z= with a block id N or an "
                 "inclusive range N:M",
                 v, t);
    rc = -1;
  }
  free(copy);
  return rc;
}

/* Opens NANO_ANALYZER_OUTPUT ("%p" is the pid). */
static int dispatch_open_output(const char *v) {
  if (!v || strcmp(v, "stderr") == 0) {
    g_d.out = stderr;
    return 0;
  }
  if (strcmp(v, "stdout") == 0 || strcmp(v, "-") == 0) {
    g_d.out = stdout;
    return 0;
  }
  char path[4096];
  (void)nano_path_expand_pid(v, (long)getpid(), path, sizeof path); /* cut when too long */
  char why[sizeof path + 128];
  int fd = nano_outfile_stream(path, 0, why, sizeof why);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) {
    if (fd >= 0) {
      snprintf(why, sizeof why, "%s: %s", path, strerror(errno));
      close(fd);
    }
    dispatch_log("NANO_ANALYZER_OUTPUT=%s: cannot write: %s; the reports go to stderr", v, why);
    g_d.out = stderr;
    return 0;
  }
  g_d.out = f;
  g_d.out_owned = 1;
  return 0;
}

/* Reads every setting; on a bad one instrumentation stays off. */
/* A ring size setting (bytes, a power of two from NANO_DH_MIN_CAPACITY to
 * DISPATCH_MAX_BUFFER) into *bytes when set; -1 after saying what is wrong
 * (*bytes kept). */
static int dispatch_ring_setting(const char *name, uint64_t *bytes) {
  uint64_t n;
  if (nano_env_size(name, NANO_DH_MIN_CAPACITY, DISPATCH_MAX_BUFFER, &n) < 0)
    return -1;
  if (!nano_env_str(name))
    return 0;
  if (n & (n - 1)) {
    dispatch_log("%s=%s: the size must be a power of two", name, nano_env_str(name));
    return -1;
  }
  *bytes = n;
  return 0;
}

static void dispatch_init(void) {
  g_d.buffer_bytes = DISPATCH_DEFAULT_BUFFER;
  g_d.graph_buffer_bytes = DISPATCH_DEFAULT_GRAPH_BUFFER;
  g_d.pool_size = DISPATCH_DEFAULT_POOL;
  g_d.spins = DISPATCH_DEFAULT_SPINS;
  g_d.cpu_wave = DISPATCH_DEFAULT_CPU_WAVE;
  g_d.cpu_stack = DISPATCH_DEFAULT_CPU_STACK;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  g_d.cpu_threads = cpus > 0 ? (unsigned)cpus : 1;
  g_d.drain_threads = DISPATCH_DEFAULT_DRAIN_THREADS;
  for (int i = 0; i < 3; i++)
    g_d.block_hi[i] = UINT32_MAX;
  g_d.format = NANO_FORMAT_TEXT;
  g_d.out = stderr;

  int bad = 0, on = 0;
  uint64_t n;
  if (nano_env_bool("NANO_INSTRUMENT", &on) < 0)
    bad = 1;
  /* the CPU back end's settings matter also when nothing is instrumented */
  if (nano_env_uint("NANO_CPU_THREADS", 1, DISPATCH_MAX_CPU_THREADS, &n) > 0)
    g_d.cpu_threads = (unsigned)n;
  if (nano_env_size("NANO_CPU_STACK", DISPATCH_MIN_CPU_STACK, DISPATCH_MAX_CPU_STACK, &n) > 0)
    g_d.cpu_stack = n;
  if (!on) {
    /* settings that only mean something instrumented: never a silent no-op
     * (read at the first launch, so only a program with kernels hears it) */
    const char *meant = nano_env_str("NANO_ANALYZERS")    ? "NANO_ANALYZERS"
                        : nano_env_str("NANO_DISPATCHES") ? "NANO_DISPATCHES"
                        : nano_env_str("NANO_AGGREGATE")  ? "NANO_AGGREGATE"
                                                          : NULL;
    if (meant && !bad)
      dispatch_log("%s is set but NANO_INSTRUMENT is not: kernels run uninstrumented "
                   "(NANO_INSTRUMENT=1 instruments them)",
                   meant);
    return;
  }

  const char *v = nano_env_str("NANO_KERNELS");
  if (v) {
    int rc = nano_regcomp_whole(&g_d.regex, v);
    if (rc != 0) {
      char msg[256];
      regerror(rc, &g_d.regex, msg, sizeof msg);
      dispatch_log("NANO_KERNELS=%s: invalid regular expression: %s", v, msg);
      bad = 1;
    } else {
      g_d.have_regex = 1;
      g_d.kernels_setting = strdup(v);
    }
  }

  static const char *const picks[] = {"all", "first", "random", NULL};
  v = nano_env_str("NANO_DISPATCHES");
  if (v) {
    char *end;
    errno = 0;
    unsigned long long k = strtoull(v, &end, 10);
    if (v[0] >= '0' && v[0] <= '9' && !*end && !errno && k >= 1) {
      g_d.pick = PICK_NTH;
      g_d.nth = k;
    } else {
      int c;
      if (nano_env_choice("NANO_DISPATCHES", picks, &c) < 0) {
        dispatch_log("NANO_DISPATCHES: or a dispatch number N >= 1 (the N-th of each kernel)");
        bad = 1;
      } else {
        g_d.pick = c == 0 ? PICK_ALL : c == 1 ? PICK_FIRST : PICK_RANDOM;
      }
    }
  }

  static const char *const formats[] = {"text", "json", NULL};
  int f;
  int r = nano_env_choice("NANO_ANALYZER_FORMAT", formats, &f);
  if (r < 0)
    bad = 1;
  else if (r > 0)
    g_d.format = f == 1 ? NANO_FORMAT_JSON : NANO_FORMAT_TEXT;

  static const char *const wheres[] = {"auto", "device", "host", NULL};
  int where;
  r = nano_env_choice("NANO_AGGREGATE", wheres, &where);
  if (r < 0)
    bad = 1;
  else if (r > 0)
    g_d.where = (enum dispatch_where)where;

  static const char *const waves[] = {"32", "64", NULL};
  int w;
  r = nano_env_choice("NANO_CPU_WAVE", waves, &w);
  if (r < 0)
    bad = 1;
  else if (r > 0)
    g_d.cpu_wave = w == 0 ? 32 : 64;

  bad |= dispatch_ring_setting("NANO_BUFFER_SIZE", &g_d.buffer_bytes) < 0;
  bad |= dispatch_ring_setting("NANO_GRAPH_BUFFER_SIZE", &g_d.graph_buffer_bytes) < 0;
  if (nano_env_uint("NANO_BUFFER_POOL", 1, DISPATCH_MAX_POOL, &n) < 0)
    bad = 1;
  else if (nano_env_str("NANO_BUFFER_POOL"))
    g_d.pool_size = (unsigned)n;
  if (nano_env_uint("NANO_DRAIN_THREADS", 1, DISPATCH_MAX_DRAIN_THREADS, &n) < 0)
    bad = 1;
  else if (nano_env_str("NANO_DRAIN_THREADS"))
    g_d.drain_threads = (unsigned)n;
  if (nano_env_uint("NANO_BUFFER_SPINS", 0, UINT32_MAX, &n) < 0)
    bad = 1;
  else if (nano_env_str("NANO_BUFFER_SPINS"))
    g_d.spins = (uint32_t)n;
  v = nano_env_str("NANO_BLOCKS");
  if (v && dispatch_parse_blocks(v) != 0)
    bad = 1;
  g_d.rng = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
  if (nano_env_uint("NANO_RANDOM_SEED", 0, UINT64_MAX, &n) < 0)
    bad = 1;
  else if (nano_env_str("NANO_RANDOM_SEED"))
    g_d.rng = n;

  v = nano_env_str("NANO_ANALYZERS");
  char err[512];
  if (nano_analyzers_load(v ? v : DISPATCH_DEFAULT_ANALYZERS, "NANO_ANALYZERS", &g_d.analyzers, err,
                          sizeof err) != 0) {
    dispatch_log("%s", err);
    bad = 1;
  }
  if (bad) {
    dispatch_log("NANO_INSTRUMENT=1 ignored: the program runs uninstrumented");
    return;
  }
  if (dispatch_open_output(nano_env_str("NANO_ANALYZER_OUTPUT")) != 0)
    return;
  g_d.sources = nano_source_cache_create();
  g_d.instrument = 1;
}

static void dispatch_ready(void) { pthread_once(&g_d.once, dispatch_init); }

uint32_t nano_dispatch_cpu_wave(void) {
  dispatch_ready();
  return g_d.cpu_wave;
}

unsigned nano_dispatch_cpu_threads(void) {
  dispatch_ready();
  return g_d.cpu_threads;
}

uint64_t nano_dispatch_cpu_stack(void) {
  dispatch_ready();
  return g_d.cpu_stack;
}

/* ---- kernels ---------------------------------------------------------------- */

/* Whether NANO_KERNELS selects the kernel: its mangled name, its demangled
 * name, or its bare function name (demangled, without scope, template
 * arguments and parameters), as the pass's compile-time filter. */
static int dispatch_regex_selects(const char *name, const char *demangled) {
  if (!g_d.have_regex)
    return 1;
  if (regexec(&g_d.regex, name, 0, NULL, 0) == 0)
    return 1;
  if (!demangled)
    return 0;
  if (regexec(&g_d.regex, demangled, 0, NULL, 0) == 0)
    return 1;
  char bare[1024];
  snprintf(bare, sizeof bare, "%s", demangled);
  char *paren = strchr(bare, '(');
  if (paren)
    *paren = 0;
  char *start = strrchr(bare, ' ');
  start = start ? start + 1 : bare;
  char *colon = strrchr(start, ':');
  if (colon)
    start = colon + 1;
  char *angle = strchr(start, '<');
  if (angle)
    *angle = 0;
  return regexec(&g_d.regex, start, 0, NULL, 0) == 0;
}

/* The state of kernel `name`, created on first sight (g_d.lock held). */
/* The kernel named `name`, or NULL (g_d.lock held). */
static struct kernel_state *dispatch_kernel_find(const char *name, uint64_t hash) {
  if (!g_d.kernel_buckets)
    return NULL;
  for (struct kernel_state *k = g_d.kernel_index[hash & (g_d.kernel_buckets - 1)]; k;
       k = k->next_in_bucket)
    if (k->hash == hash && strcmp(k->name, name) == 0)
      return k;
  return NULL;
}

/* Puts k into the index, doubling it first when full (g_d.lock held). 0, or
 * -1 when out of memory. */
static int dispatch_kernel_index(struct kernel_state *k) {
  if (g_d.nkernels >= 2 * g_d.kernel_buckets) {
    size_t n = g_d.kernel_buckets ? 2 * g_d.kernel_buckets : DISPATCH_KERNEL_BUCKETS;
    struct kernel_state **index = calloc(n, sizeof *index);
    if (!index)
      return -1;
    for (struct kernel_state *e = g_d.kernels; e; e = e->next) {
      e->next_in_bucket = index[e->hash & (n - 1)];
      index[e->hash & (n - 1)] = e;
    }
    free(g_d.kernel_index);
    g_d.kernel_index = index;
    g_d.kernel_buckets = n;
  }
  k->next_in_bucket = g_d.kernel_index[k->hash & (g_d.kernel_buckets - 1)];
  g_d.kernel_index[k->hash & (g_d.kernel_buckets - 1)] = k;
  g_d.nkernels++;
  return 0;
}

static struct kernel_state *dispatch_kernel(const char *name) {
  uint64_t hash = nano_fnv64_str(name);
  struct kernel_state *k = dispatch_kernel_find(name, hash);
  if (k)
    return k;
  k = calloc(1, sizeof *k);
  if (!k || !(k->name = strdup(name))) {
    free(k);
    return NULL;
  }
  k->hash = hash;
  if (dispatch_kernel_index(k) != 0) {
    free(k->name);
    free(k);
    return NULL;
  }
  k->demangled = nano_demangle(name);
  k->selected = dispatch_regex_selects(name, k->demangled);
  k->next = g_d.kernels;
  g_d.kernels = k;
  return k;
}

/* dl_iterate_phdr callback: the object whose loaded segments hold the
 * address (arg[0]); its path goes to arg[1] ("" for the main program). */
static int dispatch_find_object(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  uintptr_t addr = (uintptr_t)((void **)arg)[0];
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && addr >= lo && addr < lo + ph->p_memsz) {
      ((const char **)arg)[1] = info->dlpi_name;
      return 1;
    }
  }
  return 0;
}

/* The pool of placement `memory` (NULL: host memory), made on first use
 * (g_d.lock held) with rings of `bytes`; NULL when out of memory. Buffers are
 * allocated as dispatches need them, up to NANO_BUFFER_POOL per placement. */
static struct nano_dh_pool *dispatch_pool(const struct nano_dh_memory *memory, uint64_t bytes) {
  for (struct placement_pool *p = g_d.pools; p; p = p->next)
    if (p->memory == memory)
      return p->pool;
  struct placement_pool *p = calloc(1, sizeof *p);
  if (!p || !(p->pool = nano_dh_pool_create(memory, g_d.pool_size, bytes, 0, g_d.spins))) {
    free(p);
    return NULL;
  }
  p->memory = memory;
  p->next = g_d.pools;
  g_d.pools = p;
  return p->pool;
}

/* kerneldb's ISA is AMDGPU's (kdb_isa.c): code for other targets has no
 * isa_width. */
#define DISPATCH_ISA_ARCH_PREFIX "gfx"

/* Adds the site tables of the GPU code objects in the host file at path:
 * those built for arch, or every one where none is (a JIT-compiled PTX).
 * For an AMDGPU arch *keep gets kerneldb over the file (the caller closes
 * it), else NULL. Returns the number of tables' sites added, or -1 with a
 * message. */
static long dispatch_gpu_sites(struct nano_dh_sites *sites, const char *path, const char *arch,
                               kdb **keep, char *err, size_t errlen) {
  *keep = NULL;
  const struct nano_kdb_api *kdb_api = nano_kdb_load(err, errlen);
  if (!kdb_api)
    return -1;
  kdb *db;
  if (kdb_api->open(path, &db, err, errlen) != 0)
    return -1;
  size_t n = kdb_api->count(db), matching = 0;
  for (size_t i = 0; i < n; i++)
    matching += strcmp(kdb_api->at(db, i)->arch, arch) == 0;
  long rc = 0;
  for (size_t i = 0; i < n && rc >= 0; i++) {
    const kdb_code_object *co = kdb_api->at(db, i);
    if (matching && strcmp(co->arch, arch) != 0)
      continue;
    if (nano_dh_sites_add_elf_memory(sites, kdb_api->image(db, co), (size_t)co->image_size,
                                     co->container, err, errlen) < 0)
      rc = -1;
  }
  if (rc == 0)
    rc = (long)nano_dh_sites_count(sites);
  if (rc > 0 && strncmp(arch, DISPATCH_ISA_ARCH_PREFIX, strlen(DISPATCH_ISA_ARCH_PREFIX)) == 0)
    *keep = db;
  else
    kdb_api->close(db);
  return rc;
}

/* The site tables of the file holding `twin` (or l->sites_path) (g_d.lock held): the ELF object
 * the dynamic linker loaded it from, the main program's through
 * /proc/self/exe; for GPU back ends the tables of its code objects for the
 * launch's arch. Read once per file and arch; a file whose tables cannot be
 * read is said once and gives an empty set. */
static struct code_object *dispatch_sites(const struct nano_launch_desc *l) {
  const void *find[2] = {l->twin, NULL};
  if (!l->sites_path)
    dl_iterate_phdr(dispatch_find_object, find);
  const char *path = l->sites_path                       ? l->sites_path
                     : find[1] && *(const char *)find[1] ? find[1]
                                                         : "/proc/self/exe";
  int gpu = strcmp(l->backend, "cpu") != 0;
  for (struct code_object *c = g_d.cos; c; c = c->next)
    if (strcmp(c->path, path) == 0 && strcmp(c->arch, l->arch) == 0)
      return c;
  struct code_object *c = calloc(1, sizeof *c);
  if (!c || !(c->path = strdup(path)) || !(c->arch = strdup(l->arch)) ||
      !(c->sites = nano_dh_sites_create())) {
    if (c) {
      free(c->path);
      free(c->arch);
    }
    free(c);
    return NULL;
  }
  char err[512] = "";
  long n = gpu ? dispatch_gpu_sites(c->sites, path, l->arch, &c->db, err, sizeof err)
               : nano_dh_sites_add_elf(c->sites, path, err, sizeof err);
  if (c->db && !(c->isa = calloc(nano_dh_sites_count(c->sites), sizeof *c->isa))) {
    nano_kdb_load(err, sizeof err)->close(c->db); /* out of memory: no isa_width */
    c->db = NULL;
  }
  if (n < 0)
    dispatch_log("the site tables of %s cannot be read: %s; records are reported without "
                 "source positions",
                 path, err);
  else if (n == 0)
    dispatch_log("%s has no site tables (%s); records are reported without source positions", path,
                 gpu ? "in its GPU code for this device" : "section " NANO_DH_SITES_SECTION);
  c->next = g_d.cos;
  g_d.cos = c;
  return c;
}

/* splitmix64: the reservoir's coin. */
static uint64_t dispatch_random(void) {
  uint64_t z = (g_d.rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* ---- services for handlers ---------------------------------------------------- */

static const struct nano_dh_site *dispatch_site(const struct nano_dispatch_info *info,
                                                uint64_t id) {
  return info->sites ? nano_dh_sites_find(info->sites, id) : NULL;
}

/* What the machine code made of site `id` (kerneldb's verdict on the code
 * object's ISA), asked once per site of the code object and kept. */
static int dispatch_isa_width(const struct nano_dispatch_info *info, uint64_t id, uint32_t *width) {
  const struct code_object *c = ((const struct nano_dispatch *)info->runtime)->co;
  const struct nano_dh_site *site = nano_dh_sites_find(c->sites, id);
  *width = 0;
  if (!site)
    return NANO_ISA_UNKNOWN;
  _Atomic uint64_t *slot = &c->isa[site - nano_dh_sites_at(c->sites, 0)];
  uint64_t v = atomic_load_explicit(slot, memory_order_acquire);
  if (!v) {
    char err[8];
    const struct nano_kdb_api *api = nano_kdb_load(err, sizeof err); /* loaded with c->db */
    const kdb_site *k = api->site_find(c->db, id);
    uint32_t w = 0;
    kdb_site_isa verdict = k ? api->site_isa_width(c->db, k, &w) : KDB_SITE_ISA_UNKNOWN;
    v = (uint64_t)(verdict + 1) << 32 | w;
    atomic_store_explicit(slot, v, memory_order_release); /* racing askers store the same */
  }
  *width = (uint32_t)v;
  return (int)(v >> 32) - 1;
}

static const char *dispatch_source_line(const struct nano_dispatch_info *info, const char *file,
                                        uint32_t line) {
  (void)info;
  return nano_source_cache_line(g_d.sources, file, line);
}

static const struct nano_block_time *dispatch_block_times(const struct nano_dispatch_info *info,
                                                          size_t *n, uint64_t *dropped) {
  const struct nano_dispatch *d = info->runtime;
  *n = d->nblocks;
  if (dropped)
    *dropped = d->blocks_dropped;
  static const struct nano_block_time none[1]; /* timed, but no block ran */
  return !d->time_blocks ? NULL : d->blocks ? d->blocks : none;
}

/* nano_analysis row, written by the trace's writer. */
struct analysis_row {
  int64_t dispatch;
  char *analyzer, *json;
};

static void dispatch_analysis_free(void *p) {
  struct analysis_row *a = p;
  free(a->analyzer);
  free(a->json);
  free(a);
}

static int dispatch_analysis_write(sqlite3 *db, int64_t offset, const char *path, void *p) {
  struct analysis_row *a = p;
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db,
                         "INSERT INTO nano_analysis(dispatch_id, analyzer, report) VALUES (?,?,?)",
                         -1, &st, NULL) != SQLITE_OK) {
    dispatch_log("%s: cannot store the %s results: %s", path, a->analyzer, sqlite3_errmsg(db));
    return -1;
  }
  int rc = sqlite3_bind_int64(st, 1, offset + a->dispatch) |
           sqlite3_bind_text(st, 2, a->analyzer, -1, SQLITE_STATIC) |
           sqlite3_bind_text(st, 3, a->json, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK)
    rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    dispatch_log("%s: cannot store the %s results: %s", path, a->analyzer, sqlite3_errmsg(db));
    return -1;
  }
  return 0;
}

static int dispatch_store(const struct nano_dispatch_info *info, const char *analyzer,
                          const char *json) {
  struct analysis_row *a = calloc(1, sizeof *a);
  if (!a)
    return -1;
  a->dispatch = (int64_t)info->dispatch_id;
  a->analyzer = strdup(analyzer ? analyzer : "");
  a->json = strdup(json ? json : "");
  if (!a->analyzer || !a->json) {
    dispatch_analysis_free(a);
    return -1;
  }
  return rpdi_post(nano_rpdfile_dispatch_schema_sql(), dispatch_analysis_write,
                   dispatch_analysis_free, a);
}

/* ---- begin ------------------------------------------------------------------- */

static void dispatch_free(struct nano_dispatch *d);

/* Says fmt once per run: *noted (a g_d flag) set under g_d.lock. */
static void dispatch_note_once(int *noted, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void dispatch_note_once(int *noted, const char *fmt, ...) {
  pthread_mutex_lock(&g_d.lock);
  int first = !*noted;
  *noted = 1;
  pthread_mutex_unlock(&g_d.lock);
  if (!first)
    return;
  va_list ap;
  va_start(ap, fmt);
  rpdi_logv("nanoprobe: ", fmt, ap);
  va_end(ap);
}

/* Whether d's sums are made where its waves run: NANO_AGGREGATE allows it,
 * the back end can (l->aggregates) and every handler of the chain is served
 * by sums. NANO_AGGREGATE=device that cannot be had is said once. Sets
 * d->no_access when the handlers need neither records nor sums (block times
 * only), wherever the sums would be made. */
static int dispatch_on_device(struct nano_dispatch *d, const struct nano_launch_desc *l) {
  const char *needs = NULL;
  unsigned what;
  uint64_t page_bytes;
  int aggregable = nano_chain_aggregable(d->chain, &what, &page_bytes, &needs);
  d->no_access = aggregable && !what;
  if (g_d.where == WHERE_HOST || !aggregable || !l->aggregates) {
    if (g_d.where == WHERE_DEVICE)
      dispatch_note_once(&g_d.noted_where,
                         needs ? "NANO_AGGREGATE=device: analyzer %s needs every record: "
                                 "dispatches stream their records"
                         : nano_chain_size(d->chain)
                             ? "NANO_AGGREGATE=device: the %s back end sums on the host only: "
                               "its dispatches stream their records"
                             : "NANO_AGGREGATE=device: no analyzer (%s) to sum for",
                         needs                       ? needs
                         : nano_chain_size(d->chain) ? l->backend
                                                     : "none");
    return 0;
  }
  d->agg_what = what;
  d->agg_page_bytes = page_bytes;
  return 1;
}

/* The module whose sites the twin of info's kernel records (that of the
 * first site of the kernel in info->sites) and the slots its table needs
 * (its highest site index + 1: the kernel's callees are in the module
 * too). 0, or -1 when no site names the kernel. */
static int dispatch_sums_module(const struct nano_dispatch_info *info, uint32_t *module,
                                uint32_t *slots) {
  size_t n = info->sites ? nano_dh_sites_count(info->sites) : 0;
  int found = 0;
  for (size_t i = 0; i < n && !found; i++) {
    const struct nano_dh_site *site = nano_dh_sites_at(info->sites, i);
    if (site->kernel && strcmp(site->kernel, info->kernel) == 0) {
      *module = (uint32_t)(site->id >> 32);
      found = 1;
    }
  }
  if (!found)
    return -1;
  *slots = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t id = nano_dh_sites_at(info->sites, i)->id;
    if ((uint32_t)(id >> 32) == *module && (uint32_t)id >= *slots)
      *slots = (uint32_t)id + 1;
  }
  return 0;
}

/* A sums table for d's twin (NANO_LAUNCH_SUMS_TABLE), made for this
 * geometry; NULL when the dispatch cannot be summed by its twin (no site of
 * its kernel, sizes that are not powers of two, out of memory). */
static struct dispatch_sums *dispatch_sums_make(const struct nano_dispatch *d) {
  const struct nano_dispatch_info *info = &d->info;
  uint32_t module, slots, shards = DISPATCH_SUMS_SHARDS;
  if (dispatch_sums_module(info, &module, &slots) != 0)
    return NULL;
  while (shards > 1 && (uint64_t)shards * slots * NANO_DH_SUMS_SPACES * NANO_DH_COUNTS * 8 >
                           DISPATCH_SUMS_MAX_COUNTS)
    shards /= 2;
  struct dispatch_sums *t = calloc(1, sizeof *t);
  if (!t)
    return NULL;
  *t = (struct dispatch_sums){.what = d->agg_what,
                              .page_bytes = d->agg_page_bytes,
                              .line_bytes = info->line_bytes,
                              .sector_bytes = info->sector_bytes,
                              .lds_model = info->lds_model};
  t->bytes = nano_aggregate_table(info, d->agg_what, d->agg_page_bytes, module, slots, shards,
                                  DISPATCH_SUMS_PAGE_SLOTS, NULL, &t->head);
  if (!t->bytes || !(t->image = malloc(t->bytes)) ||
      nano_aggregate_table(info, d->agg_what, d->agg_page_bytes, module, slots, shards,
                           DISPATCH_SUMS_PAGE_SLOTS, t->image, &t->head) != t->bytes) {
    free(t->image);
    free(t);
    return NULL;
  }
  return t;
}

/* d's kernel's table when it was made for d's geometry: made at the
 * kernel's first dispatch summed by its twin, then shared by its later ones
 * (read-only). NULL: d is summed on the host. */
static const struct dispatch_sums *dispatch_sums(struct nano_dispatch *d) {
  pthread_mutex_lock(&g_d.lock);
  if (!d->ks->sums_made) {
    d->ks->sums = dispatch_sums_make(d);
    d->ks->sums_made = 1;
  }
  const struct dispatch_sums *t = d->ks->sums;
  pthread_mutex_unlock(&g_d.lock);
  const struct nano_dispatch_info *info = &d->info;
  if (t && (t->what != d->agg_what || t->page_bytes != d->agg_page_bytes ||
            t->line_bytes != info->line_bytes || t->sector_bytes != info->sector_bytes ||
            t->lds_model != info->lds_model))
    return NULL;
  return t;
}

/* The entries of a dispatch of l's block-times table: one per block, up to
 * NANO_BLOCK_TIMES_MAX (the rest are counted, not timed). */
static uint32_t dispatch_block_entries(const struct nano_launch_desc *l) {
  uint64_t total = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
  return total < NANO_BLOCK_TIMES_MAX ? (uint32_t)total : NANO_BLOCK_TIMES_MAX;
}

int nano_dispatch_tables(const struct nano_launch_desc *l, struct nano_dispatch_tables *t) {
  *t = (struct nano_dispatch_tables){0};
  dispatch_ready();
  pthread_mutex_lock(&g_d.lock);
  const struct kernel_state *ks = dispatch_kernel_find(l->kernel, nano_fnv64_str(l->kernel));
  int rc = ks && ks->dispatched ? 0 : -1;
  if (rc == 0) {
    if (ks->sums) {
      t->sums = ks->sums->image;
      t->sums_head = ks->sums->head;
      t->sums_bytes = ks->sums->bytes;
    }
    if (ks->block_times)
      t->block_bytes = (uint64_t)dispatch_block_entries(l) * NANO_DH_BLOCK_WORDS * sizeof(uint64_t);
  }
  pthread_mutex_unlock(&g_d.lock);
  return rc;
}

/* A record the twin made where it could not sum (drain threads). */
static int dispatch_fallback(const struct nano_dh_record *r, void *arg) {
  nano_aggregate_add(((struct nano_dispatch *)arg)->fallback, r);
  return 0; /* the drain goes on (non-zero would stop it after this record) */
}

int nano_dispatch_instrumenting(void) {
  dispatch_ready();
  return g_d.instrument;
}

struct nano_dispatch *nano_dispatch_begin(const struct nano_launch_desc *l) {
  dispatch_ready();
  if (!g_d.instrument)
    return NULL;
  pthread_mutex_lock(&g_d.lock);
  struct kernel_state *ks = g_d.finished ? NULL : dispatch_kernel(l->kernel);
  if (!ks) {
    pthread_mutex_unlock(&g_d.lock);
    return NULL;
  }
  uint64_t n = ++ks->count;
  int pick = ks->selected;
  if (pick && !l->twin) {
    if (!ks->noted_no_twin)
      dispatch_log("kernel %s has no twin (its code was not built with -fpass-plugin, or "
                   "NANO_KERNELS left it out at compile time): it runs uninstrumented",
                   l->kernel);
    ks->noted_no_twin = 1;
    pick = 0;
  }
  if (pick) {
    switch (g_d.pick) {
    case PICK_ALL:
      break;
    case PICK_FIRST:
      pick = n == 1;
      break;
    case PICK_NTH:
      pick = n == g_d.nth;
      break;
    case PICK_RANDOM:
      pick = dispatch_random() % n == 0;
      break;
    }
  }
  struct code_object *co = NULL;
  if (pick && !g_d.drainer && !(g_d.drainer = nano_dh_drainer_start(g_d.drain_threads))) {
    dispatch_log("cannot start the drain threads: %s; the program runs uninstrumented",
                 strerror(errno));
    g_d.instrument = 0;
    pick = 0;
  }
  struct nano_dh_pool *pool = pick ? dispatch_pool(l->memory, g_d.buffer_bytes) : NULL;
  if (pick && !pool) {
    dispatch_log("out of memory for a buffer pool: dispatch %" PRIu64 " of %s runs "
                 "uninstrumented",
                 n, l->kernel);
    pick = 0;
  }
  if (pick)
    co = dispatch_sites(l);
  uint64_t id = pick ? ++g_d.next_id : 0;
  pthread_mutex_unlock(&g_d.lock);
  if (!pick) {
    return NULL;
  }

  char err[256];
  struct nano_dh_buffer *buf = nano_dh_pool_acquire(pool, err, sizeof err);
  struct nano_dispatch *d = buf ? calloc(1, sizeof *d) : NULL;
  if (!d) {
    pthread_mutex_lock(&g_d.lock);
    g_d.pool_exhausted++;
    if (!g_d.noted_pool)
      dispatch_log("%s: dispatch %" PRIu64 " of %s runs uninstrumented (counted at exit)",
                   err[0] ? err : "all buffers of the pool are in use (NANO_BUFFER_POOL)", n,
                   l->kernel);
    g_d.noted_pool = 1;
    pthread_mutex_unlock(&g_d.lock);
    if (buf)
      nano_dh_pool_release(pool, buf);
    return NULL;
  }
  d->kernel = strdup(l->kernel);
  d->kernel_name = ks->demangled ? strdup(ks->demangled) : NULL;
  d->ks = ks;
  d->pool = pool;
  d->buf = buf;
  d->session_offset = -1;
  struct nano_dispatch_info *info = &d->info;
  info->abi = NANO_HANDLER_ABI;
  info->size = sizeof *info;
  info->kernel = d->kernel ? d->kernel : l->kernel;
  info->kernel_name = d->kernel_name ? d->kernel_name : info->kernel;
  info->dispatch_id = id;
  info->kernel_dispatch = n;
  info->backend = l->backend;
  info->arch = l->arch;
  info->device = l->device;
  info->wave_size = l->wave_size;
  memcpy(info->grid, l->grid, sizeof info->grid);
  memcpy(info->block, l->block, sizeof info->block);
  info->line_bytes = l->line_bytes;
  info->sector_bytes = l->sector_bytes;
  info->lds_banks = 32;
  info->lds_bank_bytes = 4;
  info->lds_model = l->lds_model;
  info->format = g_d.format;
  info->shared_bytes = l->shared_bytes;
  info->out = g_d.out;
  info->options = "";
  info->sites = co ? co->sites : NULL;
  d->co = co;
  if (co && co->db) {
    info->kerneldb = co->db;
    info->isa_width = dispatch_isa_width;
  }
  info->site = dispatch_site;
  info->source_line = dispatch_source_line;
  info->store = dispatch_store;
  info->block_times = dispatch_block_times;
  info->runtime = d;
  d->chain = nano_chain_create(g_d.analyzers, info);
  pthread_mutex_init(&d->shard_lock, NULL);
  if (d->chain) {
    d->on_device = dispatch_on_device(d, l);
    if (d->on_device && d->agg_what && l->aggregates == NANO_LAUNCH_SUMS_TABLE) {
      d->table = dispatch_sums(d);
      if (!d->table || !(d->fallback = nano_dispatch_shard(d)) ||
          nano_dh_buffer_set_sums(buf, d->table->image, d->table->head, d->table->bytes) != 0) {
        d->table = NULL;
        d->on_device = 0;
        if (g_d.where == WHERE_DEVICE)
          dispatch_note_once(&g_d.noted_where,
                             "NANO_AGGREGATE=device: the twin of %s cannot sum on the device (no "
                             "site table names it, a line, sector or page size that is not a "
                             "power of two, no device memory for the table, or a graph replay "
                             "of a kernel captured before its first summed dispatch): its "
                             "dispatches stream their records",
                             info->kernel_name);
      }
    }
    if (!d->table)
      nano_dh_buffer_set_sums(buf, NULL, 0, 0);
    int wants_blocks = nano_chain_wants_block_times(d->chain);
    pthread_mutex_lock(&g_d.lock);
    ks->dispatched = 1;
    ks->block_times = wants_blocks;
    pthread_mutex_unlock(&g_d.lock);
    d->time_blocks = wants_blocks && l->times_blocks;
    if (d->time_blocks && l->times_blocks == NANO_LAUNCH_BLOCKS_TABLE) {
      uint32_t n = dispatch_block_entries(l);
      if (nano_dh_buffer_set_block_times(buf, n) == 0) {
        d->block_table = n;
        d->blocks_dropped = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2] - n;
      } else {
        d->time_blocks = 0; /* the placement said why */
      }
    }
    if (!d->block_table)
      nano_dh_buffer_set_block_times(buf, 0);
    nano_dh_buffer_set_accesses(buf, nano_dispatch_needs_accesses(d));
    /* the fallback's sums read compact records, as analyzers that say so do */
    nano_dh_buffer_set_compact(buf, d->table || nano_chain_takes_compact(d->chain));
    if (wants_blocks && !d->time_blocks)
      dispatch_note_once(&g_d.noted_blocks,
                         "KernelTimeline: a %s dispatch that cannot time its blocks (a graph "
                         "replay of a kernel captured before its first timed dispatch, no "
                         "memory for the times): such dispatches report none",
                         l->backend);
  }
  if (!d->chain || nano_dh_buffer_set_blocks(buf, g_d.block_lo, g_d.block_hi) != 0 ||
      (!d->on_device &&
       nano_dh_drainer_attach(g_d.drainer, buf, nano_chain_handle, d->chain, &d->st) != 0) ||
      (d->table && nano_dh_drainer_attach(g_d.drainer, buf, dispatch_fallback, d, &d->st) != 0)) {
    dispatch_log("out of memory: dispatch %" PRIu64 " of %s runs uninstrumented", n, l->kernel);
    nano_dh_pool_release(pool, buf);
    dispatch_free(d);
    return NULL;
  }
  /* not read from the device: a copy and a wait on the launching thread */
  d->dropped_before = nano_dh_buffer_dropped_at_finish(buf);
  return d;
}

int nano_dispatch_reserve(const struct nano_dh_memory *memory, char *err, size_t errlen) {
  dispatch_ready();
  pthread_mutex_lock(&g_d.lock);
  struct nano_dh_pool *pool = dispatch_pool(memory, g_d.graph_buffer_bytes);
  pthread_mutex_unlock(&g_d.lock);
  struct nano_dh_buffer *b = pool ? nano_dh_pool_acquire(pool, err, errlen) : NULL;
  if (!b) {
    if (!pool || !err[0])
      snprintf(err, errlen, "%s", pool ? "all buffers of the pool are in use" : "out of memory");
    return -1;
  }
  nano_dh_pool_release(pool, b);
  return 0;
}

void *nano_dispatch_desc(struct nano_dispatch *d) { return nano_dh_buffer_desc(d->buf); }

struct nano_dh_buffer *nano_dispatch_buffer(struct nano_dispatch *d) {
  return d->buf;
}

int nano_dispatch_on_device(const struct nano_dispatch *d) { return d->on_device; }

struct nano_aggregate *nano_dispatch_shard(struct nano_dispatch *d) {
  struct nano_aggregate *a = nano_aggregate_create(&d->info, d->agg_what, d->agg_page_bytes);
  if (!a)
    return NULL;
  pthread_mutex_lock(&d->shard_lock);
  struct nano_aggregate **grown = realloc(d->shards, (d->nshards + 1) * sizeof *grown);
  if (grown) {
    d->shards = grown;
    d->shards[d->nshards++] = a;
  }
  pthread_mutex_unlock(&d->shard_lock);
  if (!grown) {
    nano_aggregate_destroy(a);
    return NULL;
  }
  return a;
}

int nano_dispatch_times_blocks(const struct nano_dispatch *d) { return d->time_blocks; }

int nano_dispatch_needs_accesses(const struct nano_dispatch *d) {
  return !d->no_access && (!d->on_device || d->agg_what != 0);
}

void nano_dispatch_block_time(struct nano_dispatch *d, const uint32_t block[3], uint32_t unit,
                              int64_t start, int64_t end) {
  pthread_mutex_lock(&d->shard_lock);
  if (d->nblocks == d->blocks_cap && d->blocks_cap < NANO_BLOCK_TIMES_MAX) {
    size_t cap = d->blocks_cap ? 2 * d->blocks_cap : DISPATCH_INITIAL_BLOCKS;
    struct nano_block_time *grown = realloc(d->blocks, cap * sizeof *grown);
    if (grown) {
      d->blocks = grown;
      d->blocks_cap = cap;
    }
  }
  if (d->nblocks < d->blocks_cap)
    d->blocks[d->nblocks++] =
        (struct nano_block_time){{block[0], block[1], block[2]}, unit, start, end};
  else
    d->blocks_dropped++;
  pthread_mutex_unlock(&d->shard_lock);
}

void nano_dispatch_shard_lost(struct nano_dispatch *d, uint64_t records) {
  atomic_fetch_add_explicit(&d->agg_lost, records, memory_order_relaxed);
}

int nano_dispatch_block_selected(const struct nano_dispatch *d, const uint32_t block[3]) {
  (void)d;
  for (int i = 0; i < 3; i++)
    if (block[i] < g_d.block_lo[i] || block[i] > g_d.block_hi[i])
      return 0;
  return 1;
}

/* ---- end ---------------------------------------------------------------------- */

/* nano_dispatch row, written by the trace's writer. */
struct dispatch_row {
  int64_t id, api;
  char *kernel, *kernel_name, *backend, *arch;
  uint64_t kernel_dispatch, shared_bytes, records, bytes, dropped, decode_errors, lost_bytes;
  uint32_t device, wave_size, grid[3], block[3];
  int64_t start, end;
  const char *aggregate; /* static: dispatch_where_name */
};

static void dispatch_row_free(void *p) {
  struct dispatch_row *r = p;
  free(r->kernel);
  free(r->kernel_name);
  free(r->backend);
  free(r->arch);
  free(r);
}

static int dispatch_row_write(sqlite3 *db, int64_t offset, const char *path, void *p) {
  struct dispatch_row *r = p;
  sqlite3_stmt *st;
  char err[NANO_RPDFILE_ERRLEN];
  if (nano_rpdfile_dispatch_upgrade(db, path, err, sizeof err) != 0) {
    dispatch_log("cannot store dispatch %" PRId64 ": %s", r->id, err);
    return -1;
  }
  if (sqlite3_prepare_v2(
          db,
          "INSERT INTO nano_dispatch(id, session, pid, api_id, kernel, kernel_name, "
          "kernel_dispatch, backend, arch, device, wave_size, grid_x, grid_y, "
          "grid_z, block_x, block_y, block_z, shared_bytes, start, \"end\", records, "
          "record_bytes, dropped, decode_errors, lost_bytes, aggregate) VALUES "
          "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
          -1, &st, NULL) != SQLITE_OK) {
    dispatch_log("%s: cannot store dispatch %" PRId64 ": %s", path, r->id, sqlite3_errmsg(db));
    return -1;
  }
  /* the columns in order; each bind its own statement (k++ once per sequence point) */
  int k = 1, rc = SQLITE_OK;
  rc |= sqlite3_bind_int64(st, k++, offset + r->id);
  rc |= sqlite3_bind_int64(st, k++, offset >> 32);
  rc |= sqlite3_bind_int(st, k++, (int)getpid());
  if (r->api)
    rc |= sqlite3_bind_int64(st, k++, offset + r->api);
  else
    rc |= sqlite3_bind_null(st, k++);
  rc |= sqlite3_bind_text(st, k++, r->kernel, -1, SQLITE_STATIC);
  rc |= sqlite3_bind_text(st, k++, r->kernel_name, -1, SQLITE_STATIC);
  rc |= sqlite3_bind_int64(st, k++, (int64_t)r->kernel_dispatch);
  rc |= sqlite3_bind_text(st, k++, r->backend, -1, SQLITE_STATIC);
  rc |= sqlite3_bind_text(st, k++, r->arch, -1, SQLITE_STATIC);
  rc |= sqlite3_bind_int64(st, k++, r->device);
  rc |= sqlite3_bind_int64(st, k++, r->wave_size);
  for (int i = 0; i < 3; i++)
    rc |= sqlite3_bind_int64(st, k++, r->grid[i]);
  for (int i = 0; i < 3; i++)
    rc |= sqlite3_bind_int64(st, k++, r->block[i]);
  rc |= sqlite3_bind_int64(st, k++, (int64_t)r->shared_bytes);
  rc |= sqlite3_bind_int64(st, k++, r->start);
  rc |= sqlite3_bind_int64(st, k++, r->end);
  rc |= sqlite3_bind_int64(st, k++, (int64_t)r->records);
  rc |= sqlite3_bind_int64(st, k++, (int64_t)r->bytes);
  rc |= sqlite3_bind_int64(st, k++, (int64_t)r->dropped);
  rc |= sqlite3_bind_int64(st, k++, (int64_t)r->decode_errors);
  rc |= sqlite3_bind_int64(st, k++, (int64_t)r->lost_bytes);
  rc |= sqlite3_bind_text(st, k++, r->aggregate, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK)
    rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    dispatch_log("%s: cannot store dispatch %" PRId64 ": %s", path, r->id, sqlite3_errmsg(db));
    return -1;
  }
  return 0;
}

/* Where d's sums were made, as the trace and the summary name it. */
static const char *dispatch_where_name(const struct nano_dispatch *d) {
  return d->on_device ? "device" : "host";
}

/* The dispatch's summary, text or JSON, on the analyzers' output. */
static void dispatch_summary(const struct nano_dispatch *d) {
  const struct nano_dispatch_info *i = &d->info;
  FILE *out = g_d.out;
  flockfile(out);
  if (g_d.format == NANO_FORMAT_JSON) {
    fputc('{', out);
    fputs("\"analyzer\":\"dispatch\",\"kernel\":", out);
    nano_json_str(out, i->kernel);
    fputs(",\"kernel_name\":", out);
    nano_json_str(out, i->kernel_name);
    fprintf(out,
            ",\"dispatch\":%" PRIu64 ",\"kernel_dispatch\":%" PRIu64 ",\"backend\":\"%s\","
            "\"arch\":\"%s\",\"wave_size\":%u,\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],"
            "\"duration_ns\":%" PRId64 ",\"aggregate\":\"%s\",\"wave_accesses\":%" PRIu64
            ",\"records\":%" PRIu64 ",\"record_bytes\":%" PRIu64 ",\"dropped\":%" PRIu64
            ",\"decode_errors\":%" PRIu64 ",\"lost_bytes\":%" PRIu64 "}\n",
            i->dispatch_id, i->kernel_dispatch, i->backend, i->arch, i->wave_size, i->grid[0],
            i->grid[1], i->grid[2], i->block[0], i->block[1], i->block[2], d->end - d->start,
            dispatch_where_name(d), d->on_device ? d->agg_records : d->st.records, d->st.records,
            d->st.bytes, d->dropped, d->st.decode_errors, d->st.lost_bytes);
  } else {
    fprintf(out,
            "nanoprobe: dispatch %" PRIu64 " (%s #%" PRIu64 "; %s, grid %ux%ux%u, block %ux%ux%u, "
            "wave %u): ",
            i->dispatch_id, i->kernel_name, i->kernel_dispatch, i->arch, i->grid[0], i->grid[1],
            i->grid[2], i->block[0], i->block[1], i->block[2], i->wave_size);
    if (d->on_device && d->st.records)
      fprintf(out,
              "%" PRIu64 " wave accesses summed on the device, %" PRIu64 " of them from records "
              "(%" PRIu64 " bytes, %" PRIu64 " dropped)",
              d->agg_records, d->st.records, d->st.bytes, d->dropped);
    else if (d->on_device)
      fprintf(out, "%" PRIu64 " wave accesses summed on the device, no records", d->agg_records);
    else
      fprintf(out, "%" PRIu64 " records, %" PRIu64 " bytes, %" PRIu64 " dropped", d->st.records,
              d->st.bytes, d->dropped);
    if (d->on_device && !d->st.records && d->dropped)
      fprintf(out, ", %" PRIu64 " not summed (out of memory)", d->dropped);
    if (d->st.decode_errors)
      fprintf(out, ", %" PRIu64 " undecodable (%s)", d->st.decode_errors, d->st.first_error);
    if (d->st.lost_bytes)
      fprintf(out, ", %" PRIu64 " bytes lost", d->st.lost_bytes);
    fputc('\n', out);
  }
  funlockfile(out);
  if ((d->dropped || d->st.decode_errors || d->st.lost_bytes) && out != stderr)
    dispatch_log("dispatch %" PRIu64 " of %s: %" PRIu64 " records dropped (buffer full), %" PRIu64
                 " undecodable, %" PRIu64 " bytes lost",
                 i->dispatch_id, i->kernel_name, d->dropped, d->st.decode_errors, d->st.lost_bytes);
}

/* Queues d's nano_dispatch row for the trace's writer. */
static void dispatch_store_row(const struct nano_dispatch *d) {
  struct dispatch_row *r = calloc(1, sizeof *r);
  if (!r)
    return;
  const struct nano_dispatch_info *i = &d->info;
  r->id = (int64_t)i->dispatch_id;
  r->api = (int64_t)d->api;
  r->kernel = strdup(i->kernel);
  r->kernel_name = strdup(i->kernel_name);
  r->backend = strdup(i->backend);
  r->arch = strdup(i->arch);
  r->kernel_dispatch = i->kernel_dispatch;
  r->device = i->device;
  r->wave_size = i->wave_size;
  memcpy(r->grid, i->grid, sizeof r->grid);
  memcpy(r->block, i->block, sizeof r->block);
  r->shared_bytes = i->shared_bytes;
  r->start = d->start;
  r->end = d->end;
  r->records = d->st.records;
  r->bytes = d->st.bytes;
  r->dropped = d->dropped;
  r->decode_errors = d->st.decode_errors;
  r->lost_bytes = d->st.lost_bytes;
  r->aggregate = dispatch_where_name(d);
  if (!r->kernel || !r->kernel_name || !r->backend || !r->arch) {
    dispatch_row_free(r);
    return;
  }
  rpdi_post(nano_rpdfile_dispatch_schema_sql(), dispatch_row_write, dispatch_row_free, r);
}

/* Reports d: summary, trace rows, analyzers. The output stream stays locked
 * throughout, so the reports of dispatches that end at once do not mix. */
static void dispatch_publish(struct nano_dispatch *d) {
  flockfile(g_d.out);
  dispatch_summary(d);
  dispatch_store_row(d);
  /* a record whose bytes were lost counts once: its count is not known
   * (on the device path d->dropped holds the wave accesses not summed) */
  nano_chain_report(d->chain, d->dropped + d->st.decode_errors + (d->st.lost_bytes ? 1 : 0));
  fflush(g_d.out);
  funlockfile(g_d.out);
}

static void dispatch_free(struct nano_dispatch *d) {
  if (!d)
    return;
  nano_chain_destroy(d->chain);
  for (size_t i = 0; i < d->nshards; i++)
    nano_aggregate_destroy(d->shards[i]);
  free(d->shards);
  free(d->blocks);
  pthread_mutex_destroy(&d->shard_lock);
  free(d->kernel);
  free(d->kernel_name);
  free(d);
}

void nano_dispatch_cancel(struct nano_dispatch *d) {
  if (!d->on_device || d->table)
    nano_dh_drainer_detach(g_d.drainer, d->buf);
  nano_dh_pool_release(d->pool, d->buf);
  dispatch_free(d);
}

/* Ends d's stream of records, the last ones handed to fn(arg): detach, final
 * drain, drops counted. */
static void dispatch_drain_end(struct nano_dispatch *d, nano_dh_record_fn fn, void *arg) {
  nano_dh_drainer_detach(g_d.drainer, d->buf);
  if (nano_dh_buffer_finish(d->buf, fn, arg, &d->st) < 0)
    dispatch_log("dispatch %" PRIu64 " of %s: the buffer's counters cannot be read",
                 d->info.dispatch_id, d->info.kernel);
  d->dropped = nano_dh_buffer_dropped_at_finish(d->buf) - d->dropped_before;
}

/* A GPU dispatch summed by its twin: the records it still made drained and
 * summed on the host (d->fallback), then the table read back into the same
 * sums. */
static void dispatch_table_end(struct nano_dispatch *d) {
  dispatch_drain_end(d, dispatch_fallback, d);
  void *table = malloc(d->table->bytes);
  if (!table || nano_dh_buffer_get_sums(d->buf, table, d->table->bytes) != 0 ||
      nano_aggregate_add_table(d->fallback, table, d->table->bytes) != 0) {
    dispatch_log("dispatch %" PRIu64 " of %s: its sums cannot be read back from the device (%s)",
                 d->info.dispatch_id, d->info.kernel,
                 table ? "a copy failed, or the table is damaged" : "out of memory");
    nano_dispatch_shard_lost(d, 1); /* the reports say they are incomplete */
  }
  free(table);
}

/* The device's sums of d, its shards merged into the first, handed to the
 * handlers. */
static void dispatch_hand_sums(struct nano_dispatch *d) {
  if (!d->nshards && !(d->shards = calloc(1, sizeof *d->shards))) {
    dispatch_log("dispatch %" PRIu64 " of %s: out of memory for its sums", d->info.dispatch_id,
                 d->info.kernel);
    nano_dispatch_shard_lost(d, 1);
    return;
  }
  if (!d->nshards &&
      (d->shards[0] = nano_aggregate_create(&d->info, d->agg_what, d->agg_page_bytes)))
    d->nshards = 1;
  for (size_t i = 1; i < d->nshards; i++)
    nano_aggregate_merge(d->shards[0], d->shards[i]);
  if (!d->nshards || nano_aggregate_view(d->shards[0], "device", &d->view) != 0) {
    dispatch_log("dispatch %" PRIu64 " of %s: out of memory for its sums", d->info.dispatch_id,
                 d->info.kernel);
    nano_dispatch_shard_lost(d, 1); /* the reports say they are incomplete */
    return;
  }
  d->agg_records = nano_aggregate_records(d->shards[0]);
  nano_chain_aggregates(d->chain, &d->view);
}

/* The block times a GPU twin stamped (nano/dh_format.h) as d's blocks:
 * device ns mapped to the trace's clock by putting the earliest block start
 * at the dispatch's start (the launch's events); their spacing is the
 * device clock's. A block without both stamps (left out by NANO_BLOCKS) is
 * not one. */
static void dispatch_block_table_end(struct nano_dispatch *d, int64_t start) {
  size_t n = d->block_table;
  uint64_t *t = malloc(n * NANO_DH_BLOCK_WORDS * sizeof *t);
  if (!t || nano_dh_buffer_get_block_times(d->buf, t) != 0) {
    dispatch_log("dispatch %" PRIu64 " of %s: its block times cannot be read back from the "
                 "device (%s)",
                 d->info.dispatch_id, d->info.kernel, t ? "a copy failed" : "out of memory");
    d->blocks_dropped += n;
    free(t);
    return;
  }
  uint64_t first = UINT64_MAX;
  for (size_t i = 0; i < n; i++) {
    const uint64_t *e = t + i * NANO_DH_BLOCK_WORDS;
    if (e[NANO_DH_BLOCK_START] && e[NANO_DH_BLOCK_END] && e[NANO_DH_BLOCK_START] < first)
      first = e[NANO_DH_BLOCK_START];
  }
  const uint32_t *g = d->info.grid;
  for (size_t i = 0; i < n; i++) {
    const uint64_t *e = t + i * NANO_DH_BLOCK_WORDS;
    uint64_t s = e[NANO_DH_BLOCK_START], f = e[NANO_DH_BLOCK_END];
    if (!s || !f)
      continue;
    uint32_t b[3] = {(uint32_t)(i % g[0]), (uint32_t)(i / g[0] % g[1]),
                     (uint32_t)(i / ((uint64_t)g[0] * g[1]))};
    nano_dispatch_block_time(d, b, (uint32_t)e[NANO_DH_BLOCK_UNIT], start + (int64_t)(s - first),
                             start + (int64_t)((f > s ? f : s) - first));
  }
  free(t);
}

static int dispatch_block_cmp(const void *a, const void *b) {
  const struct nano_block_time *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

static void dispatch_end(struct nano_dispatch *d, int64_t start, int64_t end, uint64_t api,
                         struct nano_dispatch_hold *hold);

void nano_dispatch_end(struct nano_dispatch *d, int64_t start, int64_t end, uint64_t api) {
  dispatch_end(d, start, end, api, NULL);
}

void nano_dispatch_end_held(struct nano_dispatch *d, int64_t start, int64_t end, uint64_t api,
                            struct nano_dispatch_hold *hold) {
  dispatch_end(d, start, end, api, hold);
}

void nano_dispatch_hold_release(struct nano_dispatch_hold *hold) {
  if (hold->buf)
    nano_dh_pool_release(hold->pool, hold->buf);
  hold->buf = NULL;
}

/* Ends d; its buffer goes back to the pool, or into *hold. */
static void dispatch_end(struct nano_dispatch *d, int64_t start, int64_t end, uint64_t api,
                         struct nano_dispatch_hold *hold) {
  if (d->block_table)
    dispatch_block_table_end(d, start);
  if (d->nblocks > 1)
    qsort(d->blocks, d->nblocks, sizeof *d->blocks, dispatch_block_cmp);
  if (d->on_device) {
    if (d->table)
      dispatch_table_end(d);
    dispatch_hand_sums(d);
    d->dropped += atomic_load(&d->agg_lost);
  } else {
    dispatch_drain_end(d, nano_chain_handle, d->chain);
  }
  d->start = start;
  d->end = end;
  d->api = api;
  if (hold)
    *hold = (struct nano_dispatch_hold){d->pool, d->buf};
  else
    nano_dh_pool_release(d->pool, d->buf);
  d->buf = NULL;
  if (g_d.pick != PICK_RANDOM) {
    dispatch_publish(d);
    dispatch_free(d);
    return;
  }
  /* reservoir: this pick replaces the kernel's earlier one */
  pthread_mutex_lock(&g_d.lock);
  struct nano_dispatch *old = d->ks->kept;
  d->ks->kept = d;
  pthread_mutex_unlock(&g_d.lock);
  dispatch_free(old);
}

/* The most kernel names the message of an unmatched NANO_KERNELS lists. */
#define DISPATCH_UNSELECTED_NAMES 5

/* At exit: a NANO_KERNELS that selected none of the kernels launched is said,
 * with some of their names (never a silent no-op). */
static void dispatch_say_unselected(void) {
  if (!g_d.have_regex || !g_d.kernels)
    return;
  size_t n = 0;
  for (struct kernel_state *k = g_d.kernels; k; k = k->next) {
    if (k->selected)
      return;
    n++;
  }
  char names[1024] = "";
  size_t used = 0, listed = 0;
  for (struct kernel_state *k = g_d.kernels; k && listed < DISPATCH_UNSELECTED_NAMES;
       k = k->next, listed++) {
    int w = snprintf(names + used, sizeof names - used, "%s%s", listed ? ", " : "",
                     k->demangled ? k->demangled : k->name);
    if (w < 0 || (size_t)w >= sizeof names - used)
      break;
    used += (size_t)w;
  }
  dispatch_log("NANO_KERNELS=%s selected none of the %zu kernel%s launched (%s%s): nothing was "
               "instrumented",
               g_d.kernels_setting ? g_d.kernels_setting : "", n, n == 1 ? "" : "s", names,
               n > listed ? ", ..." : "");
}

/* At exit, before the trace writer stops (the tracer's component exit hook):
 * reports withheld by NANO_DISPATCHES=random, then the pool and drain thread
 * go. */
static void dispatch_fini(void) {
  pthread_mutex_lock(&g_d.lock);
  g_d.finished = 1;
  pthread_mutex_unlock(&g_d.lock);
  for (struct kernel_state *k = g_d.kernels; k; k = k->next) {
    if (!k->kept)
      continue;
    dispatch_publish(k->kept);
    dispatch_free(k->kept);
    k->kept = NULL;
  }
  dispatch_say_unselected();
  if (g_d.pool_exhausted)
    dispatch_log("%" PRIu64 " dispatches ran uninstrumented: every buffer of the pool was in use "
                 "(NANO_BUFFER_POOL=%u)",
                 g_d.pool_exhausted, g_d.pool_size);
  if (g_d.drainer)
    nano_dh_drainer_stop(g_d.drainer);
  g_d.drainer = NULL;
  while (g_d.pools) {
    struct placement_pool *p = g_d.pools;
    g_d.pools = p->next;
    nano_dh_pool_destroy(p->pool);
    free(p);
  }
  if (g_d.out)
    fflush(g_d.out);
  if (g_d.out_owned) {
    if (fclose(g_d.out) != 0)
      dispatch_log("NANO_ANALYZER_OUTPUT: writing the reports failed: %s", strerror(errno));
    g_d.out = stderr;
    g_d.out_owned = 0;
  }
}

__attribute__((constructor(RPDI_REGISTER_DISPATCH))) static void dispatch_register(void) {
  static const struct rpdi_component dispatch = {"dispatch", NULL, dispatch_fini, NULL};
  rpdi_component_register(&dispatch);
}
