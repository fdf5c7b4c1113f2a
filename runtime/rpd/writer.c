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
static int rpdw_step(int which, int bound) {
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

int rpdw_begin(void) {
  if (g_w.in_txn || g_w.failed)
    return g_w.failed ? -1 : 0;
  if (rpdw_exec("BEGIN IMMEDIATE", "cannot begin a transaction") != 0)
    return -1;
  g_w.in_txn = 1;
  g_w.txn_rows = 0;
  return 0;
}

static int rpdw_commit(void) {
  if (!g_w.in_txn)
    return 0;
  rpdw_flush_queues();
  if (g_w.failed)
    return -1;
  if (rpdw_exec("COMMIT", "cannot commit") != 0)
    return -1;
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
    for (uint32_t i = 0; i < m->size; i++)
      free(m->key[i]);
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
    if (m->hash[i] == h && (s ? strcmp(m->key[i], s) == 0 : m->ikey[i] == ik))
      return i;
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
    if (!m->hash[i])
      continue;
    uint32_t j = (uint32_t)m->hash[i] & (n.size - 1);
    while (n.hash[j])
      j = (j + 1) & (n.size - 1);
    n.hash[j] = m->hash[i];
    n.val[j] = m->val[i];
    if (n.key)
      n.key[j] = m->key[i];
    if (n.ikey)
      n.ikey[j] = m->ikey[i];
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
  if (!s)
    s = "";
  uint64_t h = nano_fnv64_str(s) | 1;
  uint32_t i = rpdw_map_slot(&g_w.strings, h, s, 0);
  if (g_w.strings.hash[i]) {
    if (kept)
      *kept = g_w.strings.key[i];
    return g_w.strings.val[i];
  }
  if ((g_w.strings.count + 1) * 2 > g_w.strings.size) {
    if (rpdw_map_grow(&g_w.strings) != 0)
      return -1;
    i = rpdw_map_slot(&g_w.strings, h, s, 0);
  }
  char *copy = strdup(s);
  if (!copy)
    return -1;
  int64_t id = g_w.offset + g_w.next_string++;
  int bound = sqlite3_bind_int64(g_w.st[ST_STRING], 1, id) |
              sqlite3_bind_text(g_w.st[ST_STRING], 2, s, -1, SQLITE_STATIC);
  if (rpdw_step(ST_STRING, bound) != 0) {
    free(copy);
    return -1;
  }
  g_w.strings.hash[i] = h;
  g_w.strings.key[i] = copy;
  g_w.strings.val[i] = id;
  g_w.strings.count++;
  if (kept)
    *kept = copy;
  return id;
}

static int64_t rpdw_string_id(const char *s) { return rpdw_string_kept(s, NULL); }

/* A new rocpd_ustring row for s ("" and NULL share the empty row). */
static int64_t rpdw_ustring_id(const char *s) {
  if (!s || !*s)
    return g_w.id_uempty;
  int64_t id = g_w.offset + g_w.next_ustring++;
  if (g_w.nustrq == RPDW_QUEUE)
    rpdw_flush_ustrings();
  g_w.q->ustr[g_w.nustrq].id = id;
  g_w.q->ustr[g_w.nustrq].s = s;
  g_w.nustrq++;
  g_w.txn_rows++;
  return id;
}

/* The text of a string ref of buffer b (NULL for "none"); extends *aend past
 * the arena bytes it occupies. */
static const char *rpdw_text(const struct rpd_tbuf *b, uint64_t ref, uint64_t *aend) {
  if (!ref)
    return NULL;
  if (ref & RPD_REF_INTERNED)
    return rpd_intern_get((uint32_t)ref);
  uint64_t pos = ref - 1;
  const char *p = b->arena + (pos & (b->asize - 1));
  uint64_t end = pos + strlen(p) + 1;
  if (end > *aend)
    *aend = end;
  return p;
}

/* The cached row ids of interned handle h, growing the cache as needed;
 * NULL when out of memory (callers then write without caching). */
static struct rpdw_handle_ids *rpdw_handle(uint32_t h) {
  if (h >= g_w.nhandle_ids) {
    uint32_t n = g_w.nhandle_ids ? g_w.nhandle_ids : 1024;
    while (n <= h)
      n *= 2;
    struct rpdw_handle_ids *a = realloc(g_w.handle_ids, n * sizeof *a);
    if (!a)
      return NULL;
    memset(a + g_w.nhandle_ids, 0, (n - g_w.nhandle_ids) * sizeof *a);
    g_w.handle_ids = a;
    g_w.nhandle_ids = n;
  }
  return &g_w.handle_ids[h];
}

/* The rocpd_string id of a string ref; interned handles are cached. */
static int64_t rpdw_ref_id(const struct rpd_tbuf *b, uint64_t ref, const char *dflt,
                           uint64_t *aend) {
  if (ref & RPD_REF_INTERNED) {
    struct rpdw_handle_ids *c = rpdw_handle((uint32_t)ref);
    if (c && c->string_id)
      return c->string_id;
    int64_t id = rpdw_string_id(rpd_intern_get((uint32_t)ref));
    if (c && id > 0)
      c->string_id = id;
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
    if (c && c->ustring_id)
      return c->ustring_id;
    int64_t id = rpdw_ustring_id(rpd_intern_get((uint32_t)ref));
    if (c)
      c->ustring_id = id;
    return id;
  }
  return rpdw_ustring_id(rpdw_text(b, ref, aend));
}

/* Inserts the stack frames stored at stack ref `ref` for api row api_id. */
static void rpdw_stack(const struct rpd_tbuf *b, uint64_t ref, int64_t api_id, uint64_t *aend) {
  if (!ref)
    return;
  uint64_t pos = (ref >> RPD_STACK_COUNT_BITS) - 1;
  uint32_t n = (uint32_t)(ref & RPD_MAX_STACK_DEPTH);
  const uint64_t *ips = (const uint64_t *)(b->arena + (pos & (b->asize - 1)));
  if (pos + n * 8 > *aend)
    *aend = pos + n * 8;
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
      if (sid < 0)
        return;
      if ((g_w.ips.count + 1) * 2 > g_w.ips.size) {
        if (rpdw_map_grow(&g_w.ips) != 0)
          return;
        i = rpdw_map_slot(&g_w.ips, h, NULL, ip);
      }
      g_w.ips.hash[i] = h;
      g_w.ips.ikey[i] = ip;
      g_w.ips.val[i] = sid;
      g_w.ips.count++;
    }
    sqlite3_stmt *st = g_w.st[ST_STACK];
    int bound = sqlite3_bind_int64(st, 1, g_w.offset + g_w.next_stack++) |
                sqlite3_bind_int64(st, 2, api_id) | sqlite3_bind_int(st, 3, (int)d) |
                sqlite3_bind_int64(st, 4, sid);
    if (rpdw_step(ST_STACK, bound) != 0)
      return;
  }
}

static void rpdw_api_row(int64_t id, int pid, int tid, int64_t start, int64_t end, int64_t name_id,
                         int64_t cat_id, int64_t dom_id, int64_t args_id) {
  if (g_w.napiq == RPDW_QUEUE)
    rpdw_flush_api();
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
  if (!ref)
    return 1;
  if (ref & RPD_REF_INTERNED) {
    struct rpdw_handle_ids *c = rpdw_handle((uint32_t)ref);
    if (c && c->text != RPDW_TEXT_UNKNOWN)
      return c->text == RPDW_TEXT_EMPTY;
    const char *t = rpd_intern_get((uint32_t)ref);
    int empty = !t || !*t;
    if (c)
      c->text = empty ? RPDW_TEXT_EMPTY : RPDW_TEXT_SET;
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
  if (o->args_id)
    return o->args_id;
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

/* Ends the open range o of thread b at `end`: an api row, or, when shorter
 * than NANO_RPD_MIN_DURATION (and without stack frames, whose rows refer to
 * it), one more call in its function's summary. Its time counts as nested
 * time of `parent` (NULL: none, or not known). */
static void rpdw_close_range(const struct rpd_tbuf *b, struct rpd_open *o, int64_t end,
                             struct rpd_open *parent) {
  if (end < o->start)
    end = o->start; /* a stop stamped by another clock than the push */
  if (parent)
    parent->child_ns += end - o->start;
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
    if (!opens)
      return;
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
    if (t->nopen && t->open[0].epoch != r->epoch)
      rpdw_close_stale(t, r->epoch);
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
    if (r->nslots == 2)
      rpdw_stack(b, ((const union rpd_ext *)(r + 1))->api.stack, id, aend);
    break;
  }
  case R_KERNEL: {
    const union rpd_ext *x = (const union rpd_ext *)(r + 1);
    sqlite3_stmt *st = g_w.st[ST_KERNEL];
    const char *stream = rpdw_text(b, r->s[0], aend);
    int64_t kname = rpdw_ref_id(b, r->s[1], "", aend);
    int bound = sqlite3_bind_int64(st, 1, g_w.offset + (int64_t)r->h) |
                sqlite3_bind_text(st, 2, stream ? stream : "", -1, SQLITE_STATIC);
    for (int i = 0; i < 3; i++)
      bound |= sqlite3_bind_int(st, 3 + i, x->kernel.grid[i]) |
               sqlite3_bind_int(st, 6 + i, x->kernel.workgroup[i]);
    bound |= sqlite3_bind_int(st, 9, x->kernel.group_segment_size) |
             sqlite3_bind_int(st, 10, x->kernel.private_segment_size) |
             sqlite3_bind_int64(st, 11, kname);
    rpdw_step(ST_KERNEL, bound);
    break;
  }
  case R_COPY: {
    const union rpd_ext *x = (const union rpd_ext *)(r + 1);
    sqlite3_stmt *st = g_w.st[ST_COPY];
    const char *stream = rpdw_text(b, r->s[0], aend);
    const char *dst = rpdw_text(b, r->s[1], aend);
    const char *src = rpdw_text(b, r->s[2], aend);
    int bound =
        sqlite3_bind_int64(st, 1, g_w.offset + (int64_t)r->h) |
        sqlite3_bind_text(st, 2, stream ? stream : "", -1, SQLITE_STATIC) |
        sqlite3_bind_int64(st, 3, x->copy.size) | sqlite3_bind_int64(st, 4, x->copy.width) |
        sqlite3_bind_int64(st, 5, x->copy.height) | sqlite3_bind_int(st, 6, x->copy.kind) |
        sqlite3_bind_text(st, 7, dst ? dst : "", -1, SQLITE_STATIC) |
        sqlite3_bind_text(st, 8, src ? src : "", -1, SQLITE_STATIC) |
        sqlite3_bind_int(st, 9, x->copy.dst_device) | sqlite3_bind_int(st, 10, x->copy.src_device) |
        sqlite3_bind_int(st, 11, x->copy.sync != 0) | sqlite3_bind_int(st, 12, x->copy.pinned != 0);
    rpdw_step(ST_COPY, bound);
    break;
  }
  case R_OP: {
    sqlite3_stmt *st = g_w.st[ST_OP];
    int64_t seq = g_w.next_op++;
    int64_t id = g_w.offset + seq;
    int64_t desc = rpdw_ref_id(b, r->s[0], "", aend);
    int64_t type = rpdw_ref_id(b, r->s[1], "", aend);
    int bound = sqlite3_bind_int64(st, 1, id) |
                sqlite3_bind_int(st, 2, (int32_t)(uint32_t)r->s[2]) |
                sqlite3_bind_int(st, 3, (int32_t)(uint32_t)(r->s[2] >> 32)) |
                sqlite3_bind_int64(st, 4, seq) | sqlite3_bind_int64(st, 5, r->t0) |
                sqlite3_bind_int64(st, 6, r->t1) | sqlite3_bind_int64(st, 7, desc) |
                sqlite3_bind_int64(st, 8, type);
    if (rpdw_step(ST_OP, bound) != 0 || !r->h)
      break;
    st = g_w.st[ST_APIOPS];
    bound = sqlite3_bind_int64(st, 1, g_w.offset + g_w.next_apiops++) |
            sqlite3_bind_int64(st, 2, g_w.offset + (int64_t)r->h) | sqlite3_bind_int64(st, 3, id);
    rpdw_step(ST_APIOPS, bound);
    break;
  }
  case R_MONITOR: {
    sqlite3_stmt *st = g_w.st[ST_MONITOR];
    const char *dt = rpdw_text(b, r->s[0], aend);
    const char *mt = rpdw_text(b, r->s[1], aend);
    const char *v = rpdw_text(b, r->s[2], aend);
    int bound = sqlite3_bind_int64(st, 1, g_w.offset + g_w.next_monitor++) |
                sqlite3_bind_text(st, 2, dt ? dt : "", -1, SQLITE_STATIC) |
                sqlite3_bind_int(st, 3, (int32_t)r->s[3]) |
                sqlite3_bind_text(st, 4, mt ? mt : "", -1, SQLITE_STATIC) |
                sqlite3_bind_int64(st, 5, r->t0) | sqlite3_bind_int64(st, 6, r->t1) |
                sqlite3_bind_text(st, 7, v ? v : "", -1, SQLITE_STATIC);
    rpdw_step(ST_MONITOR, bound);
    break;
  }
  case R_RSTART: {
    struct rpdw_pending *pend = rpd_grow(g_w.pend, g_w.npend, &g_w.cappend, sizeof *pend);
    if (!pend)
      return;
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
      if (p->id != r->h)
        continue;
      int64_t end = p->epoch == r->epoch
                        ? rpdw_time(r->t0)
                        : rpdw_time(atomic_load(&g_stop_at[p->epoch % RPD_STOP_EPOCHS]));
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

/* Drains buffer b; returns the number of records written. */
static uint64_t rpdw_drain(struct rpd_tbuf *b) {
  uint64_t head = __atomic_load_n(&b->ring.head, __ATOMIC_ACQUIRE);
  uint64_t tail = atomic_load_explicit(&b->tail, memory_order_relaxed);
  if (head == tail)
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
      if (atomic_load_explicit(&g_fork_waiting, memory_order_relaxed)) {
        g_w.cut_short = 1;
        break;
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
    if (atomic_compare_exchange_strong(&s->seg_state, &st, SEG_READ))
      return 0;
    if (st == SEG_SPILLING) { /* its producer is writing it out: not for long */
      struct timespec ts = {0, 50000};
      nanosleep(&ts, NULL);
      continue;
    }
    if (st != SEG_SPILLED)
      return 0;
    if (rpd_seg_arrays(s) != 0)
      return -1;
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
  if (g_w.drop_meta_id)
    snprintf(sql, sizeof sql, "UPDATE rocpd_metadata SET value = '%llu' WHERE id = %lld",
             (unsigned long long)total, (long long)g_w.drop_meta_id);
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
  if (rpdw_exec(nano_rpdfile_thread_schema_sql(), "cannot create nano_thread") != 0)
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
  rpdw_write_sums();
  if (atomics && !g_w.cut_short && !g_w.failed && rpdw_begin() == 0) {
    rpdi_atomics_write(g_w.db, g_w.path, g_w.offset);
    rpdi_atomics_sample(g_w.db, g_w.path, g_w.offset, rpd_clock());
  }
  rpdw_run_jobs();
  rpdw_commit();
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
