/*
 * rpdfile.c: the RPD schema and opening/creating RPD files (nano_rpdfile).
 *
 * The schema is rocmProfileData's version 3 (rpd_tracer/tableSchema.cmd,
 * indexSchema.cmd, utilitySchema.cmd), with the v3 views the format note
 * (docs/rpd-schema) lists: api and op with their strings, busy, top, kernel,
 * copy, copyop, stackframe and the node-decoding napi and nop.
 *
 * Classification of a file, in order: missing; empty (0 bytes); does not start
 * with the SQLite header (not SQLite); SQLite without tables (treated as empty
 * when writing); no rocpd_metadata or rocpd_api table (not RPD); the
 * schema_version tag (absent = 2) against the supported range.
 */
#define _GNU_SOURCE /* O_CLOEXEC */
#include "nano/rpdfile.h"
#include "rpdfile_internal.h"

#include "nano/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char rpdfile_schema[] =
    /* tables (rocmProfileData tableSchema.cmd, version 3) */
    "CREATE TABLE IF NOT EXISTS \"rocpd_metadata\" (\"id\" integer NOT NULL PRIMARY KEY "
    "AUTOINCREMENT, "
    "\"tag\" varchar(4096) NOT NULL, \"value\" varchar(4096) NOT NULL);\n"
    "CREATE TABLE IF NOT EXISTS \"rocpd_string\" (\"id\" integer NOT NULL PRIMARY KEY "
    "AUTOINCREMENT, "
    "\"string\" varchar(4096) NOT NULL);\n"
    "CREATE TABLE IF NOT EXISTS \"rocpd_ustring\" (\"id\" integer NOT NULL PRIMARY KEY "
    "AUTOINCREMENT, "
    "\"string\" varchar(4096) NOT NULL);\n"
    "CREATE TABLE IF NOT EXISTS \"rocpd_api\" (\"id\" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "
    "\"pid\" integer NOT NULL, \"tid\" integer NOT NULL, \"start\" integer NOT NULL, \"end\" "
    "integer NOT NULL, "
    "\"apiName_id\" bigint NOT NULL REFERENCES \"rocpd_string\" (\"id\") DEFERRABLE INITIALLY "
    "DEFERRED, "
    "\"category_id\" bigint NOT NULL REFERENCES \"rocpd_string\" (\"id\") DEFERRABLE INITIALLY "
    "DEFERRED, "
    "\"domain_id\" bigint NOT NULL REFERENCES \"rocpd_string\" (\"id\") DEFERRABLE INITIALLY "
    "DEFERRED, "
    "\"args_id\" bigint NOT NULL REFERENCES \"rocpd_ustring\" (\"id\") DEFERRABLE INITIALLY "
    "DEFERRED);\n"
    "CREATE TABLE IF NOT EXISTS \"rocpd_copyapi\" (\"api_ptr_id\" bigint NOT NULL PRIMARY KEY "
    "REFERENCES \"rocpd_api\" (\"id\") DEFERRABLE INITIALLY DEFERRED, \"stream\" varchar(18) NOT "
    "NULL, "
    "\"size\" integer NOT NULL, \"width\" integer NOT NULL, \"height\" integer NOT NULL, \"kind\" "
    "integer NOT NULL, "
    "\"dst\" varchar(18) NOT NULL, \"src\" varchar(18) NOT NULL, \"dstDevice\" integer NOT NULL, "
    "\"srcDevice\" integer NOT NULL, \"sync\" bool NOT NULL, \"pinned\" bool NOT NULL);\n"
    "CREATE TABLE IF NOT EXISTS \"rocpd_kernelapi\" (\"api_ptr_id\" bigint NOT NULL PRIMARY KEY "
    "REFERENCES \"rocpd_api\" (\"id\") DEFERRABLE INITIALLY DEFERRED, \"stream\" varchar(18) NOT "
    "NULL, "
    "\"gridX\" integer NOT NULL, \"gridY\" integer NOT NULL, \"gridZ\" integer NOT NULL, "
    "\"workgroupX\" integer NOT NULL, \"workgroupY\" integer NOT NULL, \"workgroupZ\" integer NOT "
    "NULL, "
    "\"groupSegmentSize\" integer NOT NULL, \"privateSegmentSize\" integer NOT NULL, "
    "\"kernelName_id\" bigint NOT NULL REFERENCES \"rocpd_string\" (\"id\") DEFERRABLE INITIALLY "
    "DEFERRED);\n"
    "CREATE TABLE IF NOT EXISTS \"rocpd_op\" (\"id\" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "
    "\"gpuId\" integer NOT NULL, \"queueId\" integer NOT NULL, \"sequenceId\" integer NOT NULL, "
    "\"start\" integer NOT NULL, \"end\" integer NOT NULL, "
    "\"description_id\" bigint NOT NULL REFERENCES \"rocpd_string\" (\"id\") DEFERRABLE INITIALLY "
    "DEFERRED, "
    "\"opType_id\" bigint NOT NULL REFERENCES \"rocpd_string\" (\"id\") DEFERRABLE INITIALLY "
    "DEFERRED);\n"
    "CREATE TABLE IF NOT EXISTS \"rocpd_api_ops\" (\"id\" integer NOT NULL PRIMARY KEY "
    "AUTOINCREMENT, "
    "\"api_id\" bigint NOT NULL REFERENCES \"rocpd_api\" (\"id\") DEFERRABLE INITIALLY DEFERRED, "
    "\"op_id\" bigint NOT NULL REFERENCES \"rocpd_op\" (\"id\") DEFERRABLE INITIALLY DEFERRED);\n"
    "CREATE TABLE IF NOT EXISTS \"rocpd_monitor\" (\"id\" integer NOT NULL PRIMARY KEY "
    "AUTOINCREMENT, "
    "\"deviceType\" varchar(16) NOT NULL, \"deviceId\" integer NOT NULL, \"monitorType\" "
    "varchar(16) NOT NULL, "
    "\"start\" integer NOT NULL, \"end\" integer NOT NULL, \"value\" varchar(255) NOT NULL);\n"
    "CREATE TABLE IF NOT EXISTS \"rocpd_counter\" (\"id\" integer NOT NULL PRIMARY KEY "
    "AUTOINCREMENT, "
    "\"value\" real NOT NULL, "
    "\"op_id\" bigint NOT NULL REFERENCES \"rocpd_op\" (\"id\") DEFERRABLE INITIALLY DEFERRED, "
    "\"name_id\" bigint NOT NULL REFERENCES \"rocpd_string\" (\"id\") DEFERRABLE INITIALLY "
    "DEFERRED);\n"
    "CREATE TABLE IF NOT EXISTS \"rocpd_stackframe\" (\"id\" integer NOT NULL PRIMARY KEY "
    "AUTOINCREMENT, "
    "\"api_ptr_id\" bigint NOT NULL REFERENCES \"rocpd_api\" (\"id\") DEFERRABLE INITIALLY "
    "DEFERRED, "
    "\"depth\" integer NOT NULL, "
    "\"name_id\" bigint NOT NULL REFERENCES \"rocpd_string\" (\"id\") DEFERRABLE INITIALLY "
    "DEFERRED);\n"
    /* metadata rows */
    "INSERT INTO \"rocpd_metadata\"(tag, value) VALUES ('schema_version', '3');\n"
    "INSERT INTO \"rocpd_metadata\"(tag, value) VALUES ('gpu_stride', '1000');\n"
    "INSERT INTO \"rocpd_metadata\"(tag, value) VALUES ('pid_stride', '10000000');\n"
    /* string references beyond rocmProfileData's well-known ones, for its
     * string clean-up (rocpd.strings, rocpd.autograd, its trim), which would
     * otherwise rename or drop the names of stack frames and counters */
    "INSERT INTO \"rocpd_metadata\"(tag, value) VALUES ('references::rocpd_string.id', "
    "'(\"rocpd_stackframe\", \"name_id\")');\n"
    "INSERT INTO \"rocpd_metadata\"(tag, value) VALUES ('references::rocpd_string.id', "
    "'(\"rocpd_counter\", \"name_id\")');\n"
    /* indexes (indexSchema.cmd) */
    "CREATE INDEX \"rocpd_strin_string_c7b9cd_idx\" ON \"rocpd_string\" (\"string\");\n"
    "CREATE INDEX \"rocpd_ustri_string_84d4a7_idx\" ON \"rocpd_ustring\" (\"string\");\n"
    /* views (utilitySchema.cmd, version 3) */
    "CREATE VIEW api AS SELECT rocpd_api.id, pid, tid, start, end, A.string AS domain, "
    "B.string AS category, C.string AS apiName, D.string AS args FROM rocpd_api "
    "INNER JOIN rocpd_string A ON A.id = rocpd_api.domain_id "
    "INNER JOIN rocpd_string B ON B.id = rocpd_api.category_id "
    "INNER JOIN rocpd_string C ON C.id = rocpd_api.apiName_id "
    "INNER JOIN rocpd_ustring D ON D.id = rocpd_api.args_id;\n"
    "CREATE VIEW op AS SELECT rocpd_op.id, gpuId, queueId, sequenceId, start, end, "
    "A.string AS description, B.string AS opType FROM rocpd_op "
    "INNER JOIN rocpd_string A ON A.id = rocpd_op.description_id "
    "INNER JOIN rocpd_string B ON B.id = rocpd_op.opType_id;\n"
    "CREATE VIEW busy AS SELECT A.gpuId, GpuTime, WallTime, GpuTime*1.0/WallTime AS Busy FROM "
    "(SELECT gpuId, sum(end-start) AS GpuTime FROM rocpd_op GROUP BY gpuId) A "
    "INNER JOIN (SELECT max(end) - min(start) AS WallTime FROM rocpd_op);\n"
    "CREATE VIEW top AS SELECT C.string AS Name, count(C.string) AS TotalCalls, "
    "sum(A.end-A.start) / 1000 AS TotalDuration_us, "
    "(sum(A.end-A.start)/count(C.string)) / 1000.0 AS Ave_us, "
    "sum(A.end-A.start) * 100.0 / (SELECT sum(A.end-A.start) FROM rocpd_op A) AS Percentage FROM "
    "(SELECT opType_id AS name_id, start, end FROM rocpd_op WHERE description_id IN "
    "(SELECT id FROM rocpd_string WHERE string='') "
    "UNION ALL SELECT description_id, start, end FROM rocpd_op WHERE description_id NOT IN "
    "(SELECT id FROM rocpd_string WHERE string='')) A "
    "JOIN rocpd_string C ON C.id = A.name_id GROUP BY Name ORDER BY TotalDuration_us DESC;\n"
    "CREATE VIEW kernel AS SELECT B.id, gpuId, queueId, sequenceId, start, end, (end-start) AS "
    "duration, "
    "stream, gridX, gridY, gridZ, workgroupX, workgroupY, workgroupZ, groupSegmentSize, "
    "privateSegmentSize, D.string AS kernelName FROM rocpd_api_ops A "
    "JOIN rocpd_op B ON B.id = A.op_id JOIN rocpd_kernelapi C ON C.api_ptr_id = A.api_id "
    "JOIN rocpd_string D ON D.id = kernelName_id;\n"
    "CREATE VIEW copy AS SELECT B.id, pid, tid, start, end, C.string AS apiName, stream, size, "
    "width, "
    "height, kind, dst, src, dstDevice, srcDevice, sync, pinned FROM rocpd_copyapi A "
    "JOIN rocpd_api B ON B.id = A.api_ptr_id JOIN rocpd_string C ON C.id = B.apiName_id;\n"
    "CREATE VIEW copyop AS SELECT B.id, gpuId, queueId, sequenceId, B.start, B.end, "
    "(B.end-B.start) AS duration, stream, size, width, height, kind, dst, src, dstDevice, "
    "srcDevice, "
    "sync, pinned, E.string AS apiName FROM rocpd_api_ops A JOIN rocpd_op B ON B.id = A.op_id "
    "JOIN rocpd_copyapi C ON C.api_ptr_id = A.api_id JOIN rocpd_api D ON D.id = A.api_id "
    "JOIN rocpd_string E ON E.id = D.apiName_id;\n"
    /* upstream's columns first, as SQLite names them (id, string, depth,
     * string:1), then readable names for the same two strings */
    "CREATE VIEW stackframe AS SELECT A.api_ptr_id AS id, C.string AS string, A.depth AS depth, "
    "D.string AS \"string:1\", C.string AS apiName, D.string AS name FROM rocpd_stackframe A "
    "JOIN rocpd_api B ON B.id = A.api_ptr_id "
    "JOIN rocpd_string C ON C.id = B.apiName_id JOIN rocpd_string D ON D.id = A.name_id;\n"
    /* the strides apply to tid and queueId too, as upstream's views do */
    "CREATE VIEW napi AS SELECT A.id, A.pid / S.stride AS node, A.pid % S.stride AS pid, "
    "A.tid % S.stride AS tid, A.start, A.end, A.domain, A.category, A.apiName, A.args FROM api A, "
    "(SELECT CAST(value AS integer) AS stride FROM rocpd_metadata WHERE tag = 'pid_stride') S;\n"
    "CREATE VIEW nop AS SELECT O.id, O.gpuId / S.stride AS node, O.gpuId % S.stride AS gpuId, "
    "O.queueId % S.stride AS queueId, O.sequenceId, O.start, O.end, O.description, O.opType "
    "FROM op O, "
    "(SELECT CAST(value AS integer) AS stride FROM rocpd_metadata WHERE tag = 'gpu_stride') S;\n";

/* rocmProfileData's optional indexes (index2Schema.cmd): `rpd index`. */
static const char rpdfile_index_sql[] =
    "CREATE UNIQUE INDEX IF NOT EXISTS \"rocpd_api_ops_api_id_op_id_e7e52317_uniq\" ON "
    "\"rocpd_api_ops\" (\"api_id\", \"op_id\");\n"
    "CREATE INDEX IF NOT EXISTS \"rocpd_api_ops_api_id_f87632ad\" ON \"rocpd_api_ops\" "
    "(\"api_id\");\n"
    "CREATE INDEX IF NOT EXISTS \"rocpd_api_ops_op_id_b35ab7c9\" ON \"rocpd_api_ops\" "
    "(\"op_id\");\n"
    "CREATE INDEX IF NOT EXISTS \"rocpd_op_description_id_c8dc8310\" ON \"rocpd_op\" "
    "(\"description_id\");\n"
    "CREATE INDEX IF NOT EXISTS \"rocpd_op_opType_id_810aaccd\" ON \"rocpd_op\" (\"opType_id\");\n"
    "CREATE INDEX IF NOT EXISTS \"rocpd_counter_op_id_0b4d4b59\" ON \"rocpd_counter\" "
    "(\"op_id\");\n"
    "CREATE INDEX IF NOT EXISTS \"rocpd_counter_name_id_92b0ed0c\" ON \"rocpd_counter\" "
    "(\"name_id\");\n"
    "CREATE INDEX IF NOT EXISTS \"rocpd_api_apiName_id_54bc0a6c\" ON \"rocpd_api\" "
    "(\"apiName_id\");\n"
    "CREATE INDEX IF NOT EXISTS \"rocpd_api_category_id_16543984\" ON \"rocpd_api\" "
    "(\"category_id\");\n"
    "CREATE INDEX IF NOT EXISTS \"rocpd_api_domain_id_081456b2\" ON \"rocpd_api\" "
    "(\"domain_id\");\n"
    "CREATE INDEX IF NOT EXISTS \"rocpd_api_args_id_6a626626\" ON \"rocpd_api\" (\"args_id\");\n"
    "CREATE INDEX IF NOT EXISTS \"rocpd_kernelapi_kernelName_id_c8efa6f0\" ON "
    "\"rocpd_kernelapi\" (\"kernelName_id\");\n";

const char *nano_rpdfile_index_sql(void) { return rpdfile_index_sql; }

const char *nano_rpdfile_schema_sql(void) { return rpdfile_schema; }

int nano_rpdfile_has_object(sqlite3 *db, const char *name) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(
      db, "SELECT 1 FROM sqlite_master WHERE type IN ('table','view') AND name=?1", -1, &st, NULL);
  if (rc != SQLITE_OK)
    return -1;
  int found = -1;
  if (sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC) == SQLITE_OK) {
    rc = sqlite3_step(st);
    found = rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
  }
  sqlite3_finalize(st);
  return found;
}

int nano_rpdfile_has_column(sqlite3 *db, const char *table, const char *column) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?1) WHERE name=?2", -1, &st, NULL) !=
      SQLITE_OK)
    return -1;
  int found = -1;
  if (sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC) == SQLITE_OK &&
      sqlite3_bind_text(st, 2, column, -1, SQLITE_STATIC) == SQLITE_OK) {
    int rc = sqlite3_step(st);
    found = rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
  }
  sqlite3_finalize(st);
  return found;
}

const char *nano_rpdfile_thread_schema_sql(void) {
  return "CREATE TABLE IF NOT EXISTS nano_thread (pid integer NOT NULL, tid integer NOT NULL, "
         "name varchar(16) NOT NULL, PRIMARY KEY (pid, tid))";
}

const char *nano_rpdfile_window_schema_sql(void) {
  return "CREATE TABLE IF NOT EXISTS nano_window (id integer NOT NULL PRIMARY KEY, "
         "session integer NOT NULL, pid integer NOT NULL, start integer NOT NULL, "
         "\"end\" integer NOT NULL)";
}

const char *nano_rpdfile_calls_schema_sql(void) {
  return "CREATE TABLE IF NOT EXISTS nano_call_summary (pid integer NOT NULL, "
         "domain_id integer NOT NULL, name_id integer NOT NULL, args_id integer NOT NULL, "
         "calls integer NOT NULL, total_ns integer NOT NULL, self_ns integer NOT NULL, "
         "min_duration_ns integer NOT NULL, PRIMARY KEY (pid, domain_id, name_id, args_id));\n"
         "CREATE VIEW IF NOT EXISTS nano_calls AS SELECT C.pid AS pid, D.string AS domain, "
         "N.string AS name, A.string AS args, C.calls AS calls, C.total_ns AS total_ns, "
         "C.self_ns AS self_ns, C.min_duration_ns AS min_duration_ns FROM nano_call_summary C "
         "JOIN rocpd_string D ON D.id = C.domain_id JOIN rocpd_string N ON N.id = C.name_id "
         "JOIN rocpd_string A ON A.id = C.args_id;\n";
}

const char *nano_rpdfile_atomics_schema_sql(void) {
  return "CREATE TABLE IF NOT EXISTS nano_atomic_site (id integer NOT NULL PRIMARY KEY, "
         "session integer NOT NULL, pid integer NOT NULL, kind_id integer NOT NULL, "
         "kind varchar(64) NOT NULL, memory_order varchar(16) NOT NULL, "
         "failure_order varchar(16) NOT NULL, size integer NOT NULL, flags integer NOT NULL, "
         "function varchar(4096) NOT NULL, file varchar(4096) NOT NULL, line integer NOT NULL, "
         "column integer NOT NULL);\n"
         "CREATE TABLE IF NOT EXISTS nano_atomic_count (site_id integer NOT NULL PRIMARY KEY "
         "REFERENCES nano_atomic_site (id), count integer NOT NULL);\n"
         "CREATE VIEW IF NOT EXISTS nano_atomic_totals AS SELECT S.kind AS kind, sum(C.count) AS "
         "count "
         "FROM nano_atomic_count C JOIN nano_atomic_site S ON S.id = C.site_id "
         "GROUP BY S.kind_id, S.kind HAVING sum(C.count) > 0 ORDER BY S.kind_id;\n"
         "CREATE TABLE IF NOT EXISTS nano_atomic_origin (site_id integer NOT NULL PRIMARY KEY "
         "REFERENCES nano_atomic_site (id), function varchar(4096) NOT NULL, "
         "file varchar(4096) NOT NULL, line integer NOT NULL, column integer NOT NULL);\n"
         "CREATE TABLE IF NOT EXISTS nano_atomic_sample (id integer PRIMARY KEY, "
         "session integer NOT NULL, "
         "pid integer NOT NULL, start integer NOT NULL, kind_id integer NOT NULL, "
         "kind varchar(64) NOT NULL, count integer NOT NULL);\n"
         "CREATE TABLE IF NOT EXISTS nano_atomic_caller (site_id integer NOT NULL "
         "REFERENCES nano_atomic_site (id), function varchar(4096) NOT NULL, "
         "file varchar(4096) NOT NULL, line integer NOT NULL, count integer NOT NULL, "
         "PRIMARY KEY (site_id, function, file, line));\n"
         "CREATE VIEW IF NOT EXISTS nano_atomic_callers AS SELECT S.kind AS kind, "
         "S.function AS library_function, S.file AS library_file, S.line AS library_line, "
         "C.function AS caller, C.file AS file, C.line AS line, sum(C.count) AS count "
         "FROM nano_atomic_caller C JOIN nano_atomic_site S ON S.id = C.site_id "
         "GROUP BY S.kind, S.function, S.file, S.line, C.function, C.file, C.line "
         "HAVING sum(C.count) > 0 ORDER BY count DESC;\n";
}

const char *nano_rpdfile_dispatch_schema_sql(void) {
  return "CREATE TABLE IF NOT EXISTS nano_dispatch (id integer NOT NULL PRIMARY KEY, "
         "session integer NOT NULL, pid integer NOT NULL, api_id integer, kernel text NOT NULL, "
         "kernel_name text NOT NULL, kernel_dispatch integer NOT NULL, backend text NOT NULL, "
         "arch text NOT NULL, device integer NOT NULL, wave_size integer NOT NULL, "
         "grid_x integer NOT NULL, grid_y integer NOT NULL, grid_z integer NOT NULL, "
         "block_x integer NOT NULL, block_y integer NOT NULL, block_z integer NOT NULL, "
         "shared_bytes integer NOT NULL, start integer NOT NULL, \"end\" integer NOT NULL, "
         "records integer NOT NULL, record_bytes integer NOT NULL, dropped integer NOT NULL, "
         "decode_errors integer NOT NULL, lost_bytes integer NOT NULL, aggregate text);\n"
         "CREATE TABLE IF NOT EXISTS nano_analysis (id integer NOT NULL PRIMARY KEY, "
         "dispatch_id integer NOT NULL REFERENCES nano_dispatch (id), analyzer text NOT NULL, "
         "report text NOT NULL);\n"
         "CREATE INDEX IF NOT EXISTS nano_analysis_dispatch ON nano_analysis (dispatch_id);\n"
         "CREATE VIEW IF NOT EXISTS nano_memory AS SELECT A.dispatch_id AS dispatch_id, "
         "D.kernel_name AS kernel, json_extract(L.value, '$.file') AS file, "
         "json_extract(L.value, '$.line') AS line, json_extract(L.value, '$.column') AS "
         "\"column\", "
         "json_extract(L.value, '$.function') AS function, json_extract(L.value, '$.kind') AS "
         "kind, "
         "json_extract(L.value, '$.space') AS space, "
         "json_extract(L.value, '$.access_bytes') AS access_bytes, "
         "json_extract(L.value, '$.executions') AS executions, "
         "json_extract(L.value, '$.accesses') AS accesses, json_extract(L.value, '$.bytes') AS "
         "bytes, "
         "json_extract(L.value, '$.line_bytes') AS line_bytes, "
         "json_extract(L.value, '$.lines_needed') AS lines_needed, "
         "json_extract(L.value, '$.lines_used') AS lines_used, "
         "json_extract(L.value, '$.sector_bytes') AS sector_bytes, "
         "json_extract(L.value, '$.sectors_needed') AS sectors_needed, "
         "json_extract(L.value, '$.sectors_used') AS sectors_used, "
         "json_extract(L.value, '$.bank_conflicts') AS bank_conflicts "
         "FROM nano_analysis A JOIN nano_dispatch D ON D.id = A.dispatch_id, "
         "json_each(A.report, '$.locations') L WHERE A.analyzer = 'MemoryAnalysis';\n"
         "CREATE VIEW IF NOT EXISTS nano_heatmap AS SELECT A.dispatch_id AS dispatch_id, "
         "D.kernel_name AS kernel, json_extract(A.report, '$.page_bytes') AS page_bytes, "
         "json_extract(P.value, '$.start') AS start, json_extract(P.value, '$.end') AS \"end\", "
         "json_extract(P.value, '$.accesses') AS accesses "
         "FROM nano_analysis A JOIN nano_dispatch D ON D.id = A.dispatch_id, "
         "json_each(A.report, '$.pages') P WHERE A.analyzer = 'Heatmap';\n"
         "CREATE VIEW IF NOT EXISTS nano_address AS SELECT A.dispatch_id AS dispatch_id, "
         "json_extract(R.value, '$[0]') AS site, json_extract(R.value, '$[1]') AS block_x, "
         "json_extract(R.value, '$[2]') AS block_y, json_extract(R.value, '$[3]') AS block_z, "
         "json_extract(R.value, '$[4]') AS wave, json_extract(R.value, '$[5]') AS lane, "
         "json_extract(R.value, '$[6]') AS thread, json_extract(R.value, '$[7]') AS address, "
         "json_extract(R.value, '$[8]') AS size "
         "FROM nano_analysis A, json_each(A.report, '$.rows') R "
         "WHERE A.analyzer = 'AddressLogger';\n"
         "CREATE VIEW IF NOT EXISTS nano_block AS SELECT A.dispatch_id AS dispatch_id, "
         "json_extract(R.value, '$[0]') AS block_x, json_extract(R.value, '$[1]') AS block_y, "
         "json_extract(R.value, '$[2]') AS block_z, json_extract(R.value, '$[3]') AS unit, "
         "json_extract(R.value, '$[4]') AS start, json_extract(R.value, '$[5]') AS \"end\" "
         "FROM nano_analysis A, json_each(A.report, '$.rows') R "
         "WHERE A.analyzer = 'KernelTimeline';\n";
}

int nano_rpdfile_dispatch_upgrade(sqlite3 *db, const char *path, char *err, size_t errlen) {
  int has = nano_rpdfile_has_column(db, "nano_dispatch", "aggregate");
  if (has < 0) {
    rpdfile_err(err, errlen, path, "reading nano_dispatch's columns: %s", sqlite3_errmsg(db));
    return NANO_RPDFILE_ESQLITE;
  }
  return has ? 0
             : nano_rpdfile_exec(db, path, "adding nano_dispatch.aggregate",
                                 "ALTER TABLE nano_dispatch ADD COLUMN aggregate text", err,
                                 errlen);
}

void rpdfile_err(char *err, size_t errlen, const char *path, const char *fmt, ...) {
  if (!err || errlen == 0)
    return;
  int n = snprintf(err, errlen, "%s: ", path);
  if (n < 0 || (size_t)n >= errlen)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
  va_end(ap);
}

int nano_rpdfile_exec(sqlite3 *db, const char *path, const char *what, const char *sql, char *err,
                      size_t errlen) {
  char *msg = NULL;
  int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
  if (rc == SQLITE_OK)
    return 0;
  rpdfile_err(err, errlen, path, "%s: %s", what, msg ? msg : sqlite3_errstr(rc));
  sqlite3_free(msg);
  return NANO_RPDFILE_ESQLITE;
}

/* The error code and message for SQLite result rc of a query on path:
 * "not an SQLite database" for SQLITE_NOTADB, else SQLite's message. */
static int rpdfile_query_err(sqlite3 *db, const char *path, int rc, char *err, size_t errlen) {
  if (rc == SQLITE_NOTADB) {
    rpdfile_err(err, errlen, path, "not an SQLite database");
    return NANO_RPDFILE_ENOTDB;
  }
  rpdfile_err(err, errlen, path, "%s", sqlite3_errmsg(db));
  return NANO_RPDFILE_ESQLITE;
}

/* Runs a query returning one integer (or none). Returns 1 with *out set when a
 * row came back, 0 for no row, negative on error (message in err). */
static int rpdfile_query_int(sqlite3 *db, const char *path, const char *sql, int64_t *out,
                             char *err, size_t errlen) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  if (rc != SQLITE_OK) {
    int code = rpdfile_query_err(db, path, rc, err, errlen);
    sqlite3_finalize(st);
    return code;
  }
  rc = sqlite3_step(st);
  int got = 0;
  if (rc == SQLITE_ROW) {
    *out = sqlite3_column_int64(st, 0);
    got = 1;
  } else if (rc != SQLITE_DONE) {
    int code = rpdfile_query_err(db, path, rc, err, errlen);
    sqlite3_finalize(st);
    return code;
  }
  sqlite3_finalize(st);
  return got;
}

int nano_rpdfile_check(sqlite3 *db, const char *path, int *version, char *err, size_t errlen) {
  int64_t n = 0;
  *version = 0;
  int rc = rpdfile_query_int(db, path, "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
                             &n, err, errlen);
  if (rc < 0)
    return rc;
  if (n == 0) {
    rpdfile_err(err, errlen, path, "an SQLite database but not an RPD trace (it has no tables)");
    return NANO_RPDFILE_ENOTRPD;
  }
  rc = rpdfile_query_int(db, path,
                         "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
                         "name IN ('rocpd_metadata', 'rocpd_api', 'rocpd_string', 'rocpd_op')",
                         &n, err, errlen);
  if (rc < 0)
    return rc;
  if (n != 4) {
    rpdfile_err(err, errlen, path,
                "an SQLite database but not an RPD trace (no rocpd_metadata, rocpd_api, "
                "rocpd_string and rocpd_op tables)");
    return NANO_RPDFILE_ENOTRPD;
  }
  int64_t v = 0;
  rc = rpdfile_query_int(db, path,
                         "SELECT CAST(value AS integer) FROM rocpd_metadata "
                         "WHERE tag = 'schema_version' ORDER BY id DESC LIMIT 1",
                         &v, err, errlen);
  if (rc < 0)
    return rc;
  if (rc == 0)
    v = 2;
  *version = (int)v;
  if (v > NANO_RPD_SCHEMA_VERSION) {
    rpdfile_err(err, errlen, path,
                "RPD schema version %lld is newer than this build reads (up to %d)", (long long)v,
                NANO_RPD_SCHEMA_VERSION);
    return NANO_RPDFILE_ENEWER;
  }
  if (v < NANO_RPD_SCHEMA_MIN_READ) {
    rpdfile_err(err, errlen, path,
                "RPD schema version %lld is older than this build reads (%d to %d)", (long long)v,
                NANO_RPD_SCHEMA_MIN_READ, NANO_RPD_SCHEMA_VERSION);
    return NANO_RPDFILE_EOLDER;
  }
  return 0;
}

/* Looks at the file itself before SQLite does: 1 = missing, 2 = empty,
 * 0 = starts with the SQLite header, or an error (not SQLite, unreadable). */
static int rpdfile_probe(const char *path, char *err, size_t errlen) {
  /* O_NONBLOCK: a FIFO there must not stop the caller (a truncating
   * recording probes in rpdstart, on the program's thread) */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT)
      return 1;
    rpdfile_err(err, errlen, path, "cannot open: %s", strerror(errno));
    return NANO_RPDFILE_EIO;
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    rpdfile_err(err, errlen, path, "cannot stat: %s", strerror(errno));
    close(fd);
    return NANO_RPDFILE_EIO;
  }
  if (S_ISDIR(sb.st_mode)) {
    rpdfile_err(err, errlen, path, "is a directory, not an RPD file");
    close(fd);
    return NANO_RPDFILE_EIO;
  }
  if (!S_ISREG(sb.st_mode)) {
    rpdfile_err(err, errlen, path, "is not a regular file, not an RPD file");
    close(fd);
    return NANO_RPDFILE_EIO;
  }
  if (sb.st_size == 0) {
    close(fd);
    return 2;
  }
  char head[16];
  ssize_t got = read(fd, head, sizeof head);
  int saved = errno;
  close(fd);
  if (got < 0) {
    rpdfile_err(err, errlen, path, "cannot read: %s", strerror(saved));
    return NANO_RPDFILE_EIO;
  }
  if (got < (ssize_t)sizeof head || memcmp(head, "SQLite format 3", 16) != 0) {
    rpdfile_err(err, errlen, path, "not an SQLite database");
    return NANO_RPDFILE_ENOTDB;
  }
  return 0;
}

static void (*_Atomic rpdfile_busy_hook)(void);
static _Atomic int rpdfile_busy_said; /* the once-per-process message is out */
/* this thread's bound on a wait (ms); -1: NANO_RPDFILE_BUSY_MS */
static _Thread_local int rpdfile_busy_ms = -1;

void nano_rpdfile_on_busy(void (*hook)(void)) { atomic_store(&rpdfile_busy_hook, hook); }

int nano_rpdfile_busy_bound(int ms) {
  int old = rpdfile_busy_ms;
  rpdfile_busy_ms = ms;
  return old;
}

/* SQLite's busy handler (ctx: the connection): sleeps 1, 2, 5, 10, 15, 20, 25,
 * 25, 25, 50, 50, then 100 ms at a time, as SQLite's own timeout does, until
 * NANO_RPDFILE_BUSY_MS (or this thread's bound) have passed; says once per
 * process that it waits, and
 * on which file. Returns 1 to try again, 0 to give up (SQLITE_BUSY). */
static int rpdfile_busy(void *ctx, int count) {
  static const int delays[] = {1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100};
  enum { NDELAYS = sizeof delays / sizeof delays[0] };
  int waited = 0;
  for (int i = 0; i < count && i < NDELAYS; i++)
    waited += delays[i];
  if (count > NDELAYS)
    waited += (count - NDELAYS) * delays[NDELAYS - 1];
  if (waited >= (rpdfile_busy_ms < 0 ? NANO_RPDFILE_BUSY_MS : rpdfile_busy_ms))
    return 0;
  void (*hook)(void) = atomic_load(&rpdfile_busy_hook);
  if (waited >= NANO_RPDFILE_BUSY_SAY_MS && hook)
    hook();
  if (waited >= NANO_RPDFILE_BUSY_SAY_MS && !atomic_exchange(&rpdfile_busy_said, 1)) {
    const char *path = sqlite3_db_filename((sqlite3 *)ctx, "main");
    fprintf(stderr, "nanoprobe: %s: waiting for its lock, held by another process (at most %d s)\n",
            path && *path ? path : "trace file", NANO_RPDFILE_BUSY_MS / 1000);
  }
  int ms = delays[count < NDELAYS ? count : NDELAYS - 1];
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    continue;
  return 1;
}

/* Opens a connection with the busy handler set. Connections are opened
 * without SQLite's per-connection mutex (SQLITE_OPEN_NOMUTEX): each is used by
 * one thread at a time (the tracer's writer works under its own lock; the
 * tools are single-threaded), and the mutex cost a lock/unlock pair per
 * bind and step on the writer's hot loop. */
static int rpdfile_connect(const char *path, int flags, sqlite3 **db, char *err, size_t errlen) {
  *db = NULL;
  int rc = sqlite3_open_v2(path, db, flags | SQLITE_OPEN_NOMUTEX, NULL);
  if (rc != SQLITE_OK) {
    rpdfile_err(err, errlen, path, "cannot open: %s",
                *db ? sqlite3_errmsg(*db) : sqlite3_errstr(rc));
    sqlite3_close(*db);
    *db = NULL;
    return NANO_RPDFILE_ESQLITE;
  }
  rc = sqlite3_busy_handler(*db, rpdfile_busy, *db);
  if (rc != SQLITE_OK) {
    rpdfile_err(err, errlen, path, "cannot set the busy handler: %s", sqlite3_errmsg(*db));
    sqlite3_close(*db);
    *db = NULL;
    return NANO_RPDFILE_ESQLITE;
  }
  return 0;
}

/* Puts the file in rollback-journal mode (journal_mode=DELETE) when db is its
 * only connection. Never waits: with another connection open (a concurrent
 * appender or reader of a WAL-mode file) the switch fails at once and the file
 * stays in WAL mode, which works the same, only slower to write; the last
 * connection to close switches it. Restores the busy handler. */
static void rpdfile_rollback_mode(sqlite3 *db) {
  if (sqlite3_busy_handler(db, NULL, NULL) != SQLITE_OK)
    return;
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, "PRAGMA journal_mode=DELETE", -1, &st, NULL) == SQLITE_OK)
    (void)sqlite3_step(st); /* SQLITE_BUSY or "wal" when others have it open: fine */
  sqlite3_finalize(st);
  (void)sqlite3_busy_handler(db, rpdfile_busy, db); /* cannot fail on an open connection */
}

int nano_rpdfile_remove(const char *path, char *err, size_t errlen) {
  int kind = rpdfile_probe(path, err, errlen);
  if (kind != 0)
    return kind < 0 ? kind : 0;
  if (unlink(path) != 0) {
    rpdfile_err(err, errlen, path, "cannot remove for truncation: %s", strerror(errno));
    return NANO_RPDFILE_EIO;
  }
  static const char *const sides[] = {"-wal", "-shm", "-journal"};
  for (size_t i = 0; i < sizeof sides / sizeof sides[0]; i++) {
    char side[4096];
    snprintf(side, sizeof side, "%s%s", path, sides[i]);
    if (unlink(side) != 0 && errno != ENOENT) {
      rpdfile_err(err, errlen, side, "cannot remove for truncation: %s", strerror(errno));
      return NANO_RPDFILE_EIO;
    }
  }
  return 0;
}

/* Makes the new trace `path` appear whole: its schema is written into a
 * temporary beside it, which is then hard-linked to path (never over a file
 * another process made meanwhile: that one stands). A kill while the schema
 * is written leaves the temporary, not an empty file at path that readers
 * would refuse. The temporary is private until linked, so it needs no
 * journal; it is synced as the trace will be (`sync`, SQLite's synchronous
 * setting). Where any step fails (no hard links on the file system, a
 * folder that cannot be written) nothing is left and the caller creates the
 * file in place, which names the failure. */
static void rpdfile_create_whole(const char *path, const char *sync) {
  char err[NANO_RPDFILE_ERRLEN], *tmp = NULL, pragmas[96];
  int fd = nano_outfile_temp(path, &tmp, err, sizeof err);
  if (fd < 0)
    return;
  close(fd);
  snprintf(pragmas, sizeof pragmas, "PRAGMA journal_mode=OFF; PRAGMA synchronous=%s", sync);
  sqlite3 *d = NULL;
  int ok = rpdfile_connect(tmp, SQLITE_OPEN_READWRITE, &d, err, sizeof err) == 0 &&
           nano_rpdfile_exec(d, tmp, "schema", pragmas, err, sizeof err) == 0 &&
           nano_rpdfile_exec(d, tmp, "schema", "BEGIN", err, sizeof err) == 0 &&
           nano_rpdfile_exec(d, tmp, "schema", rpdfile_schema, err, sizeof err) == 0 &&
           nano_rpdfile_exec(d, tmp, "schema", "COMMIT", err, sizeof err) == 0;
  if (d && sqlite3_close(d) != SQLITE_OK)
    ok = 0;
  if (ok && link(tmp, path) != 0 && errno != EEXIST)
    ok = 0;
  unlink(tmp);
  free(tmp);
}

int nano_rpdfile_open_write(const char *path, int truncate, enum nano_rpdfile_sync sync,
                            sqlite3 **db, char *err, size_t errlen) {
  static const char *const sync_names[] = {
      [NANO_RPDFILE_SYNC_OFF] = "OFF",
      [NANO_RPDFILE_SYNC_NORMAL] = "NORMAL",
      [NANO_RPDFILE_SYNC_FULL] = "FULL",
  };
  *db = NULL;
  if ((unsigned)sync > NANO_RPDFILE_SYNC_FULL) {
    rpdfile_err(err, errlen, path, "no such synchronous setting: %d", (int)sync);
    return NANO_RPDFILE_ESQLITE;
  }
  if (truncate) {
    int rc = nano_rpdfile_remove(path, err, errlen);
    if (rc < 0)
      return rc;
  }
  int kind = rpdfile_probe(path, err, errlen);
  if (kind < 0)
    return kind;
  if (kind == 1)
    rpdfile_create_whole(path, sync_names[sync]);
  sqlite3 *d = NULL;
  int rc = rpdfile_connect(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &d, err, errlen);
  if (rc < 0)
    return rc;
  char settings[128];
  snprintf(settings, sizeof settings,
           "PRAGMA synchronous=%s; PRAGMA cache_size=-32768; PRAGMA wal_autocheckpoint=10000",
           sync_names[sync]);
  rc = nano_rpdfile_exec(d, path, "cannot set synchronous, cache size and checkpoint interval",
                         settings, err, errlen);
  if (rc < 0) {
    sqlite3_close(d);
    return rc;
  }

  /* Schema creation and the check happen under one write transaction, so
   * two processes that find the file empty create the schema once. Not an
   * exclusive one: a reader of the trace would hold its start (and the
   * writer's start holds its records). */
  rc = nano_rpdfile_exec(d, path, "cannot lock", "BEGIN IMMEDIATE", err, errlen);
  if (rc < 0) {
    int64_t dummy;
    if (rpdfile_query_int(d, path, "SELECT 1", &dummy, NULL, 0) == NANO_RPDFILE_ENOTDB)
      rpdfile_err(err, errlen, path, "not an SQLite database");
    sqlite3_close(d);
    return rc;
  }
  int64_t ntables = -1;
  rc = rpdfile_query_int(d, path, "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
                         &ntables, err, errlen);
  if (rc >= 0 && ntables == 0) {
    rc = nano_rpdfile_exec(d, path, "cannot create the RPD schema", rpdfile_schema, err, errlen);
  } else if (rc >= 0) {
    int version = 0;
    rc = nano_rpdfile_check(d, path, &version, err, errlen);
    if (rc == 0 && version != NANO_RPD_SCHEMA_VERSION) {
      rpdfile_err(err, errlen, path,
                  "RPD schema version %d: nanoprobe appends only to version %d files", version,
                  NANO_RPD_SCHEMA_VERSION);
      rc = NANO_RPDFILE_EOLDER;
    }
  }
  if (rc < 0) {
    sqlite3_exec(d, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(d);
    return rc;
  }
  /* A check that wrote nothing ends with ROLLBACK: even an empty COMMIT
   * would wait for the file's readers. */
  rc = ntables == 0
           ? nano_rpdfile_exec(d, path, "cannot commit the schema", "COMMIT", err, errlen)
           : nano_rpdfile_exec(d, path, "cannot end the schema check", "ROLLBACK", err, errlen);
  if (rc < 0) {
    sqlite3_close(d);
    return rc;
  }
  /* A rollback journal, not WAL: an append journals only the few pages at the
   * right edge of each B-tree, where WAL writes every page twice (the WAL,
   * then the checkpoint) and checksums it; writing a Python call trace took
   * 12 % less wall time. A file left in WAL mode (a writer killed while
   * another process had it open) is switched back when nobody else has it. */
  rpdfile_rollback_mode(d);
  *db = d;
  return 0;
}

int nano_rpdfile_open_read(const char *path, int readonly, sqlite3 **db, int *version, char *err,
                           size_t errlen) {
  *db = NULL;
  *version = 0;
  int kind = rpdfile_probe(path, err, errlen);
  if (kind < 0)
    return kind;
  if (kind == 1) {
    rpdfile_err(err, errlen, path, "no such file");
    return NANO_RPDFILE_ENOENT;
  }
  if (kind == 2) {
    rpdfile_err(err, errlen, path, "an empty file, not an RPD trace");
    return NANO_RPDFILE_ENOTRPD;
  }
  /* A read-only connection that is the last to close a WAL-mode file cannot
   * remove the side files (-wal, -shm) it made, so every `rpd info` would
   * leave two empty files next to the trace. Where this process may write the
   * file and its folder, readers use a read-write connection in query_only
   * mode instead: it reads the same, writes nothing, and removes them. */
  int writable = 0;
  if (readonly) {
    char *copy = strdup(path);
    if (!copy) {
      rpdfile_err(err, errlen, path, "out of memory");
      return NANO_RPDFILE_ESQLITE;
    }
    writable = access(path, W_OK) == 0 && access(dirname(copy), W_OK) == 0;
    free(copy);
  }
  sqlite3 *d = NULL;
  int rc = rpdfile_connect(
      path, readonly && !writable ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE, &d, err, errlen);
  if (rc < 0)
    return rc;
  rc = nano_rpdfile_check(d, path, version, err, errlen);
  if (rc < 0) {
    sqlite3_close(d);
    return rc;
  }
  if (!readonly || writable) {
    if (*version == NANO_RPD_SCHEMA_VERSION)
      nano_rpdfile_fold_say(d, path, NANO_RPDFILE_FOLD_WAIT_MS);
  } else if ((rc = nano_rpdfile_side_count(path)) > 0) {
    fprintf(stderr,
            "nanoprobe: %s: %d side file%s of rows written while another process held it "
            "cannot be folded in (this process may not write the trace): their rows are "
            "missing here\n",
            path, rc, rc == 1 ? "" : "s");
  }
  if (readonly && writable) {
    rc = nano_rpdfile_exec(d, path, "cannot make the connection read-only", "PRAGMA query_only=1",
                           err, errlen);
    if (rc < 0) {
      sqlite3_close(d);
      return rc;
    }
  }
  *db = d;
  return 0;
}

int nano_rpdfile_begin_session(sqlite3 *db, const char *path, int64_t *session, char *err,
                               size_t errlen) {
  *session = 0;
  int own = sqlite3_get_autocommit(db); /* no transaction open: take one */
  int rc =
      own ? nano_rpdfile_exec(db, path, "cannot lock for a session", "BEGIN EXCLUSIVE", err, errlen)
          : 0;
  if (rc < 0)
    return rc;
  int64_t next = 0;
  rc = rpdfile_query_int(
      db, path, "SELECT CAST(value AS integer) FROM rocpd_metadata WHERE tag = 'session_count'",
      &next, err, errlen);
  char sql[256];
  /* sessions that side files not folded in yet hold are taken */
  int64_t side = rc >= 0 ? nano_rpdfile_side_next_session(path) : 0;
  if (side > next)
    next = side;
  if (rc == 1)
    snprintf(sql, sizeof sql,
             "UPDATE rocpd_metadata SET value = '%lld' WHERE tag = 'session_count';"
             "INSERT INTO rocpd_metadata(tag, value) VALUES ('session', 'id=%lld pid=%ld');",
             (long long)next + 1, (long long)next, (long)getpid());
  else if (rc == 0)
    snprintf(sql, sizeof sql,
             "INSERT INTO rocpd_metadata(tag, value) VALUES ('session_count', '%lld');"
             "INSERT INTO rocpd_metadata(tag, value) VALUES ('session', 'id=%lld pid=%ld');",
             (long long)next + 1, (long long)next, (long)getpid());
  if (rc >= 0)
    rc = nano_rpdfile_exec(db, path, "cannot record the session", sql, err, errlen);
  if (rc >= 0 && own)
    rc = nano_rpdfile_exec(db, path, "cannot commit the session", "COMMIT", err, errlen);
  if (rc < 0) {
    if (own)
      sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
  }
  *session = next;
  return 0;
}

/* Whether db may write: not opened read-only, not in query_only mode. */
static int rpdfile_writer(sqlite3 *db) {
  if (sqlite3_db_readonly(db, "main") != 0)
    return 0;
  sqlite3_stmt *st = NULL;
  int query_only = 1; /* unknown: treat as a reader */
  if (sqlite3_prepare_v2(db, "PRAGMA query_only", -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    query_only = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  return !query_only;
}

int nano_rpdfile_close(sqlite3 *db, const char *path, char *err, size_t errlen) {
  if (!db)
    return 0;
  int ret = 0;
  /* A checkpoint that finds other connections busy is not an error: the last
   * connection to close folds the WAL in. */
  int rc = sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
  if (rc != SQLITE_OK && rc != SQLITE_BUSY && rc != SQLITE_LOCKED) {
    rpdfile_err(err, errlen, path, "checkpoint failed: %s", sqlite3_errmsg(db));
    ret = NANO_RPDFILE_ESQLITE;
  }
  if (ret == 0 && rpdfile_writer(db))
    rpdfile_rollback_mode(db);
  rc = sqlite3_close(db);
  if (rc != SQLITE_OK) {
    rpdfile_err(err, errlen, path, "close failed: %s", sqlite3_errstr(rc));
    sqlite3_close_v2(db);
    ret = NANO_RPDFILE_ESQLITE;
  }
  return ret;
}
