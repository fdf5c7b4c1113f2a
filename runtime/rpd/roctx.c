/*
 * roctx.c: the roctx entry points (ROCm's roctx API), so an application built
 * against libroctx64 records into the RPD file when libnano_rpd.so is
 * preloaded (its definitions come first in the symbol search order) or linked.
 *
 * roctxRangePushA/Pop are the per-thread nested ranges of rpd_rangePush;
 * roctxRangeStartA/Stop are process-wide ranges that may end on another
 * thread; roctxMarkA is a mark. All are domain "UserMarker", apiName
 * "UserMarker", the message in args.
 */
#include <stdint.h>

#include "rpd.h"
#include "rpd_internal.h"

typedef uint64_t roctx_range_id_t;

/* Pushes a nested range; returns its 0-based level. */
RPDI_EXPORT int roctxRangePushA(const char *message) { return rpdi_push(NULL, message, NULL); }

/* Pops the innermost range; returns its 0-based level, or -1 when none is open. */
RPDI_EXPORT int roctxRangePop(void) { return rpdi_pop(); }

/* A zero-duration mark. */
RPDI_EXPORT void roctxMarkA(const char *message) { rpd_mark(NULL, message, NULL); }

/* Starts a process-wide range; returns its id. */
RPDI_EXPORT roctx_range_id_t roctxRangeStartA(const char *message) {
  return rpdi_range_start(NULL, message);
}

/* Ends a range of roctxRangeStartA. */
RPDI_EXPORT void roctxRangeStop(roctx_range_id_t id) { rpdi_range_stop(id); }
