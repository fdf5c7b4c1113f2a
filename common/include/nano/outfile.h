/*
 * nano/outfile.h: output files that never clobber what is not a file of ours.
 *
 * Every tool and runtime output that a user names goes through here, so that
 * no path, however planted, makes nanoprobe replace a device, a FIFO or a
 * symbolic link, or write through a link a stranger left in a shared folder:
 *
 *   what is at PATH                       nano_outfile_open        nano_outfile_stream
 *   ------------------------------------  -----------------------  ------------------------
 *   "-"                                   standard output          standard output
 *   nothing, or a regular file            a new temporary beside   created or truncated in
 *                                         PATH (O_CREAT|O_EXCL),   place, never through a
 *                                         renamed over PATH at     link (O_NOFOLLOW)
 *                                         commit
 *   a character device or a FIFO, also    written in place (never  written in place
 *   behind a symbolic link (/dev/stdout)  created, truncated or
 *                                         replaced)
 *   a symbolic link to anything else,     refused, with the reason refused, with the reason
 *   a folder, a block device, a socket
 *
 * The temporary is PATH.tmp.<pid>.<n>, made with O_CREAT|O_EXCL (which never
 * follows a link), so a PATH.tmp planted by someone else is left alone. A new
 * file gets the usual 0666 less the umask; a replaced file keeps its mode.
 */
#ifndef NANO_OUTFILE_H
#define NANO_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

/* What is at an output path, by nano_outfile_kind. */
enum nano_outfile_kind {
  NANO_OUTFILE_REFUSED = -1, /* nothing may be written there; the reason is in err */
  NANO_OUTFILE_ABSENT = 0,   /* nothing (a dangling link is refused, not absent) */
  NANO_OUTFILE_REGULAR = 1,  /* a regular file, not a link */
  NANO_OUTFILE_IN_PLACE = 2, /* a character device or FIFO, directly or behind a link */
};

/* An output being written. */
struct nano_outfile {
  FILE *f;          /* where to write */
  const char *path; /* as the user named it ("-": standard output) */
  char *tmp;        /* the temporary renamed over path at commit; NULL when in place */
};

/* Classifies path (see the table above); on NANO_OUTFILE_REFUSED writes a
 * sentence naming path and what is wrong into err (n bytes). */
enum nano_outfile_kind nano_outfile_kind(const char *path, char *err, size_t n);

/* Opens path for a whole-file output (the table's middle column). 0, or -1
 * with err (n bytes) naming path and the reason; nothing is then created. */
int nano_outfile_open(struct nano_outfile *o, const char *path, char *err, size_t n);

/* Finishes o: flushes and closes it and, for a temporary, renames it over the
 * path. 0, or -1 with err (n bytes) naming the file and the reason; the
 * temporary is then removed and the path left as it was. */
int nano_outfile_commit(struct nano_outfile *o, char *err, size_t n);

/* Gives o up: closes it and removes its temporary; the path is left as it was. */
void nano_outfile_abort(struct nano_outfile *o);

/* Creates a new, empty temporary beside path as nano_outfile_open does
 * (PATH.tmp.<pid>.<n>, O_CREAT|O_EXCL) and returns its descriptor, its name
 * in *tmp (malloc'd); -1 with err (n bytes). For outputs another library
 * writes by name (an SQLite file), renamed into place when complete. */
int nano_outfile_temp(const char *path, char **tmp, char *err, size_t n);

/* Opens path for an output written as it goes (the table's last column) and
 * returns its descriptor (O_CLOEXEC; append-only when append is set), or -1
 * with err (n bytes) naming path and the reason. "-" gives STDOUT_FILENO. */
int nano_outfile_stream(const char *path, int append, char *err, size_t n);

/* Flushes standard output at a tool's end; -1 after saying on stderr
 * ("PROG: cannot write standard output: ...") when it or an earlier write
 * to it failed (a full disk, a closed pipe with SIGPIPE ignored), so that
 * the tool's exit status says so. */
int nano_stdout_finish(const char *prog);

#endif /* NANO_OUTFILE_H */
