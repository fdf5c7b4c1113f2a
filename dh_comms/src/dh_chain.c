/*
 * dh_chain.c: NANO_ANALYZERS parsing, plugin loading and the per-dispatch
 * handler chain (nano/analyzers.h, nano/handler.h).
 */
#include "nano/analyzers.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../analyzers/analyzer.h"
#include "nano/aggregate.h"

/* The built-in analyzers, by the names users type (omniprobe's). */
static const struct {
  const char *name;
  nano_handler_create_fn create;
} chain_builtins[] = {
    {"AddressLogger", nano_address_logger_create},
    {"Heatmap", nano_heatmap_create},
    {"KernelTimeline", nano_kernel_timeline_create},
    {"MemoryAnalysis", nano_memory_analysis_create},
};
#define CHAIN_NBUILTINS (sizeof chain_builtins / sizeof chain_builtins[0])

struct chain_entry {
  char *name;    /* as written, without options */
  char *options; /* after ':' or "" */
  nano_handler_create_fn create;
  uint32_t abi; /* the handler ABI its handlers speak */
};

struct nano_analyzers {
  struct chain_entry *e;
  size_t n;
};

const char *nano_analyzers_builtin_names(void) {
  return "AddressLogger, Heatmap, KernelTimeline, MemoryAnalysis";
}

/* Loads plugin `path` into *create; -1 with a message. */
static int chain_load_plugin(const char *what, const char *path, nano_handler_create_fn *create,
                             uint32_t *abi_out, char *err, size_t errlen) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!h) {
    snprintf(err, errlen, "%s: analyzer plugin %s does not load: %s", what, path, dlerror());
    return -1;
  }
  nano_handler_abi_fn abi = (nano_handler_abi_fn)dlsym(h, NANO_HANDLER_ABI_SYMBOL);
  nano_handler_create_fn fn = (nano_handler_create_fn)dlsym(h, NANO_HANDLER_CREATE_SYMBOL);
  if (!abi || !fn) {
    snprintf(err, errlen, "%s: %s is not a nanoprobe analyzer plugin: it does not export %s", what,
             path, !abi ? NANO_HANDLER_ABI_SYMBOL "()" : NANO_HANDLER_CREATE_SYMBOL "()");
    return -1;
  }
  uint32_t v = abi();
  if (v < NANO_HANDLER_ABI_OLDEST || v > NANO_HANDLER_ABI) {
    snprintf(err, errlen,
             "%s: analyzer plugin %s is built for handler ABI %u; this runtime has ABI %u and "
             "loads %u to %u (rebuild it against this nano/handler.h)",
             what, path, v, NANO_HANDLER_ABI, NANO_HANDLER_ABI_OLDEST, NANO_HANDLER_ABI);
    return -1;
  }
  *create = fn;
  *abi_out = v;
  return 0;
}

int nano_analyzers_load(const char *list, const char *what, struct nano_analyzers **out, char *err,
                        size_t errlen) {
  *out = NULL;
  struct nano_analyzers *a = calloc(1, sizeof *a);
  char *copy = strdup(list ? list : "");
  if (!a || !copy) {
    free(a);
    free(copy);
    snprintf(err, errlen, "%s: out of memory", what);
    return -1;
  }
  char *save = NULL;
  int none = 0;
  for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    while (*tok == ' ')
      tok++;
    size_t len = strlen(tok);
    while (len && tok[len - 1] == ' ')
      tok[--len] = 0;
    if (!*tok)
      continue;
    if (strcmp(tok, "none") == 0) {
      none = 1;
      continue;
    }
    /* options: after the first ':' of a name, after the last ':' of a path
     * whose tail holds no '/' */
    int path = strchr(tok, '/') || (len > 3 && strstr(tok, ".so"));
    char *colon = path ? strrchr(tok, ':') : strchr(tok, ':');
    if (colon && path && strchr(colon, '/'))
      colon = NULL;
    char *opts = "";
    if (colon) {
      *colon = 0;
      opts = colon + 1;
    }
    struct chain_entry e = {.abi = NANO_HANDLER_ABI};
    if (path) {
      if (chain_load_plugin(what, tok, &e.create, &e.abi, err, errlen) != 0)
        goto fail;
    } else {
      for (size_t i = 0; i < CHAIN_NBUILTINS; i++)
        if (strcasecmp(tok, chain_builtins[i].name) == 0) {
          e.create = chain_builtins[i].create;
          tok = (char *)chain_builtins[i].name;
        }
      if (!e.create) {
        snprintf(err, errlen,
                 "%s: unknown analyzer '%s' (built-in: %s; or the path of a plugin .so)", what, tok,
                 nano_analyzers_builtin_names());
        goto fail;
      }
    }
    struct chain_entry *grown = realloc(a->e, (a->n + 1) * sizeof *grown);
    e.name = strdup(tok);
    e.options = strdup(opts);
    if (!grown || !e.name || !e.options) {
      if (grown)
        a->e = grown;
      free(e.name);
      free(e.options);
      snprintf(err, errlen, "%s: out of memory", what);
      goto fail;
    }
    a->e = grown;
    a->e[a->n++] = e;
  }
  free(copy);
  if (a->n == 0 && !none) {
    snprintf(err, errlen, "%s: no analyzer named (built-in: %s; or the path of a plugin .so)", what,
             nano_analyzers_builtin_names());
    nano_analyzers_free(a);
    return -1;
  }
  *out = a;
  return 0;
fail:
  free(copy);
  nano_analyzers_free(a);
  return -1;
}

void nano_analyzers_free(struct nano_analyzers *a) {
  if (!a)
    return;
  for (size_t i = 0; i < a->n; i++) {
    free(a->e[i].name);
    free(a->e[i].options);
  }
  free(a->e);
  free(a);
}

size_t nano_analyzers_count(const struct nano_analyzers *a) { return a->n; }

const char *nano_analyzers_name(const struct nano_analyzers *a, size_t i) { return a->e[i].name; }

/* ---- the chain ------------------------------------------------------------- */

struct nano_chain {
  size_t n;
  struct nano_handler **h;
  uint32_t *abi;                   /* each handler's ABI */
  struct nano_dispatch_info *info; /* one copy per analyzer (its options) */
};

struct nano_chain *nano_chain_create(const struct nano_analyzers *a,
                                     const struct nano_dispatch_info *info) {
  struct nano_chain *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  c->h = calloc(a->n, sizeof *c->h);
  c->abi = calloc(a->n, sizeof *c->abi);
  c->info = calloc(a->n, sizeof *c->info);
  if (!c->h || !c->abi || !c->info) {
    nano_chain_destroy(c);
    return NULL;
  }
  for (size_t i = 0; i < a->n; i++) {
    struct nano_dispatch_info *copy = &c->info[c->n];
    *copy = *info;
    copy->options = a->e[i].options;
    struct nano_handler *h = a->e[i].create(copy);
    if (h) {
      c->abi[c->n] = a->e[i].abi;
      c->h[c->n++] = h;
    }
  }
  return c;
}

int nano_chain_handle(const struct nano_dh_record *r, void *chain) {
  struct nano_chain *c = chain;
  for (size_t i = 0; i < c->n; i++)
    if (c->h[i]->ops->handle(c->h[i], r) == NANO_RECORD_CONSUMED &&
        !(c->h[i]->flags & NANO_HANDLER_PASS_THROUGH))
      break;
  return 0;
}

void nano_chain_report(struct nano_chain *c, uint64_t lost_records) {
  for (size_t i = 0; i < c->n; i++) {
    c->info[i].lost_records = lost_records;
    c->h[i]->ops->report(c->h[i]);
  }
}

int nano_chain_aggregable(const struct nano_chain *c, unsigned *what, uint64_t *page_bytes,
                          const char **needs_records) {
  *what = 0;
  *page_bytes = 0;
  *needs_records = NULL;
  for (size_t i = 0; i < c->n; i++) {
    const struct nano_handler *h = c->h[i];
    uint32_t flags = c->abi[i] >= 2 && h->ops->aggregates ? h->flags : 0;
    int pages = (flags & NANO_HANDLER_PAGE_COUNTS) && h->page_bytes;
    if (!(flags & (NANO_HANDLER_SITE_COUNTS | NANO_HANDLER_BLOCK_TIMES)) && !pages) {
      *needs_records = h->name;
      return 0;
    }
    if (pages && *page_bytes && *page_bytes != h->page_bytes) {
      *needs_records = h->name; /* two page sizes: one table cannot serve both */
      return 0;
    }
    if (pages)
      *page_bytes = h->page_bytes;
    *what |= (flags & NANO_HANDLER_SITE_COUNTS ? NANO_AGG_SITES : 0) | (pages ? NANO_AGG_PAGES : 0);
  }
  return c->n > 0;
}

/* How many handlers of c say `flag` (a flag of ABI 2: an older plugin's
 * flags beyond PASS_THROUGH mean nothing). */
static size_t chain_saying(const struct nano_chain *c, uint32_t flag) {
  size_t n = 0;
  for (size_t i = 0; i < c->n; i++)
    n += c->abi[i] >= 2 && (c->h[i]->flags & flag);
  return n;
}

int nano_chain_wants_block_times(const struct nano_chain *c) {
  return chain_saying(c, NANO_HANDLER_BLOCK_TIMES) > 0;
}

int nano_chain_takes_compact(const struct nano_chain *c) {
  return chain_saying(c, NANO_HANDLER_COMPACT_RECORDS) == c->n;
}

void nano_chain_aggregates(struct nano_chain *c, const struct nano_aggregates *a) {
  for (size_t i = 0; i < c->n; i++)
    c->h[i]->ops->aggregates(c->h[i], a);
}

size_t nano_chain_size(const struct nano_chain *c) { return c->n; }

void nano_chain_destroy(struct nano_chain *c) {
  if (!c)
    return;
  for (size_t i = 0; i < c->n; i++)
    c->h[i]->ops->destroy(c->h[i]);
  free(c->h);
  free(c->abi);
  free(c->info);
  free(c);
}
