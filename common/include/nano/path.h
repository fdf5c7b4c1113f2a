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

#endif /* NANO_PATH_H */
