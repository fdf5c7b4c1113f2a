/*
 * nano/analyzers.h: the analyzers a run uses (NANO_ANALYZERS) and the
 * handler chain of one dispatch, for the runtime's dispatch layer and for
 * tests. Analyzers themselves see only nano/handler.h.
 */
#ifndef NANO_ANALYZERS_H
#define NANO_ANALYZERS_H

#include <stddef.h>

#include "nano/handler.h"

#ifdef __cplusplus
extern "C" {
#endif

struct nano_analyzers;

/*
 * Parses a comma list of analyzers: built-in names (AddressLogger, Heatmap,
 * KernelTimeline, MemoryAnalysis; any case) and paths of plugin shared objects (an entry with
 * a '/' or ending in ".so"), each optionally followed by ':' and its options
 * ("Heatmap:page=1M", "/opt/libmine.so:verbose"). Plugins are loaded
 * (dlopen RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) and must export
 * nano_handler_abi() returning NANO_HANDLER_ABI and nano_handler_create().
 * `what` names the source in messages ("NANO_ANALYZERS"). Returns 0, or -1
 * with a message naming the entry and what is wrong (unknown name, a file
 * that does not load, a missing symbol, another ABI version, an empty list).
 */
int nano_analyzers_load(const char *list, const char *what, struct nano_analyzers **out, char *err,
                        size_t errlen);
void nano_analyzers_free(struct nano_analyzers *a);
size_t nano_analyzers_count(const struct nano_analyzers *a);
/* The name of analyzer i as written (without options). */
const char *nano_analyzers_name(const struct nano_analyzers *a, size_t i);
/* The built-in names, comma-separated, for messages and help. */
const char *nano_analyzers_builtin_names(void);

struct nano_chain;

/* One handler per analyzer for the dispatch described by *info (copied per
 * analyzer with its own options). An analyzer whose factory returns NULL sits
 * the dispatch out. NULL only when out of memory. */
struct nano_chain *nano_chain_create(const struct nano_analyzers *a,
                                     const struct nano_dispatch_info *info);
/* Hands one record down the chain (a nano_dh_record_fn; arg is the chain). */
int nano_chain_handle(const struct nano_dh_record *r, void *chain);
/* report() of every handler, in order; lost_records: the dispatch's records
 * that never reached the handlers (their info's lost_records). */
void nano_chain_report(struct nano_chain *c, uint64_t lost_records);
/* Whether per-site and per-page sums can serve every handler of c (each
 * declares NANO_HANDLER_SITE_COUNTS or NANO_HANDLER_PAGE_COUNTS, ABI 2, and
 * those with pages want one page size): 1 with *what (NANO_AGG_*) and
 * *page_bytes to sum; 0 with *needs_records the name of the first handler
 * that wants records (NULL for an empty chain). */
int nano_chain_aggregable(const struct nano_chain *c, unsigned *what, uint64_t *page_bytes,
                          const char **needs_records);
/* Whether a handler of c reads the blocks' start and end
 * (NANO_HANDLER_BLOCK_TIMES). */
int nano_chain_wants_block_times(const struct nano_chain *c);
/* Whether every handler of c may be handed compact records
 * (NANO_HANDLER_COMPACT_RECORDS; 1 for an empty chain). */
int nano_chain_takes_compact(const struct nano_chain *c);
/* Hands the dispatch's sums to every handler (ops->aggregates), instead of
 * records; only after nano_chain_aggregable said 1. */
void nano_chain_aggregates(struct nano_chain *c, const struct nano_aggregates *a);
/* Number of handlers created for the dispatch. */
size_t nano_chain_size(const struct nano_chain *c);
void nano_chain_destroy(struct nano_chain *c);

/* ---- source text for reports ------------------------------------------------ */
struct nano_source_cache;
struct nano_source_cache *nano_source_cache_create(void);
void nano_source_cache_destroy(struct nano_source_cache *c);
/* Line `line` (from 1) of `file` without its newline, or NULL when the file
 * cannot be read or is shorter. Files are read once. Thread-safe. */
const char *nano_source_cache_line(struct nano_source_cache *c, const char *file, uint32_t line);

#ifdef __cplusplus
}
#endif
#endif
