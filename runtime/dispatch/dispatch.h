/*
 * dispatch.h: the dispatch layer of libnano_rpd.so, between the back ends
 * that launch kernels (cpu.c today; CUDA and HIP later) and dh_comms.
 *
 *   d = nano_dispatch_begin(&launch);   may this launch be instrumented? NULL:
 *                                       launch the original. Else launch the
 *                                       twin with nano_dispatch_desc(d) as
 *                                       its last argument.
 *   nano_dispatch_end(d, ...);          the device finished: final drain,
 *                                       handlers report, results to the
 *                                       output and the trace.
 *
 * The layer owns the settings of the instrumented run (NANO_INSTRUMENT,
 * NANO_KERNELS, NANO_DISPATCHES, NANO_ANALYZERS, NANO_ANALYZER_OUTPUT,
 * NANO_ANALYZER_FORMAT, NANO_BLOCKS, NANO_BUFFER_*; docs/ENVIRONMENT.md), the
 * buffer pool and the drain thread, the per-kernel dispatch counts, the site
 * tables of code objects, and the analyzers.
 */
#ifndef NANO_DISPATCH_H
#define NANO_DISPATCH_H

#include <stdint.h>

#include "nano/dh_comms.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a back end sums where the waves run (nano_launch_desc.aggregates). */
enum {
  NANO_LAUNCH_SUMS_NONE = 0,
  NANO_LAUNCH_SUMS_SHARDS = 1, /* its threads add to nano_dispatch_shard's tables (CPU)  */
  NANO_LAUNCH_SUMS_TABLE = 2   /* the twin adds to the sums table of nano/dh_format.h, */
                               /* placed by l->memory's put_sums (GPUs)                */
};

/* How a back end times blocks (nano_launch_desc.times_blocks). */
enum {
  NANO_LAUNCH_BLOCKS_NONE = 0,
  NANO_LAUNCH_BLOCKS_CALLS = 1, /* it calls nano_dispatch_block_time (CPU)              */
  NANO_LAUNCH_BLOCKS_TABLE = 2  /* the twin stamps the block-times table of             */
                                /* nano/dh_format.h, placed by l->memory's put_blocks   */
};

/* What a back end knows about one launch. */
struct nano_launch_desc {
  const char *kernel;  /* mangled name                                     */
  const char *backend; /* "cpu", "cuda", "hip"                             */
  const char *arch;    /* "cpu", "sm_90", "gfx90a"                         */
  uint32_t device, wave_size;
  uint32_t grid[3], block[3];
  uint64_t shared_bytes;
  uint32_t line_bytes, sector_bytes, lds_model;
  const void *twin;                    /* the twin's address; NULL: the kernel has none    */
  const char *sites_path;              /* the file of the twin's code object (a kernel     */
                                       /* cache's), else NULL: the file holding twin       */
  int aggregates;                      /* NANO_LAUNCH_SUMS_*: how the back end sums where  */
                                       /* the waves run                                    */
  int times_blocks;                    /* NANO_LAUNCH_BLOCKS_*: how it times blocks         */
  const struct nano_dh_memory *memory; /* placement; NULL: host memory         */
};

struct nano_dispatch;

/* Whether any launch may be instrumented (NANO_INSTRUMENT, and nothing has
 * turned it off since): back ends skip their preparation when not. */
int nano_dispatch_instrumenting(void);
/* See the file comment. Thread-safe. */
struct nano_dispatch *nano_dispatch_begin(const struct nano_launch_desc *l);
void *nano_dispatch_desc(struct nano_dispatch *d);
struct nano_dh_buffer *nano_dispatch_buffer(struct nano_dispatch *d);
/* Whether d's analyzers are served by sums made where its waves run
 * (NANO_AGGREGATE; only when the launch said l->aggregates): then the back
 * end adds each wave access to a shard of its own instead of writing a
 * record, and nothing is drained. */
int nano_dispatch_on_device(const struct nano_dispatch *d);
/* With NANO_LAUNCH_SUMS_TABLE, accesses the twin could not sum are still
 * records: they are drained and summed on the host into the same sums. */
/* A new, empty shard of d's sums for one thread of the back end, merged at
 * nano_dispatch_end; NULL when out of memory (then the thread counts what it
 * could not sum with nano_dispatch_shard_lost). Thread-safe. */
struct nano_aggregate *nano_dispatch_shard(struct nano_dispatch *d);
void nano_dispatch_shard_lost(struct nano_dispatch *d, uint64_t records);
/* Whether a handler of d reads its blocks' times: then the back end calls
 * nano_dispatch_block_time once per selected block (NANO_BLOCKS), with the
 * unit that ran it and its start and end in rpd_now() ns. Thread-safe. */
int nano_dispatch_times_blocks(const struct nano_dispatch *d);
void nano_dispatch_block_time(struct nano_dispatch *d, const uint32_t block[3], uint32_t unit,
                              int64_t start, int64_t end);
/* Whether d's handlers need its accesses at all: not when every one reads
 * only block times (KernelTimeline alone), and then the back end may run the
 * original kernel, timed per block, instead of the twin. */
int nano_dispatch_needs_accesses(const struct nano_dispatch *d);
/* Whether block (x, y, z) is recorded (NANO_BLOCKS). */
int nano_dispatch_block_selected(const struct nano_dispatch *d, const uint32_t block[3]);
/* Ends d (start and end in rpd_now() ns; api: the rpd_record_api handle of
 * the launch, 0 when none). */
void nano_dispatch_end(struct nano_dispatch *d, int64_t start, int64_t end, uint64_t api);
/* A buffer kept out of its pool. */
struct nano_dispatch_hold {
  struct nano_dh_pool *pool;
  struct nano_dh_buffer *buf;
};
/* nano_dispatch_end for a dispatch whose end the device did not confirm (it
 * may still write its buffer): its buffer stays out of the pool, in *hold,
 * until nano_dispatch_hold_release once the device is known to be done. */
void nano_dispatch_end_held(struct nano_dispatch *d, int64_t start, int64_t end, uint64_t api,
                            struct nano_dispatch_hold *hold);
void nano_dispatch_hold_release(struct nano_dispatch_hold *hold);

/* Makes the pool of placement `memory` and its first buffer now, for a back
 * end whose later nano_dispatch_begin runs where nothing may be allocated (a
 * graph's host node), its ring NANO_GRAPH_BUFFER_SIZE bytes. Returns 0, or
 * -1 with a message in err. */
int nano_dispatch_reserve(const struct nano_dh_memory *memory, char *err, size_t errlen);

/* The tables a back end that places them (NANO_LAUNCH_SUMS_TABLE,
 * NANO_LAUNCH_BLOCKS_TABLE) gives a dispatch of l, as the instrumented
 * dispatches of l's kernel so far took them: for a back end that must place
 * them ahead of a nano_dispatch_begin that may make no API call (a graph's
 * nodes, made at capture). */
struct nano_dispatch_tables {
  const void *sums; /* the sums table's image; NULL: its dispatches stream */
  uint64_t sums_head, sums_bytes;
  uint64_t block_bytes; /* its block-times table's bytes; 0: none read */
};
/* 0, or -1 when l's kernel has had no instrumented dispatch yet. Thread-safe. */
int nano_dispatch_tables(const struct nano_launch_desc *l, struct nano_dispatch_tables *t);

/* Gives d up before its twin ran (the twin could not be launched): no
 * report, no rows; the buffer goes back to the pool. */
void nano_dispatch_cancel(struct nano_dispatch *d);

/* Settings the CPU back end reads (parsed with the layer's). */
uint32_t nano_dispatch_cpu_wave(void);    /* NANO_CPU_WAVE: 32 or 64 */
unsigned nano_dispatch_cpu_threads(void); /* NANO_CPU_THREADS        */
uint64_t nano_dispatch_cpu_stack(void);   /* NANO_CPU_STACK bytes    */

#ifdef __cplusplus
}
#endif

#endif
