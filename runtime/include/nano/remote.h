/*
 * nano/remote.h: the remote-control protocol between rpdremote and
 * libnano_remote.so (static library nano_remote_common holds the functions).
 *
 * A process with libnano_remote.so loaded listens on a Unix stream socket
 * <dir>/<pid>.sock, where <dir> is, for the process's effective uid U:
 *   $NANO_REMOTE_DIR                    when set (the same on both sides);
 *   /run/user/U/nanoprobe               when /run/user/U is a directory owned by U;
 *   /tmp/nanoprobe-U                    otherwise.
 * The directory must be owned by U with no group/other permissions (the
 * library creates it 0700 and refuses to listen in anything else).
 *
 * A client connects, writes one request line and reads one reply line:
 *   request  "start\n" | "stop\n" | "flush\n" | "status\n"
 *   reply    "<STATUS> <text>\n", STATUS one of the NANO_REMOTE_R* words below.
 * The library answers only peers (SO_PEERCRED) with its effective uid or root.
 */
#ifndef NANO_REMOTE_H
#define NANO_REMOTE_H

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Reply status words. */
#define NANO_REMOTE_ROK "OK"             /* done; text says the new state          */
#define NANO_REMOTE_RREFUSED "REFUSED"   /* not done: e.g. a stop at count zero    */
#define NANO_REMOTE_RFAILED "FAILED"     /* tried and failed (flush error)         */
#define NANO_REMOTE_RNOTRACER "NOTRACER" /* libnano_rpd.so is not loaded          */
#define NANO_REMOTE_RDENIED "DENIED"     /* the peer's uid may not control us      */
#define NANO_REMOTE_RBADREQ "BADREQ"     /* unknown request                       */

/* Longest request or reply line, newline included. */
#define NANO_REMOTE_LINE_MAX 4352

/* Writes the socket directory for uid `uid` into buf (see above). Returns 0,
 * or -1 when it does not fit. */
int nano_remote_dir(uid_t uid, char *buf, size_t len);

/* Writes the socket path of process `pid` owned by `uid` into buf. 0 or -1. */
int nano_remote_socket_path(uid_t uid, pid_t pid, char *buf, size_t len);

/* The access rule: a peer may control a process of effective uid `self`
 * when its uid is `self` or 0 (root). Returns 1 when allowed. */
int nano_remote_peer_allowed(uid_t peer, uid_t self);

#ifdef __cplusplus
}
#endif
#endif /* NANO_REMOTE_H */
