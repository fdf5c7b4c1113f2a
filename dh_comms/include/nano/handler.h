/*
 * nano/handler.h: the analyzer (handler) ABI of nanoprobe, version
 * NANO_HANDLER_ABI.
 *
 * For each instrumented dispatch the runtime creates one handler per analyzer
 * named in NANO_ANALYZERS (built-in names and .so paths alike), hands every
 * record of the dispatch to the chain of handlers in order, and calls
 * report() once the dispatch has ended and its last record was handled. The
 * built-in analyzers (AddressLogger, Heatmap, MemoryAnalysis) use exactly
 * this interface.
 *
 * A plugin is a shared object that exports two functions:
 *
 *   uint32_t nano_handler_abi(void);   returns NANO_HANDLER_ABI
 *   struct nano_handler *nano_handler_create(const struct nano_dispatch_info *info);
 *                                      a handler for one dispatch, or NULL
 *                                      to sit this dispatch out
 *
 * A plugin whose nano_handler_abi() differs from the runtime's is refused
 * with a message naming the file and both versions. The plugin needs nothing
 * else of nanoprobe at link time: the runtime's services come as function
 * pointers in struct nano_dispatch_info. Handlers of one dispatch are called
 * from one thread at a time (not always the same one); handlers of different
 * dispatches may run concurrently.
 *
 * The chain: a record goes to the handlers in NANO_ANALYZERS order. A
 * handler's handle() returns NANO_RECORD_CONSUMED to end the chain for that
 * record (a plugin that claims records of its own), or NANO_RECORD_PASS to
 * hand it on. A handler with NANO_HANDLER_PASS_THROUGH in flags never ends
 * the chain: an observer (every built-in analyzer is one).
 *
 * Aggregates (ABI 2): a handler that needs only per-site sums (flag
 * NANO_HANDLER_SITE_COUNTS: what MemoryAnalysis reports) or per-page counts
 * (NANO_HANDLER_PAGE_COUNTS with page_bytes: Heatmap) may be served without
 * records. When every handler of a dispatch is such a one and the back end
 * computes the sums where the waves run (NANO_AGGREGATE, docs/ENVIRONMENT.md),
 * no record is made: ops->aggregates() hands the dispatch's sums over once,
 * before report(). Otherwise records flow as always and aggregates() is not
 * called; a handler makes its sums from them (the same ones: for the
 * built-in analyzers, nano/aggregate.h computes both).
 *
 * Compatibility: fields are only ever added at the end of struct
 * nano_dispatch_info (info->size says how many the runtime filled), and any
 * other change bumps NANO_HANDLER_ABI. Plugins of ABI 1 still load: their
 * handlers take records (the runtime reads neither ops->aggregates nor
 * page_bytes of theirs).
 */
#ifndef NANO_HANDLER_H
#define NANO_HANDLER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nano/dh_comms.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NANO_HANDLER_ABI 2u
/* The oldest plugin ABI the runtime loads (ABI 1: records only). */
#define NANO_HANDLER_ABI_OLDEST 1u

/* Output format of reports (NANO_ANALYZER_FORMAT). */
enum nano_format {
  NANO_FORMAT_TEXT = 0, /* human-readable; AddressLogger: CSV             */
  NANO_FORMAT_JSON = 1  /* one JSON object per line (JSON Lines)          */
};

/* How LDS/shared memory serves the lanes of a wave (32 banks of 4 bytes in
 * every model; a wide access covers one bank per 4-byte word). */
enum nano_lds_model {
  NANO_LDS_NONE = 0,
  /* AMD wave64 (GCN, CDNA): lanes 0-31 and 32-63 are served apart for
   * accesses up to 4 bytes, 16-lane sets for 8 bytes, and eight 8-lane sets
   * for 16 bytes (the ds_read_b128 pairing omniprobe models). */
  NANO_LDS_AMD_WAVE64 = 1,
  /* NVIDIA warps and wave32: one phase of 32 lanes for accesses up to 4
   * bytes, half-warps for 8 bytes, quarter-warps for 16 bytes. */
  NANO_LDS_PHASED = 2
};

struct nano_block_time; /* below */

struct nano_dispatch_info {
  uint32_t abi;             /* the runtime's NANO_HANDLER_ABI                   */
  uint32_t size;            /* sizeof(struct nano_dispatch_info) it filled      */
  const char *kernel;       /* mangled name                                     */
  const char *kernel_name;  /* demangled (equals kernel when not mangled)       */
  uint64_t dispatch_id;     /* process-wide, from 1                             */
  uint64_t kernel_dispatch; /* the n-th dispatch of this kernel, from 1         */
  const char *backend;      /* "cpu", "cuda", "hip"                             */
  const char *arch;         /* "cpu", "sm_90", "gfx90a"                         */
  uint32_t device;
  uint32_t wave_size;
  uint32_t grid[3];                  /* blocks per grid                                  */
  uint32_t block[3];                 /* threads per block                                */
  uint32_t line_bytes;               /* cache line of global memory                      */
  uint32_t sector_bytes;             /* smallest transfer (NVIDIA 32); else line_bytes   */
  uint32_t lds_banks;                /* 32                                               */
  uint32_t lds_bank_bytes;           /* 4                                                */
  uint32_t lds_model;                /* enum nano_lds_model                              */
  uint32_t format;                   /* enum nano_format (NANO_ANALYZER_FORMAT)          */
  uint64_t shared_bytes;             /* dynamic shared memory per block                  */
  FILE *out;                         /* NANO_ANALYZER_OUTPUT                             */
  const char *options;               /* what followed the analyzer's name after ':'      */
                                     /* in NANO_ANALYZERS ("page=4096"), or ""           */
  const struct nano_dh_sites *sites; /* the site tables the runtime knows      */
  void *kerneldb;                    /* a kdb * over the code object, or NULL            */

  /* ---- services of the runtime ---- */
  /* The site of a record's site id, or NULL when no table has it. */
  const struct nano_dh_site *(*site)(const struct nano_dispatch_info *info, uint64_t id);
  /* The text of line `line` (from 1) of `file`, without its newline; NULL
   * when the file cannot be read. Valid for the dispatch. */
  const char *(*source_line)(const struct nano_dispatch_info *info, const char *file,
                             uint32_t line);
  /* Stores a JSON document as this analyzer's result for the dispatch in
   * the trace (table nano_analysis). Returns 0, or -1 when no trace is
   * recorded. */
  int (*store)(const struct nano_dispatch_info *info, const char *analyzer, const char *json);
  void *runtime; /* the runtime's own state                          */
  /* What the machine code made of the access of site `id`, where the
   * runtime has the kernel's ISA (GPU code objects, through kerneldb):
   * NANO_ISA_WIDER with *width the bytes per lane of its instructions when
   * the backend merged accesses (four 4-byte loads into one
   * global_load_dwordx4), NANO_ISA_MERGED when the site has no instruction
   * of its own (folded into such a neighbour), NANO_ISA_SAME, or
   * NANO_ISA_UNKNOWN. NULL where there is no ISA to read: for CPU kernels
   * the IR's access is the one the program makes. */
  int (*isa_width)(const struct nano_dispatch_info *info, uint64_t id, uint32_t *width);
  /* Records of the dispatch that never reached the handlers (dropped at a
   * full ring, undecodable, lost with their bytes), set before report: the
   * results are incomplete when not 0. Read it where info->size covers it
   * (nano_dispatch_lost). */
  uint64_t lost_records;
  /* (ABI 2) The start and end of every block of the dispatch, where a
   * handler asked for them (NANO_HANDLER_BLOCK_TIMES): *n entries, valid
   * during report(); *dropped (may be NULL) the blocks beyond what the
   * runtime keeps (NANO_BLOCK_TIMES_MAX). NULL with *n = 0 where the back end
   * does not time blocks (a dispatch that timed none has a non-NULL array). */
  const struct nano_block_time *(*block_times)(const struct nano_dispatch_info *info, size_t *n,
                                               uint64_t *dropped);
};

/* info's lost_records where the runtime that filled info has the field, else 0. */
static inline uint64_t nano_dispatch_lost(const struct nano_dispatch_info *info) {
  return info->size >= offsetof(struct nano_dispatch_info, lost_records) + sizeof(uint64_t)
             ? info->lost_records
             : 0;
}

/* Answers of isa_width (the values of kerneldb's kdb_site_isa). */
enum nano_isa_verdict {
  NANO_ISA_UNKNOWN = 0,
  NANO_ISA_SAME = 1,
  NANO_ISA_WIDER = 2,
  NANO_ISA_MERGED = 3
};

enum { NANO_RECORD_PASS = 0, NANO_RECORD_CONSUMED = 1 };
#define NANO_HANDLER_PASS_THROUGH 1u
/* (ABI 2) The handler can be served by per-site sums instead of records. */
#define NANO_HANDLER_SITE_COUNTS 2u
/* (ABI 2) ... by per-page counts of pages of its page_bytes. */
#define NANO_HANDLER_PAGE_COUNTS 4u
/* (ABI 2) The handler reads the blocks' start and end (info->block_times);
 * alone it needs no record either, and the back end may run the original
 * kernel, timed per block, instead of the twin. */
#define NANO_HANDLER_BLOCK_TIMES 8u

/* (ABI 2) The handler reads a record's addresses through
 * nano_dh_record_addr or nano_dh_record_addrs (nano/dh_comms.h), so it may
 * be handed compact records: a strided record with addr[0] and addr[1]
 * only. The drain decodes compact records when every handler of the
 * dispatch says so (every built-in analyzer does); a coalesced record's
 * drain then writes 16 address bytes instead of up to 512. */
#define NANO_HANDLER_COMPACT_RECORDS 16u

/* Blocks timed per dispatch at most; the rest are counted. */
#define NANO_BLOCK_TIMES_MAX (1u << 20)

/* When one block (workgroup) of a dispatch ran, on the trace's clock (ns),
 * and on which unit: the SM or CU (GPUs), the worker thread (CPU kernels). */
struct nano_block_time {
  uint32_t block[3];
  uint32_t unit;
  int64_t start, end;
};

/* The sums of one site id's records in one space (ABI 2). */
struct nano_site_counts {
  uint64_t site;                        /* the records' site id                              */
  uint32_t space;                       /* NANO_DH_AS_GLOBAL or NANO_DH_AS_SHARED: where the  */
                                        /* accesses went (generic ones classified)           */
  uint32_t size;                        /* bytes per lane of the last access                 */
  uint32_t isa_size;                    /* bytes per lane of the machine code where wider    */
                                        /* (isa_width), else 0: the line and bank arithmetic */
                                        /* used it                                           */
  uint32_t merged;                      /* 1: no instruction of its own (NANO_ISA_MERGED):   */
                                        /* lines and conflicts are counted at the neighbour  */
  uint64_t executions, accesses, bytes; /* records, lanes, lanes * size */
  uint64_t lines_needed, lines_used;    /* global: cache lines          */
  uint64_t sectors_needed, sectors_used;
  uint64_t bank_conflicts; /* shared */
};

/* Lane accesses whose first byte lies on page `page` (address / page_bytes). */
struct nano_page_counts {
  uint64_t page, accesses;
};

/* A dispatch's sums as handed to ops->aggregates (ABI 2); valid until the
 * handler's report() returns. */
struct nano_aggregates {
  uint32_t size;     /* sizeof(struct nano_aggregates) the runtime filled */
  const char *where; /* "device": summed where the waves ran; "host"     */
  const struct nano_site_counts *sites;
  size_t nsites;
  uint64_t unknown_site_records; /* records of sites no site table names */
  uint64_t sites_lost;           /* records not summed (out of memory)    */
  uint64_t page_bytes;
  const struct nano_page_counts *pages;
  size_t npages;
  uint64_t page_accesses; /* lane accesses counted on pages            */
  uint64_t pages_lost;    /* lane accesses not counted (table full)    */
};

struct nano_handler;

struct nano_handler_ops {
  /* One record of the dispatch: NANO_RECORD_PASS or NANO_RECORD_CONSUMED. */
  int (*handle)(struct nano_handler *h, const struct nano_dh_record *r);
  /* The dispatch ended and every record was handled: write the results. */
  void (*report)(struct nano_handler *h);
  /* Forgets what was gathered (the runtime may reuse a handler). */
  void (*clear)(struct nano_handler *h);
  /* Frees the handler. */
  void (*destroy)(struct nano_handler *h);
  /* (ABI 2; may be NULL) The dispatch's sums, instead of its records: see
   * the file comment. */
  void (*aggregates)(struct nano_handler *h, const struct nano_aggregates *a);
};

struct nano_handler {
  const struct nano_handler_ops *ops;
  const char *name;    /* shown in messages and stored with results        */
  uint32_t flags;      /* NANO_HANDLER_PASS_THROUGH, _SITE_COUNTS, ...      */
  uint64_t page_bytes; /* (ABI 2) with NANO_HANDLER_PAGE_COUNTS: its pages */
};

/* What a plugin exports (see the file comment). */
typedef uint32_t (*nano_handler_abi_fn)(void);
typedef struct nano_handler *(*nano_handler_create_fn)(const struct nano_dispatch_info *info);
#define NANO_HANDLER_ABI_SYMBOL "nano_handler_abi"
#define NANO_HANDLER_CREATE_SYMBOL "nano_handler_create"

#ifdef __cplusplus
}
#endif
#endif
