/*
 * nano/backtrace.h: the return addresses of the calling thread's stack, for
 * the tracer's stack frames (RPDT_STACKFRAMES) and the tracker's callers of
 * library sites (NANO_ATOMICS_CALLERS).
 */
#ifndef NANO_BACKTRACE_H
#define NANO_BACKTRACE_H

#include <stdint.h>

/* The deepest stack nano_backtrace returns. */
#define NANO_BACKTRACE_MAX 256

/*
 * Stores up to `max` (at most NANO_BACKTRACE_MAX) return addresses of the
 * caller's stack into ips, innermost first, leaving out the frames inside
 * the shared object that calls it (the tracer's or the tracker's own), and
 * returns how many it stored: 0 when libunwind.so.8 cannot be loaded (said
 * once on stderr). Unwinds through DWARF call-frame information, so code
 * built without frame pointers unwinds too; safe on any thread, takes no lock
 * after the first call and allocates nothing.
 *
 * libunwind is loaded with dlopen(RTLD_LOCAL): it also exports _Unwind_* and
 * backtrace(), and linking it into a preloaded library would put those in
 * front of libgcc's and glibc's for the whole application.
 */
int nano_backtrace(uint64_t *ips, int max);

#endif /* NANO_BACKTRACE_H */
