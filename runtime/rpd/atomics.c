/*
 * atomics.c: the host-atomics counts of libnano_tracker.so in the trace.
 *
 * At every flush that asks for it (rpdflush, a stop, exit) the writer stores
 * this session's sites and their current totals into nanoprobe's own tables:
 *
 *   nano_atomic_site   one row per site and session: id (session offset +
 *                      the tracker's site id), session, pid, kind_id, kind
 *                      ("__atomic_fetch_add"), memory_order ("seq_cst"),
 *                      failure_order (compare-exchange, else ""), size,
 *                      flags (NANO_SITE_* bits), function, file, line, column
 *   nano_atomic_count  site_id -> count: the site's total at the last flush
 *                      (replaced at each flush; counts are cumulative)
 *   nano_atomic_totals view: kind, count, totals per kind over all sessions,
 *                      the numbers of the tracker's "NANO TRACKER {" text
 *   nano_atomic_origin site_id -> function, file, line, column: where a site
 *                      reported in the user's code is written in library
 *                      code (the tracker's inlined_from); sites reported
 *                      where they are written have no row
 *   nano_atomic_sample id (session offset + n; files made before it had no
 *                      id, and get none), session, pid, start, kind_id,
 *                      kind, count: a
 *                      process's total of one kind at time start (ns, the
 *                      trace's clock), cumulative; written while recording
 *                      every 1/NANO_RPD_ATOMICS_HZ s when a total changed,
 *                      and at every flush that stores the counts: what
 *                      `rpd export` draws as counter tracks
 *   nano_atomic_caller site_id, function, file, line -> count: where the
 *                      user's code calls a library site (NANO_SITE_LIBRARY,
 *                      recorded under NANO_ATOMICS_CALLERS=1): of each stack
 *                      the tracker kept, the first frame whose source file
 *                      is not library code (NANO_ATOMICS_LIBRARY_FILES, the
 *                      pass's default); function "" and file "": no such
 *                      frame, or the stack was not kept. A site's callers sum
 *                      to its count (replaced at each flush)
 *   nano_atomic_callers view: kind, library_function, library_file,
 *                      library_line, caller, file, line, count: the callers
 *                      summed over processes and sessions, busiest first
 *
 * Windows: the counts (and samples) are those made while recording, from
 * each start (rpdstart, rpdremote start, load with RPDT_AUTOSTART) to its
 * stop, summed over the windows: a site's count is the tracker's total less
 * its total at the window's start, plus what earlier windows counted.
 * Callers are the tracker's stacks since the process began (not windowed).
 *
 * Without the tracker (a build where nano_tracker is missing) the tables are
 * still created, empty.
 */
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nano/atomics.h"
#include "nano/path.h"
#include "nano/rpdfile.h"
#include "nano/settings.h"
#include "rpd_internal.h"

/* Creates the tables and the view when missing. Returns 0, or -1 with a
 * message. */
static int atomics_schema_create(sqlite3 *db, const char *path) {
  char *msg = NULL;
  if (sqlite3_exec(db, nano_rpdfile_atomics_schema_sql(), NULL, NULL, &msg) == SQLITE_OK)
    return 0;
  fprintf(stderr, "nanoprobe rpd: %s: cannot create the nano_atomic tables: %s\n", path,
          msg ? msg : sqlite3_errmsg(db));
  sqlite3_free(msg);
  return -1;
}

#ifdef NANO_RPD_HAVE_TRACKER
/* The windows (see the banner), per tracker site id (dense, from 1): at[id]
 * the site's total when the open window began, acc[id] what closed windows
 * counted. Grown at each start; a site registered later began at 0. */
static struct {
  pthread_mutex_t lock;
  uint64_t *at, *acc;
  uint32_t n; /* entries of at and acc */
  int on;
} g_win = {PTHREAD_MUTEX_INITIALIZER, NULL, NULL, 0, 0};

/* Grows g_win to hold id (g_win.lock held); 0, or -1 out of memory. */
static int atomics_window_fit(uint32_t id) {
  if (id < g_win.n)
    return 0;
  uint32_t n = g_win.n ? g_win.n : 64;
  while (n <= id)
    n *= 2;
  uint64_t *at = realloc(g_win.at, n * sizeof *at);
  if (at)
    g_win.at = at;
  uint64_t *acc = at ? realloc(g_win.acc, n * sizeof *acc) : NULL;
  if (!acc)
    return -1;
  g_win.acc = acc;
  memset(at + g_win.n, 0, (n - g_win.n) * sizeof *at);
  memset(acc + g_win.n, 0, (n - g_win.n) * sizeof *acc);
  g_win.n = n;
  return 0;
}

/* A window's edge for one site: at its start, note the total; at its stop,
 * add what the window counted. */
static int atomics_window_edge(const struct nano_site *s, uint64_t count, void *arg) {
  if (atomics_window_fit(s->id) != 0)
    return 0; /* out of memory: this site counts since the process began */
  if (*(int *)arg)
    g_win.at[s->id] = count;
  else
    g_win.acc[s->id] += count - g_win.at[s->id];
  return 0;
}

/* The count of the site with total `count` made while recording. */
static uint64_t atomics_windowed(uint32_t id, uint64_t count) {
  pthread_mutex_lock(&g_win.lock);
  uint64_t v = count;
  if (id < g_win.n)
    v = g_win.acc[id] + (g_win.on ? count - g_win.at[id] : 0);
  pthread_mutex_unlock(&g_win.lock);
  return v;
}
#endif

void rpdi_atomics_window(int on) {
#ifdef NANO_RPD_HAVE_TRACKER
  pthread_mutex_lock(&g_win.lock);
  if (on != g_win.on)
    (void)nano_tracker_foreach_site(atomics_window_edge, &on);
  g_win.on = on;
  pthread_mutex_unlock(&g_win.lock);
#else
  (void)on;
#endif
}

struct atomics_ctx {
  sqlite3 *db;
  const char *path;
  int64_t offset;
  int64_t session;
  sqlite3_stmt *site, *count, *origin, *caller;
};

#ifdef NANO_RPD_HAVE_TRACKER
#include <unistd.h>

/* Binds and steps one site and its count. */
static int atomics_visit(const struct nano_site *s, uint64_t count, void *arg) {
  struct atomics_ctx *c = arg;
  count = atomics_windowed(s->id, count);
  int64_t id = c->offset + s->id;
  const char *kind = nano_kind_name(s->kind);
  const char *order = nano_order_name(s->order);
  const char *forder = s->kind == NANO_KIND_COMPARE_EXCHANGE
                           ? nano_order_name(NANO_SITE_FAILURE_ORDER(s->flags))
                           : "";
  sqlite3_stmt *st = c->site;
  int rc = sqlite3_bind_int64(st, 1, id) | sqlite3_bind_int64(st, 2, c->session) |
           sqlite3_bind_int(st, 3, (int)getpid()) | sqlite3_bind_int(st, 4, s->kind) |
           sqlite3_bind_text(st, 5, kind ? kind : "unknown", -1, SQLITE_STATIC) |
           sqlite3_bind_text(st, 6, order ? order : "unknown", -1, SQLITE_STATIC) |
           sqlite3_bind_text(st, 7, forder ? forder : "unknown", -1, SQLITE_STATIC) |
           sqlite3_bind_int64(st, 8, s->size) | sqlite3_bind_int(st, 9, s->flags) |
           sqlite3_bind_text(st, 10, s->function ? s->function : "", -1, SQLITE_STATIC) |
           sqlite3_bind_text(st, 11, s->file ? s->file : "", -1, SQLITE_STATIC) |
           sqlite3_bind_int64(st, 12, s->line) | sqlite3_bind_int64(st, 13, s->column);
  if (rc == SQLITE_OK)
    rc = sqlite3_step(st);
  sqlite3_reset(st);
  if (rc != SQLITE_DONE)
    return -1;
  st = c->count;
  rc = sqlite3_bind_int64(st, 1, id) | sqlite3_bind_int64(st, 2, (int64_t)count);
  if (rc == SQLITE_OK)
    rc = sqlite3_step(st);
  sqlite3_reset(st);
  if (rc != SQLITE_DONE)
    return -1;
  struct nano_site_origin o;
  if (!nano_tracker_site_origin(s->id, &o))
    return 0;
  st = c->origin;
  rc = sqlite3_bind_int64(st, 1, id) |
       sqlite3_bind_text(st, 2, o.function ? o.function : "", -1, SQLITE_STATIC) |
       sqlite3_bind_text(st, 3, o.file, -1, SQLITE_STATIC) | sqlite3_bind_int64(st, 4, o.line) |
       sqlite3_bind_int64(st, 5, o.column);
  if (rc == SQLITE_OK)
    rc = sqlite3_step(st);
  sqlite3_reset(st);
  return rc == SQLITE_DONE ? 0 : -1;
}

/* The library files as a compiled regex (NANO_ATOMICS_LIBRARY_FILES, else
 * the pass's default); NULL when even the default does not compile. */
static regex_t *atomics_library(void) {
  static regex_t re;
  static int state; /* 0 unread, 1 compiled, -1 none */
  if (state == 0) {
    const char *pat = nano_env_str("NANO_ATOMICS_LIBRARY_FILES");
    if (pat && regcomp(&re, pat, REG_EXTENDED | REG_NOSUB) != 0) {
      fprintf(stderr,
              "nanoprobe rpd: NANO_ATOMICS_LIBRARY_FILES=%s: invalid regular expression; "
              "callers of library atomics use the default library files\n",
              pat);
      pat = NULL;
    }
    state = pat || regcomp(&re, NANO_LIBRARY_FILES_DEFAULT, REG_EXTENDED | REG_NOSUB) == 0 ? 1 : -1;
  }
  return state > 0 ? &re : NULL;
}

/* Adds one stack of a library site to its caller's row: the first frame in
 * a source file that is not library code. */
static int atomics_caller(uint32_t id, const uint64_t *ips, unsigned depth, uint64_t count,
                          void *arg) {
  struct atomics_ctx *c = arg;
  regex_t *lib = atomics_library();
  struct rpdi_frame f = {0}, at = {0};
  char file[4096];
  for (unsigned i = 0; i < depth && lib; i++)
    if (rpdi_stack_frame(ips[i], &f) == 0 && f.file &&
        nano_path_normalize(f.file, file, sizeof file) && regexec(lib, file, 0, NULL, 0) != 0) {
      at = f;
      at.file = file;
      break;
    }
  sqlite3_stmt *st = c->caller;
  int rc = sqlite3_bind_int64(st, 1, c->offset + id) |
           sqlite3_bind_text(st, 2, at.file && at.function ? at.function : "", -1, SQLITE_STATIC) |
           sqlite3_bind_text(st, 3, at.file ? at.file : "", -1, SQLITE_STATIC) |
           sqlite3_bind_int(st, 4, at.file ? at.line : 0) |
           sqlite3_bind_int64(st, 5, (int64_t)count);
  if (rc == SQLITE_OK)
    rc = sqlite3_step(st);
  sqlite3_reset(st);
  return rc == SQLITE_DONE ? 0 : -1;
}

/* Sums a visited site's count into its kind's total. */
static int atomics_sum(const struct nano_site *s, uint64_t count, void *arg) {
  if (s->kind < NANO_KIND_COUNT)
    ((uint64_t *)arg)[s->kind] += atomics_windowed(s->id, count);
  return 0;
}
#endif

int rpdi_atomics_write(sqlite3 *db, const char *path, int64_t offset) {
  if (atomics_schema_create(db, path) != 0)
    return -1;
#ifdef NANO_RPD_HAVE_TRACKER
  struct atomics_ctx c = {db, path, offset, offset >> 32, NULL, NULL, NULL, NULL};
  int rc;
  sqlite3_stmt *forget = NULL;
  if (sqlite3_prepare_v2(db,
                         "INSERT OR REPLACE INTO nano_atomic_site(id, session, pid, kind_id, kind, "
                         "memory_order, failure_order, size, flags, function, file, line, column) "
                         "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                         -1, &c.site, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(db,
                         "INSERT OR REPLACE INTO nano_atomic_count(site_id, count) VALUES (?,?)",
                         -1, &c.count, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(db,
                         "INSERT OR REPLACE INTO nano_atomic_origin(site_id, function, file, line, "
                         "column) VALUES (?,?,?,?,?)",
                         -1, &c.origin, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(db,
                         "INSERT INTO nano_atomic_caller(site_id, function, file, line, count) "
                         "VALUES (?,?,?,?,?) ON CONFLICT (site_id, function, file, line) "
                         "DO UPDATE SET count = count + excluded.count",
                         -1, &c.caller, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(db, "DELETE FROM nano_atomic_caller WHERE site_id > ? AND site_id <= ?",
                         -1, &forget, NULL) != SQLITE_OK) {
    fprintf(stderr, "nanoprobe rpd: %s: cannot prepare the atomics inserts: %s\n", path,
            sqlite3_errmsg(db));
    rc = -1;
    goto done;
  }
  rc = nano_tracker_foreach_site(atomics_visit, &c);
  /* this session's callers are written again, from the tracker's totals */
  if (rc == 0) {
    rc = sqlite3_bind_int64(forget, 1, offset) == SQLITE_OK &&
                 sqlite3_bind_int64(forget, 2, offset + UINT32_MAX) == SQLITE_OK &&
                 sqlite3_step(forget) == SQLITE_DONE
             ? 0
             : -1;
  }
  if (rc == 0)
    rc = nano_tracker_foreach_caller(atomics_caller, &c);
  if (rc != 0)
    fprintf(stderr, "nanoprobe rpd: %s: cannot store the atomic counts: %s\n", path,
            sqlite3_errmsg(db));
done:
  sqlite3_finalize(c.site);
  sqlite3_finalize(c.count);
  sqlite3_finalize(c.origin);
  sqlite3_finalize(c.caller);
  sqlite3_finalize(forget);
  return rc != 0 ? -1 : 0;
#else
  (void)offset;
  return 0;
#endif
}

/* The totals per kind of the last sample this process wrote, and the session
 * they belong to (a new session, after a fork, starts again from zero). */
static uint64_t atomics_last[NANO_KIND_COUNT];
static int64_t atomics_last_session = -1;
static int64_t atomics_sample_next; /* this session's next sample id */

int rpdi_atomics_sample(sqlite3 *db, const char *path, int64_t offset, int64_t now) {
#ifdef NANO_RPD_HAVE_TRACKER
  uint64_t totals[NANO_KIND_COUNT] = {0};
  if (nano_tracker_foreach_site(atomics_sum, totals) != 0)
    return -1;
  int64_t session = offset >> 32;
  if (session != atomics_last_session) {
    memset(atomics_last, 0, sizeof atomics_last);
    atomics_last_session = session;
    atomics_sample_next = 1;
  }
  if (memcmp(totals, atomics_last, sizeof totals) == 0)
    return 0;
  if (atomics_schema_create(db, path) != 0)
    return -1;
  /* a session-unique id (a side file's rows fold in by key: the session
   * extension keeps only tables with one); older files' table has none */
  int keyed = nano_rpdfile_has_column(db, "nano_atomic_sample", "id");
  sqlite3_stmt *st = NULL;
  if (keyed < 0 || sqlite3_prepare_v2(
                       db,
                       keyed ? "INSERT INTO nano_atomic_sample(session, pid, start, kind_id, kind, "
                               "count, id) VALUES (?,?,?,?,?,?,?)"
                             : "INSERT INTO nano_atomic_sample(session, pid, start, kind_id, kind, "
                               "count) VALUES (?,?,?,?,?,?)",
                       -1, &st, NULL) != SQLITE_OK) {
    fprintf(stderr, "nanoprobe rpd: %s: cannot prepare the atomics samples: %s\n", path,
            sqlite3_errmsg(db));
    return -1;
  }
  int rc = SQLITE_DONE;
  for (unsigned k = 0; k < NANO_KIND_COUNT && rc == SQLITE_DONE; k++) {
    if (totals[k] == atomics_last[k])
      continue;
    rc = sqlite3_bind_int64(st, 1, session) | sqlite3_bind_int(st, 2, (int)getpid()) |
         sqlite3_bind_int64(st, 3, now) | sqlite3_bind_int(st, 4, (int)k) |
         sqlite3_bind_text(st, 5, nano_kind_name(k), -1, SQLITE_STATIC) |
         sqlite3_bind_int64(st, 6, (int64_t)totals[k]);
    if (keyed)
      rc |= sqlite3_bind_int64(st, 7, offset + atomics_sample_next++);
    if (rc == SQLITE_OK)
      rc = sqlite3_step(st);
    sqlite3_reset(st);
  }
  if (rc != SQLITE_DONE)
    fprintf(stderr, "nanoprobe rpd: %s: cannot store an atomics sample: %s\n", path,
            sqlite3_errmsg(db));
  else
    memcpy(atomics_last, totals, sizeof totals);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : -1;
#else
  (void)db, (void)path, (void)offset, (void)now;
  return 0;
#endif
}
