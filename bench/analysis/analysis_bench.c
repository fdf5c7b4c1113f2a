/*
 * analysis_bench.c: `analysis_bench RPD TRACE REPEATS`: times one ordered
 * read of the calls (the baseline: SELECT id, pid, tid, start, end FROM
 * rocpd_api ORDER BY pid, tid, start, stepping every row) and `RPD callstack`
 * on fresh copies of TRACE, REPEATS times each, and prints the best wall and
 * CPU times and their ratios (CPU time is the steadier figure on a shared
 * machine). Exit 0, or 1 with a message.
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

/* The baseline: one ordered pass over rocpd_api. Returns seconds or -1;
 * *cpu gets its CPU seconds. */
static double ab_read(const char *path, long *rows, double *cpu) {
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  double c0 = ab_cpu(RUSAGE_SELF);
  double t0 = ab_now();
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(db,
                         "SELECT id, pid, tid, start, end FROM rocpd_api ORDER BY pid, tid, "
                         "start",
                         -1, &st, NULL) != SQLITE_OK) {
    fprintf(stderr, "analysis_bench: %s: %s\n", path, sqlite3_errmsg(db));
    sqlite3_close(db);
    return -1;
  }
  long n = 0;
  volatile long long sink = 0; /* every column is read, as a real consumer would */
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    for (int i = 0; i < 5; i++)
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

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: analysis_bench RPD TRACE REPEATS\n");
    return 1;
  }
  const char *rpd = argv[1], *trace = argv[2];
  int reps = atoi(argv[3]);
  if (reps < 1)
    reps = 1;
  char copy[4096];
  snprintf(copy, sizeof copy, "%s.bench-copy", trace);
  double best_read = 1e30, best_cs = 1e30, cpu_read = 1e30, cpu_cs = 1e30, cpu;
  long rows = 0;
  for (int r = 0; r < reps; r++) {
    double t = ab_read(trace, &rows, &cpu);
    if (t < 0)
      return 1;
    if (t < best_read)
      best_read = t;
    if (cpu < cpu_read)
      cpu_read = cpu;
    if (ab_copy(trace, copy) != 0) {
      fprintf(stderr, "analysis_bench: cannot copy %s\n", trace);
      return 1;
    }
    t = ab_callstack(rpd, copy, &cpu);
    if (t < 0)
      return 1;
    if (t < best_cs)
      best_cs = t;
    if (cpu < cpu_cs)
      cpu_cs = cpu;
  }
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  long long cs_rows = -1;
  if (sqlite3_open_v2(copy, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
      sqlite3_prepare_v2(db, "SELECT count(*) FROM ext_callstack", -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    cs_rows = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  unlink(copy);
  printf("calls in trace:                 %ld\n", rows);
  printf("ext_callstack rows written:     %lld\n", cs_rows);
  printf("baseline ordered read (best):   %.3f s\n", best_read);
  printf("rpd callstack (best of %d):      %.3f s\n", reps, best_cs);
  printf("ratio callstack / read:         %.2fx wall (target <= 5x)\n", best_cs / best_read);
  printf("CPU (user+sys), best:           read %.3f s, callstack %.3f s: %.2fx\n", cpu_read, cpu_cs,
         cpu_cs / cpu_read);
  return 0;
}
