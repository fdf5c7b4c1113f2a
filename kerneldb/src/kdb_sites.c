/*
** kdb_sites.c: nanoprobe's site tables in the inputs kerneldb reads, and the
** map from a site to the instructions that implement it.
**
** Tables are parsed by dh_comms' one reader (nano_dh_sites_add_elf_memory:
** the nano_dev_sites section of AMDGPU code objects and host ELF files, the
** __nano_dh_sites_* globals of cubins), one code object at a time so every
** site knows its code object, then copied into the database's arena.
**
** A site maps to instructions by its debug location: the pass numbers a site
** per IR access and records the access's file, line and column; the backend
** keeps that location on the machine instruction (the innermost one where
** code was inlined, which is also what the site records). A site whose
** location the original kernel's code lacks was folded into a neighbour's
** instruction (four 4-byte loads become one global_load_dwordx4, whose
** location is one of the four); one whose instructions move more bytes per
** lane than the IR access was widened.
*/
#include "kdb_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nano/dh_comms.h"

/* Copies the sites of set into db, attributed to co (NULL: host ELF). */
static int kdb_sites_take(kdb *db, const struct nano_dh_sites *set, const kdb_code_object *co,
                          kdb_err *e) {
  size_t n = nano_dh_sites_count(set);
  if (kdb_reserve((void **)&db->sites, &db->cap_sites, db->nsites + n, sizeof *db->sites))
    return kdb_fail(e, db->name, "out of memory");
  for (size_t i = 0; i < n; i++) {
    const struct nano_dh_site *s = nano_dh_sites_at(set, i);
    kdb_site *d = &db->sites[db->nsites];
    *d = (kdb_site){.id = s->id,
                    .co = co,
                    .line = s->line,
                    .column = s->column,
                    .kind = s->kind,
                    .addrspace = s->addrspace,
                    .flags = s->flags,
                    .size = s->size};
    d->function = kdb_arena_strdup(&db->arena, s->kernel);
    d->file = kdb_arena_strdup(&db->arena, s->file);
    if (!d->function || !d->file)
      return kdb_fail(e, db->name, "out of memory");
    d->demangled = kdb_demangle(db, d->function);
    if (!d->demangled)
      return kdb_fail(e, db->name, "out of memory");
    db->nsites++;
  }
  return 0;
}

/* Adds the tables of one ELF image. */
static int kdb_sites_image(kdb *db, const uint8_t *image, size_t size, const char *what,
                           const kdb_code_object *co, kdb_err *e) {
  struct nano_dh_sites *set = nano_dh_sites_create();
  if (!set)
    return kdb_fail(e, db->name, "out of memory");
  char msg[512];
  int rc = 0;
  if (nano_dh_sites_add_elf_memory(set, image, size, what, msg, sizeof msg) < 0)
    rc = kdb_fail(e, db->name, "%s", msg);
  else
    rc = kdb_sites_take(db, set, co, e);
  nano_dh_sites_destroy(set);
  return rc;
}

static int kdb_site_cmp(const void *a, const void *b) {
  uint64_t x = ((const kdb_site *)a)->id, y = ((const kdb_site *)b)->id;
  return x < y ? -1 : x > y;
}

int kdb_read_sites(kdb *db, kdb_err *e) {
  for (size_t i = 0; i < db->ncos; i++) {
    kdb_co_priv *co = db->cos[i];
    if (co->unread)
      continue;
    if (kdb_sites_image(db, co->image, co->image_size, co->pub.container, &co->pub, e))
      return -1;
    kdb_map_release(db, co->image, co->image_size); /* read: the file's pages again */
  }
  if (db->host_elf && kdb_sites_image(db, db->data, db->size, "host ELF", NULL, e))
    return -1;
  if (db->nsites)
    qsort(db->sites, db->nsites, sizeof *db->sites, kdb_site_cmp);
  return 0;
}

size_t kdb_site_count(const kdb *db) { return db->nsites; }

const kdb_site *kdb_site_at(const kdb *db, size_t i) {
  return i < db->nsites ? &db->sites[i] : NULL;
}

const kdb_site *kdb_site_find(const kdb *db, uint64_t id) {
  kdb_site key = {.id = id};
  return db->nsites ? bsearch(&key, db->sites, db->nsites, sizeof *db->sites, kdb_site_cmp) : NULL;
}

/* True when one path is the other or ends in "/" + the other (DWARF may
** hold a path relative to the compilation directory, the site an absolute
** one). */
static int kdb_sites_same_file(const char *a, const char *b) {
  size_t al = strlen(a), bl = strlen(b);
  if (al < bl) {
    const char *t = a;
    a = b;
    b = t;
    size_t tl = al;
    al = bl;
    bl = tl;
  }
  if (al == bl)
    return strcmp(a, b) == 0;
  return bl > 0 && a[al - bl - 1] == '/' && strcmp(a + al - bl, b) == 0;
}

/* Does instruction in implement an access of site s? */
static int kdb_sites_insn_matches(const kdb_site *s, const kdb_insn *in) {
  static const kdb_mem_op ops[] = {KDB_MEMOP_NONE, KDB_MEMOP_LOAD, KDB_MEMOP_STORE,
                                   KDB_MEMOP_ATOMIC};
  if (in->space == KDB_MEM_NONE || !in->src.file || in->src.line != s->line ||
      in->src.column != s->column)
    return 0;
  if (s->kind >= sizeof ops / sizeof *ops || in->op != ops[s->kind])
    return 0;
  if (s->addrspace == NANO_DH_AS_SHARED && in->space != KDB_MEM_LDS)
    return 0;
  if ((s->addrspace == NANO_DH_AS_GLOBAL || s->addrspace == NANO_DH_AS_CONSTANT) &&
      in->space == KDB_MEM_LDS)
    return 0;
  return kdb_sites_same_file(in->src.file, s->file);
}

/* Appends k's instructions of site s to out (count in *n, up to cap kept). */
static int kdb_sites_search(kdb *db, const kdb_site *s, const kdb_kernel *k, kdb_site_insn *out,
                            size_t cap, long *n, kdb_err *e) {
  const kdb_isa *isa;
  if (kdb_kernel_isa(db, k, &isa, e->buf, e->len))
    return -1;
  for (size_t i = 0; i < isa->count; i++) {
    if (!kdb_sites_insn_matches(s, &isa->insns[i]))
      continue;
    if ((size_t)*n < cap)
      out[*n] = (kdb_site_insn){k, &isa->insns[i]};
    (*n)++;
  }
  return 0;
}

/* The original kernel of site s in its code object, or NULL (host sites,
** NVIDIA, sites of device functions). Fails with a message. */
static const kdb_kernel *kdb_sites_kernel(const kdb *db, const kdb_site *s, kdb_err *e) {
  if (!s->co) {
    kdb_fail(e, db->name, "site %016llx is in host code: no GPU ISA to map it to",
             (unsigned long long)s->id);
    return NULL;
  }
  if (s->co->vendor != KDB_VENDOR_AMDGPU) {
    kdb_fail(e, db->name, "site %016llx: no disassembler for %s code", (unsigned long long)s->id,
             s->co->arch);
    return NULL;
  }
  if (!*s->file || !s->line) {
    kdb_fail(e, db->name, "site %016llx has no source position (built without -g)",
             (unsigned long long)s->id);
    return NULL;
  }
  for (size_t i = 0; i < db->nkernels; i++) {
    const kdb_kernel *k = &db->kernels[i]->pub;
    if (k->co == s->co && !k->original && strcmp(k->name, s->function) == 0)
      return k;
  }
  kdb_fail(e, db->name,
           "site %016llx is in %s, which is no kernel of %s (a device function "
           "kept out of line)",
           (unsigned long long)s->id, s->demangled, s->co->container);
  return NULL;
}

long kdb_site_insns(kdb *db, const kdb_site *s, kdb_site_insn *out, size_t cap, char *err,
                    size_t errlen) {
  kdb_err e = {err, errlen};
  const kdb_kernel *k = kdb_sites_kernel(db, s, &e);
  if (!k)
    return -1;
  long n = 0;
  if (kdb_sites_search(db, s, k, out, cap, &n, &e))
    return -1;
  if (k->twin && kdb_sites_search(db, s, k->twin, out, cap, &n, &e))
    return -1;
  return n;
}

/* Sites of one kind of access in one function of one file: same code
** object, function, file, kind and address-space class (LDS or not). */
static int kdb_sites_same_access(const kdb_site *a, const kdb_site *b) {
  return a->co == b->co && a->kind == b->kind &&
         (a->addrspace == NANO_DH_AS_SHARED) == (b->addrspace == NANO_DH_AS_SHARED) &&
         strcmp(a->function, b->function) == 0 && strcmp(a->file, b->file) == 0;
}

/* Sites that match the same instructions: the same access at one source
** position. */
static int kdb_sites_siblings(const kdb_site *a, const kdb_site *b) {
  return a->line == b->line && a->column == b->column && kdb_sites_same_access(a, b);
}

/* The bytes per lane that instruction in moves for site s: a scalar load's
** width is the wave's, not a lane's, so it counts as the site's size. */
static uint32_t kdb_sites_lane_width(const kdb_site *s, const kdb_insn *in) {
  return in->space == KDB_MEM_SCALAR || !in->width ? s->size : in->width;
}

/* Does the original's code hold an instruction of site t wider than t? */
static int kdb_sites_widened(const kdb_site *t, const kdb_isa *isa) {
  for (size_t i = 0; i < isa->count; i++)
    if (kdb_sites_insn_matches(t, &isa->insns[i]) &&
        kdb_sites_lane_width(t, &isa->insns[i]) > t->size)
      return 1;
  return 0;
}

/* Site s has no instruction at its own position: folded into a neighbour's
** where a site of the same function, file, kind and space was widened;
** unknown otherwise (the backend may have moved the access's location). */
static kdb_site_isa kdb_sites_orphan(const kdb *db, const kdb_site *s, const kdb_isa *isa) {
  for (size_t i = 0; i < db->nsites; i++) {
    const kdb_site *t = &db->sites[i];
    if (t != s && kdb_sites_same_access(t, s) && kdb_sites_widened(t, isa))
      return KDB_SITE_ISA_MERGED;
  }
  return KDB_SITE_ISA_UNKNOWN;
}

/*
** Sites at one source position (an unrolled loop's copies of one access)
** share its instructions. They take them in order: siblings by id (the
** pass numbers sites in program order), instructions by address, and an
** instruction of w bytes per lane stands for w / size sites. So four 4-byte
** sites under one global_load_dwordx4 give the first site 16 bytes and fold
** the other three into it; under two global_load_dwordx2, the first and the
** third get 8 bytes each. Exact for the patterns the backends produce
** (consecutive accesses merged in order); a guess where they reorder.
*/
kdb_site_isa kdb_site_isa_width(kdb *db, const kdb_site *s, uint32_t *width) {
  *width = 0;
  kdb_err quiet = {NULL, 0};
  const kdb_kernel *k = kdb_sites_kernel(db, s, &quiet);
  if (!k || !s->size)
    return KDB_SITE_ISA_UNKNOWN;
  const kdb_isa *isa;
  if (kdb_kernel_isa(db, k, &isa, NULL, 0) || !isa->has_lines)
    return KDB_SITE_ISA_UNKNOWN;
  size_t rank = 0;
  for (size_t i = 0; i < db->nsites && &db->sites[i] != s; i++)
    rank += kdb_sites_siblings(&db->sites[i], s);
  size_t next = 0; /* rank of the sibling the next instruction belongs to */
  int found = 0;
  for (size_t i = 0; i < isa->count && next <= rank; i++) {
    const kdb_insn *in = &isa->insns[i];
    if (!kdb_sites_insn_matches(s, in))
      continue;
    found = 1;
    uint32_t w = kdb_sites_lane_width(s, in);
    size_t covers = w > s->size ? w / s->size : 1;
    if (rank < next + covers) {
      if (rank > next)
        return KDB_SITE_ISA_MERGED;
      *width = w;
      return w > s->size ? KDB_SITE_ISA_WIDER : KDB_SITE_ISA_SAME;
    }
    next += covers;
  }
  return found ? KDB_SITE_ISA_MERGED : kdb_sites_orphan(db, s, isa);
}
