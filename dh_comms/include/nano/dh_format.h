/*
 * nano/dh_format.h: the device-to-host (dh_comms) wire format of nanoprobe.
 *
 * Four parties share this header:
 *   - the device runtime (dh_comms/device/dh_device.c), compiled to bitcode per
 *     target and linked into device modules by the LLVM pass, writes records;
 *   - the LLVM pass (llvm-pass/Device*.cpp) names twins, numbers sites and
 *     emits the site table in the layout below;
 *   - the host side (dh_comms/src/) allocates descriptors, decodes records and
 *     site tables;
 *   - kerneldb pairs kernels with their twins by NANO_TWIN_PREFIX.
 *
 * Everything is little-endian. dh_comms/README.md describes the byte layouts
 * field by field; the offsets below are the contract (static asserts in
 * dh_comms/src/dh_decode.c check the structs against them). Changing a layout
 * is an ABI break: bump NANO_DH_VERSION (records, descriptor) or
 * NANO_DH_SITES_VERSION (site table).
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

/* ---- Buffer descriptor (64 bytes, 8-aligned, in device-visible memory) ---- */
#define NANO_DH_MAGIC 0x4348444eu /* "NDHC" */
#define NANO_DH_VERSION 1u

/* Descriptor flags. */
#define NANO_DH_FLAG_DROP 1u /* full buffer: drop at once instead of waiting */

#define NANO_DH_DESC_SIZE 64
#define NANO_DH_DESC_OFF_MAGIC 0     /* u32 NANO_DH_MAGIC                       */
#define NANO_DH_DESC_OFF_VERSION 4   /* u32 NANO_DH_VERSION                     */
#define NANO_DH_DESC_OFF_DATA 8      /* u64 device address of the ring          */
#define NANO_DH_DESC_OFF_CAPACITY 16 /* u64 ring bytes, power of two, >= 128    */
#define NANO_DH_DESC_OFF_HEAD 24     /* u64 bytes reserved so far (device)      */
#define NANO_DH_DESC_OFF_TAIL 32     /* u64 bytes consumed so far (host)        */
#define NANO_DH_DESC_OFF_DROPPED 40  /* u64 records dropped (device)            */
#define NANO_DH_DESC_OFF_FLAGS 48    /* u32 NANO_DH_FLAG_*                      */
#define NANO_DH_DESC_OFF_MAXSPINS 52 /* u32 polls of a full buffer before a drop */

/* ---- Record: 64-byte header + one u64 address per active lane ------------- */
#define NANO_DH_HDR_SIZE 64
#define NANO_DH_HDR_OFF_BYTES 0      /* u32 record bytes; non-zero = complete   */
#define NANO_DH_HDR_OFF_VERSION 4    /* u16 NANO_DH_VERSION                     */
#define NANO_DH_HDR_OFF_LANES 6      /* u8  addresses in the payload            */
#define NANO_DH_HDR_OFF_WAVESIZE 7   /* u8  64, 32 or 1 (CPU)                   */
#define NANO_DH_HDR_OFF_SITE 8       /* u64 module id << 32 | site index        */
#define NANO_DH_HDR_OFF_EXEC 16      /* u64 active lanes, bit i = lane i        */
#define NANO_DH_HDR_OFF_TIME 24      /* u64 device clock                        */
#define NANO_DH_HDR_OFF_BLOCK 32     /* u32 x3 block (workgroup) id             */
#define NANO_DH_HDR_OFF_WAVE 44      /* u32 wave id within the block            */
#define NANO_DH_HDR_OFF_HWID 48      /* u32 hardware id (HW_ID, %smid; CPU 0)   */
#define NANO_DH_HDR_OFF_SIZE 52      /* u32 access size in bytes                */
#define NANO_DH_HDR_OFF_BLOCKDIM 56  /* u16 x3 block dimensions                 */
#define NANO_DH_HDR_OFF_RESERVED 62  /* u16 zero                                */

/* Access kinds (site.kind). */
#define NANO_DH_KIND_LOAD 1u
#define NANO_DH_KIND_STORE 2u
#define NANO_DH_KIND_ATOMIC 3u

/* Site flags (site.flags). */
#define NANO_DH_SITE_MEMINTRINSIC 1u /* memcpy/memmove/memset: size is per call */
#define NANO_DH_SITE_MASKED 2u       /* masked vector load/store               */
#define NANO_DH_SITE_BUFFER 4u       /* AMDGPU buffer intrinsic                */

/* Address-space classes (site.addrspace); the numbers match AMDGPU and NVPTX. */
#define NANO_DH_AS_GENERIC 0u /* flat (AMDGPU), generic (NVPTX), any (CPU) */
#define NANO_DH_AS_GLOBAL 1u
#define NANO_DH_AS_SHARED 3u  /* LDS (AMDGPU), shared (NVPTX) */
#define NANO_DH_AS_CONSTANT 4u

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
