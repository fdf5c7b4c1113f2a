/*
 * rpdremote.c: start, stop, flush or query the RPD tracer of a running
 * process that has libnano_remote.so loaded (protocol: nano/remote.h).
 *
 *   rpdremote start|stop|flush|status PID
 *   rpdremote list
 *
 * Exit status: 0 done; 1 the process refused or failed (a stop at count 0, a
 * flush error, the tracer not loaded, no state reported); 2 bad usage;
 * 3 no such process; 4 the process is not nanoprobe-enabled (no control
 * socket, or a stale one); 5 permission denied (another user's process).
 */
#define _GNU_SOURCE
#include <nano/remote.h>

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

enum {
  RR_OK = 0,
  RR_FAILED = 1,
  RR_USAGE = 2,
  RR_NOPROC = 3,
  RR_NOTENABLED = 4,
  RR_DENIED = 5,
};

/* The longest wait to connect and for a reply: a flush may take a while on a
 * large backlog; more than this and the process is not answering. */
#define RR_REPLY_TIMEOUT_S 120
/* How often a wait for the reply looks whether the process has been stopped
 * since the request went out (a stopped process never answers). */
#define RR_STATE_CHECK_MS 100
#define RR_MS_PER_S 1000
#define RR_NS_PER_MS 1000000

/* The state letter of process pid (/proc/PID/stat: R, S, D, T stopped, t
 * traced, Z...), or 0 when it cannot be read. */
static char rr_proc_state(long pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *close_paren = strrchr(buf, ')'); /* the name may hold anything: after its last ')' */
  return close_paren && close_paren[1] == ' ' ? close_paren[2] : 0;
}

static const char rr_help[] =
    "usage: rpdremote start|stop|flush|status [--socket PATH] PID\n"
    "       rpdremote list\n"
    "Controls the RPD tracer in running process PID, which must have\n"
    "libnano_remote.so loaded (LD_PRELOAD=\"libnano_rpd.so libnano_remote.so\").\n"
    "  start    take a recording reference (recording is on while the count > 0)\n"
    "  stop     drop one reference and flush; a stop at count 0 is refused\n"
    "  flush    commit everything recorded so far to the trace file\n"
    "  status   recording on/off, the start count, the trace file\n"
    "  list     the processes with a control socket of this user\n"
    "  --socket PATH   use this control socket instead of the default one\n"
    "A stopped process is said at once, also one stopped while rpdremote\n"
    "waits for its reply; one that does not answer in 120 s is given up on.\n"
    "Exit status: 0 done, 1 refused or failed in the process, 2 bad usage,\n"
    "3 no such process, 4 not nanoprobe-enabled, 5 permission denied.\n"
    "rpdremote --version prints the version.\n";

/* Prints "rpdremote: <message>" on stderr and returns `code`. */
static int rr_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Whether process state `state` (rr_proc_state) is stopped: by a signal (T)
 * or a debugger (t). */
static int rr_stopped(char state) { return state == 'T' || state == 't'; }
static int rr_fail(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("rpdremote: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return code;
}

/* Rewrites the reply text `in` into out (len bytes) so that it is safe on a
 * terminal: printable ASCII stays, every other byte (control characters,
 * escape sequences, DEL, anything non-ASCII) becomes \xNN. The process that
 * replies may belong to another user than the one reading (root controls any
 * process): its text must not reach the terminal raw. */
static void rr_printable(const char *in, char *out, size_t len) {
  size_t o = 0;
  for (const unsigned char *c = (const unsigned char *)in; *c && o + 5 < len; c++) {
    if (*c >= 0x20 && *c < 0x7f)
      out[o++] = (char)*c;
    else
      o += (size_t)snprintf(out + o, len - o, "\\x%02x", *c);
  }
  out[o] = 0;
}

/* Lists the live processes with a socket in this user's directory. */
static int rr_list(void) {
  char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
  if (nano_remote_dir(geteuid(), dir, sizeof dir) != 0)
    return rr_fail(RR_USAGE, "socket directory name too long (NANO_REMOTE_DIR?)");
  DIR *d = opendir(dir);
  if (!d) {
    if (errno == ENOENT)
      return RR_OK;
    return rr_fail(RR_FAILED, "%s: %s", dir, strerror(errno));
  }
  struct dirent *e;
  while ((e = readdir(d))) {
    char *end = NULL;
    long pid = strtol(e->d_name, &end, 10);
    if (end == e->d_name || strcmp(end, ".sock") || pid <= 0)
      continue;
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
      continue;
    printf("%ld\n", pid);
  }
  closedir(d);
  return RR_OK;
}

/* Maps a reply status word to an exit code. */
/* Says that process pid is stopped (state: rr_proc_state's T or t) and
 * returns RR_FAILED. */
static int rr_say_stopped(long pid, char state) {
  return rr_fail(RR_FAILED,
                 "process %ld is stopped (%s): it cannot answer until it runs (kill -CONT %ld)",
                 pid, state == 'T' ? "by a signal" : "by a debugger", pid);
}

/* Waits for fd to be readable, at most RR_REPLY_TIMEOUT_S, looking every
 * RR_STATE_CHECK_MS whether process pid was stopped meanwhile (a SIGSTOP
 * after the check before the request). 1: readable (or an error recv will
 * name); 0: timed out; -1: stopped, its state in *state. */
static int rr_wait_reply(int fd, long pid, char *state) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r = poll(&p, 1, RR_STATE_CHECK_MS);
    if (r > 0 || (r < 0 && errno != EINTR))
      return 1;
    *state = rr_proc_state(pid);
    if (rr_stopped(*state))
      return -1;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((t.tv_sec - t0.tv_sec) * RR_MS_PER_S + (t.tv_nsec - t0.tv_nsec) / RR_NS_PER_MS >=
        (long)RR_REPLY_TIMEOUT_S * RR_MS_PER_S)
      return 0;
  }
}

static int rr_code(const char *word) {
  if (!strcmp(word, NANO_REMOTE_ROK))
    return RR_OK;
  if (!strcmp(word, NANO_REMOTE_RDENIED))
    return RR_DENIED;
  if (!strcmp(word, NANO_REMOTE_RNOTRACER))
    return RR_NOTENABLED;
  if (!strcmp(word, NANO_REMOTE_RBADREQ))
    return RR_USAGE;
  return RR_FAILED;
}

int main(int argc, char **argv) {
  const char *cmd = NULL, *pid_s = NULL, *socket_path = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--version")) {
      puts("rpdremote (nanoprobe) " NANO_VERSION);
      return 0;
    }
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(rr_help, stdout);
      return RR_OK;
    }
    if (!strcmp(argv[i], "--socket")) {
      if (++i == argc)
        return rr_fail(RR_USAGE, "--socket needs a PATH");
      socket_path = argv[i];
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return rr_fail(RR_USAGE, "unknown option '%s' (see rpdremote --help)", argv[i]);
    } else if (!cmd) {
      cmd = argv[i];
    } else if (!pid_s) {
      pid_s = argv[i];
    } else {
      return rr_fail(RR_USAGE, "unexpected argument '%s' (see rpdremote --help)", argv[i]);
    }
  }
  if (!cmd)
    return rr_fail(RR_USAGE, "missing command (see rpdremote --help)");
  if (!strcmp(cmd, "list")) {
    if (pid_s)
      return rr_fail(RR_USAGE, "list takes no PID");
    return rr_list();
  }
  if (strcmp(cmd, "start") && strcmp(cmd, "stop") && strcmp(cmd, "flush") && strcmp(cmd, "status"))
    return rr_fail(RR_USAGE, "unknown command '%s' (start, stop, flush, status, list)", cmd);
  if (!pid_s)
    return rr_fail(RR_USAGE, "%s: missing PID", cmd);
  char *end = NULL;
  errno = 0;
  long pid = strtol(pid_s, &end, 10);
  if (*end || end == pid_s || errno || pid <= 0 || pid > 0x7fffffffL)
    return rr_fail(RR_USAGE, "'%s' is not a process id", pid_s);

  /* The target's owner decides where its socket is. */
  char proc[64];
  struct stat sb;
  snprintf(proc, sizeof proc, "/proc/%ld", pid);
  if (stat(proc, &sb) != 0 || (kill((pid_t)pid, 0) != 0 && errno == ESRCH))
    return rr_fail(RR_NOPROC, "process %ld: no such process", pid);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (socket_path) {
    if (strlen(socket_path) >= sizeof sa.sun_path)
      return rr_fail(RR_USAGE, "--socket %s: path too long for a Unix socket", socket_path);
    strcpy(sa.sun_path, socket_path);
  } else if (nano_remote_socket_path(sb.st_uid, (pid_t)pid, sa.sun_path, sizeof sa.sun_path) != 0) {
    return rr_fail(RR_USAGE, "socket path too long for a Unix socket (NANO_REMOTE_DIR?)");
  }

  /* A stopped process (SIGSTOP, a debugger) answers nothing: said at once */
  char state = rr_proc_state(pid);
  if (rr_stopped(state))
    return rr_say_stopped(pid, state);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return rr_fail(RR_FAILED, "socket: %s", strerror(errno));
  /* Bounded waits: to connect (a full backlog) and for the reply (a flush
   * may take a while on a large backlog; a process stopped after this check
   * never answers). */
  struct timeval tv = {.tv_sec = RR_REPLY_TIMEOUT_S};
  if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0) {
    int e = errno;
    close(fd);
    return rr_fail(RR_FAILED, "cannot bound the wait for process %ld: %s", pid, strerror(e));
  }
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    int e = errno;
    close(fd);
    if (e == EACCES || e == EPERM)
      return rr_fail(RR_DENIED,
                     "process %ld: permission denied (it belongs to uid %u; only that user "
                     "or root may control it)",
                     pid, (unsigned)sb.st_uid);
    if (e == ENOENT)
      return rr_fail(RR_NOTENABLED,
                     "process %ld is not nanoprobe-enabled: no control socket %s (run it with "
                     "libnano_remote.so loaded)",
                     pid, sa.sun_path);
    if (e == ECONNREFUSED)
      return rr_fail(RR_NOTENABLED,
                     "process %ld is not nanoprobe-enabled: %s is stale (nobody listens)", pid,
                     sa.sun_path);
    return rr_fail(RR_FAILED, "process %ld: cannot connect to %s: %s", pid, sa.sun_path,
                   e == EAGAIN ? "timed out" : strerror(e));
  }
  char line[NANO_REMOTE_LINE_MAX];
  int n = snprintf(line, sizeof line, "%s\n", cmd);
  /* The process may answer before reading (a refusal), so a failed send is
   * reported only when no reply follows. */
  int send_errno = send(fd, line, (size_t)n, MSG_NOSIGNAL) == n ? 0 : errno ? errno : EIO;
  size_t got = 0;
  while (got < sizeof line - 1) {
    int waited = rr_wait_reply(fd, pid, &state);
    if (waited <= 0) {
      close(fd);
      return waited < 0 ? rr_say_stopped(pid, state)
                        : rr_fail(RR_FAILED, "process %ld: no reply: timed out", pid);
    }
    ssize_t r = recv(fd, line + got, sizeof line - 1 - got, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      int e = errno;
      close(fd);
      if (send_errno)
        return rr_fail(RR_FAILED, "process %ld: cannot send the request: %s", pid,
                       strerror(send_errno));
      return rr_fail(RR_FAILED, "process %ld: no reply: %s", pid,
                     e == EAGAIN ? "timed out" : strerror(e));
    }
    if (r == 0)
      break;
    got += (size_t)r;
    if (memchr(line, '\n', got))
      break;
  }
  close(fd);
  line[got] = 0;
  char *nl = strchr(line, '\n');
  if (!nl && send_errno)
    return rr_fail(RR_FAILED, "process %ld: cannot send the request: %s", pid,
                   strerror(send_errno));
  if (!nl)
    return rr_fail(RR_FAILED, "process %ld: incomplete reply '%s'", pid, line);
  *nl = 0;
  char *text = strchr(line, ' ');
  if (text)
    *text++ = 0;
  char shown[4 * NANO_REMOTE_LINE_MAX + 1];
  rr_printable(text ? text : "", shown, sizeof shown);
  int code = rr_code(line);
  if (code == RR_FAILED && strcmp(line, NANO_REMOTE_RFAILED) &&
      strcmp(line, NANO_REMOTE_RREFUSED)) {
    rr_printable(line, shown, sizeof shown);
    return rr_fail(RR_FAILED, "process %ld: malformed reply (status '%.64s')", pid, shown);
  }
  /* a reply about the state names the process it comes from */
  char who[32];
  int wn = snprintf(who, sizeof who, "process %ld", pid);
  if ((code == RR_OK || code == RR_FAILED) &&
      (!text || strncmp(text, who, (size_t)wn) || (text[wn] != ':' && text[wn] != ' ')))
    return rr_fail(RR_FAILED, "process %ld: malformed reply (it does not name the process): %s",
                   pid, shown);
  if (code == RR_OK) {
    printf("%s\n", shown);
    return RR_OK;
  }
  return rr_fail(code, "%s", shown);
}
