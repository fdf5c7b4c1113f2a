/*
 * nano/dh_format.h: the device-to-host (dh_comms) wire format of nanoprobe.
 *
 * Four parties share this header:
 *   - the device runtime (dh_comms/device/dh_device.c), compiled to bitcode per
 *     target and linked into device modules by the LLVM pass, writes records;
 *   - the LLVM pass (llvm-pass/Device*.cpp) names twins, numbers sites and
 *     emits the site table in the layout below;
 *   - the host side (dh_comms/src/ and the runtime's CPU-kernel launcher)
 *     places descriptors, encodes the records of CPU waves, decodes records
 *     and site tables;
 *   - kerneldb pairs kernels with their twins by NANO_TWIN_PREFIX and reads
 *     site tables.
 *
 * Everything is little-endian. dh_comms/README.md describes the byte layouts
 * field by field; the offsets below are the contract (static asserts in the
 * host sources check their structs against them). Changing a layout is an ABI
 * break: bump NANO_DH_VERSION (records, descriptor) or NANO_DH_SITES_VERSION
 * (site table).
 *
 * This header is plain C with no includes so that the device runtime (compiled
 * without a libc) can use it.
 */
#ifndef NANO_DH_FORMAT_H
#define NANO_DH_FORMAT_H

/* ---- Twin naming ----------------------------------------------------------
 * twin = NANO_TWIN_PREFIX + T, where for an unmangled (extern "C") kernel name
 * N, T = N; for an Itanium-mangled name "_Z...", T = the mangled name with one
 * trailing parameter "Pv" (void*) appended, and a parameter list that is just
 * "v" becomes "Pv". With the prefix removed a twin demangles to the original
 * signature plus a trailing void*. Twins carry the string function attribute
 * NANO_TWIN_ATTR in IR. */
#define NANO_TWIN_PREFIX "__nano_twin_"
#define NANO_TWIN_ATTR "nano.twin"

/* Format version of records, descriptors and sums tables (one number: they
 * change together). */
#define NANO_DH_VERSION 3u

/* ---- Buffer descriptor (128 bytes, 8-aligned) ------------------------------
 * The twin's trailing argument points to it. It lives where the device can do
 * read-modify-write atomics cheaply (device memory on a GPU, host memory for
 * CPU kernels): only head and dropped are RMW targets, so PCIe atomics are
 * never needed. The ring and the tail live in host-visible memory; the device
 * reads the tail (through tail_addr) only when the ring looks full by
 * tail_seen, a lower bound of the tail kept in the descriptor.
 *
 *   offset type     field      written by
 *   0      u32      magic      host   NANO_DH_MAGIC
 *   4      u32      version    host   NANO_DH_VERSION
 *   8      u64      data       host   device address of the ring
 *   16     u64      capacity   host   ring bytes, power of two >= 128
 *   24     u64      head       device bytes reserved so far (fetch-and-add,
 *                                     monotonic)
 *   32     u64      tail_addr  host   device address of the u64 tail: bytes
 *                                     the host has consumed (monotonic)
 *   40     u64      dropped    device records dropped (atomic add)
 *   48     u32      flags      host   NANO_DH_FLAG_*
 *   52     u32      max_spins  host   polls of a full ring before a drop
 *   56     u64      hook       host   CPU kernels: the host runtime's access
 *                                     function (NANO_DH_FLAG_HOOK); else 0
 *   64     u32 x 3  block_lo   host   first block id recorded, per dimension
 *   76     u32 x 3  block_hi   host   last block id recorded (inclusive)
 *   88     u64      tail_seen  both   a tail the host has reached (so a lower
 *                                     bound of it): the host writes the tail
 *                                     with each descriptor, leaders after
 *                                     reading it (0 is valid, only slower)
 *   96     u64      sums       host   device address of the dispatch's sums
 *                                     table (below), or 0: every access is
 *                                     a record
 *   104    u64      stalled    device 1 once a wave gave up waiting for room
 *                                     it had reserved (the host stopped
 *                                     taking records): later waves drop at
 *                                     once; the host writes 0 with each
 *                                     descriptor
 *   112    u64      blocks     host   device address of the block-times
 *                                     table (KernelTimeline; GPU twins), or 0
 *   120    u32      nblocks    host   its entries: blocks whose linear id
 *                                     (x + gx * (y + gy * z)) is below it
 *                                     are timed
 *   124    u32      zero
 *
 * The block-times table: per block NANO_DH_BLOCK_WORDS u64, zeroed by the
 * host before the dispatch: the block's start (its thread 0's entry to the
 * twin) and end (the latest exit of any of its threads, an atomic max) in
 * ns of the device's clock (NVPTX %globaltimer; AMDGPU s_memrealtime at
 * 100 MHz, times 10), and the unit (SM, CU: hw_id) its thread 0 ran on.
 */
#define NANO_DH_MAGIC 0x4348444eu /* "NDHC" */
#define NANO_DH_DESC_SIZE 128
#define NANO_DH_DESC_OFF_MAGIC 0
#define NANO_DH_DESC_OFF_VERSION 4
#define NANO_DH_DESC_OFF_DATA 8
#define NANO_DH_DESC_OFF_CAPACITY 16
#define NANO_DH_DESC_OFF_HEAD 24
#define NANO_DH_DESC_OFF_TAIL_ADDR 32
#define NANO_DH_DESC_OFF_DROPPED 40
#define NANO_DH_DESC_OFF_FLAGS 48
#define NANO_DH_DESC_OFF_MAXSPINS 52
#define NANO_DH_DESC_OFF_HOOK 56
#define NANO_DH_DESC_OFF_BLOCK_LO 64
#define NANO_DH_DESC_OFF_BLOCK_HI 76
#define NANO_DH_DESC_OFF_TAIL_SEEN 88
#define NANO_DH_DESC_OFF_SUMS 96
#define NANO_DH_DESC_OFF_STALLED 104
#define NANO_DH_DESC_OFF_BLOCKS 112
#define NANO_DH_DESC_OFF_NBLOCKS 120
#define NANO_DH_BLOCK_WORDS 3
#define NANO_DH_BLOCK_START 0
#define NANO_DH_BLOCK_END 1
#define NANO_DH_BLOCK_UNIT 2
/* A wave that reserved room waits for it at most this many times max_spins
 * polls (a full ring's wait before a drop) before it calls the ring stalled. */
#define NANO_DH_STALL_SPINS_FACTOR 16u
/* The descriptor as a C struct, for every party (the device runtime through
 * its address space), held to the offsets above by the asserts below.
 * unsigned int and unsigned long long are 32 and 64 bits on every target
 * nanoprobe builds for (LP64 hosts, NVPTX64, AMDGPU). */
struct nano_dh_desc {
  unsigned int magic, version;
  unsigned long long data, capacity, head, tail_addr, dropped;
  unsigned int flags, max_spins;
  unsigned long long hook;
  unsigned int block_lo[3], block_hi[3];
  unsigned long long tail_seen, sums, stalled, blocks;
  unsigned int nblocks, zero;
};
#ifdef __cplusplus
#define NANO_DH_ASSERT static_assert
#else
#define NANO_DH_ASSERT _Static_assert
#endif
#define NANO_DH_AT(type, field, off)                                                               \
  NANO_DH_ASSERT(__builtin_offsetof(type, field) == (off), #field)
NANO_DH_ASSERT(sizeof(struct nano_dh_desc) == NANO_DH_DESC_SIZE, "descriptor size");
NANO_DH_AT(struct nano_dh_desc, data, NANO_DH_DESC_OFF_DATA);
NANO_DH_AT(struct nano_dh_desc, capacity, NANO_DH_DESC_OFF_CAPACITY);
NANO_DH_AT(struct nano_dh_desc, head, NANO_DH_DESC_OFF_HEAD);
NANO_DH_AT(struct nano_dh_desc, tail_addr, NANO_DH_DESC_OFF_TAIL_ADDR);
NANO_DH_AT(struct nano_dh_desc, dropped, NANO_DH_DESC_OFF_DROPPED);
NANO_DH_AT(struct nano_dh_desc, flags, NANO_DH_DESC_OFF_FLAGS);
NANO_DH_AT(struct nano_dh_desc, max_spins, NANO_DH_DESC_OFF_MAXSPINS);
NANO_DH_AT(struct nano_dh_desc, hook, NANO_DH_DESC_OFF_HOOK);
NANO_DH_AT(struct nano_dh_desc, block_lo, NANO_DH_DESC_OFF_BLOCK_LO);
NANO_DH_AT(struct nano_dh_desc, block_hi, NANO_DH_DESC_OFF_BLOCK_HI);
NANO_DH_AT(struct nano_dh_desc, tail_seen, NANO_DH_DESC_OFF_TAIL_SEEN);
NANO_DH_AT(struct nano_dh_desc, sums, NANO_DH_DESC_OFF_SUMS);
NANO_DH_AT(struct nano_dh_desc, stalled, NANO_DH_DESC_OFF_STALLED);
NANO_DH_AT(struct nano_dh_desc, blocks, NANO_DH_DESC_OFF_BLOCKS);
NANO_DH_AT(struct nano_dh_desc, nblocks, NANO_DH_DESC_OFF_NBLOCKS);

/* The smallest ring: two maximal records do not fit, one always does. */
#define NANO_DH_MIN_CAPACITY 1024u

/* Descriptor flags. */
#define NANO_DH_FLAG_DROP 1u      /* full ring: drop at once instead of polling    */
#define NANO_DH_FLAG_HOOK 2u      /* CPU kernels: call `hook` instead of writing   */
#define NANO_DH_FLAG_NO_ACCESS 4u /* record no access (KernelTimeline alone)  */
/* The `space` the device runtime passes the hook for a loop's reconvergence
 * point (__nano_dh_reconverge) rather than an access; its `site` is then
 * module id << 32 | the site count at the loop's end. */
#define NANO_DH_HOOK_POINT 0xffffffffu

/* ---- Record: a 56-byte header and a payload of lane addresses ---------------
 * One record per wave (warp) and executed access. Records are multiples of 8
 * bytes; the first 8 bytes (word 0) are written last, with release order, and
 * are never zero in a complete record: the host zeroes what it consumed.
 *
 *   offset type  field
 *   0      u16   bytes      record size (56 + payload), multiple of 8
 *   2      u8    version    NANO_DH_VERSION
 *   3      u8    format     bits 0-1: payload encoding (NANO_DH_ENC_*);
 *                           bits 2-3: where generic addresses pointed
 *                           (NANO_DH_SPACE_*), 0 for other sites
 *   4      u8    lanes      active lanes (1..64)
 *   5      u8    wave_size  64, 32, or 1 (a CPU kernel thread on its own)
 *   6      u16   wave       wave id in the block: linear thread id of lane 0
 *                           divided by the wave size
 *   8      u64   site       module id << 32 | site index (site table)
 *   16     u64   exec       bit i = lane i was active (popcount = lanes)
 *   24     u32   block_x    block (workgroup) id
 *   28     u16   block_y
 *   30     u16   block_z
 *   32     u32   size       access size in bytes (memory intrinsics: the
 *                           leader's length)
 *   36     u32   hw_id      AMDGPU HW_ID / HW_ID1, NVPTX %smid, CPU 0
 *   40     u64   time       AMDGPU s_memtime, NVPTX %globaltimer, CPU rdtsc
 *   48     u64   base       address of the lowest active lane
 *   56     payload, by encoding:
 *          NANO_DH_ENC_STRIDE  i64 stride: the lane of rank r (r-th active
 *                              lane) accessed base + r * stride (8 bytes)
 *          NANO_DH_ENC_OFF32   i32 per lane, in rank order: address - base,
 *                              zero-padded to a multiple of 8
 *          NANO_DH_ENC_ADDR64  u64 per lane, in rank order: the address
 *
 * The device picks the smallest encoding that holds every active lane's
 * address: STRIDE when all lanes are at base + rank * stride (coalesced,
 * strided, broadcast, one lane), else OFF32 when every address is within
 * 2^31 bytes of base, else ADDR64. A wave64 record is then 64 bytes for a
 * coalesced or uniformly strided access, 312 with 32-bit offsets and 568 with
 * full addresses (dh_comms' own: 832). Addresses are flat/generic; those of
 * LDS/shared sites are the 32-bit offset in the group segment. */
#define NANO_DH_HDR_SIZE 56
#define NANO_DH_HDR_OFF_BYTES 0
#define NANO_DH_HDR_OFF_VERSION 2
#define NANO_DH_HDR_OFF_FORMAT 3
#define NANO_DH_HDR_OFF_LANES 4
#define NANO_DH_HDR_OFF_WAVESIZE 5
#define NANO_DH_HDR_OFF_WAVE 6
#define NANO_DH_HDR_OFF_SITE 8
#define NANO_DH_HDR_OFF_EXEC 16
#define NANO_DH_HDR_OFF_BLOCK_X 24
#define NANO_DH_HDR_OFF_BLOCK_Y 28
#define NANO_DH_HDR_OFF_BLOCK_Z 30
#define NANO_DH_HDR_OFF_SIZE 32
#define NANO_DH_HDR_OFF_HWID 36
#define NANO_DH_HDR_OFF_TIME 40
#define NANO_DH_HDR_OFF_BASE 48
/* The largest record: a full wave64 with 64-bit addresses. */
#define NANO_DH_MAX_RECORD (NANO_DH_HDR_SIZE + 8 * 64)

/* Payload encodings (format bits 0-1). */
#define NANO_DH_ENC_STRIDE 0u
#define NANO_DH_ENC_OFF32 1u
#define NANO_DH_ENC_ADDR64 2u
#define NANO_DH_FORMAT_ENC_MASK 3u
/* Where the generic addresses of a record pointed (format bits 2-3). */
#define NANO_DH_FORMAT_SPACE_SHIFT 2
#define NANO_DH_SPACE_UNKNOWN 0u /* not a generic site, or not classified */
#define NANO_DH_SPACE_GLOBAL 1u  /* no lane pointed into shared memory     */
#define NANO_DH_SPACE_SHARED 2u  /* every lane pointed into shared memory  */
#define NANO_DH_SPACE_MIXED 3u

/* Payload bytes of a record with `lanes` active lanes in encoding `enc`. */
#define NANO_DH_PAYLOAD_BYTES(enc, lanes)                                                          \
  ((enc) == NANO_DH_ENC_STRIDE  ? 8u                                                               \
   : (enc) == NANO_DH_ENC_OFF32 ? ((lanes)*4u + 7u) / 8u * 8u                                      \
                                : (lanes)*8u)

/* ---- Sums table: the dispatch's sums, made where the waves run -------------
 * With desc->sums set, a wave whose access can be summed exactly with the
 * wave's own primitives adds it to the table instead of writing a record
 * (dh_device.c's nano_dh_sum says which can); every other access is a
 * record, which the host sums with the same arithmetic (aggregate.c). The
 * table lives in device memory: the host writes the header and the site
 * marks, zeroes what follows them (everything the device writes) before the
 * dispatch and reads it once after. Offsets of the arrays are from the
 * table's start, each 8-aligned.
 *
 *   offset type  field        written by
 *   0      u32   module       host   module id whose sites have slots
 *   4      u32   sites        host   slots: site indices below it
 *   8      u32   shards       host   copies of the counts (power of two); a
 *                                    wave adds to shard hw_id & (shards - 1)
 *   12     u8    line_shift   host   log2 of the cache line's bytes
 *   13     u8    sector_shift host   log2 of the sector's bytes
 *   14     u8    what         host   NANO_DH_SUMS_*
 *   15     u8    page_shift   host   log2 of a page's bytes (PAGES)
 *   16     u32   page_slots   host   slots of the page table (power of two)
 *   20     u32   zero
 *   24     u64   lost         host   offset of a u64 the device adds the lane
 *                                    accesses no page slot took to; the
 *                                    first byte the device writes
 *   32     u64   modes        host   offset of u8[sites]: 0 sum the site's
 *                                    accesses here, 1 make them records
 *   40     u64   counts       host   offset of u64[shards][sites][3][8]: per
 *                                    shard, site and record space
 *                                    (NANO_DH_SPACE_UNKNOWN, _GLOBAL,
 *                                    _SHARED: what the record's format
 *                                    would have said) the counters
 *                                    NANO_DH_COUNT_*
 *   48     u64   pages        host   offset of u64[page_slots][2]: page + 1
 *                                    (0: a free slot), lane accesses
 *   56     u64   zero
 */
#define NANO_DH_SUMS_HDR_SIZE 64
/* The sums table's header as a C struct (as struct nano_dh_desc). */
struct nano_dh_sums_hdr {
  unsigned int module, sites, shards;
  unsigned char line_shift, sector_shift, what, page_shift;
  unsigned int page_slots, zero;
  unsigned long long lost, modes, counts, pages, zero2;
};
NANO_DH_ASSERT(sizeof(struct nano_dh_sums_hdr) == NANO_DH_SUMS_HDR_SIZE, "sums header size");
/* what */
#define NANO_DH_SUMS_SITES 1u      /* per-site counters                        */
#define NANO_DH_SUMS_PAGES 2u      /* per-page lane accesses                   */
#define NANO_DH_SUMS_BANKS 4u      /* shared accesses: 32 banks of 4 bytes     */
#define NANO_DH_SUMS_AMD_WAVE64 8u /* shared phases of AMD wave64 (else 32,    */
                                   /* 16, 8 lanes by size: nano/handler.h)    */
/* Record spaces with counters per site. */
#define NANO_DH_SUMS_SPACES 3u
/* The counters of one site and space, in this order. */
#define NANO_DH_COUNT_EXECUTIONS 0
#define NANO_DH_COUNT_ACCESSES 1
#define NANO_DH_COUNT_BYTES 2
#define NANO_DH_COUNT_LINES_NEEDED 3
#define NANO_DH_COUNT_LINES_USED 4
#define NANO_DH_COUNT_SECTORS_NEEDED 5
#define NANO_DH_COUNT_SECTORS_USED 6
#define NANO_DH_COUNT_BANK_CONFLICTS 7
#define NANO_DH_COUNTS 8
/* Slots a lane's page probes before its accesses count as lost. */
#define NANO_DH_PAGE_PROBES 32u

/* Access kinds (site.kind). */
#define NANO_DH_KIND_UNSEEN 0u /* no access: a NANO_DH_SITE_UNSEEN site */
#define NANO_DH_KIND_LOAD 1u
#define NANO_DH_KIND_STORE 2u
#define NANO_DH_KIND_ATOMIC 3u

/* Site flags (site.flags). */
#define NANO_DH_SITE_MEMINTRINSIC 1u /* memcpy/memmove/memset: size is per call */
#define NANO_DH_SITE_MASKED 2u       /* masked vector load/store               */
#define NANO_DH_SITE_BUFFER 4u       /* AMDGPU buffer intrinsic                */
#define NANO_DH_SITE_ASM 8u          /* a PTX ld/st/cp.async in inline asm     */
/* Not instrumented: inline assembly that may touch memory, which the twin
 * cannot read (no record names the site; kind NANO_DH_KIND_UNSEEN, size 0). */
#define NANO_DH_SITE_UNSEEN 16u

/* Address-space classes (site.addrspace, and the last argument of the device
 * access call); the numbers match AMDGPU and NVPTX. */
#define NANO_DH_AS_GENERIC 0u /* flat (AMDGPU), generic (NVPTX), any (CPU) */
#define NANO_DH_AS_GLOBAL 1u
#define NANO_DH_AS_SHARED 3u /* LDS (AMDGPU), shared (NVPTX) */
#define NANO_DH_AS_CONSTANT 4u

/* ---- CPU kernels ------------------------------------------------------------
 * Size of struct nano_kernel_ctx (nano/kernel.h), the thread position a CPU
 * kernel reads and the device runtime restores after the runtime's hook. */
#define NANO_DH_KCTX_SIZE 64
/* ABI of struct nano_cpu_kernel (nano/kernel.h), which the pass emits for
 * every launched CPU kernel, and of the runtime's __nano_cpu_launch. */
#define NANO_CPU_LAUNCH_ABI 1u

/* ---- Site table: one blob per module, 8-aligned -----------------------------
 * Emitted by the pass as the constant global NANO_DH_SITES_SYMBOL<module id as
 * 8 hex digits> in section NANO_DH_SITES_SECTION (ELF targets; PTX has no
 * sections, there the symbol is the handle). Layout: a 24-byte header, nsites
 * 24-byte site entries, then the string table (NUL-terminated strings), the
 * whole padded with zeros to a multiple of 8. */
#define NANO_DH_SITES_SECTION "nano_dev_sites"
#define NANO_DH_SITES_SYMBOL "__nano_dh_sites_"
#define NANO_DH_SITES_MAGIC "NANOSITE" /* 8 bytes, no NUL */
#define NANO_DH_SITES_VERSION 1u
#define NANO_DH_SITES_HDR_SIZE 24
/* header: char magic[8]; u32 version; u32 module_id; u32 nsites; u32 strtab_bytes */
#define NANO_DH_SITE_SIZE 24
/* site: u32 kernel (strtab offset, original kernel name); u32 file (strtab
 * offset); u32 line; u32 column; u8 kind; u8 addrspace; u8 flags; u8 zero;
 * u32 size (bytes; 0 = given per record) */

#endif
