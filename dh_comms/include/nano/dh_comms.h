/*
 * nano/dh_comms.h: host side of dh_comms (libnano_dh).
 *
 * - A buffer: a descriptor plus a power-of-two ring in host memory, the one
 *   argument a twin takes after the original kernel's. CPU kernels write to it
 *   directly; GPU back ends place the same layout in device-visible memory.
 * - The record decoder, shared by every consumer (drain loop, handlers,
 *   tests): nano_dh_decode.
 * - Site tables: parsing the blobs the pass emits, loading them from an ELF
 *   file (executable, shared object or GPU code object), resolving a record's
 *   site id to kernel, file, line, column, kind, size and address space.
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

/* One decoded record: the header fields plus the addresses of the active
 * lanes, in ascending lane order (lane[i] is the lane of addr[i]). */
struct nano_dh_record {
  uint32_t bytes;        /* record size in the ring                         */
  uint16_t version;      /* NANO_DH_VERSION                                 */
  uint8_t lanes;         /* number of addresses                             */
  uint8_t wave_size;     /* 64, 32 or 1 (CPU)                               */
  uint64_t site;         /* module id << 32 | site index                    */
  uint64_t exec;         /* active lanes                                    */
  uint64_t time;         /* device clock                                    */
  uint32_t block[3];     /* block (workgroup) id                            */
  uint32_t wave;         /* wave id in the block                            */
  uint32_t hw_id;        /* hardware id register (0 where none)             */
  uint32_t size;         /* access size in bytes                            */
  uint16_t block_dim[3]; /* block dimensions                                */
  uint8_t lane[64];
  uint64_t addr[64];
};

/*
 * Decodes the record at the start of [buf, buf + len).
 * Returns the record's size in bytes (> 0) and fills *out; 0 when the record
 * is not complete yet (its first word is zero) or len is shorter than the
 * record; -1 when the bytes are not a valid record (wrong version, size not
 * matching the lane count, lane count not matching the exec mask): then errmsg
 * (if not NULL) gets a message of at most errlen bytes.
 */
long nano_dh_decode(const void *buf, size_t len, struct nano_dh_record *out, char *errmsg,
                    size_t errlen);

/* Linear thread id within its block of address i of a record:
 * wave * wave_size + lane[i]. */
uint32_t nano_dh_record_thread(const struct nano_dh_record *r, unsigned i);

/* ---- Buffers ------------------------------------------------------------- */
struct nano_dh_buffer;

/*
 * Allocates a descriptor and a ring of `capacity` bytes (a power of two,
 * >= 128) in host memory. flags: NANO_DH_FLAG_*; max_spins: polls of a full
 * ring before a record is dropped (ignored with NANO_DH_FLAG_DROP).
 * Returns NULL with errno EINVAL (bad capacity) or ENOMEM.
 */
struct nano_dh_buffer *nano_dh_buffer_create(uint64_t capacity, uint32_t flags,
                                             uint32_t max_spins);
/* Frees the buffer (NULL is a no-op). */
void nano_dh_buffer_destroy(struct nano_dh_buffer *b);
/* The descriptor address: the trailing argument of a twin. */
void *nano_dh_buffer_desc(struct nano_dh_buffer *b);
/* Records dropped so far (read from the descriptor). */
uint64_t nano_dh_buffer_dropped(const struct nano_dh_buffer *b);

/* Called by nano_dh_buffer_drain for each record; a non-zero return stops
 * the drain (the record counts as consumed). */
typedef int (*nano_dh_record_fn)(const struct nano_dh_record *r, void *arg);

/*
 * Consumes every complete record between tail and head in ring order, calling
 * fn on each, zeroing its bytes and advancing tail. Stops at the first
 * incomplete record (a writer still writing it). Returns the number of records
 * consumed, or -1 on a malformed record (errmsg filled as for nano_dh_decode;
 * the ring is left at that record).
 */
long nano_dh_buffer_drain(struct nano_dh_buffer *b, nano_dh_record_fn fn, void *arg,
                          char *errmsg, size_t errlen);

/* ---- Site tables --------------------------------------------------------- */
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
int nano_dh_sites_add_blob(struct nano_dh_sites *s, const void *data, size_t len,
                           const char *what, char *errmsg, size_t errlen);
/*
 * Adds the site tables of the ELF file at path (section NANO_DH_SITES_SECTION).
 * Returns the number of blobs added (0: the file has no such section), or -1
 * with errmsg naming the file and the problem.
 */
int nano_dh_sites_add_elf(struct nano_dh_sites *s, const char *path, char *errmsg,
                          size_t errlen);
/* The site with record id `id`, or NULL. */
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
