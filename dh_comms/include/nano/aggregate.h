/*
 * nano/aggregate.h: the per-site and per-page sums of a dispatch's wave
 * accesses (aggregate.c), for the built-in analyzers and the back ends that
 * compute them where the waves run (NANO_AGGREGATE=device). What a handler
 * is given of them is struct nano_aggregates (nano/handler.h).
 *
 *   a = nano_aggregate_create(info, NANO_AGG_SITES | NANO_AGG_PAGES, 4096);
 *   nano_aggregate_add(a, record);        per wave access, one thread at a time
 *   nano_aggregate_merge(total, a);       the shards of a dispatch into one
 *   nano_aggregate_view(total, &v);       the flat arrays handlers read
 */
#ifndef NANO_AGGREGATE_H
#define NANO_AGGREGATE_H

#include <stdint.h>

#include "nano/handler.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a table sums: per site (MemoryAnalysis), per page (Heatmap). */
enum { NANO_AGG_SITES = 1u, NANO_AGG_PAGES = 2u };

struct nano_aggregate;

/* An empty table for the dispatch of *info (its site lookup, line, sector
 * and LDS geometry; isa_width where the runtime has the ISA); page_bytes > 0
 * with NANO_AGG_PAGES. NULL when out of memory. */
struct nano_aggregate *nano_aggregate_create(const struct nano_dispatch_info *info, unsigned what,
                                             uint64_t page_bytes);
/* Adds one record (one wave's access at one site). What cannot be placed
 * (out of memory) is counted as lost, never dropped silently. */
void nano_aggregate_add(struct nano_aggregate *a, const struct nano_dh_record *r);
/* Adds the sums of `from` into `into` (same dispatch, same `what`). */
void nano_aggregate_merge(struct nano_aggregate *into, const struct nano_aggregate *from);
/* Fills *v with the sums as flat arrays (v->where as given). Valid until the
 * next call on a. 0, or -1 when out of memory. */
int nano_aggregate_view(struct nano_aggregate *a, const char *where, struct nano_aggregates *v);
/* The sums a built-in analyzer reports: `given` (handed over by the
 * runtime) when it has them, else a view of a's own ("host", in *own).
 * NULL when out of memory. */
const struct nano_aggregates *nano_aggregate_report(struct nano_aggregate *a,
                                                    const struct nano_aggregates *given,
                                                    struct nano_aggregates *own);
/* ---- sums made on a GPU (the sums table of nano/dh_format.h) ---- */

/* Lays out the device's sums table for the dispatch of *info: slots for the
 * sites of module `module` with indices below `sites`, `shards` copies of
 * the counters (a power of two), `page_slots` page slots (a power of two)
 * with NANO_AGG_PAGES. Returns its bytes (*head: the host's, before the
 * first the device writes; the rest is zero before a dispatch), and when buf
 * is not NULL writes it there: header, counters zero, and a site marked to be records where the
 * device cannot sum it as a record would be summed (no site table names it,
 * a memory intrinsic, a size per record, kerneldb's isa_width says its
 * machine access is wider or merged). 0 when the dispatch's geometry keeps
 * every access a record (a line, sector or page size that is not a power
 * of two). */
size_t nano_aggregate_table(const struct nano_dispatch_info *info, unsigned what,
                            uint64_t page_bytes, uint32_t module, uint32_t sites, uint32_t shards,
                            uint32_t page_slots, void *buf, uint64_t *head);
/* Adds a table the device filled (a host copy of its `bytes` bytes) to a:
 * per site and space its counters, its pages, the page accesses it lost.
 * 0, or -1 when the table is malformed (nothing added then). */
int nano_aggregate_add_table(struct nano_aggregate *a, const void *table, size_t bytes);
/* Records added (merged ones included). */
uint64_t nano_aggregate_records(const struct nano_aggregate *a);
void nano_aggregate_clear(struct nano_aggregate *a);
void nano_aggregate_destroy(struct nano_aggregate *a);

#ifdef __cplusplus
}
#endif
#endif
