/*
 * nano/atomics.h: the host-atomics contract of nanoprobe.
 *
 * Three parties share this header:
 *   - the LLVM pass (llvm-pass/) emits, per module, a table of sites in exactly
 *     the layout below and, before every atomic operation, a call to
 *     __nano_atomic(site), or the count itself ("Inline counting" below);
 *   - the prelude (prelude/prelude.h) does the same for gcc through macros;
 *   - the runtime (runtime/tracker/) defines the hooks and counts.
 *
 * Hooks are weak: instrumented code references __nano_atomic and
 * __nano_register_module as weak undefined symbols and calls them only when
 * their address is non-null, so a binary runs unchanged without the runtime and
 * LD_PRELOAD of the runtime turns counting on.
 *
 * Changing a layout here is an ABI break: bump NANO_SITE_ABI.
 */
#ifndef NANO_ATOMICS_H
#define NANO_ATOMICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 2: struct nano_site_module gained `origins`. The runtime reads modules of
 * ABI 1 (no origins) and 2. */
#define NANO_SITE_ABI 2u

/*
 * Kinds of atomic operation. The printed names follow GCC's __atomic builtins;
 * IR cannot tell __atomic_fetch_add from __atomic_add_fetch, so both count as
 * the fetch_* kind (the prelude normalises the same way, so gcc and clang
 * builds of one program give the same counts). Values are stable: they are
 * stored in site tables compiled into binaries.
 */
enum nano_kind {
#define NANO_KIND(id, name, value) NANO_KIND_##id = value,
#include "atomic_kinds.def"
  NANO_KIND_COUNT = 28
};

/* Memory orders: the values of __ATOMIC_RELAXED .. __ATOMIC_SEQ_CST. */
enum nano_order {
  NANO_ORDER_RELAXED = 0,
  NANO_ORDER_CONSUME = 1,
  NANO_ORDER_ACQUIRE = 2,
  NANO_ORDER_RELEASE = 3,
  NANO_ORDER_ACQ_REL = 4,
  NANO_ORDER_SEQ_CST = 5,
  NANO_ORDER_UNKNOWN = 7 /* order not a compile-time constant (library call) */
};

/* Bits of nano_site.flags. */
#define NANO_SITE_WEAK 0x01u     /* compare-exchange is weak                    */
#define NANO_SITE_VOLATILE 0x02u /* the operation is volatile                   */
#define NANO_SITE_LIBCALL 0x04u  /* a call to a generic __atomic_* library function */
#define NANO_SITE_PRELUDE 0x08u  /* emitted by prelude.h, not by the pass       */
/* Every frame of the operation's inlining chain is library code (an
 * out-of-line libstdc++ function at -O0): the site cannot name the user's
 * line; NANO_ATOMICS_CALLERS=1 counts it per caller instead. */
#define NANO_SITE_LIBRARY 0x80u

struct nano_site_module;

/*
 * One instrumented operation. The pass emits one per instruction into a
 * writable, module-private array; the runtime only ever writes `id`.
 * 48 bytes on LP64.
 */
struct nano_site {
  uint32_t id;   /* process-wide id; 0 until the runtime registers it   */
  uint16_t kind; /* enum nano_kind                                       */
  uint8_t order; /* enum nano_order (success order for compare-exchange) */
  uint8_t flags; /* NANO_SITE_* bits; bits 4..6: compare-exchange failure order; bit 7:
                    NANO_SITE_LIBRARY */
  uint32_t
      size; /* bytes accessed; 0 for fences, and for a library call whose size is not constant */
  uint32_t line;                   /* 0 when unknown (no debug info)                        */
  uint32_t column;                 /* 0 when unknown                                         */
  uint32_t reserved;               /* 0                                                      */
  const char *function;            /* enclosing function (mangled for C++), never NULL     */
  const char *file;                /* source file, "" when unknown, never NULL              */
  struct nano_site_module *module; /* the table this site belongs to          */
};

#define NANO_SITE_FAILURE_ORDER(flags) (((flags) >> 4) & 7u)

/*
 * Where an operation is written when its site is reported elsewhere: the pass
 * reports an atomic of library code inlined into the user's code (std::atomic,
 * shared_ptr's count, stdatomic.h) at the first caller outside library files,
 * and keeps the library location here. `file` is NULL for a site reported
 * where it is written.
 */
struct nano_site_origin {
  const char *function; /* the library function (mangled for C++)             */
  const char *file;     /* its source file, or NULL: no origin                 */
  uint32_t line;
  uint32_t column;
};

/*
 * One module's site table. The pass emits one per instrumented module and
 * registers it from a constructor of priority 101 by calling
 * __nano_register_module (when that symbol is present). `next` and `base`
 * belong to the runtime and are zero in the image.
 */
struct nano_site_module {
  uint32_t abi;                  /* NANO_SITE_ABI                              */
  uint32_t count;                /* number of sites                            */
  struct nano_site *sites;       /* count entries                              */
  const char *name;              /* the module's source file name              */
  struct nano_site_module *next; /* runtime-owned                              */
  uint64_t reserved;             /* runtime-owned, 0 in the image              */
  /* ABI 2: `count` entries parallel to sites, or NULL when no site of the
   * module was inlined from library code. */
  const struct nano_site_origin *origins;
};

/*
 * Hooks: defined by the runtime, weak undefined in instrumented code.
 * __nano_atomic is called immediately before the operation of `site` executes;
 * it must not change memory the program can see and must tolerate a site whose
 * id is 0 (a module not yet registered: static constructors run early).
 */
void __nano_atomic(struct nano_site *site);
void __nano_register_module(struct nano_site_module *module);

/*
 * Marks a function whose atomic operations the pass leaves uninstrumented
 * (see llvm-pass/README.md for the other ways to opt out). Nothing under
 * compilers without the annotate attribute.
 */
#if defined(__clang__)
#define NANO_NO_INSTRUMENT __attribute__((annotate("nano_no_instrument")))
#else
#define NANO_NO_INSTRUMENT
#endif
/* Counts n executions of `site` at once, as n calls of __nano_atomic would
 * (libnano_print.so prints n lines). For instrumentation that promotes a
 * loop's counting out of the loop: a call per atomic costs about 1.4x a
 * relaxed fetch_add on x86 however little the hook does (see
 * bench/atomics/README.md). Weak like the other hooks. */
void __nano_atomic_n(struct nano_site *site, uint64_t n);

/*
 * Inline counting. Where the pass counts events in the program itself (an
 * executable's optimised code: llvm-pass/README.md), each instrumented
 * executable has one thread-local `struct nano_atomic_ctr` of its own,
 * zero in every new thread, and counts an event of a registered site as
 *
 *     if (&__nano_atomic != 0) {
 *       uint32_t i = site->id - 1;             (a relaxed load)
 *       if (i < ctr.cap) ctr.counts[i]++;      (relaxed load and store)
 *       else if (&__nano_atomic_bind != 0) __nano_atomic_bind(site, &ctr);
 *       else __nano_atomic(site);
 *     }
 *
 * __nano_atomic_bind counts the event as __nano_atomic does and points ctr
 * at the calling thread's counters (`counts`, `cap` entries, indexed by id
 * - 1); from then on the runtime keeps ctr up to date while the thread
 * lives (a grown array, cap 0 once the thread's counts are folded at its
 * exit). A runtime without __nano_atomic_bind (libnano_print.so, which
 * prints every event) leaves cap 0: every event then reaches __nano_atomic.
 */
struct nano_atomic_ctr {
  uint64_t *counts;
  uint32_t cap;
};
void __nano_atomic_bind(struct nano_site *site, struct nano_atomic_ctr *ctr);

/* ---- tracker API: libnano_tracker.so (C, and Python via ctypes) ---------- */

enum nano_format { NANO_FORMAT_TEXT = 0, NANO_FORMAT_JSON = 1 };

/* The GCC-builtin style name of a kind ("__atomic_fetch_add"), or NULL. */
const char *nano_kind_name(unsigned kind);
/* The kind of a name as nano_kind_name returns it, or -1. */
int nano_kind_from_name(const char *name);
/* The name of an order ("relaxed", "seq_cst", ...), or NULL. */
const char *nano_order_name(unsigned order);

/* Zeroes every count of every thread, live or exited. */
void nano_tracker_reset(void);
/* Total count of one kind over all sites and threads; 0 for an unknown name. */
uint64_t nano_tracker_count(const char *kind_name);
/* Writes the counts (text: the "NANO TRACKER {" block; json: per kind and per
 * site) to `out`. Returns 0, or -1 with errno set. */
int nano_tracker_dump(FILE *out, enum nano_format format);
/* The same to a path ("stderr" and "stdout" name the streams). Returns 0, or
 * -1 with errno set and the dump written to stderr instead. */
int nano_tracker_dump_path(const char *path, enum nano_format format);
/* Calls visit(site, count, arg) for every registered site with its total
 * count; stops early and returns the visitor's value when it is non-zero. */
typedef int (*nano_site_visitor)(const struct nano_site *site, uint64_t count, void *arg);
int nano_tracker_foreach_site(nano_site_visitor visit, void *arg);
/* Copies the origin of the registered site `id` (site->id of a visited site)
 * into *out and returns 1; returns 0 when the site is reported where it is
 * written (or no such site). The strings live as long as the process. */
int nano_tracker_site_origin(uint32_t id, struct nano_site_origin *out);
/* Calls visit(id, ips, depth, count, arg) for every distinct call stack of
 * a library site (NANO_SITE_LIBRARY) counted under NANO_ATOMICS_CALLERS=1:
 * the stack's return addresses, innermost first (ips[0] is in the site's own
 * function), and its count. depth 0: events whose stack was not kept (more
 * distinct stacks than the runtime keeps). A site's stacks sum to its count
 * since the last reset. Stops early and returns the visitor's value when it
 * is non-zero. */
typedef int (*nano_caller_visitor)(uint32_t id, const uint64_t *ips, unsigned depth, uint64_t count,
                                   void *arg);
int nano_tracker_foreach_caller(nano_caller_visitor visit, void *arg);
/* PyTorch's atomics tracker's names, for its ctypes scripts:
 * nano_tracking_reset() is nano_tracker_reset(); nano_tracking_dump() writes
 * the counts where the exit dump goes (NANO_TRACKER_OUTPUT, default stderr,
 * in NANO_TRACKER_FORMAT) and returns 0, or -1 when that failed. */
void nano_tracking_reset(void);
int nano_tracking_dump(void);
/* Turns the dump at exit (NANO_TRACKER_OUTPUT, on by default) on or off; a
 * library that stores the counts elsewhere (the tracer) turns it off. */
void nano_tracker_set_exit_dump(int enabled);

#ifdef __cplusplus
}
#endif
#endif /* NANO_ATOMICS_H */
