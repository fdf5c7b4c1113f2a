/*
 * analysis.c: transactions, metadata tags, string interning and the call walk
 * shared by the post-processing subcommands (see analysis.h).
 *
 * The call walk is the heart of `rpd callstack`, `rpd autograd` and the
 * report's call tables. It reads rocpd_api once, ordered by pid, tid, start,
 * and keeps an explicit stack per thread: a call is pushed when it starts,
 * and popped when a later call of the same thread ends after it (or the
 * thread's rows end). At the pop its exclusive time is known (its duration
 * minus its direct children's durations, which the children add to it as
 * they are popped) and its ancestors are exactly the frames below it.
 * GPU time per call is read once beforehand from rocpd_api_ops and rocpd_op
 * into a sorted array and found by binary search.
 */
#define _GNU_SOURCE /* qsort_r */
#include "analysis.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void an_sqlite_setup(void) {
  sqlite3_config(SQLITE_CONFIG_MULTITHREAD);
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

int an_open_write(const char *cmd, const char *path, struct rpdtool_trace *t) {
  memset(t, 0, sizeof *t);
  if (access(path, F_OK) == 0 && access(path, W_OK) != 0)
    return rpdtool_err(cmd,
                       "%s: the file is read-only (%s); this step writes into the trace: "
                       "copy it somewhere writable first",
                       path, strerror(errno));
  char *dir = strdup(path);
  if (!dir)
    return rpdtool_err(cmd, "out of memory");
  char *slash = strrchr(dir, '/');
  const char *d = slash ? (slash == dir ? "/" : (*slash = 0, dir)) : ".";
  int dir_ok = access(d, W_OK) == 0;
  int e = errno;
  if (!dir_ok) {
    rpdtool_err(cmd,
                "%s: its directory %s is read-only (%s); this step writes into the trace "
                "and its journal: copy it somewhere writable first",
                path, d, strerror(e));
    free(dir);
    return RPDTOOL_EXIT_FAIL;
  }
  free(dir);
  return rpdtool_open(cmd, path, RPDTOOL_WRITE, t);
}

/* The rocpd_metadata tag "<name>::<kind>" of step s into buf. */
static const char *an_step_tag(const struct an_step *s, const char *kind, char *buf, size_t n) {
  snprintf(buf, n, "%s::%s", s->name, kind);
  return buf;
}

int an_step_done(const char *cmd, const struct rpdtool_trace *t, const struct an_step *s) {
  if (!s->name)
    return 0;
  char tag[64];
  int done = an_meta_get(t->db, an_step_tag(s, "Generated", tag, sizeof tag), NULL);
  if (done < 0)
    rpdtool_err(cmd, "%s: cannot read rocpd_metadata: %s", t->path, sqlite3_errmsg(t->db));
  return done;
}

int an_step_run(const char *cmd, const struct rpdtool_trace *t, const struct an_step *s,
                void *ctx) {
  int done = an_step_done(cmd, t, s);
  if (done)
    return done < 0 ? RPDTOOL_EXIT_FAIL : AN_ALREADY;
  int ret = an_begin(cmd, t);
  if (ret)
    return ret;
  ret = s->fill(cmd, t, ctx);
  char tag[64];
  if (!ret && s->name &&
      ((s->table_tag &&
        an_meta_set(t->db, an_step_tag(s, "Table", tag, sizeof tag), "True") != SQLITE_OK) ||
       an_meta_set(t->db, an_step_tag(s, "Generated", tag, sizeof tag), "True") != SQLITE_OK))
    ret = rpdtool_err(cmd, "%s: cannot write rocpd_metadata: %s", t->path, sqlite3_errmsg(t->db));
  if (ret) {
    an_rollback(t);
    return ret;
  }
  return an_commit(cmd, t);
}

int an_step_main(int argc, char **argv, const char *usage, const struct an_step *s,
                 int (*run)(const char *cmd, const struct rpdtool_trace *t)) {
  an_sqlite_setup();
  const char *cmd = argv[0], *path;
  int ret = rpdtool_parse_args(argc, argv, usage, NULL, &path);
  if (ret != RPDTOOL_PARSED)
    return ret;
  struct rpdtool_trace t;
  ret = an_open_write(cmd, path, &t);
  if (ret)
    return ret;
  ret = run(cmd, &t);
  if (ret == AN_ALREADY) {
    printf("rpd %s: %s: %s were generated already (%s::Generated); nothing to do\n", cmd, path,
           s->what, s->name);
    ret = 0;
  }
  rpdtool_close(&t);
  return ret;
}

int an_exec(const char *cmd, const struct rpdtool_trace *t, const char *what, const char *sql) {
  char *err = NULL;
  if (sqlite3_exec(t->db, sql, NULL, NULL, &err) == SQLITE_OK)
    return 0;
  rpdtool_err(cmd, "%s: %s: %s", t->path, what, err ? err : sqlite3_errmsg(t->db));
  sqlite3_free(err);
  return RPDTOOL_EXIT_FAIL;
}

int an_begin(const char *cmd, const struct rpdtool_trace *t) {
  sqlite3_busy_timeout(t->db, 2000);
  if (sqlite3_db_readonly(t->db, "main") == 1)
    return rpdtool_err(cmd,
                       "%s: the file is read-only; this step writes into it "
                       "(copy it somewhere writable first)",
                       t->path);
  int rc = sqlite3_exec(t->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
  if (rc == SQLITE_OK)
    return 0;
  switch (rc & 0xff) {
  case SQLITE_BUSY:
  case SQLITE_LOCKED:
    return rpdtool_err(cmd,
                       "%s: locked by another writer (is a trace still being recorded "
                       "into it?); try again when it is closed",
                       t->path);
  case SQLITE_READONLY:
  case SQLITE_CANTOPEN:
  case SQLITE_PERM:
    return rpdtool_err(cmd,
                       "%s: cannot write to the file or its directory (%s); this step "
                       "writes into the trace",
                       t->path, sqlite3_errmsg(t->db));
  default:
    return rpdtool_err(cmd, "%s: cannot start a transaction: %s", t->path, sqlite3_errmsg(t->db));
  }
}

int an_commit(const char *cmd, const struct rpdtool_trace *t) {
  if (sqlite3_exec(t->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
    return 0;
  rpdtool_err(cmd, "%s: commit failed: %s", t->path, sqlite3_errmsg(t->db));
  an_rollback(t);
  return RPDTOOL_EXIT_FAIL;
}

void an_rollback(const struct rpdtool_trace *t) {
  if (!sqlite3_get_autocommit(t->db))
    sqlite3_exec(t->db, "ROLLBACK", NULL, NULL, NULL);
}

int an_meta_get(sqlite3 *db, const char *tag, char **value) {
  sqlite3_stmt *st = NULL;
  if (value)
    *value = NULL;
  if (sqlite3_prepare_v2(db, "SELECT value FROM rocpd_metadata WHERE tag=?1 ORDER BY id LIMIT 1",
                         -1, &st, NULL) != SQLITE_OK)
    return -1;
  int ret = -1;
  if (sqlite3_bind_text(st, 1, tag, -1, SQLITE_STATIC) == SQLITE_OK) {
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      ret = 1;
      if (value) {
        const char *v = (const char *)sqlite3_column_text(st, 0);
        *value = strdup(v ? v : "");
        if (!*value)
          ret = -1;
      }
    } else if (rc == SQLITE_DONE) {
      ret = 0;
    }
  }
  sqlite3_finalize(st);
  return ret;
}

int an_meta_set(sqlite3 *db, const char *tag, const char *value) {
  int have = an_meta_get(db, tag, NULL);
  if (have < 0)
    return sqlite3_errcode(db);
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db,
                              have ? "UPDATE rocpd_metadata SET value=?2 WHERE tag=?1"
                                   : "INSERT INTO rocpd_metadata(tag, value) VALUES (?1, ?2)",
                              -1, &st, NULL);
  if (rc != SQLITE_OK)
    return rc;
  if ((rc = sqlite3_bind_text(st, 1, tag, -1, SQLITE_STATIC)) == SQLITE_OK &&
      (rc = sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC)) == SQLITE_OK) {
    rc = sqlite3_step(st);
    if (rc == SQLITE_DONE)
      rc = SQLITE_OK;
  }
  sqlite3_finalize(st);
  return rc;
}

int64_t an_intern(sqlite3 *db, sqlite3_stmt **lookup, sqlite3_stmt **insert, const char *s) {
  if (!*lookup &&
      sqlite3_prepare_v2(db, "SELECT id FROM rocpd_string WHERE string=?1 ORDER BY id LIMIT 1", -1,
                         lookup, NULL) != SQLITE_OK)
    return -1;
  sqlite3_reset(*lookup);
  if (sqlite3_bind_text(*lookup, 1, s, -1, SQLITE_TRANSIENT) != SQLITE_OK)
    return -1;
  int rc = sqlite3_step(*lookup);
  if (rc == SQLITE_ROW) {
    int64_t id = sqlite3_column_int64(*lookup, 0);
    sqlite3_reset(*lookup);
    return id;
  }
  sqlite3_reset(*lookup);
  if (rc != SQLITE_DONE)
    return -1;
  if (!*insert && sqlite3_prepare_v2(db, "INSERT INTO rocpd_string(string) VALUES (?1)", -1, insert,
                                     NULL) != SQLITE_OK)
    return -1;
  sqlite3_reset(*insert);
  if (sqlite3_bind_text(*insert, 1, s, -1, SQLITE_TRANSIENT) != SQLITE_OK)
    return -1;
  rc = sqlite3_step(*insert);
  sqlite3_reset(*insert);
  if (rc != SQLITE_DONE)
    return -1;
  return sqlite3_last_insert_rowid(db);
}

/* ---- the call walk ----------------------------------------------------- */

/* GPU time per API call: parallel arrays sorted by api id. */
struct an_gpu {
  int64_t *id, *ns;
  size_t n;
};

/* qsort order of (api id, ns) pairs: by id. */
static int an_pair_cmp(const void *pa, const void *pb) {
  const int64_t *a = pa, *b = pb;
  return a[0] < b[0] ? -1 : a[0] > b[0];
}

/* Loads the summed op durations per API call: reads the (call, duration)
 * pairs unsorted, sorts them in memory and adds up the durations of each
 * call. 0 or -1 (SQLite / memory). */
static int an_gpu_load(sqlite3 *db, struct an_gpu *g) {
  memset(g, 0, sizeof *g);
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db,
                         "SELECT A.api_id, B.end - B.start FROM rocpd_api_ops A "
                         "JOIN rocpd_op B ON B.id = A.op_id",
                         -1, &st, NULL) != SQLITE_OK)
    return -1;
  int64_t *pairs = NULL;
  size_t n = 0, cap = 0;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (n == cap) {
      cap = cap ? cap * 2 : 1024;
      int64_t *p = realloc(pairs, cap * 2 * sizeof *p);
      if (!p) {
        free(pairs);
        sqlite3_finalize(st);
        return -1;
      }
      pairs = p;
    }
    pairs[2 * n] = sqlite3_column_int64(st, 0);
    pairs[2 * n + 1] = sqlite3_column_int64(st, 1);
    n++;
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    free(pairs);
    return -1;
  }
  if (n)
    qsort(pairs, n, 2 * sizeof *pairs, an_pair_cmp); /* never qsort(NULL, 0) */
  /* Sum the durations of equal ids. */
  g->id = malloc((n ? n : 1) * sizeof *g->id);
  g->ns = malloc((n ? n : 1) * sizeof *g->ns);
  if (!g->id || !g->ns) {
    free(pairs);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    if (g->n && g->id[g->n - 1] == pairs[2 * i]) {
      g->ns[g->n - 1] = rpdtool_add(g->ns[g->n - 1], pairs[2 * i + 1]);
    } else {
      g->id[g->n] = pairs[2 * i];
      g->ns[g->n] = pairs[2 * i + 1];
      g->n++;
    }
  }
  free(pairs);
  return 0;
}

/* The GPU time of API call `id` (0 when no op is linked to it). */
static int64_t an_gpu_find(const struct an_gpu *g, int64_t id) {
  size_t lo = 0, hi = g->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (g->id[mid] < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < g->n && g->id[lo] == id ? g->ns[lo] : 0;
}

static void an_gpu_free(struct an_gpu *g) {
  free(g->id);
  free(g->ns);
  memset(g, 0, sizeof *g);
}

/* Pops the top frame of the stack [0, *n): visits it, then adds its duration
 * to its parent's children total. Returns the visit's result. */
static int an_pop(struct an_frame *stack, int *n, const struct an_gpu *g, an_visit_fn visit,
                  void *ctx, int64_t pid, int64_t tid) {
  struct an_frame *f = &stack[*n - 1];
  int64_t dur = rpdtool_sub(f->end, f->start);
  int rc = visit(ctx, stack, *n, rpdtool_sub(dur, f->child_incl), an_gpu_find(g, f->id), pid, tid);
  if (*n > 1)
    stack[*n - 2].child_incl = rpdtool_add(stack[*n - 2].child_incl, dur);
  (*n)--;
  return rc;
}

/* One row of rocpd_api as the walk needs it. */
struct an_call {
  int64_t id, pid, tid, start, end, name_id, args_id;
};

/* The walk's source of calls in (pid, tid, start, end desc, id) order: an
 * array sorted in memory for traces up to AN_SORT_MAX calls (a scan in rowid
 * order plus radix passes, an_sort, is several times faster than SQLite's
 * sorter), SQLite's ORDER BY (which spills to disk) beyond. */
#define AN_SORT_MAX 8000000
struct an_src {
  sqlite3_stmt *st;
  struct an_call *rows;
  uint32_t *order; /* the rows in the walk's order (an_sort); NULL: as they are */
  size_t n, next;
};

static const char an_calls_sql[] =
    "SELECT id, pid, tid, start, end, apiName_id, args_id FROM rocpd_api";

/* qsort order of the walk. */
static int an_call_cmp(const void *pa, const void *pb) {
  const struct an_call *a = pa, *b = pb;
  if (a->pid != b->pid)
    return a->pid < b->pid ? -1 : 1;
  if (a->tid != b->tid)
    return a->tid < b->tid ? -1 : 1;
  if (a->start != b->start)
    return a->start < b->start ? -1 : 1;
  if (a->end != b->end)
    return a->end > b->end ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

/* ---- the walk's order in memory: radix passes instead of qsort's compares ---- */

/* Bits of one radix pass (2^11 counters: they stay in L1). */
#define AN_RADIX_BITS 11
#define AN_RADIX_SIZE (1u << AN_RADIX_BITS)

/* A row's sort key, its index in the rows and its thread's rank. */
struct an_key {
  uint64_t key;
  uint32_t row, rank;
};

/* Sorts n keys by key, stably, LSD radix over the bits the keys use;
 * tmp holds n more. The sorted keys are in *keys afterwards. */
static void an_radix(struct an_key **keys, struct an_key **tmp, size_t n) {
  uint64_t any = 0;
  for (size_t i = 0; i < n; i++)
    any |= (*keys)[i].key;
  for (unsigned shift = 0; shift < 64 && (any >> shift); shift += AN_RADIX_BITS) {
    size_t count[AN_RADIX_SIZE + 1] = {0};
    for (size_t i = 0; i < n; i++)
      count[((*keys)[i].key >> shift & (AN_RADIX_SIZE - 1)) + 1]++;
    for (unsigned d = 0; d < AN_RADIX_SIZE; d++)
      count[d + 1] += count[d];
    for (size_t i = 0; i < n; i++)
      (*tmp)[count[(*keys)[i].key >> shift & (AN_RADIX_SIZE - 1)]++] = (*keys)[i];
    struct an_key *t = *keys;
    *keys = *tmp;
    *tmp = t;
  }
}

/* The trace's threads (pid, tid) in a table of their own (open addressing,
 * doubled at half full), each row's in k[].rank: first its slot, then its
 * rank in (pid, tid) order. *nthreads gets their count; -1 when out of
 * memory. */
struct an_thread {
  int64_t pid, tid;
  int used;
};
static int an_thread_cmp(const void *pa, const void *pb) {
  const struct an_thread *a = *(const struct an_thread *const *)pa,
                         *b = *(const struct an_thread *const *)pb;
  if (a->pid != b->pid)
    return a->pid < b->pid ? -1 : 1;
  return a->tid < b->tid ? -1 : a->tid > b->tid;
}
static size_t an_thread_slot(const struct an_thread *t, size_t cap, int64_t pid, int64_t tid) {
  size_t i =
      ((uint64_t)pid * 0x9E3779B97F4A7C15ull ^ (uint64_t)tid) * 0xBF58476D1CE4E5B9ull & (cap - 1);
  while (t[i].used && (t[i].pid != pid || t[i].tid != tid))
    i = (i + 1) & (cap - 1);
  return i;
}
static int an_thread_ranks(const struct an_call *rows, struct an_key *k, size_t n,
                           size_t *nthreads) {
  size_t cap = 64, used = 0;
  struct an_thread *t = calloc(cap, sizeof *t);
  if (!t)
    return -1;
  for (size_t i = 0; i < n; i++) {
    size_t at = an_thread_slot(t, cap, rows[i].pid, rows[i].tid);
    if (!t[at].used) {
      if (2 * (used + 1) > cap) { /* grow, then place the rows' slots again */
        free(t);
        cap *= 2;
        if (!(t = calloc(cap, sizeof *t)))
          return -1;
        used = 0;
        i = (size_t)-1;
        continue;
      }
      t[at] = (struct an_thread){rows[i].pid, rows[i].tid, 1};
      used++;
    }
    k[i].rank = (uint32_t)at;
  }
  struct an_thread **by = malloc(used * sizeof *by);
  uint32_t *rank = malloc(cap * sizeof *rank);
  if (!by || !rank) {
    free(by);
    free(rank);
    free(t);
    return -1;
  }
  for (size_t i = 0, j = 0; i < cap; i++)
    if (t[i].used)
      by[j++] = &t[i];
  qsort(by, used, sizeof *by, an_thread_cmp);
  for (size_t r = 0; r < used; r++)
    rank[by[r] - t] = (uint32_t)r;
  for (size_t i = 0; i < n; i++)
    k[i].rank = rank[k[i].rank];
  *nthreads = used;
  free(by);
  free(rank);
  free(t);
  return 0;
}

static int an_call_cmp(const void *pa, const void *pb);

/* Orders rows as an_call_cmp does, into *order (n indices; the caller frees
 * it): the keys (start, as an offset from the earliest so that negative
 * times sort first and a short span takes few passes) by radix passes, then
 * stably by thread rank (one counting pass), then each run of one thread's
 * equal starts by the full order (end descending, id). The rows stay where
 * they are: gathering them costs a copy of the rows in fresh pages, whose
 * faults cost more than the walk's reads through the order. 0, or -1 when
 * out of memory. */
static int an_order_cmp(const void *a, const void *b, void *rows) {
  const struct an_call *r = rows;
  return an_call_cmp(&r[*(const uint32_t *)a], &r[*(const uint32_t *)b]);
}
static int an_sort(const struct an_call *rows, size_t n, uint32_t **order) {
  *order = NULL;
  if (n > UINT32_MAX)
    return -1;
  struct an_key *k = malloc(n * sizeof *k), *t = malloc(n * sizeof *t);
  uint32_t *o = malloc(n * sizeof *o);
  size_t threads = 0, *count = NULL;
  int ok = k && t && o && an_thread_ranks(rows, k, n, &threads) == 0 &&
           (count = calloc(threads + 1, sizeof *count));
  if (ok) {
    int64_t least = rows[0].start;
    for (size_t i = 1; i < n; i++)
      least = rows[i].start < least ? rows[i].start : least;
    for (size_t i = 0; i < n; i++)
      k[i].key = (uint64_t)rows[i].start - (uint64_t)least, k[i].row = (uint32_t)i;
    struct an_key *sorted = k, *spare = t;
    an_radix(&sorted, &spare, n);
    for (size_t i = 0; i < n; i++)
      count[sorted[i].rank + 1]++;
    for (size_t r = 0; r < threads; r++)
      count[r + 1] += count[r];
    for (size_t i = 0; i < n; i++)
      o[count[sorted[i].rank]++] = sorted[i].row;
    for (size_t i = 1, run = 0; i <= n; i++)
      if (i == n || rows[o[i]].pid != rows[o[run]].pid || rows[o[i]].tid != rows[o[run]].tid ||
          rows[o[i]].start != rows[o[run]].start) {
        if (i - run > 1)
          qsort_r(o + run, i - run, sizeof *o, an_order_cmp, (void *)rows);
        run = i;
      }
    *order = o;
  } else {
    free(o);
  }
  free(count);
  free(k);
  free(t);
  return ok ? 0 : -1;
}

/* Copies the current row of st into *c. */
static void an_call_read(sqlite3_stmt *st, struct an_call *c) {
  c->id = sqlite3_column_int64(st, 0);
  c->pid = sqlite3_column_int64(st, 1);
  c->tid = sqlite3_column_int64(st, 2);
  c->start = sqlite3_column_int64(st, 3);
  c->end = sqlite3_column_int64(st, 4);
  c->name_id = sqlite3_column_int64(st, 5);
  c->args_id = sqlite3_column_int64(st, 6);
}

/* Opens the source for `total` calls. 0, or -1 (SQLite error or no memory;
 * *oom tells which). Reading in memory advances the progress line. */
static int an_src_open(sqlite3 *db, int64_t total, struct an_src *s, struct rpdtool_progress *p,
                       int *oom) {
  memset(s, 0, sizeof *s);
  *oom = 0;
  if (total > AN_SORT_MAX) {
    char sql[sizeof an_calls_sql + 64];
    snprintf(sql, sizeof sql, "%s ORDER BY pid, tid, start, end DESC, id", an_calls_sql);
    return sqlite3_prepare_v2(db, sql, -1, &s->st, NULL) == SQLITE_OK ? 0 : -1;
  }
  size_t cap = total > 0 ? (size_t)total + 1 : 1;
  s->rows = malloc(cap * sizeof *s->rows);
  if (!s->rows) {
    *oom = 1;
    return -1;
  }
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, an_calls_sql, -1, &st, NULL) != SQLITE_OK)
    return -1;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (s->n == cap) { /* rows added since the count */
      struct an_call *r = realloc(s->rows, 2 * cap * sizeof *r);
      if (!r) {
        *oom = 1;
        sqlite3_finalize(st);
        return -1;
      }
      s->rows = r;
      cap *= 2;
    }
    an_call_read(st, &s->rows[s->n++]);
    if ((s->n & 0xfff) == 0)
      rpdtool_progress_add(p, 0x1000);
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE)
    return -1;
  if (s->n && an_sort(s->rows, s->n, &s->order) != 0)
    qsort(s->rows, s->n, sizeof *s->rows, an_call_cmp); /* no memory for the passes */
  return 0;
}

/* The next call of the source: 1 and *c, 0 at the end, -1 on SQLite error. */
static int an_src_next(struct an_src *s, struct an_call *c) {
  if (!s->st) {
    if (s->next == s->n)
      return 0;
    *c = s->rows[s->order ? s->order[s->next] : s->next];
    s->next++;
    return 1;
  }
  int rc = sqlite3_step(s->st);
  if (rc == SQLITE_ROW) {
    an_call_read(s->st, c);
    return 1;
  }
  return rc == SQLITE_DONE ? 0 : -1;
}

static void an_src_close(struct an_src *s) {
  sqlite3_finalize(s->st);
  free(s->rows);
  free(s->order);
  memset(s, 0, sizeof *s);
}

int an_walk(const char *cmd, const struct rpdtool_trace *t, const char *label, an_visit_fn visit,
            void *ctx) {
  struct an_gpu g;
  if (an_gpu_load(t->db, &g) != 0) {
    rpdtool_err(cmd, "%s: cannot read GPU ops per call: %s", t->path, sqlite3_errmsg(t->db));
    an_gpu_free(&g);
    return -1;
  }
  int64_t total = 0;
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(t->db, "SELECT count(*) FROM rocpd_api", -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    total = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  struct rpdtool_progress prog;
  rpdtool_progress_start(&prog, label, 2 * (uint64_t)total);
  struct an_src src;
  int oom;
  if (an_src_open(t->db, total, &src, &prog, &oom) != 0) {
    if (oom)
      rpdtool_err(cmd, "out of memory reading %lld calls", (long long)total);
    else
      rpdtool_err(cmd, "%s: cannot read rocpd_api: %s", t->path, sqlite3_errmsg(t->db));
    rpdtool_progress_end(&prog);
    an_src_close(&src);
    an_gpu_free(&g);
    return -1;
  }
  if (!src.st)
    rpdtool_progress_add(&prog, (uint64_t)total - (src.n & ~(size_t)0xfff));
  struct an_frame *stack = NULL;
  int n = 0, cap = 0, ret = 0, rc;
  int64_t pid = 0, tid = 0, seen = 0;
  struct an_call c;
  while ((rc = an_src_next(&src, &c)) == 1) {
    struct an_frame f = {
        .id = c.id, .start = c.start, .end = c.end, .name_id = c.name_id, .args_id = c.args_id};
    if (seen && (c.pid != pid || c.tid != tid))
      while (n > 0 && !ret)
        ret = an_pop(stack, &n, &g, visit, ctx, pid, tid);
    pid = c.pid;
    tid = c.tid;
    while (n > 0 && !ret && stack[n - 1].end < f.end)
      ret = an_pop(stack, &n, &g, visit, ctx, pid, tid);
    if (ret)
      break;
    if (n == cap) {
      int ncap = cap ? cap * 2 : 64;
      struct an_frame *s = realloc(stack, (size_t)ncap * sizeof *s);
      if (!s) {
        rpdtool_err(cmd, "out of memory");
        ret = -1;
        break;
      }
      stack = s;
      cap = ncap;
    }
    stack[n++] = f;
    if ((++seen & 0xfff) == 0)
      rpdtool_progress_add(&prog, 0x1000);
  }
  if (!ret && rc < 0) {
    rpdtool_err(cmd, "%s: reading rocpd_api failed: %s", t->path, sqlite3_errmsg(t->db));
    ret = -1;
  }
  while (!ret && n > 0)
    ret = an_pop(stack, &n, &g, visit, ctx, pid, tid);
  rpdtool_progress_end(&prog);
  an_src_close(&src);
  free(stack);
  an_gpu_free(&g);
  return ret;
}
