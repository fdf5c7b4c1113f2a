/*
 * run.c: `nanoprobe run [options] [--] PROGRAM [ARGS...]`: runs an
 * application with tracing, as `nsys profile ./app` or `omniprobe -i -- ./app`.
 *
 * Before the application starts:
 *   - PROGRAM is looked up as execvp does; missing or not executable: exit
 *     127 naming it, nothing started;
 *   - the trace file is made: a new ./nanoprobe-<n>.rpd (the first n free,
 *     taken with O_EXCL so two runs never share one), or -o FILE, which must
 *     not exist unless --append (add to it) or --force (replace it) says so;
 *     a file that cannot be written: exit 2 naming it, nothing started;
 *   - the environment: LD_PRELOAD gets libnano_rpd.so (tracer, atomics
 *     counts and the dispatch of instrumented kernels in one library), and
 *     so does NVTX_INJECTION64_PATH unless set (NVTX 3 ranges and marks),
 *     RPDT_FILENAME the trace's absolute path (children that change folder,
 *     fork or exec append to the same file; the library itself puts itself
 *     in HSA_TOOLS_LIB and CUDA_INJECTION64_PATH: AMD kernels and CUDA of
 *     any program), -c DIR sets NANO_KERNEL_CACHE and puts
 *     libnano_cudahook.so first in LD_PRELOAD (CUDA programs' driver
 *     launches), NANO_RPD_QUIET=1 (this summary
 *     replaces the tracer's exit line), and the NANO_* settings the options
 *     stand for (docs/ENVIRONMENT.md). An option wins over the same variable
 *     already set.
 * While it runs, the application keeps the terminal: its standard streams are
 * ours, Ctrl-C and Ctrl-\ reach it (and not us: we ignore them while
 * waiting, as system() does), and SIGTERM, SIGHUP, SIGUSR1/2 sent to us are
 * passed on.
 * After it ends: one line naming the trace, then `rpd summary` of it (to
 * stderr, so the application's stdout stays its own), and the application's
 * exit status as ours; killed by a signal, we die of the same signal (no core
 * dump of ours).
 */
#define _GNU_SOURCE /* asprintf, strchrnul */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nano/analyzers.h"
#include "nano/outfile.h"
#include "nano/path.h"
#include "nano/rpdfile.h"
#include "nano/settings.h"
#include "nanoprobe.h"

/* Exit status when PROGRAM cannot be found or run, as a shell's. */
#define RUN_EXIT_NOT_FOUND 127
/* Exit status for bad options or an unwritable trace file. */
#define RUN_EXIT_USAGE 2
/* The highest n tried for ./nanoprobe-<n>.rpd. */
#define RUN_MAX_DEFAULT_FILES 100000
/* Environment settings one run makes, at most. */
#define RUN_MAX_SETTINGS 24
/* Room for the reasons the trace gives why GPU kernels ran uninstrumented. */
#define RUN_WHY_BYTES 1024

static const char run_help[] =
    "usage: nanoprobe run [options] [--] PROGRAM [ARGS...]\n"
    "Runs PROGRAM with tracing into an RPD file, then prints where the trace went\n"
    "and a summary (rpd summary). The exit status is PROGRAM's.\n"
    "\n"
    "trace file:\n"
    "  -o, --output FILE     the trace (default: ./nanoprobe-<n>.rpd, a new file each run)\n"
    "      --append          add to FILE when it exists\n"
    "  -f, --force           replace FILE when it exists\n"
    "what is recorded:\n"
    "      --atomics         atomics counts are wanted: the summary says so when\n"
    "                        PROGRAM ran no instrumented atomic (they are recorded,\n"
    "                        and summed up, whenever PROGRAM is built with the plugin)\n"
    "      --python          record every Python call of a python3 PROGRAM and its\n"
    "                        Python children (as python3 -m nanoprobe)\n"
    "      --min-duration D  ranges shorter than D (e.g. 10us, 0.5ms) are not rows but\n"
    "                        summed per function: calls, total, self (nano_calls)\n"
    "      --no-cupti        leave CUPTI to PROGRAM's own profiler: no CUDA calls,\n"
    "                        kernels or copies in the trace (NANO_CUPTI=0)\n"
    "instrumented kernels (omniprobe's options):\n"
    "  -i, --instrumented    run the instrumented twins of kernels (NANO_INSTRUMENT=1)\n"
    "  -k, --kernels REGEX   only kernels whose name matches (NANO_KERNELS)\n"
    "  -d, --dispatches D    all, first, random or N: which dispatches of each kernel\n"
    "  -a, --analyzers LIST  analyzers, comma-separated: MemoryAnalysis, Heatmap,\n"
    "                        AddressLogger or a .so path (NANO_ANALYZERS); implies -i\n"
    "  -t, --format F        analyzer output: text or json (NANO_ANALYZER_FORMAT)\n"
    "  -l, --log-location L  console (stderr), stdout or a file (NANO_ANALYZER_OUTPUT)\n"
    "  -c, --cache-location DIR[:DIR...]  kernel caches: code objects built with the plugin\n"
    "                        (nanoprobe cache build) whose kernels replace the program's\n"
    "                        of the same name: their twins with -i, else themselves\n"
    "                        (AMD through the HSA tool, CUDA through the driver's\n"
    "                        launch calls; NANO_KERNEL_CACHE)\n"
    "  -e, --env-dump        print the environment settings before running\n"
    "other:\n"
    "  -q, --quiet           no summary, only the trace's path\n"
    "\n"
    "examples:\n"
    "  nanoprobe run -- ./app args\n"
    "  nanoprobe run -o train.rpd --python -- python3 train.py\n"
    "  nanoprobe run -i -k 'axpy|gemm.*' -d first -a MemoryAnalysis,Heatmap -- ./app\n";

struct run_opts {
  const char *output;
  int append, force, atomics, callers, python, instrumented, env_dump, quiet, no_cupti;
  const char *kernels, *dispatches, *analyzers, *format, *log, *cache;
  const char *min_duration;
  char **cmd;
};

/* "NAME=value" strings made for the child, owned here. */
struct run_env {
  char *set[RUN_MAX_SETTINGS];
  int n;
};

static int run_setenv(struct run_env *e, const char *name, const char *value) {
  if (e->n == RUN_MAX_SETTINGS || asprintf(&e->set[e->n], "%s=%s", name, value) < 0) {
    fprintf(stderr, "nanoprobe run: out of memory\n");
    return -1;
  }
  e->n++;
  return 0;
}

/* NAME's value for the child: the last one set in e, else ours. */
static const char *run_getenv(const struct run_env *e, const char *name) {
  size_t len = strlen(name);
  for (int i = e->n - 1; i >= 0; i--)
    if (!strncmp(e->set[i], name, len) && e->set[i][len] == '=')
      return e->set[i] + len + 1;
  return getenv(name);
}

/* NAME=value with value prepended to the variable's current ':'-list (as
 * set for the child so far). */
static int run_prepend(struct run_env *e, const char *name, const char *value) {
  const char *old = run_getenv(e, name);
  if (!old || !*old)
    return run_setenv(e, name, value);
  char *joined;
  if (asprintf(&joined, "%s:%s", value, old) < 0) {
    fprintf(stderr, "nanoprobe run: out of memory\n");
    return -1;
  }
  int rc = run_setenv(e, name, joined);
  free(joined);
  return rc;
}

static void run_env_free(struct run_env *e) {
  for (int i = 0; i < e->n; i++)
    free(e->set[i]);
  e->n = 0;
}

/* Checks -k as the runtime reads NANO_KERNELS (a POSIX extended regular
 * expression matched whole), so that a bad one stops the run before the
 * program starts instead of leaving it uninstrumented. 0, or -1 after saying
 * why. */
static int run_check_kernels(const char *kernels) {
  regex_t re;
  int rc = nano_regcomp_whole(&re, kernels);
  if (rc != 0) {
    char msg[256];
    regerror(rc, &re, msg, sizeof msg);
    fprintf(stderr, "nanoprobe run: --kernels '%s': not a regular expression: %s\n", kernels, msg);
    return -1;
  }
  regfree(&re);
  return 0;
}

/* Parses the options up to PROGRAM. 0, 1 after --help, or RUN_EXIT_USAGE
 * after saying what is wrong. */
static int run_parse(int argc, char **argv, struct run_opts *o) {
  memset(o, 0, sizeof *o);
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--")) {
      i++;
      break;
    }
    if (a[0] != '-' || !a[1])
      break;
#define RUN_VALUE(short_, long_, field)                                                            \
  if (!strcmp(a, short_) || !strcmp(a, long_)) {                                                   \
    if (i + 1 >= argc) {                                                                           \
      fprintf(stderr, "nanoprobe run: %s needs a value\n", a);                                     \
      return RUN_EXIT_USAGE;                                                                       \
    }                                                                                              \
    o->field = argv[++i];                                                                          \
    continue;                                                                                      \
  }                                                                                                \
  if (!strncmp(a, long_ "=", sizeof long_)) {                                                      \
    o->field = a + sizeof long_;                                                                   \
    continue;                                                                                      \
  }
    RUN_VALUE("-o", "--output", output)
    RUN_VALUE("-k", "--kernels", kernels)
    RUN_VALUE("-d", "--dispatches", dispatches)
    RUN_VALUE("-a", "--analyzers", analyzers)
    RUN_VALUE("-t", "--format", format)
    RUN_VALUE("-l", "--log-location", log)
    RUN_VALUE("-c", "--cache-location", cache)
    RUN_VALUE("--min-duration", "--min-duration", min_duration)
#undef RUN_VALUE
    if (!strcmp(a, "--append"))
      o->append = 1;
    else if (!strcmp(a, "-f") || !strcmp(a, "--force"))
      o->force = 1;
    else if (!strcmp(a, "--atomics"))
      o->atomics = 1;
    else if (!strcmp(a, "--atomics-callers"))
      o->atomics = o->callers = 1;
    else if (!strcmp(a, "--python"))
      o->python = 1;
    else if (!strcmp(a, "--no-cupti"))
      o->no_cupti = 1;
    else if (!strcmp(a, "-i") || !strcmp(a, "--instrumented"))
      o->instrumented = 1;
    else if (!strcmp(a, "-e") || !strcmp(a, "--env-dump"))
      o->env_dump = 1;
    else if (!strcmp(a, "-q") || !strcmp(a, "--quiet"))
      o->quiet = 1;
    else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(run_help, stdout);
      return 1;
    } else {
      fprintf(stderr, "nanoprobe run: unknown option '%s' (nanoprobe run --help)\n", a);
      return RUN_EXIT_USAGE;
    }
  }
  if (i >= argc) {
    fprintf(stderr, "nanoprobe run: no program to run (nanoprobe run --help)\n");
    return RUN_EXIT_USAGE;
  }
  o->cmd = argv + i;
  if (o->append && o->force) {
    fprintf(stderr, "nanoprobe run: --append and --force exclude each other\n");
    return RUN_EXIT_USAGE;
  }
  if ((o->append || o->force) && !o->output) {
    fprintf(stderr, "nanoprobe run: %s needs -o FILE (the default file is always new)\n",
            o->append ? "--append" : "--force");
    return RUN_EXIT_USAGE;
  }
  uint64_t ns;
  if (o->min_duration &&
      nano_parse_duration(o->min_duration, 0, NANO_RPDFILE_MAX_MIN_DURATION_NS, &ns)) {
    fprintf(stderr,
            "nanoprobe run: --min-duration '%s': expected a duration such as 500ns, "
            "10us, 0.5ms or 1s (at most an hour)\n",
            o->min_duration);
    return RUN_EXIT_USAGE;
  }
  if (o->format && strcmp(o->format, "text") && strcmp(o->format, "json")) {
    fprintf(stderr, "nanoprobe run: --format '%s': expected text or json\n", o->format);
    return RUN_EXIT_USAGE;
  }
  if (o->dispatches && strcmp(o->dispatches, "all") && strcmp(o->dispatches, "first") &&
      strcmp(o->dispatches, "random")) {
    char *end;
    errno = 0;
    unsigned long long n = strtoull(o->dispatches, &end, 10);
    if (o->dispatches[0] < '1' || o->dispatches[0] > '9' || *end || errno || n == 0) {
      fprintf(stderr,
              "nanoprobe run: --dispatches '%s': expected all, first, random or a "
              "number from 1\n",
              o->dispatches);
      return RUN_EXIT_USAGE;
    }
  }
  if (o->kernels && run_check_kernels(o->kernels))
    return RUN_EXIT_USAGE;
  if (o->analyzers) {
    struct nano_analyzers *a = NULL;
    char err[512];
    if (nano_analyzers_load(o->analyzers, "nanoprobe run: --analyzers", &a, err, sizeof err)) {
      fprintf(stderr, "%s\n", err);
      return RUN_EXIT_USAGE;
    }
    nano_analyzers_free(a);
  }
  if (o->analyzers || o->kernels || o->dispatches)
    o->instrumented = 1;
  return 0;
}

/* -o with "%p" (the tracer's per-process file names): the absolute template
 * in buf, nothing created (each process makes its own file, named after its
 * pid, which is not known before the program starts). 0, or RUN_EXIT_USAGE
 * after saying why. */
static int run_trace_template(const char *output, char *buf, size_t len) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", output);
  char *slash = strrchr(dir, '/');
  const char *base = slash ? slash + 1 : output;
  if (slash)
    *(slash == dir ? slash + 1 : slash) = 0;
  char *abs = realpath(slash ? dir : ".", NULL);
  if (!abs || snprintf(buf, len, "%s/%s", strcmp(abs, "/") ? abs : "", base) >= (int)len) {
    fprintf(stderr, "nanoprobe run: -o %s: %s\n", output,
            abs ? "path too long" : "its folder does not exist");
    free(abs);
    return RUN_EXIT_USAGE;
  }
  free(abs);
  return 0;
}

/* Makes the trace file (path in buf, absolute). 0, or RUN_EXIT_USAGE after
 * saying why. */
static int run_make_trace(const struct run_opts *o, char *buf, size_t len) {
  char name[PATH_MAX];
  int fd = -1;
  if (o->output && strstr(o->output, "%p"))
    return run_trace_template(o->output, buf, len);
  if (o->output) {
    snprintf(name, sizeof name, "%s", o->output);
    char err[PATH_MAX + 128];
    enum nano_outfile_kind kind = nano_outfile_kind(name, err, sizeof err);
    if (kind == NANO_OUTFILE_REFUSED || kind == NANO_OUTFILE_IN_PLACE) {
      if (kind == NANO_OUTFILE_IN_PLACE)
        snprintf(err, sizeof err,
                 "%s is a device or FIFO, not a trace file; refusing to replace it", name);
      fprintf(stderr, "nanoprobe run: %s\n", err);
      return RUN_EXIT_USAGE;
    }
    int exists = kind == NANO_OUTFILE_REGULAR;
    if (exists && !o->append && !o->force) {
      fprintf(stderr, "nanoprobe run: %s exists; --append adds to it, --force replaces it\n", name);
      return RUN_EXIT_USAGE;
    }
    if (exists && o->force && unlink(name) != 0) {
      fprintf(stderr, "nanoprobe run: cannot replace %s: %s\n", name, strerror(errno));
      return RUN_EXIT_USAGE;
    }
    /* Never through a link planted since it was looked at */
    fd = exists && o->append
             ? open(name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)
             : open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  } else {
    for (int n = 1; n <= RUN_MAX_DEFAULT_FILES; n++) {
      snprintf(name, sizeof name, "nanoprobe-%d.rpd", n);
      fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd >= 0 || errno != EEXIST)
        break;
    }
  }
  if (fd < 0) {
    fprintf(stderr, "nanoprobe run: cannot write the trace file %s: %s\n", name, strerror(errno));
    return RUN_EXIT_USAGE;
  }
  close(fd);
  char *abs = realpath(name, NULL);
  if (!abs || strlen(abs) >= len) {
    fprintf(stderr, "nanoprobe run: %s: %s\n", name, abs ? "path too long" : strerror(errno));
    free(abs);
    return RUN_EXIT_USAGE;
  }
  strcpy(buf, abs);
  free(abs);
  return 0;
}

/* NANO_KERNEL_CACHE: the ':'-list dirs, each an existing directory, made
 * absolute (the program may change folder). 0, or -1 after saying why. */
static int run_cache(const char *dirs, struct run_env *e) {
  char *copy = strdup(dirs), *save = NULL, *joined = NULL;
  int rc = copy ? 0 : -1;
  for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d && rc == 0;
       d = strtok_r(NULL, ":", &save)) {
    struct stat st;
    char *abs = realpath(d, NULL), *next;
    if (!abs || stat(abs, &st) != 0 || !S_ISDIR(st.st_mode)) {
      fprintf(stderr, "nanoprobe run: --cache-location %s: %s\n", d,
              abs ? "not a directory" : strerror(errno));
      rc = -1;
    } else if (asprintf(&next, "%s%s%s", joined ? joined : "", joined ? ":" : "", abs) < 0) {
      rc = -1;
    } else {
      free(joined);
      joined = next;
    }
    free(abs);
  }
  if (rc == 0 && !joined) {
    fprintf(stderr, "nanoprobe run: --cache-location '%s': no directory\n", dirs);
    rc = -1;
  }
  if (rc == 0)
    rc = run_setenv(e, "NANO_KERNEL_CACHE", joined);
  free(joined);
  free(copy);
  return rc;
}

/* The environment of the run. 0 or RUN_EXIT_USAGE after saying why. */
static int run_environment(const struct run_opts *o, const char *trace, struct run_env *e) {
  char lib[PATH_MAX];
  if (!nanoprobe_locate(NANOPROBE_RPD_LIB, lib, sizeof lib)) {
    fprintf(stderr, "nanoprobe run: cannot find libnano_rpd.so next to this nanoprobe\n");
    return RUN_EXIT_USAGE;
  }
  if (run_prepend(e, "LD_PRELOAD", lib) || run_setenv(e, "RPDT_FILENAME", trace) ||
      run_setenv(e, "NANO_RPD_QUIET", "1"))
    return RUN_EXIT_USAGE;
  if (o->cache && run_cache(o->cache, e))
    return RUN_EXIT_USAGE;
  /* CUDA programs reach the cache through the driver's launch calls, which
   * only this library stands in front of (it interposes dlsym: only here) */
  char hook[PATH_MAX];
  if (o->cache && !nanoprobe_locate(NANOPROBE_CUDAHOOK, hook, sizeof hook)) {
    fprintf(stderr, "nanoprobe run: cannot find libnano_cudahook.so next to this nanoprobe\n");
    return RUN_EXIT_USAGE;
  }
  if (o->cache && run_prepend(e, "LD_PRELOAD", hook))
    return RUN_EXIT_USAGE;
  /* NVTX 3 loads its tool from here at the first NVTX call: ranges, marks */
  if (!getenv("NVTX_INJECTION64_PATH") && run_setenv(e, "NVTX_INJECTION64_PATH", lib))
    return RUN_EXIT_USAGE;
  if (o->instrumented && run_setenv(e, "NANO_INSTRUMENT", "1"))
    return RUN_EXIT_USAGE;
  if (o->callers && run_setenv(e, "NANO_ATOMICS_CALLERS", "1"))
    return RUN_EXIT_USAGE;
  if (o->no_cupti && run_setenv(e, "NANO_CUPTI", "0"))
    return RUN_EXIT_USAGE;
  if (o->kernels && run_setenv(e, "NANO_KERNELS", o->kernels))
    return RUN_EXIT_USAGE;
  if (o->min_duration && run_setenv(e, "NANO_RPD_MIN_DURATION", o->min_duration))
    return RUN_EXIT_USAGE;
  if (o->dispatches && run_setenv(e, "NANO_DISPATCHES", o->dispatches))
    return RUN_EXIT_USAGE;
  if (o->analyzers && run_setenv(e, "NANO_ANALYZERS", o->analyzers))
    return RUN_EXIT_USAGE;
  if (o->format && run_setenv(e, "NANO_ANALYZER_FORMAT", o->format))
    return RUN_EXIT_USAGE;
  if (o->log &&
      run_setenv(e, "NANO_ANALYZER_OUTPUT", strcmp(o->log, "console") ? o->log : "stderr"))
    return RUN_EXIT_USAGE;
  if (o->python) {
    char py[PATH_MAX], both[2 * PATH_MAX + 16];
    if (!nanoprobe_locate(NANOPROBE_PYTHON, py, sizeof py)) {
      fprintf(stderr, "nanoprobe run: --python: cannot find the nanoprobe Python package next "
                      "to this nanoprobe\n");
      return RUN_EXIT_USAGE;
    }
    /* the start-up hook of python3 -m nanoprobe's children, then the package */
    snprintf(both, sizeof both, "%s/nanoprobe/_boot:%s", py, py);
    if (run_prepend(e, "PYTHONPATH", both) || run_setenv(e, "NANO_PYTHON_PROFILE", "all"))
      return RUN_EXIT_USAGE;
  }
  return 0;
}

static pid_t g_child;

/* Passes a termination request on to the application. */
static void run_forward(int sig) {
  if (g_child > 0)
    kill(g_child, sig);
}

/* Starts the application; returns its wait status, or -1. The signals we
 * forward or ignore are blocked from before the fork until our handlers are
 * in place: one sent as soon as the application runs (a test's SIGTERM after
 * its first line) used to kill us with the default action instead, leaving
 * the application running on its own. The child gets the mask back before
 * exec. */
static int run_child(char **cmd, const struct run_env *e) {
  static const int forwarded[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};
  struct sigaction ign = {.sa_handler = SIG_IGN}, fwd = {.sa_handler = run_forward};
  struct sigaction old_int, old_quit;
  sigemptyset(&ign.sa_mask);
  sigemptyset(&fwd.sa_mask);
  sigset_t ours, old_mask;
  sigemptyset(&ours);
  sigaddset(&ours, SIGINT);
  sigaddset(&ours, SIGQUIT);
  for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
    sigaddset(&ours, forwarded[i]);
  fflush(NULL);
  if (sigprocmask(SIG_BLOCK, &ours, &old_mask) != 0)
    fprintf(stderr, "nanoprobe run: sigprocmask: %s\n", strerror(errno));
  g_child = fork();
  if (g_child < 0) {
    fprintf(stderr, "nanoprobe run: fork: %s\n", strerror(errno));
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    return -1;
  }
  if (g_child == 0) {
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    for (int i = 0; i < e->n; i++)
      if (putenv(e->set[i]) != 0)
        _exit(RUN_EXIT_NOT_FOUND);
    execvp(cmd[0], cmd);
    fprintf(stderr, "nanoprobe run: cannot run %s: %s\n", cmd[0], strerror(errno));
    _exit(RUN_EXIT_NOT_FOUND);
  }
  if (sigaction(SIGINT, &ign, &old_int) != 0 || sigaction(SIGQUIT, &ign, &old_quit) != 0)
    fprintf(stderr, "nanoprobe run: sigaction: %s\n", strerror(errno));
  for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
    if (sigaction(forwarded[i], &fwd, NULL) != 0)
      fprintf(stderr, "nanoprobe run: sigaction: %s\n", strerror(errno));
  /* what arrived meanwhile is forwarded (or ignored) now */
  sigprocmask(SIG_SETMASK, &old_mask, NULL);
  int status;
  while (waitpid(g_child, &status, 0) < 0) {
    if (errno != EINTR) {
      fprintf(stderr, "nanoprobe run: waitpid: %s\n", strerror(errno));
      return -1;
    }
  }
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGQUIT, &old_quit, NULL);
  return status;
}

/* Prints the trace's path and `rpd summary` of it on stderr. */
static void run_summary(const char *trace, const struct run_opts *o) {
  struct stat st;
  if (stat(trace, &st) != 0 || st.st_size == 0) {
    fprintf(stderr, "nanoprobe: %s: nothing recorded (did the program start?)\n", trace);
    return;
  }
  fprintf(stderr, "nanoprobe: trace written to %s (%lld bytes)\n", trace, (long long)st.st_size);
  if (o->quiet)
    return;
  char rpd[PATH_MAX];
  if (!nanoprobe_locate(NANOPROBE_RPD_TOOL, rpd, sizeof rpd)) {
    fprintf(stderr, "nanoprobe: cannot find the rpd tool for the summary\n");
    return;
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "nanoprobe run: fork: %s\n", strerror(errno));
    return;
  }
  if (pid == 0) {
    dup2(STDERR_FILENO, STDOUT_FILENO);
    if (o->atomics)
      execl(rpd, rpd, "summary", "--atomics", trace, (char *)NULL);
    else
      execl(rpd, rpd, "summary", trace, (char *)NULL);
    fprintf(stderr, "nanoprobe run: cannot run %s: %s\n", rpd, strerror(errno));
    _exit(RUN_EXIT_NOT_FOUND);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

/* One integer a query of db gives, or -1 when it fails. */
static int64_t run_count(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  int64_t n = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return n;
}

/* Why the run's GPU kernels ran uninstrumented, as the runtime recorded it
 * (rocpd_metadata nano_gpu_unavailable: its GPU back end could not start),
 * into buf; "" where it recorded nothing. */
static void run_gpu_unavailable(sqlite3 *db, char *buf, size_t len) {
  sqlite3_stmt *st = NULL;
  buf[0] = 0;
  if (sqlite3_prepare_v2(db,
                         "SELECT group_concat(value, '; ') FROM (SELECT DISTINCT value FROM "
                         "rocpd_metadata WHERE tag = '" NANO_RPDFILE_TAG_GPU_UNAVAILABLE "')",
                         -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
    snprintf(buf, len, "%s", (const char *)sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
}

/* After an instrumented run that instrumented nothing, says why that happens
 * (never a silent no-op): the GPU back end could not start (its reason, as
 * the trace has it), the launching files were built without the plugin, or
 * -k selected no kernel that ran. */
static void run_hint_uninstrumented(const char *trace, const struct run_opts *o) {
  sqlite3 *db = NULL;
  int version;
  char err[NANO_RPDFILE_ERRLEN];
  if (nano_rpdfile_open_read(trace, 1, &db, &version, err, sizeof err) != 0)
    return; /* run_summary has said what is wrong with the file */
  int has = nano_rpdfile_has_object(db, "nano_dispatch");
  int64_t dispatches = has > 0 ? run_count(db, "SELECT count(*) FROM nano_dispatch") : has;
  int64_t kernels = run_count(db, "SELECT count(*) FROM rocpd_op o JOIN rocpd_string s ON "
                                  "s.id = o.opType_id WHERE s.string LIKE '%Kernel%'");
  char unavailable[RUN_WHY_BYTES];
  run_gpu_unavailable(db, unavailable, sizeof unavailable);
  if (dispatches == 0 && unavailable[0]) {
    fprintf(stderr, "nanoprobe: no kernel was instrumented: %s\n", unavailable);
  } else if (dispatches == 0) {
    char ran[64] = "";
    if (kernels > 0)
      snprintf(ran, sizeof ran, " (%lld kernels ran)", (long long)kernels);
    fprintf(stderr,
            "nanoprobe: no kernel was instrumented%s: a kernel runs instrumented only where the "
            "file that launches it was built with the plugin (nanoprobe cc -- COMPILER ...)%s\n",
            ran, o->kernels ? ", and only a kernel -k selects" : "");
  }
  if (nano_rpdfile_close(db, trace, err, sizeof err) != 0)
    fprintf(stderr, "nanoprobe: %s\n", err);
}

/* Ends this process as the application ended: its status, or its signal. */
static int run_exit_like(int status, const char *prog) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  int sig = WTERMSIG(status);
  fprintf(stderr, "nanoprobe: %s died of signal %d (%s)\n", prog, sig, strsignal(sig));
  fflush(NULL);
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  sigprocmask(SIG_UNBLOCK, &set, NULL);
  raise(sig);
  return 128 + sig; /* a signal that does not end a process by default */
}

int nanoprobe_cmd_run(int argc, char **argv) {
  struct run_opts o;
  int rc = run_parse(argc, argv, &o);
  if (rc)
    return rc == 1 ? 0 : rc;
  char found[PATH_MAX];
  if (!nanoprobe_which(o.cmd[0], found, sizeof found)) {
    struct stat st;
    int there = strchr(o.cmd[0], '/') && stat(o.cmd[0], &st) == 0;
    fprintf(stderr, "nanoprobe run: %s: %s\n", o.cmd[0],
            there ? "not executable" : "no such program");
    return RUN_EXIT_NOT_FOUND;
  }
  char trace[PATH_MAX];
  rc = run_make_trace(&o, trace, sizeof trace);
  if (rc)
    return rc;
  struct run_env env = {0};
  rc = run_environment(&o, trace, &env);
  if (rc) {
    run_env_free(&env);
    return rc;
  }
  if (o.env_dump)
    for (int i = 0; i < env.n; i++)
      fprintf(stderr, "nanoprobe: %s\n", env.set[i]);
  int status = run_child(o.cmd, &env);
  run_env_free(&env);
  if (status < 0)
    return 1;
  char own[PATH_MAX]; /* the program's own file: the template with its pid where -o had %p */
  if (nano_path_expand_pid(trace, (long)g_child, own, sizeof own) != 0)
    fprintf(stderr, "nanoprobe run: %s: the path is too long\n", trace);
  run_summary(own, &o);
  if (o.instrumented)
    run_hint_uninstrumented(own, &o);
  return run_exit_like(status, o.cmd[0]);
}
