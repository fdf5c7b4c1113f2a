/*
 * hsa_tool.cpp: libnano_rpd.so as an HSA tool (HSA_TOOLS_LIB; issue 38).
 * C++ only because ROCr's table header, hsa_api_trace.h, is; the code is C.
 *
 * ROCr loads every library named in HSA_TOOLS_LIB at hsa_init and calls its
 * OnLoad with the runtime's API table, through which every hsa_* call of the
 * program goes. OnLoad keeps a copy of the table (the tool calls the runtime
 * only through that copy) and puts its hooks in:
 *
 *   hsa_queue_create            -> an intercept queue
 *                                  (hsa_amd_queue_intercept_create) with
 *                                  hsa_submit as its handler and profiling on
 *   hsa_code_object_reader_*,   -> the program's kernels: name, argument list
 *   hsa_executable_load_agent_     (kerneldb, only while a kernel cache is
 *   code_object, _freeze           set), kernarg and segment sizes, by kernel
 *                                  object
 *
 * Each kernel dispatch packet is copied, its completion signal replaced by
 * one of the tool's (a pool), and written on; nothing waits, so kernels run
 * as concurrently as before. When the tool's signal completes (an async
 * handler on ROCr's thread), the dispatch's start and end
 * (hsa_amd_profiling_get_dispatch_time, converted to the trace's clock)
 * become a rocpd op, opType KernelExecution, linked to an API row
 * hsa_kernel_dispatch (its submission) that carries grid, workgroup, LDS and
 * scratch; then the program's own signal is decremented, so that it waits
 * exactly as before, only after the row exists.
 *
 * The kernel cache (NANO_KERNEL_CACHE=DIR[:DIR...]): at the first queue of a
 * GPU agent, every file of the directories that kerneldb reads (code
 * objects, offload bundles, fat binaries) has its code objects for the
 * agent's arch loaded into executables of the tool's own. A kernel K of the
 * program then runs as
 *   - its twin from the cache (NANO_INSTRUMENT=1, the dispatch API picks the
 *     dispatch): one more argument, the dh_comms buffer in fine-grained
 *     system memory; records drained and analysed as for any twin, the site
 *     table read from the cache file;
 *   - else a kernel of the cache with K's name (plain mode: A/B timing of a
 *     rebuilt kernel);
 * when their explicit argument lists (size, offset, alignment, value kind,
 * from the metadata of both code objects) are identical; else K runs, said
 * once per kernel with the reason. The kernarg segment is rebuilt in a slot
 * of the tool's kernarg pool: explicit arguments copied, the buffer at the
 * twin's offset for it, hidden arguments copied by value kind from the
 * original's (or made from the packet where it has none); the group segment
 * keeps the dispatch's dynamic LDS above the replacement's static LDS, the
 * private segment is the replacement's. A full pool (NANO_KERNARG_POOL
 * slots) runs K (counted). The program's module variables are copied into
 * the replacement's copies before the dispatch and the writable ones back
 * after it (see "module variables around a replaced dispatch" below).
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define AMD_INTERNAL_BUILD /* hsa_api_trace.h includes its siblings by this */
#include "hsa/amd_hsa_signal.h"
#include "hsa/hsa.h"
#include "hsa/hsa_api_trace.h"
#include "hsa/hsa_ext_amd.h"

#include "dispatch.h"
#include "gpu.h"
#include "hip_api.h"
#include "kdb_load.h"
#include "nano/dh_comms.h"
#include "rpd.h"
#include "rpd_internal.h"
extern "C" { /* C headers written for C callers only */
#include "nano/demangle.h"
#include "nano/settings.h"
}

#define EXPORT extern "C" __attribute__((visibility("default")))

/* Buckets of the kernel-object table (a power of two). */
#define HSA_KERNEL_BUCKETS 4096
/* Signals made at once when the pool is empty. */
#define HSA_SIGNAL_BATCH 64
/* The tool's kernarg pool: slots of this many bytes (a kernel whose kernarg
 * segment is larger is not replaced) ... */
#define HSA_KERNARG_SLOT 4096
/* ... NANO_KERNARG_POOL of them (dispatches replaced and not yet complete):
 * by default this many, at most the second. */
#define HSA_KERNARG_SLOTS 1024
#define HSA_KERNARG_SLOTS_MAX 65536
/* How long OnUnload waits for dispatches still running to complete. */
#define HSA_UNLOAD_WAIT_MS 1000
#define HSA_UNLOAD_POLL_US 1000
/* Samples taken to relate the HSA system clock to the trace's. */
#define HSA_CLOCK_SAMPLES 16
/* Packets handled on the stack per submission; more are allocated. */
#define HSA_BATCH 16
#define HSA_PACKET_BYTES 64
/* GPU agents the tool serves, at most. */
#define HSA_MAX_AGENTS 16
/* Code object readers alive at once that the tool follows (created, not yet
 * destroyed): past this many the newest takes the last place. */
#define HSA_MAX_READERS 64

struct hsa_arg {
  char kind[48];
  uint32_t size, offset, align;
  int hidden;
};

/* A module variable of a cache code object, where the cache's executable
 * put it. */
struct hsa_global {
  char *name;
  uint64_t address;
  uint32_t size;
  int writable; /* kernels may write it (__device__), else __constant__ */
};

/* A kernel of the cache: a replacement for the program's kernel `key`. */
struct hsa_alt {
  char *key;  /* the program's kernel it replaces (mangled) */
  char *path; /* the cache file                                  */
  uint64_t agent, object;
  uint32_t kernarg, group, priv;
  int twin;
  int dup_said;      /* another entry for key was said to be ignored */
  size_t buffer_arg; /* a twin's buffer argument, in args[] */
  size_t nargs;
  struct hsa_arg *args;
  const struct hsa_global *globals; /* its code object's (hsa_cache_globals) */
  size_t nglobals;
  struct hsa_alt *next;
};

/* A module variable of a program's kernel and its replacement's copy. */
struct hsa_var {
  uint64_t program, replacement;
  uint32_t size;
  int writable;
};

/* A replacement of a program's kernel, and the variables copied around
 * each of its dispatches (hsa_pair). */
struct hsa_use {
  const struct hsa_alt *alt;
  struct hsa_var *vars;
  size_t nvars, nwritable;
};

/* A kernel of the program, by kernel object. */
struct hsa_kernel {
  uint64_t object, agent;
  uint64_t executable; /* the program's, which holds its module variables */
  char *name;          /* mangled, without ".kd" */
  char *shown;         /* demangled, for the trace */
  char *twin_shown;
  uint32_t kernarg, group, priv;
  size_t nargs; /* its argument list, when the cache needed it; else 0 */
  struct hsa_arg *args;
  int args_known;
  int resolved;  /* its replacements were looked for */
  int copy_said; /* failed copies of its variables were said: bit 1 in, bit 0 back */
  struct hsa_use twin, plain;
  struct hsa_kernel *next;
};

/* Argument lists read from the program's code objects at load, by
 * executable, until freeze gives their kernel objects. */
struct hsa_loaded {
  uint64_t executable;
  char *name;
  size_t nargs;
  struct hsa_arg *args;
  struct hsa_loaded *next;
};

struct hsa_queue_info {
  uint64_t agent;
  int id, gpu;
  char arch[32]; /* the agent's ("gfx90a"): dispatches keep pointing at it */
  uint32_t wave;
};

/* One dispatch between its submission and its completion. */
struct hsa_pending {
  hsa_signal_t ours, program;
  struct hsa_kernel *kernel;
  struct hsa_queue_info *queue;
  uint64_t api;              /* its hsa_kernel_dispatch row, or 0 */
  struct rpd_hip_call *call; /* the HIP call that submitted it, or NULL */
  int twin;
  struct nano_dispatch *dispatch;
  void *kernarg; /* a slot of the pool, or NULL */
  /* a replacement's module variables (NULL: none to copy), and the signals
   * of their copies' chain (hsa_copy_packets) */
  const struct hsa_use *use;
  hsa_signal_t before, copied_in, copied_out;
  struct hsa_pending *next;
};

static struct {
  CoreApiTable core; /* the runtime's functions, as OnLoad found them */
  AmdExtTable amd;
  pthread_mutex_t lock; /* everything below but the kernel table's reads */
  struct hsa_kernel *kernels[HSA_KERNEL_BUCKETS]; /* read without the lock */
  struct hsa_loaded *loaded;
  struct {
    uint64_t reader;
    const void *data;
    size_t size;
    int fd;
  } readers[HSA_MAX_READERS];
  int nreaders;
  hsa_signal_t *signals;
  int nsignals, signals_cap;
  struct hsa_pending *free_pending;
  int queues;
  uint64_t gpus[HSA_MAX_AGENTS];
  int ngpus;
  /* clock: trace ns = system ticks * ns_per_tick + offset */
  double ns_per_tick;
  int64_t offset;
  /* the kernel cache */
  const char *cache;
  struct hsa_alt *alts;
  uint64_t cache_agents[HSA_MAX_AGENTS];
  int ncache_agents;
  hsa_amd_memory_pool_t kernarg_pool;
  int have_kernarg_pool;
  char *slab;
  int *free_slots;
  int nfree_slots, nslots, slab_tried;
  uint64_t pool_full;
  uint64_t in_flight; /* dispatches given the tool's signal, not yet complete (atomic) */
} g_hsa = {};

static void hsa_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void hsa_log(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rpdi_logv("nanoprobe: hsa: ", fmt, ap);
  va_end(ap);
}

static const char *hsa_error(hsa_status_t rc) {
  const char *s = NULL;
  if (!g_hsa.core.hsa_status_string_fn ||
      g_hsa.core.hsa_status_string_fn(rc, &s) != HSA_STATUS_SUCCESS || !s)
    return "unknown HSA error";
  return s;
}

/* ---- the clock ------------------------------------------------------------------- */

/* Relates HSA's system timestamps to rpd_now(): the pair read closest
 * together of HSA_CLOCK_SAMPLES. */
static void hsa_clock_init(void) {
  uint64_t freq = 0;
  if (g_hsa.core.hsa_system_get_info_fn(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &freq) !=
          HSA_STATUS_SUCCESS ||
      !freq)
    freq = 1000000000ull;
  g_hsa.ns_per_tick = 1e9 / (double)freq;
  int64_t best = INT64_MAX;
  for (int i = 0; i < HSA_CLOCK_SAMPLES; i++) {
    uint64_t ticks;
    int64_t before = rpd_now();
    if (g_hsa.core.hsa_system_get_info_fn(HSA_SYSTEM_INFO_TIMESTAMP, &ticks) != HSA_STATUS_SUCCESS)
      return;
    int64_t after = rpd_now();
    if (after - before < best) {
      best = after - before;
      g_hsa.offset = before + (after - before) / 2 - (int64_t)((double)ticks * g_hsa.ns_per_tick);
    }
  }
}

/* A time of HSA's system clock domain (what the runtime's profiling calls
 * give, dispatches' and copies' alike) on the trace's clock. */
static int64_t hsa_trace_time(uint64_t sys) {
  return (int64_t)((double)sys * g_hsa.ns_per_tick) + g_hsa.offset;
}

/* The ordinal of GPU agent `agent` (its ops' gpuId), or -1 for another. */
static int hsa_gpu_ordinal(uint64_t agent) {
  for (int i = 0; i < g_hsa.ngpus; i++) /* set at load, read-only after */
    if (g_hsa.gpus[i] == agent)
      return i;
  return -1;
}

/* ---- kernels of the program -------------------------------------------------------- */

static size_t hsa_bucket(uint64_t object) {
  return (size_t)((object * 0x9E3779B97F4A7C15ull) >> 52) & (HSA_KERNEL_BUCKETS - 1);
}

/* The kernel with kernel object `object`, newest load first; NULL if none. */
static struct hsa_kernel *hsa_kernel_find(uint64_t object) {
  for (struct hsa_kernel *k = __atomic_load_n(&g_hsa.kernels[hsa_bucket(object)], __ATOMIC_ACQUIRE);
       k; k = k->next)
    if (k->object == object)
      return k;
  return NULL;
}

static struct hsa_arg *hsa_args_copy(const kdb_kernel *k, size_t *n) {
  *n = k->arg_count; /* all of them: a rebuilt kernarg segment needs every one */
  struct hsa_arg *a = (struct hsa_arg *)calloc(*n ? *n : 1, sizeof *a);
  if (!a)
    return NULL;
  for (size_t i = 0; i < *n; i++) {
    snprintf(a[i].kind, sizeof a[i].kind, "%s", k->args[i].value_kind ? k->args[i].value_kind : "");
    a[i].size = k->args[i].size, a[i].offset = k->args[i].offset, a[i].align = k->args[i].align;
    a[i].hidden = k->args[i].hidden;
  }
  return a;
}

/* Symbols the compiler and nanoprobe put in every code object, which no
 * kernel reads as program data: HIP's __hip_ symbols and its block and
 * thread coordinate dummies, the plugin's site tables (kernel descriptors,
 * ".kd", too). */
static int hsa_no_variable(const char *name) {
  static const char *const skipped[] = {"__hip_", "_ZN17__HIP_Coordinates", "__nano_"};
  size_t l = strlen(name);
  if (l > 3 && !strcmp(name + l - 3, ".kd"))
    return 1;
  for (size_t k = 0; k < sizeof skipped / sizeof skipped[0]; k++)
    if (!strncmp(name, skipped[k], strlen(skipped[k])))
      return 1;
  return 0;
}

/* The address and size of module variable `name` of executable e on agent:
 * HSA_STATUS_SUCCESS; HSA_STATUS_ERROR_INVALID_SYMBOL_NAME where e has
 * none; HSA_STATUS_ERROR where its symbol is no variable; else the
 * runtime's error. */
static hsa_status_t hsa_variable_at(uint64_t e, uint64_t agent, const char *name, uint64_t *address,
                                    uint32_t *size) {
  CoreApiTable *c = &g_hsa.core;
  hsa_agent_t ag = {agent};
  hsa_executable_symbol_t s;
  hsa_symbol_kind_t kind;
  hsa_status_t rc = c->hsa_executable_get_symbol_by_name_fn({e}, name, &ag, &s);
  if (rc == HSA_STATUS_SUCCESS)
    rc = c->hsa_executable_symbol_get_info_fn(s, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, &kind);
  if (rc == HSA_STATUS_SUCCESS && kind != HSA_SYMBOL_KIND_VARIABLE)
    return HSA_STATUS_ERROR;
  if (rc == HSA_STATUS_SUCCESS)
    rc = c->hsa_executable_symbol_get_info_fn(s, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS,
                                              address);
  if (rc == HSA_STATUS_SUCCESS)
    rc = c->hsa_executable_symbol_get_info_fn(s, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE, size);
  return rc;
}

/* The module variables (__device__, __constant__) code object co defines,
 * as executable exe holds them on agent, into *out (*n of them, one
 * allocation); 0, or -1 with why. */
static int hsa_cache_globals(const struct nano_kdb_api *api, kdb *db, const kdb_code_object *co,
                             hsa_executable_t exe, uint64_t agent, struct hsa_global **out,
                             size_t *n, char *why, size_t len) {
  *out = NULL, *n = 0;
  long count = api->globals(db, co, NULL, 0, why, len);
  if (count <= 0)
    return (int)(count < 0 ? -1 : 0);
  kdb_global *g = (kdb_global *)calloc((size_t)count, sizeof *g);
  if (!g || api->globals(db, co, g, (size_t)count, why, len) != count) {
    if (!g)
      snprintf(why, len, "out of memory");
    free(g);
    return -1;
  }
  size_t names = 0;
  for (long i = 0; i < count; i++)
    names += strlen(g[i].name) + 1;
  /* the names after the array, in the same allocation */
  struct hsa_global *v = (struct hsa_global *)calloc(1, (size_t)count * sizeof *v + names);
  if (!v) {
    snprintf(why, len, "out of memory");
    free(g);
    return -1;
  }
  *out = v;
  char *at = (char *)(v + count);
  for (long i = 0; i < count; i++) {
    if (hsa_no_variable(g[i].name))
      continue;
    struct hsa_global *x = &v[(*n)++];
    hsa_status_t rc = hsa_variable_at(exe.handle, agent, g[i].name, &x->address, &x->size);
    if (rc != HSA_STATUS_SUCCESS) {
      snprintf(why, len, "its module variable %s is not in the loaded executable (%s)", g[i].name,
               hsa_error(rc));
      free(g);
      free(v);
      *out = NULL, *n = 0;
      return -1;
    }
    x->name = strcpy(at, g[i].name);
    at += strlen(at) + 1;
    x->writable = g[i].writable;
  }
  free(g);
  return 0;
}

static int hsa_is_cached(const char *name) {
  for (struct hsa_alt *a = g_hsa.alts; a; a = a->next)
    if (!strcmp(a->key, name))
      return 1;
  return 0;
}

/* The argument lists of the kernels of code object [data, data+size) that
 * the cache may replace, kept for executable e until its freeze (lock held). */
static void hsa_read_arguments(uint64_t e, const void *data, size_t size) {
  char err[256];
  const struct nano_kdb_api *kdb_api = nano_kdb_load(err, sizeof err);
  kdb *db;
  if (!kdb_api || kdb_api->open_memory(data, size, "program code object", &db, err, sizeof err)) {
    hsa_log("a code object of the program cannot be read (%s): its kernels are not replaced", err);
    return;
  }
  for (size_t i = 0; i < kdb_api->kernel_count(db); i++) {
    const kdb_kernel *k = kdb_api->kernel_at(db, i);
    if (!hsa_is_cached(k->name))
      continue;
    struct hsa_loaded *l = (struct hsa_loaded *)calloc(1, sizeof *l);
    if (!l || !(l->name = strdup(k->name)) || !(l->args = hsa_args_copy(k, &l->nargs))) {
      if (l) {
        free(l->name);
        free(l->args);
      }
      free(l);
      continue;
    }
    l->executable = e;
    l->next = g_hsa.loaded;
    g_hsa.loaded = l;
  }
  kdb_api->close(db);
}

/* Follows reader r (its code object in memory, or its file) until its load,
 * while a cache may need the argument lists it holds. */
static void hsa_reader_add(uint64_t r, const void *data, size_t size, int fd) {
  if (!g_hsa.alts)
    return;
  pthread_mutex_lock(&g_hsa.lock);
  int i = g_hsa.nreaders < HSA_MAX_READERS ? g_hsa.nreaders++ : HSA_MAX_READERS - 1;
  g_hsa.readers[i] = {r, data, size, fd};
  pthread_mutex_unlock(&g_hsa.lock);
}

static hsa_status_t hook_reader_memory(const void *data, size_t size,
                                       hsa_code_object_reader_t *out) {
  hsa_status_t rc = g_hsa.core.hsa_code_object_reader_create_from_memory_fn(data, size, out);
  if (rc == HSA_STATUS_SUCCESS)
    hsa_reader_add(out->handle, data, size, -1);
  return rc;
}

static hsa_status_t hook_reader_file(hsa_file_t fd, hsa_code_object_reader_t *out) {
  hsa_status_t rc = g_hsa.core.hsa_code_object_reader_create_from_file_fn(fd, out);
  if (rc == HSA_STATUS_SUCCESS)
    hsa_reader_add(out->handle, NULL, 0, fd);
  return rc;
}

static hsa_status_t hook_reader_destroy(hsa_code_object_reader_t r) {
  pthread_mutex_lock(&g_hsa.lock);
  for (int i = 0; i < g_hsa.nreaders; i++)
    if (g_hsa.readers[i].reader == r.handle)
      g_hsa.readers[i] = g_hsa.readers[--g_hsa.nreaders];
  pthread_mutex_unlock(&g_hsa.lock);
  return g_hsa.core.hsa_code_object_reader_destroy_fn(r);
}

static hsa_status_t hook_load(hsa_executable_t e, hsa_agent_t agent, hsa_code_object_reader_t r,
                              const char *options, hsa_loaded_code_object_t *out) {
  hsa_status_t rc = g_hsa.core.hsa_executable_load_agent_code_object_fn(e, agent, r, options, out);
  if (rc != HSA_STATUS_SUCCESS || !g_hsa.alts)
    return rc;
  pthread_mutex_lock(&g_hsa.lock);
  for (int i = 0; i < g_hsa.nreaders; i++) {
    if (g_hsa.readers[i].reader != r.handle)
      continue;
    if (g_hsa.readers[i].data) {
      hsa_read_arguments(e.handle, g_hsa.readers[i].data, g_hsa.readers[i].size);
    } else {
      struct stat st;
      int fd = g_hsa.readers[i].fd;
      char *copy =
          fstat(fd, &st) == 0 && st.st_size > 0 ? (char *)malloc((size_t)st.st_size) : NULL;
      if (copy && pread(fd, copy, (size_t)st.st_size, 0) == st.st_size)
        hsa_read_arguments(e.handle, copy, (size_t)st.st_size);
      free(copy);
    }
  }
  pthread_mutex_unlock(&g_hsa.lock);
  return rc;
}

static char *hsa_twin_shown(const char *shown) {
  char *s;
  return asprintf(&s, "%s%s", shown, NANO_KERNEL_TWIN_MARK) < 0 ? NULL : s;
}

static hsa_status_t hsa_add_symbol(hsa_executable_t e, hsa_executable_symbol_t s, void *data) {
  (void)data;
  hsa_symbol_kind_t kind;
  uint32_t len = 0;
  CoreApiTable *c = &g_hsa.core;
  if (c->hsa_executable_symbol_get_info_fn(s, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, &kind) !=
          HSA_STATUS_SUCCESS ||
      kind != HSA_SYMBOL_KIND_KERNEL ||
      c->hsa_executable_symbol_get_info_fn(s, HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH, &len) !=
          HSA_STATUS_SUCCESS)
    return HSA_STATUS_SUCCESS;
  struct hsa_kernel *k = (struct hsa_kernel *)calloc(1, sizeof *k);
  char *name = (char *)calloc(1, (size_t)len + 1);
  hsa_agent_t agent;
  if (!k || !name ||
      c->hsa_executable_symbol_get_info_fn(s, HSA_EXECUTABLE_SYMBOL_INFO_NAME, name) !=
          HSA_STATUS_SUCCESS ||
      c->hsa_executable_symbol_get_info_fn(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                                           &k->object) != HSA_STATUS_SUCCESS ||
      c->hsa_executable_symbol_get_info_fn(s, HSA_EXECUTABLE_SYMBOL_INFO_AGENT, &agent) !=
          HSA_STATUS_SUCCESS) {
    free(k);
    free(name);
    return HSA_STATUS_SUCCESS;
  }
  c->hsa_executable_symbol_get_info_fn(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
                                       &k->kernarg);
  c->hsa_executable_symbol_get_info_fn(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE,
                                       &k->group);
  c->hsa_executable_symbol_get_info_fn(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE,
                                       &k->priv);
  size_t n = strlen(name);
  if (n > 3 && !strcmp(name + n - 3, ".kd"))
    name[n - 3] = 0;
  k->name = name;
  k->agent = agent.handle;
  k->executable = e.handle;
  k->shown = nano_kernel_shown(name); /* a plugin-built program's twin: as its kernel, marked */
  if (!k->shown)
    k->shown = strdup(name);
  k->twin_shown = hsa_twin_shown(k->shown ? k->shown : name);
  for (struct hsa_loaded **l = &g_hsa.loaded; *l;)
    if ((*l)->executable == e.handle && !strcmp((*l)->name, name)) {
      struct hsa_loaded *f = *l;
      k->args = f->args, k->nargs = f->nargs, k->args_known = 1;
      *l = f->next;
      free(f->name);
      free(f);
    } else {
      l = &(*l)->next;
    }
  size_t b = hsa_bucket(k->object);
  k->next = g_hsa.kernels[b];
  __atomic_store_n(&g_hsa.kernels[b], k, __ATOMIC_RELEASE);
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t hook_freeze(hsa_executable_t e, const char *options) {
  hsa_status_t rc = g_hsa.core.hsa_executable_freeze_fn(e, options);
  if (rc == HSA_STATUS_SUCCESS) {
    pthread_mutex_lock(&g_hsa.lock);
    g_hsa.core.hsa_executable_iterate_symbols_fn(e, hsa_add_symbol, NULL);
    pthread_mutex_unlock(&g_hsa.lock);
  }
  return rc;
}

/* ---- the kernel cache ------------------------------------------------------------ */

static int hsa_agent_arch(uint64_t agent, char *arch, size_t len) {
  char name[64] = "";
  if (g_hsa.core.hsa_agent_get_info_fn({agent}, HSA_AGENT_INFO_NAME, name) != HSA_STATUS_SUCCESS)
    return -1;
  snprintf(arch, len, "%.*s", (int)strcspn(name, ":"), name);
  return 0;
}

/* Loads the code object image of co into an executable of the tool's on
 * agent, and adds its kernels to the cache (lock held). */
static void hsa_cache_load(uint64_t agent, const struct nano_kdb_api *api, kdb *db,
                           const kdb_code_object *co, const char *path) {
  CoreApiTable *c = &g_hsa.core;
  hsa_code_object_reader_t reader;
  hsa_executable_t exe;
  hsa_status_t rc = c->hsa_code_object_reader_create_from_memory_fn(
      api->image(db, co), (size_t)co->image_size, &reader);
  if (rc != HSA_STATUS_SUCCESS) {
    hsa_log("kernel cache: %s: %s; skipped", path, hsa_error(rc));
    return;
  }
  rc = c->hsa_executable_create_alt_fn(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
                                       NULL, &exe);
  if (rc == HSA_STATUS_SUCCESS) {
    rc = c->hsa_executable_load_agent_code_object_fn(exe, {agent}, reader, NULL, NULL);
    if (rc == HSA_STATUS_SUCCESS)
      rc = c->hsa_executable_freeze_fn(exe, NULL);
    if (rc != HSA_STATUS_SUCCESS)
      c->hsa_executable_destroy_fn(exe);
  }
  c->hsa_code_object_reader_destroy_fn(reader);
  if (rc != HSA_STATUS_SUCCESS) {
    hsa_log("kernel cache: %s (%s): cannot be loaded: %s; skipped", path, co->target_id,
            hsa_error(rc));
    return;
  }
  struct hsa_global *globals;
  size_t nglobals;
  char why[512];
  if (hsa_cache_globals(api, db, co, exe, agent, &globals, &nglobals, why, sizeof why) != 0) {
    hsa_log("kernel cache: %s (%s): %s; its kernels are not used", path, co->target_id, why);
    c->hsa_executable_destroy_fn(exe);
    return;
  }
  for (size_t i = 0; i < api->kernel_count(db); i++) {
    const kdb_kernel *k = api->kernel_at(db, i);
    if (k->co != co)
      continue;
    const char *key = k->original ? k->original->name : k->name;
    int twin = k->original != NULL;
    int dup = 0;
    for (struct hsa_alt *a = g_hsa.alts; a && !dup; a = a->next)
      if (a->agent == agent && a->twin == twin && !strcmp(a->key, key)) {
        if (!a->dup_said)
          hsa_log("kernel cache: %s%s is in %s and %s: the first is used", key,
                  twin ? " (its twin)" : "", a->path, path);
        a->dup_said = dup = 1;
      }
    char sym[1024];
    hsa_executable_symbol_t s;
    struct hsa_alt *a = dup ? NULL : (struct hsa_alt *)calloc(1, sizeof *a);
    if (!a)
      continue;
    snprintf(sym, sizeof sym, "%s", k->symbol ? k->symbol : k->name);
    hsa_agent_t ag = {agent};
    if (c->hsa_executable_get_symbol_by_name_fn(exe, sym, &ag, &s) != HSA_STATUS_SUCCESS ||
        c->hsa_executable_symbol_get_info_fn(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                                             &a->object) != HSA_STATUS_SUCCESS ||
        !(a->key = strdup(key)) || !(a->path = strdup(path)) ||
        !(a->args = hsa_args_copy(k, &a->nargs))) {
      free(a->key);
      free(a->path);
      free(a->args);
      free(a);
      continue;
    }
    c->hsa_executable_symbol_get_info_fn(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
                                         &a->kernarg);
    c->hsa_executable_symbol_get_info_fn(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE,
                                         &a->group);
    c->hsa_executable_symbol_get_info_fn(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE,
                                         &a->priv);
    a->agent = agent;
    a->twin = twin;
    a->buffer_arg = k->twin_arg_index;
    a->globals = globals, a->nglobals = nglobals; /* shared by the code object's kernels */
    a->next = g_hsa.alts;
    g_hsa.alts = a;
  }
}

/* The kernels of a cache file's code objects for one agent's arch (lock
 * held; nano_kcache_fn). */
struct hsa_cache_walk {
  uint64_t agent;
  const char *arch;
  const struct nano_kdb_api *api;
};
static void hsa_cache_file(const char *path, kdb *db, void *ctx) {
  const struct hsa_cache_walk *w = (const struct hsa_cache_walk *)ctx;
  for (size_t j = 0; j < w->api->count(db); j++)
    if (!strcmp(w->api->at(db, j)->arch, w->arch))
      hsa_cache_load(w->agent, w->api, db, w->api->at(db, j), path);
}

/* Reads the cache's directories for agent, once per agent (lock held). Files
 * in name order, directories in the order given: the first one wins. */
static void hsa_cache_open(uint64_t agent) {
  for (int i = 0; i < g_hsa.ncache_agents; i++)
    if (g_hsa.cache_agents[i] == agent)
      return;
  if (g_hsa.ncache_agents == HSA_MAX_AGENTS)
    return;
  g_hsa.cache_agents[g_hsa.ncache_agents++] = agent;
  char arch[64], err[512];
  if (hsa_agent_arch(agent, arch, sizeof arch) != 0)
    return;
  const struct nano_kdb_api *api = nano_kdb_load(err, sizeof err);
  if (!api) {
    hsa_log("NANO_KERNEL_CACHE is not read: %s", err);
    return;
  }
  struct hsa_cache_walk w = {agent, arch, api};
  nano_kcache_each(api, g_hsa.cache, hsa_cache_file, &w, hsa_log);
}

/* Why alt cannot replace k ("" when it can): their explicit arguments. */
static int hsa_args_differ(const struct hsa_kernel *k, const struct hsa_alt *alt, char *why,
                           size_t len) {
  if (!k->args_known) {
    snprintf(why, len, "the program's argument list of it is unknown");
    return 1;
  }
  size_t i = 0, j = 0;
  for (;; i++, j++) {
    if (alt->twin && j == alt->buffer_arg)
      j++;
    int end_k = i >= k->nargs || k->args[i].hidden, end_a = j >= alt->nargs || alt->args[j].hidden;
    if (end_k || end_a) {
      if (end_k != end_a)
        snprintf(why, len, "the program's kernel has %zu explicit arguments, the cache's %s", i,
                 end_k ? "more" : "fewer");
      return end_k != end_a;
    }
    const struct hsa_arg *x = &k->args[i], *y = &alt->args[j];
    if (x->size != y->size || x->offset != y->offset || x->align != y->align ||
        strcmp(x->kind, y->kind)) {
      snprintf(why, len,
               "argument %zu: %s of %u bytes at %u (program) against %s of %u bytes at %u (cache)",
               i, x->kind, x->size, x->offset, y->kind, y->size, y->offset);
      return 1;
    }
  }
}

/* Pairs each module variable of alt's code object with the program's
 * variable of that name (k's executable) into use: the program's values
 * are copied into the replacement's copies before each dispatch and the
 * writable ones back after it, so that it computes with and leaves what k
 * would; one the program lacks stays the cache's. 0, or -1 with why. */
static int hsa_pair(const struct hsa_kernel *k, const struct hsa_alt *alt, struct hsa_use *use,
                    char *why, size_t len) {
  struct hsa_var *vars =
      alt->nglobals ? (struct hsa_var *)calloc(alt->nglobals, sizeof *vars) : NULL;
  if (alt->nglobals && !vars) {
    snprintf(why, len, "out of memory");
    return -1;
  }
  *use = {alt, vars, 0, 0};
  for (size_t i = 0; i < alt->nglobals; i++) {
    const struct hsa_global *g = &alt->globals[i];
    struct hsa_var v = {0, g->address, 0, g->writable};
    hsa_status_t rc = hsa_variable_at(k->executable, k->agent, g->name, &v.program, &v.size);
    if (rc == HSA_STATUS_ERROR_INVALID_SYMBOL_NAME)
      continue; /* the program has none */
    if (rc == HSA_STATUS_ERROR)
      snprintf(why, len, "the program's %s is no variable, the cache's is", g->name);
    else if (rc != HSA_STATUS_SUCCESS)
      snprintf(why, len, "the program's module variable %s cannot be found (%s)", g->name,
               hsa_error(rc));
    else if (v.size != g->size)
      snprintf(why, len, "its module variable %s is %u bytes in the program and %u in the cache",
               g->name, v.size, g->size);
    if (rc != HSA_STATUS_SUCCESS || v.size != g->size) {
      free(vars);
      *use = {};
      return -1;
    }
    if (v.size) { /* nothing to copy of an empty one */
      use->vars[use->nvars++] = v;
      use->nwritable += v.writable != 0;
    }
  }
  return 0;
}

/* Finds k's replacements on its agent, once (lock held). */
static void hsa_resolve(struct hsa_kernel *k) {
  if (k->resolved)
    return;
  k->resolved = 1;
  int vars_said = 0;
  for (struct hsa_alt *a = g_hsa.alts; a; a = a->next) {
    if (a->agent != k->agent || strcmp(a->key, k->name))
      continue;
    char why[512];
    if (hsa_args_differ(k, a, why, sizeof why)) {
      hsa_log("kernel cache: %s%s in %s does not replace %s: %s; it runs as built",
              a->twin ? "the twin of " : "", k->shown ? k->shown : k->name, a->path, k->name, why);
      continue;
    }
    if (a->kernarg > HSA_KERNARG_SLOT) {
      hsa_log("kernel cache: %s in %s takes %u kernarg bytes, more than the %d of a slot; %s runs "
              "as built",
              k->name, a->path, a->kernarg, HSA_KERNARG_SLOT, k->name);
      continue;
    }
    struct hsa_use *use = a->twin ? &k->twin : &k->plain;
    if (use->alt)
      continue;
    if (hsa_pair(k, a, use, why, sizeof why) != 0) {
      if (!vars_said++) /* once per kernel, for its twin and its plain kernel alike */
        hsa_log("kernel cache: %s in %s does not replace %s: %s; it runs as built",
                k->shown ? k->shown : k->name, a->path, k->name, why);
      continue;
    }
  }
}

/* ---- the kernarg pool and the buffers' memory ---------------------------------------- */

static hsa_status_t hsa_find_pool(hsa_amd_memory_pool_t p, void *data) {
  (void)data;
  uint32_t flags = 0;
  bool alloc = false;
  if (g_hsa.amd.hsa_amd_memory_pool_get_info_fn(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags) ==
          HSA_STATUS_SUCCESS &&
      g_hsa.amd.hsa_amd_memory_pool_get_info_fn(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED,
                                                &alloc) == HSA_STATUS_SUCCESS &&
      alloc && (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) && !g_hsa.have_kernarg_pool) {
    g_hsa.kernarg_pool = p;
    g_hsa.have_kernarg_pool = 1;
  }
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t hsa_find_cpu_pools(hsa_agent_t a, void *data) {
  hsa_device_type_t t;
  if (g_hsa.core.hsa_agent_get_info_fn(a, HSA_AGENT_INFO_DEVICE, &t) == HSA_STATUS_SUCCESS &&
      t == HSA_DEVICE_TYPE_CPU)
    g_hsa.amd.hsa_amd_agent_iterate_memory_pools_fn(a, hsa_find_pool, data);
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t hsa_collect_gpus(hsa_agent_t a, void *data) {
  (void)data;
  hsa_device_type_t t;
  if (g_hsa.core.hsa_agent_get_info_fn(a, HSA_AGENT_INFO_DEVICE, &t) == HSA_STATUS_SUCCESS &&
      t == HSA_DEVICE_TYPE_GPU && g_hsa.ngpus < HSA_MAX_AGENTS)
    g_hsa.gpus[g_hsa.ngpus++] = a.handle;
  return HSA_STATUS_SUCCESS;
}

/* Fine-grained system memory from the kernarg pool, readable and writable
 * by every GPU agent; NULL with a message in err. */
static void *hsa_system_alloc(size_t n, char *err, size_t errlen) {
  void *p = NULL;
  hsa_status_t rc = g_hsa.have_kernarg_pool
                        ? g_hsa.amd.hsa_amd_memory_pool_allocate_fn(g_hsa.kernarg_pool, n, 0, &p)
                        : (hsa_status_t)HSA_STATUS_ERROR_INVALID_MEMORY_POOL;
  hsa_agent_t gpus[HSA_MAX_AGENTS];
  for (int i = 0; i < g_hsa.ngpus; i++)
    gpus[i].handle = g_hsa.gpus[i];
  if (rc == HSA_STATUS_SUCCESS)
    rc = g_hsa.amd.hsa_amd_agents_allow_access_fn((uint32_t)g_hsa.ngpus, gpus, NULL, p);
  if (rc != HSA_STATUS_SUCCESS) {
    if (p)
      g_hsa.amd.hsa_amd_memory_pool_free_fn(p);
    snprintf(err, errlen, "%zu bytes of kernarg-pool memory: %s", n, hsa_error(rc));
    return NULL;
  }
  return p;
}

/* A kernarg slot, or NULL when all are in use (lock held). */
static void *hsa_slot_take(void) {
  if (!g_hsa.slab_tried) {
    g_hsa.slab_tried = 1;
    char err[256];
    uint64_t n = HSA_KERNARG_SLOTS;
    if (nano_env_uint("NANO_KERNARG_POOL", 1, HSA_KERNARG_SLOTS_MAX, &n) < 0)
      n = HSA_KERNARG_SLOTS; /* said by the reader */
    g_hsa.nslots = (int)n;
    g_hsa.free_slots = (int *)malloc(n * sizeof *g_hsa.free_slots);
    g_hsa.slab = g_hsa.free_slots
                     ? (char *)hsa_system_alloc((size_t)HSA_KERNARG_SLOT * n, err, sizeof err)
                     : NULL;
    if (!g_hsa.slab)
      hsa_log("no kernarg pool for replaced kernels (%s): kernels run as built",
              g_hsa.free_slots ? err : "out of memory");
    for (int i = 0; g_hsa.slab && i < g_hsa.nslots; i++)
      g_hsa.free_slots[g_hsa.nfree_slots++] = g_hsa.nslots - 1 - i;
  }
  if (!g_hsa.nfree_slots)
    return NULL;
  return g_hsa.slab + (size_t)g_hsa.free_slots[--g_hsa.nfree_slots] * HSA_KERNARG_SLOT;
}

/* Slot p back to the pool (lock held). */
static void hsa_slot_put(void *p) {
  g_hsa.free_slots[g_hsa.nfree_slots++] = (int)(((char *)p - g_hsa.slab) / HSA_KERNARG_SLOT);
}

static void hsa_slot_give(void *p) {
  pthread_mutex_lock(&g_hsa.lock);
  hsa_slot_put(p);
  pthread_mutex_unlock(&g_hsa.lock);
}

/* A buffer's memory the GPU reaches: descriptor and tail. */
struct hsa_buffer_block {
  char desc[NANO_DH_DESC_SIZE];
  uint64_t tail;
};

/* A table of a buffer's dispatches (sums, block times) in fine-grained
 * system memory, grown to the largest asked for. */
struct hsa_table {
  unsigned char *mem;
  uint64_t cap;
};

/* A buffer (the placement's handle): its block, and its tables. */
struct hsa_buffer {
  struct hsa_buffer_block *block;
  struct hsa_table sums, blocks;
  struct gpu_sums_state in_place; /* the sums table's */
};

static int hsa_buf_alloc(void *ctx, uint64_t capacity, struct nano_dh_placement *out, char *err,
                         size_t errlen) {
  (void)ctx;
  memset(out, 0, sizeof *out);
  struct hsa_buffer *h = (struct hsa_buffer *)calloc(1, sizeof *h);
  char *ring = h ? (char *)hsa_system_alloc((size_t)capacity, err, errlen) : NULL;
  struct hsa_buffer_block *b =
      ring ? (struct hsa_buffer_block *)hsa_system_alloc(sizeof *b, err, errlen) : NULL;
  if (!b) {
    if (!h)
      snprintf(err, errlen, "out of memory");
    if (ring)
      g_hsa.amd.hsa_amd_memory_pool_free_fn(ring);
    free(h);
    return -1;
  }
  memset(ring, 0, (size_t)capacity);
  memset(b, 0, sizeof *b);
  h->block = b;
  out->desc_device = out->desc_host = b->desc;
  out->ring = (unsigned char *)ring;
  out->ring_device = (uint64_t)(uintptr_t)ring;
  out->ring_bytes = capacity;
  out->tail = &b->tail;
  out->tail_device = (uint64_t)(uintptr_t)&b->tail;
  out->handle = h;
  return 0;
}

static void hsa_buf_free(void *ctx, struct nano_dh_placement *p) {
  (void)ctx;
  struct hsa_buffer *h = (struct hsa_buffer *)p->handle;
  g_hsa.amd.hsa_amd_memory_pool_free_fn(p->ring);
  g_hsa.amd.hsa_amd_memory_pool_free_fn(h->block);
  if (h->sums.mem)
    g_hsa.amd.hsa_amd_memory_pool_free_fn(h->sums.mem);
  if (h->blocks.mem)
    g_hsa.amd.hsa_amd_memory_pool_free_fn(h->blocks.mem);
  free(h);
}

static int hsa_buf_put(void *ctx, struct nano_dh_placement *p, const void *desc) {
  return nano_dh_host_memory.put_desc(ctx, p, desc); /* host-coherent: as host memory */
}

static int hsa_buf_counters(void *ctx, const struct nano_dh_placement *p, uint64_t *head,
                            uint64_t *dropped) {
  return nano_dh_host_memory.get_counters(ctx, p, head, dropped);
}

/* t grown to `bytes` (its contents not kept); 0, or -1 after saying that
 * `what` cannot be placed and what such dispatches do (`then`). */
static int hsa_table_room(struct hsa_table *t, uint64_t bytes, const char *what, const char *then) {
  if (t->cap >= bytes)
    return 0;
  if (t->mem)
    g_hsa.amd.hsa_amd_memory_pool_free_fn(t->mem);
  t->cap = 0;
  char err[256];
  t->mem = (unsigned char *)hsa_system_alloc((size_t)bytes, err, sizeof err);
  if (!t->mem) {
    hsa_log("%s of a dispatch cannot be placed (%s); such dispatches %s", what, err, then);
    return -1;
  }
  t->cap = bytes;
  return 0;
}

/* A dispatch's sums table (nano/dh_format.h) in fine-grained system memory:
 * written by the host before the packet is submitted, as the descriptor is,
 * and read after its completion signal. A buffer whose last dispatch was
 * the same kernel's has it in place (the counters zeroed when read). */
static int hsa_buf_put_sums(void *ctx, struct nano_dh_placement *p, const void *image,
                            uint64_t head, uint64_t bytes, uint64_t *device) {
  (void)ctx;
  struct hsa_buffer *h = (struct hsa_buffer *)p->handle;
  if (!gpu_sums_reuse(&h->in_place, image, head, bytes)) {
    if (hsa_table_room(&h->sums, bytes, "the sums table", "stream their records") != 0)
      return -1;
    memcpy(h->sums.mem, image, (size_t)head);
    memset(h->sums.mem + head, 0, (size_t)(bytes - head));
    gpu_sums_placed(&h->in_place, image, head, bytes);
  }
  *device = (uint64_t)(uintptr_t)h->sums.mem;
  return 0;
}

/* Reads the sums table back, then zeroes its counters for the next
 * dispatch (the completion handler's thread, not the submitting one). */
static int hsa_buf_get_sums(void *ctx, const struct nano_dh_placement *p, void *out,
                            uint64_t bytes) {
  (void)ctx;
  struct hsa_buffer *h = (struct hsa_buffer *)p->handle;
  struct gpu_sums_state *s = &h->in_place;
  if (!s->image || bytes != s->used)
    return -1;
  memcpy(out, h->sums.mem, (size_t)bytes);
  memset(h->sums.mem + s->head, 0, (size_t)(bytes - s->head));
  s->clean = 1;
  return 0;
}

/* A dispatch's block-times table, zeroed, in fine-grained system memory. */
static int hsa_buf_put_blocks(void *ctx, struct nano_dh_placement *p, uint64_t bytes,
                              uint64_t *device) {
  (void)ctx;
  struct hsa_buffer *h = (struct hsa_buffer *)p->handle;
  if (hsa_table_room(&h->blocks, bytes, "the block times", "report no block times") != 0)
    return -1;
  memset(h->blocks.mem, 0, (size_t)bytes);
  *device = (uint64_t)(uintptr_t)h->blocks.mem;
  return 0;
}

static int hsa_buf_get_blocks(void *ctx, const struct nano_dh_placement *p, void *out,
                              uint64_t bytes) {
  (void)ctx;
  const struct hsa_buffer *h = (const struct hsa_buffer *)p->handle;
  if (bytes > h->blocks.cap)
    return -1;
  memcpy(out, h->blocks.mem, (size_t)bytes);
  return 0;
}

/* Buffers and tables in fine-grained system memory the GPUs reach (the
 * kernarg pool): the host writes them before a packet's submission and
 * reads them after its completion, no copy to order on the queue. */
static const struct nano_dh_memory hsa_memory = {"hsa fine-grained system memory",
                                                 NULL,
                                                 hsa_buf_alloc,
                                                 hsa_buf_free,
                                                 hsa_buf_put,
                                                 hsa_buf_counters,
                                                 hsa_buf_put_sums,
                                                 hsa_buf_get_sums,
                                                 hsa_buf_put_blocks,
                                                 hsa_buf_get_blocks};

/* ---- kernarg rebuilding ------------------------------------------------------------ */

static const struct hsa_arg *hsa_arg_of_kind(const struct hsa_kernel *k, const char *kind) {
  for (size_t i = 0; i < k->nargs; i++)
    if (k->args[i].hidden && !strcmp(k->args[i].kind, kind))
      return &k->args[i];
  return NULL;
}

/* A hidden argument the original does not carry, from the packet. */
static uint64_t hsa_hidden_value(const char *kind, const hsa_kernel_dispatch_packet_t *p,
                                 const struct hsa_kernel *k) {
  uint32_t grid[3] = {p->grid_size_x, p->grid_size_y, p->grid_size_z};
  uint32_t wg[3] = {p->workgroup_size_x, p->workgroup_size_y, p->workgroup_size_z};
  static const char *const axes = "xyz";
  for (int d = 0; d < 3; d++) {
    char name[40];
    uint32_t w = wg[d] ? wg[d] : 1;
    snprintf(name, sizeof name, "hidden_block_count_%c", axes[d]);
    if (!strcmp(kind, name))
      return (grid[d] + w - 1) / w;
    snprintf(name, sizeof name, "hidden_group_size_%c", axes[d]);
    if (!strcmp(kind, name))
      return w;
    snprintf(name, sizeof name, "hidden_remainder_%c", axes[d]);
    if (!strcmp(kind, name))
      return grid[d] % w;
  }
  if (!strcmp(kind, "hidden_grid_dims"))
    return (p->setup >> HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS) & 3;
  if (!strcmp(kind, "hidden_dynamic_lds_size"))
    return p->group_segment_size > k->group ? p->group_segment_size - k->group : 0;
  return 0; /* global offsets, pointers the runtime did not give: none */
}

/* Writes the kernarg segment of alt for packet p of kernel k into dst. */
static void hsa_kernargs(const struct hsa_kernel *k, const struct hsa_alt *alt,
                         const hsa_kernel_dispatch_packet_t *p, char *dst, uint64_t buffer) {
  const char *src = (const char *)p->kernarg_address;
  memset(dst, 0, alt->kernarg);
  size_t i = 0;
  for (size_t j = 0; j < alt->nargs; j++) {
    const struct hsa_arg *a = &alt->args[j];
    if (a->offset + a->size > alt->kernarg)
      continue;
    if (alt->twin && j == alt->buffer_arg) {
      memcpy(dst + a->offset, &buffer, a->size < 8 ? a->size : 8);
    } else if (!a->hidden) {
      memcpy(dst + a->offset, src + k->args[i].offset, a->size);
      i++;
    } else {
      const struct hsa_arg *o = hsa_arg_of_kind(k, a->kind);
      if (o && o->offset + o->size <= k->kernarg) {
        memcpy(dst + a->offset, src + o->offset, o->size < a->size ? o->size : a->size);
      } else {
        uint64_t v = hsa_hidden_value(a->kind, p, k);
        memcpy(dst + a->offset, &v, a->size < 8 ? a->size : 8);
      }
    }
  }
}

/* ---- dispatches ------------------------------------------------------------------- */

static int hsa_signal_take(hsa_signal_t *out) {
  if (!g_hsa.nsignals) {
    if (g_hsa.signals_cap < HSA_SIGNAL_BATCH) {
      hsa_signal_t *grown =
          (hsa_signal_t *)realloc(g_hsa.signals, HSA_SIGNAL_BATCH * sizeof *grown);
      if (!grown)
        return -1;
      g_hsa.signals = grown;
      g_hsa.signals_cap = HSA_SIGNAL_BATCH;
    }
    for (int i = 0; i < HSA_SIGNAL_BATCH / 2; i++)
      if (g_hsa.core.hsa_signal_create_fn(1, 0, NULL, &g_hsa.signals[g_hsa.nsignals]) ==
          HSA_STATUS_SUCCESS)
        g_hsa.nsignals++;
    if (!g_hsa.nsignals)
      return -1;
  }
  *out = g_hsa.signals[--g_hsa.nsignals];
  return 0;
}

/* Signal s, of value 1, back to the pool (lock held). */
static void hsa_signal_put(hsa_signal_t s) {
  if (g_hsa.nsignals == g_hsa.signals_cap) {
    int cap = g_hsa.signals_cap * 2;
    hsa_signal_t *grown = (hsa_signal_t *)realloc(g_hsa.signals, (size_t)cap * sizeof *grown);
    if (grown)
      g_hsa.signals = grown, g_hsa.signals_cap = cap;
  }
  if (g_hsa.nsignals < g_hsa.signals_cap)
    g_hsa.signals[g_hsa.nsignals++] = s;
  else
    g_hsa.core.hsa_signal_destroy_fn(s);
}

static void hsa_signal_give(hsa_signal_t s) {
  g_hsa.core.hsa_signal_store_relaxed_fn(s, 1);
  pthread_mutex_lock(&g_hsa.lock);
  hsa_signal_put(s);
  pthread_mutex_unlock(&g_hsa.lock);
}

/* Pending entry p back to the free list. */
static void hsa_pending_give(struct hsa_pending *p) {
  pthread_mutex_lock(&g_hsa.lock);
  p->next = g_hsa.free_pending;
  g_hsa.free_pending = p;
  pthread_mutex_unlock(&g_hsa.lock);
}

/* A kernel's or copy's op, waiting for the row it links to. */
struct hsa_op {
  int gpu, queue;
  int64_t start, end;
  const char *shown, *type; /* both live as long as the process */
};

static void hsa_record_op(uint64_t api, void *arg) {
  struct hsa_op *op = (struct hsa_op *)arg;
  rpd_record_op(api, op->gpu, op->queue, op->start, op->end, op->shown, op->type);
  free(op);
}

static void hsa_record_nothing(uint64_t api, void *arg) { (void)api, (void)arg; }

/* The trace-clock times of GPU work that completed: its profiled times t0
 * and t1 (system domain) where the runtime gave them (timed), else the
 * completion's, now. */
static void hsa_op_times(int timed, uint64_t t0, uint64_t t1, int64_t *start, int64_t *end) {
  *start = timed ? hsa_trace_time(t0) : -1;
  *end = timed ? hsa_trace_time(t1) : -1;
  if (*start < 0 || *end < *start)
    *start = *end = rpd_now();
}

/* Records op (NULL, out of memory: nothing) against HIP call `call` once its
 * row exists, now or when it returns (call's reference given back), or
 * without a call against row api. */
static void hsa_op_record(struct rpd_hip_call *call, uint64_t api, struct hsa_op *op) {
  if (call)
    rpd_hip_call_link(call, op ? hsa_record_op : hsa_record_nothing, op);
  else if (op)
    hsa_record_op(api, op);
}

/* ---- module variables around a replaced dispatch -----------------------------------

   A replacement lives in an executable of the tool's, with its own copies
   of its code object's module variables. Where the program's code object
   has variables of those names (hsa_pair), a dispatch of the replacement is
   written as

     packet                      waits for            then
     B1 barrier-AND (barrier)    every packet before  before -> 0
     [handler on before: async copies program -> replacement, each
      copied_in -= 1]
     B2 barrier-AND              copied_in == 0
     D  the replaced dispatch    B2                   ours -> 0
     [handler on ours (hsa_complete): its row, then async copies of the
      writable ones replacement -> program, each copied_out -= 1]
     B3 barrier-AND              copied_out == 0      (only with writable ones)
     [handler on copied_out (hsa_finish): the program's signal]

   The copies are issued from handlers, once what they wait for is done,
   never queued with dependent signals: a copy waiting in the runtime's
   in-order copy queue for a kernel would hold up every later copy of the
   process, the program's own among them, and a kernel that waits for one
   of those would never start. B1, B2 and B3 fence at system scope, and D
   releases at system scope when its writes are copied back: the copy
   engines are not in the kernels' coherence domain (hsa_amd_memory_async_copy). */

/* Packets a dispatch may become: B1, B2, D, B3. */
#define HSA_PACKETS_PER_DISPATCH 4

static uint16_t hsa_barrier_header(void) {
  return (uint16_t)(HSA_PACKET_TYPE_BARRIER_AND << HSA_PACKET_HEADER_TYPE |
                    1 << HSA_PACKET_HEADER_BARRIER |
                    HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE |
                    HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
}

/* A barrier-AND packet waiting for dep (0: none) that completes done (0:
 * none), at out. */
static void hsa_barrier(unsigned char *out, hsa_signal_t dep, hsa_signal_t done) {
  hsa_barrier_and_packet_t b = {};
  b.header = hsa_barrier_header();
  b.dep_signal[0] = dep;
  b.completion_signal = done;
  memcpy(out, &b, sizeof b);
}

/* Writes dispatch packet p of pending, with the packets that copy its
 * variables around it where it has any, at out; the number written. */
static int hsa_copy_packets(const struct hsa_pending *pending,
                            const hsa_kernel_dispatch_packet_t *p, unsigned char *out) {
  if (!pending->use) {
    memcpy(out, p, HSA_PACKET_BYTES);
    return 1;
  }
  int copy_back = pending->use->nwritable != 0;
  hsa_kernel_dispatch_packet_t d = *p;
  d.header |= 1 << HSA_PACKET_HEADER_BARRIER; /* after B2, whatever the program asked */
  if (copy_back) {
    uint16_t scope = ((1 << HSA_PACKET_HEADER_WIDTH_SCRELEASE_FENCE_SCOPE) - 1)
                     << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE;
    d.header = (uint16_t)((d.header & ~scope) | HSA_FENCE_SCOPE_SYSTEM
                                                    << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
  }
  hsa_barrier(out, {0}, pending->before);
  hsa_barrier(out + HSA_PACKET_BYTES, pending->copied_in, {0});
  memcpy(out + 2 * HSA_PACKET_BYTES, &d, HSA_PACKET_BYTES);
  if (!copy_back)
    return 3;
  hsa_barrier(out + 3 * HSA_PACKET_BYTES, pending->copied_out, {0});
  return 4;
}

/* Issues the copies of p's variables: in, the program's values into the
 * replacement's copies (completing copied_in); else the writable ones back
 * (copied_out). A copy the runtime refuses is counted done, so that the
 * queue goes on, and said once per kernel and direction. */
static void hsa_copies(struct hsa_pending *p, int in) {
  struct hsa_kernel *k = p->kernel; /* p may be reused once the last copy is done */
  const struct hsa_use *u = p->use;
  hsa_signal_t done = in ? p->copied_in : p->copied_out;
  hsa_agent_t agent = {p->queue->agent};
  size_t left = in ? u->nvars : u->nwritable;
  hsa_status_t rc = HSA_STATUS_SUCCESS;
  for (size_t i = 0; i < u->nvars && rc == HSA_STATUS_SUCCESS; i++) {
    const struct hsa_var *v = &u->vars[i];
    if (!in && !v->writable)
      continue;
    rc = g_hsa.amd.hsa_amd_memory_async_copy_fn(
        (void *)(uintptr_t)(in ? v->replacement : v->program), agent,
        (const void *)(uintptr_t)(in ? v->program : v->replacement), agent, v->size, 0, NULL, done);
    left -= rc == HSA_STATUS_SUCCESS;
  }
  if (!left)
    return;
  g_hsa.core.hsa_signal_subtract_screlease_fn(done, (hsa_signal_value_t)left);
  if (!(__atomic_fetch_or(&k->copy_said, 1 << in, __ATOMIC_RELAXED) & 1 << in))
    hsa_log("kernel cache: copying the module variables of %s %s the cache's %s failed (%s): %s",
            k->name, in ? "to" : "back from", u->alt->path, hsa_error(rc),
            in ? "the dispatch computed with the cache's values"
               : "the program's variables miss the dispatch's writes");
}

static bool hsa_copy_in(hsa_signal_value_t value, void *arg) {
  (void)value;
  hsa_copies((struct hsa_pending *)arg, 1);
  return false;
}

/* ---- dispatches' completions ----------------------------------------------------------- */

/* The program's completion signal `program` done in place of `ours`: the
 * raw times the packet processor or copy engine wrote into ours copied into
 * it (amd_signal_t, the signal's ABI: a handle is its address), so that what
 * the program asks of its own signal (hsa_amd_profiling_get_dispatch_time,
 * _async_copy_time; HIP's command and event times) is as without the tool;
 * then decremented, as the runtime would have. */
static void hsa_signal_pass_on(hsa_signal_t program, hsa_signal_t ours) {
  if (!program.handle)
    return;
  const amd_signal_t *from = (const amd_signal_t *)(uintptr_t)ours.handle;
  amd_signal_t *to = (amd_signal_t *)(uintptr_t)program.handle;
  to->start_ts = from->start_ts;
  to->end_ts = from->end_ts;
  g_hsa.core.hsa_signal_subtract_screlease_fn(program, 1);
}

/* The end of p: its kernarg slot, the program's signal (which it waits for
 * exactly as before, only after the row exists), the tool's signals. */
static void hsa_finish(struct hsa_pending *p) {
  if (p->kernarg)
    hsa_slot_give(p->kernarg);
  hsa_signal_pass_on(p->program, p->ours);
  hsa_signal_give(p->ours);
  if (p->use) {
    hsa_signal_give(p->before);
    hsa_signal_give(p->copied_in);
    if (p->use->nwritable)
      hsa_signal_give(p->copied_out);
  }
  hsa_pending_give(p);
  /* last: OnUnload waits for this, and the runtime may go right after (the
   * program, its signal decremented, may be at hsa_shut_down already) */
  __atomic_sub_fetch(&g_hsa.in_flight, 1, __ATOMIC_RELEASE);
}

static bool hsa_finish_handler(hsa_signal_value_t value, void *arg) {
  (void)value;
  hsa_finish((struct hsa_pending *)arg);
  return false;
}

static bool hsa_complete(hsa_signal_value_t value, void *arg) {
  (void)value;
  struct hsa_pending *p = (struct hsa_pending *)arg;
  hsa_amd_profiling_dispatch_time_t t = {};
  int timed = g_hsa.amd.hsa_amd_profiling_get_dispatch_time_fn({p->queue->agent}, p->ours, &t) ==
              HSA_STATUS_SUCCESS;
  int64_t start, end;
  hsa_op_times(timed, t.start, t.end, &start, &end);
  const struct hsa_kernel *k = p->kernel;
  struct hsa_op *op = (struct hsa_op *)malloc(sizeof *op);
  if (op)
    *op = {p->queue->gpu,
           p->queue->id,
           start,
           end,
           !k                         ? "(unknown kernel)"
           : p->twin && k->twin_shown ? k->twin_shown
           : k->shown                 ? k->shown
                                      : k->name,
           "KernelExecution"};
  uint64_t api = p->call ? rpd_hip_call_api(p->call) : p->api;
  hsa_op_record(p->call, p->api, op);
  if (p->dispatch)
    nano_dispatch_end(p->dispatch, start, end, api);
  if (!p->use || !p->use->nwritable) {
    hsa_finish(p);
    return false;
  }
  hsa_copies(p, 0);
  if (g_hsa.amd.hsa_amd_signal_async_handler_fn(p->copied_out, HSA_SIGNAL_CONDITION_LT, 1,
                                                hsa_finish_handler, p) != HSA_STATUS_SUCCESS) {
    /* the copies wait for nothing: they end without this thread */
    while (g_hsa.core.hsa_signal_wait_scacquire_fn(p->copied_out, HSA_SIGNAL_CONDITION_LT, 1,
                                                   UINT64_MAX, HSA_WAIT_STATE_BLOCKED) >= 1)
      ;
    hsa_finish(p);
  }
  return false;
}

/* Replaces packet p's kernel by a cache's where one applies (lock held);
 * fills pending's twin, dispatch, kernarg and, where the replacement has
 * module variables to copy, use and its signals. */
static void hsa_replace(struct hsa_kernel *k, struct hsa_queue_info *q,
                        hsa_kernel_dispatch_packet_t *p, struct hsa_pending *pending) {
  hsa_cache_open(q->agent);
  hsa_resolve(k);
  const struct hsa_use *use = NULL;
  struct nano_dispatch *d = NULL;
  if (k->twin.alt && nano_dispatch_instrumenting()) {
    struct gpu_device_info info = {};
    snprintf(info.arch, sizeof info.arch, "%s", q->arch);
    info.wave_size = q->wave;
    gpu_amd_memory_model(&info);
    struct nano_launch_desc l = {};
    l.kernel = k->name;
    l.backend = "hsa";
    l.arch = q->arch;
    l.device = (uint32_t)q->gpu;
    l.wave_size = q->wave;
    uint32_t grid[3] = {p->grid_size_x, p->grid_size_y, p->grid_size_z};
    uint32_t wg[3] = {p->workgroup_size_x, p->workgroup_size_y, p->workgroup_size_z};
    for (int i = 0; i < 3; i++) {
      l.block[i] = wg[i] ? wg[i] : 1;
      l.grid[i] = (grid[i] + l.block[i] - 1) / l.block[i];
    }
    l.shared_bytes = p->group_segment_size > k->group ? p->group_segment_size - k->group : 0;
    l.line_bytes = info.line_bytes, l.sector_bytes = info.sector_bytes,
    l.lds_model = info.lds_model;
    l.twin = (const void *)(uintptr_t)k->twin.alt->object;
    l.sites_path = k->twin.alt->path;
    l.memory = &hsa_memory;
    l.aggregates = NANO_LAUNCH_SUMS_TABLE;
    l.times_blocks = NANO_LAUNCH_BLOCKS_TABLE;
    pthread_mutex_unlock(&g_hsa.lock); /* the dispatch API takes its own locks */
    d = nano_dispatch_begin(&l);
    pthread_mutex_lock(&g_hsa.lock);
    if (d)
      use = &k->twin;
  } else if (k->plain.alt) {
    use = &k->plain;
  }
  if (!use)
    return;
  const struct hsa_alt *alt = use->alt;
  char *slot = (char *)hsa_slot_take();
  int signals = !use->nvars ? 0 : use->nwritable ? 3 : 2;
  hsa_signal_t chain[3] = {};
  int taken = 0;
  while (slot && taken < signals && hsa_signal_take(&chain[taken]) == 0)
    taken++;
  if (!slot || taken < signals) {
    if (!slot && g_hsa.pool_full++ == 0)
      hsa_log("the kernarg pool (%d slots, NANO_KERNARG_POOL) is full: dispatches run as built "
              "until slots free (counted at exit)",
              g_hsa.nslots);
    else if (slot)
      hsa_log("no signals for the copies of %s's module variables: this dispatch runs as built",
              k->name);
    for (int i = 0; i < taken; i++)
      hsa_signal_put(chain[i]); /* of value 1 still */
    if (slot)
      hsa_slot_put(slot);
    if (d)
      nano_dispatch_cancel(d);
    return;
  }
  if (use->nvars) {
    pending->use = use;
    pending->before = chain[0], pending->copied_in = chain[1], pending->copied_out = chain[2];
    g_hsa.core.hsa_signal_store_relaxed_fn(pending->copied_in, (hsa_signal_value_t)use->nvars);
    if (use->nwritable)
      g_hsa.core.hsa_signal_store_relaxed_fn(pending->copied_out,
                                             (hsa_signal_value_t)use->nwritable);
  }
  uint64_t buffer = d ? (uint64_t)(uintptr_t)nano_dispatch_desc(d) : 0;
  hsa_kernargs(k, alt, p, slot, buffer);
  p->group_segment_size = p->group_segment_size -
                          (p->group_segment_size > k->group ? k->group : p->group_segment_size) +
                          alt->group;
  p->private_segment_size = alt->priv;
  p->kernel_object = alt->object;
  p->kernarg_address = slot;
  pending->kernarg = slot;
  pending->dispatch = d;
  pending->twin = d != NULL;
}

/* Undoes hsa_replace for a dispatch whose copies cannot be set up: p runs
 * as `original` (its kernel as built). */
static void hsa_unreplace(struct hsa_pending *pending, hsa_kernel_dispatch_packet_t *p,
                          const hsa_kernel_dispatch_packet_t *original) {
  *p = *original;
  if (pending->use) {
    hsa_signal_give(pending->before);
    hsa_signal_give(pending->copied_in);
    if (pending->use->nwritable)
      hsa_signal_give(pending->copied_out);
  }
  hsa_slot_give(pending->kernarg);
  if (pending->dispatch)
    nano_dispatch_cancel(pending->dispatch);
  pending->use = NULL, pending->kernarg = NULL, pending->dispatch = NULL, pending->twin = 0;
}

static void hsa_submit(const void *in, uint64_t count, uint64_t index, void *data,
                       hsa_amd_queue_intercept_packet_writer writer) {
  (void)index;
  struct hsa_queue_info *q = (struct hsa_queue_info *)data;
  if (rpd_gpu_quiet || !count) { /* nanoprobe's own work (the GPU back end's copies) */
    writer(in, count);
    return;
  }
  unsigned char local[HSA_BATCH * HSA_PACKETS_PER_DISPATCH * HSA_PACKET_BYTES];
  unsigned char *out =
      count <= HSA_BATCH
          ? local
          : (unsigned char *)malloc(count * HSA_PACKETS_PER_DISPATCH * HSA_PACKET_BYTES);
  if (!out) { /* not traced, still run */
    writer(in, count);
    return;
  }
  uint64_t written = 0;
  for (uint64_t i = 0; i < count; i++) {
    hsa_kernel_dispatch_packet_t pkt;
    hsa_kernel_dispatch_packet_t *p = &pkt;
    memcpy(p, (const unsigned char *)in + i * HSA_PACKET_BYTES, HSA_PACKET_BYTES);
    int type = (p->header >> HSA_PACKET_HEADER_TYPE) & ((1 << HSA_PACKET_HEADER_WIDTH_TYPE) - 1);
    unsigned char *at = out + written * HSA_PACKET_BYTES;
    if (type != HSA_PACKET_TYPE_KERNEL_DISPATCH) {
      memcpy(at, p, HSA_PACKET_BYTES);
      written++;
      continue;
    }
    const hsa_kernel_dispatch_packet_t original = *p;
    struct hsa_kernel *k = hsa_kernel_find(p->kernel_object);
    pthread_mutex_lock(&g_hsa.lock);
    struct hsa_pending *pending = g_hsa.free_pending;
    if (pending)
      g_hsa.free_pending = pending->next;
    else
      pending = (struct hsa_pending *)malloc(sizeof *pending);
    hsa_signal_t ours;
    if (!pending || hsa_signal_take(&ours) != 0) {
      pthread_mutex_unlock(&g_hsa.lock);
      free(pending);
      memcpy(at, p, HSA_PACKET_BYTES); /* not traced, still run */
      written++;
      continue;
    }
    memset(pending, 0, sizeof *pending);
    pending->ours = ours;
    pending->program = p->completion_signal;
    pending->kernel = k;
    pending->queue = q;
    if (k && g_hsa.alts)
      hsa_replace(k, q, p, pending);
    pthread_mutex_unlock(&g_hsa.lock);
    /* its end's handler first (the op, the program's signal), then the
     * copies' start: where a handler cannot be had, what needs it is undone
     * (no handler is left on a signal given back, no dispatch unended) */
    p->completion_signal = ours;
    __atomic_add_fetch(&g_hsa.in_flight, 1, __ATOMIC_RELAXED);
    int timed = g_hsa.amd.hsa_amd_signal_async_handler_fn(
                    ours, HSA_SIGNAL_CONDITION_LT, 1, hsa_complete, pending) == HSA_STATUS_SUCCESS;
    if (!timed) {
      __atomic_sub_fetch(&g_hsa.in_flight, 1, __ATOMIC_RELAXED);
      hsa_log("a dispatch of %s is not timed%s: no async handler", k ? k->name : "a kernel",
              pending->kernarg ? " and runs as built" : "");
      if (pending->kernarg)
        hsa_unreplace(pending, p, &original); /* the program's signal back too */
      else
        p->completion_signal = pending->program;
    } else if (pending->use && g_hsa.amd.hsa_amd_signal_async_handler_fn(
                                   pending->before, HSA_SIGNAL_CONDITION_LT, 1, hsa_copy_in,
                                   pending) != HSA_STATUS_SUCCESS) {
      hsa_log("a dispatch of %s runs as built: no async handler for its module variables' copies",
              k->name);
      hsa_unreplace(pending, p, &original);
      p->completion_signal = ours;
    }
    pending->call = rpd_hip_call_current(); /* its row is the dispatch's API row */
    int64_t now = rpd_now();
    char args[96];
    snprintf(args, sizeof args, "queue = %d | kernel_object = 0x%llx", q->id,
             (unsigned long long)p->kernel_object);
    if (!pending->call)
      pending->api = rpd_record_api("hsa", "", "hsa_kernel_dispatch", args, now, now);
    if (pending->api) {
      struct rpd_kernel_launch kl = {};
      char sname[32];
      snprintf(sname, sizeof sname, "%d", q->id);
      kl.stream = sname;
      kl.gridX = (int)p->grid_size_x, kl.gridY = (int)p->grid_size_y,
      kl.gridZ = (int)p->grid_size_z;
      kl.workgroupX = p->workgroup_size_x, kl.workgroupY = p->workgroup_size_y;
      kl.workgroupZ = p->workgroup_size_z;
      kl.groupSegmentSize = (int)p->group_segment_size;
      kl.privateSegmentSize = (int)p->private_segment_size;
      kl.kernelName = !k                               ? ""
                      : pending->twin && k->twin_shown ? k->twin_shown
                      : k->shown                       ? k->shown
                                                       : k->name;
      rpd_record_kernelapi(pending->api, &kl);
    }
    written += (uint64_t)hsa_copy_packets(pending, p, at);
    if (!timed) { /* untimed, the program's signal as it was: nothing holds these */
      hsa_signal_give(ours);
      hsa_pending_give(pending);
    }
  }
  writer(out, written);
  if (out != local)
    free(out);
}

/* ---- the program's copies ---------------------------------------------------------

   A copy the program asks of the runtime's copy engines
   (hsa_amd_memory_async_copy, _rect: HIP's staged host copies and peer
   copies go there, not through a queue) is given one of the tool's signals
   as its completion signal; when it completes, its op is recorded (opType
   CopyHostToDevice, CopyDeviceToHost or CopyDeviceToDevice by its agents,
   as roctracer names HIP's copies; start and end from
   hsa_amd_profiling_get_async_copy_time, on the trace's clock), linked to
   the HIP call that asked for it, and then the program's signal is
   decremented, as the runtime would have. nanoprobe's own copies
   (rpd_gpu_quiet, and the kernel cache's, which use the runtime's function)
   pass untouched. */

struct hsa_copy {
  hsa_signal_t ours, program;
  const char *type;
  int gpu; /* its op's gpuId: the GPU written to, else the one read from */
  struct rpd_hip_call *call;
  int refused; /* the runtime refused the copy: no op, no program signal */
};

static bool hsa_copy_done(hsa_signal_value_t value, void *arg) {
  (void)value;
  struct hsa_copy *c = (struct hsa_copy *)arg;
  if (c->refused) {
    hsa_op_record(c->call, 0, NULL);
  } else {
    hsa_amd_profiling_async_copy_time_t t = {};
    int timed =
        g_hsa.amd.hsa_amd_profiling_get_async_copy_time_fn(c->ours, &t) == HSA_STATUS_SUCCESS;
    int64_t start, end;
    hsa_op_times(timed, t.start, t.end, &start, &end);
    struct hsa_op *op = (struct hsa_op *)malloc(sizeof *op);
    if (op)
      *op = {c->gpu, 0, start, end, "", c->type};
    hsa_op_record(c->call, 0, op);
    hsa_signal_pass_on(c->program, c->ours);
  }
  hsa_signal_give(c->ours);
  free(c);
  __atomic_sub_fetch(&g_hsa.in_flight, 1, __ATOMIC_RELEASE);
  return false;
}

/* A copy's tracking: its signal and handler in place of the program's
 * completion signal (*done, replaced), or NULL: the copy goes untraced. */
static struct hsa_copy *hsa_copy_begin(hsa_signal_t *done, uint64_t dst_agent, uint64_t src_agent) {
  if (rpd_gpu_quiet)
    return NULL;
  struct hsa_copy *c = (struct hsa_copy *)calloc(1, sizeof *c);
  if (!c)
    return NULL;
  pthread_mutex_lock(&g_hsa.lock);
  int took = hsa_signal_take(&c->ours) == 0;
  pthread_mutex_unlock(&g_hsa.lock);
  if (!took) {
    free(c);
    return NULL;
  }
  c->program = *done;
  int to = hsa_gpu_ordinal(dst_agent), from = hsa_gpu_ordinal(src_agent);
  c->type = to >= 0 && from >= 0 ? "CopyDeviceToDevice"
            : to >= 0            ? "CopyHostToDevice"
            : from >= 0          ? "CopyDeviceToHost"
                                 : "CopyHostToHost";
  c->gpu = to >= 0 ? to : from >= 0 ? from : 0;
  __atomic_add_fetch(&g_hsa.in_flight, 1, __ATOMIC_RELAXED);
  if (g_hsa.amd.hsa_amd_signal_async_handler_fn(c->ours, HSA_SIGNAL_CONDITION_LT, 1, hsa_copy_done,
                                                c) != HSA_STATUS_SUCCESS) {
    __atomic_sub_fetch(&g_hsa.in_flight, 1, __ATOMIC_RELAXED);
    hsa_signal_give(c->ours);
    free(c);
    return NULL;
  }
  c->call = rpd_hip_call_current();
  *done = c->ours;
  return c;
}

/* The copy was refused: its tracking undone (its handler, fired now on
 * the tool's signal, which nothing else would complete, records nothing and
 * leaves the program's signal alone). */
static void hsa_copy_refused(struct hsa_copy *c) {
  c->refused = 1;
  g_hsa.core.hsa_signal_subtract_screlease_fn(c->ours, 1);
}

static hsa_status_t hook_async_copy(void *dst, hsa_agent_t dst_agent, const void *src,
                                    hsa_agent_t src_agent, size_t size, uint32_t ndeps,
                                    const hsa_signal_t *deps, hsa_signal_t done) {
  struct hsa_copy *c =
      done.handle ? hsa_copy_begin(&done, dst_agent.handle, src_agent.handle) : NULL;
  hsa_status_t rc = g_hsa.amd.hsa_amd_memory_async_copy_fn(dst, dst_agent, src, src_agent, size,
                                                           ndeps, deps, done);
  if (c && rc != HSA_STATUS_SUCCESS)
    hsa_copy_refused(c);
  return rc;
}

static hsa_status_t hook_async_copy_rect(const hsa_pitched_ptr_t *dst, const hsa_dim3_t *dst_offset,
                                         const hsa_pitched_ptr_t *src, const hsa_dim3_t *src_offset,
                                         const hsa_dim3_t *range, hsa_agent_t copy_agent,
                                         hsa_amd_copy_direction_t dir, uint32_t ndeps,
                                         const hsa_signal_t *deps, hsa_signal_t done) {
  uint64_t gpu = copy_agent.handle, host = 0; /* 0: no GPU */
  struct hsa_copy *c =
      done.handle
          ? hsa_copy_begin(&done, dir == hsaHostToDevice || dir == hsaDeviceToDevice ? gpu : host,
                           dir == hsaDeviceToHost || dir == hsaDeviceToDevice ? gpu : host)
          : NULL;
  hsa_status_t rc = g_hsa.amd.hsa_amd_memory_async_copy_rect_fn(
      dst, dst_offset, src, src_offset, range, copy_agent, dir, ndeps, deps, done);
  if (c && rc != HSA_STATUS_SUCCESS)
    hsa_copy_refused(c);
  return rc;
}

/* ---- queues ----------------------------------------------------------------------- */

static hsa_status_t hook_queue_create(hsa_agent_t agent, uint32_t size, hsa_queue_type32_t type,
                                      void (*cb)(hsa_status_t, hsa_queue_t *, void *), void *data,
                                      uint32_t priv, uint32_t group, hsa_queue_t **out) {
  struct hsa_queue_info *q = (struct hsa_queue_info *)calloc(1, sizeof *q);
  hsa_status_t rc =
      q ? g_hsa.amd.hsa_amd_queue_intercept_create_fn(agent, size, type, cb, data, priv, group, out)
        : HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  if (rc != HSA_STATUS_SUCCESS) { /* as the program would have had it */
    free(q);
    return g_hsa.core.hsa_queue_create_fn(agent, size, type, cb, data, priv, group, out);
  }
  pthread_mutex_lock(&g_hsa.lock);
  q->agent = agent.handle;
  q->id = g_hsa.queues++;
  q->wave = 64;
  if (hsa_agent_arch(agent.handle, q->arch, sizeof q->arch) != 0)
    snprintf(q->arch, sizeof q->arch, "amdgcn");
  g_hsa.core.hsa_agent_get_info_fn(agent, HSA_AGENT_INFO_WAVEFRONT_SIZE, &q->wave);
  int gpu = hsa_gpu_ordinal(agent.handle);
  q->gpu = gpu >= 0 ? gpu : 0;
  if (g_hsa.cache)
    hsa_cache_open(agent.handle);
  pthread_mutex_unlock(&g_hsa.lock);
  if (g_hsa.amd.hsa_amd_queue_intercept_register_fn(*out, hsa_submit, q) != HSA_STATUS_SUCCESS)
    hsa_log("queue %d: cannot intercept its packets: its kernels are not traced", q->id);
  else if (g_hsa.amd.hsa_amd_profiling_set_profiler_enabled_fn(*out, 1) != HSA_STATUS_SUCCESS)
    hsa_log("queue %d: no profiling: its kernels' times are their completions'", q->id);
  return HSA_STATUS_SUCCESS;
}

/* ---- loading ------------------------------------------------------------------------- */

EXPORT bool OnLoad(HsaApiTable *table, uint64_t runtime_version, uint64_t failed_tool_count,
                   const char *const *failed_tool_names) {
  (void)runtime_version, (void)failed_tool_count, (void)failed_tool_names;
  if (!table || !table->core_ || !table->amd_ext_ ||
      table->core_->version.minor_id < sizeof(CoreApiTable) ||
      table->amd_ext_->version.minor_id <
          offsetof(AmdExtTable, hsa_amd_queue_intercept_register_fn) + sizeof(void *)) {
    hsa_log("the HSA runtime's API table is older than this tool's: kernels are not traced");
    return true; /* loaded, idle: the program runs as without us */
  }
  pthread_mutex_init(&g_hsa.lock, NULL);
  g_hsa.core = *table->core_;
  g_hsa.amd = *table->amd_ext_;
  hsa_clock_init();
  g_hsa.core.hsa_iterate_agents_fn(hsa_collect_gpus, NULL);
  g_hsa.core.hsa_iterate_agents_fn(hsa_find_cpu_pools, NULL);
  g_hsa.cache = nano_env_str("NANO_KERNEL_CACHE");
  /* queues must be intercept queues, made by the runtime: a tool before us
   * that wraps hsa_queue_create is bypassed, and is told so */
  Dl_info wrapper, runtime;
  if (dladdr((void *)table->core_->hsa_queue_create_fn, &wrapper) &&
      dladdr((void *)table->core_->hsa_init_fn, &runtime) && wrapper.dli_fbase != runtime.dli_fbase)
    hsa_log("hsa_queue_create is wrapped by %s, loaded before nanoprobe: it will not see the "
            "program's queues (list libnano_rpd.so first in HSA_TOOLS_LIB)",
            wrapper.dli_fname ? wrapper.dli_fname : "another tool");
  table->core_->hsa_queue_create_fn = hook_queue_create;
  if (g_hsa.cache) {
    /* the cache's kernel names are needed before the program's loads */
    pthread_mutex_lock(&g_hsa.lock);
    for (int i = 0; i < g_hsa.ngpus; i++)
      hsa_cache_open(g_hsa.gpus[i]);
    pthread_mutex_unlock(&g_hsa.lock);
    table->core_->hsa_code_object_reader_create_from_memory_fn = hook_reader_memory;
    table->core_->hsa_code_object_reader_create_from_file_fn = hook_reader_file;
    table->core_->hsa_code_object_reader_destroy_fn = hook_reader_destroy;
    table->core_->hsa_executable_load_agent_code_object_fn = hook_load;
  }
  table->core_->hsa_executable_freeze_fn = hook_freeze;
  /* the program's copies: timed (the runtime's own switch: for every copy) */
  if (g_hsa.amd.hsa_amd_profiling_async_copy_enable_fn(true) != HSA_STATUS_SUCCESS)
    hsa_log("no copy profiling: copies' ops have their completions' times");
  table->amd_ext_->hsa_amd_memory_async_copy_fn = hook_async_copy;
  if (table->amd_ext_->version.minor_id >=
      offsetof(AmdExtTable, hsa_amd_memory_async_copy_rect_fn) + sizeof(void *))
    table->amd_ext_->hsa_amd_memory_async_copy_rect_fn = hook_async_copy_rect;
  rpd_hip_api_start(); /* a HIP runtime initialising HSA: its API calls */
  return true;
}

/* ---- without nanoprobe run ----------------------------------------------------------- */

/* NANO_HSA_TOOL: on unless set to a false value (nano/settings.h). */
static int hsa_tool_wanted(void) {
  int on = 1;
  nano_env_bool("NANO_HSA_TOOL", &on);
  return on;
}

/* Whether the space-separated list `tools` (HSA_TOOLS_LIB) names the file
 * `self` (resolved). */
static int hsa_tools_name(const char *tools, const char *self) {
  char one[PATH_MAX], real[PATH_MAX];
  for (const char *p = tools + strspn(tools, " "); *p; p += strspn(p, " ")) {
    size_t n = strcspn(p, " ");
    if (n < sizeof one) {
      memcpy(one, p, n);
      one[n] = 0;
      if (realpath(one, real) && !strcmp(real, self))
        return 1;
    }
    p += n;
  }
  return 0;
}

/* At load: this library first in HSA_TOOLS_LIB where that does not name it
 * and NANO_HSA_TOOL allows, so that ROCr loads it as a tool when the program
 * initialises HSA, with LD_PRELOAD alone as under `nanoprobe run` (the CUDA
 * counterpart: cupti_preload). A program whose HSA was initialised before
 * this library loaded is not seen. */
static void hsa_tool_preload(void) {
  if (!hsa_tool_wanted())
    return;
  char self[PATH_MAX];
  if (rpdi_object_path((const void *)hsa_tool_preload, self) != 0) {
    hsa_log("cannot find the tracer's own path: AMD kernels and HIP calls are not traced");
    return;
  }
  const char *tools = getenv("HSA_TOOLS_LIB");
  if (tools && hsa_tools_name(tools, self))
    return;
  size_t bytes = strlen(self) + (tools ? 1 + strlen(tools) : 0) + 1;
  char *list = (char *)malloc(bytes);
  if (list)
    snprintf(list, bytes, "%s%s%s", self, tools && *tools ? " " : "", tools ? tools : "");
  if (!list || setenv("HSA_TOOLS_LIB", list, 1) != 0)
    hsa_log("cannot set HSA_TOOLS_LIB: AMD kernels and HIP calls are not traced");
  free(list);
}

__attribute__((constructor(RPDI_REGISTER_HSA))) static void hsa_register(void) {
  static const struct rpdi_component hsa = {"hsa", hsa_tool_preload, NULL, NULL};
  rpdi_component_register(&hsa);
}

/* At hsa_shut_down: dispatches still running get HSA_UNLOAD_WAIT_MS to
 * complete (their rows, the program's signals); those that do not are said,
 * as they will not be in the trace. */
EXPORT void OnUnload(void) {
  for (int waited = 0;
       __atomic_load_n(&g_hsa.in_flight, __ATOMIC_ACQUIRE) && waited < HSA_UNLOAD_WAIT_MS * 1000;
       waited += HSA_UNLOAD_POLL_US)
    usleep(HSA_UNLOAD_POLL_US);
  uint64_t left = __atomic_load_n(&g_hsa.in_flight, __ATOMIC_ACQUIRE);
  if (left)
    hsa_log("%llu kernel dispatches were still running at hsa_shut_down (after %d ms): they may "
            "be missing from the trace",
            (unsigned long long)left, HSA_UNLOAD_WAIT_MS);
  if (g_hsa.pool_full)
    hsa_log("%llu dispatches ran as built: the kernarg pool was full",
            (unsigned long long)g_hsa.pool_full);
}
