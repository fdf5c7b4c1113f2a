/*
** kerneldb: command-line queries over GPU code objects (libkerneldb).
**
**   kerneldb list  FILE [--json] [--arch gfxNNN] [--kernels REGEX]
**   kerneldb show  FILE [KERNEL] [--json] [--arch gfxNNN] [--kernels REGEX]
**   kerneldb isa   FILE KERNEL|--kernels REGEX [--json] [--arch gfxNNN] [--source]
**                  [--attribute innermost|user|outermost] [--library-files REGEX]
**   kerneldb lines FILE KERNEL|--kernels REGEX [--json] [--arch gfxNNN] [--attribute ...]
**   kerneldb sites FILE [--json] [--arch gfxNNN|host] [--kernels REGEX] [--isa]
**
** KERNEL is a mangled name, a demangled name or a unique prefix of either.
** Exit status: 0 found, 1 no such kernel (or an ambiguous prefix), 2 the
** input is unreadable or the command line is wrong.
*/
#define _GNU_SOURCE
#include "kerneldb.h"
#include "nano/dh_comms.h"
#include "nano/json.h"
#include "nano/outfile.h"
#include "nano/text.h"

#include <malloc.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Which frame of an instruction's inlining chain isa --source and lines
** report it at (--attribute). */
typedef enum kdbcli_attr { KDBCLI_INNERMOST, KDBCLI_USER, KDBCLI_OUTERMOST } kdbcli_attr;

typedef struct kdbcli_opts {
  const char *cmd, *file, *kernel, *arch, *regex, *library;
  int json, source, isa;
  kdbcli_attr attr;
  regex_t re;
} kdbcli_opts;

static void kdbcli_usage(FILE *f) {
  fprintf(f, "usage: kerneldb list|show|isa|lines|sites FILE [KERNEL] [--json] [--arch ARCH]\n"
             "                [--kernels REGEX] [--source] [--isa]\n"
             "  list   code objects (target, code-object version) and their kernels\n"
             "  show   arguments, kernarg layout and resources of kernels\n"
             "  isa    instructions of KERNEL (--source: with file:line and source text)\n"
             "  lines  source line -> instructions of KERNEL, with memory classification\n"
             "  sites  nanoprobe's instrumented accesses (site tables of GPU code objects and\n"
             "         of host ELF files with CPU kernels; --arch host for the latter);\n"
             "         --isa: the instructions of each site and what the machine code made\n"
             "         of it (widened, folded into a neighbour)\n"
             "  --arch ARCH  only code objects of that target, as list prints it: gfx90a,\n"
             "         sm_90, gfx90a:xnack+, gfx90a:sramecc-:xnack- (features in any order;\n"
             "         a bare arch matches every feature setting); host for CPU kernels\n"
             "  --attribute innermost|user|outermost  the source position isa --source and\n"
             "         lines give an inlined instruction: DWARF's own line (default), the\n"
             "         innermost one in your files (not a system or toolkit header), or the\n"
             "         kernel's own line; JSON has the whole chain (\"frames\") either way\n"
             "  --library-files REGEX  which files are library code for --attribute user\n"
             "         (POSIX extended, on normalised paths; default: /usr/include,\n"
             "         /usr/lib, /usr/local/include, /usr/local/cuda*, /opt/rocm*)\n"
             "exit: 0 found, 1 no such kernel, 2 unreadable input or usage error\n"
             "kerneldb --version prints the version.\n");
}

/* ---- JSON output ------------------------------------------------------------ */
static void kdbcli_jstr(const char *s) { nano_json_str(stdout, s); }
/* ,"key":"value" */
static void kdbcli_jfield(const char *key, const char *value) {
  printf(",\"%s\":", key);
  kdbcli_jstr(value);
}

static int kdbcli_selected(const kdbcli_opts *o, const kdb_kernel *k) {
  if (o->arch && !kdb_target_matches(k->co, o->arch))
    return 0;
  if (o->regex && regexec(&o->re, k->name, 0, NULL, 0) != 0 &&
      regexec(&o->re, k->demangled, 0, NULL, 0) != 0)
    return 0;
  return 1;
}

static void kdbcli_co_json(const kdb_code_object *co) {
  printf("{\"index\":%zu,\"vendor\":\"%s\",\"arch\":", co->index,
         co->vendor == KDB_VENDOR_AMDGPU ? "amdgpu" : "nvidia");
  kdbcli_jstr(co->arch);
  kdbcli_jfield("target_id", co->target_id);
  kdbcli_jfield("triple", co->triple);
  kdbcli_jfield("container", co->container);
  printf(",\"compressed\":%s,\"xnack\":\"%s\",\"sramecc\":\"%s\",\"code_object_version\":%d,"
         "\"image_size\":%llu,\"kernel_count\":%zu}",
         co->compressed ? "true" : "false", kdb_feature_name(co->xnack),
         kdb_feature_name(co->sramecc), co->code_object_version, (unsigned long long)co->image_size,
         co->kernel_count);
}

static void kdbcli_kernel_json(const kdb_kernel *k, int full) {
  printf("{\"code_object\":%zu,\"arch\":", k->co->index);
  kdbcli_jstr(k->co->arch);
  kdbcli_jfield("name", k->name);
  kdbcli_jfield("demangled", k->demangled);
  if (k->twin) {
    kdbcli_jfield("twin", k->twin->name);
  }
  if (k->original) {
    kdbcli_jfield("twin_of", k->original->name);
    printf(",\"twin_arg_index\":%zu", k->twin_arg_index);
  }
  if (full) {
    kdbcli_jfield("symbol", k->symbol);
    printf(",\"code_addr\":%llu,\"code_size\":%llu", (unsigned long long)k->code_addr,
           (unsigned long long)k->code_size);
    if (k->has_descriptor)
      printf(",\"descriptor\":{\"addr\":%llu,\"group_segment_fixed_size\":%u,"
             "\"private_segment_fixed_size\":%u,\"kernarg_size\":%u,\"kernel_code_entry_byte_"
             "offset\":%lld,"
             "\"compute_pgm_rsrc1\":%u,\"compute_pgm_rsrc2\":%u,\"compute_pgm_rsrc3\":%u,"
             "\"kernel_code_properties\":%u}",
             (unsigned long long)k->descriptor_addr, k->descriptor.group_segment_fixed_size,
             k->descriptor.private_segment_fixed_size, k->descriptor.kernarg_size,
             (long long)k->descriptor.kernel_code_entry_byte_offset,
             k->descriptor.compute_pgm_rsrc1, k->descriptor.compute_pgm_rsrc2,
             k->descriptor.compute_pgm_rsrc3, k->descriptor.kernel_code_properties);
    printf(",\"kernarg_segment_size\":%u,\"kernarg_segment_align\":%u,\"group_segment_size\":%u,"
           "\"private_segment_size\":%u,\"sgpr_count\":%u,\"vgpr_count\":%u,\"agpr_count\":%u,"
           "\"sgpr_spill_count\":%u,\"vgpr_spill_count\":%u,\"wavefront_size\":%u,"
           "\"max_flat_workgroup_size\":",
           k->kernarg_segment_size, k->kernarg_segment_align, k->group_segment_size,
           k->private_segment_size, k->sgpr_count, k->vgpr_count, k->agpr_count,
           k->sgpr_spill_count, k->vgpr_spill_count, k->wavefront_size);
    if (k->max_flat_workgroup_size) /* null: the file does not say */
      printf("%u", k->max_flat_workgroup_size);
    else
      printf("null");
    printf(",\"explicit_arg_count\":%zu,\"args\":[", k->explicit_arg_count);
    for (size_t i = 0; i < k->arg_count; i++) {
      const kdb_arg *a = &k->args[i];
      printf("%s{\"name\":", i ? "," : "");
      kdbcli_jstr(a->name);
      kdbcli_jfield("type_name", a->type_name);
      kdbcli_jfield("value_kind", a->value_kind);
      kdbcli_jfield("address_space", a->address_space);
      printf(",\"size\":%u,\"offset\":%u,\"align\":%u,\"hidden\":%s}", a->size, a->offset, a->align,
             a->hidden ? "true" : "false");
    }
    putchar(']');
  }
  putchar('}');
}

/* Says that the --arch/--kernels filters left no kernel. */
static void kdbcli_no_match(kdb *db, const kdbcli_opts *o) {
  fprintf(stderr, "kerneldb: %s: no kernel matches%s%s%s%s\n", kdb_name(db),
          o->regex ? " --kernels " : "", o->regex ? o->regex : "", o->arch ? " --arch " : "",
          o->arch ? o->arch : "");
}

/* ---- list / show ---------------------------------------------------------- */
static int kdbcli_list(kdb *db, const kdbcli_opts *o) {
  size_t nco = kdb_code_object_count(db), nk = kdb_kernel_count(db);
  if (o->json)
    printf("{\"file\":"), kdbcli_jstr(kdb_name(db)), printf(",\"code_objects\":[");
  int firstco = 1;
  for (size_t c = 0; c < nco; c++) {
    const kdb_code_object *co = kdb_code_object_at(db, c);
    if (o->arch && !kdb_target_matches(co, o->arch))
      continue;
    if (o->json) {
      printf("%s", firstco ? "" : ",");
      kdbcli_co_json(co);
    } else {
      if (co->vendor == KDB_VENDOR_AMDGPU)
        printf("code object %zu: %s (amdgpu), code object v%d, xnack %s, sramecc %s, %zu kernels "
               "[%s%s]\n",
               c, co->target_id, co->code_object_version, kdb_feature_name(co->xnack),
               kdb_feature_name(co->sramecc), co->kernel_count, co->container,
               co->compressed ? ", compressed" : "");
      else
        printf("code object %zu: %s (nvidia cubin), ELF ABI v%d, %zu kernels [%s]\n", c, co->arch,
               co->code_object_version, co->kernel_count, co->container);
    }
    firstco = 0;
  }
  if (o->json)
    printf("],\"kernels\":[");
  int first = 1;
  for (size_t i = 0; i < nk; i++) {
    const kdb_kernel *k = kdb_kernel_at(db, i);
    if (!kdbcli_selected(o, k))
      continue;
    if (o->json) {
      printf("%s", first ? "" : ",");
      kdbcli_kernel_json(k, 0);
    } else {
      printf("  [%zu] %s", k->co->index, k->demangled);
      if (strcmp(k->name, k->demangled) != 0)
        printf("  (%s)", k->name);
      if (k->twin)
        printf("  twin: %s", k->twin->name);
      putchar('\n');
    }
    first = 0;
  }
  if (o->json) {
    printf("],\"sites\":%zu,\"damaged\":[", kdb_site_count(db));
    for (size_t i = 0; i < kdb_damaged_count(db); i++) {
      if (i)
        putchar(',');
      kdbcli_jstr(kdb_damaged_message(db, i));
    }
    printf("]}\n");
  } else if (nco == 0)
    printf("no GPU code objects; %zu nanoprobe sites of CPU kernels (kerneldb sites %s)\n",
           kdb_site_count(db), kdb_name(db));
  if (first && (o->arch || o->regex)) {
    kdbcli_no_match(db, o);
    return 1;
  }
  return 0;
}

static void kdbcli_show_text(const kdb_kernel *k) {
  printf("kernel %s\n  mangled:   %s\n  code object %zu: %s\n", k->demangled, k->name, k->co->index,
         k->co->target_id);
  if (k->code_addr)
    printf("  code:      0x%llx, %llu bytes\n", (unsigned long long)k->code_addr,
           (unsigned long long)k->code_size);
  if (k->has_descriptor)
    printf("  descriptor %s at 0x%llx: rsrc1 0x%08x rsrc2 0x%08x rsrc3 0x%08x properties 0x%04x\n",
           k->symbol, (unsigned long long)k->descriptor_addr, k->descriptor.compute_pgm_rsrc1,
           k->descriptor.compute_pgm_rsrc2, k->descriptor.compute_pgm_rsrc3,
           k->descriptor.kernel_code_properties);
  printf("  kernarg segment: %u bytes, align %u\n", k->kernarg_segment_size,
         k->kernarg_segment_align);
  printf("  group segment: %u bytes, private segment: %u bytes\n", k->group_segment_size,
         k->private_segment_size);
  if (k->co->vendor == KDB_VENDOR_NVIDIA)
    printf("  registers per thread %u\n", k->vgpr_count);
  else
    printf("  sgpr %u, vgpr %u, agpr %u, spills sgpr %u vgpr %u\n", k->sgpr_count, k->vgpr_count,
           k->agpr_count, k->sgpr_spill_count, k->vgpr_spill_count);
  printf("  wavefront size %u, max flat workgroup size ", k->wavefront_size);
  if (k->max_flat_workgroup_size) /* 0: the file does not say (a cubin never does) */
    printf("%u\n", k->max_flat_workgroup_size);
  else
    printf("unknown\n");
  if (k->twin)
    printf("  twin: %s\n", k->twin->name);
  if (k->original)
    printf("  twin of: %s (extra argument %zu)\n", k->original->name, k->twin_arg_index);
  printf("  arguments (%zu, %zu explicit):\n", k->arg_count, k->explicit_arg_count);
  printf("    %6s %5s %5s  %-28s %-10s %s\n", "offset", "size", "align", "value kind", "space",
         "name: type");
  for (size_t i = 0; i < k->arg_count; i++) {
    const kdb_arg *a = &k->args[i];
    printf("    %6u %5u %5u  %-28s %-10s %s%s%s\n", a->offset, a->size, a->align,
           a->value_kind ? a->value_kind : "-", a->address_space ? a->address_space : "-",
           a->name ? a->name : "", a->type_name ? ": " : "", a->type_name ? a->type_name : "");
  }
}

/* ---- kernel resolution ------------------------------------------------------ */
/* Suggestions shown at most when a name matches nothing. */
#define KDBCLI_SUGGESTIONS 5
/* Characters of a name compared for a suggestion (the start: the function). */
#define KDBCLI_SUGGEST_CHARS 96
/* Blocks from this size up are mapped on their own (mallopt, main). */
#define KDBCLI_MMAP_THRESHOLD (128 << 10)

/* Edit distance of the first KDBCLI_SUGGEST_CHARS characters of a and b. */
static size_t kdbcli_distance(const char *a, const char *b) {
  size_t na = strnlen(a, KDBCLI_SUGGEST_CHARS), nb = strnlen(b, KDBCLI_SUGGEST_CHARS);
  size_t row[KDBCLI_SUGGEST_CHARS + 1];
  for (size_t j = 0; j <= nb; j++)
    row[j] = j;
  for (size_t i = 1; i <= na; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= nb; j++) {
      size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best)
        best = up + 1;
      if (row[j - 1] + 1 < best)
        best = row[j - 1] + 1;
      diag = up;
      row[j] = best;
    }
  }
  return row[nb];
}

/* Prints the kernels whose demangled name (its function part, before the
** arguments) is closest to `query`, when close enough to be a typo. */
static void kdbcli_suggest(kdb *db, const char *query) {
  const kdb_kernel *best[KDBCLI_SUGGESTIONS] = {0};
  size_t dist[KDBCLI_SUGGESTIONS], nbest = 0;
  size_t limit = strlen(query) / 3 + 2;
  for (size_t i = 0; i < kdb_kernel_count(db); i++) {
    const kdb_kernel *k = kdb_kernel_at(db, i);
    /* the function part: before the arguments, after a return type */
    const char *f = k->demangled;
    size_t end = strcspn(f, "("), sp = strcspn(f, " <");
    if (sp < end && f[sp] == ' ')
      f += sp + 1, end -= sp + 1;
    char fn[KDBCLI_SUGGEST_CHARS + 1];
    snprintf(fn, sizeof fn, "%.*s", (int)end, f);
    size_t d = kdbcli_distance(query, fn);
    if (d > limit)
      continue;
    int dup = 0;
    for (size_t j = 0; j < nbest && !dup; j++)
      dup = strcmp(best[j]->name, k->name) == 0;
    if (dup)
      continue;
    size_t at = nbest < KDBCLI_SUGGESTIONS ? nbest++ : KDBCLI_SUGGESTIONS - 1;
    if (at == KDBCLI_SUGGESTIONS - 1 && nbest == KDBCLI_SUGGESTIONS && d >= dist[at])
      continue;
    while (at > 0 && dist[at - 1] > d) { /* keep them by distance */
      best[at] = best[at - 1];
      dist[at] = dist[at - 1];
      at--;
    }
    best[at] = k;
    dist[at] = d;
  }
  for (size_t j = 0; j < nbest; j++)
    fprintf(stderr, "  did you mean %s\n", best[j]->demangled);
}

/* Resolves o->kernel to matches (malloc'd in *out); returns the count or -1
** after printing why (no such kernel, ambiguous). */
static long kdbcli_resolve(kdb *db, const kdbcli_opts *o, const kdb_kernel ***out) {
  size_t cap = kdb_kernel_count(db);
  const kdb_kernel **m = calloc(cap ? cap : 1, sizeof *m);
  if (!m) {
    fprintf(stderr, "kerneldb: out of memory\n");
    exit(2);
  }
  long n = kdb_find_kernels(db, o->kernel, o->arch, m, cap);
  if (n == 0) {
    fprintf(stderr, "kerneldb: %s: no kernel named '%s'%s%s\n", kdb_name(db), o->kernel,
            o->arch ? " for arch " : "", o->arch ? o->arch : "");
    kdbcli_suggest(db, o->kernel);
    free(m);
    return -1;
  }
  if (n < 0) {
    fprintf(stderr, "kerneldb: %s: '%s' names %ld kernels:\n", kdb_name(db), o->kernel, -n);
    for (long i = 0; i < -n && (size_t)i < cap; i++)
      fprintf(stderr, "  %s\n", m[i]->demangled);
    free(m);
    return -1;
  }
  *out = m;
  return n;
}

/* The kernels a command works on: KERNEL when given (see kdbcli_resolve),
** else every kernel passing --arch and --kernels. Count, or -1 after a
** message when there is none. */
static long kdbcli_targets(kdb *db, const kdbcli_opts *o, const kdb_kernel ***out) {
  if (o->kernel)
    return kdbcli_resolve(db, o, out);
  size_t nk = kdb_kernel_count(db);
  const kdb_kernel **m = calloc(nk ? nk : 1, sizeof *m);
  if (!m) {
    fprintf(stderr, "kerneldb: out of memory\n");
    exit(2);
  }
  long n = 0;
  for (size_t i = 0; i < nk; i++)
    if (kdbcli_selected(o, kdb_kernel_at(db, i)))
      m[n++] = kdb_kernel_at(db, i);
  if (n == 0) {
    kdbcli_no_match(db, o);
    free(m);
    return -1;
  }
  *out = m;
  return n;
}

static int kdbcli_show(kdb *db, const kdbcli_opts *o) {
  const kdb_kernel **m = NULL;
  long n = kdbcli_targets(db, o, &m);
  if (n < 0)
    return 1;
  if (o->json)
    printf("[");
  for (long i = 0; i < n; i++) {
    kdb_kernel_arg_names(db, m[i]);
    if (o->json) {
      printf("%s", i ? "," : "");
      kdbcli_kernel_json(m[i], 1);
    } else {
      kdbcli_show_text(m[i]);
    }
  }
  if (o->json)
    printf("]\n");
  free(m);
  return 0;
}

/* ---- source text ----------------------------------------------------------- */
/* A cache of one source file's lines for --source. */
typedef struct kdbcli_src {
  char *path;
  char *text;
  char **lines;
  size_t nlines;
} kdbcli_src;

static const char *kdbcli_src_line(kdbcli_src *s, const char *path, uint32_t line) {
  if (!path || !line)
    return NULL;
  if (!s->path || strcmp(s->path, path) != 0) {
    free(s->path);
    free(s->text);
    free(s->lines);
    memset(s, 0, sizeof *s);
    s->path = strdup(path);
    FILE *f = fopen(path, "rb");
    if (!f || !s->path) {
      if (f)
        fclose(f);
      return NULL;
    }
    size_t cap = 0, len = 0;
    char buf[65536];
    size_t r;
    while ((r = fread(buf, 1, sizeof buf, f)) > 0) {
      if (len + r + 1 > cap) {
        cap = (len + r + 1) * 2;
        char *t = realloc(s->text, cap);
        if (!t)
          break;
        s->text = t;
      }
      memcpy(s->text + len, buf, r);
      len += r;
    }
    fclose(f);
    if (!s->text)
      return NULL;
    s->text[len] = 0;
    size_t lc = 1;
    for (size_t i = 0; i < len; i++)
      lc += s->text[i] == '\n';
    s->lines = malloc(lc * sizeof *s->lines);
    if (!s->lines)
      return NULL;
    char *p = s->text;
    s->lines[s->nlines++] = p;
    for (; *p; p++)
      if (*p == '\n') {
        *p = 0;
        if (s->nlines < lc)
          s->lines[s->nlines++] = p + 1;
      }
  }
  return line <= s->nlines ? s->lines[line - 1] : NULL;
}

static void kdbcli_src_free(kdbcli_src *s) {
  free(s->path);
  free(s->text);
  free(s->lines);
}

/* ---- isa / lines ------------------------------------------------------------ */
static void kdbcli_insn_json(const kdb_insn *in) {
  printf("{\"addr\":%llu,\"size\":%u,\"bytes\":\"", (unsigned long long)in->addr, in->size);
  for (uint32_t b = 0; b < in->size; b++)
    printf("%02x", in->bytes[b]);
  printf("\",\"mnemonic\":");
  kdbcli_jstr(in->mnemonic);
  kdbcli_jfield("operands", in->operands);
  if (in->space != KDB_MEM_NONE)
    printf(",\"mem\":{\"space\":\"%s\",\"op\":\"%s\",\"width\":%u}", kdb_mem_space_name(in->space),
           kdb_mem_op_name(in->op), in->width);
  if (in->src.file) {
    kdbcli_jfield("file", in->src.file);
    printf(",\"line\":%u,\"column\":%u", in->src.line, in->src.column);
  }
  if (in->inlined_func) {
    printf(",\"inlined\":{\"function\":");
    kdbcli_jstr(in->inlined_func);
    kdbcli_jfield("file", in->inlined_at.file);
    printf(",\"line\":%u,\"column\":%u}", in->inlined_at.line, in->inlined_at.column);
  }
  if (in->frame_count) {
    printf(",\"user_frame\":%u,\"frames\":[", in->user_frame);
    for (uint32_t f = 0; f < in->frame_count; f++) {
      printf("%s{\"function\":", f ? "," : "");
      kdbcli_jstr(in->frames[f].func);
      kdbcli_jfield("file", in->frames[f].pos.file);
      printf(",\"line\":%u,\"column\":%u}", in->frames[f].pos.line, in->frames[f].pos.column);
    }
    putchar(']');
  }
  putchar('}');
}

/* The position --attribute reports in at; file NULL when none. */
static kdb_srcpos kdbcli_pos(const kdbcli_opts *o, const kdb_insn *in) {
  if (!in->frame_count)
    return in->src;
  uint32_t f = o->attr == KDBCLI_INNERMOST ? 0
               : o->attr == KDBCLI_USER    ? in->user_frame
                                           : in->frame_count - 1;
  return in->frames[f].pos;
}

/* Prints the inlining chain of in after its source line:
** "  [inlined: bump <- twice at k.hip:40 <- k(int*) at k.hip:44]". */
static void kdbcli_chain_text(const kdb_insn *in) {
  if (in->frame_count < 2)
    return;
  printf("  [inlined: %s", in->frames[0].func);
  for (uint32_t f = 1; f < in->frame_count; f++)
    printf(" <- %s at %s:%u", in->frames[f].func,
           in->frames[f].pos.file ? in->frames[f].pos.file : "?", in->frames[f].pos.line);
  putchar(']');
}

static void kdbcli_mem_text(const kdb_insn *in) {
  if (in->space != KDB_MEM_NONE)
    printf("  ; %s %s %uB", kdb_mem_space_name(in->space), kdb_mem_op_name(in->op), in->width);
}

static int kdbcli_isa(kdb *db, const kdbcli_opts *o, int by_line) {
  const kdb_kernel **m = NULL;
  long n = kdbcli_targets(db, o, &m);
  if (n < 0)
    return 1;
  int rc = 0;
  kdbcli_src src = {0};
  if (o->json)
    printf("[");
  const kdb_code_object *prev = NULL; /* streaming: one code object's state at a time */
  for (long i = 0; i < n; i++) {
    if (prev && prev != m[i]->co) {
      kdb_code_object_release(db, prev);
      malloc_trim(0); /* what its kernels' ISAs and line tables took goes back */
    }
    prev = m[i]->co;
    const kdb_kernel *k = m[i];
    const kdb_isa *isa;
    char err[512];
    if (kdb_kernel_isa(db, k, &isa, err, sizeof err)) {
      fprintf(stderr, "kerneldb: %s\n", err);
      rc = 2;
      continue;
    }
    if (o->json) {
      printf("%s{\"code_object\":%zu,\"arch\":", i ? "," : "", k->co->index);
      kdbcli_jstr(k->co->arch);
      kdbcli_jfield("name", k->name);
      printf(",\"has_lines\":%s,", isa->has_lines ? "true" : "false");
    } else {
      printf("%s (%s) in code object %zu (%s), %zu instructions\n", k->demangled, k->name,
             k->co->index, k->co->target_id, isa->count);
    }
    if (!by_line) {
      if (o->json)
        printf("\"insns\":[");
      const char *lastf = NULL;
      uint32_t lastl = 0;
      for (size_t j = 0; j < isa->count; j++) {
        const kdb_insn *in = &isa->insns[j];
        if (o->json) {
          printf("%s", j ? "," : "");
          kdbcli_insn_json(in);
          continue;
        }
        kdb_srcpos at = kdbcli_pos(o, in);
        if (o->source && !at.file && (lastf || j == 0)) {
          printf("; (no source line)\n");
          lastf = NULL;
        }
        if (o->source && at.file && (at.file != lastf || at.line != lastl)) {
          const char *t = kdbcli_src_line(&src, at.file, at.line);
          printf("; %s:%u:%u%s%s", at.file, at.line, at.column, t ? "  " : "", t ? t : "");
          kdbcli_chain_text(in);
          putchar('\n');
          lastf = at.file;
          lastl = at.line;
        }
        printf("  %012llx: %s%s%s", (unsigned long long)in->addr, in->mnemonic,
               in->operands[0] ? " " : "", in->operands);
        kdbcli_mem_text(in);
        putchar('\n');
      }
      if (o->json)
        printf("]}");
      kdb_kernel_isa_release(db, k); /* streaming: one kernel's ISA at a time */
      continue;
    }
    /* lines: group instructions by (file, line) in order of first appearance. */
    size_t *order = malloc((isa->count ? isa->count : 1) * sizeof *order);
    char *done = calloc(isa->count ? isa->count : 1, 1);
    if (!order || !done) {
      free(order);
      free(done);
      fprintf(stderr, "kerneldb: out of memory\n");
      free(m);
      return 2;
    }
    if (o->json)
      printf("\"lines\":[");
    int firstl = 1;
    for (size_t j = 0; j < isa->count; j++) {
      kdb_srcpos a = kdbcli_pos(o, &isa->insns[j]);
      if (done[j])
        continue;
      size_t cnt = 0;
      for (size_t l = j; l < isa->count; l++) {
        kdb_srcpos b = kdbcli_pos(o, &isa->insns[l]);
        int same = (a.file == NULL && b.file == NULL) ||
                   (a.file && b.file && a.line == b.line && strcmp(a.file, b.file) == 0);
        if (same && !done[l]) {
          done[l] = 1;
          order[cnt++] = l;
        }
      }
      if (o->json) {
        printf("%s{\"file\":", firstl ? "" : ",");
        kdbcli_jstr(a.file);
        printf(",\"line\":%u,\"insns\":[", a.line);
        for (size_t c = 0; c < cnt; c++) {
          printf("%s", c ? "," : "");
          kdbcli_insn_json(&isa->insns[order[c]]);
        }
        printf("]}");
      } else {
        const char *t = kdbcli_src_line(&src, a.file, a.line);
        if (a.file)
          printf("%s:%u%s%s\n", a.file, a.line, t ? "  " : "", t ? t : "");
        else
          printf("(no source position)\n");
        for (size_t c = 0; c < cnt; c++) {
          const kdb_insn *in = &isa->insns[order[c]];
          printf("  %012llx: %s%s%s", (unsigned long long)in->addr, in->mnemonic,
                 in->operands[0] ? " " : "", in->operands);
          kdbcli_mem_text(in);
          putchar('\n');
        }
      }
      firstl = 0;
    }
    if (o->json)
      printf("]}");
    free(order);
    free(done);
    kdb_kernel_isa_release(db, k);
  }
  if (o->json)
    printf("]\n");
  kdbcli_src_free(&src);
  free(m);
  return rc;
}

/* ---- sites ----------------------------------------------------------------- */
static const char *const kdbcli_isa_verdicts[] = {"unknown", "same", "wider", "merged"};

/* The arch --arch selects a site by: its code object's, "host" for host code. */
static const char *kdbcli_site_arch(const kdb_site *s) { return s->co ? s->co->arch : "host"; }

static int kdbcli_site_selected(const kdbcli_opts *o, const kdb_site *s) {
  if (o->arch && (s->co ? !kdb_target_matches(s->co, o->arch) : strcmp(o->arch, "host") != 0))
    return 0;
  if (o->regex && regexec(&o->re, s->function, 0, NULL, 0) != 0 &&
      regexec(&o->re, s->demangled, 0, NULL, 0) != 0)
    return 0;
  return 1;
}

/* Prints the instructions of s and the verdict on its width (--isa). */
static void kdbcli_site_isa(kdb *db, const kdbcli_opts *o, const kdb_site *s) {
  enum { KDBCLI_SITE_INSNS = 64 };
  kdb_site_insn ins[KDBCLI_SITE_INSNS];
  char err[512];
  long n = kdb_site_insns(db, s, ins, KDBCLI_SITE_INSNS, err, sizeof err);
  uint32_t width = 0;
  kdb_site_isa v = n < 0 ? KDB_SITE_ISA_UNKNOWN : kdb_site_isa_width(db, s, &width);
  if (o->json) {
    printf(",\"isa\":\"%s\",\"isa_width\":%u,\"insns\":[", kdbcli_isa_verdicts[v], width);
    for (long i = 0; i < n && i < KDBCLI_SITE_INSNS; i++) {
      printf("%s{\"kernel\":", i ? "," : "");
      kdbcli_jstr(ins[i].kernel->name);
      printf(",\"twin\":%s,\"insn\":", ins[i].kernel->original ? "true" : "false");
      kdbcli_insn_json(ins[i].insn);
      putchar('}');
    }
    putchar(']');
    if (n < 0) {
      kdbcli_jfield("isa_error", err);
    }
    return;
  }
  if (n < 0) {
    printf("      no ISA: %s\n", err);
    return;
  }
  for (long i = 0; i < n && i < KDBCLI_SITE_INSNS; i++) {
    const kdb_insn *in = ins[i].insn;
    printf("      %s %012llx: %s%s%s", ins[i].kernel->original ? "twin    " : "original",
           (unsigned long long)in->addr, in->mnemonic, in->operands[0] ? " " : "", in->operands);
    kdbcli_mem_text(in);
    putchar('\n');
  }
  if (v == KDB_SITE_ISA_WIDER)
    printf("      machine code: %u bytes per lane, the IR's %u-byte access widened\n", width,
           s->size);
  else if (v == KDB_SITE_ISA_MERGED)
    printf("      machine code: no instruction of its own in the original (folded into a "
           "neighbour's)\n");
  else if (v == KDB_SITE_ISA_UNKNOWN)
    printf("      machine code: no instruction at this position in the original (the backend "
           "moved it): the IR's width stands\n");
}

static int kdbcli_sites(kdb *db, const kdbcli_opts *o) {
  size_t n = kdb_site_count(db), shown = 0;
  if (o->json)
    printf("[");
  for (size_t i = 0; i < n; i++) {
    const kdb_site *s = kdb_site_at(db, i);
    if (!kdbcli_site_selected(o, s))
      continue;
    if (o->json) {
      printf("%s{\"id\":\"%016llx\",\"code_object\":", shown ? "," : "", (unsigned long long)s->id);
      if (s->co)
        printf("%zu", s->co->index);
      else
        printf("null");
      kdbcli_jfield("arch", kdbcli_site_arch(s));
      kdbcli_jfield("function", s->function);
      kdbcli_jfield("demangled", s->demangled);
      kdbcli_jfield("file", s->file);
      printf(",\"line\":%u,\"column\":%u,\"kind\":\"%s\",\"space\":\"%s\",\"size\":%u,"
             "\"flags\":%u",
             s->line, s->column, nano_dh_kind_name(s->kind), nano_dh_addrspace_name(s->addrspace),
             s->size, s->flags);
      if (o->isa)
        kdbcli_site_isa(db, o, s);
      putchar('}');
    } else {
      printf("%016llx %-8s %-6s %4u B %-8s %s:%u:%u  %s\n", (unsigned long long)s->id,
             kdbcli_site_arch(s), nano_dh_kind_name(s->kind), s->size,
             nano_dh_addrspace_name(s->addrspace), *s->file ? s->file : "<no file>", s->line,
             s->column, s->demangled);
      if (o->isa)
        kdbcli_site_isa(db, o, s);
    }
    shown++;
  }
  if (o->json)
    printf("]\n");
  if (shown == 0) {
    fprintf(stderr, "kerneldb: %s: no site%s%s%s%s (the file holds %zu)\n", kdb_name(db),
            o->regex ? " matches --kernels " : "", o->regex ? o->regex : "",
            o->arch ? " --arch " : "", o->arch ? o->arch : "", n);
    return 1;
  }
  return 0;
}

/* The streams text goes to before kdbcli_safe_text wrapped them. */
static FILE *kdbcli_real_out, *kdbcli_real_err;

/* Removes the wrappers, their bytes handed to the real streams (atexit too:
 * before stdio's own flush, which writes the real streams out). */
static void kdbcli_unwrap(void) {
  if (kdbcli_real_out && stdout != kdbcli_real_out) {
    fclose(stdout);
    stdout = kdbcli_real_out;
  }
  if (kdbcli_real_err && stderr != kdbcli_real_err) {
    fclose(stderr);
    stderr = kdbcli_real_err;
  }
}

/* Names and paths come from the file being read, which may be damaged or
 * hostile: text output (and every message) shows control bytes and broken
 * UTF-8 as \xNN instead of sending them to the terminal. JSON is escaped by
 * its writer already. */
static void kdbcli_safe_text(int json) {
  kdbcli_real_out = stdout;
  kdbcli_real_err = stderr;
  FILE *err = nano_text_stream(stderr);
  if (err) {
    setvbuf(err, NULL, _IOLBF, BUFSIZ);
    stderr = err;
  }
  FILE *out = json ? NULL : nano_text_stream(stdout);
  if (out)
    stdout = out;
  atexit(kdbcli_unwrap);
}

int main(int argc, char **argv) {
  /* Large blocks (a code object's line table, a big kernel's ISA) mapped
   * and unmapped whole: glibc's default threshold grows with each one freed,
   * and a walk over a library then keeps them in its heap. */
  mallopt(M_MMAP_THRESHOLD, KDBCLI_MMAP_THRESHOLD);
  kdbcli_opts o = {0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--json"))
      o.json = 1;
    else if (!strcmp(a, "--source"))
      o.source = 1;
    else if (!strcmp(a, "--isa"))
      o.isa = 1;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      kdbcli_usage(stdout);
      return 0;
    } else if (!strcmp(a, "--version")) {
      puts("kerneldb (nanoprobe) " NANO_VERSION);
      return 0;
    } else if (!strcmp(a, "--arch") || !strcmp(a, "--kernels") || !strcmp(a, "--attribute") ||
               !strcmp(a, "--library-files")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "kerneldb: %s needs a value\n", a);
        return 2;
      }
      const char *v = argv[++i];
      if (!strcmp(a, "--arch"))
        o.arch = v;
      else if (!strcmp(a, "--kernels"))
        o.regex = v;
      else if (!strcmp(a, "--library-files"))
        o.library = v;
      else if (!strcmp(v, "innermost") || !strcmp(v, "user") || !strcmp(v, "outermost"))
        o.attr = v[0] == 'i' ? KDBCLI_INNERMOST : v[0] == 'u' ? KDBCLI_USER : KDBCLI_OUTERMOST;
      else {
        fprintf(stderr, "kerneldb: --attribute %s: expected innermost, user or outermost\n", v);
        return 2;
      }
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "kerneldb: unknown option %s\n", a);
      kdbcli_usage(stderr);
      return 2;
    } else if (!o.cmd)
      o.cmd = a;
    else if (!o.file)
      o.file = a;
    else if (!o.kernel)
      o.kernel = a;
    else {
      fprintf(stderr, "kerneldb: unexpected argument %s\n", a);
      return 2;
    }
  }
  if (!o.cmd || !o.file) {
    kdbcli_usage(stderr);
    return 2;
  }
  kdbcli_safe_text(o.json);
  int list = !strcmp(o.cmd, "list"), show = !strcmp(o.cmd, "show"), isa = !strcmp(o.cmd, "isa"),
      lines = !strcmp(o.cmd, "lines"), sites = !strcmp(o.cmd, "sites");
  if (!list && !show && !isa && !lines && !sites) {
    fprintf(stderr, "kerneldb: unknown command %s\n", o.cmd);
    kdbcli_usage(stderr);
    return 2;
  }
  if ((isa || lines) && !o.kernel && !o.regex) {
    fprintf(stderr, "kerneldb: %s needs a KERNEL or --kernels REGEX\n", o.cmd);
    return 2;
  }
  if (o.arch && strcmp(o.arch, "host") != 0) {
    char arch[64], why[256];
    kdb_feature xnack, sramecc;
    if (kdb_target_parse(o.arch, arch, sizeof arch, &xnack, &sramecc, why, sizeof why) != 0) {
      fprintf(stderr, "kerneldb: --arch %s\n", why);
      return 2;
    }
  }
  if (o.regex) {
    int r = regcomp(&o.re, o.regex, REG_EXTENDED | REG_NOSUB);
    if (r) {
      char msg[256];
      regerror(r, &o.re, msg, sizeof msg);
      fprintf(stderr, "kerneldb: bad --kernels regex '%s': %s\n", o.regex, msg);
      return 2;
    }
  }
  kdb *db;
  char err[1024];
  /* --arch: the other targets' code objects are not even read (memory) */
  char arch[64] = "";
  kdb_feature xnack, sramecc;
  if (o.arch && strcmp(o.arch, "host") != 0 &&
      kdb_target_parse(o.arch, arch, sizeof arch, &xnack, &sramecc, err, sizeof err) != 0)
    arch[0] = 0; /* a malformed target is said where it is matched */
  if (kdb_open_arch(o.file, arch[0] ? arch : NULL, &db, err, sizeof err)) {
    fprintf(stderr, "kerneldb: %s\n", err);
    if (o.regex)
      regfree(&o.re);
    return 2;
  }
  if (o.library && kdb_set_library_files(db, o.library, err, sizeof err)) {
    fprintf(stderr, "kerneldb: --library-files: %s\n", err);
    kdb_close(db);
    if (o.regex)
      regfree(&o.re);
    return 2;
  }
  /* a file of several code objects with damaged ones: the others are read,
   * the damage said first and the exit status 2 */
  for (size_t i = 0; i < kdb_damaged_count(db); i++)
    fprintf(stderr, "kerneldb: %s (skipped; the other code objects are read)\n",
            kdb_damaged_message(db, i));
  int rc = list    ? kdbcli_list(db, &o)
           : show  ? kdbcli_show(db, &o)
           : sites ? kdbcli_sites(db, &o)
                   : kdbcli_isa(db, &o, lines);
  if (kdb_damaged_count(db))
    rc = 2;
  kdbcli_unwrap(); /* the text wrappers' bytes reach the real streams */
  if (nano_stdout_finish("kerneldb") != 0)
    rc = 2;
  kdb_close(db);
  if (o.regex)
    regfree(&o.re);
  return rc;
}
