/*
 * analysis_bench.c: `analysis_bench RPD TRACE REPEATS`: times, interleaved,
 * REPEATS times each on fresh copies of TRACE:
 *   read      one ordered read of the calls (SELECT id, pid, tid, start, end
 *             FROM rocpd_api ORDER BY pid, tid, start, stepping every row);
 *   floor     one read of the same columns in the table's own order (no
 *             sort: the least a reader of every call pays) and one of the
 *             calls' op durations (rocpd_api_ops joined with rocpd_op, which
 *             gpu_time sums), then the rows `rpd callstack` writes, inserted
 *             into a table of ext_callstack's schema through a prepared
 *             200-row INSERT in one transaction, committed: what any
 *             implementation that reads the calls and writes
 *             rocmProfileData's table pays, before it orders or walks
 *             anything;
 *   callstack `RPD callstack`;
 * and prints the best and median wall and CPU times and the ratios of
 * callstack to read and to floor, and of floor to read (CPU time is the
 * steadier figure on a shared machine). Exit 0, or 1 with a message.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

/* Monotonic seconds. */
static double ab_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds (user + system) of this process (who = RUSAGE_SELF) or of its
 * waited-for children (RUSAGE_CHILDREN). */
static double ab_cpu(int who) {
  struct rusage ru;
  if (getrusage(who, &ru) != 0)
    return 0;
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* The trace at path opened read-only with sql prepared in *st; 0, or -1
 * after saying why (nothing left open). */
static int ab_query(const char *path, const char *sql, sqlite3 **db, sqlite3_stmt **st) {
  *db = NULL;
  *st = NULL;
  if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
      sqlite3_prepare_v2(*db, sql, -1, st, NULL) == SQLITE_OK)
    return 0;
  fprintf(stderr, "analysis_bench: %s: %s\n", path, sqlite3_errmsg(*db));
  sqlite3_close(*db);
  return -1;
}

/* The calls' columns the walk needs, ordered as the walk (the baseline) or
 * in the table's order (the floor's read); the calls' op durations. */
static const char ab_calls_ordered[] =
    "SELECT id, pid, tid, start, end FROM rocpd_api ORDER BY pid, tid, start";
static const char ab_calls[] = "SELECT id, pid, tid, start, end FROM rocpd_api";
static const char ab_op_durations[] =
    "SELECT A.api_id, B.end - B.start FROM rocpd_api_ops A JOIN rocpd_op B ON B.id = A.op_id";

/* One pass of sql over the trace at path, every column of every row read
 * as a real consumer would. Returns seconds or -1; *rows gets the rows,
 * *cpu the CPU seconds. */
static double ab_read(const char *path, const char *sql, long *rows, double *cpu) {
  sqlite3 *db;
  sqlite3_stmt *st;
  double c0 = ab_cpu(RUSAGE_SELF);
  double t0 = ab_now();
  if (ab_query(path, sql, &db, &st) != 0)
    return -1;
  long n = 0;
  int cols = sqlite3_column_count(st);
  volatile long long sink = 0;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    for (int i = 0; i < cols; i++)
      sink += sqlite3_column_int64(st, i);
    n++;
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  double t = ab_now() - t0;
  *cpu = ab_cpu(RUSAGE_SELF) - c0;
  if (rc != SQLITE_DONE) {
    fprintf(stderr, "analysis_bench: reading %s failed\n", path);
    return -1;
  }
  *rows = n;
  return t;
}

/* Copies src to dst (cp). 0 or -1. */
static int ab_copy(const char *src, const char *dst) {
  FILE *in = fopen(src, "rb"), *out = in ? fopen(dst, "wb") : NULL;
  char buf[1 << 16];
  size_t n;
  int ok = in && out;
  while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0)
    ok = fwrite(buf, 1, n, out) == n;
  if (in)
    fclose(in);
  if (out && fclose(out) != 0)
    ok = 0;
  return ok ? 0 : -1;
}

/* Runs `rpd callstack path` with stdout to /dev/null; seconds or -1; *cpu
 * gets its CPU seconds. */
static double ab_callstack(const char *rpd, const char *path, double *cpu) {
  double c0 = ab_cpu(RUSAGE_CHILDREN);
  double t0 = ab_now();
  pid_t pid = fork();
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stdout))
      _exit(127);
    execl(rpd, rpd, "callstack", path, (char *)NULL);
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    fprintf(stderr, "analysis_bench: %s callstack %s failed\n", rpd, path);
    return -1;
  }
  double t = ab_now() - t0;
  *cpu = ab_cpu(RUSAGE_CHILDREN) - c0;
  return t;
}

/* The rows `rpd callstack` wrote into path's ext_callstack (parent, child,
 * depth, cpu_time, gpu_time), *n of them; NULL on failure. */
static long long *ab_rows_of(const char *path, size_t *n) {
  sqlite3 *db;
  sqlite3_stmt *st;
  long long *rows = NULL;
  size_t cap = 0;
  *n = 0;
  if (ab_query(path, "SELECT parent_id, child_id, depth, cpu_time, gpu_time FROM ext_callstack",
               &db, &st) != 0)
    return NULL;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (*n == cap) {
      long long *grown = realloc(rows, (cap = cap ? 2 * cap : 1 << 16) * 5 * sizeof *rows);
      if (!grown)
        break;
      rows = grown;
    }
    for (int i = 0; i < 5; i++)
      rows[*n * 5 + i] = sqlite3_column_int64(st, i);
    (*n)++;
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  if (rc != SQLITE_DONE) {
    fprintf(stderr, "analysis_bench: reading ext_callstack of %s failed\n", path);
    free(rows);
    return NULL;
  }
  return rows;
}

/* Rows per INSERT of the floor, as rpd callstack batches them. */
#define AB_BATCH 200

/* The floor (file comment) on path, a fresh copy of the trace: seconds or
 * -1; *cpu gets its CPU seconds. */
static double ab_floor(const char *path, const long long *rows, size_t n, double *cpu) {
  long read_rows;
  double rcpu, c0 = ab_cpu(RUSAGE_SELF), t0 = ab_now();
  if (ab_read(path, ab_calls, &read_rows, &rcpu) < 0 ||
      ab_read(path, ab_op_durations, &read_rows, &rcpu) < 0)
    return -1;
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  char sql[64 + AB_BATCH * 12] =
      "INSERT INTO floor_rows(parent_id, child_id, depth, cpu_time, gpu_time) VALUES ";
  for (int r = 0; r < AB_BATCH; r++)
    strcat(sql, r ? ",(?,?,?,?,?)" : "(?,?,?,?,?)");
  int rc = sqlite3_open(path, &db);
  if (rc == SQLITE_OK)
    rc = sqlite3_exec(db,
                      "PRAGMA cache_size=-131072; BEGIN IMMEDIATE; CREATE TABLE floor_rows(id "
                      "integer NOT NULL PRIMARY KEY AUTOINCREMENT, parent_id integer NOT NULL, "
                      "child_id integer NOT NULL, depth integer NOT NULL, cpu_time integer NOT "
                      "NULL DEFAULT 0, gpu_time integer NOT NULL DEFAULT 0)",
                      NULL, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  /* whole batches: the last, partial one (under AB_BATCH rows) is left out */
  for (size_t i = 0; rc == SQLITE_OK && i + AB_BATCH <= n; i += AB_BATCH) {
    for (int k = 0; k < 5 * AB_BATCH && rc == SQLITE_OK; k++)
      rc = sqlite3_bind_int64(st, k + 1, rows[i * 5 + k]);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_DONE)
      rc = SQLITE_OK;
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  if (rc == SQLITE_OK)
    rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  if (rc != SQLITE_OK)
    fprintf(stderr, "analysis_bench: the floor's insert into %s failed: %s\n", path,
            sqlite3_errmsg(db));
  sqlite3_close(db);
  *cpu = ab_cpu(RUSAGE_SELF) - c0;
  return rc == SQLITE_OK ? ab_now() - t0 : -1;
}

static int ab_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The best (lowest) and the median of n figures (sorted in place). */
static void ab_stats(double *v, int n, double *best, double *median) {
  qsort(v, (size_t)n, sizeof *v, ab_cmp);
  *best = v[0];
  *median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define AB_MAX_REPEATS 64

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: analysis_bench RPD TRACE REPEATS\n");
    return 1;
  }
  const char *rpd = argv[1], *trace = argv[2];
  int reps = atoi(argv[3]);
  reps = reps < 1 ? 1 : reps > AB_MAX_REPEATS ? AB_MAX_REPEATS : reps;
  char copy[4096];
  snprintf(copy, sizeof copy, "%s.bench-copy", trace);
  double cpu, wall[3][AB_MAX_REPEATS], cpus[3][AB_MAX_REPEATS]; /* read, floor, callstack */
  long rows = 0;
  /* the rows the floor writes: those of one callstack run */
  size_t nrows = 0;
  long long *cs = NULL;
  if (ab_copy(trace, copy) != 0 || ab_callstack(rpd, copy, &cpu) < 0 ||
      !(cs = ab_rows_of(copy, &nrows))) {
    fprintf(stderr, "analysis_bench: cannot make the floor's rows from %s\n", trace);
    return 1;
  }
  for (int r = 0; r < reps; r++) {
    if ((wall[0][r] = ab_read(trace, ab_calls_ordered, &rows, &cpus[0][r])) < 0 ||
        ab_copy(trace, copy) != 0 || (wall[1][r] = ab_floor(copy, cs, nrows, &cpus[1][r])) < 0 ||
        ab_copy(trace, copy) != 0 || (wall[2][r] = ab_callstack(rpd, copy, &cpus[2][r])) < 0) {
      fprintf(stderr, "analysis_bench: round %d failed\n", r + 1);
      return 1;
    }
  }
  free(cs);
  unlink(copy);
  double best[3], median[3], cbest[3], cmedian[3];
  for (int i = 0; i < 3; i++) {
    ab_stats(wall[i], reps, &best[i], &median[i]);
    ab_stats(cpus[i], reps, &cbest[i], &cmedian[i]);
  }
  printf("calls in trace:                 %ld\n", rows);
  printf("ext_callstack rows written:     %zu\n", nrows);
  printf("(%d interleaved rounds)          best / median wall, best / median CPU\n", reps);
  static const char *const what[3] = {"ordered read", "floor (reads + write)", "rpd callstack"};
  for (int i = 0; i < 3; i++)
    printf("%-31s %.3f / %.3f s, %.3f / %.3f s\n", what[i], best[i], median[i], cbest[i],
           cmedian[i]);
  printf("callstack / read:               %.2fx / %.2fx wall, %.2fx / %.2fx CPU\n",
         best[2] / best[0], median[2] / median[0], cbest[2] / cbest[0], cmedian[2] / cmedian[0]);
  printf("callstack / floor:              %.2fx / %.2fx wall, %.2fx / %.2fx CPU\n",
         best[2] / best[1], median[2] / median[1], cbest[2] / cbest[1], cmedian[2] / cmedian[1]);
  printf("floor / read:                   %.2fx / %.2fx wall, %.2fx / %.2fx CPU\n",
         best[1] / best[0], median[1] / median[0], cbest[1] / cbest[0], cmedian[1] / cmedian[0]);
  return 0;
}
