/*
 * cuda_cache.c: the kernel cache (NANO_KERNEL_CACHE) for CUDA programs not
 * built with the plugin. libnano_cudahook.so (cuda_hook.c) hands over every
 * driver launch (cuLaunchKernel, cuLaunchKernelEx: what cudart, a static one
 * too, Triton and libraries call); with NANO_INSTRUMENT on, the twin of the
 * launched kernel is taken from the cache's cubins and launched through the
 * GPU back end (gpu_launch), with the buffer as one more argument; without
 * it, the cache's kernel of the same name is launched instead, with the
 * launch's own arguments (plain mode: A/B timing of a rebuilt kernel, as
 * logduration's and the HSA tool's).
 *
 * At the first launch every file of the cache's folders that kerneldb reads
 * is read once: each NVIDIA code object's kernels (not twins), keyed by name
 * and arch, with their explicit argument layout and their twins (kerneldb's
 * pairing) where they have one (the first folder holding a kernel wins,
 * said once). At a launch of handle f in context C:
 *
 *   step  what                                           why it can fail
 *   1     f's name: cuFuncGetName, or cuKernelGetName    driver before CUDA 12.3
 *         for a CUkernel
 *   2     the cache's entry of that name for C's arch,   not in the cache: f runs;
 *         with a twin when instrumenting                 no twin: said, f runs
 *   3     f's parameters (cuFuncGetParamInfo /           another kernel of that name,
 *         cuKernelGetParamInfo) equal the entry's,       or a driver before CUDA 12.4
 *         offset and size each
 *   4     the entry's image loaded into C                 the image does not load
 *         (cuModuleLoadData), the twin (or the kernel)
 *         from it
 *   5     gpu_launch with the twin: filters, buffers,     the back end's own reasons
 *         drain, analyzers, rows; the site tables are
 *         the cache file's (plain: the driver's call
 *         with the cache's kernel)
 *
 * Every step that fails leaves f to run as launched, said once per kernel
 * with why. The outcome of 1-4 is kept per (f, C): later launches cost one
 * lookup. Launches that pass their arguments in `extra` (one buffer,
 * CU_LAUNCH_PARAM_BUFFER_POINTER and _SIZE) get kernelParams pointing into
 * that buffer at the checked offsets; a buffer too short for them, or an
 * `extra` of other entries, runs as it is (said once). The replacement lives
 * in a module of its own, with its own copies of the module's __device__ and
 * __constant__ variables: at the decision each variable of the cache's image
 * is paired with the program's of that name (the module of f:
 * cuFuncGetModule, or its library for a CUkernel), and around every launch
 * of the replacement the program's values are copied into its copies on the
 * launch's stream and the writable ones back after it, so it computes with
 * and leaves what the program's kernel would. A variable of another size
 * refuses the replacement (said once); one the program lacks stays the
 * cache's.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_cache.h"
#include "dispatch.h"
#include "gpu.h"
#include "kdb_load.h"
#include "nano/settings.h"
#include "nano/symbols.h"
#include "rpd_internal.h"

/* The most parameters a kernel's list is read for (gpu.c's GPU_MAX_ARGS). */
#define CC_MAX_ARGS 255
/* cuLaunchKernel's `extra` entries (cuda.h: CU_LAUNCH_PARAM_*). */
#define CC_PARAM_END ((void *)0x00)
#define CC_PARAM_BUFFER_POINTER ((void *)0x01)
#define CC_PARAM_BUFFER_SIZE ((void *)0x02)
/* Decisions kept per (handle, context): open addressing, doubled at half. */
#define CC_CHOICES_INITIAL 64

typedef int CUresult;
typedef CUresult (*cc_launch_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                 unsigned by, unsigned bz, unsigned shared, void *stream,
                                 void **params, void **extra);
typedef CUresult (*cc_launch_ex_fn)(const struct nano_cu_config *c, void *f, void **params,
                                    void **extra);
typedef CUresult (*cc_coop_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned shared, void *stream,
                               void **params);

/* The driver's functions used here, by cuda.h's names. */
static struct {
  CUresult (*ModuleLoadData)(void **module, const void *image);
  CUresult (*ModuleGetFunction)(void **f, void *module, const char *name);
  /* optional: the newer the driver, the more launches can be named and checked */
  CUresult (*FuncGetName)(const char **name, void *f);                          /* 12.3 */
  CUresult (*KernelGetName)(const char **name, void *k);                        /* 12.3 */
  CUresult (*FuncGetParamInfo)(void *f, size_t i, size_t *off, size_t *size);   /* 12.4 */
  CUresult (*KernelGetParamInfo)(void *k, size_t i, size_t *off, size_t *size); /* 12.4 */
  /* the module variables' copies (needed where the cache's image has any) */
  CUresult (*FuncGetModule)(void **module, void *f);     /* 11.0 */
  CUresult (*KernelGetLibrary)(void **library, void *k); /* 12.0 */
  CUresult (*ModuleGetGlobal)(uint64_t *dptr, size_t *bytes, void *module, const char *name);
  CUresult (*LibraryGetGlobal)(uint64_t *dptr, size_t *bytes, void *library, const char *name);
  CUresult (*MemcpyDtoDAsync)(uint64_t dst, uint64_t src, size_t bytes, void *stream);
  CUresult (*MemcpyDtoDAsyncPtsz)(uint64_t dst, uint64_t src, size_t bytes, void *stream);
} cu;

/* cuda.h's CUDA_ERROR_NOT_FOUND (a module without a variable of that name)
 * and CUDA_ERROR_INVALID_HANDLE. */
#define CC_NOT_FOUND 500
#define CC_INVALID_HANDLE 400

/* One code object of the cache, loaded into each context that needs it. */
struct cc_loaded {
  void *ctx, *module;
  CUresult rc;
  struct cc_loaded *next;
};
/* A module-scope variable of a cache image (kdb_code_object_globals). */
struct cc_global {
  char *name;
  uint64_t size;
  int writable;
};
struct cc_image {
  void *bytes;
  size_t size;
  struct cc_global *globals;
  size_t nglobals;
  struct cc_loaded *loaded;
};

/* A variable of the program's module and the replacement's copy of it. */
struct cc_var {
  uint64_t program, replacement, size;
  int writable;
};

/* A kernel of the cache (key: its name, the program's kernel it replaces)
 * for one arch, and its twin where it has one (else NULL). */
struct cc_entry {
  char *key, *twin, *arch, *path;
  struct cc_image *image;
  uint32_t nargs;
  uint32_t (*args)[2]; /* the kernel's explicit arguments: offset, size */
  int dup_said;
  struct cc_entry *next;
};

/* What a (handle, context) launches: the cache's twin or kernel (plain
 * mode), NULL for the handle itself, and the variables copied around it
 * (kept with the decision, never freed). */
struct cc_choice {
  void *f, *ctx, *use;
  const struct cc_entry *e;
  struct cc_var *vars;
  size_t nvars;
};

static struct {
  pthread_once_t once;
  pthread_mutex_t lock;
  const char *dirs;
  int usable;
  struct cc_entry *entries;
  struct cc_choice *choices;
  size_t cap, used;
  char **said; /* kernel names something was said about */
  size_t nsaid;
} g_cc = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

/* The launch the adapter makes and its decision (the calling thread's,
 * inside gpu_launch). */
struct cc_running {
  const struct nano_cu_launch *l;
  const struct cc_choice *choice;
};
static __thread const struct cc_running *cc_current;

static void cc_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void cc_log(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rpdi_logv("nanoprobe: ", fmt, ap);
  va_end(ap);
}

/* Says fmt once per kernel name (lock held). */
static void cc_say_once(const char *name, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void cc_say_once(const char *name, const char *fmt, ...) {
  for (size_t i = 0; i < g_cc.nsaid; i++)
    if (!strcmp(g_cc.said[i], name))
      return;
  char **grown = realloc(g_cc.said, (g_cc.nsaid + 1) * sizeof *grown);
  if (grown && (grown[g_cc.nsaid] = strdup(name)))
    g_cc.said = grown, g_cc.nsaid++;
  else if (grown)
    g_cc.said = grown;
  va_list ap;
  va_start(ap, fmt);
  rpdi_logv("nanoprobe: ", fmt, ap);
  va_end(ap);
}

/* Says fmt once for kernel name (the lock taken here). */
#define CC_SAY_ONCE(name, ...)                                                                     \
  do {                                                                                             \
    pthread_mutex_lock(&g_cc.lock);                                                                \
    cc_say_once(name, __VA_ARGS__);                                                                \
    pthread_mutex_unlock(&g_cc.lock);                                                              \
  } while (0)

/* ---- the cache's files -------------------------------------------------------------- */

struct cc_walk {
  const struct nano_kdb_api *api;
};

/* Reads co's module variables into img; 0, or -1 after saying why (then
 * none of its kernels is used: a replacement must see the program's). */
static int cc_image_globals(const struct nano_kdb_api *api, kdb *db, const kdb_code_object *co,
                            struct cc_image *img, const char *path) {
  char err[256] = "";
  long n = api->globals(db, co, NULL, 0, err, sizeof err), made = 0;
  kdb_global *g = n > 0 ? calloc((size_t)n, sizeof *g) : NULL;
  struct cc_global *mine = n > 0 ? calloc((size_t)n, sizeof *mine) : NULL;
  int ok =
      n == 0 || (n > 0 && g && mine && api->globals(db, co, g, (size_t)n, err, sizeof err) == n);
  for (; ok && made < n; made++) {
    mine[made] = (struct cc_global){strdup(g[made].name), g[made].size, g[made].writable};
    ok = mine[made].name != NULL;
  }
  free(g);
  if (!ok) {
    cc_log("kernel cache: %s (%s): its module variables cannot be read (%s): its kernels are "
           "not used",
           path, co->arch, *err ? err : "out of memory");
    for (long i = 0; i < made; i++)
      free(mine[i].name);
    free(mine);
    return -1;
  }
  img->globals = mine;
  img->nglobals = (size_t)n;
  return 0;
}

/* The kernels of one cache file and their twins (nano_kcache_fn). */
static void cc_file(const char *path, kdb *db, void *ctx) {
  const struct nano_kdb_api *api = ((struct cc_walk *)ctx)->api;
  for (size_t j = 0; j < api->count(db); j++) {
    const kdb_code_object *co = api->at(db, j);
    if (co->vendor != KDB_VENDOR_NVIDIA)
      continue;
    struct cc_image *img = NULL;
    for (size_t i = 0; i < api->kernel_count(db); i++) {
      const kdb_kernel *k = api->kernel_at(db, i), *t = k->twin;
      if (k->co != co || k->original || k->explicit_arg_count > CC_MAX_ARGS)
        continue;
      if (t && t->twin_arg_index != k->explicit_arg_count) {
        cc_log("kernel cache: %s: the twin of %s does not take its buffer last; the kernel has "
               "no twin",
               path, k->name);
        t = NULL;
      }
      struct cc_entry *dup = NULL;
      for (struct cc_entry *e = g_cc.entries; e && !dup; e = e->next)
        if (!strcmp(e->key, k->name) && !strcmp(e->arch, co->arch))
          dup = e;
      if (dup) {
        if (!dup->dup_said)
          cc_log("kernel cache: %s (%s) is in %s and %s: the first is used", k->name, co->arch,
                 dup->path, path);
        dup->dup_said = 1;
        continue;
      }
      if (!img && (img = calloc(1, sizeof *img)) &&
          !(img->bytes = malloc(co->image_size ? (size_t)co->image_size : 1))) {
        free(img);
        img = NULL;
      }
      if (!img)
        return;
      if (!img->size) {
        img->size = (size_t)co->image_size;
        memcpy(img->bytes, api->image(db, co), img->size);
        if (cc_image_globals(api, db, co, img, path) != 0) {
          free(img->bytes);
          free(img);
          break; /* the next code object */
        }
      }
      struct cc_entry *e = calloc(1, sizeof *e);
      if (!e || !(e->key = strdup(k->name)) || (t && !(e->twin = strdup(t->name))) ||
          !(e->arch = strdup(co->arch)) || !(e->path = strdup(path)) ||
          !(e->args = calloc(k->explicit_arg_count + 1, sizeof *e->args))) {
        if (e)
          free(e->key), free(e->twin), free(e->arch), free(e->path);
        free(e);
        continue;
      }
      e->image = img;
      e->nargs = (uint32_t)k->explicit_arg_count;
      for (uint32_t a = 0; a < e->nargs; a++)
        e->args[a][0] = k->args[a].offset, e->args[a][1] = k->args[a].size;
      e->next = g_cc.entries;
      g_cc.entries = e;
    }
  }
}

/* Reads the cache and resolves the driver's functions, once. */
static void cc_open(void) {
  g_cc.dirs = nano_env_str("NANO_KERNEL_CACHE");
  if (!g_cc.dirs)
    return;
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  static const struct nano_symbol fns[] = {
      NANO_SYMBOL(__typeof__(cu), ModuleLoadData, cuModuleLoadData),
      NANO_SYMBOL(__typeof__(cu), ModuleGetFunction, cuModuleGetFunction),
  };
  const char *missing = h ? nano_symbols_resolve(h, fns, sizeof fns / sizeof fns[0], &cu) : "";
  if (missing) {
    cc_log("NANO_KERNEL_CACHE is not used for CUDA: the driver %s%s", *missing ? "lacks " : "",
           *missing ? missing : "(libcuda.so.1) is not loaded");
    return;
  }
  *(void **)&cu.FuncGetName = dlsym(h, "cuFuncGetName");
  *(void **)&cu.KernelGetName = dlsym(h, "cuKernelGetName");
  *(void **)&cu.FuncGetParamInfo = dlsym(h, "cuFuncGetParamInfo");
  *(void **)&cu.KernelGetParamInfo = dlsym(h, "cuKernelGetParamInfo");
  *(void **)&cu.FuncGetModule = dlsym(h, "cuFuncGetModule");
  *(void **)&cu.KernelGetLibrary = dlsym(h, "cuKernelGetLibrary");
  *(void **)&cu.ModuleGetGlobal = dlsym(h, "cuModuleGetGlobal_v2");
  *(void **)&cu.LibraryGetGlobal = dlsym(h, "cuLibraryGetGlobal");
  *(void **)&cu.MemcpyDtoDAsync = dlsym(h, "cuMemcpyDtoDAsync_v2");
  *(void **)&cu.MemcpyDtoDAsyncPtsz = dlsym(h, "cuMemcpyDtoDAsync_v2_ptsz");
  char err[512];
  const struct nano_kdb_api *api = nano_kdb_load(err, sizeof err);
  if (!api) {
    cc_log("NANO_KERNEL_CACHE is not read: %s", err);
    return;
  }
  struct cc_walk w = {api};
  nano_kcache_each(api, g_cc.dirs, cc_file, &w, cc_log);
  if (!cu.FuncGetName && !cu.KernelGetName)
    cc_log("NANO_KERNEL_CACHE: the CUDA driver cannot name launched kernels (cuFuncGetName: "
           "CUDA 12.3 or later): no twin of the cache runs");
  g_cc.usable = 1;
}

/* ---- decisions per (handle, context) ------------------------------------------------ */

static size_t cc_slot(const struct cc_choice *slots, size_t cap, void *f, void *ctx) {
  size_t i = (((uintptr_t)f >> 4) ^ ((uintptr_t)ctx >> 4) * 31) * 0x9E3779B97F4A7C15ull & (cap - 1);
  while (slots[i].f && (slots[i].f != f || slots[i].ctx != ctx))
    i = (i + 1) & (cap - 1);
  return i;
}

/* Keeps c (lock held; a decision that cannot be kept is made again). */
static void cc_keep(const struct cc_choice *c) {
  if (2 * (g_cc.used + 1) > g_cc.cap) {
    size_t cap = g_cc.cap ? 2 * g_cc.cap : CC_CHOICES_INITIAL;
    struct cc_choice *slots = calloc(cap, sizeof *slots);
    if (!slots)
      return;
    for (size_t i = 0; i < g_cc.cap; i++)
      if (g_cc.choices[i].f)
        slots[cc_slot(slots, cap, g_cc.choices[i].f, g_cc.choices[i].ctx)] = g_cc.choices[i];
    free(g_cc.choices);
    g_cc.choices = slots;
    g_cc.cap = cap;
  }
  size_t i = cc_slot(g_cc.choices, g_cc.cap, c->f, c->ctx);
  g_cc.used += !g_cc.choices[i].f;
  g_cc.choices[i] = *c;
}

/* f's name (a CUfunction's or a CUkernel's), or NULL. */
static const char *cc_name(void *f) {
  const char *name = NULL;
  if (cu.FuncGetName && cu.FuncGetName(&name, f) == 0 && name)
    return name;
  if (cu.KernelGetName && cu.KernelGetName(&name, f) == 0 && name)
    return name;
  return NULL;
}

/* Why f's parameters are not e's original's ("" when they are). */
static int cc_args_differ(void *f, const struct cc_entry *e, char *why, size_t len) {
  CUresult (*info)(void *, size_t, size_t *, size_t *) = cu.FuncGetParamInfo;
  size_t off, size;
  if (info && info(f, 0, &off, &size) != 0 && e->nargs)
    info = NULL; /* not a CUfunction */
  if (!info && cu.KernelGetParamInfo)
    info = cu.KernelGetParamInfo;
  if (!info) {
    snprintf(why, len,
             "the driver cannot give its parameter list (cuFuncGetParamInfo: CUDA 12.4 "
             "or later) to check against the cache's");
    return 1;
  }
  uint32_t i = 0;
  for (; i <= CC_MAX_ARGS && info(f, i, &off, &size) == 0; i++)
    if (i >= e->nargs || off != e->args[i][0] || size != e->args[i][1]) {
      if (i < e->nargs)
        snprintf(why, len,
                 "its parameter %u is %zu bytes at offset %zu, the cache's %u bytes at %u", i, size,
                 off, e->args[i][1], e->args[i][0]);
      else
        snprintf(why, len, "it has more parameters than the cache's %u", e->nargs);
      return 1;
    }
  if (i != e->nargs) {
    snprintf(why, len, "it has %u parameters, the cache's %u", i, e->nargs);
    return 1;
  }
  return 0;
}

/* Why a launch runs as the program made it, as said after "it runs". */
#define CC_AS_BUILT(instrumenting) ((instrumenting) ? "uninstrumented" : "as built")

/* e's image loaded in context ctx (dev: its ordinal), once; NULL when out
 * of memory (m->rc says whether it loaded). */
static struct cc_loaded *cc_module(const struct cc_entry *e, const struct gpu_api *api, void *ctx,
                                   int dev) {
  struct cc_loaded *m = e->image->loaded;
  while (m && m->ctx != ctx)
    m = m->next;
  if (!m && (m = calloc(1, sizeof *m))) {
    m->ctx = ctx;
    m->rc = api->enter(ctx, dev);
    if (m->rc == 0) {
      m->rc = cu.ModuleLoadData(&m->module, e->image->bytes);
      api->leave();
    }
    m->next = e->image->loaded;
    e->image->loaded = m;
  }
  return m;
}

/* e's twin (instrumenting) or kernel in context ctx, or NULL after saying
 * why. */
static void *cc_function(const struct cc_entry *e, int instrumenting, const struct gpu_api *api,
                         void *ctx, int dev) {
  struct cc_loaded *m = cc_module(e, api, ctx, dev);
  if (!m)
    return NULL;
  void *fn = NULL;
  CUresult rc = m->rc;
  if (rc == 0 && api->enter(ctx, dev) == 0) {
    rc = cu.ModuleGetFunction(&fn, m->module, instrumenting ? e->twin : e->key);
    api->leave();
  }
  if (rc != 0) {
    cc_say_once(e->key, "%s: the kernel cache's %s does not load on this device (%s): it runs %s",
                e->key, e->path, api->error(rc), CC_AS_BUILT(instrumenting));
    return NULL;
  }
  return fn;
}

/* The address and size of variable `name` of f's module (or library, for
 * a CUkernel), with f's context current: 0, CC_NOT_FOUND, or the driver's
 * error. */
static CUresult cc_program_global(void *f, const char *name, uint64_t *dptr, size_t *bytes) {
  void *owner;
  if (cu.FuncGetModule && cu.FuncGetModule(&owner, f) == 0)
    return cu.ModuleGetGlobal(dptr, bytes, owner, name);
  if (cu.KernelGetLibrary && cu.LibraryGetGlobal && cu.KernelGetLibrary(&owner, f) == 0)
    return cu.LibraryGetGlobal(dptr, bytes, owner, name);
  return CC_INVALID_HANDLE; /* no module or library the driver names for f */
}

/* Pairs every variable of c's image with the program's of that name (see
 * the file comment) into c->vars; 0, or -1 after saying why the replacement
 * is not used (lock held). */
static int cc_vars(struct cc_choice *c, int instrumenting, const struct gpu_api *api, int dev) {
  const struct cc_image *img = c->e->image;
  const char *name = c->e->key, *as_built = CC_AS_BUILT(instrumenting);
  if (!img->nglobals)
    return 0;
  if (!cu.ModuleGetGlobal || !cu.MemcpyDtoDAsync || !cu.MemcpyDtoDAsyncPtsz) {
    cc_say_once(name,
                "%s: the kernel cache's %s has module variables, which this driver cannot copy "
                "(cuModuleGetGlobal_v2, cuMemcpyDtoDAsync_v2): it runs %s",
                name, c->e->path, as_built);
    return -1;
  }
  if (!(c->vars = calloc(img->nglobals, sizeof *c->vars)))
    return -1;
  const struct cc_loaded *m = cc_module(c->e, api, c->ctx, dev); /* loaded by cc_function */
  CUresult rc = m ? api->enter(c->ctx, dev) : CC_NOT_FOUND;
  int entered = rc == 0;
  const struct cc_global *differs = NULL; /* of another size in the program */
  size_t prog = 0, mine = 0;
  for (size_t i = 0; rc == 0 && !differs && i < img->nglobals; i++) {
    const struct cc_global *g = &img->globals[i];
    struct cc_var v = {0, 0, 0, g->writable};
    rc = cc_program_global(c->f, g->name, &v.program, &prog);
    if (rc == CC_NOT_FOUND) { /* the program has none: the cache's own stays */
      rc = 0;
      continue;
    }
    if (rc == 0)
      rc = cu.ModuleGetGlobal(&v.replacement, &mine, m->module, g->name);
    v.size = mine;
    if (rc == 0 && prog != mine)
      differs = g;
    else if (rc == 0 && mine) /* nothing to copy of an empty one */
      c->vars[c->nvars++] = v;
  }
  if (entered)
    api->leave();
  if (differs) {
    cc_say_once(name,
                "%s: its module variable %s is %zu bytes in the program and %zu in the kernel "
                "cache's %s: it runs %s",
                name, differs->name, prog, mine, c->e->path, as_built);
    return -1;
  }
  if (rc != 0) {
    cc_say_once(name,
                "%s: the module variables for the kernel cache's %s cannot be found (%s): it "
                "runs %s",
                name, c->e->path, api->error(rc), as_built);
    return -1;
  }
  return 0;
}

/* Copies c's variables on stream s before a launch of its replacement (in:
 * the program's values into the replacement's copies) or after it (the
 * writable ones back). 0, or the driver's error (said once). */
static CUresult cc_copy_vars(const struct cc_choice *c, void *s, int per_thread, int in) {
  CUresult (*copy)(uint64_t, uint64_t, size_t, void *) =
      per_thread ? cu.MemcpyDtoDAsyncPtsz : cu.MemcpyDtoDAsync;
  CUresult rc = 0;
  for (size_t i = 0; rc == 0 && i < c->nvars; i++) {
    const struct cc_var *v = &c->vars[i];
    if (in)
      rc = copy(v->replacement, v->program, v->size, s);
    else if (v->writable)
      rc = copy(v->program, v->replacement, v->size, s);
  }
  if (rc != 0) {
    const struct gpu_api *api = gpu_api_of(NANO_GPU_CUDA);
    CC_SAY_ONCE(c->e->key,
                "%s: copying its module variables %s the kernel cache's replacement failed (%s)%s",
                c->e->key, in ? "to" : "back from", api ? api->error(rc) : "no CUDA back end",
                in ? ": it runs as launched" : ": the program's copies miss its writes");
  }
  return rc;
}

/* The decision for a launch of f on stream s (lock held): the cache's twin
 * of f when instrumenting, else its kernel of f's name. */
static struct cc_choice cc_choose(void *f, void *s, int instrumenting) {
  struct cc_choice c = {.f = f};
  const struct gpu_api *api = gpu_api_of(NANO_GPU_CUDA);
  void *ctx;
  int dev;
  struct gpu_device_info info;
  if (!api || api->current(s, &ctx, &dev) != 0)
    return c;
  c.ctx = ctx;
  if (g_cc.cap) {
    size_t i = cc_slot(g_cc.choices, g_cc.cap, f, ctx);
    if (g_cc.choices[i].f)
      return g_cc.choices[i];
  }
  /* a new (handle, context): the device's arch, asked once per decision */
  if (api->describe(ctx, dev, &info) != 0)
    return (struct cc_choice){.f = f};
  const char *name = cc_name(f);
  const struct cc_entry *e = NULL, *other_arch = NULL;
  for (const struct cc_entry *x = name ? g_cc.entries : NULL; x && !e; x = x->next)
    if (!strcmp(x->key, name)) {
      if (!strcmp(x->arch, info.arch))
        e = x;
      else
        other_arch = x;
    }
  char why[160];
  const char *as_built = CC_AS_BUILT(instrumenting), *what = instrumenting ? "twin" : "kernel";
  if (!e && other_arch)
    cc_say_once(name, "%s: the kernel cache has it for %s only, the device is %s: it runs %s", name,
                other_arch->arch, info.arch, as_built);
  else if (e && instrumenting && !e->twin)
    cc_say_once(name,
                "%s: the kernel cache's %s has no twin of it (built without the plugin): it runs "
                "uninstrumented",
                name, e->path);
  else if (e && cc_args_differ(f, e, why, sizeof why))
    cc_say_once(name, "%s: the kernel cache's %s (%s) is not used: %s; it runs %s", name, what,
                e->path, why, as_built);
  else if (e && (c.use = cc_function(e, instrumenting, api, ctx, dev))) {
    c.e = e;
    if (cc_vars(&c, instrumenting, api, dev) != 0) {
      free(c.vars);
      c = (struct cc_choice){.f = f, .ctx = ctx};
    }
  }
  cc_keep(&c);
  return c;
}

/* ---- the launch ----------------------------------------------------------------------- */

/* l's driver call with kernel f, configuration c (its attributes for
 * cuLaunchKernelEx), params and extra. A cooperative launch's twin is
 * cooperative too: it fits the grid or fails (the back end then runs f). */
static int cc_call(const struct nano_cu_launch *l, void *f, const struct nano_cu_config *c,
                   void **params, void **extra) {
  switch (l->call) {
  case NANO_CU_LAUNCH:
    return ((cc_launch_fn)l->real)(f, c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1],
                                   c->block[2], c->shared, c->stream, params, extra);
  case NANO_CU_LAUNCH_COOP:
    return ((cc_coop_fn)l->real)(f, c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1],
                                 c->block[2], c->shared, c->stream, params);
  case NANO_CU_LAUNCH_EX:
    break;
  }
  return ((cc_launch_ex_fn)l->real)(c, f, params, extra);
}

/* l's call with c's replacement, configuration g and the arguments, its
 * module variables copied in before and back after. */
static int cc_replaced(const struct nano_cu_launch *l, const struct cc_choice *c,
                       const struct nano_cu_config *g, void **params, void **extra) {
  CUresult rc = cc_copy_vars(c, g->stream, l->per_thread, 1);
  if (rc == 0 && (rc = cc_call(l, c->use, g, params, extra)) == 0)
    cc_copy_vars(c, g->stream, l->per_thread, 0); /* said when it fails: the launch ran */
  return rc;
}

/* l's call with another kernel and arguments (the back end's launch function). */
static int cc_launch(const void *kernel, uint64_t grid_xy, uint32_t grid_z, uint64_t block_xy,
                     uint32_t block_z, void **args, size_t shared, void *stream) {
  const struct nano_cu_launch *l = cc_current->l;
  struct nano_cu_config c = l->config;
  c.grid[0] = (uint32_t)grid_xy, c.grid[1] = (uint32_t)(grid_xy >> 32), c.grid[2] = grid_z;
  c.block[0] = (uint32_t)block_xy, c.block[1] = (uint32_t)(block_xy >> 32), c.block[2] = block_z;
  c.shared = (unsigned)shared;
  c.stream = stream;
  const struct cc_choice *choice = cc_current->choice;
  if (kernel != choice->use) /* the program's kernel: its own variables */
    return cc_call(l, (void *)kernel, &c, args, NULL);
  return cc_replaced(l, choice, &c, args, NULL);
}

/* The arguments of a launch that passes them in `extra`'s one buffer, as
 * kernelParams (e's checked offsets into the buffer) in params; 0, or -1
 * with why when extra is not one buffer holding every argument. */
static int cc_params_of_extra(void **extra, const struct cc_entry *e, void **params, char *why,
                              size_t len) {
  unsigned char *buf = NULL;
  size_t size = 0;
  int have_size = 0;
  for (size_t i = 0; extra[i] != CC_PARAM_END; i += 2) {
    if (extra[i] == CC_PARAM_BUFFER_POINTER) {
      buf = extra[i + 1];
    } else if (extra[i] == CC_PARAM_BUFFER_SIZE && extra[i + 1]) {
      size = *(const size_t *)extra[i + 1];
      have_size = 1;
    } else {
      snprintf(why, len, "an entry %p other than the buffer's pointer and size", extra[i]);
      return -1;
    }
  }
  if (!buf || !have_size) {
    snprintf(why, len, "no buffer pointer and size");
    return -1;
  }
  for (uint32_t i = 0; i < e->nargs; i++) {
    if ((size_t)e->args[i][0] + e->args[i][1] > size) {
      snprintf(why, len, "its buffer of %zu bytes ends before parameter %u (%u bytes at %u)", size,
               i, e->args[i][1], e->args[i][0]);
      return -1;
    }
    params[i] = buf + e->args[i][0];
  }
  return 0;
}

/* l as the program made it. */
static int cc_as_is(const struct nano_cu_launch *l) {
  return cc_call(l, l->f, &l->config, l->params, l->extra);
}

__attribute__((visibility("default"))) int __nano_cuda_launch(const struct nano_cu_launch *l) {
  pthread_once(&g_cc.once, cc_open);
  if (!g_cc.usable)
    return cc_as_is(l);
  int instrumenting = nano_dispatch_instrumenting();
  pthread_mutex_lock(&g_cc.lock);
  struct cc_choice c = cc_choose(l->f, l->config.stream, instrumenting);
  pthread_mutex_unlock(&g_cc.lock);
  if (c.use && !instrumenting) { /* the same parameter list: the launch's arguments as given */
    int rc = cc_replaced(l, &c, &l->config, l->params, l->extra);
    return rc == 0 ? 0 : cc_as_is(l); /* a failed replacement: the program's kernel */
  }
  void *from_extra[CC_MAX_ARGS + 1];
  void **params = l->params;
  char why[160];
  if (c.use && !params && l->extra &&
      cc_params_of_extra(l->extra, c.e, from_extra, why, sizeof why) == 0)
    params = from_extra;
  else if (c.use && !params) {
    CC_SAY_ONCE(c.e->key,
                "%s: launched with its arguments in cuLaunchKernel's extra (%s): the kernel "
                "cache's twin is not used; it runs uninstrumented",
                c.e->key, l->extra ? why : "no arguments given");
    c.use = NULL;
  }
  if (!c.use)
    return cc_as_is(l);
  const struct cc_running running = {l, &c}, *outer = cc_current;
  cc_current = &running;
  const struct nano_cu_config *g = &l->config;
  int rc =
      gpu_launch(NANO_GPU_CUDA | GPU_DRIVER | (l->per_thread ? NANO_GPU_PER_THREAD : 0), cc_launch,
                 l->f, c.use, c.e->key, c.e->path, g->grid[0] | (uint64_t)g->grid[1] << 32,
                 g->grid[2], g->block[0] | (uint64_t)g->block[1] << 32, g->block[2], params,
                 c.e->nargs, g->shared, g->stream);
  cc_current = outer;
  return rc;
}

/* ---- kernel nodes added to a graph by hand ------------------------------------------- */

/* The function a lone kernel node gets for f in its add or set call: the
 * cache's kernel of f's name in plain mode, else f (said once where the
 * cache would have replaced f at a launch but the node cannot have its
 * module variables copied around it: __nano_cuda_node_add captures those
 * where it can). */
static void *cc_node_function(void *f) {
  int instrumenting = nano_dispatch_instrumenting();
  pthread_mutex_lock(&g_cc.lock);
  struct cc_choice c = cc_choose(f, NULL, instrumenting);
  void *use = f;
  if (c.use && !instrumenting && c.nvars)
    cc_say_once(c.e->key,
                "%s: a kernel node added to a graph by hand (cuGraphAddKernelNode) runs as built: "
                "the kernel cache's kernel needs the program's module variables copied around it, "
                "which this node cannot have (edges other than full dependencies, arguments in "
                "extra, or a capture that failed keep it a lone kernel node)",
                c.e->key);
  else if (c.use && !instrumenting)
    use = c.use;
  pthread_mutex_unlock(&g_cc.lock);
  return use;
}

/* The kernel part of a node call's parameters (abi: their layout), and the
 * bytes of the whole struct in *bytes; NULL for a node of another type. */
static struct nano_cu_node_params_v2 *cc_node_kernel(enum nano_cu_node_abi abi, void *params,
                                                     size_t *bytes) {
  struct nano_cu_graph_node_params *any = params;
  *bytes = abi == NANO_CU_NODE_V1   ? sizeof(struct nano_cu_node_params)
           : abi == NANO_CU_NODE_V2 ? sizeof(struct nano_cu_node_params_v2)
                                    : sizeof *any;
  if (!params || (abi == NANO_CU_NODE_GENERIC && any->type != NANO_CU_NODE_KERNEL))
    return NULL;
  return abi == NANO_CU_NODE_GENERIC ? &any->kernel : params;
}

/* The kernel k names: func, else (the _v2 layouts, where it is NULL) the
 * CUkernel. */
static void *cc_node_handle(enum nano_cu_node_abi abi, const struct nano_cu_node_params_v2 *k) {
  return k->func || abi == NANO_CU_NODE_V1 ? k->func : k->kern;
}

/* A node call's parameters as the driver gets them: params itself, or mine
 * (a copy, bytes long) with the function cc_node_function gives in place of
 * the kernel params name. */
static void *cc_node_params_plain(enum nano_cu_node_abi abi, void *params, void *mine) {
  size_t bytes;
  struct nano_cu_node_params_v2 *k = cc_node_kernel(abi, params, &bytes);
  void *f = k ? cc_node_handle(abi, k) : NULL;
  void *use = f && g_cc.usable ? cc_node_function(f) : f;
  if (use == f)
    return params;
  memcpy(mine, params, bytes);
  cc_node_kernel(abi, mine, &bytes)->func = use;
  return mine;
}

/* Room for the largest node parameters (CUgraphNodeParams). */
#define CC_NODE_PARAMS_BYTES sizeof(struct nano_cu_graph_node_params)

/* The program's add call a, with the parameters it gets. */
static int cc_node_add_call(const struct nano_cu_node_add *a, void *params) {
  if (a->abi == NANO_CU_NODE_GENERIC) /* remembers conditional nodes' bodies */
    return __nano_gpu_graph_add_node(NANO_GPU_CUDA, a->real, NULL, a->with_edges, a->node, a->graph,
                                     a->deps, a->edges, a->ndeps, params);
  return ((int (*)(void **, void *, const void *, size_t, const void *))a->real)(
      a->node, a->graph, a->deps, a->ndeps, params);
}

/* The cache's replacement of the kernel f of a node added by hand (its
 * twin when instrumenting), in *c: 1, or 0 (said why, once) where there is
 * none. */
static int cc_node_choice(void *f, int instrumenting, struct cc_choice *c) {
  pthread_mutex_lock(&g_cc.lock);
  *c = cc_choose(f, NULL, instrumenting);
  pthread_mutex_unlock(&g_cc.lock);
  return c->use != NULL;
}

/* Plain mode's kernel node with module variables, issued on gpu.c's
 * capture stream s: the copies in, the cache's kernel, the copies back. */
struct cc_plain_capture {
  const struct nano_cu_launch *l;
  const struct cc_choice *c;
  const struct gpu_kernel_params *p;
};
static int cc_plain_capture(void *arg, void *s) {
  const struct cc_plain_capture *x = arg;
  const struct gpu_kernel_params *p = x->p;
  struct nano_cu_config g = {{p->grid[0], p->grid[1], p->grid[2]},
                             {p->block[0], p->block[1], p->block[2]},
                             p->shared,
                             s,
                             NULL,
                             0};
  return cc_replaced(x->l, x->c, &g, p->args, NULL);
}

__attribute__((visibility("default"))) int __nano_cuda_node_add(const struct nano_cu_node_add *a) {
  pthread_once(&g_cc.once, cc_open);
  size_t bytes;
  struct nano_cu_node_params_v2 *k = cc_node_kernel(a->abi, a->params, &bytes);
  void *f = k ? cc_node_handle(a->abi, k) : NULL;
  int instrumenting = nano_dispatch_instrumenting();
  struct cc_choice c;
  int how = GPU_HAND_AS_IS;
  const char *name = NULL, *why = NULL;
  /* the twin's nodes, captured as a launch of it through the driver's
   * cuLaunchKernel, the module variables' copies with them; in plain mode
   * the copies and the cache's kernel where it has variables (else the
   * node gets the cache's kernel as it is, below) */
  if (f && a->node && g_cc.usable && cc_node_choice(f, instrumenting, &c) &&
      (instrumenting || c.nvars)) {
    name = c.e->key;
    struct gpu_kernel_params p;
    gpu_cuda_api.graphs->kernel_params_read(k, &p);
    p.func = f;
    const struct nano_cu_launch l = {
        NANO_CU_LAUNCH, 0, a->launch, f, {{0}, {0}, 0, NULL, NULL, 0}, p.args, NULL};
    if (!gpu_edges_default(a->edges, a->ndeps)) {
      if (instrumenting) /* plain: said below, as for any node it cannot replace */
        CC_SAY_ONCE(name, "%s: %s", name, GPU_HAND_EDGES_SAID);
    } else if (!a->launch) {
      CC_SAY_ONCE(name,
                  "%s: a kernel node added to a graph by hand runs %s: the driver has no "
                  "cuLaunchKernel to capture the kernel cache's kernel with",
                  name, CC_AS_BUILT(instrumenting));
    } else if (instrumenting) {
      struct gpu_hand_twin t = {c.use, name, c.e->path, c.e->nargs, cc_launch};
      const struct cc_running running = {&l, &c}, *outer = cc_current;
      cc_current = &running;
      how = gpu_hand_add(NANO_GPU_CUDA | GPU_DRIVER, &t, &p, a->node, a->graph, a->deps, a->ndeps,
                         &why);
      cc_current = outer;
    } else if (!p.extra) {
      struct cc_plain_capture x = {&l, &c, &p};
      how = gpu_hand_add_plain(NANO_GPU_CUDA | GPU_DRIVER, cc_plain_capture, &x, f, c.use, name,
                               a->node, a->graph, a->deps, a->ndeps, &why);
    }
    if (how == GPU_HAND_ADDED)
      return 0;
  }
  _Alignas(16) unsigned char mine[CC_NODE_PARAMS_BYTES];
  int rc = cc_node_add_call(a, cc_node_params_plain(a->abi, a->params, mine));
  return f ? gpu_hand_added(how, rc, a->node, name, why) : rc;
}

/* The program's kernel that plain mode replaced by the cache's `use`, or
 * use itself. */
static void *cc_replaced_kernel(void *use) {
  void *f = use;
  pthread_mutex_lock(&g_cc.lock);
  for (size_t i = 0; use && i < g_cc.cap; i++)
    if (g_cc.choices[i].f && g_cc.choices[i].use == use)
      f = g_cc.choices[i].f;
  pthread_mutex_unlock(&g_cc.lock);
  return f;
}

__attribute__((visibility("default"))) int
__nano_cuda_node_params(const struct nano_cu_node_call *c) {
  pthread_once(&g_cc.once, cc_open);
  _Alignas(16) unsigned char mine[CC_NODE_PARAMS_BYTES];
  int get = c->op == NANO_GPU_NODE_GET;
  /* a node of __nano_cuda_node_add's own gets its replacement in gpu.c */
  int ours = __nano_gpu_graph_kernel_node(NANO_GPU_CUDA, c->node) != c->node;
  void *params = get || ours ? c->params : cc_node_params_plain(c->abi, c->params, mine);
  size_t bytes = 0;
  struct nano_cu_node_params_v2 *k = cc_node_kernel(c->abi, params, &bytes);
  if (c->abi == NANO_CU_NODE_GENERIC)
    bytes = 0; /* gpu_hand_params knows the generic struct */
  int rc = gpu_hand_params(NANO_GPU_CUDA | GPU_DRIVER, c->op, c->call, c->set, c->exec, c->node,
                           params, bytes);
  if (rc == 0 && get && k && k->func && g_cc.usable) /* the program reads its own kernel back */
    k->func = cc_replaced_kernel(k->func);
  return rc;
}
