/*
 * remote.c: libnano_remote.so, remote start/stop of the RPD tracer.
 *
 * Loaded into a process (LD_PRELOAD, or linked), its constructor starts one
 * control thread that listens on a Unix socket named by the pid in a private
 * per-user directory (nano/remote.h). rpdremote connects, sends one request
 * ("start", "stop", "flush", "status") and reads one reply line. The thread
 * calls the tracer's rpdstart/rpdstop/rpdflush/rpd_status, resolved in the
 * process with dlsym when the first request arrives, so the library works
 * whether libnano_rpd.so was linked, preloaded or dlopen'ed.
 *
 * Security: the socket directory must be owned by the process's effective uid
 * with mode 0700 (created so, checked with lstat; anything else disables
 * remote control with a warning); the socket itself is 0600; and every peer is
 * identified with SO_PEERCRED and answered only when its uid equals the
 * process's effective uid or is 0 (root).
 *
 * No signals are used: the thread blocks in accept(); at exit the destructor
 * shuts the listening socket down, which wakes it, joins it and removes the
 * socket file. A forked child closes its parent's socket and starts its own
 * (pid-named) thread and socket; after exec the library, if loaded again,
 * removes the stale socket of the same pid. At start-up the sockets of
 * processes that no longer exist are removed from the directory.
 *
 * Environment: NANO_REMOTE=0 keeps the library from listening;
 * NANO_REMOTE_DIR overrides the socket directory (nano/remote.h).
 */
#define _GNU_SOURCE
#include <nano/remote.h>

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* State of this process's control server. Written by the constructor, the
 * fork child handler and the destructor only, which never run concurrently
 * with each other; the thread reads listen_fd. */
static struct {
  int listen_fd;          /* -1 when not listening */
  pthread_t thread;
  int thread_running;
  int enabled;            /* NANO_REMOTE is not 0 */
  volatile sig_atomic_t stopping;
  char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
} rm = {.listen_fd = -1};

/* Prints "nanoprobe remote: <message>" on stderr. */
static void rm_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void rm_warn(const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "nanoprobe remote: %s\n", buf);
}

/* ---- the tracer's entry points ----------------------------------------- */

/* Looks up `name` in the process (libnano_rpd.so linked or preloaded). */
static void *rm_sym(const char *name) { return dlsym(RTLD_DEFAULT, name); }

/* Executes one request; writes the reply line (without newline) into out. */
static void rm_execute(const char *req, char *out, size_t len) {
  int (*start)(void) = (int (*)(void))rm_sym("rpdstart");
  int (*stop)(void) = (int (*)(void))rm_sym("rpdstop");
  int (*flush)(void) = (int (*)(void))rm_sym("rpdflush");
  int (*status)(int *, char *, size_t) = (int (*)(int *, char *, size_t))rm_sym("rpd_status");
  pid_t pid = getpid();
  int known = !strcmp(req, "start") || !strcmp(req, "stop") || !strcmp(req, "flush") ||
              !strcmp(req, "status");
  if (!known) {
    snprintf(out, len, NANO_REMOTE_RBADREQ " unknown request '%.64s' (start, stop, flush, status)",
             req);
    return;
  }
  if (!start || !stop || !flush) {
    snprintf(out, len,
             NANO_REMOTE_RNOTRACER " process %ld has libnano_remote.so but not the tracer "
             "(libnano_rpd.so: rpdstart/rpdstop/rpdflush not found)",
             (long)pid);
    return;
  }
  if (!strcmp(req, "start")) {
    int n = start();
    snprintf(out, len, NANO_REMOTE_ROK " process %ld: recording on (start count %d)", (long)pid, n);
  } else if (!strcmp(req, "stop")) {
    int n = stop();
    if (n < 0) {
      snprintf(out, len,
               NANO_REMOTE_RREFUSED " process %ld: stop refused, the start count is already 0 "
               "(recording is off)",
               (long)pid);
      return;
    }
    int f = flush();
    snprintf(out, len, "%s process %ld: %s (start count %d)%s", f ? NANO_REMOTE_RFAILED : NANO_REMOTE_ROK,
             (long)pid, n > 0 ? "recording still on" : "recording off", n,
             f ? ", but the flush failed (see the process's stderr)" : ", flushed");
  } else if (!strcmp(req, "flush")) {
    int f = flush();
    snprintf(out, len, "%s process %ld: %s", f ? NANO_REMOTE_RFAILED : NANO_REMOTE_ROK, (long)pid,
             f ? "flush failed (see the process's stderr)" : "flushed");
  } else {
    int count = 0;
    char file[4096] = "";
    if (!status || status(&count, file, sizeof file) != 0) {
      snprintf(out, len,
               NANO_REMOTE_RFAILED " process %ld: the tracer does not report its state "
               "(rpd_status missing in libnano_rpd.so)",
               (long)pid);
      return;
    }
    snprintf(out, len, NANO_REMOTE_ROK " process %ld: recording %s, start count %d, file %s", (long)pid,
             count > 0 ? "on" : "off", count, file[0] ? file : "(not chosen yet)");
  }
}

/* ---- the control thread ------------------------------------------------ */

/* Writes all of buf to fd; 0 or -1. */
static int rm_write_all(int fd, const char *buf, size_t n) {
  while (n) {
    ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    buf += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Serves one connection: checks the peer, reads a request line, replies. */
static void rm_serve(int fd) {
  char reply[NANO_REMOTE_LINE_MAX];
  struct ucred cred;
  socklen_t clen = sizeof cred;
  struct timeval tv = {.tv_sec = 2};
  if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
      getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0 || clen != sizeof cred) {
    snprintf(reply, sizeof reply, NANO_REMOTE_RDENIED " cannot identify the peer: %s\n",
             strerror(errno));
    rm_write_all(fd, reply, strlen(reply));
    return;
  }
  if (!nano_remote_peer_allowed(cred.uid, geteuid())) {
    snprintf(reply, sizeof reply,
             NANO_REMOTE_RDENIED " permission denied: uid %u may not control process %ld "
             "(owner uid %u; only the same user or root)\n",
             (unsigned)cred.uid, (long)getpid(), (unsigned)geteuid());
    rm_write_all(fd, reply, strlen(reply));
    return;
  }
  char req[128];
  size_t got = 0;
  while (got < sizeof req - 1) {
    ssize_t r = recv(fd, req + got, sizeof req - 1 - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
    if (memchr(req, '\n', got)) break;
  }
  req[got] = 0;
  char *nl = strchr(req, '\n');
  if (!nl) {
    snprintf(reply, sizeof reply, NANO_REMOTE_RBADREQ " no request line received\n");
    rm_write_all(fd, reply, strlen(reply));
    return;
  }
  *nl = 0;
  rm_execute(req, reply, sizeof reply - 1);
  strcat(reply, "\n");
  rm_write_all(fd, reply, strlen(reply));
}

/* The control thread: accepts connections until the listening socket is
 * shut down. */
static void *rm_thread(void *arg) {
  int lfd = (int)(intptr_t)arg;
  while (!rm.stopping) {
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (!rm.stopping && (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)) {
        /* Out of descriptors or memory for now: try again a little later. */
        struct timespec nap = {0, 100000000};
        nanosleep(&nap, NULL);
        continue;
      }
      if (!rm.stopping) rm_warn("accept on %s failed: %s; remote control stops", rm.path, strerror(errno));
      break;
    }
    rm_serve(fd);
    close(fd);
  }
  return NULL;
}

/* ---- setting up and tearing down --------------------------------------- */

/* Creates `dir` 0700 if missing and checks that it is a private directory of
 * this effective uid. 0 or -1 (warned). */
static int rm_private_dir(const char *dir) {
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
    rm_warn("cannot create %s: %s; remote control disabled", dir, strerror(errno));
    return -1;
  }
  struct stat sb;
  if (lstat(dir, &sb) != 0) {
    rm_warn("cannot stat %s: %s; remote control disabled", dir, strerror(errno));
    return -1;
  }
  if (!S_ISDIR(sb.st_mode) || sb.st_uid != geteuid() || (sb.st_mode & 077)) {
    rm_warn("%s is not a private directory of uid %u (owner %u, mode %03o); remote control disabled",
            dir, (unsigned)geteuid(), (unsigned)sb.st_uid, (unsigned)(sb.st_mode & 0777));
    return -1;
  }
  return 0;
}

/* Removes the sockets in `dir` of processes that no longer exist. */
static void rm_clean_stale(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    char *end = NULL;
    long pid = strtol(e->d_name, &end, 10);
    if (end == e->d_name || strcmp(end, ".sock") || pid <= 0 || pid == (long)getpid()) continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    unlinkat(dirfd(d), e->d_name, 0);
  }
  closedir(d);
}

/* Opens the listening socket at rm.path and starts the control thread. */
static void rm_start(void) {
  if (!rm.enabled) return;
  char dir[sizeof rm.path];
  if (nano_remote_dir(geteuid(), dir, sizeof dir) != 0 ||
      nano_remote_socket_path(geteuid(), getpid(), rm.path, sizeof rm.path) != 0) {
    rm_warn("socket directory name too long for a Unix socket (NANO_REMOTE_DIR?); remote control disabled");
    return;
  }
  if (rm_private_dir(dir) != 0) return;
  rm_clean_stale(dir);

  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  memcpy(sa.sun_path, rm.path, strlen(rm.path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    rm_warn("socket: %s; remote control disabled", strerror(errno));
    return;
  }
  int rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
  if (rc != 0 && errno == EADDRINUSE) {
    /* A socket of this pid is left over (an earlier image before exec, or a
     * dead process whose pid was reused): replace it unless someone answers. */
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int alive = probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0;
    if (probe >= 0) close(probe);
    if (alive) {
      rm_warn("%s is in use by another listener; remote control disabled", rm.path);
      close(fd);
      return;
    }
    unlink(rm.path);
    rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
  }
  if (rc != 0) {
    rm_warn("cannot bind %s: %s; remote control disabled", rm.path, strerror(errno));
    close(fd);
    return;
  }
  if (chmod(rm.path, 0600) != 0 || listen(fd, 8) != 0) {
    rm_warn("cannot listen on %s: %s; remote control disabled", rm.path, strerror(errno));
    close(fd);
    unlink(rm.path);
    return;
  }
  /* The thread takes no signal meant for the application. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  rm.listen_fd = fd;
  rm.stopping = 0;
  rc = pthread_create(&rm.thread, NULL, rm_thread, (void *)(intptr_t)fd);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    rm_warn("cannot start the control thread: %s; remote control disabled", strerror(rc));
    rm.listen_fd = -1;
    close(fd);
    unlink(rm.path);
    return;
  }
  rm.thread_running = 1;
}

/* In a forked child: the parent's thread is not here and its socket is the
 * parent's; close our copy and listen under the child's own pid. */
static void rm_atfork_child(void) {
  if (rm.listen_fd >= 0) close(rm.listen_fd);
  rm.listen_fd = -1;
  rm.thread_running = 0;
  rm_start();
}

/* Reads NANO_REMOTE once per image, registers the fork handler, listens. */
__attribute__((constructor)) static void rm_init(void) {
  const char *env = getenv("NANO_REMOTE");
  rm.enabled = !env || strcmp(env, "0") != 0;
  if (env && *env && strcmp(env, "0") && strcmp(env, "1"))
    rm_warn("NANO_REMOTE='%.32s' is neither 0 nor 1; using 1 (listening)", env);
  if (pthread_atfork(NULL, NULL, rm_atfork_child) != 0) rm_warn("pthread_atfork failed");
  rm_start();
}

/* Stops the control thread and removes the socket (normal exit, dlclose). */
__attribute__((destructor)) static void rm_fini(void) {
  if (rm.listen_fd < 0) return;
  rm.stopping = 1;
  unlink(rm.path);
  shutdown(rm.listen_fd, SHUT_RDWR);
  if (rm.thread_running) pthread_join(rm.thread, NULL);
  rm.thread_running = 0;
  close(rm.listen_fd);
  rm.listen_fd = -1;
}
