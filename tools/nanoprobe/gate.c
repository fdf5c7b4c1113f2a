/*
 * gate.c: `nanoprobe gate`, the regression gate of nanoprobe.
 *
 *   nanoprobe gate --baseline base.json [--tolerance [SCOPE=]T]... [--kinds-only]
 *                  [--update] [--metric atomics|instructions] [--tool callgrind|perf]
 *                  [--tracker libnano_tracker.so] -- ./app args...
 *   nanoprobe gate --baseline base.json --current cur.json [--tolerance [SCOPE=]T]...
 *
 * --baseline and --current also take an RPD trace recorded with atomics
 * (gate_trace.c: its sites and counts as the tracker's document).
 *
 * Metric "atomics" (default): runs the command with libnano_tracker.so in
 * LD_PRELOAD and NANO_TRACKER_FORMAT=json, one dump per process into a
 * private temporary folder, and sums the dumps; or reads --current. Counts are
 * compared per kind and per site. A site is identified by what survives edits
 * that do not touch atomics (gate_stabilize): its path relative to the source
 * root (--root, $NANO_GATE_ROOT, else the git checkout, else the folder of
 * the sites' sources; a baseline stores its own), function (demangled), kind,
 * order and a tag among that function's sites of that kind and library
 * location (gate_pair: baseline and run paired by their line shifts); its
 * line and column are shown, not matched. A run with no
 * instrumented site, or none in common with the baseline, is an error (2).
 * Metric "instructions": counts the instructions the command executes, with
 * valgrind's callgrind (children traced too) or `perf stat -e instructions:u`,
 * and compares that one number.
 *
 * A count regresses when current > baseline + allowance. A tolerance T is N
 * (an absolute count), M% (of the baseline, rounded up) or N+M% (both added);
 * its SCOPE is everything (none given), "kinds" (the per-kind totals),
 * "sites" (every site), or one kind ("fetch_add" or "__atomic_fetch_add": its
 * total and its sites). The most specific scope wins. --kinds-only compares
 * the per-kind totals alone, as PyTorch's atomics tracker prints them. Exit status: 0 no regression
 * (or
 * --update wrote the baseline), 1 regression (a diff is printed), 2 bad usage,
 * a missing or malformed baseline or current file, or a command that could
 * not be measured (it failed, or the measuring tool did).
 *
 * JSON documents are read and written with jansson.
 */
#define _GNU_SOURCE /* mkdtemp, strdup */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nano/atomics.h"
#include "nano/demangle.h"
#include "nano/settings.h"
#include "nanoprobe.h"

#define GATE_FORMAT_ATOMICS "nanoprobe-atomics"
#define GATE_FORMAT_INSTRUCTIONS "nanoprobe-instructions"

/* A tolerance: an absolute count plus a percentage of the baseline. */
struct gate_tol {
  json_int_t abs;
  double pct;
};

/* The kinds, named as the tracker's JSON names them (nano/atomic_kinds.def). */
static const char *const gate_kind_names[NANO_KIND_COUNT] = {
#define NANO_KIND(id, name, value) [NANO_KIND_##id] = "__atomic_" #name,
#include "nano/atomic_kinds.def"
};

/* The options of one gate run. */
struct gate_opts {
  const char *baseline;
  const char *current;
  const char *tracker;
  const char *tool; /* callgrind or perf */
  int instructions; /* --metric instructions */
  int update;
  int kinds_only;   /* compare per-kind totals, not sites */
  const char *root; /* --root, $NANO_GATE_ROOT or the git checkout: stripped from paths */
  /* tolerances by scope: every count, kind totals, sites, one kind each */
  struct gate_tol all, kinds, sites, kind[NANO_KIND_COUNT];
  int has_kinds, has_sites, has_kind[NANO_KIND_COUNT];
  char **cmd; /* argv of the command, NULL-terminated, or NULL */
};

/* Counts of one run, normalised: per kind and per site key, as json
 * objects of integers (jansson keeps insertion order). */
struct gate_counts {
  json_t *doc;       /* the document as written to a baseline */
  json_t *kinds;     /* name -> count (borrowed from doc, or owned for instructions) */
  json_t *sites;     /* exact key -> count (owned): merges the dumps of processes */
  json_t *site_docs; /* exact key -> the site's first object (owned) */
  json_t *stable;    /* stable key -> count (owned): what is compared */
  json_t *where;     /* stable key -> "file:line:column" (owned), for messages */
};

static void gate_usage(FILE *out) {
  fputs(
      "usage: nanoprobe gate --baseline FILE [--tolerance [SCOPE=]T]... [--kinds-only]\n"
      "                      [--update] [--metric atomics|instructions] [--tool callgrind|perf]\n"
      "                      [--tracker LIB] [--root DIR] -- COMMAND [ARGS...]\n"
      "       nanoprobe gate --baseline FILE --current FILE [--tolerance [SCOPE=]T]... [--update]\n"
      "FILE: the tracker's JSON dump, a baseline, or an RPD trace recorded with atomics\n"
      "(nanoprobe run --atomics).\n"
      "Compares the atomics (or instructions) COMMAND executes with a baseline;\n"
      "exit 0: within tolerance, 1: grew (diff printed), 2: bad input.\n"
      "  T: N (count), M% (of the baseline) or N+M% (both)\n"
      "  SCOPE: kinds (per-kind totals), sites (every site), or a kind (fetch_add:\n"
      "         its total and its sites); none: every count. Repeat for several.\n"
      "  --kinds-only  compare the per-kind totals only (no sites)\n"
      "  --root DIR    source root stripped from site paths (default: $NANO_GATE_ROOT,\n"
      "                else the git checkout of the current folder, else the folder\n"
      "                of the sites' source files)\n"
      "A site is its path under the root, function, order, kind and a tag among that\n"
      "function's sites of that kind and library location (their pairing by line\n"
      "shifts); line:column is shown, not matched.\n",
      out);
}

/* The exact key of a site: "file:line:column function kind", which merges
 * the same site's counts from several processes. Returns a new string or
 * NULL when out of memory. */
static char *gate_site_key(const char *file, json_int_t line, json_int_t column,
                           const char *function, const char *kind) {
  char *key = NULL;
  if (asprintf(&key, "%s:%" JSON_INTEGER_FORMAT ":%" JSON_INTEGER_FORMAT " %s %s",
               file[0] ? file : "?", line, column, function[0] ? function : "?", kind) < 0)
    return NULL;
  return key;
}

/* Adds n to the integer under key in object obj. Returns 0 or -1. */
static int gate_add(json_t *obj, const char *key, json_int_t n) {
  json_t *v = json_object_get(obj, key);
  if (v != NULL)
    return json_integer_set(v, json_integer_value(v) + n);
  return json_object_set_new(obj, key, json_integer(n));
}

/*
 * Checks an atomics document and adds its kinds and sites to *c (merging
 * several processes' dumps). `what` names the input in errors. Returns 0, or
 * -1 after printing what is wrong.
 */
static int gate_merge_atomics(struct gate_counts *c, json_t *doc, const char *what) {
  json_t *fmt = json_object_get(doc, "format");
  if (!json_is_object(doc) || !json_is_string(fmt)) {
    fprintf(stderr, "nanoprobe gate: %s is malformed: not a JSON object with a \"format\"\n", what);
    return -1;
  }
  if (strcmp(json_string_value(fmt), GATE_FORMAT_ATOMICS) != 0) {
    fprintf(stderr,
            "nanoprobe gate: %s is a \"%s\" document, not \"%s\" (use the matching --metric)\n",
            what, json_string_value(fmt), GATE_FORMAT_ATOMICS);
    return -1;
  }
  json_t *version = json_object_get(doc, "version");
  if (!json_is_integer(version) || json_integer_value(version) != 1) {
    fprintf(stderr, "nanoprobe gate: %s is malformed: \"version\" is not 1\n", what);
    return -1;
  }
  json_t *kinds = json_object_get(doc, "kinds");
  json_t *sites = json_object_get(doc, "sites");
  if (!json_is_object(kinds) || !json_is_array(sites)) {
    fprintf(stderr,
            "nanoprobe gate: %s is malformed: needs a \"kinds\" object and a \"sites\" array\n",
            what);
    return -1;
  }
  const char *name;
  json_t *v;
  json_object_foreach(kinds, name, v) {
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
      fprintf(stderr, "nanoprobe gate: %s is malformed: kinds.%s is not a count\n", what, name);
      return -1;
    }
    if (gate_add(c->kinds, name, json_integer_value(v)) != 0)
      goto nomem;
  }
  size_t i;
  json_t *s;
  json_array_foreach(sites, i, s) {
    const char *kind, *file, *function;
    json_int_t line, column, count;
    if (json_unpack(s, "{s:s, s:s, s:s, s:I, s:I, s:I}", "kind", &kind, "file", &file, "function",
                    &function, "line", &line, "column", &column, "count", &count) != 0 ||
        count < 0) {
      fprintf(stderr,
              "nanoprobe gate: %s is malformed: sites[%zu] needs kind, file, function (strings), "
              "line, column, count (integers)\n",
              what, i);
      return -1;
    }
    char *key = gate_site_key(file, line, column, function, kind);
    if (key == NULL)
      goto nomem;
    int rc = gate_add(c->sites, key, count);
    if (rc == 0 && c->site_docs != NULL && json_object_get(c->site_docs, key) == NULL) {
      json_t *copy = json_deep_copy(s);
      if (copy != NULL)
        json_object_del(copy, "id"); /* process-local; absent from merged documents */
      rc = copy == NULL || json_object_set_new(c->site_docs, key, copy) != 0;
    }
    free(key);
    if (rc != 0)
      goto nomem;
  }
  return 0;
nomem:
  fprintf(stderr, "nanoprobe gate: out of memory reading %s\n", what);
  return -1;
}

/* Reads an atomics or instructions document from path into *c. Returns 0, or
 * 2 after saying why the file is missing or malformed. */
static int gate_read(struct gate_counts *c, const char *path, const char *role, int instructions) {
  char what[PATH_MAX + 32];
  snprintf(what, sizeof what, "%s '%s'", role, path);
  json_t *doc;
  if (!instructions && gate_is_trace(path)) {
    doc = gate_trace_atomics(path, what);
    if (doc == NULL)
      return 2;
  } else {
    json_error_t err;
    doc = json_load_file(path, 0, &err);
    if (doc == NULL) {
      if (access(path, R_OK) != 0)
        fprintf(stderr, "nanoprobe gate: %s is missing: %s\n", what, strerror(errno));
      else
        fprintf(stderr, "nanoprobe gate: %s is malformed: line %d column %d: %s\n", what, err.line,
                err.column, err.text);
      return 2;
    }
  }
  c->doc = doc;
  c->kinds = json_object();
  c->sites = json_object();
  c->site_docs = json_object();
  if (c->kinds == NULL || c->sites == NULL || c->site_docs == NULL) {
    fprintf(stderr, "nanoprobe gate: out of memory reading %s\n", what);
    return 2;
  }
  if (!instructions)
    return gate_merge_atomics(c, doc, what) == 0 ? 0 : 2;
  const char *fmt = NULL;
  json_int_t n = -1;
  if (json_unpack(doc, "{s:s, s:I}", "format", &fmt, "instructions", &n) != 0 || n < 0) {
    fprintf(stderr, "nanoprobe gate: %s is malformed: needs \"format\" and \"instructions\"\n",
            what);
    return 2;
  }
  if (strcmp(fmt, GATE_FORMAT_INSTRUCTIONS) != 0) {
    fprintf(stderr,
            "nanoprobe gate: %s is a \"%s\" document, not \"%s\" (use the matching --metric)\n",
            what, fmt, GATE_FORMAT_INSTRUCTIONS);
    return 2;
  }
  return gate_add(c->kinds, "instructions", n) == 0 ? 0 : 2;
}

static void gate_free(struct gate_counts *c) {
  json_decref(c->doc);
  json_decref(c->kinds);
  json_decref(c->sites);
  json_decref(c->site_docs);
  json_decref(c->stable);
  json_decref(c->where);
  memset(c, 0, sizeof *c);
}

/* Finds libnano_tracker.so: --tracker, $NANO_GATE_TRACKER, then next to this
 * program in the build tree or the install tree. Returns a path or NULL. */
static const char *gate_find_tracker(const char *given, char *buf, size_t n) {
  if (given != NULL)
    return given;
  const char *env = nano_env_str("NANO_GATE_TRACKER");
  if (env != NULL)
    return env;
  return nanoprobe_locate(NANOPROBE_TRACKER, buf, n);
}

/* Runs argv with extra environment `env` (NULL-terminated "K=V" list).
 * Returns the exit
 * status, or -1 after saying why it could not run or how it died. */
static int gate_spawn(char **argv, char **env, const char *label) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "nanoprobe gate: fork: %s\n", strerror(errno));
    return -1;
  }
  if (pid == 0) {
    for (char **e = env; e && *e; e++)
      if (putenv(*e) != 0)
        _exit(127);
    execvp(argv[0], argv);
    fprintf(stderr, "nanoprobe gate: cannot run '%s': %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      fprintf(stderr, "nanoprobe gate: waitpid: %s\n", strerror(errno));
      return -1;
    }
  }
  if (WIFSIGNALED(status)) {
    fprintf(stderr, "nanoprobe gate: %s died of signal %d\n", label, WTERMSIG(status));
    return -1;
  }
  return WEXITSTATUS(status);
}

/* Removes the files of temporary folder dir and the folder. */
static void gate_rmdir(const char *dir) {
  DIR *d = opendir(dir);
  if (d != NULL) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.')
        continue;
      char p[PATH_MAX];
      int long_name = snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p;
      if (long_name)
        errno = ENAMETOOLONG;
      if (long_name || unlink(p) != 0)
        fprintf(stderr, "nanoprobe gate: cannot remove '%s': %s\n", p, strerror(errno));
    }
    closedir(d);
  }
  if (rmdir(dir) != 0)
    fprintf(stderr, "nanoprobe gate: cannot remove '%s': %s\n", dir, strerror(errno));
}

/* Sums the counts callgrind wrote into dir (one file per process). Returns the
 * instructions, or -1 after saying what is wrong. */
/* valgrind's own messages (its --log-file, one per process, in dir),
 * passed on to stderr, except the lines valgrind 3.19 (Debian 12's) prints
 * for every DWARF 5 form it cannot read (clang's default debug info): those
 * are summed up in one line, with the way out. The counts are unaffected:
 * valgrind counts instructions without the debug info. */
#define GATE_DWARF5_LINE "unhandled dwarf2 abbrev form"
static void gate_valgrind_logs(const char *dir, int failed) {
  DIR *d = opendir(dir);
  if (d == NULL)
    return;
  int dwarf5 = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, "valgrind.", 9) != 0)
      continue;
    char p[PATH_MAX], line[4096];
    if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p)
      continue;
    FILE *f = fopen(p, "r");
    if (f == NULL)
      continue;
    while (fgets(line, sizeof line, f) != NULL) {
      if (strstr(line, GATE_DWARF5_LINE))
        dwarf5 = 1;
      else
        fputs(line, stderr);
    }
    fclose(f);
  }
  closedir(d);
  if (dwarf5)
    fprintf(stderr,
            "nanoprobe gate: valgrind could not read part of the program's DWARF 5 debug info "
            "(valgrind before 3.20; clang's default)%s; rebuild with -gdwarf-4, or use --tool "
            "perf\n",
            failed ? ", which may be why it failed" : "; the instruction count is unaffected");
}

static long long gate_callgrind_total(const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL) {
    fprintf(stderr, "nanoprobe gate: cannot read '%s': %s\n", dir, strerror(errno));
    return -1;
  }
  long long total = 0;
  int files = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, "callgrind.out.", 14) != 0)
      continue;
    char p[PATH_MAX];
    int long_name = snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p;
    if (long_name)
      errno = ENAMETOOLONG;
    FILE *f = long_name ? NULL : fopen(p, "r");
    if (f == NULL) {
      fprintf(stderr, "nanoprobe gate: cannot read '%s': %s\n", p, strerror(errno));
      continue;
    }
    char line[4096];
    long long n = -1;
    while (fgets(line, sizeof line, f) != NULL)
      if (strncmp(line, "summary:", 8) == 0 || (n < 0 && strncmp(line, "totals:", 7) == 0))
        n = strtoll(strchr(line, ':') + 1, NULL, 10);
    fclose(f);
    if (n >= 0) {
      total += n;
      files++;
    }
  }
  closedir(d);
  if (files == 0) {
    fprintf(stderr, "nanoprobe gate: callgrind wrote no counts\n");
    return -1;
  }
  return total;
}

/* Parses the CSV output of `perf stat -x,`; returns instructions or -1. */
static long long gate_perf_total(const char *path) {
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    fprintf(stderr, "nanoprobe gate: cannot read '%s': %s\n", path, strerror(errno));
    return -1;
  }
  char line[4096];
  long long n = -1;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strstr(line, ",instructions") == NULL)
      continue;
    if (line[0] < '0' || line[0] > '9') {
      fprintf(stderr,
              "nanoprobe gate: perf cannot count instructions here (%.*s); use --tool callgrind\n",
              (int)strcspn(line, ",\n"), line);
      break;
    }
    n = strtoll(line, NULL, 10);
  }
  fclose(f);
  return n;
}

/* Runs the command and measures it into *c. Returns 0, or 2 when it could
 * not be measured. */
static int gate_measure(struct gate_counts *c, const struct gate_opts *o) {
  const char *tmp = getenv("TMPDIR");
  char dir[PATH_MAX];
  if (snprintf(dir, sizeof dir, "%s/nanoprobe-gate-XXXXXX", tmp && *tmp ? tmp : "/tmp") >=
      (int)sizeof dir) {
    fprintf(stderr, "nanoprobe gate: TMPDIR is too long: %s\n", tmp);
    return 2;
  }
  if (mkdtemp(dir) == NULL) {
    fprintf(stderr, "nanoprobe gate: cannot create a temporary folder %s: %s\n", dir,
            strerror(errno));
    return 2;
  }
  int rc = 2;
  c->kinds = json_object();
  c->sites = json_object();
  c->site_docs = json_object();
  if (c->kinds == NULL || c->sites == NULL || c->site_docs == NULL)
    goto out;
  size_t nargs = 0;
  while (o->cmd[nargs])
    nargs++;
  char **argv = calloc(nargs + 8, sizeof *argv);
  if (argv == NULL)
    goto out;
  char arg1[PATH_MAX + 64], arg2[PATH_MAX + 64];
  if (!o->instructions) {
    char libbuf[PATH_MAX];
    const char *lib = gate_find_tracker(o->tracker, libbuf, sizeof libbuf);
    if (lib == NULL) {
      fprintf(stderr, "nanoprobe gate: cannot find libnano_tracker.so; pass --tracker PATH\n");
      free(argv);
      goto out;
    }
    char preload[PATH_MAX * 2 + 16], output[PATH_MAX + 32];
    const char *old = getenv("LD_PRELOAD");
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s%s%s", lib, old && old[0] ? ":" : "",
             old ? old : "");
    snprintf(output, sizeof output, "NANO_TRACKER_OUTPUT=%s/%%p.json", dir);
    char *env[] = {preload, output, "NANO_TRACKER_FORMAT=json", NULL};
    int status = gate_spawn(o->cmd, env, o->cmd[0]);
    free(argv);
    if (status != 0) {
      if (status > 0)
        fprintf(stderr, "nanoprobe gate: '%s' exited with status %d; not comparing\n", o->cmd[0],
                status);
      goto out;
    }
    DIR *d = opendir(dir);
    if (d == NULL) {
      fprintf(stderr, "nanoprobe gate: cannot read '%s': %s\n", dir, strerror(errno));
      goto out;
    }
    int bad = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.')
        continue;
      char p[PATH_MAX + 300], what[PATH_MAX + 400];
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      snprintf(what, sizeof what, "the tracker's dump '%s'", p);
      json_error_t err;
      json_t *doc = json_load_file(p, 0, &err);
      if (doc == NULL) {
        fprintf(stderr, "nanoprobe gate: %s is malformed: %s\n", what, err.text);
        bad = 1;
        continue;
      }
      if (gate_merge_atomics(c, doc, what) != 0)
        bad = 1;
      json_decref(doc);
    }
    closedir(d);
    if (bad)
      goto out;
  } else {
    size_t a = 0;
    int callgrind = o->tool == NULL || strcmp(o->tool, "callgrind") == 0;
    if (callgrind) {
      snprintf(arg1, sizeof arg1, "--callgrind-out-file=%s/callgrind.out.%%p", dir);
      snprintf(arg2, sizeof arg2, "--log-file=%s/valgrind.%%p.log", dir);
      argv[a++] = "valgrind";
      argv[a++] = "--tool=callgrind";
      argv[a++] = "--trace-children=yes";
      argv[a++] = "-q";
      argv[a++] = arg1;
      argv[a++] = arg2;
    } else {
      snprintf(arg2, sizeof arg2, "%s/perf.csv", dir);
      argv[a++] = "perf";
      argv[a++] = "stat";
      argv[a++] = "-x,";
      argv[a++] = "-e";
      argv[a++] = "instructions:u";
      argv[a++] = "-o";
      argv[a++] = arg2;
    }
    memcpy(argv + a, o->cmd, (nargs + 1) * sizeof *argv);
    int status = gate_spawn(argv, NULL, argv[0]);
    free(argv);
    if (callgrind)
      gate_valgrind_logs(dir, status != 0);
    if (status != 0) {
      if (status > 0)
        fprintf(stderr, "nanoprobe gate: '%s' under %s exited with status %d; not comparing\n",
                o->cmd[0], callgrind ? "valgrind" : "perf", status);
      goto out;
    }
    long long n = callgrind ? gate_callgrind_total(dir) : gate_perf_total(arg2);
    if (n < 0)
      goto out;
    if (gate_add(c->kinds, "instructions", n) != 0)
      goto out;
    c->doc = json_pack("{s:s, s:i, s:s, s:I}", "format", GATE_FORMAT_INSTRUCTIONS, "version", 1,
                       "tool", callgrind ? "callgrind" : "perf", "instructions", (json_int_t)n);
    rc = c->doc ? 0 : 2;
    goto out;
  }
  /* The merged atomics document, as a baseline stores it. */
  json_t *sites = json_array();
  json_int_t total = 0;
  const char *key;
  json_t *v;
  json_object_foreach(c->kinds, key, v) total += json_integer_value(v);
  json_object_foreach(c->site_docs, key, v) {
    if (sites == NULL || json_object_set(v, "count", json_object_get(c->sites, key)) != 0 ||
        json_array_append(sites, v) != 0)
      goto out;
  }
  c->doc = json_pack("{s:s, s:i, s:I, s:O, s:o}", "format", GATE_FORMAT_ATOMICS, "version", 1,
                     "total", total, "kinds", c->kinds, "sites", sites);
  rc = c->doc ? 0 : 2;
out:
  gate_rmdir(dir);
  return rc;
}

/* A site as the stable keys see it (strings borrowed from its object, but
 * function: demangled, owned). */
struct gate_site {
  const char *file, *kind, *order, *lib;
  char *function;
  json_int_t line, column, count, lib_line;
  json_t *inlined_from; /* the library location, or NULL */
};

/* Sites of one file, function, kind, order and library location (the
 * inlined-from one: a library's atomic inlined into a function is told from
 * the function's own) are together, by position. */
static int gate_site_group_cmp(const struct gate_site *a, const struct gate_site *b) {
  int r = strcmp(a->file, b->file);
  if (!r)
    r = strcmp(a->function, b->function);
  if (!r)
    r = strcmp(a->kind, b->kind);
  if (!r)
    r = strcmp(a->order, b->order);
  if (!r)
    r = strcmp(a->lib, b->lib);
  if (!r)
    r = (a->lib_line > b->lib_line) - (a->lib_line < b->lib_line);
  return r;
}

static int gate_site_cmp(const void *pa, const void *pb) {
  const struct gate_site *a = pa, *b = pb;
  int r = gate_site_group_cmp(a, b);
  if (!r)
    r = (a->line > b->line) - (a->line < b->line);
  if (!r)
    r = (a->column > b->column) - (a->column < b->column);
  return r;
}

/* file relative to root when it lies under it; file otherwise. */
static const char *gate_relative(const char *file, const char *root) {
  size_t n = root ? strlen(root) : 0;
  while (n > 1 && root[n - 1] == '/')
    n--;
  if (n > 0 && strncmp(file, root, n) == 0 && file[n] == '/')
    return file + n + 1;
  return file;
}

/* A string member of a site object, "?" when missing. */
static const char *gate_site_str(json_t *site, const char *name) {
  const char *v = json_string_value(json_object_get(site, name));
  return v && *v ? v : "?";
}

static void gate_sites_free(struct gate_site *v, size_t n) {
  for (size_t i = 0; v && i < n; i++)
    free(v[i].function);
  free(v);
}

/* c's sites, sorted (gate_site_cmp), *n of them; NULL (and *n 0) when out
 * of memory. */
static struct gate_site *gate_sites(struct gate_counts *c, const char *root, size_t *n) {
  *n = json_object_size(c->site_docs);
  struct gate_site *v = calloc(*n ? *n : 1, sizeof *v);
  if (v == NULL)
    return NULL;
  size_t k = 0;
  const char *key;
  json_t *doc;
  json_object_foreach(c->site_docs, key, doc) {
    struct gate_site *site = &v[k++];
    const char *fn = gate_site_str(doc, "function");
    site->function = nano_demangle(fn);
    if (!site->function)
      site->function = strdup(fn);
    site->file = gate_relative(gate_site_str(doc, "file"), root);
    site->kind = gate_site_str(doc, "kind");
    site->order = gate_site_str(doc, "order");
    site->line = json_integer_value(json_object_get(doc, "line"));
    site->column = json_integer_value(json_object_get(doc, "column"));
    site->count = json_integer_value(json_object_get(c->sites, key));
    site->inlined_from = json_object_get(doc, "inlined_from");
    const char *lib = json_string_value(json_object_get(site->inlined_from, "file"));
    site->lib = lib ? lib : "";
    site->lib_line = json_integer_value(json_object_get(site->inlined_from, "line"));
    if (!site->function) {
      gate_sites_free(v, k - 1);
      *n = 0;
      return NULL;
    }
  }
  qsort(v, k, sizeof *v, gate_site_cmp);
  return v;
}

/* Adds site s under key "path function #tag order kind" to c->stable (its
 * count) and c->where ("file:line:column (inlined from lib:line)"). 0, or -1
 * when out of memory. */
static int gate_key(struct gate_counts *c, const struct gate_site *s, const char *tag) {
  char *skey = NULL, *where = NULL, detail[256] = "";
  if (asprintf(&skey, "%s %s #%s %s %s", s->file, s->function, tag, s->order, s->kind) < 0)
    skey = NULL;
  if (*s->lib) {
    const char *base = strrchr(s->lib, '/');
    snprintf(detail, sizeof detail, " (inlined from %s:%" JSON_INTEGER_FORMAT ")",
             base ? base + 1 : s->lib, s->lib_line);
  }
  if (asprintf(&where, "%s:%" JSON_INTEGER_FORMAT ":%" JSON_INTEGER_FORMAT "%s", s->file, s->line,
               s->column, detail) < 0)
    where = NULL;
  int rc = skey == NULL || where == NULL || gate_add(c->stable, skey, s->count) != 0 ||
                   json_object_set_new(c->where, skey, json_string(where)) != 0
               ? -1
               : 0;
  free(skey);
  free(where);
  return rc;
}

/* How many ways of pairing the sites of one group gate_pair tries at most
 * (choices of which sites of the longer side pair at all); past that, the
 * best found so far stands. One atomic added or removed in a group of n
 * sites is n ways. */
#define GATE_PAIR_MAX_TRIES 20000

/* The pairing being searched: the shorter side's lines s[0..ns) against the
 * longer side's l[0..nl), in order; pick[k] is the index into l paired with
 * s[k]. */
struct gate_pairing {
  const json_int_t *s, *l;
  size_t ns, nl;
  size_t *pick, *best;
  double best_spread, best_moved;
  long tries;
};

static int gate_dbl_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Scores the complete pick: how far the line shifts stray from their median
 * (an edit moves the sites after it by one amount), then how far lines moved
 * at all; keeps it when better. */
static void gate_pairing_score(struct gate_pairing *p, double *d) {
  for (size_t k = 0; k < p->ns; k++)
    d[k] = (double)(p->l[p->pick[k]] - p->s[k]);
  double moved = 0, spread = 0;
  for (size_t k = 0; k < p->ns; k++)
    moved += fabs(d[k]);
  qsort(d, p->ns, sizeof *d, gate_dbl_cmp);
  double median = p->ns ? d[p->ns / 2] : 0;
  for (size_t k = 0; k < p->ns; k++)
    spread += fabs(d[k] - median);
  if (spread < p->best_spread || (spread == p->best_spread && moved < p->best_moved)) {
    p->best_spread = spread;
    p->best_moved = moved;
    memcpy(p->best, p->pick, p->ns * sizeof *p->pick);
  }
}

/* Tries every in-order pick of s[k..) among l[from..). */
static void gate_pairing_search(struct gate_pairing *p, size_t k, size_t from, double *d) {
  if (p->tries >= GATE_PAIR_MAX_TRIES)
    return;
  if (k == p->ns) {
    p->tries++;
    gate_pairing_score(p, d);
    return;
  }
  for (size_t j = from; j + (p->ns - k) <= p->nl; j++) {
    p->pick[k] = j;
    gate_pairing_search(p, k + 1, j + 1, d);
  }
}

/* Pairs the sites of one group, b[0..m) of the baseline with c[0..n) of this
 * run, both by position: pair[i] = the j of c paired with b[i], or -1. As
 * many pairs as the shorter side has sites, in order; of the ways to choose
 * them, the one whose line shifts agree best (an edit moves every site after
 * it by the same lines, so the site that breaks the pattern is the one added
 * or removed), then whose lines moved least (an atomic added on a line of
 * its own, lines unmoved). Returns 0, or -1 when out of memory. */
static int gate_pair(const struct gate_site *b, size_t m, const struct gate_site *c, size_t n,
                     long *pair) {
  int b_short = m <= n;
  size_t ns = b_short ? m : n, nl = b_short ? n : m;
  json_int_t *sl = calloc(ns + 1, sizeof *sl), *ll = calloc(nl + 1, sizeof *ll);
  size_t *pick = calloc(ns + 1, sizeof *pick), *best = calloc(ns + 1, sizeof *best);
  double *d = calloc(ns + 1, sizeof *d);
  int rc = -1;
  if (!sl || !ll || !pick || !best || !d)
    goto out;
  for (size_t k = 0; k < ns; k++)
    sl[k] = b_short ? b[k].line : c[k].line;
  for (size_t k = 0; k < nl; k++)
    ll[k] = b_short ? c[k].line : b[k].line;
  struct gate_pairing p = {sl, ll, ns, nl, pick, best, HUGE_VAL, HUGE_VAL, 0};
  for (size_t k = 0; k < ns; k++)
    best[k] = k; /* in order, the first ones: what a search cut short keeps at worst */
  gate_pairing_search(&p, 0, 0, d);
  for (size_t i = 0; i < m; i++)
    pair[i] = -1;
  for (size_t k = 0; k < ns; k++) {
    if (b_short)
      pair[k] = (long)best[k];
    else
      pair[best[k]] = (long)k;
  }
  rc = 0;
out:
  free(sl);
  free(ll);
  free(pick);
  free(best);
  free(d);
  return rc;
}

/*
 * Builds the stable keys (c->stable, c->where) of this run's sites (cur) and,
 * when base is not NULL, the baseline's, so that a site of both has the same
 * key. A site's stable key is "path function #tag order kind": its file
 * relative to its side's root (NULL: as recorded), its function (demangled),
 * a tag telling it from the other sites of its group (gate_site_group_cmp:
 * same file, function, kind, order and inlined-from location), its order and
 * its kind (last: the tolerance of a kind finds it there). The tag is the
 * site's position n in its baseline group ("#n"), paired as gate_pair does;
 * a site of this run that pairs with none is new ("#+k"). Line and column
 * are shown (c->where), not matched: another checkout folder, lines added
 * above a site or a reformat keep every key. Returns 0, or -1 when out of
 * memory.
 */
static int gate_stabilize(struct gate_counts *base, const char *base_root, struct gate_counts *cur,
                          const char *root) {
  size_t m = 0, n = 0;
  struct gate_site *bv = base ? gate_sites(base, base_root, &m) : NULL;
  struct gate_site *cv = gate_sites(cur, root, &n);
  long *pair = calloc(m + 1, sizeof *pair);
  int rc = -1;
  if ((base && !bv) || !cv || !pair)
    goto out;
  cur->stable = json_object();
  cur->where = json_object();
  if (base && (!(base->stable = json_object()) || !(base->where = json_object())))
    goto out;
  if (!cur->stable || !cur->where)
    goto out;
  rc = 0;
  for (size_t i = 0, j = 0; rc == 0 && (i < m || j < n);) {
    /* the next group: the lesser of the two sides' next */
    int side = i == m ? 1 : j == n ? -1 : gate_site_group_cmp(&bv[i], &cv[j]);
    size_t ie = i, je = j;
    while (side <= 0 && ie < m && gate_site_group_cmp(&bv[ie], &bv[i]) == 0)
      ie++;
    while (side >= 0 && je < n && gate_site_group_cmp(&cv[je], &cv[j]) == 0)
      je++;
    if (gate_pair(bv + i, ie - i, cv + j, je - j, pair + i) != 0) {
      rc = -1;
      break;
    }
    unsigned char *paired = calloc(je - j + 1, 1);
    if (!paired) {
      rc = -1;
      break;
    }
    char tag[32];
    for (size_t k = i; k < ie && rc == 0; k++) {
      snprintf(tag, sizeof tag, "%zu", k - i);
      rc = gate_key(base, &bv[k], tag);
      if (rc == 0 && pair[k] >= 0) {
        paired[pair[k]] = 1;
        rc = gate_key(cur, &cv[j + (size_t)pair[k]], tag);
      }
    }
    for (size_t k = j, fresh = 0; k < je && rc == 0; k++)
      if (!paired[k - j]) {
        snprintf(tag, sizeof tag, "%s%zu", base ? "+" : "", base ? fresh++ : k - j);
        rc = gate_key(cur, &cv[k], tag);
      }
    free(paired);
    i = ie;
    j = je;
  }
out:
  gate_sites_free(bv, m);
  gate_sites_free(cv, n);
  free(pair);
  return rc;
}

/* The source root stripped from site paths: --root, $NANO_GATE_ROOT, else the
 * top of the git checkout holding the current folder (in buf); NULL when
 * none (paths are then compared as recorded). */
static const char *gate_root(const struct gate_opts *o, char *buf, size_t len) {
  if (o->root != NULL)
    return o->root;
  const char *env = nano_env_str("NANO_GATE_ROOT");
  if (env != NULL)
    return env;
  FILE *git = popen("git rev-parse --show-toplevel 2>/dev/null", "r");
  if (git == NULL)
    return NULL;
  const char *root = fgets(buf, (int)len, git) ? buf : NULL;
  int status = pclose(git);
  if (root == NULL || status != 0)
    return NULL;
  buf[strcspn(buf, "\n")] = '\0';
  return *buf ? buf : NULL;
}

/* Folders of system and vendor headers (libstdc++'s templates instantiated
 * in the program have their sites there): the same on every machine, so
 * not part of the program's source root. */
static int gate_system_file(const char *file) {
  return strncmp(file, "/usr/", 5) == 0 || strncmp(file, "/opt/", 5) == 0;
}

/* The deepest folder holding every absolute site file of c outside the
 * system's folders (in buf): the root where there is no checkout, so that a
 * program built and measured in another folder keeps its keys. NULL when c
 * has no such file. */
static const char *gate_common_dir(const struct gate_counts *c, char *buf, size_t len) {
  size_t n = 0;
  int any = 0;
  const char *key;
  json_t *doc;
  json_object_foreach(c->site_docs, key, doc) {
    const char *file = json_string_value(json_object_get(doc, "file"));
    if (!file || file[0] != '/' || gate_system_file(file))
      continue;
    const char *slash = strrchr(file, '/');
    size_t dir = (size_t)(slash - file);
    if (!any) {
      n = dir < len ? dir : len - 1;
      memcpy(buf, file, n);
      any = 1;
      continue;
    }
    size_t k = 0;
    while (k < n && k < dir && buf[k] == file[k])
      k++;
    /* the common part is a whole folder when it ends where one of the two
     * ends and the other goes on with '/' (or ends too) */
    int whole = (k == n && (dir == n || file[n] == '/')) || (k == dir && buf[dir] == '/');
    if (!whole)
      while (k > 0 && buf[k] != '/')
        k--;
    n = k;
  }
  if (!any || n == 0)
    return NULL;
  buf[n] = '\0';
  return buf;
}

/* 1 when maps a and b share a key. */
static int gate_overlap(json_t *a, json_t *b) {
  const char *key;
  json_t *v;
  json_object_foreach(a, key, v) if (json_object_get(b, key) != NULL) return 1;
  return 0;
}

/* The index of kind `name` ("fetch_add" or "__atomic_fetch_add"), or -1. */
static int gate_kind_index(const char *name, size_t len) {
  static const char prefix[] = "__atomic_";
  if (len >= sizeof prefix - 1 && strncmp(name, prefix, sizeof prefix - 1) == 0) {
    name += sizeof prefix - 1;
    len -= sizeof prefix - 1;
  }
  for (int k = 0; k < NANO_KIND_COUNT; k++) {
    const char *n = gate_kind_names[k] + sizeof prefix - 1;
    if (strlen(n) == len && strncmp(n, name, len) == 0)
      return k;
  }
  return -1;
}

/* The allowance of baseline count `base` of a kind total (site 0) or a site
 * (site 1) of kind `kind` (-1: not an atomics kind): the most specific
 * tolerance given. */
static json_int_t gate_allowance(const struct gate_opts *o, int site, int kind, json_int_t base) {
  const struct gate_tol *t = &o->all;
  if (!site && o->has_kinds)
    t = &o->kinds;
  if (site && o->has_sites)
    t = &o->sites;
  if (kind >= 0 && o->has_kind[kind])
    t = &o->kind[kind];
  return t->abs + (json_int_t)ceil((double)(base > 0 ? base : 0) * t->pct / 100.0);
}

static int gate_strcmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * Compares one map (kinds or sites) of current against baseline, printing a
 * line for every count that changed. Returns the number of regressions, or -1
 * when out of memory.
 */
static int gate_compare_map(json_t *base, json_t *cur, json_t *base_where, json_t *cur_where,
                            const char *label, int site, const struct gate_opts *o, int *changes) {
  size_t n = json_object_size(base) + json_object_size(cur);
  const char **keys = calloc(n ? n : 1, sizeof *keys);
  if (keys == NULL)
    return -1;
  size_t k = 0;
  const char *key;
  json_t *v;
  json_object_foreach(base, key, v) keys[k++] = key;
  json_object_foreach(cur, key, v) if (json_object_get(base, key) == NULL) keys[k++] = key;
  qsort(keys, k, sizeof *keys, gate_strcmp);
  int regressions = 0;
  for (size_t i = 0; i < k; i++) {
    json_int_t b = json_integer_value(json_object_get(base, keys[i]));
    json_int_t c = json_integer_value(json_object_get(cur, keys[i]));
    if (b == c)
      continue;
    /* a kind total is keyed by its name; a site's key ends in its kind */
    const char *kname = site && strrchr(keys[i], ' ') ? strrchr(keys[i], ' ') + 1 : keys[i];
    int bad = c > b + gate_allowance(o, site, gate_kind_index(kname, strlen(kname)), b);
    regressions += bad;
    (*changes)++;
    char pct[32] = "new";
    if (b > 0)
      snprintf(pct, sizeof pct, "%+.2f%%", 100.0 * (double)(c - b) / (double)b);
    const char *at = json_string_value(json_object_get(cur_where, keys[i]));
    if (at == NULL)
      at = json_string_value(json_object_get(base_where, keys[i]));
    printf("  %s %-10s %s: %" JSON_INTEGER_FORMAT " -> %" JSON_INTEGER_FORMAT
           " (%+" JSON_INTEGER_FORMAT ", %s)%s%s\n",
           bad ? "REGRESSED" : (c > b ? "grew     " : "shrank   "), label, keys[i], b, c, c - b,
           pct, at ? " at " : "", at ? at : "");
  }
  free(keys);
  return regressions;
}

/* Parses a tolerance value: "N", "M%" or "N+M%". Returns 0 or -1. */
static int gate_parse_tol(const char *s, struct gate_tol *t) {
  struct gate_tol r = {0, 0};
  const char *plus = strchr(s, '+');
  const char *pct = strchr(s, '%') ? (plus ? plus + 1 : s) : NULL;
  if (pct != s) { /* an absolute part: digits up to '+' or the end */
    if (!(*s >= '0' && *s <= '9'))
      return -1;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(s, &end, 10);
    if (errno || n > (unsigned long long)INT64_MAX || *end != (pct ? '+' : '\0'))
      return -1;
    r.abs = (json_int_t)n;
  }
  if (pct) { /* digits, an optional fraction, then '%' and the end */
    if (!(*pct >= '0' && *pct <= '9'))
      return -1;
    char *end;
    errno = 0;
    double v = strtod(pct, &end);
    if (errno || *end != '%' || end[1] != '\0' || !isfinite(v))
      return -1;
    r.pct = v;
  }
  *t = r;
  return 0;
}

/* Parses one --tolerance argument, [SCOPE=]T, into o. Returns 0 or -1 (said). */
static int gate_parse_tolerance(const char *arg, struct gate_opts *o) {
  const char *eq = strchr(arg, '=');
  const char *value = eq ? eq + 1 : arg;
  struct gate_tol t;
  if (gate_parse_tol(value, &t) != 0) {
    fprintf(stderr, "nanoprobe gate: --tolerance '%s': '%s' is not N (a count), M%% or N+M%%\n",
            arg, value);
    return -1;
  }
  if (!eq) {
    o->all = t;
    return 0;
  }
  size_t len = (size_t)(eq - arg);
  if (len == 5 && strncmp(arg, "kinds", 5) == 0) {
    o->kinds = t;
    o->has_kinds = 1;
  } else if (len == 5 && strncmp(arg, "sites", 5) == 0) {
    o->sites = t;
    o->has_sites = 1;
  } else {
    int k = gate_kind_index(arg, len);
    if (k < 0) {
      fprintf(stderr,
              "nanoprobe gate: --tolerance '%s': '%.*s' is not 'kinds', 'sites' or a "
              "kind (fetch_add, __atomic_load, ...)\n",
              arg, (int)len, arg);
      return -1;
    }
    o->kind[k] = t;
    o->has_kind[k] = 1;
  }
  return 0;
}

/* The tolerances in force, for the summary line. */
static void gate_describe_tol(const struct gate_opts *o, char *buf, size_t len) {
  const struct gate_tol *t = &o->all;
  size_t n = 0;
  if (t->pct > 0 && t->abs)
    n = (size_t)snprintf(buf, len, "%" JSON_INTEGER_FORMAT "+%g%%", t->abs, t->pct);
  else if (t->pct > 0)
    n = (size_t)snprintf(buf, len, "%g%%", t->pct);
  else
    n = (size_t)snprintf(buf, len, "%" JSON_INTEGER_FORMAT, t->abs);
  int scoped = o->has_kinds + o->has_sites;
  for (int k = 0; k < NANO_KIND_COUNT; k++)
    scoped += o->has_kind[k];
  if (scoped && n < len)
    snprintf(buf + n, len - n, " (%d scoped)", scoped);
}

/* The number of lock-prefixed instructions objdump finds in file exe: the
 * read-modify-writes of x86 (atomic adds, exchanges, compare-exchanges). -1
 * when objdump cannot tell (not installed, not an object file). */
static long gate_locked_insns(const char *exe) {
  int fd[2];
  if (pipe(fd) != 0)
    return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    close(fd[0]);
    close(fd[1]);
    return -1;
  }
  if (pid == 0) {
    dup2(fd[1], STDOUT_FILENO);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0)
      dup2(null, STDERR_FILENO);
    close(fd[0]);
    close(fd[1]);
    execlp("objdump", "objdump", "-d", "--no-show-raw-insn", exe, (char *)NULL);
    _exit(127);
  }
  close(fd[1]);
  FILE *in = fdopen(fd[0], "r");
  long n = 0;
  char line[512];
  while (in && fgets(line, sizeof line, in))
    n += strstr(line, "\tlock ") != NULL;
  if (in)
    fclose(in);
  else
    close(fd[0]);
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    continue;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? n : -1;
}

/* Warns when the counts hold no read-modify-write or fence while the
 * command's executable has lock-prefixed instructions: those come from inline
 * assembly or code not built with the plugin, which the counts cannot see
 * (docs/atomics.md), and a clean count would mislead. */
static void gate_warn_unseen(const struct gate_counts *c, const struct gate_opts *o) {
  const char *key;
  json_t *v;
  json_object_foreach(c->kinds, key, v) {
    if (json_integer_value(v) > 0 && strcmp(key, "__atomic_load") && strcmp(key, "__atomic_store"))
      return;
  }
  char buf[PATH_MAX];
  const char *exe = nanoprobe_which(o->cmd[0], buf, sizeof buf);
  long n = exe ? gate_locked_insns(exe) : -1;
  if (n > 0)
    fprintf(stderr,
            "nanoprobe gate: warning: no read-modify-write was counted, yet %s has %ld "
            "lock-prefixed instruction%s: inline assembly or code built without the plugin "
            "is not counted (docs/atomics.md, \"What is not seen\")\n",
            exe, n, n == 1 ? "" : "s");
}

/* Writes doc to the baseline path. Returns 0 or 2. */
static int gate_write_baseline(json_t *doc, const char *path) {
  if (json_dump_file(doc, path, JSON_INDENT(2)) != 0) {
    fprintf(stderr, "nanoprobe gate: cannot write baseline '%s': %s\n", path, strerror(errno));
    return 2;
  }
  printf("nanoprobe gate: baseline '%s' updated\n", path);
  return 0;
}

int nanoprobe_cmd_gate(int argc, char **argv) {
  struct gate_opts o = {0};
  int i;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char **val = NULL;
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      gate_usage(stdout);
      return 0;
    } else if (strcmp(a, "--update") == 0) {
      o.update = 1;
      continue;
    } else if (strcmp(a, "--kinds-only") == 0) {
      o.kinds_only = 1;
      continue;
    } else if (strcmp(a, "--baseline") == 0) {
      val = &o.baseline;
    } else if (strcmp(a, "--current") == 0) {
      val = &o.current;
    } else if (strcmp(a, "--tracker") == 0) {
      val = &o.tracker;
    } else if (strcmp(a, "--root") == 0) {
      val = &o.root;
    } else if (strcmp(a, "--tool") == 0) {
      val = &o.tool;
    } else if (strcmp(a, "--tolerance") == 0 || strcmp(a, "--metric") == 0) {
      if (i + 1 >= argc) {
        fprintf(stderr, "nanoprobe gate: %s needs a value\n", a);
        return 2;
      }
      const char *v = argv[++i];
      if (a[2] == 't') {
        if (gate_parse_tolerance(v, &o) != 0)
          return 2;
      } else if (strcmp(v, "instructions") == 0) {
        o.instructions = 1;
      } else if (strcmp(v, "atomics") != 0) {
        fprintf(stderr, "nanoprobe gate: --metric '%s' is not 'atomics' or 'instructions'\n", v);
        return 2;
      }
      continue;
    } else {
      /* A command without "--" starts at the first non-option. */
      if (a[0] != '-')
        break;
      fprintf(stderr, "nanoprobe gate: unknown option '%s'\n", a);
      gate_usage(stderr);
      return 2;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "nanoprobe gate: %s needs a value\n", a);
      return 2;
    }
    *val = argv[++i];
  }
  if (i < argc)
    o.cmd = argv + i;
  if (o.baseline == NULL || (o.cmd == NULL) == (o.current == NULL)) {
    fprintf(stderr, "nanoprobe gate: needs --baseline and either --current FILE or -- COMMAND\n");
    gate_usage(stderr);
    return 2;
  }
  if (o.tool != NULL && strcmp(o.tool, "callgrind") != 0 && strcmp(o.tool, "perf") != 0) {
    fprintf(stderr, "nanoprobe gate: --tool '%s' is not 'callgrind' or 'perf'\n", o.tool);
    return 2;
  }

  if (o.update && gate_is_trace(o.baseline)) {
    fprintf(stderr,
            "nanoprobe gate: --baseline '%s' is a trace; --update writes a JSON baseline "
            "and would replace it: name a .json file\n",
            o.baseline);
    return 2;
  }
  struct gate_counts base = {0}, cur = {0};
  int rc;
  if (!o.update && (rc = gate_read(&base, o.baseline, "baseline", o.instructions)) != 0)
    goto out;
  rc = o.current ? gate_read(&cur, o.current, "current", o.instructions) : gate_measure(&cur, &o);
  if (rc != 0)
    goto out;
  if (o.cmd && !o.instructions)
    gate_warn_unseen(&cur, &o);
  char rootbuf[PATH_MAX], base_dir[PATH_MAX];
  const char *root = o.instructions ? NULL : gate_root(&o, rootbuf, sizeof rootbuf);
  if (!o.instructions) {
    /* a baseline names the root its paths are under; older ones do not */
    const char *base_root = json_string_value(json_object_get(base.doc, "root"));
    if (!root) { /* no checkout, no --root: the folder of the sources (each side its own) */
      root = gate_common_dir(&cur, rootbuf, sizeof rootbuf);
      if (!base_root && !o.update)
        base_root = gate_common_dir(&base, base_dir, sizeof base_dir);
    }
    if (gate_stabilize(o.update ? NULL : &base, base_root ? base_root : root, &cur, root) != 0 ||
        (o.update && root && json_object_set_new(cur.doc, "root", json_string(root)) != 0)) {
      fprintf(stderr, "nanoprobe gate: out of memory\n");
      rc = 2;
      goto out;
    }
    if (json_object_size(cur.stable) == 0) {
      fprintf(stderr,
              "nanoprobe gate: %s executed no instrumented atomic (built with the plugin "
              "or the prelude?); nothing to %s\n",
              o.current ? o.current : o.cmd[0], o.update ? "record" : "compare");
      rc = 2;
      goto out;
    }
    if (!o.update && json_object_size(base.stable) > 0 && !gate_overlap(base.stable, cur.stable)) {
      fprintf(stderr,
              "nanoprobe gate: none of the %zu sites of this run is one of the baseline's "
              "%zu: another program, or sources under another root (baseline root %s, "
              "this run's %s; --root DIR)\n",
              json_object_size(cur.stable), json_object_size(base.stable),
              base_root ? base_root : "not recorded", root ? root : "none");
      rc = 2;
      goto out;
    }
  }
  if (o.update) {
    rc = gate_write_baseline(cur.doc, o.baseline);
    goto out;
  }
  int changes = 0;
  int rk = gate_compare_map(base.kinds, cur.kinds, NULL, NULL, o.instructions ? "metric" : "kind",
                            0, &o, &changes);
  int rs = o.instructions || o.kinds_only ? 0
                                          : gate_compare_map(base.stable, cur.stable, base.where,
                                                             cur.where, "site", 1, &o, &changes);
  if (rk < 0 || rs < 0) {
    fprintf(stderr, "nanoprobe gate: out of memory\n");
    rc = 2;
    goto out;
  }
  json_int_t tb = 0, tc = 0;
  const char *key;
  json_t *v;
  json_object_foreach(base.kinds, key, v) tb += json_integer_value(v);
  json_object_foreach(cur.kinds, key, v) tc += json_integer_value(v);
  const char *what = o.instructions ? "instructions" : "atomics";
  char tol[64];
  gate_describe_tol(&o, tol, sizeof tol);
  if (rk + rs > 0) {
    printf("nanoprobe gate: FAIL: %s grew beyond tolerance %s: %d regression%s; total "
           "%" JSON_INTEGER_FORMAT " -> %" JSON_INTEGER_FORMAT "\n",
           what, tol, rk + rs, rk + rs == 1 ? "" : "s", tb, tc);
    rc = 1;
  } else {
    printf("nanoprobe gate: OK: %s within tolerance %s (%d change%s); total %" JSON_INTEGER_FORMAT
           " -> %" JSON_INTEGER_FORMAT "\n",
           what, tol, changes, changes == 1 ? "" : "s", tb, tc);
    rc = 0;
  }
out:
  gate_free(&base);
  gate_free(&cur);
  return rc;
}
