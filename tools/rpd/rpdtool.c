/*
 * rpdtool.c: the helpers of rpdtool.h shared by the `rpd` subcommands:
 * messages, opening a trace with clear errors, aligned tables, option values
 * and a progress line.
 */
#include "rpdtool.h"

#include <nano/rpdfile.h>
#include <nano/text.h>

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- messages ----------------------------------------------------------- */

/* Prints "rpd <cmd>: <fmt...>\n" on stderr. */
static void rpdtool_vmsg(const char *cmd, const char *fmt, va_list ap) {
  fprintf(stderr, "rpd %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

int rpdtool_err(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rpdtool_vmsg(cmd, fmt, ap);
  va_end(ap);
  return RPDTOOL_EXIT_FAIL;
}

int rpdtool_usage(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rpdtool_vmsg(cmd, fmt, ap);
  va_end(ap);
  fprintf(stderr, "Try 'rpd %s --help'.\n", cmd);
  return RPDTOOL_EXIT_USAGE;
}

int rpdtool_parse_args(int argc, char **argv, const char *help, const struct rpdtool_opt *opts,
                       const char **file) {
  enum { MAX_OPTS = 8, LONG_ONLY = 256 };
  const char *cmd = argv[0];
  struct option longs[MAX_OPTS + 2] = {{"help", no_argument, NULL, 'h'}};
  char shorts[3 * MAX_OPTS + 4] = ":h";
  size_t ns = 2;
  int n = 0;
  for (; opts && opts[n].name; n++) {
    assert(n < MAX_OPTS && (opts[n].value != NULL) != (opts[n].flag != NULL));
    int val = opts[n].letter ? opts[n].letter : LONG_ONLY + n;
    longs[n + 1] =
        (struct option){opts[n].name, opts[n].value ? required_argument : no_argument, NULL, val};
    if (opts[n].letter) {
      shorts[ns++] = (char)opts[n].letter;
      if (opts[n].value)
        shorts[ns++] = ':';
    }
  }
  shorts[ns] = 0;
  optind = 0;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
    if (c == 'h') {
      fputs(help, stdout);
      return RPDTOOL_EXIT_OK;
    }
    if (c == ':')
      return rpdtool_usage(cmd, "option '%s' needs a value", argv[optind - 1]);
    int k = 0;
    while (k < n && (opts[k].letter ? opts[k].letter : LONG_ONLY + k) != c)
      k++;
    if (k == n)
      return rpdtool_usage(cmd, "unknown option '%s'", argv[optind - 1]);
    if (opts[k].value)
      *opts[k].value = optarg;
    else
      *opts[k].flag = 1;
  }
  if (argc - optind != 1)
    return rpdtool_usage(cmd, "%s", argc - optind ? "expects one FILE" : "missing FILE");
  *file = argv[optind];
  return RPDTOOL_PARSED;
}

/* ---- opening traces ---------------------------------------------------- */

/* Tables every reader needs; the others are checked only when present. */
static const char *const rpdtool_core_tables[] = {"rocpd_metadata", "rocpd_string",  "rocpd_api",
                                                  "rocpd_op",       "rocpd_api_ops", NULL};

/* Checks the file's tables against the RPD schema (nano_rpdfile_schema_sql,
 * the one definition): a core table missing, or a column missing from a table
 * the file has, is named in err, so that a damaged or foreign file gets that
 * message rather than a query's failure later ("no such column", or SQLite's
 * "not an error"). Version 2 traces lack rocpd_api's domain_id and
 * category_id. Returns 0, or -1 with err set. */
static int rpdtool_check_schema(sqlite3 *db, int version, char *err, size_t len) {
  sqlite3 *ref = NULL;
  sqlite3_stmt *st = NULL;
  int ret = -1;
  if (sqlite3_open(":memory:", &ref) != SQLITE_OK ||
      sqlite3_exec(ref, nano_rpdfile_schema_sql(), NULL, NULL, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(ref,
                         "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p "
                         "WHERE m.type = 'table' AND m.name LIKE 'rocpd%' ORDER BY m.name, p.cid",
                         -1, &st, NULL) != SQLITE_OK) {
    snprintf(err, len, "cannot build the reference schema: %s",
             ref ? sqlite3_errmsg(ref) : "out of memory");
    goto out;
  }
  int rc, has = 0;
  char last[64] = ""; /* the rows come by table: look each table up once */
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *table = (const char *)sqlite3_column_text(st, 0);
    const char *col = (const char *)sqlite3_column_text(st, 1);
    if (strcmp(table, last) != 0) {
      snprintf(last, sizeof last, "%s", table);
      if ((has = nano_rpdfile_has_object(db, table)) < 0)
        goto failed;
    }
    if (!has) {
      for (int i = 0; rpdtool_core_tables[i]; i++)
        if (!strcmp(table, rpdtool_core_tables[i])) {
          snprintf(err, len, "no table %s", table);
          goto out;
        }
      continue;
    }
    if (version < 3 && !strcmp(table, "rocpd_api") &&
        (!strcmp(col, "domain_id") || !strcmp(col, "category_id")))
      continue;
    int c = nano_rpdfile_has_column(db, table, col);
    if (c < 0)
      goto failed;
    if (!c) {
      snprintf(err, len, "table %s has no column \"%s\"", table, col);
      goto out;
    }
  }
  if (rc == SQLITE_DONE)
    ret = 0;
  else
    snprintf(err, len, "cannot read the reference schema: %s", sqlite3_errmsg(ref));
  goto out;
failed:
  snprintf(err, len, "cannot read the schema: %s", sqlite3_errmsg(db));
out:
  sqlite3_finalize(st);
  sqlite3_close(ref);
  return ret;
}

/* rocpd_metadata's pid_stride; RPDTOOL_PID_STRIDE when it is missing or not
 * a positive integer. */
static int64_t rpdtool_pid_stride(sqlite3 *db) {
  sqlite3_stmt *st = NULL;
  int64_t stride = 0;
  if (sqlite3_prepare_v2(db,
                         "SELECT CAST(value AS INTEGER) FROM rocpd_metadata "
                         "WHERE tag='pid_stride'",
                         -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    stride = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return stride > 0 ? stride : RPDTOOL_PID_STRIDE;
}

int rpdtool_open(const char *cmd, const char *path, int mode, struct rpdtool_trace *t) {
  memset(t, 0, sizeof *t);
  char err[NANO_RPDFILE_ERRLEN];
  sqlite3 *db = NULL;
  int version = 0;
  int rc = nano_rpdfile_open_read(path, mode == RPDTOOL_READ, &db, &version, err, sizeof err);
  if (rc != NANO_RPDFILE_OK) {
    rpdtool_err(cmd, "%s", err);
    return RPDTOOL_EXIT_USAGE;
  }
  if (rpdtool_check_schema(db, version, err, sizeof err) != 0) {
    rpdtool_err(cmd, "%s: %s: damaged, or not written by an RPD tool", path, err);
    nano_rpdfile_close(db, path, err, sizeof err);
    return RPDTOOL_EXIT_USAGE;
  }
  int dom = nano_rpdfile_has_column(db, "rocpd_api", "domain_id");
  int cat = nano_rpdfile_has_column(db, "rocpd_api", "category_id");
  int ustr = nano_rpdfile_has_object(db, "rocpd_ustring");
  int names = nano_rpdfile_has_object(db, "nano_thread");
  int dispatches = nano_rpdfile_has_object(db, "nano_dispatch");
  int where = dispatches > 0 ? nano_rpdfile_has_column(db, "nano_dispatch", "aggregate") : 0;
  if (dom < 0 || cat < 0 || ustr < 0 || names < 0 || dispatches < 0 || where < 0) {
    rpdtool_err(cmd, "%s: cannot read the schema: %s", path, sqlite3_errmsg(db));
    nano_rpdfile_close(db, path, err, sizeof err);
    return RPDTOOL_EXIT_USAGE;
  }
  t->db = db;
  t->path = path;
  t->schema_version = version;
  t->has_domain = dom && cat;
  t->has_ustring = ustr;
  t->has_names = names;
  t->has_dispatches = dispatches;
  t->dispatch_where_sql = where ? "coalesce(aggregate, 'host')" : "'host'";
  t->pid_stride = rpdtool_pid_stride(db);
  return 0;
}

/* Shadows string table `table` by a TEMP copy with its strings cut at
 * RPDTOOL_MAX_TEXT, when it has longer ones. Returns 0, or -1 with a message. */
static int rpdtool_cap_strings(struct rpdtool_trace *t, const char *cmd, const char *table) {
  sqlite3_stmt *st = NULL;
  char *sql = sqlite3_mprintf("SELECT count(*) FROM main.\"%w\" WHERE length(string) > %d", table,
                              RPDTOOL_MAX_TEXT);
  int64_t n = -1;
  if (sql && sqlite3_prepare_v2(t->db, sql, -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_free(sql);
  if (n < 0) {
    rpdtool_err(cmd, "%s: cannot read %s: %s", t->path, table, sqlite3_errmsg(t->db));
    return -1;
  }
  if (n == 0)
    return 0;
  /* query_only (nano_rpdfile_open_read) refuses TEMP tables too: lifted for
   * this one statement, which writes only the connection's TEMP schema */
  sql = sqlite3_mprintf(
      "PRAGMA query_only=0; CREATE TEMP TABLE \"%w\"(id INTEGER PRIMARY KEY, string TEXT NOT NULL);"
      "INSERT INTO temp.\"%w\" SELECT id, CASE WHEN length(string) > %d THEN "
      "substr(string, 1, %d) || '\xe2\x80\xa6' ELSE string END FROM main.\"%w\"; PRAGMA "
      "query_only=1",
      table, table, RPDTOOL_MAX_TEXT, RPDTOOL_MAX_TEXT, table);
  char *msg = NULL;
  if (!sql || sqlite3_exec(t->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    sqlite3_exec(t->db, "PRAGMA query_only=1", NULL, NULL, NULL);
    rpdtool_err(cmd, "%s: cannot shorten the strings of %s: %s", t->path, table,
                msg ? msg : "out of memory");
    sqlite3_free(msg);
    sqlite3_free(sql);
    return -1;
  }
  sqlite3_free(sql);
  t->strings_cut = 1;
  fprintf(stderr,
          "rpd %s: %s: %" PRId64 " strings of %s are longer than %d characters: shown cut\n", cmd,
          t->path, n, table, RPDTOOL_MAX_TEXT);
  return 0;
}

int rpdtool_open_view(const char *cmd, const char *path, struct rpdtool_trace *t) {
  int ret = rpdtool_open(cmd, path, RPDTOOL_READ, t);
  if (ret)
    return ret;
  if (rpdtool_cap_strings(t, cmd, "rocpd_string") ||
      (t->has_ustring && rpdtool_cap_strings(t, cmd, "rocpd_ustring"))) {
    rpdtool_close(t);
    return RPDTOOL_EXIT_FAIL;
  }
  return 0;
}

void rpdtool_name_label(char *buf, size_t len, int64_t pid, int64_t tid, const char *name) {
  if (name && *name)
    snprintf(buf, len, "%s", name);
  else if (tid < 0)
    snprintf(buf, len, "process %" PRId64, pid);
  else if (tid == pid)
    snprintf(buf, len, "main thread %" PRId64, tid);
  else
    snprintf(buf, len, "thread %" PRId64, tid);
}

void rpdtool_close(struct rpdtool_trace *t) {
  char err[NANO_RPDFILE_ERRLEN];
  if (t->db && nano_rpdfile_close(t->db, t->path, err, sizeof err) != NANO_RPDFILE_OK)
    fprintf(stderr, "rpd: %s\n", err);
  memset(t, 0, sizeof *t);
}

const char *rpdtool_api_sql(const struct rpdtool_trace *t) {
  /* v3: domain and category interned, args in rocpd_ustring. v2: neither
   * column; user markers are recognisable by their apiName. */
  static const char v3[] =
      "SELECT A.id AS id, A.pid AS pid, A.tid AS tid, A.start AS start, A.end AS end, "
      "coalesce(D.string,'') AS domain, coalesce(C.string,'') AS category, "
      "coalesce(N.string,'') AS apiName, coalesce(G.string,'') AS args "
      "FROM rocpd_api A LEFT JOIN rocpd_string D ON D.id=A.domain_id "
      "LEFT JOIN rocpd_string C ON C.id=A.category_id "
      "LEFT JOIN rocpd_string N ON N.id=A.apiName_id LEFT JOIN rocpd_ustring G ON G.id=A.args_id";
  static const char v3s[] =
      "SELECT A.id AS id, A.pid AS pid, A.tid AS tid, A.start AS start, A.end AS end, "
      "coalesce(D.string,'') AS domain, coalesce(C.string,'') AS category, "
      "coalesce(N.string,'') AS apiName, coalesce(G.string,'') AS args "
      "FROM rocpd_api A LEFT JOIN rocpd_string D ON D.id=A.domain_id "
      "LEFT JOIN rocpd_string C ON C.id=A.category_id "
      "LEFT JOIN rocpd_string N ON N.id=A.apiName_id LEFT JOIN rocpd_string G ON G.id=A.args_id";
  static const char v2[] =
      "SELECT A.id AS id, A.pid AS pid, A.tid AS tid, A.start AS start, A.end AS end, "
      "CASE WHEN N.string='UserMarker' THEN 'UserMarker' ELSE '' END AS domain, '' AS category, "
      "coalesce(N.string,'') AS apiName, coalesce(G.string,'') AS args "
      "FROM rocpd_api A LEFT JOIN rocpd_string N ON N.id=A.apiName_id "
      "LEFT JOIN rocpd_string G ON G.id=A.args_id";
  if (!t->has_domain)
    return v2;
  return t->has_ustring ? v3 : v3s;
}

int rpdtool_span(const struct rpdtool_trace *t, int64_t *lo, int64_t *hi) {
  static const char sql[] =
      "SELECT min(s), max(e) FROM (SELECT min(start) AS s, max(end) AS e FROM rocpd_api "
      "UNION ALL SELECT min(start), max(end) FROM rocpd_op %s %s %s)";
  char buf[640];
  int mon = nano_rpdfile_has_object(t->db, "rocpd_monitor");
  int atomics = mon < 0 ? -1 : nano_rpdfile_has_object(t->db, "nano_atomic_sample");
  int windows = atomics < 0 ? -1 : nano_rpdfile_has_object(t->db, "nano_window");
  if (windows < 0)
    return -1;
  snprintf(buf, sizeof buf, sql,
           mon ? "UNION ALL SELECT min(start), max(end) FROM rocpd_monitor" : "",
           atomics ? "UNION ALL SELECT min(start), max(start) FROM nano_atomic_sample" : "",
           windows ? "UNION ALL SELECT min(start), max(\"end\") FROM nano_window" : "");
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(t->db, buf, -1, &st, NULL) != SQLITE_OK)
    return -1;
  int ret = -1;
  *lo = *hi = 0;
  if (sqlite3_step(st) == SQLITE_ROW) {
    ret = sqlite3_column_type(st, 0) != SQLITE_NULL;
    if (ret) {
      *lo = sqlite3_column_int64(st, 0);
      *hi = sqlite3_column_int64(st, 1);
    }
  }
  sqlite3_finalize(st);
  return ret;
}

int rpdtool_processes(const struct rpdtool_trace *t, int64_t *n) {
  int atomics = nano_rpdfile_has_object(t->db, "nano_atomic_site");
  char *sql = atomics < 0
                  ? NULL
                  : sqlite3_mprintf("SELECT count(*) FROM (SELECT DISTINCT pid FROM rocpd_api%s)",
                                    atomics ? " UNION SELECT pid FROM nano_atomic_site" : "");
  int rc = sql ? rpdtool_int(t->db, sql, n) : -1;
  sqlite3_free(sql);
  return rc;
}

/* ---- tables ------------------------------------------------------------- */

/* A cell's text: names come from the trace, which may be damaged or hostile,
 * so control bytes, escape sequences and broken UTF-8 show as \xNN. */
static char *rpdtool_dup(const char *s) { return nano_text_line(s); }

int rpdtool_table_init(struct rpdtool_table *tb, int ncols, const char *const *header) {
  memset(tb, 0, sizeof *tb);
  tb->ncols = ncols;
  tb->header = calloc((size_t)ncols, sizeof *tb->header);
  tb->right = calloc((size_t)ncols, 1);
  if (!tb->header || !tb->right) {
    rpdtool_table_free(tb);
    return -1;
  }
  for (int i = 0; i < ncols; i++)
    if (!(tb->header[i] = rpdtool_dup(header[i]))) {
      rpdtool_table_free(tb);
      return -1;
    }
  return 0;
}

void rpdtool_table_right(struct rpdtool_table *tb, int col) {
  if (col >= 0 && col < tb->ncols)
    tb->right[col] = 1;
}

int rpdtool_table_add(struct rpdtool_table *tb, const char *const *cells) {
  size_t n = (size_t)tb->ncols;
  if (tb->nrows == tb->cap) {
    size_t cap = tb->cap ? tb->cap * 2 : 16;
    char **c = realloc(tb->cells, cap * n * sizeof *c);
    if (!c)
      return -1;
    tb->cells = c;
    tb->cap = cap;
  }
  char **row = tb->cells + tb->nrows * n;
  for (size_t i = 0; i < n; i++) {
    if (!(row[i] = rpdtool_dup(cells[i]))) {
      while (i--)
        free(row[i]);
      return -1;
    }
  }
  tb->nrows++;
  return 0;
}

/* Display width of a UTF-8 string: its count of non-continuation bytes. */
static size_t rpdtool_width(const char *s) {
  size_t w = 0;
  for (; *s; s++)
    if (((unsigned char)*s & 0xC0) != 0x80)
      w++;
  return w;
}

/* Prints `s` padded to `w` characters, on the left or the right; no padding
 * after the last column. */
static void rpdtool_cell(FILE *out, const char *s, size_t w, int right, int last) {
  size_t n = rpdtool_width(s);
  size_t pad = w > n ? w - n : 0;
  if (right)
    fprintf(out, "%*s%s", (int)pad, "", s);
  else
    fprintf(out, "%s%*s", s, last ? 0 : (int)pad, "");
}

void rpdtool_table_print(const struct rpdtool_table *tb, FILE *out) {
  size_t n = (size_t)tb->ncols;
  size_t *w = calloc(n ? n : 1, sizeof *w);
  if (!w)
    return;
  for (size_t c = 0; c < n; c++) {
    w[c] = rpdtool_width(tb->header[c]);
    for (size_t r = 0; r < tb->nrows; r++) {
      size_t x = rpdtool_width(tb->cells[r * n + c]);
      if (x > w[c])
        w[c] = x;
    }
  }
  for (size_t c = 0; c < n; c++) {
    if (c)
      fputs("  ", out);
    rpdtool_cell(out, tb->header[c], w[c], tb->right[c], c + 1 == n);
  }
  fputc('\n', out);
  for (size_t c = 0; c < n; c++) {
    if (c)
      fputs("  ", out);
    for (size_t i = 0; i < w[c]; i++)
      fputc('-', out);
  }
  fputc('\n', out);
  for (size_t r = 0; r < tb->nrows; r++) {
    for (size_t c = 0; c < n; c++) {
      if (c)
        fputs("  ", out);
      rpdtool_cell(out, tb->cells[r * n + c], w[c], tb->right[c], c + 1 == n);
    }
    fputc('\n', out);
  }
  free(w);
}

void rpdtool_table_free(struct rpdtool_table *tb) {
  size_t n = (size_t)tb->ncols;
  if (tb->header)
    for (size_t i = 0; i < n; i++)
      free(tb->header[i]);
  if (tb->cells)
    for (size_t i = 0; i < tb->nrows * n; i++)
      free(tb->cells[i]);
  free(tb->header);
  free(tb->right);
  free(tb->cells);
  memset(tb, 0, sizeof *tb);
}

int rpdtool_print_query(const char *cmd, sqlite3 *db, const char *sql, long limit, FILE *out) {
  return rpdtool_print_section(cmd, db, sql, limit, NULL, out);
}

int rpdtool_print_section(const char *cmd, sqlite3 *db, const char *sql, long limit,
                          const char *title, FILE *out) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
    return rpdtool_err(cmd, "query failed: %s", sqlite3_errmsg(db));
  int n = sqlite3_column_count(st);
  const char **hdr = calloc((size_t)(n ? n : 1), sizeof *hdr);
  char **cells = calloc((size_t)(n ? n : 1), sizeof *cells);
  unsigned char *num = calloc((size_t)(n ? n : 1), 1);
  char *nums = malloc((size_t)(n ? n : 1) * 64); /* per column: a number's text */
  struct rpdtool_table tb;
  int ret = 0;
  if (!hdr || !cells || !num || !nums) {
    free(hdr), free(cells), free(num), free(nums);
    sqlite3_finalize(st);
    return rpdtool_err(cmd, "out of memory");
  }
  for (int i = 0; i < n; i++)
    hdr[i] = sqlite3_column_name(st, i);
  if (rpdtool_table_init(&tb, n, hdr) != 0) {
    free(hdr), free(cells), free(num), free(nums);
    sqlite3_finalize(st);
    return rpdtool_err(cmd, "out of memory");
  }
  long rows = 0;
  int rc = SQLITE_DONE;
  while ((limit <= 0 || rows < limit) && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    for (int i = 0; i < n; i++) {
      char *buf = nums + (size_t)i * 64;
      const char *s = buf;
      switch (sqlite3_column_type(st, i)) {
      case SQLITE_INTEGER:
        snprintf(buf, 64, "%lld", (long long)sqlite3_column_int64(st, i));
        num[i] = 1;
        break;
      case SQLITE_FLOAT:
        snprintf(buf, 64, "%.2f", sqlite3_column_double(st, i));
        num[i] = 1;
        break;
      case SQLITE_NULL:
        s = "";
        break;
      default:
        s = (const char *)sqlite3_column_text(st, i);
        break;
      }
      cells[i] = (char *)s;
    }
    if (rpdtool_table_add(&tb, (const char *const *)cells) != 0) {
      ret = rpdtool_err(cmd, "out of memory");
      break;
    }
    rows++;
  }
  long total = rows;
  if (!ret && title && limit > 0 && rows == limit) /* the rows beyond the limit, counted */
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
      total++;
  if (!ret && (limit <= 0 || rows < limit || title) && rc != SQLITE_DONE)
    ret = rpdtool_err(cmd, "query failed: %s", sqlite3_errmsg(db));
  if (!ret && title && total > rows)
    fprintf(out, "\n%s (%ld of %ld):\n", title, rows, total);
  else if (!ret && title && rows > 0)
    fprintf(out, "\n%s:\n", title);
  if (!ret && (!title || rows > 0)) {
    for (int i = 0; i < n; i++)
      if (num[i])
        rpdtool_table_right(&tb, i);
    rpdtool_table_print(&tb, out);
  }
  rpdtool_table_free(&tb);
  free(hdr), free(cells), free(num), free(nums);
  sqlite3_finalize(st);
  return ret;
}

/* ---- option values ------------------------------------------------------ */

/* 1 when s ends in a unit letter (an offset), 0 otherwise. */
static int rpdtool_time_has_unit(const char *s) {
  size_t len = strlen(s);
  return len > 0 && (s[len - 1] == 's');
}

int rpdtool_parse_time(const char *s, int64_t lo, int64_t hi, int64_t *out) {
  if (!s || !*s)
    return -1;
  char *end = NULL;
  errno = 0;
  if (s[0] == '+' || rpdtool_time_has_unit(s)) {
    const char *num = s + (s[0] == '+');
    double v = strtod(num, &end);
    if (end == num || errno || !isfinite(v) || v < 0)
      return -1;
    double scale;
    if (!strcmp(end, "ns"))
      scale = 1;
    else if (!strcmp(end, "us"))
      scale = 1e3;
    else if (!strcmp(end, "ms"))
      scale = 1e6;
    else if (!strcmp(end, "s"))
      scale = 1e9;
    else
      return -1;
    double ns = v * scale;
    if (ns > 9e18)
      return -1;
    *out = lo + (int64_t)llround(ns);
    return 0;
  }
  size_t len = strlen(s);
  if (s[len - 1] == '%') {
    double v = strtod(s, &end);
    if (end == s || end != s + len - 1 || errno || !isfinite(v) || v < 0 || v > 100)
      return -1;
    *out = rpdtool_add(lo, (int64_t)llround((double)rpdtool_sub(hi, lo) * v / 100.0));
    return 0;
  }
  long long v = strtoll(s, &end, 10);
  if (end == s || *end || errno || v < 0)
    return -1;
  *out = (int64_t)v;
  return 0;
}

/* Parses one bound of a window (see rpdtool_window); 0, or the usage status. */
static int rpdtool_bound(const char *cmd, const char *opt, const char *s, int64_t lo, int64_t hi,
                         int64_t *out) {
  if (!s)
    return 0;
  if (rpdtool_parse_time(s, lo, hi, out) != 0)
    return rpdtool_usage(cmd,
                         "%s: '%s' is not a time (ns on the trace's clock, N%%, or an "
                         "offset from the start with a unit: 5us, +1.5ms, 2s)",
                         opt, s);
  if (s[0] != '+' && !rpdtool_time_has_unit(s) && s[strlen(s) - 1] != '%' &&
      (*out < lo || *out > hi))
    fprintf(stderr,
            "rpd %s: warning: %s %s is %s ns on the trace's clock, outside the trace "
            "(%" PRId64 " .. %" PRId64 " ns); write a unit for an offset from its start "
            "(%sus, +%sms)\n",
            cmd, opt, s, s, lo, hi, s, s);
  return 0;
}

int rpdtool_window(const char *cmd, const char *start, const char *end, int64_t lo, int64_t hi,
                   int64_t *a, int64_t *b) {
  *a = lo;
  *b = hi;
  int ret = rpdtool_bound(cmd, "--start", start, lo, hi, a);
  if (!ret)
    ret = rpdtool_bound(cmd, "--end", end, lo, hi, b);
  if (!ret && *a > *b)
    ret = rpdtool_usage(cmd, "--start (%" PRId64 " ns) is after --end (%" PRId64 " ns)", *a, *b);
  return ret;
}

int rpdtool_parse_count(const char *s, long *out) {
  if (!s || !*s)
    return -1;
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (*end || errno || v < 0 || s[0] == '-' || s[0] == '+')
    return -1;
  *out = v;
  return 0;
}

/* ---- progress ----------------------------------------------------------- */

void rpdtool_progress_start(struct rpdtool_progress *p, const char *label, uint64_t total) {
  p->on = isatty(STDERR_FILENO) && total > 0;
  p->label = label;
  p->total = total;
  p->done = 0;
  p->shown = -1;
}

void rpdtool_progress_add(struct rpdtool_progress *p, uint64_t n) {
  p->done += n;
  if (!p->on)
    return;
  int pct = (int)(p->done >= p->total ? 100 : p->done * 100 / p->total);
  if (pct == p->shown)
    return;
  p->shown = pct;
  fprintf(stderr, "\r%s %3d%%", p->label, pct);
  fflush(stderr);
}

void rpdtool_progress_end(struct rpdtool_progress *p) {
  if (p->on && p->shown >= 0)
    fprintf(stderr, "\r%*s\r", (int)strlen(p->label) + 5, "");
  p->shown = -1;
}

int rpdtool_int(sqlite3 *db, const char *sql, int64_t *out) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
    return -1;
  int ret = -1;
  if (sqlite3_step(st) == SQLITE_ROW) {
    *out = sqlite3_column_int64(st, 0);
    ret = 0;
  }
  sqlite3_finalize(st);
  return ret;
}

int rpdtool_has_rows(sqlite3 *db, const char *name) {
  int has = nano_rpdfile_has_object(db, name);
  if (has <= 0)
    return has;
  int64_t n = 0;
  char *sql = sqlite3_mprintf("SELECT EXISTS (SELECT 1 FROM \"%w\")", name);
  int rc = sql ? rpdtool_int(db, sql, &n) : -1;
  sqlite3_free(sql);
  return rc ? -1 : (int)n;
}

char *rpdtool_ranges_sql(const struct rpdtool_trace *t) {
  return sqlite3_mprintf(
      "SELECT CASE WHEN apiName = 'UserMarker' THEN args ELSE apiName END AS name, domain, "
      "count(*) AS calls, "
      "sum(\"end\" - start) / 1e6 AS total_ms, avg(\"end\" - start) / 1e3 AS avg_us "
      "FROM (%s) GROUP BY domain, name ORDER BY sum(\"end\" - start) DESC, calls DESC",
      rpdtool_api_sql(t));
}

char *rpdtool_top_sql(const char *cmd, struct rpdtool_trace *t) {
  /* the file's own view reads the file's strings, not the cut copies that
   * shadow them on this connection (a 50 MB description on 400 ops took
   * `rpd top` 263 s and 20 GB through it): the schema's text then */
  int view = t->strings_cut ? 0 : nano_rpdfile_has_object(t->db, "top");
  if (view < 0) {
    rpdtool_err(cmd, "%s: %s", t->path, sqlite3_errmsg(t->db));
    return NULL;
  }
  static const char key[] = "CREATE VIEW top AS ";
  const char *def = view ? NULL : strstr(nano_rpdfile_schema_sql(), key);
  const char *end = def ? strchr(def, ';') : NULL;
  if (!view && !end) {
    rpdtool_err(cmd, "internal: no top view in the RPD schema");
    return NULL;
  }
  const char *body = def ? def + sizeof key - 1 : NULL;
  char *sql = view ? sqlite3_mprintf("SELECT * FROM top")
                   : sqlite3_mprintf("%.*s", (int)(end - body), body);
  if (!sql)
    rpdtool_err(cmd, "out of memory");
  return sql;
}

int rpdtool_metadata_sum(const struct rpdtool_trace *t, const char *tag, int64_t *out) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(t->db,
                         "SELECT coalesce(sum(CAST(value AS INTEGER)), 0) FROM rocpd_metadata "
                         "WHERE tag = ?1",
                         -1, &st, NULL) != SQLITE_OK)
    return -1;
  int ret = -1;
  if (sqlite3_bind_text(st, 1, tag, -1, SQLITE_STATIC) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW) {
    *out = sqlite3_column_int64(st, 0);
    ret = 0;
  }
  sqlite3_finalize(st);
  return ret;
}

sqlite3_stmt *rpdtool_prepare(const char *cmd, const struct rpdtool_trace *t, const char *sql) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(t->db, sql, -1, &st, NULL) == SQLITE_OK)
    return st;
  rpdtool_err(cmd, "%s: query failed: %s", t->path, sqlite3_errmsg(t->db));
  sqlite3_finalize(st);
  return NULL;
}

int rpdtool_done(const char *cmd, const struct rpdtool_trace *t, sqlite3_stmt *st, int rc,
                 FILE *out, const char *out_name) {
  sqlite3_finalize(st);
  if (out && ferror(out))
    return rpdtool_err(cmd, "%s: write failed (is the disk full?)", out_name);
  if (rc != SQLITE_DONE)
    return rpdtool_err(cmd, "%s: query failed: %s", t->path, sqlite3_errmsg(t->db));
  return 0;
}
