/* rpd.c: settings, control, signals, exit, fork, load and exit (the tracer
 * core, tracer.h). */
#define _GNU_SOURCE
#include "tracer.h"

#include "nano/rpdfile.h"
#include "nano/settings.h"
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

char g_template[4096] = "./trace.rpd";                   /* RPDT_FILENAME, %p = pid    */
int g_truncate;                                          /* rpd_set_filename(.., 0)    */
double g_autoflush_hz;                                   /* RPDT_AUTOFLUSH             */
double g_atomics_hz = RPD_DEFAULT_ATOMICS_HZ;            /* NANO_RPD_ATOMICS_HZ    */
int g_stack_depth;                                       /* RPDT_STACKFRAMES/NANO_RPD_STACKDEPTH */
int g_drop;                                              /* NANO_RPD_DROP              */
int g_overflow = 1;                                      /* NANO_RPD_OVERFLOW          */
uint64_t g_ovf_memory_max = RPD_DEFAULT_OVERFLOW_MEMORY; /* NANO_RPD_OVERFLOW_MEMORY */
int g_quiet;                                             /* NANO_RPD_QUIET             */
enum nano_rpdfile_sync g_sync = NANO_RPDFILE_SYNC_OFF;   /* NANO_RPD_SYNC             */
uint32_t g_cfg_slots = RPD_DEFAULT_SLOTS;                /* NANO_RPD_BUFFER          */
static int g_crash_wait_ms = RPD_DEFAULT_CRASH_WAIT_MS;  /* NANO_RPD_CRASH_WAIT_MS */
static pid_t g_tracer_pid; /* the process this tracer's state belongs to (not a vfork child) */
int g_writer_nice = RPD_DEFAULT_WRITER_NICE; /* NANO_RPD_WRITER_NICE     */

/* A boolean setting: `dflt` when unset, off when malformed (nano/settings.h). */
static int rpd_env_bool(const char *name, int dflt) {
  int v = dflt;
  nano_env_bool(name, &v);
  return v;
}

/* An integer setting in [lo, hi]: `dflt` when unset or outside. */
static uint64_t rpd_env_uint(const char *name, uint64_t lo, uint64_t hi, uint64_t dflt) {
  uint64_t v = dflt;
  nano_env_uint(name, lo, hi, &v);
  return v;
}

/* nano_rpdfile's busy hook: the writer waits for another process's lock
 * (g_writer_blocked, tracer.h). */
static void rpd_writer_waits(void) { atomic_store(&g_writer_blocked, 1); }
_Atomic int g_writer_blocked;
_Atomic uint64_t g_lock_dropped;

_Atomic uint32_t g_state;
/* g_state while NANO_ZONE's inline path may record (TSC stamps, no stack
 * frames: g_fast), else 0 */
RPDI_EXPORT uint32_t nano_rpd_fast_v2;
static int g_fast;

/* Sets the recording state (async-signal-safe). */
static void rpd_set_state(uint32_t st) {
  __atomic_store_n(&nano_rpd_fast_v2, g_fast ? st : 0, __ATOMIC_SEQ_CST);
  atomic_store(&g_state, st);
}
_Atomic int64_t g_stop_at[RPD_STOP_EPOCHS];
_Atomic int64_t g_start_at[RPD_STOP_EPOCHS];

void rpd_mark_stopped(int64_t t) {
  uint32_t st = atomic_load(&g_state);
  if (!(st & 1))
    return;
  atomic_store(&g_stop_at[(st >> 1) % RPD_STOP_EPOCHS], t);
  rpd_set_state(st & ~1u);
}
pthread_mutex_t g_ctl = PTHREAD_MUTEX_INITIALIZER;
static int g_refs; /* start/stop reference count */
static uint32_t g_epoch;

_Atomic(struct rpd_tbuf *) g_bufs;
_Atomic uint64_t g_api_next = 1;

RPDI_EXPORT __thread struct nano_rpd_thread nano_rpd_thread_v2
    __attribute__((tls_model("initial-exec")));
pthread_key_t g_tls_key;

_Atomic uint32_t g_flush_req;
_Atomic uint32_t g_flush_done;
int g_evfd = -1;
_Atomic int g_writer_running;
_Atomic int g_writer_quit;
_Atomic int g_writer_final;
_Atomic int g_writer_failed;
pthread_t g_writer_thread;
pthread_mutex_t g_wlock = PTHREAD_MUTEX_INITIALIZER;

void rpdi_logv(const char *prefix, const char *fmt, va_list ap) {
  char buf[1024];
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  if (n < 0)
    return;
  if ((size_t)n >= sizeof buf)
    n = sizeof buf - 1;
  fprintf(stderr, "%s%.*s\n", prefix, n, buf);
}

void rpd_log(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rpdi_logv("nanoprobe rpd: ", fmt, ap);
  va_end(ap);
}

void *rpd_grow(void *a, int n, int *cap, size_t size) {
  if (n < *cap)
    return a;
  int c = *cap ? *cap * 2 : 64;
  void *p = realloc(a, (size_t)c * size);
  if (p)
    *cap = c;
  return p;
}

/* ---- control -------------------------------------------------------------- */

RPDI_EXPORT int rpd_set_filename(const char *path, int append) {
  if (!path || !*path)
    return -1;
  pthread_mutex_lock(&g_ctl);
  int ret = -1;
  if (!atomic_load(&g_writer_running) && strlen(path) < sizeof g_template) {
    strcpy(g_template, path);
    g_truncate = !append;
    ret = 0;
  }
  pthread_mutex_unlock(&g_ctl);
  return ret;
}

static void rpd_install_signals(void);

/* Recording starts in a new epoch (g_ctl held): records of the old one are
 * told apart, and the epoch is never 0 (0 means "not recording"). */
static void rpd_begin_epoch(void) {
  g_epoch++;
  if (g_epoch == 0 || (g_epoch << 1) == 0)
    g_epoch = 1;
  atomic_store(&g_start_at[g_epoch % RPD_STOP_EPOCHS], rpd_stamp());
  rpd_set_state((g_epoch << 1) | 1);
}

RPDI_EXPORT int rpdstart(void) {
  pthread_mutex_lock(&g_ctl);
  int ret;
  if (g_refs == 0) {
    if (rpd_writer_start() != 0) {
      pthread_mutex_unlock(&g_ctl);
      return -1;
    }
    rpd_install_signals();
    rpd_begin_epoch();
    rpdi_atomics_window(1);
  }
  ret = ++g_refs;
  pthread_mutex_unlock(&g_ctl);
  return ret;
}

RPDI_EXPORT int rpdstop_nowait(void) {
  pthread_mutex_lock(&g_ctl);
  if (g_refs == 0) {
    pthread_mutex_unlock(&g_ctl);
    rpd_log("rpdstop() refused: recording is not started (start count is 0)");
    return -1;
  }
  int ret = --g_refs;
  if (ret == 0) {
    rpd_mark_stopped(rpd_stamp());
    rpdi_atomics_window(0);
  }
  pthread_mutex_unlock(&g_ctl);
  if (ret == 0)
    atomic_fetch_add(&g_atomics_req, 1);
  return ret;
}

RPDI_EXPORT int rpdstop(void) {
  int ret = rpdstop_nowait();
  if (ret == 0 && rpd_flush_wait(-1) != 0)
    return -1; /* stopped, but the rows did not reach the file */
  return ret;
}

RPDI_EXPORT int rpd_status(int *count, char *path, size_t len) {
  pthread_mutex_lock(&g_ctl);
  if (count)
    *count = g_refs;
  if (path && len) {
    snprintf(path, len, "%s", atomic_load(&g_writer_running) ? rpdw_path() : "");
  }
  pthread_mutex_unlock(&g_ctl);
  return 0;
}

RPDI_EXPORT int rpdflush(void) {
  if (!atomic_load(&g_writer_running))
    return 0;
  atomic_fetch_add(&g_atomics_req, 1);
  return rpd_flush_wait(-1);
}

/* ---- signals -------------------------------------------------------------- */

/* Every signal whose default action ends the process (signal(7): Term and
 * Core), but SIGKILL and SIGSTOP, which cannot be caught, and the real-time
 * signals, some of which the C library keeps for itself. */
static const int rpd_signals[] = {SIGSEGV, SIGBUS,  SIGILL,  SIGFPE,   SIGABRT, SIGTERM,
                                  SIGINT,  SIGHUP,  SIGQUIT, SIGPIPE,  SIGALRM, SIGUSR1,
                                  SIGUSR2, SIGXFSZ, SIGXCPU, SIGTRAP,  SIGSYS,  SIGVTALRM,
                                  SIGPROF, SIGIO,   SIGPWR,  SIGSTKFLT};
#define RPD_NSIG (int)(sizeof rpd_signals / sizeof rpd_signals[0])
static struct sigaction g_old_act[RPD_NSIG];
static int g_signals_installed;

/* The alternate signal stack of a thread that records, so that a stack
 * overflow still runs the handler: bytes, at least, and the thread's own
 * (NULL: the thread had one of its own, or none could be had). */
#define RPD_ALTSTACK_BYTES (64u << 10)
static __thread void *tls_altstack __attribute__((tls_model("initial-exec")));
static __thread size_t tls_altstack_bytes __attribute__((tls_model("initial-exec")));

void rpd_altstack_take(void) {
  stack_t old;
  if (tls_altstack || sigaltstack(NULL, &old) != 0 || !(old.ss_flags & SS_DISABLE))
    return; /* ours already, or the program's */
  long min = sysconf(_SC_MINSIGSTKSZ);
  size_t bytes =
      min > 0 && (size_t)min * 4 > RPD_ALTSTACK_BYTES ? (size_t)min * 4 : RPD_ALTSTACK_BYTES;
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return;
  stack_t ss = {.ss_sp = p, .ss_size = bytes, .ss_flags = 0};
  if (sigaltstack(&ss, NULL) != 0) {
    munmap(p, bytes);
    return;
  }
  tls_altstack = p;
  tls_altstack_bytes = bytes;
}

void rpd_altstack_drop(void) {
  if (!tls_altstack)
    return;
  stack_t cur, off = {.ss_flags = SS_DISABLE};
  /* only while it is ours and not in use (a handler running on it) */
  if (sigaltstack(NULL, &cur) == 0 && cur.ss_sp == tls_altstack && !(cur.ss_flags & SS_ONSTACK) &&
      sigaltstack(&off, NULL) == 0)
    munmap(tls_altstack, tls_altstack_bytes);
  tls_altstack = NULL;
}

/* The components registered (rpd_internal.h), at most this many. */
#define RPD_MAX_COMPONENTS 8
static const struct rpdi_component *g_components[RPD_MAX_COMPONENTS];
static int g_ncomponents;

void rpdi_say(const char *s) {
  size_t n = strlen(s);
  while (n) {
    ssize_t w = write(STDERR_FILENO, s, n);
    if (w <= 0)
      return;
    s += w;
    n -= (size_t)w;
  }
}

const char *rpdi_dec(uint64_t v, char buf[24]) {
  char *p = buf + 23;
  *p = 0;
  do
    *--p = (char)('0' + v % 10);
  while (v /= 10);
  return p;
}

/* Whether a death path of the calling thread is this tracer's to flush: its
 * own process (not a vfork child, which shares the parent's memory), a
 * writer running, and not the writer thread itself. Async-signal-safe. */
static int rpd_death_ours(void) {
  return getpid() == g_tracer_pid && atomic_load(&g_writer_running) &&
         !pthread_equal(pthread_self(), g_writer_thread);
}

/* The end of recording on a death path (a fatal signal, _exit, quick_exit,
 * exec): recording stops (open ranges end now), the atomics' counts are asked
 * for, and the writer commits, waited for at most NANO_RPD_CRASH_WAIT_MS.
 * When the wait runs out, says on stderr how many records are not in the
 * trace then (async-signal-safe throughout). `why` names the path in that line. */
static void rpd_last_flush(const char *why) {
  rpd_mark_stopped(rpd_stamp());
  atomic_fetch_add(&g_atomics_req, 1);
  atomic_store(&g_writer_final, 1);
  if (rpd_flush_wait(g_crash_wait_ms) == 0 || !atomic_load(&g_writer_running))
    return;
  char n[24], ms[24];
  int exact;
  uint64_t pending = rpd_records_pending(&exact);
  rpdi_say("nanoprobe rpd: ");
  rpdi_say(why);
  rpdi_say(": the writer did not commit within ");
  rpdi_say(rpdi_dec((uint64_t)g_crash_wait_ms, ms));
  rpdi_say(" ms (NANO_RPD_CRASH_WAIT_MS): ");
  if (!exact)
    rpdi_say("at least ");
  rpdi_say(rpdi_dec(pending, n));
  rpdi_say(" records of this process (in its threads' rings, the spill file and the writer's "
           "open transaction) are not in the trace\n");
}

/* The handler. With the default action in place before us, the signal ends
 * the process: rpd_last_flush, then the default action is restored and the
 * signal re-raised (a fault re-executes and faults again on return). With an
 * application handler before us, SIGTERM/SIGINT only flush (recording goes
 * on) and every other signal goes straight to that handler (a runtime may use
 * SIGSEGV itself; a timer's SIGALRM must stay cheap). Runs on the thread's
 * alternate stack where it has one (rpd_altstack_take): a stack overflow
 * still flushes. */
static void rpd_signal_handler(int sig, siginfo_t *info, void *ctx) {
  int saved_errno = errno;
  int k = 0;
  while (k < RPD_NSIG && rpd_signals[k] != sig)
    k++;
  if (k == RPD_NSIG)
    return;
  struct sigaction *old = &g_old_act[k];
  int user = (old->sa_flags & SA_SIGINFO)
                 ? old->sa_sigaction != NULL
                 : (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN);
  int writer = rpd_death_ours();
  for (int i = 0; i < g_ncomponents; i++)
    if (g_components[i]->fault)
      g_components[i]->fault(sig, info);
  if (!user) {
    if (writer) {
      char num[24];
      char why[48] = "signal ";
      strcat(why, rpdi_dec((uint64_t)sig, num));
      rpd_last_flush(why);
    }
    sigaction(sig, old, NULL);
    if ((sig != SIGSEGV && sig != SIGBUS && sig != SIGILL && sig != SIGFPE) ||
        (info && info->si_code <= 0)) {
      /* not a fault that re-executes: raise it again, unblocked */
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, sig);
      pthread_sigmask(SIG_UNBLOCK, &set, NULL);
      raise(sig);
    }
    errno = saved_errno;
    return;
  }
  if (writer && (sig == SIGTERM || sig == SIGINT))
    rpd_flush_wait(g_crash_wait_ms);
  errno = saved_errno;
  if (old->sa_flags & SA_SIGINFO)
    old->sa_sigaction(sig, info, ctx);
  else
    old->sa_handler(sig);
}

static void rpd_install_signals(void) {
  if (g_signals_installed)
    return;
  g_signals_installed = 1;
  if (!rpd_env_bool("NANO_RPD_SIGNALS", 1))
    return;
  rpd_altstack_take(); /* the installing thread's (the main thread's, usually) */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = rpd_signal_handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < RPD_NSIG; i++) {
    struct sigaction old;
    if (sigaction(rpd_signals[i], NULL, &old) != 0)
      continue;
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN)
      continue; /* keep ignoring */
    g_old_act[i] = old;
    if (sigaction(rpd_signals[i], &sa, NULL) != 0)
      rpd_log("cannot install the handler of signal %d: %s", rpd_signals[i], strerror(errno));
  }
}

/* ---- _exit, _Exit and quick_exit ------------------------------------------ */

/* A process that ends through _exit or _Exit (a fork child's usual way out) or
 * quick_exit runs no destructors, so the writer's last commit would not
 * happen. These keep what a fatal signal keeps: recording stops (open ranges
 * end now) and the writer commits, waiting at most NANO_RPD_CRASH_WAIT_MS, as
 * async-signal-safe as the signal path (a signal handler may call _exit).
 * _exit and _Exit are seen where this library comes before libc in symbol
 * lookup (LD_PRELOAD, or linked with -lnano_rpd); glibc's internal calls and a
 * raw exit_group system call are not. A vfork child (the parent's memory, no
 * fork handlers) is told by its pid and left alone. */
static void rpd_exit_flush(void) {
  if (rpd_death_ours())
    rpd_last_flush("exit");
}

RPDI_EXPORT void _exit(int status) {
  rpd_exit_flush();
  for (;;)
    syscall(SYS_exit_group, status);
}

RPDI_EXPORT void _Exit(int status) {
  rpd_exit_flush();
  for (;;)
    syscall(SYS_exit_group, status);
}

/* ---- exec ----------------------------------------------------------------- */

/* exec* replaces the image that records: what it recorded is committed first
 * (rpd_last_flush, "exec"), and recording resumes where the exec fails. Every
 * function of the family is here (glibc's execvp and execl call execve
 * inside, where interposing execve alone would not see them); the real ones
 * are resolved at load, since an exec often runs in a fork child, where
 * dlsym is not safe. A vfork child (the parent's memory) is left alone, as
 * on _exit. */
typedef int (*rpd_execve_fn)(const char *, char *const[], char *const[]);
typedef int (*rpd_execv_fn)(const char *, char *const[]);
typedef int (*rpd_fexecve_fn)(int, char *const[], char *const[]);
static struct {
  rpd_execve_fn execve, execvpe;
  rpd_execv_fn execv, execvp;
  rpd_fexecve_fn fexecve;
} g_exec;

static void rpd_exec_resolve(void) {
  g_exec.execve = (rpd_execve_fn)dlsym(RTLD_NEXT, "execve");
  g_exec.execvpe = (rpd_execve_fn)dlsym(RTLD_NEXT, "execvpe");
  g_exec.execv = (rpd_execv_fn)dlsym(RTLD_NEXT, "execv");
  g_exec.execvp = (rpd_execv_fn)dlsym(RTLD_NEXT, "execvp");
  g_exec.fexecve = (rpd_fexecve_fn)dlsym(RTLD_NEXT, "fexecve");
}

/* Before an exec: 1 when recording was on and stopped for it. */
static int rpd_exec_begin(void) {
  if (!rpd_death_ours() || !(atomic_load(&g_state) & 1))
    return 0;
  rpd_last_flush("exec");
  return 1;
}

/* After an exec that failed: recording goes on (a new epoch), errno kept. */
static int rpd_exec_failed(int resume, int rc) {
  int saved = errno;
  if (resume) {
    pthread_mutex_lock(&g_ctl);
    if (g_refs > 0 && !(atomic_load(&g_state) & 1))
      rpd_begin_epoch();
    pthread_mutex_unlock(&g_ctl);
  }
  errno = saved;
  return rc;
}

/* The real function, or ENOSYS where the C library has none. */
#define RPD_EXEC_CALL(fn, ...)                                                                     \
  do {                                                                                             \
    int resume_ = rpd_exec_begin();                                                                \
    if (!g_exec.fn) {                                                                              \
      errno = ENOSYS;                                                                              \
      return rpd_exec_failed(resume_, -1);                                                         \
    }                                                                                              \
    return rpd_exec_failed(resume_, g_exec.fn(__VA_ARGS__));                                       \
  } while (0)

RPDI_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
  RPD_EXEC_CALL(execve, path, argv, envp);
}
RPDI_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
  RPD_EXEC_CALL(execvpe, file, argv, envp);
}
RPDI_EXPORT int execv(const char *path, char *const argv[]) { RPD_EXEC_CALL(execv, path, argv); }
RPDI_EXPORT int execvp(const char *file, char *const argv[]) { RPD_EXEC_CALL(execvp, file, argv); }
RPDI_EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
  RPD_EXEC_CALL(fexecve, fd, argv, envp);
}

/* The arguments of execl, execlp and execle after arg0, up to the NULL, into
 * argv (n + 1 pointers); the count. */
static size_t rpd_execl_count(va_list ap) {
  size_t n = 1;
  while (va_arg(ap, char *))
    n++;
  return n;
}
#define RPD_EXECL_ARGV(argv, arg0, last)                                                           \
  va_list ap;                                                                                      \
  va_start(ap, arg0);                                                                              \
  size_t n_ = rpd_execl_count(ap);                                                                 \
  va_end(ap);                                                                                      \
  char *argv[n_ + 1];                                                                              \
  argv[0] = (char *)(arg0);                                                                        \
  va_start(ap, arg0);                                                                              \
  for (size_t i_ = 1; i_ <= n_; i_++)                                                              \
    argv[i_] = va_arg(ap, char *);                                                                 \
  last;                                                                                            \
  va_end(ap)

RPDI_EXPORT int execl(const char *path, const char *arg, ...) {
  RPD_EXECL_ARGV(argv, arg, (void)0);
  return execv(path, argv);
}
RPDI_EXPORT int execlp(const char *file, const char *arg, ...) {
  RPD_EXECL_ARGV(argv, arg, (void)0);
  return execvp(file, argv);
}
RPDI_EXPORT int execle(const char *path, const char *arg, ...) {
  char *const *envp;
  RPD_EXECL_ARGV(argv, arg, envp = va_arg(ap, char *const *));
  return execve(path, argv, envp);
}

/* ---- fork ----------------------------------------------------------------- */

/* Every lock of the tracer is taken before fork (in the order the code nests
 * them: control, interning, the writer's, the producers'), so the child
 * finds none held by a thread it does not have. */
static void rpd_atfork_prepare(void) {
  pthread_mutex_lock(&g_ctl);
  rpd_intern_atfork(RPD_FORK_PREPARE);
  rpdw_atfork(RPD_FORK_PREPARE);
  rpd_producer_atfork(RPD_FORK_PREPARE);
  rpdi_spill_atfork_prepare();
}

static void rpd_atfork_parent(void) {
  rpdi_spill_atfork_parent();
  rpd_producer_atfork(RPD_FORK_PARENT);
  rpdw_atfork(RPD_FORK_PARENT);
  rpd_intern_atfork(RPD_FORK_PARENT);
  pthread_mutex_unlock(&g_ctl);
}

/* The child: the parent's buffers, writer and connection are not ours (the
 * connection is abandoned, never used or closed, as SQLite requires). */
static void rpd_atfork_child(void) {
  g_tracer_pid = getpid();
  pthread_mutex_init(&g_ctl, NULL);
  rpd_intern_atfork(RPD_FORK_CHILD);
  rpdw_atfork(RPD_FORK_CHILD);
  rpd_producer_atfork(RPD_FORK_CHILD);
  rpdi_spill_atfork_child();
  rpdi_stack_reset();
  if (g_refs > 0) {
    uint32_t st = atomic_load(&g_state);
    rpd_set_state(st & ~1u);
    if (rpd_writer_start() == 0) {
      rpd_begin_epoch();
    } else {
      g_refs = 0;
    }
  }
}

/* ---- load and exit -------------------------------------------------------- */

void rpdi_component_register(const struct rpdi_component *c) {
  if (g_ncomponents == RPD_MAX_COMPONENTS) {
    rpd_log("component %s not registered: more than %d", c->name, RPD_MAX_COMPONENTS);
    return;
  }
  g_components[g_ncomponents++] = c;
}

int rpdi_object_path(const void *code, char *path) {
  Dl_info object;
  if (!dladdr(code, &object) || !object.dli_fname) {
    errno = ENOENT;
    return -1;
  }
  return realpath(object.dli_fname, path) ? 0 : -1;
}

__attribute__((constructor)) static void rpd_init(void) {
  if (pthread_key_create(&g_tls_key, rpd_tls_destructor) != 0)
    rpd_log("pthread_key_create failed: ranges open at a thread's exit stay open");
  if (pthread_atfork(rpd_atfork_prepare, rpd_atfork_parent, rpd_atfork_child) != 0)
    rpd_log("pthread_atfork failed: a fork child may inherit held locks");
  g_tracer_pid = getpid();
  rpd_exec_resolve();
  nano_rpdfile_on_busy(rpd_writer_waits);
  if (at_quick_exit(rpd_exit_flush) != 0)
    rpd_log("at_quick_exit failed: quick_exit will lose records");
  const char *e = nano_env_str("RPDT_FILENAME");
  if (e) {
    if (strlen(e) < sizeof g_template)
      strcpy(g_template, e);
    else
      rpd_log("RPDT_FILENAME is too long; using %s", g_template);
  }
  nano_env_real("RPDT_AUTOFLUSH", 0, RPD_MAX_AUTOFLUSH_HZ, &g_autoflush_hz);
  nano_env_real("NANO_RPD_ATOMICS_HZ", 0, RPD_MAX_AUTOFLUSH_HZ, &g_atomics_hz);
  if (rpd_env_bool("RPDT_STACKFRAMES", 0))
    g_stack_depth =
        (int)rpd_env_uint("NANO_RPD_STACKDEPTH", 1, RPD_MAX_STACK_DEPTH, RPD_DEFAULT_STACK_DEPTH);
  g_drop = rpd_env_bool("NANO_RPD_DROP", 0);
  g_overflow = rpd_env_bool("NANO_RPD_OVERFLOW", 1);
  nano_env_size("NANO_RPD_OVERFLOW_MEMORY", 0, RPDI_MAX_OVERFLOW_BYTES, &g_ovf_memory_max);
  rpdi_spill_init();
  g_quiet = rpd_env_bool("NANO_RPD_QUIET", 0);
  uint64_t slots = rpd_env_uint("NANO_RPD_BUFFER", 1, RPD_MAX_SLOTS, RPD_DEFAULT_SLOTS);
  uint32_t p = RPD_MIN_SLOTS;
  while (p < slots)
    p <<= 1;
  g_cfg_slots = p;
  g_crash_wait_ms = (int)rpd_env_uint("NANO_RPD_CRASH_WAIT_MS", 0, RPD_MAX_CRASH_WAIT_MS,
                                      RPD_DEFAULT_CRASH_WAIT_MS);
  g_writer_nice =
      (int)rpd_env_uint("NANO_RPD_WRITER_NICE", 0, RPD_MAX_WRITER_NICE, RPD_DEFAULT_WRITER_NICE);
  static const char *const syncs[] = {"off", "normal", "full", NULL};
  int sync; /* the index of the enum's value */
  if (nano_env_choice("NANO_RPD_SYNC", syncs, &sync) > 0)
    g_sync = (enum nano_rpdfile_sync)sync;
  rpd_tsc_init();
  g_fast = g_tsc && g_stack_depth <= 0;
  for (int i = 0; i < g_ncomponents; i++)
    if (g_components[i]->load)
      g_components[i]->load();
  if (rpd_env_bool("RPDT_AUTOSTART", 1))
    rpdstart();
}

__attribute__((destructor)) static void rpd_fini(void) {
  /* the components' last records (CUPTI's activities, the dispatch layer's
   * reports) go into the trace: before the writer stops */
  for (int i = 0; i < g_ncomponents; i++)
    if (g_components[i]->exit)
      g_components[i]->exit();
  pthread_mutex_lock(&g_ctl);
  rpd_mark_stopped(rpd_stamp());
  rpd_writer_stop();
  pthread_mutex_unlock(&g_ctl);
}
