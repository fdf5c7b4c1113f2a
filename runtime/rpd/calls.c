/* calls.c: short calls summed per function, NANO_RPD_MIN_DURATION (the
 * tracer core, tracer.h). */
#define _GNU_SOURCE
#include "tracer.h"

#include "nano/rpdfile.h"
#include "writer.h"
#include <stdlib.h>

/* ---- short calls summed (NANO_RPD_MIN_DURATION) ----
 * One entry per (pid, domain, name, args) of ranges shorter than the bound:
 * calls, total and self time (total less the time of ranges nested in them),
 * written to nano_call_summary at each flush (the rows that changed). */
struct rpdw_call_sum {
  int32_t pid;
  int64_t dom, name, args;
  int64_t calls, total_ns, self_ns;
  int dirty;
};
#define RPDW_SUM_MIN_SLOTS 1024

static uint64_t rpdw_sum_hash(int32_t pid, int64_t dom, int64_t name, int64_t args) {
  return ((uint64_t)pid * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)dom * 0xC2B2AE3D27D4EB4Full) ^
         ((uint64_t)name * 0x165667B19E3779F9ull) ^ ((uint64_t)args * 0x27D4EB2F165667C5ull);
}

/* The slot of sum_index holding (pid, dom, name, args), or the empty one
 * where it goes. */
static uint32_t rpdw_sum_slot(int32_t pid, int64_t dom, int64_t name, int64_t args) {
  uint32_t mask = g_w.sum_size - 1,
           i = (uint32_t)(rpdw_sum_hash(pid, dom, name, args) >> 32) & mask;
  for (;; i = (i + 1) & mask) {
    uint32_t e = g_w.sum_index[i];
    if (!e)
      return i;
    const struct rpdw_call_sum *c = &g_w.sums[e - 1];
    if (c->pid == pid && c->dom == dom && c->name == name && c->args == args)
      return i;
  }
}

/* Doubles sum_index (or makes the first). Returns 0, or -1 (out of memory). */
static int rpdw_sum_grow(void) {
  uint32_t size = g_w.sum_size ? g_w.sum_size * 2 : RPDW_SUM_MIN_SLOTS;
  uint32_t *index = calloc(size, sizeof *index);
  if (!index)
    return -1;
  free(g_w.sum_index);
  g_w.sum_index = index;
  g_w.sum_size = size;
  for (int e = 0; e < g_w.nsums; e++) {
    const struct rpdw_call_sum *c = &g_w.sums[e];
    g_w.sum_index[rpdw_sum_slot(c->pid, c->dom, c->name, c->args)] = (uint32_t)e + 1;
  }
  return 0;
}

/* Adds one call of open range o of process pid, `dur` ns long. Returns 0,
 * or -1 when out of memory (the caller writes a row instead). */
int rpdw_sum_add(int32_t pid, const struct rpd_open *o, int64_t dur) {
  if ((uint32_t)(g_w.nsums + 1) * 2 > g_w.sum_size && rpdw_sum_grow() != 0)
    return -1;
  uint32_t i = rpdw_sum_slot(pid, o->domain_id, o->name_id, o->args_key);
  if (!g_w.sum_index[i]) {
    struct rpdw_call_sum *sums = rpd_grow(g_w.sums, g_w.nsums, &g_w.capsums, sizeof *sums);
    if (!sums)
      return -1;
    g_w.sums = sums;
    sums[g_w.nsums] =
        (struct rpdw_call_sum){pid, o->domain_id, o->name_id, o->args_key, 0, 0, 0, 0};
    g_w.sum_index[i] = (uint32_t)++g_w.nsums;
  }
  struct rpdw_call_sum *c = &g_w.sums[g_w.sum_index[i] - 1];
  int64_t self = dur - o->child_ns;
  c->calls++;
  c->total_ns += dur;
  c->self_ns += self > 0 ? self : 0;
  c->dirty = 1;
  g_w.sums_dirty = 1;
  return 0;
}

/* Writes the entries that changed since the last flush. Inside the writer's
 * transaction. */
void rpdw_write_sums(void) {
  if (!g_w.sums_dirty || g_w.failed || rpdw_begin() != 0)
    return;
  if (rpdw_exec(nano_rpdfile_calls_schema_sql(), "cannot create nano_call_summary") != 0)
    return;
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(
          g_w.db,
          "INSERT INTO nano_call_summary (pid, domain_id, name_id, args_id, calls, "
          "total_ns, self_ns, min_duration_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
          "ON CONFLICT (pid, domain_id, name_id, args_id) DO UPDATE SET "
          "calls = excluded.calls, total_ns = excluded.total_ns, "
          "self_ns = excluded.self_ns",
          -1, &st, NULL) != SQLITE_OK) {
    rpdw_fail("INSERT INTO nano_call_summary");
    return;
  }
  for (int e = 0; e < g_w.nsums; e++) {
    struct rpdw_call_sum *c = &g_w.sums[e];
    if (!c->dirty)
      continue;
    int64_t v[] = {c->pid, c->dom, c->name, c->args, c->calls, c->total_ns, c->self_ns, g_w.min_ns};
    int rc = SQLITE_OK;
    for (int k = 0; k < 8; k++)
      rc |= sqlite3_bind_int64(st, k + 1, v[k]);
    if (rc == SQLITE_OK)
      rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
      rpdw_fail("INSERT INTO nano_call_summary");
      break;
    }
    c->dirty = 0;
    g_w.txn_rows++;
  }
  sqlite3_finalize(st);
  g_w.sums_dirty = 0;
}
