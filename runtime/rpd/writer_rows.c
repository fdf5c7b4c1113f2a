/*
 * writer_rows.c: records into rows (the tracer core's writer, tracer.h): the
 * string maps (rocpd_string, rocpd_ustring ids kept per trace), the texts a
 * record refers to in its thread's arena, API rows and their stack frames,
 * user ranges (opened, closed, stale at an epoch's end) and rpdw_record, which
 * turns one ring record into its rows. writer.c drains the rings and owns the
 * connection, the transaction and the thread.
 */
#define _GNU_SOURCE
#include "tracer.h"

#include "nano/hash.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "writer.h"

int rpdw_map_init(struct rpdw_map *m, int strings) {
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

void rpdw_map_free(struct rpdw_map *m) {
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

int64_t rpdw_string_id(const char *s) { return rpdw_string_kept(s, NULL); }

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

void rpdw_api_row(int64_t id, int pid, int tid, int64_t start, int64_t end, int64_t name_id,
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
void rpdw_close_stale(struct rpd_tbuf *b, uint32_t cur_on_epoch) {
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

/* A push (R_PUSH, R_RANGE) of ring b, whose thread is t: its range opens. */
static void rpdw_push(struct rpd_tbuf *b, struct rpd_tbuf *t, const struct nano_rpd_rec *r,
                      uint64_t *aend) {
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
}

/* A pop (R_POP, R_RANGE) of thread t in epoch `epoch` at stamp `at`: its
 * innermost open range ends. Ranges of an ended epoch end at their stop. A
 * thread stamps its pushes with the epoch it reads and epochs only grow, so
 * the epochs of its open ranges never decrease from the bottom of the
 * stack up: when the bottom one is of this pop's epoch, none is stale (no
 * scan of the stack per pop). */
static void rpdw_pop(struct rpd_tbuf *t, uint32_t epoch, int64_t at) {
  if (t->nopen && t->open[0].epoch != epoch)
    rpdw_close_stale(t, epoch);
  if (t->nopen > 0) {
    t->nopen--;
    rpdw_close_range(t, &t->open[t->nopen], rpdw_time(at),
                     t->nopen ? &t->open[t->nopen - 1] : NULL);
  }
}

/* Writes record r of ring b (its texts are in b's arena; the thread's state
 * is b's owner's). */
void rpdw_record(struct rpd_tbuf *b, const struct nano_rpd_rec *r, uint64_t *aend) {
  struct rpd_tbuf *t = b->owner;
  switch (__atomic_load_n(&r->type, __ATOMIC_ACQUIRE)) { /* a push's type may become RANGE */
  case R_PAD:
    break;
  case R_PUSH:
    rpdw_push(b, t, r, aend);
    break;
  case R_POP:
    rpdw_pop(t, r->epoch, r->t0);
    break;
  case R_RANGE:
    rpdw_push(b, t, r, aend);
    rpdw_pop(t, r->epoch, r->t1);
    break;
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
      rpdw_stack(b, rpd_ext_get(r)->api.stack, id, aend);
    break;
  }
  case R_KERNEL: {
    const union rpd_ext *x = rpd_ext_get(r);
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
    const union rpd_ext *x = rpd_ext_get(r);
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
