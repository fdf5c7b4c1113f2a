/*
 * gate_trace.c: the host atomics of an RPD trace as the gate's document.
 *
 * A trace written by the tracer with atomics on (nanoprobe run --atomics, or
 * LD_PRELOAD of libnano_rpd.so with a program built with the plugin) holds
 * nano_atomic_site, nano_atomic_count and nano_atomic_origin
 * (runtime/rpd/atomics.c). gate_trace_atomics reads them into the document
 * the tracker dumps (docs/atomics.md, "nanoprobe-atomics" version 1): kinds
 * and sites, the sites of every session and process of the file merged by
 * position, as the gate merges several processes' dumps.
 */
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "nano/rpdfile.h"
#include "nanoprobe.h"

/* The sites of the trace: one row per position, kind and origin. */
static const char gate_trace_sites_sql[] =
    "SELECT S.kind, S.memory_order, S.function, S.file, S.line, S.column, sum(C.count), "
    "O.function, O.file, O.line, O.column FROM nano_atomic_count C "
    "JOIN nano_atomic_site S ON S.id = C.site_id "
    "LEFT JOIN nano_atomic_origin O ON O.site_id = S.id "
    "GROUP BY S.kind, S.memory_order, S.function, S.file, S.line, S.column, "
    "O.function, O.file, O.line, O.column HAVING sum(C.count) > 0";

/* The same for a trace written before nano_atomic_origin existed. */
static const char gate_trace_sites_no_origin_sql[] =
    "SELECT S.kind, S.memory_order, S.function, S.file, S.line, S.column, sum(C.count), "
    "NULL, NULL, NULL, NULL FROM nano_atomic_count C "
    "JOIN nano_atomic_site S ON S.id = C.site_id "
    "GROUP BY S.kind, S.memory_order, S.function, S.file, S.line, S.column "
    "HAVING sum(C.count) > 0";

static const char gate_trace_kinds_sql[] = "SELECT kind, count FROM nano_atomic_totals";

/* A text column as a JSON string ("" for NULL). */
static json_t *gate_trace_str(sqlite3_stmt *st, int col) {
  const unsigned char *s = sqlite3_column_text(st, col);
  return json_string(s ? (const char *)s : "");
}

/* Appends the trace's sites to array `sites`. Returns SQLITE_DONE, another
 * SQLite code, or SQLITE_NOMEM. */
static int gate_trace_sites(sqlite3 *db, int origins, json_t *sites) {
  const char *sql = origins ? gate_trace_sites_sql : gate_trace_sites_no_origin_sql;
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  if (rc != SQLITE_OK)
    return rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    json_t *site = json_pack(
        "{s:o, s:o, s:o, s:o, s:I, s:I, s:I}", "kind", gate_trace_str(st, 0), "order",
        gate_trace_str(st, 1), "function", gate_trace_str(st, 2), "file", gate_trace_str(st, 3),
        "line", (json_int_t)sqlite3_column_int64(st, 4), "column",
        (json_int_t)sqlite3_column_int64(st, 5), "count", (json_int_t)sqlite3_column_int64(st, 6));
    if (site && sqlite3_column_type(st, 8) != SQLITE_NULL) {
      json_t *from =
          json_pack("{s:o, s:o, s:I, s:I}", "function", gate_trace_str(st, 7), "file",
                    gate_trace_str(st, 8), "line", (json_int_t)sqlite3_column_int64(st, 9),
                    "column", (json_int_t)sqlite3_column_int64(st, 10));
      if (!from || json_object_set_new(site, "inlined_from", from) != 0) {
        json_decref(site);
        site = NULL;
      }
    }
    if (!site || json_array_append_new(sites, site) != 0) {
      rc = SQLITE_NOMEM;
      break;
    }
  }
  sqlite3_finalize(st);
  return rc;
}

/* Adds the trace's totals per kind to object `kinds`. Returns as above. */
static int gate_trace_kinds(sqlite3 *db, json_t *kinds) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db, gate_trace_kinds_sql, -1, &st, NULL);
  if (rc != SQLITE_OK)
    return rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const unsigned char *kind = sqlite3_column_text(st, 0);
    if (json_object_set_new(kinds, kind ? (const char *)kind : "",
                            json_integer(sqlite3_column_int64(st, 1))) != 0) {
      rc = SQLITE_NOMEM;
      break;
    }
  }
  sqlite3_finalize(st);
  return rc;
}

int gate_is_trace(const char *path) {
  static const char magic[16] = "SQLite format 3";
  char head[sizeof magic];
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return 0;
  size_t n = fread(head, 1, sizeof head, f);
  fclose(f);
  return n == sizeof head && memcmp(head, magic, sizeof magic) == 0;
}

json_t *gate_trace_atomics(const char *path, const char *what) {
  sqlite3 *db = NULL;
  int version = 0;
  char err[NANO_RPDFILE_ERRLEN];
  if (nano_rpdfile_open_read(path, 1, &db, &version, err, sizeof err) != NANO_RPDFILE_OK) {
    fprintf(stderr, "nanoprobe gate: %s: %s\n", what, err);
    return NULL;
  }
  json_t *doc = NULL;
  int has = nano_rpdfile_has_object(db, "nano_atomic_site");
  int origins = has > 0 ? nano_rpdfile_has_object(db, "nano_atomic_origin") : 0;
  if (has < 0 || origins < 0) {
    fprintf(stderr, "nanoprobe gate: %s: cannot read: %s\n", what, sqlite3_errmsg(db));
    goto out;
  }
  if (!has) {
    fprintf(stderr,
            "nanoprobe gate: %s holds no host atomics: trace a program built with the plugin "
            "with `nanoprobe run --atomics` (or LD_PRELOAD of libnano_rpd.so)\n",
            what);
    goto out;
  }
  json_t *kinds = json_object(), *sites = json_array();
  doc = json_pack("{s:s, s:i, s:o, s:o}", "format", "nanoprobe-atomics", "version", 1, "kinds",
                  kinds, "sites", sites);
  if (doc == NULL) {
    fprintf(stderr, "nanoprobe gate: out of memory reading %s\n", what);
    goto out;
  }
  int rc = gate_trace_kinds(db, kinds);
  if (rc == SQLITE_DONE)
    rc = gate_trace_sites(db, origins, sites);
  if (rc != SQLITE_DONE) {
    fprintf(stderr, "nanoprobe gate: %s: cannot read the atomics: %s\n", what,
            rc == SQLITE_NOMEM ? "out of memory" : sqlite3_errmsg(db));
    json_decref(doc);
    doc = NULL;
  }
out:
  sqlite3_close(db);
  return doc;
}
