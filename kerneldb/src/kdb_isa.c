/*
** kerneldb: ISA of one AMDGPU kernel, on demand.
**
** kdb_kernel_isa() disassembles the bytes from a kernel's entry to the next
** symbol with LLVM's C disassembler (one context per code object, created on
** first use), splits each instruction into mnemonic and operands, classifies
** memory instructions from the mnemonic, and attaches the DWARF line-table
** position and the whole inlining chain (libdw), with the frame to report in
** the user's code (the innermost outside library files). The line table and
** the inlined ranges are read once per code object. All of it happens under the code
** object's mutex; the finished kdb_isa is published with a release store so
** later readers need no lock.
*/
#define _GNU_SOURCE
#include "kdb_internal.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <llvm-c/Disassembler.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nano/path.h"
#include "nano/symbols.h"

/* The functions of libLLVM used (kdb_isa_init_llvm resolves them). */
static struct {
  int usable;
  void (*InitTargetInfo)(void);
  void (*InitTargetMC)(void);
  void (*InitDisassembler)(void);
  __typeof__(&LLVMCreateDisasmCPUFeatures) CreateDisasmCPUFeatures;
  __typeof__(&LLVMDisasmInstruction) DisasmInstruction;
  __typeof__(&LLVMDisasmDispose) DisasmDispose;
} kdb_llvm;

/* ---- memory classification ------------------------------------------------- */
static int kdb_isa_has_prefix(const char *s, const char *p) {
  return strncmp(s, p, strlen(p)) == 0;
}

/* Width in bytes named by one '_'-separated mnemonic token; 0 if none. */
static uint32_t kdb_isa_token_width(const char *t, size_t n) {
  static const struct {
    const char *tok;
    uint32_t w;
  } tab[] = {
      {"dword", 4},     {"dwordx2", 8}, {"dwordx3", 12}, {"dwordx4", 16}, {"dwordx8", 32},
      {"dwordx16", 64}, {"ubyte", 1},   {"sbyte", 1},    {"byte", 1},     {"u8", 1},
      {"i8", 1},        {"b8", 1},      {"ushort", 2},   {"sshort", 2},   {"short", 2},
      {"u16", 2},       {"i16", 2},     {"b16", 2},      {"f16", 2},      {"bf16", 2},
      {"b32", 4},       {"u32", 4},     {"i32", 4},      {"f32", 4},      {"b64", 8},
      {"u64", 8},       {"i64", 8},     {"f64", 8},      {"b96", 12},     {"b128", 16},
      {"b256", 32},     {"b512", 64},   {"x2", 8},       {"pk", 4},
  };
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
    if (strlen(tab[i].tok) == n && memcmp(tab[i].tok, t, n) == 0)
      return tab[i].w;
  return 0;
}

void kdb_classify_mnemonic(const char *m, kdb_mem_space *space, kdb_mem_op *op, uint32_t *width) {
  kdb_mem_space sp = KDB_MEM_NONE;
  kdb_mem_op o = KDB_MEMOP_NONE;
  uint32_t w = 0;
  if (kdb_isa_has_prefix(m, "global_"))
    sp = KDB_MEM_GLOBAL;
  else if (kdb_isa_has_prefix(m, "flat_"))
    sp = KDB_MEM_FLAT;
  else if (kdb_isa_has_prefix(m, "scratch_"))
    sp = KDB_MEM_SCRATCH;
  else if (kdb_isa_has_prefix(m, "buffer_") || kdb_isa_has_prefix(m, "tbuffer_"))
    sp = KDB_MEM_BUFFER;
  else if (kdb_isa_has_prefix(m, "ds_"))
    sp = KDB_MEM_LDS;
  else if (kdb_isa_has_prefix(m, "s_load_") || kdb_isa_has_prefix(m, "s_buffer_load_") ||
           kdb_isa_has_prefix(m, "s_store_") || kdb_isa_has_prefix(m, "s_buffer_store_") ||
           kdb_isa_has_prefix(m, "s_atomic_") || kdb_isa_has_prefix(m, "s_buffer_atomic_") ||
           kdb_isa_has_prefix(m, "s_scratch_load_") || kdb_isa_has_prefix(m, "s_scratch_store_"))
    sp = KDB_MEM_SCALAR;
  if (sp != KDB_MEM_NONE) {
    if (strstr(m, "atomic"))
      o = KDB_MEMOP_ATOMIC;
    else if (strstr(m, "_load") || kdb_isa_has_prefix(m, "ds_read"))
      o = KDB_MEMOP_LOAD;
    else if (strstr(m, "_store") || kdb_isa_has_prefix(m, "ds_write_") ||
             kdb_isa_has_prefix(m, "ds_write2"))
      o = KDB_MEMOP_STORE;
    else if (sp == KDB_MEM_LDS && !kdb_isa_has_prefix(m, "ds_swizzle") &&
             !kdb_isa_has_prefix(m, "ds_permute") && !kdb_isa_has_prefix(m, "ds_bpermute") &&
             !kdb_isa_has_prefix(m, "ds_nop") && !kdb_isa_has_prefix(m, "ds_gws") &&
             !kdb_isa_has_prefix(m, "ds_sema") && !kdb_isa_has_prefix(m, "ds_ordered") &&
             !kdb_isa_has_prefix(m, "ds_bvh"))
      o = KDB_MEMOP_ATOMIC; /* ds_add_u32, ds_cmpst_b32, ds_wrxchg_rtn_b64, ds_append, ... */
  }
  if (o == KDB_MEMOP_NONE) {
    sp = KDB_MEM_NONE;
  } else {
    uint32_t mult = 1, comps = 0;
    int d16 = 0, format = 0;
    const char *t = m;
    while (*t) {
      size_t n = strcspn(t, "_");
      if (!w)
        w = kdb_isa_token_width(t, n);
      if (n == 3 && memcmp(t, "d16", 3) == 0)
        d16 = 1;
      if (n == 6 && memcmp(t, "format", 6) == 0)
        format = 1;
      if (format && n >= 1 && n <= 4 && memcmp(t, "xyzw", n) == 0)
        comps = (uint32_t)n;
      if ((n >= 5 && memcmp(t, "read2", 5) == 0) || (n >= 6 && memcmp(t, "write2", 6) == 0) ||
          (n == 5 && memcmp(t, "2addr", 5) == 0))
        mult = 2;
      t += n;
      if (*t == '_')
        t++;
    }
    if (comps)
      w = comps * (d16 ? 2 : 4);
    if (!w)
      w = 4; /* dword-sized defaults: global_atomic_add, ds_append */
    w *= mult;
  }
  *space = sp;
  *op = o;
  *width = w;
}

const char *kdb_mem_space_name(kdb_mem_space s) {
  static const char *n[] = {"none", "global", "flat", "scratch", "lds", "buffer", "scalar"};
  return (unsigned)s < sizeof n / sizeof n[0] ? n[s] : "none";
}

const char *kdb_mem_op_name(kdb_mem_op o) {
  static const char *n[] = {"none", "load", "store", "atomic"};
  return (unsigned)o < sizeof n / sizeof n[0] ? n[o] : "none";
}

/* ---- DWARF ------------------------------------------------------------------- */
typedef struct kdb_rowkey {
  kdb_linerow row;
  size_t seq; /* input order, for a stable sort */
} kdb_rowkey;

static int kdb_isa_rowcmp(const void *a, const void *b) {
  const kdb_rowkey *x = a, *y = b;
  if (x->row.addr != y->row.addr)
    return x->row.addr < y->row.addr ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

_Static_assert(sizeof(kdb_rowkey) <= KDB_SORT_MAX_ELEMENT, "kdb_sort takes line rows");
_Static_assert(sizeof(kdb_inline_range) <= KDB_SORT_MAX_ELEMENT, "kdb_sort takes inline ranges");

static int kdb_isa_inlcmp(const void *a, const void *b) {
  const kdb_inline_range *x = a, *y = b;
  if (x->lo != y->lo)
    return x->lo < y->lo ? -1 : 1;
  if (x->depth != y->depth)
    return x->depth < y->depth ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Copies of DWARF's strings (file and function names) in the code object's
** own arena, each copied once: libdw's memory (19 MB for one of
** librocsparse's line tables) goes as soon as the tables are built. */
typedef struct kdb_names {
  kdb_arena *arena;
  const char **from, **to; /* open addressing on the DWARF pointer */
  size_t cap, n;
  int oom;
} kdb_names;

#define KDB_INTERN_INITIAL 256

static size_t kdb_intern_slot(const char *const *from, size_t cap, const char *s) {
  size_t i = ((uintptr_t)s >> 3) * 0x9E3779B97F4A7C15ull & (cap - 1);
  while (from[i] && from[i] != s)
    i = (i + 1) & (cap - 1);
  return i;
}

/* The copy of s (NULL for NULL); NULL and t->oom set when out of memory. */
static const char *kdb_intern(kdb_names *t, const char *s) {
  if (!s || t->oom)
    return NULL;
  if (2 * (t->n + 1) > t->cap) {
    size_t cap = t->cap ? 2 * t->cap : KDB_INTERN_INITIAL;
    const char **from = calloc(cap, sizeof *from), **to = calloc(cap, sizeof *to);
    if (!from || !to) {
      free(from);
      free(to);
      t->oom = 1;
      return NULL;
    }
    for (size_t i = 0; i < t->cap; i++)
      if (t->from[i]) {
        size_t j = kdb_intern_slot(from, cap, t->from[i]);
        from[j] = t->from[i];
        to[j] = t->to[i];
      }
    free(t->from);
    free(t->to);
    t->from = from;
    t->to = to;
    t->cap = cap;
  }
  size_t i = kdb_intern_slot(t->from, t->cap, s);
  if (!t->from[i]) {
    if (!(t->to[i] = kdb_arena_strdup(t->arena, s))) {
      t->oom = 1;
      return NULL;
    }
    t->from[i] = s;
    t->n++;
  }
  return t->to[i];
}

typedef struct kdb_inl_acc {
  kdb_inline_range *v;
  size_t n, cap;
  int oom;
  kdb_names *names;
} kdb_inl_acc;

/* The inlined ranges' array grows by a quarter (at least this many): it is
** alive with libdw's line table at the line tables' peak, where doubling
** left up to 6 MB of librocsparse's largest unused. */
#define KDB_INL_GROW_MIN 1024

/* Grows acc's array; 0, or -1 when out of memory. */
static int kdb_isa_acc_grow(kdb_inl_acc *acc) {
  size_t cap = acc->cap + (acc->cap / 4 > KDB_INL_GROW_MIN ? acc->cap / 4 : KDB_INL_GROW_MIN);
  kdb_inline_range *v = realloc(acc->v, cap * sizeof *v);
  if (!v)
    return -1;
  acc->v = v;
  acc->cap = cap;
  return 0;
}

/* Collects DW_TAG_inlined_subroutine ranges below die (depth-bounded). */
static void kdb_isa_walk(Dwarf_Die *die, Dwarf_Files *files, size_t nfiles, unsigned depth,
                         unsigned level, kdb_inl_acc *acc) {
  if (level > 128 || acc->oom)
    return;
  Dwarf_Die child;
  if (dwarf_child(die, &child) != 0)
    return;
  do {
    unsigned d = depth;
    if (dwarf_tag(&child) == DW_TAG_inlined_subroutine) {
      d = depth + 1;
      Dwarf_Attribute at;
      Dwarf_Word cf = 0, cl = 0, cc = 0;
      const char *file = NULL;
      if (dwarf_attr(&child, DW_AT_call_file, &at) && dwarf_formudata(&at, &cf) == 0 && files &&
          cf < nfiles)
        file = dwarf_filesrc(files, cf, NULL, NULL);
      if (!dwarf_attr(&child, DW_AT_call_line, &at) || dwarf_formudata(&at, &cl) != 0)
        cl = 0;
      if (!dwarf_attr(&child, DW_AT_call_column, &at) || dwarf_formudata(&at, &cc) != 0)
        cc = 0;
      const char *fn = dwarf_diename(&child);
      Dwarf_Addr base, lo, hi;
      ptrdiff_t off = 0;
      int guard = 0;
      while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0 && guard++ < 4096) {
        if (hi <= lo)
          continue;
        if (acc->n == acc->cap && kdb_isa_acc_grow(acc)) {
          acc->oom = 1;
          return;
        }
        acc->v[acc->n] =
            (kdb_inline_range){lo,
                               hi,
                               d,
                               (uint32_t)acc->n,
                               kdb_intern(acc->names, fn),
                               {kdb_intern(acc->names, file), (uint32_t)cl, (uint32_t)cc}};
        acc->n++;
      }
    }
    kdb_isa_walk(&child, files, nfiles, d, level + 1, acc);
  } while (dwarf_siblingof(&child, &child) == 0);
}

/* Reads the line table and inlined ranges of co (caller holds co->lock). */
static void kdb_isa_build_lines(kdb_co_priv *co) {
  co->lines_built = 1;
  Dwarf *dw = dwarf_begin_elf(co->elf, DWARF_C_READ, NULL);
  if (!dw)
    return; /* no DWARF: instructions carry no source positions */
  kdb_rowkey *rows = NULL;
  size_t n = 0, cap = 0;
  kdb_names names = {.arena = &co->strings};
  kdb_inl_acc acc = {.names = &names};
  Dwarf_CU *cu = NULL;
  Dwarf_Die cudie;
  int guard = 0;
  while (dwarf_get_units(dw, cu, &cu, NULL, NULL, &cudie, NULL) == 0 && guard++ < 100000) {
    Dwarf_Lines *lines;
    size_t nl;
    if (dwarf_getsrclines(&cudie, &lines, &nl) != 0)
      continue;
    /* the CU's rows at once: doubling would leave up to half the array unused */
    if (n + nl > cap) {
      kdb_rowkey *grown = realloc(rows, (n + nl) * sizeof *rows);
      if (!grown)
        goto oom;
      rows = grown;
      cap = n + nl;
    }
    for (size_t i = 0; i < nl; i++) {
      Dwarf_Line *l = dwarf_onesrcline(lines, i);
      Dwarf_Addr a;
      int ln = 0, col = 0;
      bool end = false;
      if (!l || dwarf_lineaddr(l, &a) != 0 || dwarf_lineno(l, &ln) != 0 ||
          dwarf_lineendsequence(l, &end) != 0)
        continue;
      if (dwarf_linecol(l, &col) != 0)
        col = 0;
      const char *f = end ? NULL : kdb_intern(&names, dwarf_linesrc(l, NULL, NULL));
      if (names.oom)
        goto oom;
      rows[n].row = (kdb_linerow){a, f, ln > 0 ? (uint32_t)ln : 0, col > 0 ? (uint32_t)col : 0};
      if (!f && !end)
        rows[n].row.file = "";
      rows[n].seq = n;
      n++;
    }
    Dwarf_Files *files = NULL;
    size_t nfiles = 0;
    if (dwarf_getsrcfiles(&cudie, &files, &nfiles) != 0)
      files = NULL;
    kdb_isa_walk(&cudie, files, nfiles, 0, 0, &acc);
  }
  dwarf_end(dw); /* the tables hold copies of its strings: its memory goes before the sorts */
  if (n) {
    /* sorted in place, then packed in place into the table (a row is
     * smaller than its key, so each lands at or before where it was read) */
    kdb_sort(rows, n, sizeof *rows, kdb_isa_rowcmp);
    kdb_linerow *packed = (kdb_linerow *)rows;
    for (size_t i = 0; i < n; i++)
      memmove(&packed[i], &rows[i].row, sizeof *packed); /* they may overlap */
    co->lines = realloc(rows, n * sizeof *co->lines);
    if (!co->lines)
      co->lines = packed; /* shrinking failed: the larger block serves */
    co->nlines = n;
    rows = NULL;
  }
  free(rows);
  free(names.from);
  free(names.to);
  if (acc.oom || names.oom) {
    free(acc.v);
  } else {
    kdb_sort(acc.v, acc.n, sizeof *acc.v, kdb_isa_inlcmp);
    co->inl = acc.v;
    co->ninl = acc.n;
  }
  return;
oom: /* no line table: instructions carry no source positions */
  free(rows);
  free(acc.v);
  free(names.from);
  free(names.to);
  dwarf_end(dw);
}

/* The line row in effect at addr (the last row at or before it), NULL when
** none or when addr follows the end of a sequence. */
static const kdb_linerow *kdb_isa_line_at(const kdb_co_priv *co, uint64_t addr) {
  size_t lo = 0, hi = co->nlines;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (co->lines[mid].addr <= addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0)
    return NULL;
  const kdb_linerow *r = &co->lines[lo - 1];
  return r->file ? r : NULL;
}

void kdb_co_free_lazy(kdb_co_priv *co) {
  free(co->lines);
  free(co->inl);
  co->lines = NULL;
  co->inl = NULL;
  co->nlines = co->ninl = 0;
  kdb_arena_free(&co->strings);
  if (co->disasm)
    kdb_llvm.DisasmDispose(co->disasm);
  co->disasm = NULL;
}

/* ---- disassembly ------------------------------------------------------------- */

/* LLVM 15's C disassembler, opened on the first disassembly: kerneldb's
** other answers (code objects, kernels, arguments, sites, lines) need no
** LLVM, so it loads where LLVM is not installed (the GPU runtime reads site
** tables through it on machines with CUDA alone). */
static pthread_once_t kdb_isa_once = PTHREAD_ONCE_INIT;

static void kdb_isa_init_llvm(void) {
  void *h = dlopen(KDB_LLVM_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    h = dlopen(KDB_LLVM_PATH, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return;
  static const struct nano_symbol fns[] = {
      NANO_SYMBOL(__typeof__(kdb_llvm), InitTargetInfo, LLVMInitializeAMDGPUTargetInfo),
      NANO_SYMBOL(__typeof__(kdb_llvm), InitTargetMC, LLVMInitializeAMDGPUTargetMC),
      NANO_SYMBOL(__typeof__(kdb_llvm), InitDisassembler, LLVMInitializeAMDGPUDisassembler),
      NANO_SYMBOL(__typeof__(kdb_llvm), CreateDisasmCPUFeatures, LLVMCreateDisasmCPUFeatures),
      NANO_SYMBOL(__typeof__(kdb_llvm), DisasmInstruction, LLVMDisasmInstruction),
      NANO_SYMBOL(__typeof__(kdb_llvm), DisasmDispose, LLVMDisasmDispose),
  };
  if (nano_symbols_resolve(h, fns, sizeof fns / sizeof fns[0], &kdb_llvm))
    return;
  kdb_llvm.InitTargetInfo();
  kdb_llvm.InitTargetMC();
  kdb_llvm.InitDisassembler();
  kdb_llvm.usable = 1;
}

/* True when LLVM 15's AMDGPU disassembler handles arch. It aborts the
** process (report_fatal_error) for GFX6/GFX7 and does not know later
** processors, so only these names reach it. */
static int kdb_isa_llvm15_cpu(const char *arch) {
  static const char *const ok[] = {"gfx801",  "gfx802",  "gfx803",  "gfx805",  "gfx810",  "gfx900",
                                   "gfx902",  "gfx904",  "gfx906",  "gfx908",  "gfx909",  "gfx90a",
                                   "gfx90c",  "gfx940",  "gfx1010", "gfx1011", "gfx1012", "gfx1013",
                                   "gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035",
                                   "gfx1036", "gfx1100", "gfx1101", "gfx1102", "gfx1103"};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
    if (strcmp(arch, ok[i]) == 0)
      return 1;
  return 0;
}

/* True when LLVM 15 would abort on the instruction at p (n bytes left):
** an SDWA operand word (src0 = 0xf9 in a VOP1/VOP2/VOPC word, GFX8 to GFX10)
** with a select field of 7, which its printer treats as unreachable
** (llvm-objdump-15 dies with SIGILL on such bytes). Found by fuzzing. */
static int kdb_isa_llvm15_aborts(const uint8_t *p, size_t n, int sdwa) {
  if (!sdwa || n < 8)
    return 0;
  uint32_t w = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  if ((w >> 31) != 0 || (w & 0x1ff) != 0xf9)
    return 0;
  uint32_t sd = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
  unsigned dst = (sd >> 8) & 7, src0 = (sd >> 16) & 7, src1 = (sd >> 24) & 7, enc = w >> 25;
  if (enc == 0x3e)
    return src0 == 7 || src1 == 7; /* VOPC: bits 8-15 are sdst */
  if (enc == 0x3f)
    return dst == 7 || src0 == 7;            /* VOP1 */
  return dst == 7 || src0 == 7 || src1 == 7; /* VOP2 */
}

/* Creates co's disassembler (caller holds co->lock). */
static int kdb_isa_disasm_ctx(kdb *db, kdb_co_priv *co, kdb_err *e) {
  if (co->disasm)
    return 0;
  if (co->disasm_failed)
    return kdb_fail(e, db->name, "%s: LLVM 15 cannot disassemble target %s", co->pub.container,
                    co->pub.arch);
  if (!kdb_isa_llvm15_cpu(co->pub.arch)) {
    co->disasm_failed = 1;
    return kdb_fail(e, db->name, "%s: LLVM 15 cannot disassemble target %s", co->pub.container,
                    co->pub.arch);
  }
  if (pthread_once(&kdb_isa_once, kdb_isa_init_llvm) != 0 || !kdb_llvm.usable)
    return kdb_fail(e, db->name,
                    "the AMDGPU disassembler (LLVM 15's %s, or %s) cannot be loaded: install "
                    "LLVM 15 (Debian: libllvm15)",
                    KDB_LLVM_SONAME, KDB_LLVM_PATH);
  char feat[64] = "";
  if (co->pub.xnack == KDB_FEATURE_ON || co->pub.xnack == KDB_FEATURE_OFF)
    strcat(feat, co->pub.xnack == KDB_FEATURE_ON ? "+xnack" : "-xnack");
  if (co->pub.sramecc == KDB_FEATURE_ON || co->pub.sramecc == KDB_FEATURE_OFF) {
    if (feat[0])
      strcat(feat, ",");
    strcat(feat, co->pub.sramecc == KDB_FEATURE_ON ? "+sramecc" : "-sramecc");
  }
  co->disasm = kdb_llvm.CreateDisasmCPUFeatures("amdgcn-amd-amdhsa", co->pub.arch, feat, NULL, 0,
                                                NULL, NULL);
  if (!co->disasm) {
    co->disasm_failed = 1;
    return kdb_fail(e, db->name, "%s: LLVM 15 cannot disassemble target %s", co->pub.container,
                    co->pub.arch);
  }
  return 0;
}

int kdb_set_library_files(kdb *db, const char *pattern, char *err, size_t errlen) {
  kdb_err e = {err, errlen};
  regex_t re;
  int rc = regcomp(&re, pattern ? pattern : NANO_LIBRARY_FILES_DEFAULT, REG_EXTENDED | REG_NOSUB);
  if (rc != 0) {
    char why[128];
    regerror(rc, &re, why, sizeof why);
    return kdb_fail(&e, db->name, "library files '%s': %s", pattern, why);
  }
  if (db->library_ok)
    regfree(&db->library);
  db->library = re;
  db->library_ok = 1;
  return 0;
}

/* Whether file is library code for db (kdb_new compiled the default). */
static int kdb_isa_library_file(kdb *db, const char *file) {
  if (!db->library_ok)
    return 0;
  char norm[4096];
  const char *p = nano_path_normalize(file, norm, sizeof norm) ? norm : file;
  return regexec(&db->library, p, 0, NULL, 0) == 0;
}

/* The deepest inlining this reader follows (DWARF nesting is bounded by
** kdb_isa_walk's 128 levels too). */
#define KDB_ISA_MAX_FRAMES 64

/* Appends the inlining chain of instruction `in` (src set) to *fv: the
** inlined ranges of co[first, last) that hold its address, deepest first.
** Returns the number of frames, or 0 when out of memory. */
/* The inlined ranges that hold the instructions of one kernel as they are
** visited in address order: those with lo at or below the address, in lo
** order, less those that ended before it (each range enters and leaves once:
** a kernel's instructions cost their nesting depth each, not the kernel's
** whole count of inlined ranges). */
struct kdb_isa_sweep {
  const kdb_inline_range *next, *end; /* not entered yet */
  const kdb_inline_range **active;
  size_t n, cap;
};

/* Moves s to address addr; -1 when out of memory. */
static int kdb_isa_sweep_to(struct kdb_isa_sweep *s, uint64_t addr) {
  size_t kept = 0;
  for (size_t i = 0; i < s->n; i++)
    if (s->active[i]->hi > addr)
      s->active[kept++] = s->active[i];
  s->n = kept;
  for (; s->next < s->end && s->next->lo <= addr; s->next++) {
    if (s->next->hi <= addr)
      continue;
    if (kdb_reserve((void **)&s->active, &s->cap, s->n + 1, sizeof *s->active))
      return -1;
    s->active[s->n++] = s->next;
  }
  return 0;
}

static uint32_t kdb_isa_chain(const kdb_kernel *k, const kdb_insn *in,
                              const struct kdb_isa_sweep *s, kdb_frame **fv, size_t *fn,
                              size_t *fcap) {
  const kdb_inline_range *hold[KDB_ISA_MAX_FRAMES];
  unsigned nhold = 0;
  /* every active range holds the instruction (kdb_isa_sweep_to) */
  for (size_t i = 0; i < s->n && nhold < KDB_ISA_MAX_FRAMES; i++) {
    const kdb_inline_range *ir = s->active[i];
    unsigned j = nhold++; /* keep hold sorted by depth, deepest first */
    while (j > 0 && hold[j - 1]->depth < ir->depth) {
      hold[j] = hold[j - 1];
      j--;
    }
    hold[j] = ir;
  }
  if (kdb_reserve((void **)fv, fcap, *fn + nhold + 1, sizeof **fv))
    return 0;
  kdb_frame *f = *fv + *fn;
  f[0].pos = in->src;
  for (unsigned j = 0; j < nhold; j++) {
    f[j].func = hold[j]->func ? hold[j]->func : "?";
    f[j + 1].pos = hold[j]->call;
  }
  f[nhold].func = k->demangled;
  *fn += nhold + 1;
  return nhold + 1;
}

/* Library-file answers kept while one kernel is disassembled: the frames'
** files are the line table's strings, a few of them per kernel, asked again
** at every instruction (a regex match each was 4 % of a library's walk). */
#define KDB_ISA_LIB_CACHE 64

/* Disassembles kernel k (caller holds co->lock). */
static kdb_isa *kdb_isa_build(kdb *db, kdb_co_priv *co, const kdb_kernel *k, kdb_err *e) {
  if (kdb_isa_disasm_ctx(db, co, e))
    return NULL;
  if (!co->lines_built)
    kdb_isa_build_lines(co);
  const uint8_t *code = co->image + co->text_offset + (k->code_addr - co->text_addr);
  size_t len = (size_t)k->code_size;
  /* Inlined ranges that can touch the kernel: sorted by lo, take lo < end. */
  size_t ilo = 0, ihi = co->ninl;
  uint64_t kend = k->code_addr + len;
  while (ilo < ihi) {
    size_t mid = (ilo + ihi) / 2;
    if (co->inl[mid].lo < k->code_addr)
      ilo = mid + 1;
    else
      ihi = mid;
  }
  size_t inl_last = ilo;
  while (inl_last < co->ninl && co->inl[inl_last].lo < kend)
    inl_last++;
  struct kdb_isa_sweep sweep = {co->inl ? co->inl + ilo : NULL, co->inl ? co->inl + inl_last : NULL,
                                NULL, 0, 0}; /* no inlined ranges: an empty sweep */
  /* library-file answers of the last files asked (the same few repeat) */
  const char *lib_file[KDB_ISA_LIB_CACHE] = {0};
  int lib_answer[KDB_ISA_LIB_CACHE] = {0};
  kdb_isa *isa = calloc(1, sizeof *isa);
  kdb_insn *v = NULL;
  char *text = NULL;
  kdb_frame *fv = NULL; /* every instruction's frames, in order */
  size_t n = 0, cap = 0, tlen = 0, tcap = 0, fn = 0, fcap = 0;
  if (!isa)
    goto oom;
  isa->has_lines = co->nlines > 0;
  /* SDWA exists from GFX8 to GFX10 (names gfx8xx, gfx9xx, gfx10xx). */
  int sdwa = strncmp(co->pub.arch, "gfx8", 4) == 0 || strncmp(co->pub.arch, "gfx9", 4) == 0 ||
             strncmp(co->pub.arch, "gfx10", 5) == 0;
  size_t pos = 0;
  while (pos < len) {
    /* Runs of 8 or more zero bytes are padding, skipped in multiples of 4
    ** as llvm-objdump does without --disassemble-zeroes. */
    size_t zeros = 0;
    while (pos + zeros < len && code[pos + zeros] == 0)
      zeros++;
    if (zeros >= 8) {
      pos += pos + zeros == len ? zeros : zeros & ~(size_t)3;
      continue;
    }
    char buf[256];
    size_t sz = kdb_isa_llvm15_aborts(code + pos, len - pos, sdwa)
                    ? 0
                    : kdb_llvm.DisasmInstruction(co->disasm, (uint8_t *)code + pos, len - pos,
                                                 k->code_addr + pos, buf, sizeof buf);
    const char *mn, *ops;
    size_t mnl, opl;
    if (sz == 0) {
      sz = len - pos < 4 ? len - pos : 4;
      mn = "<unknown>";
      mnl = strlen(mn);
      ops = "";
      opl = 0;
    } else {
      mn = buf + strspn(buf, " \t");
      mnl = strcspn(mn, " \t");
      ops = mn + mnl;
      ops += strspn(ops, " \t");
      opl = strlen(ops);
      while (opl && (ops[opl - 1] == ' ' || ops[opl - 1] == '\t'))
        opl--;
    }
    if (kdb_reserve((void **)&v, &cap, n + 1, sizeof *v) ||
        kdb_reserve((void **)&text, &tcap, tlen + mnl + opl + 2, 1))
      goto oom;
    kdb_insn *in = &v[n++];
    memset(in, 0, sizeof *in);
    in->addr = k->code_addr + pos;
    in->size = (uint32_t)sz;
    in->bytes = code + pos;
    /* Offsets into text now; pointers once text stops moving. */
    in->mnemonic = (const char *)(uintptr_t)tlen;
    memcpy(text + tlen, mn, mnl);
    text[tlen + mnl] = 0;
    in->operands = (const char *)(uintptr_t)(tlen + mnl + 1);
    memcpy(text + tlen + mnl + 1, ops, opl);
    text[tlen + mnl + 1 + opl] = 0;
    kdb_classify_mnemonic(text + tlen, &in->space, &in->op, &in->width);
    tlen += mnl + opl + 2;
    const kdb_linerow *r = co->nlines ? kdb_isa_line_at(co, in->addr) : NULL;
    /* Line 0 is DWARF's "no source line" (compiler-generated code). */
    if (r && r->file[0] && r->line)
      in->src = (kdb_srcpos){r->file, r->line, r->column};
    if (in->src.file) {
      /* frames: an offset into fv now, a pointer once fv stops moving */
      in->frames = (const kdb_frame *)(uintptr_t)fn;
      if (kdb_isa_sweep_to(&sweep, in->addr))
        goto oom;
      in->frame_count = kdb_isa_chain(k, in, &sweep, &fv, &fn, &fcap);
      if (in->frame_count == 0)
        goto oom;
      const kdb_frame *f = fv + (uintptr_t)in->frames;
      if (in->frame_count > 1) {
        in->inlined_func = f[0].func;
        in->inlined_at = f[1].pos;
      }
      in->user_frame = in->frame_count - 1;
      for (uint32_t j = 0; j + 1 < in->frame_count; j++) {
        const char *file = f[j].pos.file;
        if (!file)
          continue;
        size_t slot = ((uintptr_t)file >> 3) % KDB_ISA_LIB_CACHE;
        if (lib_file[slot] != file) {
          lib_file[slot] = file;
          lib_answer[slot] = kdb_isa_library_file(db, file);
        }
        if (!lib_answer[slot]) {
          in->user_frame = j;
          break;
        }
      }
    }
    pos += sz;
  }
  /* One allocation: instructions, their frames, their text. */
  kdb_insn *all = malloc(n * sizeof *v + fn * sizeof *fv + tlen + 1);
  if (!all)
    goto oom;
  kdb_frame *frames = (kdb_frame *)(all + n);
  if (fn)
    memcpy(frames, fv, fn * sizeof *fv);
  char *t = (char *)(frames + fn);
  if (tlen)
    memcpy(t, text, tlen);
  t[tlen] = 0;
  for (size_t i = 0; i < n; i++) {
    all[i] = v[i];
    all[i].mnemonic = t + (uintptr_t)v[i].mnemonic;
    all[i].operands = t + (uintptr_t)v[i].operands;
    all[i].frames = v[i].frame_count ? frames + (uintptr_t)v[i].frames : NULL;
  }
  free(v);
  free(text);
  free(fv);
  free(sweep.active);
  isa->insns = all;
  isa->count = n;
  ((kdb_kernel_priv *)k)->isa_bytes = sizeof *isa + n * sizeof *v + fn * sizeof *fv + tlen + 1;
  return isa;
oom:
  free(v);
  free(text);
  free(fv);
  free(sweep.active);
  free(isa);
  kdb_fail(e, db->name, "out of memory disassembling %s", k->name);
  return NULL;
}

/* ---- the ISA cache (see kerneldb.h) --------------------------------------- */

/* The ISAs the limit never evicts: the most recent ones, which a caller may
** still be using together (an original and its twin in kdb_site_insns). */
#define KDB_ISA_KEEP 2

/* Unlinks kp from the recency list (caller holds db->isa_lock). */
static void kdb_lru_unlink(kdb *db, kdb_kernel_priv *kp) {
  if (!kp->in_lru)
    return;
  *(kp->lru_prev ? &kp->lru_prev->lru_next : &db->lru_head) = kp->lru_next;
  *(kp->lru_next ? &kp->lru_next->lru_prev : &db->lru_tail) = kp->lru_prev;
  kp->lru_prev = kp->lru_next = NULL;
  kp->in_lru = 0;
  db->lru_count--;
  db->isa_bytes -= kp->isa_bytes;
}

/* Puts kp first in the recency list (caller holds db->isa_lock). */
static void kdb_lru_front(kdb *db, kdb_kernel_priv *kp) {
  if (kp->in_lru && db->lru_head == kp)
    return;
  kdb_lru_unlink(db, kp);
  kp->lru_next = db->lru_head;
  *(db->lru_head ? &db->lru_head->lru_prev : &db->lru_tail) = kp;
  db->lru_head = kp;
  kp->in_lru = 1;
  db->lru_count++;
  db->isa_bytes += kp->isa_bytes;
}

/* Frees kp's ISA (kp is off the recency list). */
static void kdb_isa_free(kdb *db, kdb_kernel_priv *kp) {
  kdb_co_priv *co = db->cos[kp->pub.co->index];
  if (pthread_mutex_lock(&co->lock) != 0)
    return;
  kdb_isa *isa = atomic_exchange(&kp->isa, NULL);
  pthread_mutex_unlock(&co->lock);
  if (isa) {
    free((void *)isa->insns);
    free(isa);
  }
}

/* Evicts least recently used ISAs while the cache is over its limit. */
static void kdb_lru_trim(kdb *db) {
  for (;;) {
    kdb_kernel_priv *victim = NULL;
    if (pthread_mutex_lock(&db->isa_lock) != 0)
      return;
    uint64_t limit = atomic_load(&db->isa_limit);
    if (limit && db->isa_bytes > limit && db->lru_count > KDB_ISA_KEEP) {
      victim = db->lru_tail;
      kdb_lru_unlink(db, victim);
    }
    pthread_mutex_unlock(&db->isa_lock);
    if (!victim)
      return;
    kdb_isa_free(db, victim);
  }
}

/* Notes that kp's ISA was used (and, once built, its size). */
static void kdb_lru_use(kdb *db, kdb_kernel_priv *kp) {
  if (pthread_mutex_lock(&db->isa_lock) != 0)
    return;
  kdb_lru_front(db, kp);
  pthread_mutex_unlock(&db->isa_lock);
  kdb_lru_trim(db);
}

void kdb_kernel_isa_release(kdb *db, const kdb_kernel *k) {
  kdb_kernel_priv *kp = (kdb_kernel_priv *)k;
  if (pthread_mutex_lock(&db->isa_lock) != 0)
    return;
  kdb_lru_unlink(db, kp);
  pthread_mutex_unlock(&db->isa_lock);
  kdb_isa_free(db, kp);
}

void kdb_code_object_release(kdb *db, const kdb_code_object *pub) {
  kdb_co_priv *co = db->cos[pub->index];
  for (size_t i = co->first_kernel; i < co->first_kernel + pub->kernel_count; i++)
    kdb_kernel_isa_release(db, &db->kernels[i]->pub);
  if (pthread_mutex_lock(&co->lock) != 0)
    return;
  kdb_co_free_lazy(co); /* its ISAs, which point into the DWARF, are gone */
  co->lines_built = 0;
  pthread_mutex_unlock(&co->lock);
  kdb_map_release(db, co->image, co->image_size);
}

uint64_t kdb_set_isa_cache_limit(kdb *db, uint64_t bytes) {
  uint64_t old = 0;
  if (pthread_mutex_lock(&db->isa_lock) == 0) {
    old = atomic_exchange(&db->isa_limit, bytes);
    pthread_mutex_unlock(&db->isa_lock);
  }
  kdb_lru_trim(db);
  return old;
}

uint64_t kdb_isa_cache_bytes(kdb *db) {
  uint64_t n = 0;
  if (pthread_mutex_lock(&db->isa_lock) == 0) {
    n = db->isa_bytes;
    pthread_mutex_unlock(&db->isa_lock);
  }
  return n;
}

int kdb_kernel_isa(kdb *db, const kdb_kernel *k, const kdb_isa **out, char *err, size_t errlen) {
  kdb_err e = {err, errlen};
  kdb_kernel_priv *kp = (kdb_kernel_priv *)k;
  kdb_isa *isa = atomic_load_explicit(&kp->isa, memory_order_acquire);
  if (isa) {
    if (atomic_load_explicit(&db->isa_limit, memory_order_relaxed))
      kdb_lru_use(db, kp);
    *out = isa;
    return 0;
  }
  if (k->co->vendor != KDB_VENDOR_AMDGPU)
    return kdb_fail(&e, db->name, "%s: no disassembler for %s code (kernel %s)", k->co->container,
                    k->co->arch, k->name);
  if (!k->code_addr || !k->code_size)
    return kdb_fail(&e, db->name, "%s: kernel %s has no code in .text", k->co->container, k->name);
  kdb_co_priv *co = db->cos[k->co->index];
  if (pthread_mutex_lock(&co->lock) != 0)
    return kdb_fail(&e, db->name, "mutex lock failed");
  isa = atomic_load_explicit(&kp->isa, memory_order_relaxed);
  if (!isa) {
    isa = kdb_isa_build(db, co, k, &e);
    if (isa)
      atomic_store_explicit(&kp->isa, isa, memory_order_release);
  }
  pthread_mutex_unlock(&co->lock);
  if (!isa)
    return -1;
  kdb_lru_use(db, kp);
  *out = isa;
  return 0;
}

/* True when path equals file or ends in "/" + file. */
static int kdb_isa_path_match(const char *path, const char *file) {
  size_t pl = strlen(path), fl = strlen(file);
  if (pl == fl)
    return strcmp(path, file) == 0;
  return pl > fl && path[pl - fl - 1] == '/' && strcmp(path + pl - fl, file) == 0;
}

size_t kdb_isa_line_insns(const kdb_isa *isa, const char *file, uint32_t line, size_t *idx,
                          size_t cap) {
  size_t n = 0;
  for (size_t i = 0; i < isa->count; i++) {
    const kdb_insn *in = &isa->insns[i];
    if (!in->src.file || in->src.line != line || !kdb_isa_path_match(in->src.file, file))
      continue;
    if (n < cap)
      idx[n] = i;
    n++;
  }
  return n;
}
