/*
** kerneldb: kernel argument names and types from DWARF.
**
** The AMDGPU metadata note names a kernel's arguments only when the kernel
** was built with -fhip-kernel-arg-name and never gives their C types with
** hipcc; a cubin's .nv.info gives neither. With -g, DWARF has both: the
** kernel's DW_TAG_subprogram (found by linkage name, or by name for extern
** "C" kernels) lists its DW_TAG_formal_parameter children in source order,
** which is the order of the explicit arguments. kdb_kernel_arg_names fills
** what the note left empty, once per code object, on request: reading the
** DWARF of every code object when a file is opened took a third of listing
** librocsparse (777 code objects). The strings go to the database's arena.
*/
#define _GNU_SOURCE
#include "kdb_internal.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The longest type name kept ("const float *" and the like; a longer one is
** cut). */
#define KDB_DWARF_TYPE_MAX 256
/* Type nesting followed (pointer to const pointer to ...); deeper is "?". */
#define KDB_DWARF_TYPE_DEPTH 16
/* Namespace nesting searched for kernels. */
#define KDB_DWARF_SCOPE_DEPTH 32

/* A DIE's attribute, following DW_AT_abstract_origin and DW_AT_specification. */
static const char *kdb_dwarf_str(Dwarf_Die *die, int name) {
  Dwarf_Attribute a;
  return dwarf_formstring(dwarf_attr_integrate(die, name, &a));
}

/* Appends s to buf (n bytes, NUL-terminated), cutting what does not fit. */
static void kdb_dwarf_cat(char *buf, size_t n, const char *s) {
  size_t l = strlen(buf);
  if (l + 1 < n)
    snprintf(buf + l, n - l, "%s", s);
}

/* Writes the C spelling of type die into buf: "const float *", "int", "T &".
** A qualifier of a pointer follows it ("float *const"), as C writes it. */
static void kdb_dwarf_type(Dwarf_Die *type, char *buf, size_t n, int depth) {
  Dwarf_Die inner, *has_inner = NULL;
  Dwarf_Attribute a;
  if (dwarf_attr_integrate(type, DW_AT_type, &a) && dwarf_formref_die(&a, &inner))
    has_inner = &inner;
  if (depth > KDB_DWARF_TYPE_DEPTH) {
    kdb_dwarf_cat(buf, n, "?");
    return;
  }
  const char *name = kdb_dwarf_str(type, DW_AT_name);
  switch (dwarf_tag(type)) {
  case DW_TAG_pointer_type:
  case DW_TAG_reference_type:
  case DW_TAG_rvalue_reference_type: {
    const char *op = dwarf_tag(type) == DW_TAG_pointer_type     ? " *"
                     : dwarf_tag(type) == DW_TAG_reference_type ? " &"
                                                                : " &&";
    if (has_inner)
      kdb_dwarf_type(has_inner, buf, n, depth + 1);
    else
      kdb_dwarf_cat(buf, n, "void");
    kdb_dwarf_cat(buf, n, op);
    return;
  }
  case DW_TAG_const_type:
  case DW_TAG_volatile_type:
  case DW_TAG_restrict_type: {
    const char *q = dwarf_tag(type) == DW_TAG_const_type      ? "const"
                    : dwarf_tag(type) == DW_TAG_volatile_type ? "volatile"
                                                              : "__restrict";
    int of_pointer = has_inner && (dwarf_tag(has_inner) == DW_TAG_pointer_type);
    if (!of_pointer) {
      kdb_dwarf_cat(buf, n, q);
      kdb_dwarf_cat(buf, n, " ");
    }
    if (has_inner)
      kdb_dwarf_type(has_inner, buf, n, depth + 1);
    else
      kdb_dwarf_cat(buf, n, "void");
    if (of_pointer) {
      kdb_dwarf_cat(buf, n, q);
    }
    return;
  }
  case DW_TAG_array_type:
    if (has_inner)
      kdb_dwarf_type(has_inner, buf, n, depth + 1);
    kdb_dwarf_cat(buf, n, "[]");
    return;
  case DW_TAG_structure_type:
  case DW_TAG_class_type:
  case DW_TAG_union_type:
  case DW_TAG_enumeration_type:
  case DW_TAG_base_type:
  case DW_TAG_typedef:
  default:
    kdb_dwarf_cat(buf, n, name ? name : "?");
    return;
  }
}

static int kdb_dwarf_kcmp(const void *a, const void *b) {
  const kdb_kernel *x = *(const kdb_kernel *const *)a, *y = *(const kdb_kernel *const *)b;
  return strcmp(x->name, y->name);
}

/* Fills kernel k's empty argument names and types from subprogram sp when
** its formal parameters are as many as k's explicit arguments. */
static void kdb_dwarf_fill(kdb *db, kdb_kernel *k, Dwarf_Die *sp) {
  Dwarf_Die p;
  size_t np = 0;
  if (dwarf_child(sp, &p) == 0)
    do
      np += dwarf_tag(&p) == DW_TAG_formal_parameter;
    while (dwarf_siblingof(&p, &p) == 0);
  if (np != k->explicit_arg_count || np == 0 || dwarf_child(sp, &p) != 0)
    return;
  kdb_arg *args = (kdb_arg *)k->args;
  size_t i = 0;
  do {
    if (dwarf_tag(&p) != DW_TAG_formal_parameter)
      continue;
    const char *name = kdb_dwarf_str(&p, DW_AT_name);
    if (!args[i].name && name)
      args[i].name = kdb_arena_strdup(&db->arena, name);
    Dwarf_Attribute a;
    Dwarf_Die type;
    if (!args[i].type_name && dwarf_attr_integrate(&p, DW_AT_type, &a) &&
        dwarf_formref_die(&a, &type)) {
      char buf[KDB_DWARF_TYPE_MAX] = "";
      kdb_dwarf_type(&type, buf, sizeof buf, 0);
      args[i].type_name = kdb_arena_strdup(&db->arena, buf);
    }
    i++;
  } while (dwarf_siblingof(&p, &p) == 0);
}

/* Looks for the kernels' subprograms among die's children (namespaces
** searched). */
static void kdb_dwarf_scope(kdb *db, Dwarf_Die *die, kdb_kernel **ks, size_t nk, int depth) {
  Dwarf_Die c;
  if (depth > KDB_DWARF_SCOPE_DEPTH || dwarf_child(die, &c) != 0)
    return;
  do {
    int tag = dwarf_tag(&c);
    if (tag == DW_TAG_namespace) {
      kdb_dwarf_scope(db, &c, ks, nk, depth + 1);
      continue;
    }
    if (tag != DW_TAG_subprogram || !dwarf_hasattr(&c, DW_AT_low_pc))
      continue; /* only definitions with code: the kernel itself */
    const char *name = kdb_dwarf_str(&c, DW_AT_linkage_name);
    if (!name)
      name = kdb_dwarf_str(&c, DW_AT_MIPS_linkage_name);
    if (!name)
      name = kdb_dwarf_str(&c, DW_AT_name);
    if (!name)
      continue;
    kdb_kernel key = {.name = name}, *kp = &key;
    kdb_kernel **hit = bsearch(&kp, ks, nk, sizeof *ks, kdb_dwarf_kcmp);
    if (hit)
      kdb_dwarf_fill(db, *hit, &c);
  } while (dwarf_siblingof(&c, &c) == 0);
}

/* Fills the arguments of the kernels [first, last) of db->kernels, all of
** code object co. */
static void kdb_dwarf_co(kdb *db, kdb_co_priv *co, size_t first, size_t last) {
  /* the kernels whose explicit arguments lack a name or a type, by name */
  kdb_kernel **ks = NULL;
  size_t nk = 0, cap = 0;
  for (size_t i = first; i < last; i++) {
    kdb_kernel *k = &db->kernels[i]->pub;
    int missing = 0;
    for (size_t j = 0; j < k->explicit_arg_count; j++)
      missing |= !k->args[j].name || !k->args[j].type_name;
    if (!missing)
      continue;
    if (kdb_reserve((void **)&ks, &cap, nk + 1, sizeof *ks)) {
      free(ks);
      return; /* out of memory: the columns stay empty */
    }
    ks[nk++] = k;
  }
  Dwarf *dw = nk ? dwarf_begin_elf(co->elf, DWARF_C_READ, NULL) : NULL;
  if (dw) {
    qsort(ks, nk, sizeof *ks, kdb_dwarf_kcmp);
    Dwarf_CU *cu = NULL;
    Dwarf_Die cudie;
    while (dwarf_get_units(dw, cu, &cu, NULL, NULL, &cudie, NULL) == 0)
      kdb_dwarf_scope(db, &cudie, ks, nk, 0);
    dwarf_end(dw);
  }
  free(ks);
}

void kdb_kernel_arg_names(kdb *db, const kdb_kernel *k) {
  kdb_co_priv *co = db->cos[k->co->index];
  if (pthread_mutex_lock(&co->lock) != 0)
    return;
  if (!co->args_filled) {
    co->args_filled = 1;
    kdb_dwarf_co(db, co, co->first_kernel, co->first_kernel + co->pub.kernel_count);
  }
  pthread_mutex_unlock(&co->lock);
}
