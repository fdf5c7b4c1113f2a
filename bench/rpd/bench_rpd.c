/*
 * bench_rpd.c: tracer benchmarks (never run by ctest; see run.sh).
 *
 *   bench_rpd hotpath PAIRS     time per range push+pop pair on the hot path
 *                               (timed batches that fit the thread's ring;
 *                               the drains between them are not timed):
 *                               NANO_ZONE with a literal, rpd_rangePush with
 *                               a string, rpd_rangePushInterned; and a bare
 *                               pair of reads of each clock for reference
 *   bench_rpd persist ROWS FILE rows persisted per second: ROWS ranges recorded
 *                               and flushed (first push to flush return),
 *                               against a bare prepared-statement bulk insert
 *                               of the same rows (rocpd_ustring + rocpd_api)
 *                               into a fresh RPD file, in this run: one-row
 *                               statements, and 32-row statements (what the
 *                               writer used before its INSERT ... SELECT from
 *                               queue virtual tables)
 *
 * Output lines "name value unit"; run.sh turns them into ratios.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nano/rpdfile.h"
#include "rpd.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#if defined(__x86_64__)
#include <x86intrin.h>
static inline int64_t tsc_read(void) { return (int64_t)__rdtsc(); }
#else
static inline int64_t tsc_read(void) { return rpd_now(); }
#endif

static int hotpath(long pairs) {
  /* Batches of 4096 pairs (8192 records) fit the default 16384-slot ring, so
   * a timed batch never waits for the writer; the flush between batches
   * (the writer empties the ring) is not timed. */
  const long batch = 4096;
  double t_zone = 0, t_str = 0, t_int = 0, t_tsc = 0, t_mono = 0;
  long done = 0;
  uint32_t h = rpd_intern("zone");
  char name[8] = "zone";
  volatile int64_t sink = 0;
  while (done < pairs) {
    double t0 = now_s();
    for (long i = 0; i < batch; i++) {
      NANO_ZONE("zone");
    }
    double t1 = now_s();
    if (rpdflush() != 0)
      return 1;
    double t2 = now_s();
    for (long i = 0; i < batch; i++) {
      rpd_rangePush(NULL, name, NULL);
      rpd_rangePop();
    }
    double t3 = now_s();
    if (rpdflush() != 0)
      return 1;
    double t4 = now_s();
    for (long i = 0; i < batch; i++) {
      rpd_rangePushInterned(0, h, 0);
      rpd_rangePop();
    }
    double t5 = now_s();
    if (rpdflush() != 0)
      return 1;
    double t6 = now_s();
    for (long i = 0; i < batch; i++)
      sink += tsc_read() + tsc_read();
    double t7 = now_s();
    for (long i = 0; i < batch; i++)
      sink += rpd_now() + rpd_now();
    double t8 = now_s();
    t_zone += t1 - t0;
    t_str += t3 - t2;
    t_int += t5 - t4;
    t_tsc += t7 - t6;
    t_mono += t8 - t7;
    done += batch;
  }
  printf("pair_zone_ns %.2f ns\n", t_zone / done * 1e9);
  printf("pair_string_ns %.2f ns\n", t_str / done * 1e9);
  printf("pair_interned_ns %.2f ns\n", t_int / done * 1e9);
  printf("two_tsc_reads_ns %.2f ns\n", t_tsc / done * 1e9);
  printf("two_monotonic_reads_ns %.2f ns\n", t_mono / done * 1e9);
  return 0;
}

/* A bare bulk insert of the rows the tracer writes for `rows` ranges: one
 * rocpd_ustring row (the text) and one rocpd_api row each, prepared
 * statements of `multi` rows each (1: one-row statements), batched
 * transactions of 100000 ranges. Returns the seconds taken, or -1. */
static double bare_insert(const char *path, long rows, int multi) {
  char err[NANO_RPDFILE_ERRLEN];
  sqlite3 *db;
  unlink(path);
  char side[4200];
  snprintf(side, sizeof side, "%s-wal", path);
  unlink(side);
  if (nano_rpdfile_open_write(path, 0, NANO_RPDFILE_SYNC_OFF, &db, err, sizeof err) != 0) {
    fprintf(stderr, "%s\n", err);
    return -1;
  }
  char sql_us[8192], sql_api[16384];
  int n1 = snprintf(sql_us, sizeof sql_us, "INSERT INTO rocpd_ustring(id, string) VALUES (?,?)");
  int n2 = snprintf(sql_api, sizeof sql_api,
                    "INSERT INTO rocpd_api(id, pid, tid, start, end, apiName_id, category_id, "
                    "domain_id, args_id) VALUES (?,?,?,?,?,?,?,?,?)");
  for (int i = 1; i < multi; i++) {
    n1 += snprintf(sql_us + n1, sizeof sql_us - n1, ",(?,?)");
    n2 += snprintf(sql_api + n2, sizeof sql_api - n2, ",(?,?,?,?,?,?,?,?,?)");
  }
  sqlite3_stmt *us, *api;
  if (sqlite3_prepare_v2(db, sql_us, -1, &us, NULL) ||
      sqlite3_prepare_v2(db, sql_api, -1, &api, NULL)) {
    fprintf(stderr, "prepare: %s\n", sqlite3_errmsg(db));
    return -1;
  }
  double t0 = now_s();
  static char text[64][32];
  int pid = getpid();
  if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
    return -1;
  for (long i = 0; i + multi <= rows; i += multi) {
    int bound = SQLITE_OK;
    for (int r = 0; r < multi; r++) {
      long j = i + r;
      snprintf(text[r], sizeof text[r], "r%ld", j);
      bound |= sqlite3_bind_int64(us, 2 * r + 1, j + 2) |
               sqlite3_bind_text(us, 2 * r + 2, text[r], -1, SQLITE_STATIC);
      int64_t t = (int64_t)j * 100;
      int b = 9 * r;
      bound |= sqlite3_bind_int64(api, b + 1, j + 1) | sqlite3_bind_int(api, b + 2, pid) |
               sqlite3_bind_int(api, b + 3, pid) | sqlite3_bind_int64(api, b + 4, t) |
               sqlite3_bind_int64(api, b + 5, t + 50) | sqlite3_bind_int64(api, b + 6, 2) |
               sqlite3_bind_int64(api, b + 7, 1) | sqlite3_bind_int64(api, b + 8, 2) |
               sqlite3_bind_int64(api, b + 9, j + 2);
    }
    if (bound != SQLITE_OK || sqlite3_step(us) != SQLITE_DONE || sqlite3_step(api) != SQLITE_DONE) {
      fprintf(stderr, "insert: %s\n", sqlite3_errmsg(db));
      return -1;
    }
    sqlite3_reset(us);
    sqlite3_reset(api);
    if ((i + multi) % 100000 < (long)multi &&
        sqlite3_exec(db, "COMMIT; BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
      return -1;
  }
  if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
    return -1;
  double t1 = now_s();
  sqlite3_finalize(us);
  sqlite3_finalize(api);
  nano_rpdfile_close(db, path, err, sizeof err);
  return t1 - t0;
}

static int persist(long rows, const char *bare_path) {
  char text[32];
  rows -= rows % 32;
  double t0 = now_s();
  for (long i = 0; i < rows; i++) {
    snprintf(text, sizeof text, "r%ld", i);
    rpd_rangePush(NULL, text, NULL);
    rpd_rangePop();
  }
  if (rpdflush() != 0)
    return 1;
  double t1 = now_s();
  double bare = bare_insert(bare_path, rows, 1);
  double bare32 = bare_insert(bare_path, rows, 32);
  if (bare <= 0 || bare32 <= 0)
    return 1;
  printf("tracer_rows_per_s %.0f rows/s\n", rows / (t1 - t0));
  printf("bare_rows_per_s %.0f rows/s\n", rows / bare);
  printf("bare_multirow_rows_per_s %.0f rows/s\n", rows / bare32);
  printf("persist_ratio %.3f x\n", bare / (t1 - t0));
  printf("persist_ratio_multirow %.3f x\n", bare32 / (t1 - t0));
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 3 && strcmp(argv[1], "hotpath") == 0)
    return hotpath(atol(argv[2]));
  if (argc >= 4 && strcmp(argv[1], "persist") == 0)
    return persist(atol(argv[2]), argv[3]);
  fprintf(stderr, "usage: %s hotpath PAIRS | persist ROWS BAREFILE\n", argv[0]);
  return 2;
}
