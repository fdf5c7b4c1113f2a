/*
** kerneldb internals shared between the library's source files.
**
** A database owns: the input bytes (a private read-only mapping or the
** caller's buffer), decompressed bundle payloads, one arena holding every
** string and array built at open time, and per code object the lazily built
** state (ELF handle, DWARF, disassembler, per-kernel ISA) behind a mutex.
*/
#ifndef KDB_INTERNAL_H
#define KDB_INTERNAL_H

#include "kerneldb.h"

#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <regex.h>
#include <stdarg.h>
#include <stdatomic.h>

/* ---- arena: bump allocator freed as a whole ------------------------------ */
typedef struct kdb_arena_block kdb_arena_block;
typedef struct kdb_arena {
  kdb_arena_block *head;
} kdb_arena;

void *kdb_arena_alloc(kdb_arena *a, size_t n); /* zeroed, NULL on OOM */
char *kdb_arena_strndup(kdb_arena *a, const char *s, size_t n);
char *kdb_arena_strdup(kdb_arena *a, const char *s);
void kdb_arena_free(kdb_arena *a);

/* ---- error messages ------------------------------------------------------ */
typedef struct kdb_err {
  char *buf;
  size_t len;
} kdb_err;

/* Writes "<name>: <fmt...>" into e (if any); always returns -1. */
int kdb_fail(kdb_err *e, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- growable arrays ----------------------------------------------------- */
/* Ensures *p (elements of size esz) has room for need elements; 0 or -1. */
int kdb_reserve(void **p, size_t *cap, size_t need, size_t esz);

/* Sorts n elements of esz bytes (at most KDB_SORT_MAX_ELEMENT) in place, by
** cmp, which must be a total order (equal elements are not kept in order):
** a heapsort, which needs no memory besides the array, where qsort's merge
** sort takes a copy of it (6 MB of a line table's rows at its peak). */
#define KDB_SORT_MAX_ELEMENT 64
void kdb_sort(void *base, size_t n, size_t esz, int (*cmp)(const void *, const void *));

/* ---- lazily built per-code-object state ---------------------------------- */
typedef struct kdb_linerow {
  uint64_t addr;
  const char *file; /* NULL: end of a sequence (no position from here) */
  uint32_t line, column;
} kdb_linerow;

typedef struct kdb_inline_range {
  uint64_t lo, hi; /* [lo, hi) */
  unsigned depth;
  uint32_t seq; /* the walk's order: ties of (lo, depth) keep it */
  const char *func;
  kdb_srcpos call;
} kdb_inline_range;

typedef struct kdb_kernel_priv {
  kdb_kernel pub;
  _Atomic(kdb_isa *) isa; /* built under co->lock; freed by release/eviction */
  /* the ISA cache's recency list (under db->isa_lock) and the ISA's bytes */
  struct kdb_kernel_priv *lru_prev, *lru_next;
  size_t isa_bytes;
  int in_lru;
} kdb_kernel_priv;

typedef struct kdb_co_priv {
  kdb_code_object pub;
  const uint8_t *image; /* the ELF image (inside the input or a payload) */
  size_t image_size;
  Elf *elf; /* libelf handle on image; used under lock after open */
  uint64_t text_addr, text_size, text_offset; /* the executable section */
  pthread_mutex_t lock;
  int lines_built;   /* lines and inline ranges, under lock */
  kdb_arena strings; /* the line table's and inlined ranges' names, copied from DWARF */
  kdb_linerow *lines;
  size_t nlines;
  kdb_inline_range *inl;
  size_t ninl;
  void *disasm; /* LLVMDisasmContextRef, created on first use */
  int disasm_failed;
  int args_filled;     /* kdb_kernel_arg_names ran, under lock */
  int unread;          /* of another arch than kdb_open_arch's: kept for its place */
  size_t first_kernel; /* its kernels: db->kernels[first_kernel .. + kernel_count) */
} kdb_co_priv;

struct kdb {
  char *name;
  pthread_mutex_t isa_lock;  /* the ISA cache: list, bytes, limit */
  kdb_kernel_priv *lru_head; /* most recently used first */
  kdb_kernel_priv *lru_tail;
  size_t lru_count;
  uint64_t isa_bytes;
  _Atomic uint64_t isa_limit; /* 0: unbounded */
  regex_t library;            /* library files (kdb_set_library_files) */
  int library_ok;             /* library holds a compiled pattern */
  const uint8_t *data;
  size_t size;
  char *only_arch; /* kdb_open_arch's arch: bundle entries of others are skipped */
  void *map;       /* mmap'd input, or NULL */
  size_t map_size;
  kdb_arena arena;
  const char **shared; /* kdb_shared_str's strings (in arena): open addressing */
  size_t shared_cap, shared_n;
  void **payloads; /* decompressed bundles, malloc'd */
  size_t npayloads, cap_payloads;
  kdb_co_priv **cos;
  size_t ncos, cap_cos;
  kdb_kernel_priv **kernels; /* all kernels, code-object order */
  size_t nkernels, cap_kernels;
  uint64_t decompress_limit;
  int host_elf;    /* the input is a host ELF file (its own sites count) */
  kdb_site *sites; /* every site table's sites, by id (kdb_sites.c) */
  size_t nsites, cap_sites;
  const char **damaged; /* messages of code objects that could not be read */
  size_t ndamaged, cap_damaged;
};

/* The n bytes at s as a string of db's arena, one copy per distinct value
** (arguments' names, types and kinds repeat across thousands of kernels);
** NULL when out of memory. */
const char *kdb_shared_str(kdb *db, const char *s, size_t n);

/* Format readers, each adds code objects/kernels to db. */
int kdb_read_input(kdb *db, kdb_err *e);
/* Checks that an ELF64 image of n bytes holds its header, section header
** table and program header table (a truncated file fails here, saying so,
** instead of looking like one without GPU code). `what` names the image in
** the message ("file", a bundle entry). 0, or -1 after kdb_fail. */
int kdb_elf_check(kdb *db, const uint8_t *img, size_t n, const char *what, kdb_err *e);
/* The longest message kept for a damaged code object. */
#define KDB_DAMAGED_MSG 512
/* Reads one code object of a file of several (an AMDGPU one when `amdgpu`,
** else a cubin): a damaged one is noted in db->damaged (kdb_damaged_message)
** and dropped, so that the others are read. 0, or -1 when even that cannot
** be noted (out of memory). */
/* Gives back the resident pages of [p, p + n) that lie wholly inside the
** input's mapping (read-only file pages: touched again, they are read again
** from the file, and pointers into them stay valid), so that a walk over a
** large library keeps resident only what it reads now. Nothing for input
** read into memory. */
void kdb_map_release(const kdb *db, const void *p, size_t n);
int kdb_read_entry(kdb *db, const uint8_t *p, size_t n, const char *where, const char *triple,
                   int compressed, int amdgpu, kdb_err *e);
int kdb_amdgpu_read(kdb *db, const uint8_t *img, size_t n, const char *container,
                    const char *triple, int compressed, kdb_err *e);
int kdb_cuda_read_cubin(kdb *db, const uint8_t *img, size_t n, const char *container, kdb_err *e);
int kdb_cuda_read_fatbin(kdb *db, const uint8_t *p, size_t n, const char *container, kdb_err *e);

/* Reads the site tables of every code object (and of the input itself when
** it is a host ELF file). 0 or -1. */
int kdb_read_sites(kdb *db, kdb_err *e);

/* Adds a code object / kernel record owned by db. NULL on OOM. */
kdb_co_priv *kdb_add_co(kdb *db);
kdb_kernel_priv *kdb_add_kernel(kdb *db, kdb_co_priv *co);

/* Demangled form of name in db's arena; name itself when not mangled. */
const char *kdb_demangle(kdb *db, const char *name);

/* Pairs originals and twins among the kernels [first, db->nkernels). */
void kdb_pair_twins(kdb *db, size_t first);

/* Validates that a msgpack buffer is well-formed and every container count
** fits in the remaining bytes (so unpacking allocates O(n)). 0 or -1. */
int kdb_msgpack_check(const uint8_t *p, size_t n);

/* Alignment of an argument that records none: the largest power of two up
** to 16 and up to its size (rounded up) that divides its offset. */
uint32_t kdb_natural_align(uint32_t offset, uint32_t size);

/* Frees the lazily built state of a code object. */
void kdb_co_free_lazy(kdb_co_priv *co);

#endif /* KDB_INTERNAL_H */
