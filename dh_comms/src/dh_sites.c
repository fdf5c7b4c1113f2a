/*
 * dh_sites.c: site tables emitted by the pass (layout: nano/dh_format.h,
 * dh_comms/README.md), parsed from raw section bytes or from an ELF file
 * through libelf, and looked up by the site id a record carries.
 */
#define _POSIX_C_SOURCE 200809L
#include "nano/dh_comms.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct nano_dh_sites {
  struct nano_dh_site *sites;
  size_t count, cap;
  char **blobs; /* copies the site strings point into */
  size_t nblobs;
};

static uint32_t dhsites_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Formats an error; returns -1. */
static int dhsites_fail(char *errmsg, size_t errlen, const char *what, const char *msg, size_t at) {
  if (errmsg && errlen)
    snprintf(errmsg, errlen, "%s: site table at byte %zu: %s", what, at, msg);
  return -1;
}

struct nano_dh_sites *nano_dh_sites_create(void) {
  return calloc(1, sizeof(struct nano_dh_sites));
}

void nano_dh_sites_destroy(struct nano_dh_sites *s) {
  if (!s)
    return;
  for (size_t i = 0; i < s->nblobs; i++)
    free(s->blobs[i]);
  free(s->blobs);
  free(s->sites);
  free(s);
}

/* Parses one blob at p (len bytes available) into s; returns its padded size
 * or -1. */
static long dhsites_parse_one(struct nano_dh_sites *s, const unsigned char *p, size_t len,
                              const char *what, size_t at, char *errmsg, size_t errlen) {
  if (len < NANO_DH_SITES_HDR_SIZE)
    return dhsites_fail(errmsg, errlen, what, "truncated header", at);
  if (memcmp(p, NANO_DH_SITES_MAGIC, 8) != 0)
    return dhsites_fail(errmsg, errlen, what, "bad magic", at);
  uint32_t version = dhsites_u32(p + 8), module = dhsites_u32(p + 12);
  uint32_t nsites = dhsites_u32(p + 16), strbytes = dhsites_u32(p + 20);
  if (version != NANO_DH_SITES_VERSION)
    return dhsites_fail(errmsg, errlen, what, "unsupported version", at);
  uint64_t total = NANO_DH_SITES_HDR_SIZE + (uint64_t)nsites * NANO_DH_SITE_SIZE + strbytes;
  uint64_t padded = (total + 7) & ~7ull;
  if (total > len)
    return dhsites_fail(errmsg, errlen, what, "truncated", at);
  if (strbytes == 0 || p[total - 1] != 0)
    return dhsites_fail(errmsg, errlen, what, "string table not NUL-terminated", at);
  char *copy = malloc((size_t)total);
  char **blobs = realloc(s->blobs, (s->nblobs + 1) * sizeof *blobs);
  if (blobs)
    s->blobs = blobs;
  if (!copy || !blobs) {
    free(copy);
    return dhsites_fail(errmsg, errlen, what, "out of memory", at);
  }
  memcpy(copy, p, (size_t)total);
  s->blobs[s->nblobs++] = copy;
  const char *strtab = copy + NANO_DH_SITES_HDR_SIZE + (size_t)nsites * NANO_DH_SITE_SIZE;
  if (s->count + nsites > s->cap) {
    size_t cap = (s->count + nsites) * 2;
    struct nano_dh_site *n = realloc(s->sites, cap * sizeof *n);
    if (!n)
      return dhsites_fail(errmsg, errlen, what, "out of memory", at);
    s->sites = n;
    s->cap = cap;
  }
  for (uint32_t i = 0; i < nsites; i++) {
    const unsigned char *e =
        (const unsigned char *)copy + NANO_DH_SITES_HDR_SIZE + (size_t)i * NANO_DH_SITE_SIZE;
    uint32_t kern = dhsites_u32(e), file = dhsites_u32(e + 4);
    if (kern >= strbytes || file >= strbytes)
      return dhsites_fail(errmsg, errlen, what, "string offset out of range", at);
    struct nano_dh_site *d = &s->sites[s->count++];
    d->id = (uint64_t)module << 32 | i;
    d->kernel = strtab + kern;
    d->file = strtab + file;
    d->line = dhsites_u32(e + 8);
    d->column = dhsites_u32(e + 12);
    d->kind = e[16];
    d->addrspace = e[17];
    d->flags = e[18];
    d->size = dhsites_u32(e + 20);
  }
  return (long)(padded <= len ? padded : total);
}

/* Orders sites by id (nano_dh_sites_find searches them). */
static int dhsites_cmp(const void *a, const void *b) {
  uint64_t x = ((const struct nano_dh_site *)a)->id, y = ((const struct nano_dh_site *)b)->id;
  return x < y ? -1 : x > y;
}

int nano_dh_sites_add_blob(struct nano_dh_sites *s, const void *data, size_t len, const char *what,
                           char *errmsg, size_t errlen) {
  const unsigned char *p = data;
  size_t at = 0;
  int blobs = 0;
  while (at < len) {
    if (p[at] == 0) { /* alignment padding between blobs */
      at++;
      continue;
    }
    long n = dhsites_parse_one(s, p + at, len - at, what, at, errmsg, errlen);
    if (n < 0)
      return -1;
    at += (size_t)n;
    blobs++;
  }
  if (s->count)
    qsort(s->sites, s->count, sizeof *s->sites, dhsites_cmp);
  return blobs;
}

/* Adds the blob of symbol `sym` (NANO_DH_SITES_SYMBOL...) of a file whose
 * table has no section of its own (a cubin: the table is a global in
 * .nv.global.init). Returns blobs added or -1. */
static int dhsites_add_symbol(struct nano_dh_sites *s, Elf *elf, const GElf_Sym *sym,
                              const char *what, char *errmsg, size_t errlen) {
  Elf_Scn *scn = elf_getscn(elf, sym->st_shndx);
  GElf_Shdr sh;
  Elf_Data *d = NULL;
  uint64_t at = 0;
  if (scn && gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS) {
    /* st_value is an address (sh_addr is 0 in relocatable files) */
    d = sym->st_value >= sh.sh_addr ? elf_getdata(scn, NULL) : NULL;
    at = sym->st_value - sh.sh_addr;
  }
  if (!d || !d->d_buf || at > d->d_size || sym->st_size > d->d_size - at) {
    snprintf(errmsg, errlen, "%s: site table symbol lies outside its section", what);
    return -1;
  }
  return nano_dh_sites_add_blob(s, (const char *)d->d_buf + at, sym->st_size, what, errmsg, errlen);
}

/* The site tables of an ELF image: the NANO_DH_SITES_SECTION sections, or
 * in a cubin without them (PTX has no sections) the NANO_DH_SITES_SYMBOL
 * symbols. */
static int dhsites_scan(struct nano_dh_sites *s, Elf *elf, const char *what, char *errmsg,
                        size_t errlen) {
  size_t shstrndx;
  if (elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx) != 0) {
    snprintf(errmsg, errlen, "%s: not an ELF file: %s", what, elf_errmsg(-1));
    return -1;
  }
  int added = 0, sections = 0;
  Elf_Scn *symtab = NULL;
  GElf_Shdr symsh = {0};
  for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) {
      snprintf(errmsg, errlen, "%s: bad section header: %s", what, elf_errmsg(-1));
      return -1;
    }
    if (sh.sh_type == SHT_SYMTAB) {
      symtab = scn;
      symsh = sh;
    }
    const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (!name || strcmp(name, NANO_DH_SITES_SECTION) != 0 || sh.sh_type == SHT_NOBITS)
      continue;
    Elf_Data *d = elf_getdata(scn, NULL);
    if (!d) {
      snprintf(errmsg, errlen, "%s: cannot read section %s: %s", what, name, elf_errmsg(-1));
      return -1;
    }
    int n = nano_dh_sites_add_blob(s, d->d_buf, d->d_size, what, errmsg, errlen);
    if (n < 0)
      return -1;
    added += n;
    sections++;
  }
  /* only cubins keep tables as symbols: no symbol scan of big host files */
  GElf_Ehdr eh;
  if (sections || !symtab || !gelf_getehdr(elf, &eh) || eh.e_machine != EM_CUDA)
    return added;
  Elf_Data *syms = elf_getdata(symtab, NULL);
  size_t nsyms = symsh.sh_entsize ? symsh.sh_size / symsh.sh_entsize : 0;
  for (size_t i = 0; syms && i < nsyms; i++) {
    GElf_Sym sym;
    const char *name =
        gelf_getsym(syms, (int)i, &sym) ? elf_strptr(elf, symsh.sh_link, sym.st_name) : NULL;
    if (!name || strncmp(name, NANO_DH_SITES_SYMBOL, strlen(NANO_DH_SITES_SYMBOL)) != 0 ||
        sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE)
      continue;
    int n = dhsites_add_symbol(s, elf, &sym, what, errmsg, errlen);
    if (n < 0)
      return -1;
    added += n;
  }
  return added;
}

int nano_dh_sites_add_elf_memory(struct nano_dh_sites *s, const void *image, size_t len,
                                 const char *what, char *errmsg, size_t errlen) {
  if (elf_version(EV_CURRENT) == EV_NONE) {
    snprintf(errmsg, errlen, "%s: libelf: %s", what, elf_errmsg(-1));
    return -1;
  }
  Elf *elf = elf_memory((char *)image, len);
  if (!elf) {
    snprintf(errmsg, errlen, "%s: not an ELF image: %s", what, elf_errmsg(-1));
    return -1;
  }
  int rc = dhsites_scan(s, elf, what, errmsg, errlen);
  elf_end(elf);
  return rc;
}

int nano_dh_sites_add_elf(struct nano_dh_sites *s, const char *path, char *errmsg, size_t errlen) {
  if (elf_version(EV_CURRENT) == EV_NONE) {
    snprintf(errmsg, errlen, "%s: libelf: %s", path, elf_errmsg(-1));
    return -1;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(errmsg, errlen, "%s: cannot open: %s", path, strerror(errno));
    return -1;
  }
  Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
  int rc = -1;
  if (!elf)
    snprintf(errmsg, errlen, "%s: not an ELF file: %s", path, elf_errmsg(-1));
  else
    rc = dhsites_scan(s, elf, path, errmsg, errlen);
  if (elf)
    elf_end(elf);
  close(fd);
  return rc;
}

const struct nano_dh_site *nano_dh_sites_find(const struct nano_dh_sites *s, uint64_t id) {
  struct nano_dh_site key = {.id = id};
  return s->count ? bsearch(&key, s->sites, s->count, sizeof *s->sites, dhsites_cmp) : NULL;
}

size_t nano_dh_sites_count(const struct nano_dh_sites *s) { return s->count; }

const struct nano_dh_site *nano_dh_sites_at(const struct nano_dh_sites *s, size_t i) {
  return i < s->count ? &s->sites[i] : NULL;
}

const char *nano_dh_kind_name(unsigned kind) {
  switch (kind) {
  case NANO_DH_KIND_UNSEEN:
    return "unseen";
  case NANO_DH_KIND_LOAD:
    return "load";
  case NANO_DH_KIND_STORE:
    return "store";
  case NANO_DH_KIND_ATOMIC:
    return "atomic";
  default:
    return "unknown";
  }
}

const char *nano_dh_addrspace_name(unsigned as) {
  switch (as) {
  case NANO_DH_AS_GENERIC:
    return "generic";
  case NANO_DH_AS_GLOBAL:
    return "global";
  case NANO_DH_AS_SHARED:
    return "shared";
  case NANO_DH_AS_CONSTANT:
    return "constant";
  default:
    return "unknown";
  }
}
