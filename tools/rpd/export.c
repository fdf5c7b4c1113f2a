/*
 * export.c: `rpd export FILE -o trace.json [--start T] [--end T]`: writes the
 * trace as Chrome trace-event JSON, which Perfetto and chrome://tracing open.
 *
 * Mapping:
 *   API calls and user ranges   complete slices ("X") on their process/thread;
 *                               user ranges are named by their text
 *   marks (zero-length user)    instant events ("i", thread scope)
 *   GPU ops                     complete slices on a pseudo-process per GPU
 *                               (pid rpd_export_gpu_pid(gpu)Id), a track per queue
 *   rocpd_api_ops               flow arrows ("s" in the call, "f" in the op)
 *   rocpd_monitor               counter events ("C") on the device's process
 *   ops per GPU                 counters "QueueDepth" (ops launched and not
 *                               finished: +1 at the launching call's start,
 *                               -1 at the op's end) and "Idle" (1 while the
 *                               depth is 0) on the GPU's process, as
 *                               rocmProfileData's rpd2tracing.py draws them
 *   nano_block                  the blocks of instrumented dispatches
 *                               (KernelTimeline): complete slices ("X", cat
 *                               "block") on a pseudo-process per device
 *                               (pid rpd_export_block_pid), a track per unit
 *                               (SM, CU, CPU worker), named by the kernel and
 *                               the block
 *   nano_atomic_sample          counter events ("C", cat "atomics") on the
 *                               traced process: a track per atomic kind, its
 *                               cumulative count
 *   names                       process_name / thread_name metadata ("M")
 *
 * Times are microseconds (the format's unit) with nanosecond decimals, counted
 * from the first record of the trace; otherData.time_base_ns holds that
 * origin on the trace's own clock. The window keeps every record that overlaps
 * [start, end]. The output is streamed row by row from SQLite, never built in
 * memory, into a temporary beside FILE that replaces it when complete; a
 * device or FIFO is written in place, a link refused (nano/outfile.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "nano/json.h"
#include "nano/outfile.h"
#include "rpdtool.h"

/* Pseudo-process ids for GPUs and other monitored devices: above any Linux pid
 * (at most 2^22) and below 2^31. */
#define RPD_EXPORT_GPU_PID 1000000000
#define RPD_EXPORT_DEV_PID 1100000000
/* Pseudo-process ids of the blocks of instrumented dispatches: CPU kernels'
 * at the base, GPU g's at base + 1 + g. */
#define RPD_EXPORT_BLOCK_PID 1200000000

static const char rpd_export_help[] =
    "usage: rpd export FILE -o OUT.json [--start T] [--end T] [--absolute]\n"
    "Writes Chrome trace-event JSON (open it in https://ui.perfetto.dev or\n"
    "chrome://tracing): API calls and user ranges as slices per process/thread,\n"
    "marks as instants, GPU ops per GPU and queue, flow arrows from call to op,\n"
    "monitor samples, queue depth and idle per GPU, and host atomics per kind as\n"
    "counters, process and thread names.\n"
    "  -o, --output OUT   output file ('-' for standard output)\n"
    "  --start T, --end T keep only records overlapping [start, end]; T is\n"
    "                     absolute ns (the trace's clock), a percentage of the\n"
    "                     trace span ('25%'), or an offset from the trace start\n"
    "                     with a unit ('1.5ms' or '+1.5ms'; ns, us, ms, s)\n"
    "  --absolute         timestamps on the trace's own clock (µs since its\n"
    "                     zero), not from the first record, so that exports of\n"
    "                     one run (rocmProfileData's rpd2tracing) line up\n";

struct rpd_export {
  struct rpdtool_trace *t;
  FILE *out;
  const char *out_name; /* for messages: the temporary output, or "stdout" */
  int64_t base, lo, hi; /* time origin; window */
  int64_t last;         /* the trace's last time (its span's end) */
  int first;            /* no event written yet */
  uint64_t skipped_counters;
  struct rpdtool_progress prog;
};

/* `s` as a JSON string; a NULL column (SQLite's NULL text) as "". */
static void rpd_export_str(FILE *out, const char *s) { nano_json_str(out, s ? s : ""); }

/* Writes a time `t` (ns on the trace clock) as microseconds since the base. */
/* The pid of GPU gpu's tracks (any id a trace holds: saturated, not wrapped). */
static int64_t rpd_export_gpu_pid(int64_t gpu) { return rpdtool_add(RPD_EXPORT_GPU_PID, gpu); }

static void rpd_export_ts(struct rpd_export *x, int64_t t) {
  int64_t d = rpdtool_sub(t, x->base);
  const char *sign = d < 0 ? "-" : "";
  uint64_t a = d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
  fprintf(x->out, "%s%" PRIu64 ".%03u", sign, a / 1000, (unsigned)(a % 1000));
}

/* Writes a duration in microseconds (negative ones as 0). */
static void rpd_export_dur(struct rpd_export *x, int64_t d) {
  uint64_t a = d < 0 ? 0 : (uint64_t)d;
  fprintf(x->out, "%" PRIu64 ".%03u", a / 1000, (unsigned)(a % 1000));
}

/* Starts an event: separator and "{". */
static void rpd_export_begin(struct rpd_export *x) {
  fputs(x->first ? "\n{" : ",\n{", x->out);
  x->first = 0;
}

/* A metadata event naming a process (tid < 0) or a thread. */
static void rpd_export_name(struct rpd_export *x, int64_t pid, int64_t tid, const char *name) {
  rpd_export_begin(x);
  fprintf(x->out,
          "\"ph\":\"M\",\"name\":\"%s\",\"pid\":%" PRId64 ",\"tid\":%" PRId64
          ",\"args\":{\"name\":",
          tid < 0 ? "process_name" : "thread_name", pid, tid < 0 ? 0 : tid);
  rpd_export_str(x->out, name);
  fputs("}}", x->out);
}

/* A metadata event ordering a process among the others. */
static void rpd_export_sort(struct rpd_export *x, int64_t pid, int64_t index) {
  rpd_export_begin(x);
  fprintf(x->out,
          "\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%" PRId64
          ",\"tid\":0,\"args\":{\"sort_index\":%" PRId64 "}}",
          pid, index);
}

/* Prepares `sql` with the window bound to ?1 (lo) and ?2 (hi). NULL on error
 * (reported). */
static sqlite3_stmt *rpd_export_prepare(struct rpd_export *x, const char *sql) {
  sqlite3_stmt *st = rpdtool_prepare("export", x->t, sql);
  if (st && (sqlite3_bind_int64(st, 1, x->lo) != SQLITE_OK ||
             sqlite3_bind_int64(st, 2, x->hi) != SQLITE_OK)) {
    rpdtool_err("export", "%s: query failed: %s", x->t->path, sqlite3_errmsg(x->t->db));
    sqlite3_finalize(st);
    return NULL;
  }
  return st;
}

/* Finishes a statement stepped to the end; `rc` is its last step's code.
 * Returns 0, or 1 after reporting the error. */
static int rpd_export_done(struct rpd_export *x, sqlite3_stmt *st, int rc) {
  return rpdtool_done("export", x->t, st, rc, x->out, x->out_name);
}

/* Process and thread names for the API rows in the window, GPU and queue
 * names for the ops. */
static int rpd_export_names(struct rpd_export *x) {
  char buf[64];
  /* names the tracer took from the OS (nano_thread), else generic ones */
  sqlite3_stmt *st = rpd_export_prepare(
      x, x->t->has_names
             ? "SELECT D.pid, D.tid, P.name, T.name FROM (SELECT DISTINCT pid, tid FROM rocpd_api "
               "WHERE end>=?1 AND start<=?2) D "
               "LEFT JOIN nano_thread P ON P.pid=D.pid AND P.tid=D.pid % ?3 "
               "LEFT JOIN nano_thread T ON T.pid=D.pid AND T.tid=D.tid ORDER BY D.pid, D.tid"
             : "SELECT DISTINCT pid, tid, NULL, NULL FROM rocpd_api WHERE end>=?1 AND start<=?2 "
               "ORDER BY pid, tid");
  if (!st)
    return 1;
  if (x->t->has_names && sqlite3_bind_int64(st, 3, x->t->pid_stride) != SQLITE_OK) {
    rpdtool_err("export", "%s: query failed: %s", x->t->path, sqlite3_errmsg(x->t->db));
    sqlite3_finalize(st);
    return 1;
  }
  int rc;
  int64_t last = INT64_MIN;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t pid = sqlite3_column_int64(st, 0), tid = sqlite3_column_int64(st, 1);
    const char *pname = (const char *)sqlite3_column_text(st, 2);
    const char *tname = (const char *)sqlite3_column_text(st, 3);
    if (pid != last) {
      rpdtool_name_label(buf, sizeof buf, pid, -1, pname);
      rpd_export_name(x, pid, -1, buf);
      rpd_export_sort(x, pid, pid);
      last = pid;
    }
    rpdtool_name_label(buf, sizeof buf, pid, tid, tname);
    rpd_export_name(x, pid, tid, buf);
  }
  if (rpd_export_done(x, st, rc))
    return 1;

  st = rpd_export_prepare(
      x, "SELECT DISTINCT gpuId, queueId FROM rocpd_op WHERE end>=?1 AND start<=?2 ORDER BY 1, 2");
  if (!st)
    return 1;
  last = INT64_MIN;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t gpu = sqlite3_column_int64(st, 0), q = sqlite3_column_int64(st, 1);
    if (gpu != last) {
      snprintf(buf, sizeof buf, "GPU %" PRId64, gpu);
      rpd_export_name(x, rpd_export_gpu_pid(gpu), -1, buf);
      rpd_export_sort(x, rpd_export_gpu_pid(gpu), rpd_export_gpu_pid(gpu));
      last = gpu;
    }
    snprintf(buf, sizeof buf, "queue %" PRId64, q);
    rpd_export_name(x, rpd_export_gpu_pid(gpu), q, buf);
  }
  return rpd_export_done(x, st, rc);
}

/* API calls and user ranges as slices, marks as instants. */
static int rpd_export_api(struct rpd_export *x) {
  char *sql =
      sqlite3_mprintf("SELECT id, pid, tid, start, end, domain, category, apiName, args FROM (%s) "
                      "WHERE end>=?1 AND start<=?2 ORDER BY pid, tid, start, end DESC",
                      rpdtool_api_sql(x->t));
  if (!sql)
    return rpdtool_err("export", "out of memory");
  sqlite3_stmt *st = rpd_export_prepare(x, sql);
  sqlite3_free(sql);
  if (!st)
    return 1;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t id = sqlite3_column_int64(st, 0), pid = sqlite3_column_int64(st, 1),
            tid = sqlite3_column_int64(st, 2), start = sqlite3_column_int64(st, 3),
            end = sqlite3_column_int64(st, 4);
    const char *domain = (const char *)sqlite3_column_text(st, 5);
    const char *category = (const char *)sqlite3_column_text(st, 6);
    const char *api = (const char *)sqlite3_column_text(st, 7);
    const char *args = (const char *)sqlite3_column_text(st, 8);
    /* A user marker row (apiName "UserMarker", any domain: roctx, NVTX
     * domains) is named by its text; a user range with its own apiName (domain
     * "UserMarker", rpd_rangePush with args) by that name, its args kept. */
    int marker = api && !strcmp(api, "UserMarker");
    int user = marker || (domain && !strcmp(domain, "UserMarker"));
    const char *name = marker && args && *args ? args : api;
    rpd_export_begin(x);
    fputs("\"name\":", x->out);
    rpd_export_str(x->out, name);
    fputs(",\"cat\":", x->out);
    rpd_export_str(x->out, domain && *domain ? domain : "api");
    if (user && start == end) {
      fputs(",\"ph\":\"i\",\"s\":\"t\",\"ts\":", x->out);
      rpd_export_ts(x, start);
    } else {
      fputs(",\"ph\":\"X\",\"ts\":", x->out);
      rpd_export_ts(x, start);
      fputs(",\"dur\":", x->out);
      rpd_export_dur(x, rpdtool_sub(end, start));
    }
    fprintf(x->out, ",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"args\":{\"id\":%" PRId64, pid, tid,
            id);
    if (!marker && args && *args) {
      fputs(",\"args\":", x->out);
      rpd_export_str(x->out, args);
    }
    if (category && *category) {
      fputs(",\"category\":", x->out);
      rpd_export_str(x->out, category);
    }
    fputs("}}", x->out);
    rpdtool_progress_add(&x->prog, 1);
  }
  return rpd_export_done(x, st, rc);
}

/* GPU ops as slices on their GPU's pseudo-process, one track per queue. */
static int rpd_export_ops(struct rpd_export *x) {
  sqlite3_stmt *st = rpd_export_prepare(
      x, "SELECT O.id, O.gpuId, O.queueId, O.sequenceId, O.start, O.end, "
         "coalesce(D.string,''), coalesce(T.string,'') FROM rocpd_op O "
         "LEFT JOIN rocpd_string D ON D.id=O.description_id "
         "LEFT JOIN rocpd_string T ON T.id=O.opType_id "
         "WHERE O.end>=?1 AND O.start<=?2 ORDER BY O.gpuId, O.queueId, O.start, O.end DESC");
  if (!st)
    return 1;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t id = sqlite3_column_int64(st, 0), gpu = sqlite3_column_int64(st, 1),
            q = sqlite3_column_int64(st, 2), seq = sqlite3_column_int64(st, 3),
            start = sqlite3_column_int64(st, 4), end = sqlite3_column_int64(st, 5);
    const char *desc = (const char *)sqlite3_column_text(st, 6);
    const char *type = (const char *)sqlite3_column_text(st, 7);
    rpd_export_begin(x);
    fputs("\"name\":", x->out);
    rpd_export_str(x->out, desc && *desc ? desc : type);
    fputs(",\"cat\":\"op\",\"ph\":\"X\",\"ts\":", x->out);
    rpd_export_ts(x, start);
    fputs(",\"dur\":", x->out);
    rpd_export_dur(x, rpdtool_sub(end, start));
    fprintf(x->out,
            ",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"args\":{\"id\":%" PRId64
            ",\"sequenceId\":%" PRId64 ",\"opType\":",
            rpd_export_gpu_pid(gpu), q, id, seq);
    rpd_export_str(x->out, type);
    fputs("}}", x->out);
    rpdtool_progress_add(&x->prog, 1);
  }
  return rpd_export_done(x, st, rc);
}

/* A flow arrow from each API call to each GPU op it caused, where both are in
 * the window: "s" and "f" (bound to the enclosing slice) at the middle of the
 * call's and the op's slice, so that a viewer that binds a flow to the slice
 * open at its timestamp never picks a neighbour starting or ending there. */
static int rpd_export_flows(struct rpd_export *x) {
  sqlite3_stmt *st = rpd_export_prepare(
      x, "SELECT L.id, A.pid, A.tid, A.start + (A.end - A.start) / 2, O.gpuId, O.queueId, "
         "O.start + (O.end - O.start) / 2 FROM rocpd_api_ops L "
         "JOIN rocpd_api A ON A.id=L.api_id JOIN rocpd_op O ON O.id=L.op_id "
         "WHERE A.end>=?1 AND A.start<=?2 AND O.end>=?1 AND O.start<=?2 ORDER BY L.id");
  if (!st)
    return 1;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t id = sqlite3_column_int64(st, 0), pid = sqlite3_column_int64(st, 1),
            tid = sqlite3_column_int64(st, 2), amid = sqlite3_column_int64(st, 3),
            gpu = sqlite3_column_int64(st, 4), q = sqlite3_column_int64(st, 5),
            omid = sqlite3_column_int64(st, 6);
    rpd_export_begin(x);
    fprintf(x->out,
            "\"name\":\"launch\",\"cat\":\"flow\",\"ph\":\"s\",\"id\":%" PRId64 ",\"ts\":", id);
    rpd_export_ts(x, amid);
    fprintf(x->out, ",\"pid\":%" PRId64 ",\"tid\":%" PRId64 "}", pid, tid);
    rpd_export_begin(x);
    fprintf(x->out,
            "\"name\":\"launch\",\"cat\":\"flow\",\"ph\":\"f\",\"bp\":\"e\",\"id\":%" PRId64
            ",\"ts\":",
            id);
    rpd_export_ts(x, omid);
    fprintf(x->out, ",\"pid\":%" PRId64 ",\"tid\":%" PRId64 "}", rpd_export_gpu_pid(gpu), q);
  }
  return rpd_export_done(x, st, rc);
}

/* Parses a monitor value as a finite number; 0 and *v, or -1. */
static int rpd_export_number(const char *s, double *v) {
  if (!s)
    return -1;
  char *end = NULL;
  errno = 0;
  *v = strtod(s, &end);
  if (end == s || errno || !isfinite(*v))
    return -1;
  while (*end == ' ' || *end == '\t')
    end++;
  return *end ? -1 : 0;
}

/* rocpd_monitor samples as counters: on the GPU's pseudo-process for device
 * type "gpu", else on a pseudo-process per other device. */
static int rpd_export_counters(struct rpd_export *x) {
  int has = nano_rpdfile_has_object(x->t->db, "rocpd_monitor");
  if (has <= 0)
    return has < 0 ? rpdtool_err("export", "%s: %s", x->t->path, sqlite3_errmsg(x->t->db)) : 0;
  char buf[96];
  sqlite3_stmt *st = rpd_export_prepare(
      x, "SELECT DISTINCT deviceType, deviceId FROM rocpd_monitor WHERE end>=?1 AND start<=?2 "
         "AND lower(deviceType)<>'gpu' ORDER BY 1, 2");
  if (!st)
    return 1;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t dev = sqlite3_column_int64(st, 1);
    snprintf(buf, sizeof buf, "%.40s %" PRId64, (const char *)sqlite3_column_text(st, 0), dev);
    rpd_export_name(x, rpdtool_add(RPD_EXPORT_DEV_PID, dev), -1, buf);
  }
  if (rpd_export_done(x, st, rc))
    return 1;
  /* GPUs known only from monitor rows get their name too. */
  st = rpd_export_prepare(x,
                          "SELECT DISTINCT deviceId FROM rocpd_monitor WHERE end>=?1 AND start<=?2 "
                          "AND lower(deviceType)='gpu' AND deviceId NOT IN "
                          "(SELECT gpuId FROM rocpd_op WHERE end>=?1 AND start<=?2) ORDER BY 1");
  if (!st)
    return 1;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t gpu = sqlite3_column_int64(st, 0);
    snprintf(buf, sizeof buf, "GPU %" PRId64, gpu);
    rpd_export_name(x, rpd_export_gpu_pid(gpu), -1, buf);
  }
  if (rpd_export_done(x, st, rc))
    return 1;

  st = rpd_export_prepare(
      x, "SELECT deviceType, deviceId, monitorType, start, value FROM rocpd_monitor "
         "WHERE end>=?1 AND start<=?2 ORDER BY start");
  if (!st)
    return 1;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *dtype = (const char *)sqlite3_column_text(st, 0);
    int64_t dev = sqlite3_column_int64(st, 1), start = sqlite3_column_int64(st, 3);
    const char *mtype = (const char *)sqlite3_column_text(st, 2);
    double v;
    if (rpd_export_number((const char *)sqlite3_column_text(st, 4), &v) != 0) {
      x->skipped_counters++;
      continue;
    }
    int gpu = dtype && !strcasecmp(dtype, "gpu");
    rpd_export_begin(x);
    fputs("\"name\":", x->out);
    rpd_export_str(x->out, mtype);
    fputs(",\"cat\":\"monitor\",\"ph\":\"C\",\"ts\":", x->out);
    rpd_export_ts(x, start);
    fprintf(x->out, ",\"pid\":%" PRId64 ",\"tid\":0,\"args\":{\"value\":%.17g}}",
            rpdtool_add(gpu ? RPD_EXPORT_GPU_PID : RPD_EXPORT_DEV_PID, dev), v);
    rpdtool_progress_add(&x->prog, 1);
  }
  return rpd_export_done(x, st, rc);
}

/* Writes one counter event of GPU gpu's process at time t. */
static void rpd_export_gpu_counter(struct rpd_export *x, int64_t gpu, const char *name,
                                   const char *arg, int64_t t, int64_t v) {
  rpd_export_begin(x);
  fprintf(x->out, "\"name\":\"%s\",\"cat\":\"queue\",\"ph\":\"C\",\"ts\":", name);
  rpd_export_ts(x, t);
  fprintf(x->out, ",\"pid\":%" PRId64 ",\"tid\":0,\"args\":{\"%s\":%" PRId64 "}}",
          rpd_export_gpu_pid(gpu), arg, v);
}

/* The queue depth and idle counters of each GPU: every op launched by a call
 * counts from the call's start to the op's end. */
static int rpd_export_queue_depth(struct rpd_export *x) {
  sqlite3_stmt *st = rpd_export_prepare(
      x,
      "SELECT gpu, ts, delta FROM (SELECT O.gpuId AS gpu, A.start AS ts, 1 AS delta "
      "FROM rocpd_api_ops L JOIN rocpd_api A ON A.id = L.api_id JOIN rocpd_op O ON O.id = L.op_id "
      "UNION ALL SELECT O.gpuId, O.end, -1 FROM rocpd_api_ops L "
      "JOIN rocpd_api A ON A.id = L.api_id JOIN rocpd_op O ON O.id = L.op_id) "
      "WHERE ts >= ?1 AND ts <= ?2 ORDER BY gpu, ts, delta DESC");
  if (!st)
    return 1;
  int rc, any = 0;
  int64_t gpu = 0, depth = 0, end = x->hi < x->last ? x->hi : x->last;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t g = sqlite3_column_int64(st, 0), ts = sqlite3_column_int64(st, 1),
            delta = sqlite3_column_int64(st, 2);
    if (any && g != gpu) { /* the previous GPU's values at the end */
      rpd_export_gpu_counter(x, gpu, "Idle", "idle", end, depth <= 0);
      rpd_export_gpu_counter(x, gpu, "QueueDepth", "depth", end, depth);
      depth = 0;
    }
    any = 1;
    gpu = g;
    int64_t before = depth;
    depth += delta;
    if (before <= 0 && depth > 0)
      rpd_export_gpu_counter(x, gpu, "Idle", "idle", ts, 0);
    if (before > 0 && depth <= 0)
      rpd_export_gpu_counter(x, gpu, "Idle", "idle", ts, 1);
    rpd_export_gpu_counter(x, gpu, "QueueDepth", "depth", ts, depth);
  }
  if (any) {
    rpd_export_gpu_counter(x, gpu, "Idle", "idle", end, depth <= 0);
    rpd_export_gpu_counter(x, gpu, "QueueDepth", "depth", end, depth);
  }
  return rpd_export_done(x, st, rc);
}

/* The host atomics samples (nano_atomic_sample) as counter tracks: one per
 * kind on the process's own track, the cumulative count. */
static int rpd_export_atomics(struct rpd_export *x) {
  int has = nano_rpdfile_has_object(x->t->db, "nano_atomic_sample");
  if (has <= 0)
    return has < 0 ? rpdtool_err("export", "%s: %s", x->t->path, sqlite3_errmsg(x->t->db)) : 0;
  sqlite3_stmt *st = rpd_export_prepare(
      x, "SELECT pid, kind, start, count FROM nano_atomic_sample WHERE start>=?1 AND start<=?2 "
         "ORDER BY start");
  if (!st)
    return 1;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    rpd_export_begin(x);
    fputs("\"name\":", x->out);
    rpd_export_str(x->out, (const char *)sqlite3_column_text(st, 1));
    fputs(",\"cat\":\"atomics\",\"ph\":\"C\",\"ts\":", x->out);
    rpd_export_ts(x, sqlite3_column_int64(st, 2));
    fprintf(x->out, ",\"pid\":%" PRId64 ",\"tid\":0,\"args\":{\"count\":%" PRId64 "}}",
            (int64_t)sqlite3_column_int64(st, 0), (int64_t)sqlite3_column_int64(st, 3));
    rpdtool_progress_add(&x->prog, 1);
  }
  return rpd_export_done(x, st, rc);
}

/* The pid of the block tracks of a backend's device. */
static int64_t rpd_export_block_pid(const char *backend, int64_t device) {
  return strcmp(backend, "cpu") == 0 ? RPD_EXPORT_BLOCK_PID
                                     : rpdtool_add(RPD_EXPORT_BLOCK_PID + 1, device);
}

/* The blocks KernelTimeline timed (view nano_block), as slices per unit. */
static int rpd_export_blocks(struct rpd_export *x) {
  int has = nano_rpdfile_has_object(x->t->db, "nano_block");
  if (has <= 0)
    return has < 0 ? rpdtool_err("export", "%s: %s", x->t->path, sqlite3_errmsg(x->t->db)) : 0;
  sqlite3_stmt *st = rpd_export_prepare(
      x, "SELECT D.backend, D.device, B.unit, B.start, B.\"end\", D.kernel_name, B.block_x, "
         "B.block_y, B.block_z, B.dispatch_id FROM nano_block B JOIN nano_dispatch D ON "
         "D.id = B.dispatch_id WHERE B.\"end\">=?1 AND B.start<=?2 "
         "ORDER BY D.backend, D.device, B.unit, B.start");
  if (!st)
    return 1;
  int rc;
  int64_t last_pid = -1, last_unit = -1;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *backend = (const char *)sqlite3_column_text(st, 0);
    if (!backend)
      backend = "";
    int64_t device = sqlite3_column_int64(st, 1), unit = sqlite3_column_int64(st, 2);
    int64_t pid = rpd_export_block_pid(backend, device);
    int cpu = strcmp(backend, "cpu") == 0;
    if (pid != last_pid) {
      char name[64];
      if (cpu)
        snprintf(name, sizeof name, "blocks: CPU kernels");
      else
        snprintf(name, sizeof name, "blocks: %s device %" PRId64, backend, device);
      rpd_export_name(x, pid, -1, name);
      last_pid = pid;
      last_unit = -1;
    }
    if (unit != last_unit) {
      char name[64];
      snprintf(name, sizeof name, "%s %" PRId64,
               cpu                            ? "worker"
               : strcmp(backend, "cuda") == 0 ? "SM"
                                              : "CU",
               unit);
      rpd_export_name(x, pid, unit, name);
      last_unit = unit;
    }
    int64_t start = sqlite3_column_int64(st, 3), end = sqlite3_column_int64(st, 4);
    rpd_export_begin(x);
    fputs("\"name\":", x->out);
    rpd_export_str(x->out, (const char *)sqlite3_column_text(st, 5));
    fputs(",\"cat\":\"block\",\"ph\":\"X\",\"ts\":", x->out);
    rpd_export_ts(x, start);
    fputs(",\"dur\":", x->out);
    rpd_export_dur(x, rpdtool_sub(end, start));
    fprintf(x->out,
            ",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"args\":{\"block\":[%" PRId64 ",%" PRId64
            ",%" PRId64 "],\"dispatch\":%" PRId64 "}}",
            pid, unit, (int64_t)sqlite3_column_int64(st, 6), (int64_t)sqlite3_column_int64(st, 7),
            (int64_t)sqlite3_column_int64(st, 8), (int64_t)sqlite3_column_int64(st, 9));
    rpdtool_progress_add(&x->prog, 1);
  }
  return rpd_export_done(x, st, rc);
}

/* Counts the rows the export will visit, for the progress line. */
static uint64_t rpd_export_total(struct rpd_export *x) {
  sqlite3_stmt *st =
      rpd_export_prepare(x, "SELECT (SELECT count(*) FROM rocpd_api WHERE end>=?1 AND start<=?2)"
                            " + (SELECT count(*) FROM rocpd_op WHERE end>=?1 AND start<=?2)");
  if (!st)
    return 0;
  uint64_t n = sqlite3_step(st) == SQLITE_ROW ? (uint64_t)sqlite3_column_int64(st, 0) : 0;
  sqlite3_finalize(st);
  return n;
}

/* Writes the whole document to x->out. 0 or 1. */
static int rpd_export_write(struct rpd_export *x) {
  fprintf(x->out, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"source\":");
  rpd_export_str(x->out, x->t->path);
  fprintf(x->out,
          ",\"schema_version\":%d,\"time_base_ns\":%" PRId64 ",\"window_start_ns\":%" PRId64
          ",\"window_end_ns\":%" PRId64 "},\n\"traceEvents\":[",
          x->t->schema_version, x->base, x->lo, x->hi);
  x->first = 1;
  if (rpd_export_names(x) || rpd_export_api(x) || rpd_export_ops(x) || rpd_export_flows(x) ||
      rpd_export_counters(x) || rpd_export_queue_depth(x) || rpd_export_atomics(x) ||
      rpd_export_blocks(x))
    return 1;
  fputs("\n]}\n", x->out);
  return 0;
}

int rpd_cmd_export(int argc, char **argv) {
  const char *output = NULL, *start_s = NULL, *end_s = NULL, *file;
  int absolute = 0;
  const struct rpdtool_opt opts[] = {{"output", 'o', &output, NULL},
                                     {"start", 0, &start_s, NULL},
                                     {"end", 0, &end_s, NULL},
                                     {"absolute", 0, NULL, &absolute},
                                     {NULL, 0, NULL, NULL}};
  int parsed = rpdtool_parse_args(argc, argv, rpd_export_help, opts, &file);
  if (parsed != RPDTOOL_PARSED)
    return parsed;
  if (!output)
    return rpdtool_usage("export", "missing -o OUT.json");

  struct rpdtool_trace t;
  int ret = rpdtool_open_view("export", file, &t);
  if (ret)
    return ret;
  struct rpd_export x = {.t = &t};
  int64_t lo, hi;
  int has = rpdtool_span(&t, &lo, &hi);
  if (has < 0) {
    ret = rpdtool_err("export", "%s: %s", t.path, sqlite3_errmsg(t.db));
    goto out;
  }
  x.base = absolute ? 0 : lo;
  x.last = hi;
  if ((ret = rpdtool_window("export", start_s, end_s, lo, hi, &x.lo, &x.hi)) != 0)
    goto out;
  if (!start_s)
    x.lo = INT64_MIN;
  if (!end_s)
    x.hi = INT64_MAX;

  struct stat in_sb, out_sb;
  if (strcmp(output, "-") && stat(output, &out_sb) == 0 && stat(t.path, &in_sb) == 0 &&
      in_sb.st_dev == out_sb.st_dev && in_sb.st_ino == out_sb.st_ino) {
    ret = rpdtool_usage("export", "-o %s is the trace itself", output);
    goto out;
  }
  struct nano_outfile of;
  char err[512];
  if (nano_outfile_open(&of, output, err, sizeof err) != 0) {
    ret = rpdtool_err("export", "%s", err);
    goto out;
  }
  x.out = of.f;
  x.out_name = of.tmp ? of.tmp : of.f == stdout ? "stdout" : output;
  static char iobuf[1 << 16];
  setvbuf(x.out, iobuf, _IOFBF, sizeof iobuf);
  rpdtool_progress_start(&x.prog, "export", isatty(STDERR_FILENO) ? rpd_export_total(&x) : 0);
  ret = rpd_export_write(&x);
  rpdtool_progress_end(&x.prog);
  if (ret)
    nano_outfile_abort(&of);
  else if (nano_outfile_commit(&of, err, sizeof err) != 0)
    ret = rpdtool_err("export", "%s", err);
  if (x.skipped_counters)
    fprintf(stderr, "rpd export: %" PRIu64 " rocpd_monitor rows with a non-numeric value skipped\n",
            x.skipped_counters);
  if (!ret && (start_s || end_s) && x.prog.done == 0)
    fprintf(stderr,
            "rpd export: warning: the window %" PRId64 " .. %" PRId64 " ns holds no record of %s "
            "(which spans %" PRId64 " .. %" PRId64 " ns); %s has names only\n",
            x.lo, x.hi, t.path, lo, hi, output);
out:
  rpdtool_close(&t);
  return ret;
}
