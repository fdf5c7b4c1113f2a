/*
** kerneldb: AMDGPU code objects (ELF, e_machine EM_AMDGPU, HSA OS ABI).
**
** Target and code-object version come from the ELF header (e_flags, ABI
** version) and the metadata note's amdhsa.target; kernels, arguments and
** resources from the NT_AMDGPU_METADATA note (msgpack, code object v3 and
** later); entry addresses and descriptors from the symbol table. Nothing is
** disassembled here.
*/
#include "kdb_internal.h"

#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KDB_NT_AMDGPU_METADATA 32

/* e_flags EF_AMDGPU_MACH values -> processor name (LLVM's ELF.h). */
static const struct {
  unsigned mach;
  const char *name;
} kdb_amdgpu_machs[] = {
    {0x020, "gfx600"},  {0x021, "gfx601"},  {0x022, "gfx700"},  {0x023, "gfx701"},
    {0x024, "gfx702"},  {0x025, "gfx703"},  {0x026, "gfx704"},  {0x028, "gfx801"},
    {0x029, "gfx802"},  {0x02a, "gfx803"},  {0x02b, "gfx810"},  {0x02c, "gfx900"},
    {0x02d, "gfx902"},  {0x02e, "gfx904"},  {0x02f, "gfx906"},  {0x030, "gfx908"},
    {0x031, "gfx909"},  {0x032, "gfx90c"},  {0x033, "gfx1010"}, {0x034, "gfx1011"},
    {0x035, "gfx1012"}, {0x036, "gfx1030"}, {0x037, "gfx1031"}, {0x038, "gfx1032"},
    {0x039, "gfx1033"}, {0x03a, "gfx602"},  {0x03b, "gfx705"},  {0x03c, "gfx805"},
    {0x03d, "gfx1035"}, {0x03e, "gfx1034"}, {0x03f, "gfx90a"},  {0x040, "gfx940"},
    {0x041, "gfx1100"}, {0x042, "gfx1013"}, {0x043, "gfx1150"}, {0x044, "gfx1103"},
    {0x045, "gfx1036"}, {0x046, "gfx1101"}, {0x047, "gfx1102"}, {0x048, "gfx1200"},
    {0x04a, "gfx1151"}, {0x04b, "gfx941"},  {0x04c, "gfx942"},  {0x04e, "gfx1201"},
    {0x04f, "gfx950"},
};

typedef struct kdb_sym {
  const char *name;
  uint64_t value, size;
  size_t shndx;
  unsigned type;
} kdb_sym;

static int kdb_amdgpu_symcmp(const void *a, const void *b) {
  return strcmp(((const kdb_sym *)a)->name, ((const kdb_sym *)b)->name);
}

static int kdb_amdgpu_u64cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Looks up key in a msgpack map; NULL when absent. */
static const msgpack_object *kdb_mp_get(const msgpack_object *map, const char *key) {
  if (!map || map->type != MSGPACK_OBJECT_MAP)
    return NULL;
  size_t kl = strlen(key);
  for (uint32_t i = 0; i < map->via.map.size; i++) {
    const msgpack_object *k = &map->via.map.ptr[i].key;
    if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == kl &&
        memcmp(k->via.str.ptr, key, kl) == 0)
      return &map->via.map.ptr[i].val;
  }
  return NULL;
}

/* Unsigned value of map[key], clamped to 32 bits; def when absent or not an
** unsigned integer. */
static uint32_t kdb_mp_u32(const msgpack_object *map, const char *key, uint32_t def) {
  const msgpack_object *v = kdb_mp_get(map, key);
  if (!v || v->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
    return def;
  return v->via.u64 > UINT32_MAX ? UINT32_MAX : (uint32_t)v->via.u64;
}

/* String value of map[key] copied into the arena; NULL when absent. */
static const char *kdb_mp_str(kdb *db, const msgpack_object *map, const char *key) {
  const msgpack_object *v = kdb_mp_get(map, key);
  if (!v || v->type != MSGPACK_OBJECT_STR)
    return NULL;
  return kdb_arena_strndup(&db->arena, v->via.str.ptr, v->via.str.size);
}

/* kdb_mp_str's string, shared with every equal one of db (kdb_shared_str). */
static const char *kdb_mp_shared_str(kdb *db, const msgpack_object *map, const char *key) {
  const msgpack_object *v = kdb_mp_get(map, key);
  if (!v || v->type != MSGPACK_OBJECT_STR)
    return NULL;
  return kdb_shared_str(db, v->via.str.ptr, v->via.str.size);
}

/* Maps a virtual address range to bytes of the image; NULL when no
** allocated section holds all of it. */
static const uint8_t *kdb_amdgpu_vaddr(Elf *elf, const uint8_t *img, size_t n, uint64_t addr,
                                       uint64_t len) {
  for (Elf_Scn *s = elf_nextscn(elf, NULL); s; s = elf_nextscn(elf, s)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(s, &sh) || sh.sh_type == SHT_NOBITS || !(sh.sh_flags & SHF_ALLOC))
      continue;
    if (addr < sh.sh_addr || addr - sh.sh_addr > sh.sh_size ||
        len > sh.sh_size - (addr - sh.sh_addr))
      continue;
    uint64_t off = sh.sh_offset + (addr - sh.sh_addr);
    if (sh.sh_offset > n || off > n || len > n - off)
      return NULL;
    return img + off;
  }
  return NULL;
}

static uint32_t kdb_rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Reads the kernels of one metadata map (amdhsa.kernels) into db. */
static int kdb_amdgpu_kernels(kdb *db, kdb_co_priv *co, const msgpack_object *kernels,
                              const kdb_sym *syms, size_t nsyms, const uint64_t *addrs,
                              size_t naddrs, const char *where, kdb_err *e) {
  if (!kernels || kernels->type != MSGPACK_OBJECT_ARRAY)
    return kdb_fail(e, db->name, "%s: metadata has no amdhsa.kernels array", where);
  for (uint32_t i = 0; i < kernels->via.array.size; i++) {
    const msgpack_object *km = &kernels->via.array.ptr[i];
    if (km->type != MSGPACK_OBJECT_MAP)
      return kdb_fail(e, db->name, "%s: metadata kernel %u is not a map", where, i);
    kdb_kernel_priv *kp = kdb_add_kernel(db, co);
    if (!kp)
      return kdb_fail(e, db->name, "out of memory");
    kdb_kernel *k = &kp->pub;
    k->name = kdb_mp_str(db, km, ".name");
    k->symbol = kdb_mp_str(db, km, ".symbol");
    if (!k->name || !k->symbol)
      return kdb_fail(e, db->name, "%s: metadata kernel %u lacks .name or .symbol", where, i);
    k->demangled = kdb_demangle(db, k->name);
    k->kernarg_segment_size = kdb_mp_u32(km, ".kernarg_segment_size", 0);
    k->kernarg_segment_align = kdb_mp_u32(km, ".kernarg_segment_align", 0);
    k->group_segment_size = kdb_mp_u32(km, ".group_segment_fixed_size", 0);
    k->private_segment_size = kdb_mp_u32(km, ".private_segment_fixed_size", 0);
    k->sgpr_count = kdb_mp_u32(km, ".sgpr_count", 0);
    k->vgpr_count = kdb_mp_u32(km, ".vgpr_count", 0);
    k->agpr_count = kdb_mp_u32(km, ".agpr_count", 0);
    k->sgpr_spill_count = kdb_mp_u32(km, ".sgpr_spill_count", 0);
    k->vgpr_spill_count = kdb_mp_u32(km, ".vgpr_spill_count", 0);
    k->wavefront_size = kdb_mp_u32(km, ".wavefront_size", 0);
    k->max_flat_workgroup_size = kdb_mp_u32(km, ".max_flat_workgroup_size", 0);
    const msgpack_object *args = kdb_mp_get(km, ".args");
    if (args && args->type == MSGPACK_OBJECT_ARRAY && args->via.array.size) {
      uint32_t na = args->via.array.size;
      kdb_arg *a = kdb_arena_alloc(&db->arena, na * sizeof *a);
      if (!a)
        return kdb_fail(e, db->name, "out of memory");
      k->explicit_arg_count = na;
      int seen_hidden = 0;
      for (uint32_t j = 0; j < na; j++) {
        const msgpack_object *am = &args->via.array.ptr[j];
        /* few distinct values among many arguments: one copy of each */
        a[j].name = kdb_mp_shared_str(db, am, ".name");
        a[j].type_name = kdb_mp_shared_str(db, am, ".type_name");
        a[j].value_kind = kdb_mp_shared_str(db, am, ".value_kind");
        a[j].address_space = kdb_mp_shared_str(db, am, ".address_space");
        a[j].size = kdb_mp_u32(am, ".size", 0);
        a[j].offset = kdb_mp_u32(am, ".offset", 0);
        a[j].align = kdb_mp_u32(am, ".align", 0);
        if (!a[j].align)
          a[j].align = kdb_natural_align(a[j].offset, a[j].size);
        a[j].hidden = a[j].value_kind && strncmp(a[j].value_kind, "hidden_", 7) == 0;
        if (a[j].hidden && !seen_hidden) {
          seen_hidden = 1;
          k->explicit_arg_count = j;
        }
      }
      k->args = a;
      k->arg_count = na;
    }
    /* Descriptor and entry point from the symbol table. */
    kdb_sym key = {.name = k->symbol};
    const kdb_sym *kd = nsyms ? bsearch(&key, syms, nsyms, sizeof *syms, kdb_amdgpu_symcmp) : NULL;
    if (kd) {
      const uint8_t *d = kdb_amdgpu_vaddr(co->elf, co->image, co->image_size, kd->value, 64);
      if (d) {
        k->has_descriptor = 1;
        k->descriptor_addr = kd->value;
        k->descriptor.group_segment_fixed_size = kdb_rd32(d);
        k->descriptor.private_segment_fixed_size = kdb_rd32(d + 4);
        k->descriptor.kernarg_size = kdb_rd32(d + 8);
        k->descriptor.kernel_code_entry_byte_offset =
            (int64_t)((uint64_t)kdb_rd32(d + 16) | (uint64_t)kdb_rd32(d + 20) << 32);
        k->descriptor.compute_pgm_rsrc3 = kdb_rd32(d + 44);
        k->descriptor.compute_pgm_rsrc1 = kdb_rd32(d + 48);
        k->descriptor.compute_pgm_rsrc2 = kdb_rd32(d + 52);
        k->descriptor.kernel_code_properties = (uint16_t)(d[56] | d[57] << 8);
        k->code_addr = kd->value + (uint64_t)k->descriptor.kernel_code_entry_byte_offset;
      }
    }
    /* The code symbol is the descriptor symbol without ".kd". */
    size_t sl = strlen(k->symbol);
    uint64_t fsize = 0; /* the code symbol's size, 0 when unknown */
    if (sl > 3 && strcmp(k->symbol + sl - 3, ".kd") == 0) {
      char *cs = malloc(sl - 2); /* a key only, not kept (2 MB of librocsparse's names) */
      if (!cs)
        return kdb_fail(e, db->name, "out of memory");
      memcpy(cs, k->symbol, sl - 3);
      cs[sl - 3] = 0;
      key.name = cs;
      const kdb_sym *fs =
          nsyms ? bsearch(&key, syms, nsyms, sizeof *syms, kdb_amdgpu_symcmp) : NULL;
      free(cs);
      if (fs && fs->type == STT_FUNC && !k->code_addr)
        k->code_addr = fs->value;
      if (fs && fs->type == STT_FUNC && fs->value == k->code_addr)
        fsize = fs->size;
    }
    if (k->code_addr >= co->text_addr && k->code_addr - co->text_addr < co->text_size) {
      /* Up to the end the symbol gives, else up to the next symbol (as a
       * disassembler shows it: the last kernel then runs on into the
       * section's padding, s_code_end's hundreds of s_nop). */
      uint64_t end = co->text_addr + co->text_size;
      if (fsize && fsize < end - k->code_addr)
        end = k->code_addr + fsize;
      size_t lo = 0, hi = naddrs;
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (addrs[mid] <= k->code_addr)
          lo = mid + 1;
        else
          hi = mid;
      }
      if (lo < naddrs && addrs[lo] < end)
        end = addrs[lo];
      k->code_size = end - k->code_addr;
    } else {
      k->code_addr = 0;
    }
  }
  return 0;
}

/* Reads the symbol table(s) of elf into a name-sorted array and the sorted
** addresses of symbols in the text section. */
static int kdb_amdgpu_symbols(kdb *db, kdb_co_priv *co, size_t text_ndx, kdb_sym **syms_out,
                              size_t *nsyms_out, uint64_t **addrs_out, size_t *naddrs_out,
                              const char *where, kdb_err *e) {
  kdb_sym *syms = NULL;
  uint64_t *addrs = NULL;
  size_t nsyms = 0, cap = 0, naddrs = 0, acap = 0;
  Elf_Scn *symscn = NULL;
  int have_symtab = 0;
  for (Elf_Scn *s = elf_nextscn(co->elf, NULL); s; s = elf_nextscn(co->elf, s)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(s, &sh))
      continue;
    if (sh.sh_type == SHT_SYMTAB) {
      symscn = s;
      have_symtab = 1;
    } else if (sh.sh_type == SHT_DYNSYM && !have_symtab) {
      symscn = s;
    }
  }
  if (symscn) {
    GElf_Shdr sh;
    Elf_Data *d = gelf_getshdr(symscn, &sh) ? elf_getdata(symscn, NULL) : NULL;
    if (!d) {
      return kdb_fail(e, db->name, "%s: symbol table unreadable (%s)", where, elf_errmsg(-1));
    }
    size_t count = sh.sh_entsize ? d->d_size / sh.sh_entsize : 0;
    for (size_t i = 1; i < count; i++) {
      GElf_Sym sym;
      if (!gelf_getsym(d, (int)i, &sym))
        break;
      const char *nm = elf_strptr(co->elf, sh.sh_link, sym.st_name);
      unsigned type = GELF_ST_TYPE(sym.st_info);
      if (!nm || type == STT_SECTION || type == STT_FILE)
        continue;
      if (kdb_reserve((void **)&syms, &cap, nsyms + 1, sizeof *syms))
        goto oom;
      syms[nsyms++] = (kdb_sym){nm, sym.st_value, sym.st_size, sym.st_shndx, type};
      if (text_ndx && sym.st_shndx == text_ndx) {
        if (kdb_reserve((void **)&addrs, &acap, naddrs + 1, sizeof *addrs))
          goto oom;
        addrs[naddrs++] = sym.st_value;
      }
    }
  }
  if (nsyms)
    qsort(syms, nsyms, sizeof *syms, kdb_amdgpu_symcmp);
  if (naddrs)
    qsort(addrs, naddrs, sizeof *addrs, kdb_amdgpu_u64cmp);
  *syms_out = syms;
  *nsyms_out = nsyms;
  *addrs_out = addrs;
  *naddrs_out = naddrs;
  return 0;
oom:
  free(syms);
  free(addrs);
  return kdb_fail(e, db->name, "out of memory");
}

/* Parses the metadata note(s) and adds the kernels. */
static int kdb_amdgpu_notes(kdb *db, kdb_co_priv *co, const kdb_sym *syms, size_t nsyms,
                            const uint64_t *addrs, size_t naddrs, const char *where, kdb_err *e) {
  int found = 0;
  for (Elf_Scn *s = elf_nextscn(co->elf, NULL); s; s = elf_nextscn(co->elf, s)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(s, &sh) || sh.sh_type != SHT_NOTE)
      continue;
    Elf_Data *d = elf_getdata(s, NULL);
    if (!d)
      return kdb_fail(e, db->name, "%s: note section unreadable (%s)", where, elf_errmsg(-1));
    size_t off = 0, noff, doff;
    GElf_Nhdr nh;
    while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
      if (nh.n_type != KDB_NT_AMDGPU_METADATA || nh.n_namesz != 7 ||
          memcmp((const char *)d->d_buf + noff, "AMDGPU", 7) != 0)
        continue;
      const uint8_t *mp = (const uint8_t *)d->d_buf + doff;
      if (kdb_msgpack_check(mp, nh.n_descsz))
        return kdb_fail(e, db->name, "%s: AMDGPU metadata note is not valid msgpack", where);
      msgpack_unpacked u;
      msgpack_unpacked_init(&u);
      size_t used = 0;
      if (msgpack_unpack_next(&u, (const char *)mp, nh.n_descsz, &used) != MSGPACK_UNPACK_SUCCESS ||
          u.data.type != MSGPACK_OBJECT_MAP) {
        msgpack_unpacked_destroy(&u);
        return kdb_fail(e, db->name, "%s: AMDGPU metadata note is not a msgpack map", where);
      }
      const char *target = kdb_mp_str(db, &u.data, "amdhsa.target");
      if (target) {
        const char *dash = strstr(target, "--");
        const char *tid = dash ? dash + 2 : target;
        co->pub.target_id = tid;
        size_t al = strcspn(tid, ":");
        if (al)
          co->pub.arch = kdb_arena_strndup(&db->arena, tid, al);
      }
      int r = kdb_amdgpu_kernels(db, co, kdb_mp_get(&u.data, "amdhsa.kernels"), syms, nsyms, addrs,
                                 naddrs, where, e);
      msgpack_unpacked_destroy(&u);
      if (r)
        return -1;
      found = 1;
    }
  }
  if (!found)
    return kdb_fail(e, db->name, "%s: no AMDGPU metadata note (code object v2 is not supported)",
                    where);
  return 0;
}

int kdb_amdgpu_read(kdb *db, const uint8_t *img, size_t n, const char *container,
                    const char *triple, int compressed, kdb_err *e) {
  const char *where = container;
  if (n < sizeof(Elf64_Ehdr) || memcmp(img, ELFMAG, SELFMAG) != 0)
    return kdb_fail(e, db->name, "%s: not an ELF image (%zu bytes)", where, n);
  if (img[EI_CLASS] != ELFCLASS64 || img[EI_DATA] != ELFDATA2LSB)
    return kdb_fail(e, db->name, "%s: AMDGPU code object must be 64-bit little-endian ELF", where);
  if (kdb_elf_check(db, img, n, where, e))
    return -1;
  kdb_co_priv *co = kdb_add_co(db);
  if (!co)
    return kdb_fail(e, db->name, "out of memory");
  size_t first_kernel = db->nkernels;
  co->image = img;
  co->image_size = n;
  co->pub.vendor = KDB_VENDOR_AMDGPU;
  co->pub.triple = triple;
  co->pub.container = container;
  co->pub.compressed = compressed;
  co->pub.image_size = n;
  co->elf = elf_memory((char *)img, n);
  if (!co->elf)
    return kdb_fail(e, db->name, "%s: ELF image unreadable (%s)", where, elf_errmsg(-1));
  GElf_Ehdr eh;
  if (!gelf_getehdr(co->elf, &eh))
    return kdb_fail(e, db->name, "%s: ELF header unreadable (%s)", where, elf_errmsg(-1));
  if (eh.e_machine != EM_AMDGPU)
    return kdb_fail(e, db->name, "%s: ELF machine %u is not AMDGPU", where, eh.e_machine);
  unsigned abiv = eh.e_ident[EI_ABIVERSION];
  co->pub.code_object_version = (int)abiv + 2;
  unsigned mach = eh.e_flags & 0xff;
  for (size_t i = 0; i < sizeof kdb_amdgpu_machs / sizeof kdb_amdgpu_machs[0]; i++)
    if (kdb_amdgpu_machs[i].mach == mach)
      co->pub.arch = kdb_amdgpu_machs[i].name;
  if (abiv >= 2) { /* v4+: two-bit feature fields */
    static const kdb_feature f4[4] = {KDB_FEATURE_UNSUPPORTED, KDB_FEATURE_ANY, KDB_FEATURE_OFF,
                                      KDB_FEATURE_ON};
    co->pub.xnack = f4[(eh.e_flags >> 8) & 3];
    co->pub.sramecc = f4[(eh.e_flags >> 10) & 3];
  } else {
    co->pub.xnack = (eh.e_flags & 0x100) ? KDB_FEATURE_ON : KDB_FEATURE_ANY;
    co->pub.sramecc = (eh.e_flags & 0x200) ? KDB_FEATURE_ON : KDB_FEATURE_ANY;
  }
  /* The executable section. */
  size_t shstr, text_ndx = 0;
  if (elf_getshdrstrndx(co->elf, &shstr) != 0)
    return kdb_fail(e, db->name, "%s: section name table unreadable (%s)", where, elf_errmsg(-1));
  for (Elf_Scn *s = elf_nextscn(co->elf, NULL); s; s = elf_nextscn(co->elf, s)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(s, &sh))
      return kdb_fail(e, db->name, "%s: section header unreadable (%s)", where, elf_errmsg(-1));
    const char *nm = elf_strptr(co->elf, shstr, sh.sh_name);
    if (!nm || strcmp(nm, ".text") != 0 || sh.sh_type == SHT_NOBITS)
      continue;
    if (sh.sh_offset > n || sh.sh_size > n - sh.sh_offset)
      return kdb_fail(e, db->name,
                      "%s: .text (offset %llu, size %llu) lies outside the %zu-byte image", where,
                      (unsigned long long)sh.sh_offset, (unsigned long long)sh.sh_size, n);
    text_ndx = elf_ndxscn(s);
    co->text_addr = sh.sh_addr;
    co->text_size = sh.sh_size;
    co->text_offset = sh.sh_offset;
  }
  kdb_sym *syms = NULL;
  uint64_t *addrs = NULL;
  size_t nsyms = 0, naddrs = 0;
  if (kdb_amdgpu_symbols(db, co, text_ndx, &syms, &nsyms, &addrs, &naddrs, where, e))
    return -1;
  int r = kdb_amdgpu_notes(db, co, syms, nsyms, addrs, naddrs, where, e);
  free(syms);
  free(addrs);
  if (r)
    return -1;
  if (!co->pub.arch) {
    char buf[32];
    snprintf(buf, sizeof buf, "gfx-mach-0x%x", mach);
    co->pub.arch = kdb_arena_strdup(&db->arena, buf);
    if (!co->pub.arch)
      return kdb_fail(e, db->name, "out of memory");
  }
  if (!co->pub.target_id)
    co->pub.target_id = co->pub.arch;
  kdb_pair_twins(db, first_kernel);
  return 0;
}
