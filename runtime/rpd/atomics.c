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
 *
 * Without the tracker (a build where nano_tracker is missing) the tables are
 * still created, empty.
 */
#include <stdio.h>
#include <string.h>

#include "nano/atomics.h"
#include "rpd_internal.h"

static const char atomics_schema[] =
    "CREATE TABLE IF NOT EXISTS nano_atomic_site (id integer NOT NULL PRIMARY KEY, "
    "session integer NOT NULL, pid integer NOT NULL, kind_id integer NOT NULL, "
    "kind varchar(64) NOT NULL, memory_order varchar(16) NOT NULL, "
    "failure_order varchar(16) NOT NULL, size integer NOT NULL, flags integer NOT NULL, "
    "function varchar(4096) NOT NULL, file varchar(4096) NOT NULL, line integer NOT NULL, "
    "column integer NOT NULL);\n"
    "CREATE TABLE IF NOT EXISTS nano_atomic_count (site_id integer NOT NULL PRIMARY KEY "
    "REFERENCES nano_atomic_site (id), count integer NOT NULL);\n"
    "CREATE VIEW IF NOT EXISTS nano_atomic_totals AS SELECT S.kind AS kind, sum(C.count) AS count "
    "FROM nano_atomic_count C JOIN nano_atomic_site S ON S.id = C.site_id "
    "GROUP BY S.kind_id, S.kind HAVING sum(C.count) > 0 ORDER BY S.kind_id;\n";

struct atomics_ctx {
  sqlite3 *db;
  const char *path;
  int64_t offset;
  int64_t session;
  sqlite3_stmt *site, *count;
  int failed;
};

#ifdef NANO_RPD_HAVE_TRACKER
#include <unistd.h>

/* Binds and steps one site and its count. */
static int atomics_visit(const struct nano_site *s, uint64_t count, void *arg) {
  struct atomics_ctx *c = arg;
  int64_t id = c->offset + s->id;
  const char *kind = nano_kind_name(s->kind);
  const char *order = nano_order_name(s->order);
  const char *forder = s->kind == NANO_KIND_COMPARE_EXCHANGE
                           ? nano_order_name(NANO_SITE_FAILURE_ORDER(s->flags))
                           : "";
  sqlite3_stmt *st = c->site;
  sqlite3_bind_int64(st, 1, id);
  sqlite3_bind_int64(st, 2, c->session);
  sqlite3_bind_int(st, 3, (int)getpid());
  sqlite3_bind_int(st, 4, s->kind);
  sqlite3_bind_text(st, 5, kind ? kind : "unknown", -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 6, order ? order : "unknown", -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 7, forder ? forder : "unknown", -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 8, s->size);
  sqlite3_bind_int(st, 9, s->flags);
  sqlite3_bind_text(st, 10, s->function ? s->function : "", -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 11, s->file ? s->file : "", -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 12, s->line);
  sqlite3_bind_int64(st, 13, s->column);
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  if (rc != SQLITE_DONE) return -1;
  st = c->count;
  sqlite3_bind_int64(st, 1, id);
  sqlite3_bind_int64(st, 2, (int64_t)count);
  rc = sqlite3_step(st);
  sqlite3_reset(st);
  return rc == SQLITE_DONE ? 0 : -1;
}
#endif

int rpdi_atomics_write(sqlite3 *db, const char *path, int64_t offset) {
  char *msg = NULL;
  if (sqlite3_exec(db, atomics_schema, NULL, NULL, &msg) != SQLITE_OK) {
    fprintf(stderr, "nanoprobe rpd: %s: cannot create the nano_atomic tables: %s\n", path,
            msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return -1;
  }
#ifdef NANO_RPD_HAVE_TRACKER
  struct atomics_ctx c = {db, path, offset, offset >> 32, NULL, NULL, 0};
  if (sqlite3_prepare_v2(db,
                         "INSERT OR REPLACE INTO nano_atomic_site(id, session, pid, kind_id, kind, "
                         "memory_order, failure_order, size, flags, function, file, line, column) "
                         "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                         -1, &c.site, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO nano_atomic_count(site_id, count) VALUES (?,?)",
                         -1, &c.count, NULL) != SQLITE_OK) {
    fprintf(stderr, "nanoprobe rpd: %s: cannot prepare the atomics inserts: %s\n", path,
            sqlite3_errmsg(db));
    sqlite3_finalize(c.site);
    sqlite3_finalize(c.count);
    return -1;
  }
  int rc = nano_tracker_foreach_site(atomics_visit, &c);
  if (rc != 0)
    fprintf(stderr, "nanoprobe rpd: %s: cannot store the atomic counts: %s\n", path,
            sqlite3_errmsg(db));
  sqlite3_finalize(c.site);
  sqlite3_finalize(c.count);
  return rc != 0 ? -1 : 0;
#else
  (void)offset;
  return 0;
#endif
}
