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
 * Several clients are served at once: the thread polls the listening socket
 * and up to RM_MAX_CLIENTS connections, each with a deadline for its request
 * line, so idle or slow clients delay nobody (ten idle connections used to
 * hold a status back 20 s). No signals are used: at exit the destructor shuts
 * the listening socket down, which wakes the poll, joins the thread and
 * removes the socket file. A forked child closes its parent's socket and starts its own
 * (pid-named) thread and socket; after exec the library, if loaded again,
 * removes the stale socket of the same pid. At start-up the sockets of
 * processes that no longer exist are removed from the directory.
 *
 * Environment: NANO_REMOTE=0 keeps the library from listening;
 * NANO_REMOTE_DIR overrides the socket directory (nano/remote.h).
 */
#define _GNU_SOURCE
#include <nano/remote.h>
#include <nano/settings.h>
#include <nano/thread.h>

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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
  int listen_fd; /* -1 when not listening */
  pthread_t thread;
  int thread_running;
  int enabled; /* NANO_REMOTE is not 0 */
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
    snprintf(out, len, "%s process %ld: %s (start count %d)%s",
             f ? NANO_REMOTE_RFAILED : NANO_REMOTE_ROK, (long)pid,
             n > 0 ? "recording still on" : "recording off", n,
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
    snprintf(out, len, NANO_REMOTE_ROK " process %ld: recording %s, start count %d, file %s",
             (long)pid, count > 0 ? "on" : "off", count, file[0] ? file : "(not chosen yet)");
  }
}

/* ---- the control thread ------------------------------------------------ */

/* Writes all of buf to fd; 0 or -1. */
static int rm_write_all(int fd, const char *buf, size_t n) {
  while (n) {
    ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    buf += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Clients served at once; one more is told the server is busy. Each has
 * RM_REQUEST_MS to send its request line, and its reply RM_REPLY_MS to leave. */
#define RM_MAX_CLIENTS 16
#define RM_REQUEST_MS 2000
#define RM_REPLY_MS 2000
#define RM_REQUEST_MAX 128 /* bytes of a request line, newline included */

/* A connection waiting for its request line. */
struct rm_client {
  int fd; /* -1: a free slot */
  size_t got;
  int64_t deadline_ms;
  char req[RM_REQUEST_MAX];
};

static int64_t rm_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sends `reply` (a line) and closes the connection. The socket is made
 * blocking with a send timeout, so a peer that reads nothing costs at most
 * RM_REPLY_MS. */
static void rm_reply_close(int fd, const char *reply) {
  struct timeval tv = {.tv_sec = RM_REPLY_MS / 1000, .tv_usec = RM_REPLY_MS % 1000 * 1000};
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0 &&
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0)
    rm_write_all(fd, reply, strlen(reply));
  close(fd);
}

/* A new connection: refused at once when its peer may not control us or no
 * slot is free, else waits in a slot for its request. */
static void rm_admit(int fd, struct rm_client *c) {
  char reply[NANO_REMOTE_LINE_MAX];
  struct ucred cred;
  socklen_t clen = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0 || clen != sizeof cred) {
    snprintf(reply, sizeof reply, NANO_REMOTE_RDENIED " cannot identify the peer: %s\n",
             strerror(errno));
    rm_reply_close(fd, reply);
    return;
  }
  if (!nano_remote_peer_allowed(cred.uid, geteuid())) {
    snprintf(reply, sizeof reply,
             NANO_REMOTE_RDENIED " permission denied: uid %u may not control process %ld "
                                 "(owner uid %u; only the same user or root)\n",
             (unsigned)cred.uid, (long)getpid(), (unsigned)geteuid());
    rm_reply_close(fd, reply);
    return;
  }
  for (int i = 0; i < RM_MAX_CLIENTS; i++)
    if (c[i].fd < 0) {
      c[i].fd = fd;
      c[i].got = 0;
      c[i].deadline_ms = rm_now_ms() + RM_REQUEST_MS;
      return;
    }
  snprintf(reply, sizeof reply,
           NANO_REMOTE_RFAILED " process %ld: busy, %d other clients connected; try again\n",
           (long)getpid(), RM_MAX_CLIENTS);
  rm_reply_close(fd, reply);
}

/* Reads what client c sent; once its line is complete (or can no longer be),
 * executes it, replies and frees the slot. */
static void rm_read(struct rm_client *c) {
  ssize_t r = recv(c->fd, c->req + c->got, sizeof c->req - 1 - c->got, 0);
  if (r < 0 && (errno == EINTR || errno == EAGAIN))
    return;
  if (r > 0)
    c->got += (size_t)r;
  c->req[c->got] = 0;
  char *nl = strchr(c->req, '\n');
  if (!nl && r > 0 && c->got < sizeof c->req - 1)
    return; /* more to come */
  char reply[NANO_REMOTE_LINE_MAX];
  if (!nl) {
    snprintf(reply, sizeof reply, NANO_REMOTE_RBADREQ " no request line received\n");
  } else {
    *nl = 0;
    rm_execute(c->req, reply, sizeof reply - 1);
    strcat(reply, "\n");
  }
  rm_reply_close(c->fd, reply);
  c->fd = -1;
}

/* The control thread: serves up to RM_MAX_CLIENTS connections at once with
 * poll (an idle client delays no other), until the listening socket is shut
 * down. Requests run one at a time, in the order their lines arrive. */
static void *rm_thread(void *arg) {
  int lfd = (int)(intptr_t)arg;
  struct rm_client c[RM_MAX_CLIENTS];
  for (int i = 0; i < RM_MAX_CLIENTS; i++)
    c[i].fd = -1;
  while (!rm.stopping) {
    struct pollfd pfd[RM_MAX_CLIENTS + 1];
    int slot[RM_MAX_CLIENTS + 1], n = 1;
    int64_t now = rm_now_ms(), wait = -1;
    pfd[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
    for (int i = 0; i < RM_MAX_CLIENTS; i++) {
      if (c[i].fd < 0)
        continue;
      if (c[i].deadline_ms <= now) { /* silent too long */
        rm_reply_close(c[i].fd, NANO_REMOTE_RBADREQ " no request line received in time\n");
        c[i].fd = -1;
        continue;
      }
      int64_t left = c[i].deadline_ms - now;
      if (wait < 0 || left < wait)
        wait = left;
      pfd[n] = (struct pollfd){.fd = c[i].fd, .events = POLLIN};
      slot[n++] = i;
    }
    int ready = poll(pfd, (nfds_t)n, (int)wait);
    if (ready < 0) {
      if (errno == EINTR)
        continue;
      rm_warn("poll on %s failed: %s; remote control stops", rm.path, strerror(errno));
      break;
    }
    for (int k = 1; k < n; k++)
      if (pfd[k].revents)
        rm_read(&c[slot[k]]);
    if (!pfd[0].revents)
      continue;
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) {
      rm_admit(fd, c);
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN)
      continue;
    if (!rm.stopping &&
        (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)) {
      /* Out of descriptors or memory for now: try again a little later. */
      struct timespec nap = {0, 100000000};
      nanosleep(&nap, NULL);
      continue;
    }
    if (!rm.stopping)
      rm_warn("accept on %s failed: %s; remote control stops", rm.path, strerror(errno));
    break;
  }
  for (int i = 0; i < RM_MAX_CLIENTS; i++)
    if (c[i].fd >= 0)
      close(c[i].fd);
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
    rm_warn(
        "%s is not a private directory of uid %u (owner %u, mode %03o); remote control disabled",
        dir, (unsigned)geteuid(), (unsigned)sb.st_uid, (unsigned)(sb.st_mode & 0777));
    return -1;
  }
  return 0;
}

/* Removes the sockets in `dir` of processes that no longer exist. */
static void rm_clean_stale(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d))) {
    char *end = NULL;
    long pid = strtol(e->d_name, &end, 10);
    if (end == e->d_name || strcmp(end, ".sock") || pid <= 0 || pid == (long)getpid())
      continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
      continue;
    unlinkat(dirfd(d), e->d_name, 0);
  }
  closedir(d);
}

/* Opens the listening socket at rm.path and starts the control thread. */
static void rm_start(void) {
  if (!rm.enabled)
    return;
  char dir[sizeof rm.path];
  if (nano_remote_dir(geteuid(), dir, sizeof dir) != 0 ||
      nano_remote_socket_path(geteuid(), getpid(), rm.path, sizeof rm.path) != 0) {
    rm_warn("socket directory name too long for a Unix socket (NANO_REMOTE_DIR?); remote control "
            "disabled");
    return;
  }
  if (rm_private_dir(dir) != 0)
    return;
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
    if (probe >= 0)
      close(probe);
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
  rm.listen_fd = fd;
  rm.stopping = 0;
  rc = nano_thread_start(&rm.thread, rm_thread, (void *)(intptr_t)fd);
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
  if (rm.listen_fd >= 0)
    close(rm.listen_fd);
  rm.listen_fd = -1;
  rm.thread_running = 0;
  rm_start();
}

/* Reads NANO_REMOTE once per image, registers the fork handler, listens. */
__attribute__((constructor)) static void rm_init(void) {
  int on = 1; /* a malformed value: not listening (nano/settings.h) */
  nano_env_bool("NANO_REMOTE", &on);
  rm.enabled = on;
  if (pthread_atfork(NULL, NULL, rm_atfork_child) != 0)
    rm_warn("pthread_atfork failed");
  rm_start();
}

/* Stops the control thread and removes the socket (normal exit, dlclose). */
__attribute__((destructor)) static void rm_fini(void) {
  if (rm.listen_fd < 0)
    return;
  rm.stopping = 1;
  unlink(rm.path);
  shutdown(rm.listen_fd, SHUT_RDWR);
  if (rm.thread_running)
    pthread_join(rm.thread, NULL);
  rm.thread_running = 0;
  close(rm.listen_fd);
  rm.listen_fd = -1;
}
