/*
** kerneldb: a read-only database over GPU code objects.
**
** kdb_open() reads a bare AMDGPU code object, a clang offload bundle (plain or
** compressed "CCOB"), an ELF executable or shared library with HIP fat binaries
** (.hip_fatbin) or NVIDIA fat binaries (.nv_fatbin), or an NVIDIA cubin; and
** nanoprobe's site tables in any of them, also in a host ELF file without GPU
** code (CPU kernels built with the plugin). It
** lists every code object (target, code-object version) and its kernels
** (names, arguments, kernarg layout, resources) without disassembling anything.
** kdb_kernel_isa() disassembles one AMDGPU kernel on demand (LLVM's C
** disassembler), classifies memory instructions and attaches DWARF source
** positions; the result is cached for the lifetime of the database.
**
** Threads: after kdb_open() returns, every function may be called from any
** number of threads on the same database; the lazy parts take a lock per code
** object. Everything returned stays valid until kdb_close().
**
** Errors: functions that can fail return 0 on success and -1 on failure, and
** write a message naming the input and what is wrong into err[errlen] (when
** err is not NULL).
*/
#ifndef KERNELDB_H
#define KERNELDB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kdb kdb;

/* Who made the code object. */
typedef enum kdb_vendor { KDB_VENDOR_AMDGPU = 1, KDB_VENDOR_NVIDIA = 2 } kdb_vendor;

/* State of an AMDGPU target feature (xnack, sramecc) in the ELF flags. */
typedef enum kdb_feature {
  KDB_FEATURE_UNSUPPORTED = 0, /* the target has no such feature */
  KDB_FEATURE_ANY = 1,         /* built to run with the feature on or off */
  KDB_FEATURE_OFF = 2,
  KDB_FEATURE_ON = 3
} kdb_feature;

/* One code object: one ELF image for one GPU target. */
typedef struct kdb_code_object {
  size_t index; /* position in kdb_code_object_at() order */
  kdb_vendor vendor;
  const char *arch;      /* "gfx90a", "gfx1100", "sm_90" */
  const char *target_id; /* "gfx90a:sramecc+:xnack-", or the arch */
  const char *triple;    /* bundle entry triple, NULL for a bare image */
  const char *container; /* where it was found: "file", ".hip_fatbin bundle 0", ... */
  int compressed;        /* 1 when the enclosing bundle was compressed */
  kdb_feature xnack, sramecc;
  /* AMDGPU: code object version (2..6). NVIDIA: the cubin's ELF ABI version. */
  int code_object_version;
  uint64_t image_size; /* size of the ELF image in bytes */
  size_t kernel_count;
} kdb_code_object;

/* One kernel argument, from the AMDGPU metadata note or the cubin's
** .nv.info section. Strings are NULL where the producer did not record them. */
typedef struct kdb_arg {
  const char *name;
  const char *type_name;
  const char *value_kind;    /* "by_value", "global_buffer", "hidden_global_offset_x", ... */
  const char *address_space; /* "global", "constant", "local", "private", ... */
  uint32_t size, offset, align;
  int hidden; /* 1 for hidden (implicit) arguments */
} kdb_arg;

/* The raw AMDGPU kernel descriptor (64 bytes at the ".kd" symbol). */
typedef struct kdb_descriptor {
  uint32_t group_segment_fixed_size;
  uint32_t private_segment_fixed_size;
  uint32_t kernarg_size;
  int64_t kernel_code_entry_byte_offset;
  uint32_t compute_pgm_rsrc1, compute_pgm_rsrc2, compute_pgm_rsrc3;
  uint16_t kernel_code_properties;
} kdb_descriptor;

typedef struct kdb_kernel kdb_kernel;

struct kdb_kernel {
  size_t index; /* position in kdb_kernel_at() order */
  const kdb_code_object *co;
  const char *name;      /* mangled name (metadata .name / ELF symbol) */
  const char *demangled; /* demangled; equals name when not mangled */
  const char *symbol;    /* descriptor symbol ("X.kd") or the code symbol */
  uint64_t code_addr;    /* address of the first instruction, 0 if unknown */
  uint64_t code_size;    /* the code symbol's size (up to the next symbol when 0) */
  int has_descriptor;
  uint64_t descriptor_addr;
  kdb_descriptor descriptor;
  uint32_t kernarg_segment_size, kernarg_segment_align;
  uint32_t group_segment_size, private_segment_size;
  /* agpr_count 0 where absent. NVIDIA: vgpr_count = registers per thread. */
  uint32_t sgpr_count, vgpr_count, agpr_count;
  uint32_t sgpr_spill_count, vgpr_spill_count;
  uint32_t wavefront_size, max_flat_workgroup_size; /* 0 where unknown */
  size_t arg_count;
  const kdb_arg *args;
  size_t explicit_arg_count; /* arguments before the first hidden one */
  /* Twins (see README: "__nano_twin_" naming rule). For an original: its twin
  ** in the same code object or NULL. For a twin: its original and the index of
  ** the extra buffer argument in args[]. */
  const kdb_kernel *twin;
  const kdb_kernel *original;
  size_t twin_arg_index;
};

/* Where an address of memory traffic goes. */
typedef enum kdb_mem_space {
  KDB_MEM_NONE = 0, /* not a memory instruction */
  KDB_MEM_GLOBAL,   /* global_* */
  KDB_MEM_FLAT,     /* flat_* (global, LDS or scratch, decided at run time) */
  KDB_MEM_SCRATCH,  /* scratch_* */
  KDB_MEM_LDS,      /* ds_* */
  KDB_MEM_BUFFER,   /* buffer_*, tbuffer_* */
  KDB_MEM_SCALAR    /* s_load_*, s_buffer_load_*, s_store_* (scalar cache) */
} kdb_mem_space;

typedef enum kdb_mem_op {
  KDB_MEMOP_NONE = 0,
  KDB_MEMOP_LOAD,
  KDB_MEMOP_STORE,
  KDB_MEMOP_ATOMIC
} kdb_mem_op;

/* One source position; file NULL when DWARF has none for the address (or
** says line 0, "no source line"). */
typedef struct kdb_srcpos {
  const char *file;
  uint32_t line, column;
} kdb_srcpos;

/* One frame of an instruction's inlining chain: the function it executes in
** and the position in that function. */
typedef struct kdb_frame {
  const char *func; /* DWARF name of an inlined function; the kernel's
                       demangled name for the outermost frame */
  kdb_srcpos pos;   /* file NULL when DWARF does not say */
} kdb_frame;

/* One instruction of a kernel. */
typedef struct kdb_insn {
  uint64_t addr;
  uint32_t size;
  const uint8_t *bytes;
  const char *mnemonic; /* "<unknown>" for bytes the disassembler rejects */
  const char *operands; /* "" when none */
  kdb_mem_space space;
  kdb_mem_op op;
  uint32_t width; /* bytes moved per lane (per work-item), 0 if none */
  kdb_srcpos src; /* position from the DWARF line table */
  /* When src lies in an inlined function: that function and the call site
  ** (innermost inlining). func NULL when not inlined. */
  const char *inlined_func;
  kdb_srcpos inlined_at;
  /* The whole inlining chain, innermost first, as llvm-symbolizer gives it:
  ** frames[0] is src in the innermost function, frames[i + 1] the position
  ** where frames[i]'s function was inlined, the last one in the kernel's
  ** own code (its outermost location). frame_count is 0 without a source
  ** position, 1 when nothing is inlined. */
  uint32_t frame_count;
  /* The index of the frame to report the instruction at in the user's
  ** code: the innermost one whose file is not library code
  ** (kdb_set_library_files), else the outermost. 0 when frame_count is 0. */
  uint32_t user_frame;
  const kdb_frame *frames;
} kdb_insn;

typedef struct kdb_isa {
  size_t count;
  const kdb_insn *insns;
  int has_lines; /* 1 when the code object has a DWARF line table */
} kdb_isa;

/* Opens the file at path. On success *out is a database to free with
** kdb_close(). Unreadable or malformed input: -1 with a message. */
int kdb_open(const char *path, kdb **out, char *err, size_t errlen);

/* Same as kdb_open(), reading only the AMDGPU code objects of arch (a bare
** arch: "gfx908"; NULL reads all) from offload bundles, whose entries name
** their target: a tool that wants one target of a library of many (Debian's
** librocsparse: seven) keeps a seventh of the metadata in memory. The
** others keep their place (index), vendor, arch, target, triple, container
** and image, with no kernels and no sites; their damage is not seen. */
int kdb_open_arch(const char *path, const char *arch, kdb **out, char *err, size_t errlen);

/* Same as kdb_open() over a caller-owned buffer that must outlive the
** database; name is used in messages. */
int kdb_open_memory(const void *data, size_t size, const char *name, kdb **out, char *err,
                    size_t errlen);

/* Upper bound on the bytes one compressed bundle may decompress to; larger
** claims are rejected. Default 2 GiB; process-wide, applies to databases
** opened afterwards. Returns the previous value. Independently, a claim over
** 64 MiB + 4096 times the compressed size is rejected. */
uint64_t kdb_set_decompress_limit(uint64_t bytes);

void kdb_close(kdb *db);

/* The input's name as given to kdb_open(). */
const char *kdb_name(const kdb *db);

size_t kdb_code_object_count(const kdb *db);
/* Code objects of a file of several (bundle entries, fat binary entries) that
** could not be read: the others are open; each message says which one and
** what is wrong ("lib.so: .hip_fatbin bundle 0 entry 3: ..."). A file whose
** every code object is damaged does not open (kdb_open fails with the first
** message). */
size_t kdb_damaged_count(const kdb *db);
const char *kdb_damaged_message(const kdb *db, size_t i);
const kdb_code_object *kdb_code_object_at(const kdb *db, size_t i);
/* Its ELF image (co->image_size bytes, decompressed where the bundle was),
** valid while db is open. */
const void *kdb_code_object_image(const kdb *db, const kdb_code_object *co);

/* A module-scope variable a code object defines (CUDA/HIP __device__ and
** __constant__ variables: the ELF's defined object symbols of allocated,
** non-executable sections, but shared memory and kernel parameter banks). */
typedef struct kdb_global {
  const char *name; /* the symbol, valid while db is open */
  uint64_t size;
  int writable; /* kernels may write it (__device__), else read-only (__constant__) */
} kdb_global;

/* The variables co defines: the number of them, the first cap of them in
** out (in symbol table order); -1 with a message when its symbol table
** cannot be read. */
long kdb_code_object_globals(kdb *db, const kdb_code_object *co, kdb_global *out, size_t cap,
                             char *err, size_t errlen);

/* Every kernel of every code object, in code-object order. */
size_t kdb_kernel_count(const kdb *db);
const kdb_kernel *kdb_kernel_at(const kdb *db, size_t i);

/* Kernels named by query: an exact mangled or demangled name, else a prefix
** of either (or of the demangled name without a template's return type,
** "scale<int>(int*)" for "void scale<int>(int*)"), else a substring of
** either ("gemm_tn"), that names exactly one distinct kernel (by mangled name). arch,
** when not NULL, keeps only code objects of that target (kdb_target_matches). Fills out[0..cap)
*with
** the matches (one per code object holding the kernel) and returns their
** number; 0 when no kernel matches. When a prefix matches several distinct
** kernels, returns -(number of distinct names) and fills out with one
** kernel of each. */
long kdb_find_kernels(const kdb *db, const char *query, const char *arch, const kdb_kernel **out,
                      size_t cap);

/* Completes the argument names and C types of k's code object's kernels
** from DWARF where the metadata has none (hipcc -g records neither,
** -fhip-kernel-arg-name names only, nvcc -G cubins neither): the kernel's
** DW_TAG_subprogram, found by linkage name, gives `x: const float *`. Once
** per code object (later calls return at once); nothing without DWARF. Call
** it before reading k->args[].name/type_name from several threads. */
void kdb_kernel_arg_names(kdb *db, const kdb_kernel *k);

/* The ISA of an AMDGPU kernel, disassembled on first use and cached.
** -1 with a message for kernels without code (NVIDIA) or when the
** disassembler cannot be created for the target. */
int kdb_kernel_isa(kdb *db, const kdb_kernel *k, const kdb_isa **out, char *err, size_t errlen);

/* Which source files are library code (system and toolkit headers), for
** kdb_insn.user_frame: a POSIX extended regular expression matched against
** normalised paths ("a/../b" is "b"); NULL restores the default, the one the
** plugin uses for host atomics (NANO_ATOMICS_LIBRARY_FILES, nano/path.h).
** Applies to kernels disassembled afterwards; not to be called while another
** thread disassembles. 0, or -1 with a message for a malformed pattern (the
** setting is unchanged). */
int kdb_set_library_files(kdb *db, const char *pattern, char *err, size_t errlen);

/* The ISA cache. By default every ISA stays until kdb_close(): a tool that
** walks a large library's kernels holds them all (rocsparse's one target:
** 2.6 GB). kdb_kernel_isa_release() frees one kernel's ISA now (pointers into
** it become invalid; the next kdb_kernel_isa() disassembles again): the CLI
** releases each kernel after printing it. kdb_set_isa_cache_limit() bounds
** the cached bytes instead: past the limit the least recently used ISAs are
** freed, except the two most recently used, so an ISA pointer then stays
** valid only until the second later kdb_kernel_isa() call (for streaming
** consumers; kdb_site_insns() keeps working). 0 (the default) is no bound.
** Returns the previous limit. kdb_isa_cache_bytes() is what is cached now. */
void kdb_kernel_isa_release(kdb *db, const kdb_kernel *k);
/* Frees what disassembling co's kernels built: their ISAs, co's line table,
** inlining ranges, DWARF and disassembler (built again when needed). For a
** tool that walks a library one code object at a time (the CLI). */
void kdb_code_object_release(kdb *db, const kdb_code_object *co);
uint64_t kdb_set_isa_cache_limit(kdb *db, uint64_t bytes);
uint64_t kdb_isa_cache_bytes(kdb *db);

/* Indices into isa->insns of the instructions attributed to file:line; file
** matches the DWARF path exactly or as a trailing path component ("k.hip"
** matches "/src/k.hip"). Writes up to cap indices, returns the total count. */
size_t kdb_isa_line_insns(const kdb_isa *isa, const char *file, uint32_t line, size_t *idx,
                          size_t cap);

/* Memory classification of one AMDGPU mnemonic (used by kdb_kernel_isa, and
** by tools that map instrumentation records back to instructions). */
void kdb_classify_mnemonic(const char *mnemonic, kdb_mem_space *space, kdb_mem_op *op,
                           uint32_t *width);

const char *kdb_mem_space_name(kdb_mem_space s);
const char *kdb_mem_op_name(kdb_mem_op o);
const char *kdb_feature_name(kdb_feature f);

/* Parses a target as `kerneldb list` prints it: an arch ("gfx90a", "sm_90")
** with AMDGPU features after colons in any order ("gfx90a:xnack+",
** "gfx90a:sramecc-:xnack-"). Writes the arch into arch[0..n) and each
** feature's wanted state (KDB_FEATURE_ON for '+', _OFF for '-', _ANY when
** not named). 0, or -1 with err set for a malformed target or an unknown
** feature. */
int kdb_target_parse(const char *target, char *arch, size_t n, kdb_feature *xnack,
                     kdb_feature *sramecc, char *err, size_t errlen);
/* 1 when code object co is of `target` (kdb_target_parse): the same arch
** and, for each feature the target names, that state; a bare arch matches
** every feature setting. 0 otherwise, also for a malformed target. */
int kdb_target_matches(const kdb_code_object *co, const char *target);

/* ---- nanoprobe site tables --------------------------------------------------
** The pass records every instrumented memory access (a site) in a table per
** module (dh_comms/README.md, "Site table"); records carry the site's id.
** kerneldb reads the tables of AMDGPU code objects, cubins and host ELF files
** (CPU kernels) and maps a site to the instructions that implement it. */
typedef struct kdb_site {
  uint64_t id;               /* module id << 32 | index, as records carry it */
  const kdb_code_object *co; /* holder of the table; NULL: the host ELF (CPU kernels) */
  const char *function;      /* kernel, or device function for cloned callees (mangled) */
  const char *demangled;
  const char *file; /* "" without debug info */
  uint32_t line, column;
  uint8_t kind;      /* 1 load, 2 store, 3 atomic (NANO_DH_KIND_*) */
  uint8_t addrspace; /* 0 generic, 1 global, 3 shared/LDS, 4 constant */
  uint8_t flags;     /* 1 memory intrinsic, 2 masked, 4 AMDGPU buffer */
  uint32_t size;     /* bytes per lane as the IR accesses; 0 = per record */
} kdb_site;

/* Every site of every table, ordered by id. */
size_t kdb_site_count(const kdb *db);
const kdb_site *kdb_site_at(const kdb *db, size_t i);
/* The site a record's id names, or NULL. */
const kdb_site *kdb_site_find(const kdb *db, uint64_t id);

/* One instruction of a site: insn is an element of kdb_kernel_isa(kernel). */
typedef struct kdb_site_insn {
  const kdb_kernel *kernel;
  const kdb_insn *insn;
} kdb_site_insn;

/* The instructions of site s: the memory instructions of its kernel's
** original and of the twin whose DWARF position is the site's file, line
** and column and whose operation is the site's kind (LDS for shared sites,
** any other space otherwise). Writes up to cap and returns their number;
** -1 with a message where there is no ISA to search: host ELF sites,
** NVIDIA code objects, sites without debug information, sites of device
** functions that are no kernel of the code object. */
long kdb_site_insns(kdb *db, const kdb_site *s, kdb_site_insn *out, size_t cap, char *err,
                    size_t errlen);

/* What the original kernel's machine code makes of site s. */
typedef enum kdb_site_isa {
  KDB_SITE_ISA_UNKNOWN = 0, /* no ISA to compare (see kdb_site_insns), or no
                               instruction at the site's position and no
                               widened neighbour to have taken it */
  KDB_SITE_ISA_SAME,        /* its instruction moves the IR's size or less */
  KDB_SITE_ISA_WIDER,       /* the backend merged accesses: *width > s->size */
  KDB_SITE_ISA_MERGED       /* no instruction of its own: folded into a neighbour's */
} kdb_site_isa;
/* Compares s with the original kernel's instructions; *width gets the bytes
** per lane of the instruction that implements s (0 where none). Sites at one
** source position share its instructions in order (kdb_sites.c says how). */
kdb_site_isa kdb_site_isa_width(kdb *db, const kdb_site *s, uint32_t *width);

/* The twin name of a kernel under the device-instrumentation naming rule;
** malloc'd, NULL on allocation failure. */
char *kdb_twin_name(const char *kernel_name);

#ifdef __cplusplus
}
#endif

#endif /* KERNELDB_H */
