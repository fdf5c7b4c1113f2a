/*
 * nano/dh_comms.h: host side of dh_comms (libnano_dh).
 *
 * - Records: the one decoder every consumer uses (nano_dh_decode), and the
 *   host encoder that CPU-kernel waves use (nano_dh_buffer_write); both
 *   follow nano/dh_format.h.
 * - Memory placement (struct nano_dh_memory): where a buffer's descriptor,
 *   ring and tail live. nano_dh_host_memory keeps all three in host memory
 *   (CPU kernels); GPU back ends supply device-visible placements with the
 *   same interface.
 * - Buffers: a descriptor plus a power-of-two ring, the one argument a twin
 *   takes after the original kernel's; drained in ring order.
 * - A pool of buffers reused from dispatch to dispatch, and one drain thread
 *   per pool that streams every active buffer to its consumer, with adaptive
 *   back-off (and no CPU at all while no buffer is active).
 * - Site tables: parsed from the blobs the pass emits, loaded from an ELF
 *   file, looked up by the site id a record carries.
 *
 * Layouts: nano/dh_format.h and dh_comms/README.md.
 */
#ifndef NANO_DH_COMMS_H
#define NANO_DH_COMMS_H

#include <stddef.h>
#include <stdint.h>

#include "nano/dh_format.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Records ------------------------------------------------------------- */

/* One decoded record: the header fields plus the address of every active
 * lane, in ascending lane order (lane[i] is the lane of addr[i]). */
struct nano_dh_record {
  uint16_t bytes;    /* record size in the ring                              */
  uint8_t version;   /* NANO_DH_VERSION                                      */
  uint8_t encoding;  /* NANO_DH_ENC_*: how the payload held the addresses;   */
                     /* STRIDE promises addr[i] = addr[0] + i * (addr[1] -   */
                     /* addr[0]) (analyzers rely on it): a record made by    */
                     /* hand sets it with nano_dh_encoding                   */
  uint8_t space;     /* NANO_DH_SPACE_*: where generic addresses pointed     */
  uint8_t lanes;     /* number of addresses                                  */
  uint8_t wave_size; /* 64, 32 or 1                                          */
  uint16_t wave;     /* wave id in the block                                 */
  uint64_t site;     /* module id << 32 | site index                         */
  uint64_t exec;     /* active lanes                                         */
  uint32_t block[3]; /* block (workgroup) id                                 */
  uint32_t size;     /* access size in bytes                                 */
  uint32_t hw_id;    /* hardware id register (0 where none)                  */
  uint64_t time;     /* device clock                                         */
  uint8_t lane[64];
  uint64_t addr[64];
};

/*
 * Decodes the record at the start of [buf, buf + len).
 * Returns the record's size in bytes (> 0) and fills *out; 0 when the record
 * is not complete yet (its first word is zero) or len is shorter than the
 * record; -1 when the bytes are not a valid record (wrong version, unknown
 * encoding, size not matching the lane count, lane count not matching the
 * exec mask): then errmsg (if not NULL) gets a message naming the field.
 */
long nano_dh_decode(const void *buf, size_t len, struct nano_dh_record *out, char *errmsg,
                    size_t errlen);

/*
 * Compact records. A record in NANO_DH_ENC_STRIDE (a 64-byte record for a
 * whole wave: coalesced, strided, broadcast) stands for up to 64 addresses;
 * writing them out is most of its drain. nano_dh_decode_compact decodes as
 * nano_dh_decode but fills only addr[0] and, with two lanes or more,
 * addr[1] of such a record (every other field, and every other record,
 * whole). A consumer that reads addresses through nano_dh_record_addr (or a
 * strided record's first address and stride) reads both forms alike; a
 * buffer hands its drains' consumers compact records only when told to
 * (nano_dh_buffer_set_compact), an analyzer only when it says it reads them
 * (NANO_HANDLER_COMPACT_RECORDS, nano/handler.h).
 */
long nano_dh_decode_compact(const void *buf, size_t len, struct nano_dh_record *out, char *errmsg,
                            size_t errlen);

/* The address of rank i (i < r->lanes) of a whole or compact record. */
static inline uint64_t nano_dh_record_addr(const struct nano_dh_record *r, unsigned i) {
  return r->encoding == NANO_DH_ENC_STRIDE && i > 1 ? r->addr[0] + i * (r->addr[1] - r->addr[0])
                                                    : r->addr[i];
}

/* Every address of r in rank order: r->addr of a record that has them all,
 * else buf, filled. */
const uint64_t *nano_dh_record_addrs(const struct nano_dh_record *r, uint64_t buf[64]);

/* Linear thread id within its block of address i of a record:
 * wave * wave_size + lane[i]. */
uint32_t nano_dh_record_thread(const struct nano_dh_record *r, unsigned i);

/* The smallest encoding (NANO_DH_ENC_*) that holds the addresses of a record
 * (r->lanes of them in r->addr, rank order); *stride gets the stride when it
 * is NANO_DH_ENC_STRIDE. The device runtime applies the same rule. */
unsigned nano_dh_encoding(const struct nano_dh_record *r, int64_t *stride);

/* ---- Memory placement ------------------------------------------------------ */

/* Where one buffer's parts live, as the host and the device see them. */
struct nano_dh_placement {
  void *desc_device;    /* descriptor, device address: the twin's argument   */
  void *desc_host;      /* the descriptor where the host can read and write  */
                        /* it directly, else NULL (the ops copy)             */
  unsigned char *ring;  /* ring, host view                                   */
  uint64_t ring_device; /* ring, device address                              */
  uint64_t ring_bytes;  /* its size                                          */
  uint64_t *tail;       /* tail, host view                                   */
  uint64_t tail_device; /* tail, device address                              */
  void *handle;         /* the implementation's own                          */
};

/* A placement implementation. Descriptor and counters are RMW targets of the
 * device: place them in memory the device updates atomically without crossing
 * the bus (device memory on a GPU). The ring and the tail must be readable
 * and writable by the host and visible to the device. */
struct nano_dh_memory {
  const char *name;
  void *ctx;
  /* Allocates a ring of `capacity` bytes (zeroed), a descriptor and a tail.
   * Returns 0, or -1 with a message in err. */
  int (*alloc)(void *ctx, uint64_t capacity, struct nano_dh_placement *out, char *err,
               size_t errlen);
  void (*free)(void *ctx, struct nano_dh_placement *p);
  /* Writes the whole descriptor (NANO_DH_DESC_SIZE bytes). Returns 0 or -1. */
  int (*put_desc)(void *ctx, struct nano_dh_placement *p, const void *desc);
  /* Reads the device-updated counters head and dropped. Returns 0 or -1. */
  int (*get_counters)(void *ctx, const struct nano_dh_placement *p, uint64_t *head,
                      uint64_t *dropped);
  /* (May be NULL: no sums where the waves run.) Places a sums table
   * (nano/dh_format.h) of `bytes` for the buffer's next dispatch where the
   * device adds to it atomically: its first `head` bytes from image (the
   * host's part; the same image, same bytes, for every dispatch of a
   * kernel), the rest zero, in place before the dispatch as the
   * descriptor's next write is; *device gets its device address. Returns 0
   * or -1. */
  int (*put_sums)(void *ctx, struct nano_dh_placement *p, const void *image, uint64_t head,
                  uint64_t bytes, uint64_t *device);
  /* Copies the table back once the dispatch has ended (then the device's
   * part may be zeroed for the next: a put_sums of the same image need not
   * copy or clear anything). Returns 0 or -1. */
  int (*get_sums)(void *ctx, const struct nano_dh_placement *p, void *out, uint64_t bytes);
  /* (May be NULL: no block times from the device.) Places a zeroed
   * block-times table (nano/dh_format.h) of `bytes` for the buffer's next
   * dispatch, in place as put_sums's; *device its address. 0 or -1. */
  int (*put_blocks)(void *ctx, struct nano_dh_placement *p, uint64_t bytes, uint64_t *device);
  /* Copies it back once the dispatch has ended. 0 or -1. */
  int (*get_blocks)(void *ctx, const struct nano_dh_placement *p, void *out, uint64_t bytes);
};

/* Everything in host memory: CPU kernels. */
extern const struct nano_dh_memory nano_dh_host_memory;

/* ---- Buffers --------------------------------------------------------------- */
struct nano_dh_buffer;

/*
 * A buffer of `capacity` bytes (a power of two, >= NANO_DH_MIN_CAPACITY) in
 * placement `mem` (NULL: host memory). flags: NANO_DH_FLAG_*; max_spins:
 * polls of a full ring before a record is dropped (ignored with
 * NANO_DH_FLAG_DROP). Returns NULL with errno EINVAL (bad capacity) or
 * ENOMEM, or with the placement's message in err.
 */
struct nano_dh_buffer *nano_dh_buffer_create(const struct nano_dh_memory *mem, uint64_t capacity,
                                             uint32_t flags, uint32_t max_spins, char *err,
                                             size_t errlen);
/* Frees the buffer (NULL is a no-op). */
void nano_dh_buffer_destroy(struct nano_dh_buffer *b);
/* The descriptor's device address: the trailing argument of a twin. */
void *nano_dh_buffer_desc(struct nano_dh_buffer *b);
uint64_t nano_dh_buffer_capacity(const struct nano_dh_buffer *b);
/* Records dropped so far (monotonic over the buffer's life), read from the
 * descriptor (on a GPU: a copy from the device and a wait). */
uint64_t nano_dh_buffer_dropped(const struct nano_dh_buffer *b);
/* Records dropped as of the last nano_dh_buffer_finish (0 before the first),
 * without reading the device: between a finish and the buffer's next use
 * nothing changes the count, so a dispatch's drops are the difference of
 * this across it. */
uint64_t nano_dh_buffer_dropped_at_finish(const struct nano_dh_buffer *b);
/* Sets the descriptor's block filter: only blocks with lo[d] <= id <= hi[d]
 * in every dimension d record (default: all). Returns 0 or -1. */
int nano_dh_buffer_set_blocks(struct nano_dh_buffer *b, const uint32_t lo[3], const uint32_t hi[3]);
/* Gives the buffer's next dispatch a sums table (see put_sums; image NULL:
 * none, every access a record); the descriptor points at it from its next
 * write (nano_dh_buffer_set_blocks). Returns 0, or -1 when the placement has
 * no sums or placing failed (then the descriptor has none). */
int nano_dh_buffer_set_sums(struct nano_dh_buffer *b, const void *image, uint64_t head,
                            uint64_t bytes);
/* Reads the table back after the dispatch ended (get_sums). 0 or -1. */
int nano_dh_buffer_get_sums(struct nano_dh_buffer *b, void *out, uint64_t bytes);
/* Gives the buffer's next dispatch a zeroed block-times table of nblocks
 * entries (put_blocks; 0: none), pointed to from the descriptor's next
 * write. 0, or -1 when the placement has none or placing failed. */
int nano_dh_buffer_set_block_times(struct nano_dh_buffer *b, uint32_t nblocks);
/* Reads it back after the dispatch ended: NANO_DH_BLOCK_WORDS u64 per
 * block into out. 0 or -1. */
int nano_dh_buffer_get_block_times(struct nano_dh_buffer *b, uint64_t *out);
/* Whether the twin records accesses (default) or only times its blocks
 * (NANO_DH_FLAG_NO_ACCESS), from the descriptor's next write. */
void nano_dh_buffer_set_accesses(struct nano_dh_buffer *b, int on);
/* Whether the buffer's drains hand their consumers compact records
 * (nano_dh_decode_compact) or whole ones (the default). */
void nano_dh_buffer_set_compact(struct nano_dh_buffer *b, int on);
/* Sets the descriptor's CPU hook (NANO_DH_FLAG_HOOK with a non-NULL hook;
 * NULL clears it). Host placement only. Returns 0 or -1. */
int nano_dh_buffer_set_hook(struct nano_dh_buffer *b, void *hook);

/* Sets the doorbell a host writer rings (fn(arg), once per record) when it
 * finds the ring full, before it polls; NULL clears it. The drain thread sets
 * it on attach, so CPU writers never wait out its sleep. Devices cannot ring
 * it: for them the ring's size bounds the rate between two sweeps. */
void nano_dh_buffer_set_doorbell(struct nano_dh_buffer *b, void (*fn)(void *), void *arg);

/*
 * Host encoder: writes record r (lanes, exec, addresses in rank order and the
 * header fields; bytes, version and encoding are chosen here) into the ring as
 * a device would: reserve with a compare-and-swap on head, write the
 * payload, then the header, word 0 last with release order. A full ring is
 * polled max_spins times (yielding the CPU between polls; the doorbell rung
 * first) and the record then dropped and counted, as on a device. Thread-safe. Host placement only.
 * Returns the record's size, or 0 when it was dropped.
 */
unsigned nano_dh_buffer_write(struct nano_dh_buffer *b, const struct nano_dh_record *r);

/* Called for each record consumed; a non-zero return stops the drain (the
 * record counts as consumed). */
typedef int (*nano_dh_record_fn)(const struct nano_dh_record *r, void *arg);

/* What the drains of a buffer found (cumulative; zeroed by the caller). */
struct nano_dh_drain_stats {
  uint64_t records;       /* records handed to the consumer                  */
  uint64_t bytes;         /* their bytes                                     */
  uint64_t decode_errors; /* records that did not decode (skipped)           */
  uint64_t lost_bytes;    /* bytes skipped: undecodable, or never completed  */
  char first_error[160];  /* the first decoder message, "" when none         */
};

/*
 * Consumes every complete record from the tail on, in ring order, calling fn
 * on each, zeroing its bytes and advancing the tail; stops at the first
 * record not complete yet (a writer still writing it). Needs no device read:
 * a complete record's first word is non-zero. A record that fails to decode
 * is counted and skipped by its size field when that is plausible, else the
 * drain stops there (nano_dh_buffer_finish then skips the rest). Only one
 * thread may drain a buffer at a time. Returns the number of records
 * consumed.
 */
long nano_dh_buffer_drain(struct nano_dh_buffer *b, nano_dh_record_fn fn, void *arg,
                          struct nano_dh_drain_stats *st);

/*
 * The final drain, once the device has finished: reads head and consumes
 * everything up to it. Bytes that were reserved but never completed, that
 * do not decode, or that follow a record whose fn stopped the drain, are
 * cleared, skipped and counted as lost: the ring is empty for its next use.
 * Returns the number of records consumed, or -1 when the counters cannot be
 * read.
 */
long nano_dh_buffer_finish(struct nano_dh_buffer *b, nano_dh_record_fn fn, void *arg,
                           struct nano_dh_drain_stats *st);

/* ---- Pool ------------------------------------------------------------------- */
struct nano_dh_pool;

/* A pool of up to `count` buffers with these parameters, allocated on first
 * use and reused. NULL on ENOMEM or EINVAL. */
struct nano_dh_pool *nano_dh_pool_create(const struct nano_dh_memory *mem, unsigned count,
                                         uint64_t capacity, uint32_t flags, uint32_t max_spins);
/* Frees the pool and its buffers (none may be acquired). */
void nano_dh_pool_destroy(struct nano_dh_pool *p);
/* A free buffer, or NULL when all `count` are in use or allocation failed
 * (err then says why, "" when all are in use). Thread-safe. */
struct nano_dh_buffer *nano_dh_pool_acquire(struct nano_dh_pool *p, char *err, size_t errlen);
/* Returns a drained buffer to the pool. Thread-safe. */
void nano_dh_pool_release(struct nano_dh_pool *p, struct nano_dh_buffer *b);

/* ---- Drain thread ----------------------------------------------------------- */
struct nano_dh_drainer;

/* Starts `threads` drain threads (at least 1). NULL with errno on failure. */
struct nano_dh_drainer *nano_dh_drainer_start(unsigned threads);
/* Stops and joins them (no buffer may be attached). */
void nano_dh_drainer_stop(struct nano_dh_drainer *d);
/*
 * Attaches b: the drain threads drain it into fn(arg), accumulating into *st,
 * until nano_dh_drainer_detach; one thread at a time (fn is never called
 * concurrently for one buffer; buffers are drained in parallel). A thread
 * sweeps every attached buffer no other thread is in, spins briefly when a
 * sweep found nothing, then sleeps with growing intervals (up to 1 ms), and
 * blocks while nothing is attached. Returns 0 or -1 (ENOMEM).
 */
int nano_dh_drainer_attach(struct nano_dh_drainer *d, struct nano_dh_buffer *b,
                           nano_dh_record_fn fn, void *arg, struct nano_dh_drain_stats *st);
/* Detaches b, waiting until the drain thread is out of it; the caller then
 * owns the buffer (and usually calls nano_dh_buffer_finish). */
void nano_dh_drainer_detach(struct nano_dh_drainer *d, struct nano_dh_buffer *b);
/* CPU time the drain threads have used, in nanoseconds (for benchmarks). */
uint64_t nano_dh_drainer_cpu_ns(const struct nano_dh_drainer *d);

/* ---- Site tables ------------------------------------------------------------- */
struct nano_dh_site {
  uint64_t id;        /* module id << 32 | index: what records carry */
  const char *kernel; /* original kernel name (mangled)               */
  const char *file;   /* source file ("" without debug info)          */
  uint32_t line, column;
  uint8_t kind;      /* NANO_DH_KIND_*     */
  uint8_t addrspace; /* NANO_DH_AS_*       */
  uint8_t flags;     /* NANO_DH_SITE_*     */
  uint32_t size;     /* bytes; 0 = per record */
};

struct nano_dh_sites;

/* An empty set of site tables; NULL on ENOMEM. */
struct nano_dh_sites *nano_dh_sites_create(void);
/* Frees the set (NULL is a no-op). */
void nano_dh_sites_destroy(struct nano_dh_sites *s);
/*
 * Adds every site-table blob found in [data, data + len): the contents of a
 * NANO_DH_SITES_SECTION section, blobs back to back, zero padding between
 * them skipped. The bytes are copied. Returns the number of blobs added, or -1
 * with errmsg naming `what` and the defect (bad magic, version, truncation,
 * string offset out of range).
 */
int nano_dh_sites_add_blob(struct nano_dh_sites *s, const void *data, size_t len, const char *what,
                           char *errmsg, size_t errlen);
/*
 * Adds the site tables of the ELF file at path: its NANO_DH_SITES_SECTION
 * sections, or where it has none (a cubin) the blobs of its
 * NANO_DH_SITES_SYMBOL... symbols. Returns the number of blobs added (0: the
 * file has none), or -1 with errmsg naming the file and the problem.
 */
int nano_dh_sites_add_elf(struct nano_dh_sites *s, const char *path, char *errmsg, size_t errlen);
/* The same over an ELF image in memory (a code object inside a fat binary);
 * `what` names it in messages. */
int nano_dh_sites_add_elf_memory(struct nano_dh_sites *s, const void *image, size_t len,
                                 const char *what, char *errmsg, size_t errlen);
/* The site with record id `id`, or NULL (a binary search). Pointers to sites
 * stay valid until the next add or the destroy of the set. */
const struct nano_dh_site *nano_dh_sites_find(const struct nano_dh_sites *s, uint64_t id);
/* Number of sites in the set, and the i-th (0 <= i < count). */
size_t nano_dh_sites_count(const struct nano_dh_sites *s);
const struct nano_dh_site *nano_dh_sites_at(const struct nano_dh_sites *s, size_t i);

/* Printable names: "load"/"store"/"atomic", "generic"/"global"/"shared"/"constant". */
const char *nano_dh_kind_name(unsigned kind);
const char *nano_dh_addrspace_name(unsigned as);

#ifdef __cplusplus
}
#endif
#endif
