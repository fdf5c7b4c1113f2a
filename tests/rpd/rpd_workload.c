/*
 * rpd_workload.c: programs the tracer tests run (linked with libnano_rpd.so).
 *
 *   threads T N        T threads named "rpd-worker", each N times: push "outer", push "inner"
 *                      with args "i=<k>", mark "tick", pop, pop; then
 *                      push "left-open" and exit without popping
 *   heavy N K [keepgoing]  N ranges (text "r<i>"), rpdflush() every K, printing
 *                      "committed <i>" after each flush (for the SIGKILL test);
 *                      a failed flush ends the program (exit 1), or with
 *                      "keepgoing" is counted and the ranges go on; then
 *                      rpdstop(), and "failed <flushes> stop <rpdstop()>"
 *   crash KIND N       N ranges and a mark, then KIND: segv, abort, term, int,
 *                      overflow (of the main thread's stack), or a signal by
 *                      name: pipe, hup, quit, alrm, usr1, xfsz, trap, sys;
 *                      KIND held-term: a range "held" opened and committed
 *                      (rpdflush) first, left open, then term
 *   exec-direct PROG N N ranges, an exec that fails, a range, then exec PROG
 *                      in the same process (no fork)
 *   marks N            N marks as fast as possible (drop-mode test)
 *   interned N         N ranges pushed by interned handle, two names, one args
 *   zone N             N times: NANO_ZONE("zone-outer") around a NANO_ZONE
 *                      named "dyn-<k % 3>" from a stack buffer; prints
 *                      "inline 1" when NANO_ZONE writes records inline
 *   outpaced CAP       a thread records ranges (a new args string each) as fast
 *                      as it can, up to CAP; after 50 ms the main thread
 *                      flushes and says whether the flush returned while
 *                      that thread still recorded
 *   clock N MS [flush] N marks, each between two rpd_now() reads that it
 *                      prints ("<before> <after>"), MS ms apart; with
 *                      "flush", rpdflush() after each
 *   control            reference counting, stop below zero, ranges open at a
 *                      stop (prints what it did, the test checks the file)
 *   fork N             N ranges in the parent, then a child records N ranges
 *   exec PROG N        N ranges, then fork+exec PROG (a program not linked
 *                      with nanoprobe) and wait for it
 *   stack              a range pushed from nested functions (stack frames)
 *   api                API calls with kernel/copy args and GPU ops
 *   idle MS            AUTOSTART=0 helper: start, a range, sleep, stop
 *   sleepy N MS        N ranges, then sleep MS without flushing (autoflush)
 *   setname FILE APPEND  (RPDT_AUTOSTART=0) rpd_set_filename(FILE, APPEND),
 *                      start, a mark, stop; prints what rpd_set_filename
 *                      returned before and after the start
 *   helpers            a range and a flush, then for each other thread of the
 *                      process (the tracer's): "<name> nice <n> blocks <k> of 5" for
 *                      SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGUSR1 (from
 *                      /proc/self/task/<tid>/status)
 *   chain              (RPDT_AUTOSTART=0) installs its own SIGINT handler,
 *                      then starts recording: a SIGINT inside a range runs
 *                      that handler and recording goes on
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rpd.h"

static int g_iters;

static void *thread_main(void *arg) {
  (void)arg;
  char args[32];
  pthread_setname_np(pthread_self(), "rpd-worker");
  for (int k = 0; k < g_iters; k++) {
    rpd_rangePush(NULL, "outer", NULL);
    snprintf(args, sizeof args, "i=%d", k);
    rpd_rangePush(NULL, "inner", args);
    rpd_mark(NULL, "tick", NULL);
    rpd_rangePop();
    rpd_rangePop();
  }
  rpd_rangePush(NULL, "left-open", NULL); /* ends when the thread exits */
  return NULL;
}

static int do_threads(int t, int n) {
  pthread_t th[64];
  g_iters = n;
  if (t > 64) t = 64;
  for (int i = 0; i < t; i++)
    if (pthread_create(&th[i], NULL, thread_main, NULL) != 0) return 1;
  for (int i = 0; i < t; i++) pthread_join(th[i], NULL);
  return 0;
}

static int do_heavy(int n, int k, int keepgoing) {
  char text[32];
  int failed = 0;
  for (int i = 0; i < n; i++) {
    snprintf(text, sizeof text, "r%d", i);
    rpd_rangePush(NULL, text, NULL);
    rpd_rangePop();
    if ((i + 1) % k == 0) {
      if (rpdflush() != 0) {
        if (!keepgoing) return 1;
        failed++;
        continue;
      }
      printf("committed %d\n", i + 1);
      fflush(stdout);
    }
  }
  if (keepgoing) printf("failed %d stop %d\n", failed, rpdstop());
  return 0;
}

/* Recurses until the stack runs out (each frame keeps a page the compiler
 * cannot drop). */
static volatile int overflow_forever = 1; /* the compiler cannot see the recursion end */
__attribute__((noinline)) static int overflow(int depth) {
  volatile char page[4096];
  page[0] = (char)depth;
  return overflow_forever ? overflow(depth + 1) + page[0] : 0;
}

static int do_crash(const char *kind, int n) {
  char text[32];
  if (strcmp(kind, "held-term") == 0) {
    rpd_rangePush(NULL, "held", NULL);
    if (rpdflush() != 0)
      return 1;
    kind = "term";
  }
  for (int i = 0; i < n; i++) {
    snprintf(text, sizeof text, "r%d", i);
    rpd_rangePush(NULL, text, NULL);
    rpd_rangePop();
  }
  rpd_mark(NULL, "before-crash", NULL);
  if (strcmp(kind, "segv") == 0) {
    volatile uintptr_t bad = 8; /* an unmapped address the compiler cannot see */
    *(volatile int *)bad = 1;
  } else if (strcmp(kind, "abort") == 0) {
    abort();
  } else if (strcmp(kind, "term") == 0) {
    kill(getpid(), SIGTERM);
  } else if (strcmp(kind, "int") == 0) {
    kill(getpid(), SIGINT);
  } else if (strcmp(kind, "overflow") == 0) {
    overflow(0);
  } else {
    /* the other signals whose default action ends the process, by name */
    static const struct {
      const char *name;
      int sig;
    } sigs[] = {{"pipe", SIGPIPE}, {"hup", SIGHUP},   {"quit", SIGQUIT}, {"alrm", SIGALRM},
                {"usr1", SIGUSR1}, {"xfsz", SIGXFSZ}, {"trap", SIGTRAP}, {"sys", SIGSYS}};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
      if (strcmp(kind, sigs[i].name) == 0)
        kill(getpid(), sigs[i].sig);
  }
  /* a signal whose default action is to terminate never gets here */
  sleep(5);
  return 3;
}

static int do_marks(int n) {
  for (int i = 0; i < n; i++) rpd_mark(NULL, "m", NULL);
  return 0;
}

/* n marks and one range left open, then the end named by `how`: _exit,
 * _Exit, quick_exit, or fork-exit (a fork child records n marks and leaves
 * through _exit), or vfork (a vfork child leaves through _exit at once; the
 * parent goes on and exits normally). Exit status 3 from the _exit family. */
static int do_exit(const char *how, int n) {
  if (strcmp(how, "fork-exit") == 0) {
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      do_marks(n);
      _exit(3);
    }
    int st;
    return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 3 ? 0 : 1;
  }
  do_marks(n);
  rpd_rangePush(NULL, "open-at-exit", NULL);
  if (strcmp(how, "vfork") == 0) {
    pid_t pid = vfork();
    if (pid < 0) return 1;
    if (pid == 0) _exit(3);
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 3) return 1;
    rpd_rangePop();
    return 0;
  }
  if (strcmp(how, "_exit") == 0) _exit(3);
  if (strcmp(how, "_Exit") == 0) _Exit(3);
  if (strcmp(how, "quick_exit") == 0) quick_exit(3);
  return 1;
}

static int do_control(void) {
  /* autostart holds one reference: start -> 2, stop -> 1, stop -> 0 */
  int a = rpdstart();
  rpd_rangePush(NULL, "open-at-stop", NULL);
  int b = rpdstop();
  int c = rpdstop();
  int d = rpdstop(); /* below zero: refused */
  rpd_rangePush(NULL, "while-stopped", NULL); /* not recorded */
  rpd_rangePop();
  rpd_rangePop(); /* pops open-at-stop: already closed at the stop */
  int e = rpdstart();
  rpd_rangePush(NULL, "after-restart", NULL);
  rpd_rangePop();
  int f = rpdstop();
  printf("start=%d stop=%d stop=%d stop=%d start=%d stop=%d\n", a, b, c, d, e, f);
  return 0;
}

static int do_fork(int n) {
  for (int i = 0; i < n; i++) {
    rpd_rangePush(NULL, "parent", NULL);
    rpd_rangePop();
  }
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    for (int i = 0; i < n; i++) {
      rpd_rangePush(NULL, "child", NULL);
      rpd_rangePop();
    }
    printf("child %d\n", (int)getpid());
    fflush(stdout);
    exit(0);
  }
  int st;
  if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
  printf("parent %d\n", (int)getpid());
  return 0;
}

/* N ranges, then exec PROG in this very process (one thread, no fork). */
static int do_exec_direct(const char *prog, int n) {
  for (int i = 0; i < n; i++) {
    rpd_rangePush(NULL, "before-exec", NULL);
    rpd_rangePop();
  }
  printf("pid %d\n", (int)getpid());
  fflush(stdout);
  execl("/nonexistent/program", "nothing", (char *)NULL); /* fails: recording goes on */
  rpd_rangePush(NULL, "after-failed-exec", NULL);
  rpd_rangePop();
  execl(prog, prog, (char *)NULL);
  perror(prog);
  return 127;
}

static int do_exec(const char *prog, int n) {
  for (int i = 0; i < n; i++) {
    rpd_rangePush(NULL, "before-exec", NULL);
    rpd_rangePop();
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    execl(prog, prog, (char *)NULL);
    perror(prog);
    _exit(127);
  }
  int st;
  if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
  printf("parent %d child %d\n", (int)getpid(), (int)pid);
  return 0;
}

__attribute__((noinline)) static void stack_leaf(void) {
  rpd_rangePush(NULL, "deep", NULL);
  rpd_rangePop();
}
__attribute__((noinline)) static void stack_middle(void) {
  stack_leaf();
  __asm__ volatile("" ::: "memory");
}

static volatile sig_atomic_t g_got_int;
static void on_int(int sig) { g_got_int = sig; }

static int do_chain(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_int;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGINT, &sa, NULL) != 0) return 1;
  if (rpdstart() != 1) return 1;
  rpd_rangePush(NULL, "around-sigint", NULL);
  kill(getpid(), SIGINT);
  rpd_rangePop();
  rpd_mark(NULL, "after-sigint", NULL);
  printf("handler %d count %d\n", (int)g_got_int, rpdstop());
  return 0;
}

/* The application's asynchronous signals that thread `tid` blocks, of five. */
static int blocked_of_five(const char *tid) {
  static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGUSR1};
  char path[320], line[256];
  snprintf(path, sizeof path, "/proc/self/task/%s/status", tid);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  unsigned long long mask = 0;
  int found = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "SigBlk: %llx", &mask) == 1) found = 1;
  fclose(f);
  if (!found) return -1;
  int n = 0;
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) n += (mask >> (sigs[i] - 1)) & 1;
  return n;
}

static int do_helpers(void) {
  rpd_rangePush(NULL, "helpers", NULL);
  rpd_rangePop();
  if (rpdflush() != 0) return 1;
  DIR *d = opendir("/proc/self/task");
  if (!d) return 1;
  char self[32];
  snprintf(self, sizeof self, "%d", (int)gettid());
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || strcmp(e->d_name, self) == 0) continue;
    char path[320], name[32] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (f) {
      if (!fgets(name, sizeof name, f)) name[0] = 0;
      fclose(f);
    }
    name[strcspn(name, "\n")] = 0;
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, (id_t)atoi(e->d_name));
    printf("%s nice %d blocks %d of 5\n", name, errno ? 99 : nice, blocked_of_five(e->d_name));
  }
  closedir(d);
  return 0;
}

static int do_api(void) {
  int64_t t0 = rpd_now();
  uint64_t k = rpd_record_api("hip", "", "hipLaunchKernel", "kernel args", t0, t0 + 1000);
  struct rpd_kernel_launch kl = {"0x10", 64, 2, 1, 256, 1, 1, 1024, 16, "saxpy"};
  rpd_record_kernelapi(k, &kl);
  rpd_record_op(k, 0, 1, t0 + 2000, t0 + 7000, "saxpy", "KernelExecution");
  uint64_t c = rpd_record_api("hip", "", "hipMemcpyAsync", "", t0 + 1500, t0 + 1800);
  struct rpd_copy cp = {"0x10", 4096, 0, 0, 1, "0xdd", "0x55", 0, -1, 0, 1};
  rpd_record_copyapi(c, &cp);
  rpd_record_op(c, 0, 2, t0 + 8000, t0 + 9000, "", "CopyHostToDevice");
  rpd_record_monitor("gpu", 0, "sclk", t0, t0 + 10000, "1500");
  return 0;
}

/* n ranges pushed by interned handle, alternating between two names that
 * share one args text (the Python profiler's pattern). */
static int do_interned(int n) {
  uint32_t dom = rpd_intern("python"), args = rpd_intern("prog.py:7");
  uint32_t names[2] = {rpd_intern("mod.even"), rpd_intern("mod.odd")};
  for (int i = 0; i < n; i++) {
    rpd_rangePushInterned(dom, names[i & 1], args);
    rpd_rangePop();
  }
  return 0;
}

static int do_zone(int n) {
  /* which path NANO_ZONE takes: inline (1) or calls (0) */
  printf("inline %d\n", __atomic_load_n(&nano_rpd_fast_v2, __ATOMIC_RELAXED) != 0);
  for (int k = 0; k < n; k++) {
    NANO_ZONE("zone-outer");
    char name[16];
    snprintf(name, sizeof name, "dyn-%d", k % 3);
    NANO_ZONE(name);
  }
  return 0;
}

/* The head of the calling thread's ring (rpd.h's layout), and the ring. */
static uint64_t ring_head(const void **ring) {
  *ring = nano_rpd_thread_v2.ring;
  return nano_rpd_thread_v2.ring ? nano_rpd_thread_v2.ring->head : 0;
}

/* fold N: the ring slots taken by N leaf NANO_ZONEs, N NANO_ZONEs with a
 * mark inside, N leaf rpd_rangePush/rpd_rangePop ranges, and N zones that
 * open a leaf range inside, each set in turn ("slots A B C D"; "same ring"
 * when no set moved to another ring, which the counts need). */
static int do_fold(int n) {
  const void *r0, *r1, *r2, *r3, *r4;
  rpd_mark(NULL, "first", NULL); /* the thread has its ring */
  uint64_t h0 = ring_head(&r0);
  for (int i = 0; i < n; i++) {
    NANO_ZONE("leaf");
  }
  uint64_t h1 = ring_head(&r1);
  for (int i = 0; i < n; i++) {
    NANO_ZONE("marked");
    rpd_mark(NULL, "inside", NULL);
  }
  uint64_t h2 = ring_head(&r2);
  for (int i = 0; i < n; i++) {
    rpd_rangePush(NULL, "called", NULL);
    rpd_rangePop();
  }
  uint64_t h3 = ring_head(&r3);
  for (int i = 0; i < n; i++) {
    NANO_ZONE("outer");
    NANO_ZONE("inner");
  }
  uint64_t h4 = ring_head(&r4);
  /* a range whose last record inside is a kernel launch (two slots): the
   * launch's second slot starts with bytes a push would have (grid 257, 1:
   * 01 01 00 00 01 00 00 00, epoch 1), and the pop must not fold into it */
  rpd_rangePush(NULL, "around", NULL);
  int64_t now = rpd_now();
  uint64_t api = rpd_record_api("test", "", "launch", "", now, now);
  struct rpd_kernel_launch kl = {"s", 257, 1, 1, 64, 1, 1, 0, 0, "k"};
  rpd_record_kernelapi(api, &kl);
  rpd_rangePop();
  printf("slots %llu %llu %llu %llu\n", (unsigned long long)(h1 - h0),
         (unsigned long long)(h2 - h1), (unsigned long long)(h3 - h2),
         (unsigned long long)(h4 - h3));
  printf("%s\n", r0 == r1 && r1 == r2 && r2 == r3 && r3 == r4 ? "same ring" : "rings changed");
  return 0;
}

/* outpaced: a thread records ranges faster than the writer persists them,
 * in batches of OUTPACED_BATCH, until told to stop or CAP are made. */
#define OUTPACED_BATCH 1000
#define OUTPACED_START_MS 50 /* recording before the main thread flushes */
static _Atomic int g_stop_recording;
static _Atomic long g_recorded;
static long g_cap;

static void *outpacing(void *arg) {
  (void)arg;
  uint32_t dom = rpd_intern("test"), name = rpd_intern("fast");
  char args[32];
  long n = 0;
  while (n < g_cap && !atomic_load(&g_stop_recording)) {
    for (int i = 0; i < OUTPACED_BATCH; i++, n++) {
      snprintf(args, sizeof args, "i=%ld", n); /* a new string row per range: a slow writer */
      rpd_rangePushInterned(dom, name, rpd_intern(args));
      rpd_rangePop();
    }
    atomic_store(&g_recorded, n);
  }
  return NULL;
}

/* outpaced CAP: flushes while a thread records faster than the writer can
 * persist (up to CAP ranges); prints whether the flush returned while that
 * thread still recorded, then how many ranges it made before and after. */
static int do_outpaced(long cap) {
  g_cap = cap;
  pthread_t t;
  if (pthread_create(&t, NULL, outpacing, NULL) != 0)
    return 1;
  usleep(OUTPACED_START_MS * 1000);
  long before = atomic_load(&g_recorded);
  int rc = rpdflush();
  long after = atomic_load(&g_recorded);
  atomic_store(&g_stop_recording, 1);
  pthread_join(t, NULL);
  printf("flush %d, returned while recording: %s\n", rc, after < cap ? "yes" : "no");
  printf("ranges before %ld after %ld total %ld\n", before, after, atomic_load(&g_recorded));
  return rc != 0;
}

static int do_clock(int n, int ms, int flush) {
  for (int i = 0; i < n; i++) {
    int64_t before = rpd_now();
    rpd_mark(NULL, "clock", NULL);
    int64_t after = rpd_now();
    printf("%lld %lld\n", (long long)before, (long long)after);
    if (flush && rpdflush() != 0) return 1;
    if (i + 1 < n) usleep(ms * 1000);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODE ARGS...\n", argv[0]);
    return 2;
  }
  const char *m = argv[1];
  int a = argc > 2 ? atoi(argv[2]) : 0, b = argc > 3 ? atoi(argv[3]) : 0;
  if (strcmp(m, "threads") == 0) return do_threads(a, b);
  if (strcmp(m, "heavy") == 0)
    return do_heavy(a, b, argc > 4 && strcmp(argv[4], "keepgoing") == 0);
  if (strcmp(m, "crash") == 0 && argc > 3) return do_crash(argv[2], b);
  if (strcmp(m, "marks") == 0) return do_marks(a);
  if (strcmp(m, "marks-done") == 0) { /* says when the marks are made */
    do_marks(a);
    printf("done\n");
    fflush(stdout);
    return 0;
  }
  if (strcmp(m, "control") == 0) return do_control();
  if (strcmp(m, "exit") == 0 && argc > 3) return do_exit(argv[2], b);
  if (strcmp(m, "fork") == 0) return do_fork(a);
  if (strcmp(m, "exec") == 0 && argc > 3) return do_exec(argv[2], b);
  if (strcmp(m, "exec-direct") == 0 && argc > 3) return do_exec_direct(argv[2], b);
  if (strcmp(m, "stack") == 0) {
    stack_middle();
    return 0;
  }
  if (strcmp(m, "api") == 0) return do_api();
  if (strcmp(m, "helpers") == 0) return do_helpers();
  if (strcmp(m, "interned") == 0) return do_interned(a);
  if (strcmp(m, "zone") == 0) return do_zone(a);
  if (strcmp(m, "fold") == 0) return do_fold(a);
  if (strcmp(m, "outpaced") == 0) return do_outpaced(atol(argv[2]));
  if (strcmp(m, "clock") == 0) return do_clock(a, b, argc > 4 && strcmp(argv[4], "flush") == 0);
  if (strcmp(m, "chain") == 0) return do_chain();
  if (strcmp(m, "setname") == 0 && argc > 3) {
    int before = rpd_set_filename(argv[2], b);
    rpdstart();
    int after = rpd_set_filename("elsewhere.rpd", 1);
    rpd_mark(NULL, "named", NULL);
    rpdstop();
    printf("set %d %d\n", before, after);
    return 0;
  }
  if (strcmp(m, "idle") == 0) {
    printf("count=%d\n", rpdstart());
    rpd_rangePush(NULL, "window", NULL);
    usleep(a * 1000);
    rpd_rangePop();
    printf("count=%d\n", rpdstop());
    return 0;
  }
  if (strcmp(m, "sleepy") == 0) {
    for (int i = 0; i < a; i++) {
      rpd_rangePush(NULL, "early", NULL);
      rpd_rangePop();
    }
    printf("ready\n");
    fflush(stdout);
    usleep(b * 1000);
    return 0;
  }
  fprintf(stderr, "%s: unknown mode %s\n", argv[0], m);
  return 2;
}
