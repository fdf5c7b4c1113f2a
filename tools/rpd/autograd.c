/*
 * autograd.c: `rpd autograd FILE`: PyTorch autograd operators from the range
 * texts torch.autograd.profiler.emit_nvtx records, e.g.
 *
 *   aten::mm, seq = 12, op_id = 40, sizes = [[2688, 768], [768, 768]], input_op_ids = [...]
 *
 * in rocmProfileData's table and views:
 *
 *   ext_autogradapi(api_ptr_id, autogradName_id, seq, op_id, sizes, input_op_ids)
 *   autograd        the operators with their call's pid, tid, start, end
 *   autogradKernel  (autogradName, kernelName, sizes, calls, avg_gpu, total_gpu):
 *                   kernels launched directly inside an operator's range
 *
 * The kernel grouping needs ext_callstack; the step runs `rpd callstack` first
 * when the file has none (a step and a transaction of its own).
 *
 * Texts are picked and parsed as rocpd's autograd.py does: every call whose
 * args contain ", op_id = ", ", seq = ", ", sizes = " or ", input_op_ids = "
 * (SQL LIKE, so case-insensitive), matched against four patterns, tried in
 * order, with Python's greedy regular-expression semantics:
 *
 *   NAME, seq = N, op_id = N, sizes = S, input_op_ids = I
 *   NAME, op_id = N, sizes = S, input_op_ids = I
 *   NAME, seq = N, op_id = N
 *   NAME, op_id = N
 *
 * A text that matches none is counted and reported, never fatal.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "commands.h"

static const char ag_schema[] =
    "CREATE TABLE IF NOT EXISTS \"ext_autogradapi\" (\"api_ptr_id\" integer NOT NULL PRIMARY KEY "
    "REFERENCES \"rocpd_api\" (\"id\") DEFERRABLE INITIALLY DEFERRED, \"autogradName_id\" integer "
    "NOT NULL REFERENCES \"rocpd_string\" (\"id\") DEFERRABLE INITIALLY DEFERRED, \"seq\" integer "
    "NOT NULL, \"op_id\" integer NOT NULL, \"sizes\" varchar(4096) NOT NULL, \"input_op_ids\" "
    "varchar(4096) NOT NULL);"
    "CREATE VIEW IF NOT EXISTS \"autograd\" AS SELECT B.id, pid, tid, start, end, C.string AS "
    "autogradName, seq, op_id, sizes, input_op_ids FROM ext_autogradapi A JOIN rocpd_api B ON "
    "B.id = A.api_ptr_id JOIN rocpd_string C ON C.id = A.autogradName_id;"
    "INSERT INTO rocpd_metadata(tag, value) SELECT 'references::rocpd_string.id', "
    "'(\"ext_autogradapi\", \"autogradName_id\")' WHERE NOT EXISTS (SELECT 1 FROM rocpd_metadata "
    "WHERE tag = 'references::rocpd_string.id' AND value = "
    "'(\"ext_autogradapi\", \"autogradName_id\")');"
    "CREATE VIEW IF NOT EXISTS _callstack_autograd_kernel AS SELECT A.*, B.sizes, "
    "B.autogradname_id, C.kernelname_id FROM ext_callstack A LEFT JOIN ext_autogradapi B ON "
    "B.api_ptr_id = A.parent_id LEFT JOIN rocpd_kernelapi C ON C.api_ptr_id = A.child_id;"
    "CREATE VIEW IF NOT EXISTS _callstack_autograd_kernel_exclusive AS SELECT * FROM "
    "_callstack_autograd_kernel WHERE depth=1 AND kernelName_id NOT NULL;"
    "CREATE VIEW IF NOT EXISTS _autogradKernel AS SELECT autogradName_id, kernelName_id, sizes, "
    "count(*) AS calls, avg(gpu_time) AS avg_gpu, sum(gpu_time) AS total_gpu FROM "
    "_callstack_autograd_kernel_exclusive GROUP BY autogradName_id, kernelName_id, sizes;"
    "CREATE VIEW IF NOT EXISTS autogradKernel AS SELECT B.string AS autogradName, C.string AS "
    "kernelName, sizes, calls, avg_gpu, total_gpu FROM _autogradKernel A JOIN rocpd_string B ON "
    "B.id = A.autogradName_id JOIN rocpd_string C ON C.id = A.kernelName_id;";

/* One parsed text: pointers into the text (not terminated) and lengths. */
struct ag_text {
  const char *name, *seq, *op, *sizes, *inputs;
  size_t lname, lseq, lop, lsizes, linputs;
};

/* At p: literal `lit` then one or more digits. Returns the end of the digits
 * (setting *d, *dn) or NULL. */
static const char *ag_num(const char *p, const char *lit, const char **d, size_t *dn) {
  size_t l = strlen(lit);
  if (!p || strncmp(p, lit, l))
    return NULL;
  p += l;
  const char *q = p;
  while (isdigit((unsigned char)*q))
    q++;
  if (q == p)
    return NULL;
  *d = p;
  *dn = (size_t)(q - p);
  return q;
}

/* At p: ", sizes = S, input_op_ids = I" up to the end, S as long as possible
 * (the last ", input_op_ids = "). 1 and fills a, else 0. */
static int ag_tail(const char *p, struct ag_text *a) {
  static const char sz[] = ", sizes = ", in[] = ", input_op_ids = ";
  if (!p || strncmp(p, sz, sizeof sz - 1))
    return 0;
  p += sizeof sz - 1;
  const char *last = NULL;
  for (const char *q = strstr(p, in); q; q = strstr(q + 1, in))
    last = q;
  if (!last)
    return 0;
  a->sizes = p;
  a->lsizes = (size_t)(last - p);
  a->inputs = last + sizeof in - 1;
  a->linputs = strlen(a->inputs);
  return 1;
}

/* Matches pattern `pat` (1..4, see the file comment) against s (no newline),
 * trying the longest NAME first. 1 and fills a, else 0. */
static int ag_match(const char *s, int pat, struct ag_text *a) {
  const char *sep = pat == 1 || pat == 3 ? ", seq = " : ", op_id = ";
  size_t len = strlen(s), l = strlen(sep);
  for (size_t i = len >= l ? len - l : 0; i >= 1 && len >= l; i--) {
    if (strncmp(s + i, sep, l))
      continue;
    struct ag_text m = {.name = s, .lname = i, .seq = "", .sizes = "", .inputs = ""};
    const char *p = s + i;
    if (pat == 1 || pat == 3)
      p = ag_num(p, ", seq = ", &m.seq, &m.lseq);
    p = ag_num(p, ", op_id = ", &m.op, &m.lop);
    int ok = pat <= 2 ? ag_tail(p, &m) : p && !*p;
    if (ok) {
      *a = m;
      return 1;
    }
  }
  return 0;
}

/* Parses one range text as rocpd does. 1 and fills a, 0 for a malformed one.
 * A single trailing newline is ignored (Python's '$'); any other newline makes
 * the text malformed ('.' does not match it). */
static int ag_parse(char *s, struct ag_text *a) {
  size_t len = strlen(s);
  if (len && s[len - 1] == '\n')
    s[--len] = 0;
  if (strchr(s, '\n'))
    return 0;
  for (int pat = 1; pat <= 4; pat++)
    if (ag_match(s, pat, a))
      return 1;
  return 0;
}

/* Binds s[0..n) as text parameter i. */
static int ag_bind(sqlite3_stmt *st, int i, const char *s, size_t n) {
  return sqlite3_bind_text(st, i, s, (int)n, SQLITE_TRANSIENT);
}

/* What the autograd step made. */
struct ag_counts {
  int64_t parsed, malformed;
};

/* The autograd step proper, inside the caller's transaction: creates the
 * table and views and parses every candidate text (counted in ctx, a struct
 * ag_counts). Returns 0 or RPDTOOL_EXIT_FAIL (message printed). */
static int ag_fill(const char *cmd, const struct rpdtool_trace *t, void *ctx) {
  struct ag_counts *n = ctx;
  /* A table without the Generated tag is a leftover of an interrupted run of
   * rocpd's Python (it commits every 100,000 rows): start over. */
  int ret = an_exec(cmd, t, "removing a leftover ext_autogradapi",
                    "DROP TABLE IF EXISTS ext_autogradapi");
  if (!ret)
    ret = an_exec(cmd, t, "creating the autograd tables", ag_schema);
  if (ret)
    return ret;
  char *sql = sqlite3_mprintf(
      "SELECT A.id, B.string FROM rocpd_api A JOIN %s B ON B.id = A.args_id WHERE B.string LIKE "
      "'%%, op_id = %%' OR B.string LIKE '%%, seq = %%' OR B.string LIKE '%%, sizes = %%' OR "
      "B.string LIKE '%%, input_op_ids = %%' ORDER BY A.id",
      t->has_ustring ? "rocpd_ustring" : "rocpd_string");
  sqlite3_stmt *st = NULL, *ins = NULL, *look = NULL, *add = NULL;
  int rc;
  if (!sql)
    return rpdtool_err(cmd, "out of memory");
  if (sqlite3_prepare_v2(t->db, sql, -1, &st, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(t->db,
                         "INSERT INTO ext_autogradapi (api_ptr_id, autogradName_id, seq, "
                         "op_id, sizes, input_op_ids) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                         -1, &ins, NULL) != SQLITE_OK)
    goto sqlerr;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t id = sqlite3_column_int64(st, 0);
    const char *txt = (const char *)sqlite3_column_text(st, 1);
    char *s = strdup(txt ? txt : "");
    struct ag_text a;
    if (!s) {
      ret = rpdtool_err(cmd, "out of memory");
      goto out;
    }
    if (!ag_parse(s, &a)) {
      if (n->malformed < 5)
        fprintf(stderr, "rpd %s: %s: call %lld: range text is not an autograd operator: '%.200s'\n",
                cmd, t->path, (long long)id, txt ? txt : "");
      n->malformed++;
      free(s);
      continue;
    }
    char *name = strndup(a.name, a.lname);
    int64_t name_id = name ? an_intern(t->db, &look, &add, name) : -1;
    free(name);
    int brc = name_id < 0 ? SQLITE_ERROR : sqlite3_bind_int64(ins, 1, id);
    if (brc == SQLITE_OK)
      brc = sqlite3_bind_int64(ins, 2, name_id);
    if (brc == SQLITE_OK)
      brc = ag_bind(ins, 3, a.seq, a.lseq);
    if (brc == SQLITE_OK)
      brc = ag_bind(ins, 4, a.op, a.lop);
    if (brc == SQLITE_OK)
      brc = ag_bind(ins, 5, a.sizes, a.lsizes);
    if (brc == SQLITE_OK)
      brc = ag_bind(ins, 6, a.inputs, a.linputs);
    free(s);
    if (brc != SQLITE_OK || sqlite3_step(ins) != SQLITE_DONE)
      goto sqlerr;
    sqlite3_reset(ins);
    n->parsed++;
  }
  if (rc == SQLITE_DONE)
    goto out;
sqlerr:
  ret = rpdtool_err(cmd, "%s: filling ext_autogradapi: %s", t->path, sqlite3_errmsg(t->db));
out:
  sqlite3_free(sql);
  sqlite3_finalize(st);
  sqlite3_finalize(ins);
  sqlite3_finalize(look);
  sqlite3_finalize(add);
  return ret;
}

/* The autograd step on an open trace: callstack when needed, then the
 * autograd tables. 0, AN_ALREADY or RPDTOOL_EXIT_FAIL. */
static const struct an_step ag_step = {"Autograd", 1, "autograd tables", ag_fill};

static int ag_run(const char *cmd, const struct rpdtool_trace *t) {
  int done = an_step_done(cmd, t, &ag_step);
  if (done < 0)
    return RPDTOOL_EXIT_FAIL;
  if (done) {
    /* rocmProfileData's rocpd.autograd filled ext_autogradapi but made no views
     * (--skip_callstacks, or it stopped at a call stack that `rpd callstack`
     * had made): add the call stack if needed, then the views */
    int views = nano_rpdfile_has_object(t->db, "autogradKernel");
    if (views < 0)
      return rpdtool_err(cmd, "%s: cannot read the schema: %s", t->path, sqlite3_errmsg(t->db));
    if (views)
      return AN_ALREADY;
    int ret = an_callstack_run(cmd, t, NULL);
    if (ret && ret != AN_ALREADY)
      return ret;
    if ((ret = an_begin(cmd, t)))
      return ret;
    if ((ret = an_exec(cmd, t, "creating the autograd views", ag_schema))) {
      an_rollback(t);
      return ret;
    }
    if ((ret = an_commit(cmd, t)))
      return ret;
    printf("rpd %s: %s: the autograd table another tool filled now has its views\n", cmd, t->path);
    return 0;
  }
  int ret = an_callstack_run(cmd, t, NULL);
  if (ret && ret != AN_ALREADY)
    return ret;
  struct ag_counts n = {0};
  if ((ret = an_step_run(cmd, t, &ag_step, &n)))
    return ret;
  printf("rpd %s: %s: %lld autograd operator calls, %lld malformed range texts skipped\n", cmd,
         t->path, (long long)n.parsed, (long long)n.malformed);
  return 0;
}

int rpd_cmd_autograd(int argc, char **argv) {
  return an_step_main(
      argc, argv,
      "usage: rpd autograd FILE\n\n"
      "Parses PyTorch emit_nvtx range texts ('aten::mm, seq = 12, op_id = 40, sizes =\n"
      "[...], input_op_ids = [...]') into ext_autogradapi and adds the views autograd\n"
      "and autogradKernel (operator, kernel, sizes, calls, avg_gpu, total_gpu; ns).\n"
      "Runs 'rpd callstack' first when needed. Malformed texts are counted and\n"
      "reported, not fatal. One transaction per step; a second run does nothing.\n",
      &ag_step, ag_run);
}
