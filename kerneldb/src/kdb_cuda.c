/*
** kerneldb: NVIDIA cubins and fat binaries (second priority: kernels and
** parameter layout, no disassembly).
**
** A cubin is an ELF file with e_machine EM_CUDA. Kernels are the function
** symbols marked as entries (st_other 0x10); the section ".nv.info.<kernel>"
** holds attribute records (format byte, attribute byte, value), among them
** one EIATTR_KPARAM_INFO per parameter (ordinal, offset, size) and
** EIATTR_CBANK_PARAM_SIZE (the parameter block size). The shared ".nv.info"
** section holds per-kernel register counts and frame sizes. A fat binary
** (magic 0xBA55ED50) is a list of entries (PTX or ELF per architecture);
** compressed entries (CUDA 13's default) are skipped, and a fat binary with
** nothing else is refused with the options that build it uncompressed.
*/
#include "kdb_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KDB_EIFMT_NVAL 0x01
#define KDB_EIFMT_BVAL 0x02
#define KDB_EIFMT_HVAL 0x03
#define KDB_EIFMT_SVAL 0x04
#define KDB_EIATTR_FRAME_SIZE 0x11
#define KDB_EIATTR_KPARAM_INFO 0x17
#define KDB_EIATTR_CBANK_PARAM_SIZE 0x19
#define KDB_EIATTR_REGCOUNT 0x2f

static uint32_t kdb_cuda_le(const uint8_t *p, int k) {
  uint32_t v = 0;
  for (int i = k - 1; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

/* One attribute record of an .nv.info section:
**
**   offset  size  field
**   0       1     format: NVAL 1, BVAL 2, HVAL 3, SVAL 4
**   1       1     attribute (EIATTR_*)
**   2       2     NVAL: zero; BVAL, HVAL: the value; SVAL: the payload's length
**   4       len   SVAL only: the payload
**
** Every record has the 2 bytes at offset 2 (an NVAL too: nvcc -G cubins have
** NVAL records in the global .nv.info, which a 2-byte NVAL misread from
** there on, losing the register counts and frame sizes that follow). */
typedef struct kdb_eiattr {
  unsigned fmt, attr;
  const uint8_t *val; /* SVAL payload, or the 2-byte value of BVAL/HVAL */
  uint32_t len;
} kdb_eiattr;

#define KDB_EIATTR_HEAD 4 /* format, attribute, 2-byte value or length */

/* Next record at *pos in p[0..n). 1 when one was read, 0 at the end, -1 on
** a record that is truncated or of an unknown format (*pos then at it). */
static int kdb_cuda_next_attr(const uint8_t *p, size_t n, size_t *pos, kdb_eiattr *a) {
  if (*pos >= n)
    return 0;
  if (n - *pos < KDB_EIATTR_HEAD)
    return -1;
  a->fmt = p[*pos];
  a->attr = p[*pos + 1];
  const uint8_t *word = p + *pos + 2;
  if (a->fmt == KDB_EIFMT_NVAL || a->fmt == KDB_EIFMT_BVAL || a->fmt == KDB_EIFMT_HVAL) {
    a->val = a->fmt == KDB_EIFMT_NVAL ? NULL : word;
    a->len = a->fmt == KDB_EIFMT_NVAL ? 0 : 2;
    *pos += KDB_EIATTR_HEAD;
    return 1;
  }
  if (a->fmt != KDB_EIFMT_SVAL)
    return -1;
  uint32_t len = kdb_cuda_le(word, 2);
  if (len > n - *pos - KDB_EIATTR_HEAD)
    return -1;
  a->len = len;
  a->val = word + 2;
  *pos += KDB_EIATTR_HEAD + len;
  return 1;
}

/* Fails naming section `sect` and the record at `pos` that
** kdb_cuda_next_attr refused. */
static int kdb_cuda_bad_attr(kdb *db, kdb_err *e, const char *container, const char *sect,
                             const uint8_t *p, size_t n, size_t pos) {
  if (n - pos < KDB_EIATTR_HEAD)
    return kdb_fail(e, db->name, "%s: section %s: record at offset %zu truncated (%zu of %d bytes)",
                    container, sect, pos, n - pos, KDB_EIATTR_HEAD);
  if (p[pos] < KDB_EIFMT_NVAL || p[pos] > KDB_EIFMT_SVAL)
    return kdb_fail(e, db->name,
                    "%s: section %s: record at offset %zu has unknown format %u (1..4)", container,
                    sect, pos, p[pos]);
  return kdb_fail(e, db->name, "%s: section %s: record at offset %zu claims %u bytes, %zu left",
                  container, sect, pos, (unsigned)kdb_cuda_le(p + pos + 2, 2),
                  n - pos - KDB_EIATTR_HEAD);
}

static int kdb_cuda_argcmp(const void *x, const void *y) {
  const kdb_arg *a = x, *b = y;
  return a->offset < b->offset ? -1 : a->offset > b->offset;
}

/* Bytes of section s, NULL when it lies outside the image. */
static const uint8_t *kdb_cuda_section(const GElf_Shdr *sh, const uint8_t *img, size_t n) {
  if (sh->sh_type == SHT_NOBITS || sh->sh_offset > n || sh->sh_size > n - sh->sh_offset)
    return NULL;
  return img + sh->sh_offset;
}

int kdb_cuda_read_cubin(kdb *db, const uint8_t *img, size_t n, const char *container, kdb_err *e) {
  if (n < sizeof(Elf64_Ehdr) || memcmp(img, ELFMAG, SELFMAG) != 0)
    return kdb_fail(e, db->name, "%s: not an ELF image (%zu bytes)", container, n);
  if (kdb_elf_check(db, img, n, container, e))
    return -1;
  kdb_co_priv *co = kdb_add_co(db);
  if (!co)
    return kdb_fail(e, db->name, "out of memory");
  co->image = img;
  co->image_size = n;
  co->pub.vendor = KDB_VENDOR_NVIDIA;
  co->pub.container = container;
  co->pub.image_size = n;
  co->elf = elf_memory((char *)img, n);
  if (!co->elf)
    return kdb_fail(e, db->name, "%s: ELF image unreadable (%s)", container, elf_errmsg(-1));
  GElf_Ehdr eh;
  if (!gelf_getehdr(co->elf, &eh))
    return kdb_fail(e, db->name, "%s: ELF header unreadable (%s)", container, elf_errmsg(-1));
  if (eh.e_machine != EM_CUDA)
    return kdb_fail(e, db->name, "%s: ELF machine %u is not CUDA", container, eh.e_machine);
  unsigned abiv = eh.e_ident[EI_ABIVERSION];
  unsigned sm = abiv >= 8 ? (eh.e_flags >> 8) & 0xff : eh.e_flags & 0xff;
  char arch[32];
  snprintf(arch, sizeof arch, "sm_%u", sm);
  co->pub.arch = co->pub.target_id = kdb_arena_strdup(&db->arena, arch);
  if (!co->pub.arch)
    return kdb_fail(e, db->name, "out of memory");
  co->pub.code_object_version = (int)abiv;
  size_t shstr;
  if (elf_getshdrstrndx(co->elf, &shstr) != 0)
    return kdb_fail(e, db->name, "%s: section name table unreadable (%s)", container,
                    elf_errmsg(-1));
  /* Symbol table and the global .nv.info. */
  Elf_Scn *symscn = NULL;
  GElf_Shdr symsh = {0}, infosh = {0};
  const uint8_t *info = NULL;
  for (Elf_Scn *s = elf_nextscn(co->elf, NULL); s; s = elf_nextscn(co->elf, s)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(s, &sh))
      return kdb_fail(e, db->name, "%s: section header unreadable (%s)", container, elf_errmsg(-1));
    const char *nm = elf_strptr(co->elf, shstr, sh.sh_name);
    if (sh.sh_type == SHT_SYMTAB) {
      symscn = s;
      symsh = sh;
    } else if (nm && strcmp(nm, ".nv.info") == 0) {
      info = kdb_cuda_section(&sh, img, n);
      infosh = sh;
    }
  }
  if (!symscn)
    return kdb_fail(e, db->name, "%s: cubin has no symbol table", container);
  Elf_Data *sd = elf_getdata(symscn, NULL);
  if (!sd)
    return kdb_fail(e, db->name, "%s: symbol table unreadable (%s)", container, elf_errmsg(-1));
  size_t nsym = symsh.sh_entsize ? sd->d_size / symsh.sh_entsize : 0;
  size_t first_kernel = db->nkernels;
  for (size_t i = 1; i < nsym; i++) {
    GElf_Sym sym;
    if (!gelf_getsym(sd, (int)i, &sym))
      break;
    if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || !(sym.st_other & 0x10))
      continue;
    const char *nm = elf_strptr(co->elf, symsh.sh_link, sym.st_name);
    if (!nm)
      continue;
    kdb_kernel_priv *kp = kdb_add_kernel(db, co);
    if (!kp)
      return kdb_fail(e, db->name, "out of memory");
    kdb_kernel *k = &kp->pub;
    k->name = k->symbol = nm;
    k->demangled = kdb_demangle(db, nm);
    k->code_size = sym.st_size;
    k->wavefront_size = 32;
    /* Per-kernel sections: .nv.info.<name>, .nv.shared.<name>. */
    size_t nl = strlen(nm);
    for (Elf_Scn *s = elf_nextscn(co->elf, NULL); s; s = elf_nextscn(co->elf, s)) {
      GElf_Shdr sh;
      if (!gelf_getshdr(s, &sh))
        continue;
      const char *sn = elf_strptr(co->elf, shstr, sh.sh_name);
      if (!sn)
        continue;
      if (strncmp(sn, ".nv.shared.", 11) == 0 && strcmp(sn + 11, nm) == 0)
        k->group_segment_size = sh.sh_size > UINT32_MAX ? UINT32_MAX : (uint32_t)sh.sh_size;
      if (strncmp(sn, ".nv.info.", 9) != 0 || strlen(sn + 9) != nl || strcmp(sn + 9, nm) != 0)
        continue;
      const uint8_t *p = kdb_cuda_section(&sh, img, n);
      if (!p)
        return kdb_fail(e, db->name, "%s: section %s lies outside the image", container, sn);
      size_t pos = 0, na = 0;
      kdb_eiattr a;
      int r;
      while ((r = kdb_cuda_next_attr(p, (size_t)sh.sh_size, &pos, &a)) == 1)
        if (a.attr == KDB_EIATTR_KPARAM_INFO && a.len >= 12)
          na++;
      if (r < 0)
        return kdb_cuda_bad_attr(db, e, container, sn, p, (size_t)sh.sh_size, pos);
      kdb_arg *args = na ? kdb_arena_alloc(&db->arena, na * sizeof *args) : NULL;
      if (na && !args)
        return kdb_fail(e, db->name, "out of memory");
      size_t j = 0;
      pos = 0;
      while (kdb_cuda_next_attr(p, (size_t)sh.sh_size, &pos, &a) == 1) {
        if (a.attr == KDB_EIATTR_KPARAM_INFO && a.len >= 12 && j < na) {
          args[j].offset = kdb_cuda_le(a.val + 6, 2);
          args[j].size = (kdb_cuda_le(a.val + 8, 4) >> 18) & 0x3fff;
          args[j].align = kdb_natural_align(args[j].offset, args[j].size);
          args[j].value_kind = "by_value";
          j++;
        } else if (a.attr == KDB_EIATTR_CBANK_PARAM_SIZE && a.len == 2) {
          k->kernarg_segment_size = kdb_cuda_le(a.val, 2);
        }
      }
      if (na)
        qsort(args, na, sizeof *args, kdb_cuda_argcmp);
      k->args = args;
      k->arg_count = k->explicit_arg_count = na;
      k->kernarg_segment_align = na ? 8 : 0;
    }
    /* Register count and frame size: records (symbol index, value). */
    if (info) {
      size_t pos = 0;
      kdb_eiattr a;
      int r;
      while ((r = kdb_cuda_next_attr(info, (size_t)infosh.sh_size, &pos, &a)) == 1) {
        if (a.len != 8 || kdb_cuda_le(a.val, 4) != i)
          continue;
        if (a.attr == KDB_EIATTR_REGCOUNT)
          k->vgpr_count = kdb_cuda_le(a.val + 4, 4);
        if (a.attr == KDB_EIATTR_FRAME_SIZE)
          k->private_segment_size = kdb_cuda_le(a.val + 4, 4);
      }
      if (r < 0)
        return kdb_cuda_bad_attr(db, e, container, ".nv.info", info, (size_t)infosh.sh_size, pos);
    }
  }
  kdb_pair_twins(db, first_kernel);
  return 0;
}

int kdb_cuda_read_fatbin(kdb *db, const uint8_t *p, size_t n, const char *container, kdb_err *e) {
  size_t pos = 0;
  int blocks = 0, skipped = 0, read = 0;
  /* A section may hold several fat binaries back to back. */
  while (n - pos >= 16) {
    if (kdb_cuda_le(p + pos, 4) != 0xBA55ED50u) {
      if (blocks)
        break; /* padding after the last one */
      return kdb_fail(e, db->name, "%s: not an NVIDIA fat binary (bad magic)", container);
    }
    uint32_t hsize = kdb_cuda_le(p + pos + 6, 2);
    uint64_t fsize = kdb_cuda_le(p + pos + 8, 4) | (uint64_t)kdb_cuda_le(p + pos + 12, 4) << 32;
    if (hsize < 16 || hsize > n - pos || fsize > n - pos - hsize)
      return kdb_fail(e, db->name, "%s: fat binary %d header claims %llu bytes, %zu available",
                      container, blocks, (unsigned long long)fsize, n - pos);
    const uint8_t *q = p + pos + hsize;
    size_t qn = (size_t)fsize, qp = 0;
    int entry = 0;
    while (qn - qp >= 16) {
      uint32_t kind = kdb_cuda_le(q + qp, 2), ehs = kdb_cuda_le(q + qp + 4, 4);
      uint64_t psize = kdb_cuda_le(q + qp + 8, 4) | (uint64_t)kdb_cuda_le(q + qp + 12, 4) << 32;
      if (ehs < 16 || ehs > qn - qp || psize > qn - qp - ehs)
        return kdb_fail(e, db->name, "%s: fat binary %d entry %d lies outside the fat binary",
                        container, blocks, entry);
      uint64_t flags =
          ehs >= 48 ? kdb_cuda_le(q + qp + 40, 4) | (uint64_t)kdb_cuda_le(q + qp + 44, 4) << 32 : 0;
      const uint8_t *payload = q + qp + ehs;
      if (kind == 2) {
        if ((flags & 0x2000) || psize < 4 || memcmp(payload, ELFMAG, SELFMAG) != 0) {
          skipped++;
        } else {
          char where[128];
          snprintf(where, sizeof where, "%s fatbin %d entry %d", container, blocks, entry);
          const char *c = kdb_arena_strdup(&db->arena, where);
          if (!c)
            return kdb_fail(e, db->name, "out of memory");
          if (kdb_read_entry(db, payload, (size_t)psize, c, NULL, 0, 0, e))
            return -1;
          read++;
        }
      }
      qp += ehs + (size_t)psize;
      entry++;
    }
    pos += hsize + (size_t)fsize;
    blocks++;
    while (pos < n && p[pos] == 0)
      pos++;
  }
  if (!read && skipped)
    return kdb_fail(e, db->name,
                    "%s: fat binary holds only compressed cubins (%d; CUDA 13 compresses by "
                    "default, in a format kerneldb cannot read): build with nvcc -no-compress "
                    "(or -Xfatbin -compress-mode=none), clang with -Xcuda-fatbinary "
                    "-compress-mode=none, or give kerneldb the cubin (nvcc -cubin)",
                    container, skipped);
  return 0;
}
