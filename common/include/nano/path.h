/*
 * nano/path.h: file names as the plugin compares them.
 */
#ifndef NANO_PATH_H
#define NANO_PATH_H

#include <stddef.h>

/*
 * Writes path into out (n bytes) with "." components and "dir/.." pairs
 * removed and repeated slashes folded, lexically, as LLVM's
 * sys::path::remove_dots(path, true) does for the plugin's library-file
 * patterns: "/usr/bin/../lib/x.h" becomes "/usr/lib/x.h" (symbolic links are
 * not followed). ".." that climbs above a relative path's start is kept; above
 * "/" it is dropped. Returns out, or NULL when the result does not fit.
 */
char *nano_path_normalize(const char *path, char *out, size_t n);

/*
 * Writes tmpl into out (n bytes) with every "%p" replaced by pid, as
 * nanoprobe's file-name settings expand it (RPDT_FILENAME, NANO_TRACKER_OUTPUT,
 * NANO_PRINT_OUTPUT, NANO_ANALYZER_OUTPUT, nanoprobe run -o). 0, or -1 when
 * the result does not fit: out then holds as much of it as fits.
 */
int nano_path_expand_pid(const char *tmpl, long pid, char *out, size_t n);

/* Source files that are library code (system and toolkit headers), as a
 * POSIX extended regular expression over normalised paths: the plugin's
 * default of NANO_ATOMICS_LIBRARY_FILES, the tracer's when it looks for a
 * library atomic's caller, kerneldb's when it attributes an instruction to
 * the user's own line. */
#define NANO_LIBRARY_FILES_DEFAULT                                                                 \
  "^(/usr/include/|/usr/lib/|/usr/local/include/|/usr/local/cuda[^/]*/|/opt/rocm[^/]*/)"

#endif /* NANO_PATH_H */
