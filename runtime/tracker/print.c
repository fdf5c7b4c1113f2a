/*
 * print.c: libnano_print.so, the debugging runtime of host atomics.
 *
 * Defines the same hooks as libnano_tracker.so, but instead of counting writes
 * one line per atomic event:
 *
 *     NANO ATOMIC __atomic_fetch_add relaxed 4 main app.c:12:5
 *
 * (kind, memory order, size in bytes, function, file:line:column) to
 * NANO_PRINT_OUTPUT (stderr by default, stdout, or a path, "%p" = pid). Each
 * line is one write(2), so lines of concurrent threads do not interleave
 * within a line.
 */
#define _GNU_SOURCE /* strdup, O_CLOEXEC */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "nano/outfile.h"
#include "nano/settings.h"

static int nanop_fd = STDERR_FILENO;
static pthread_once_t nanop_once = PTHREAD_ONCE_INIT;
/* This thread is opening the output: an event that comes back from it (libc
 * calling an instrumented malloc) must not wait on nanop_once. */
static __thread int nanop_starting __attribute__((tls_model("initial-exec")));

/* Opens NANO_PRINT_OUTPUT once; an unwritable path stays stderr, with an error. */
static void nanop_init(void) {
  char path[4096];
  switch (
      nanot_parse_dest("NANO_PRINT_OUTPUT", nano_env_str("NANO_PRINT_OUTPUT"), path, sizeof path)) {
  case NANOT_DEST_STDERR:
    break;
  case NANOT_DEST_STDOUT:
    nanop_fd = STDOUT_FILENO;
    break;
  case NANOT_DEST_PATH: {
    char why[sizeof path + 128];
    int fd = nano_outfile_stream(path, 1, why, sizeof why);
    if (fd < 0)
      nanot_warn("cannot write atomic events: %s; writing them to stderr", why);
    else
      nanop_fd = fd;
    break;
  }
  }
}

/* Writes the line of one event of `site`. */
static void nanop_line(struct nano_site *site) {
  char line[1024];
  const char *kind = nano_kind_name(site->kind);
  const char *order = nano_order_name(site->order);
  int n = snprintf(line, sizeof line, "NANO ATOMIC %s %s %u %s %s:%u:%u\n", kind ? kind : "?",
                   order ? order : "?", site->size,
                   site->function && site->function[0] ? site->function : "?",
                   site->file && site->file[0] ? site->file : "?", site->line, site->column);
  if (n > 0) {
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    line[len - 1] = '\n';
    /* One write per line; a failed write of a debugging line is dropped. */
    ssize_t w = write(nanop_fd, line, len);
    (void)w;
  }
}

/* Opens the output once; an event of the opening itself goes to stderr. */
static void nanop_start(void) {
  if (nanop_starting)
    return;
  nanop_starting = 1;
  pthread_once(&nanop_once, nanop_init);
  nanop_starting = 0;
}

NANO_API void __nano_atomic(struct nano_site *site) {
  int err = errno;
  nanop_start();
  nanop_line(site);
  errno = err;
}

NANO_API void __nano_atomic_n(struct nano_site *site, uint64_t n) {
  int err = errno;
  nanop_start();
  for (uint64_t i = 0; i < n; i++)
    nanop_line(site);
  errno = err;
}

/* Sites need no registration to be printed. */
NANO_API void __nano_register_module(struct nano_site_module *module) { (void)module; }
