/*
** kerneldb benchmark driver: times opening + listing a file, and
** disassembling every kernel (with lines and memory classification).
**
** usage: kdb_bench FILE [list|all]   prints "open_list_s=... isa_s=... insns=..."
**        kdb_bench FILE extract DIR ARCH   writes each code object of ARCH as
**        DIR/co<N>.o (the baseline's input: llvm-objdump-15 -d reads one ELF)
*/
#define _POSIX_C_SOURCE 200809L
#include "kerneldb.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static double kdbb_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Writes every code object of arch as dir/co<N>.o; the count, or -1. */
static long kdbb_extract(kdb *db, const char *dir, const char *arch) {
  long written = 0;
  for (size_t i = 0; i < kdb_code_object_count(db); i++) {
    const kdb_code_object *co = kdb_code_object_at(db, i);
    if (strcmp(co->arch, arch) != 0)
      continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/co%zu.o", dir, i);
    FILE *f = fopen(path, "wb");
    size_t n = (size_t)co->image_size;
    int ok = f && fwrite(kdb_code_object_image(db, co), 1, n, f) == n;
    if (f && fclose(f) != 0)
      ok = 0;
    if (!ok) {
      fprintf(stderr, "kdb_bench: cannot write %s\n", path);
      return -1;
    }
    written++;
  }
  return written;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: kdb_bench FILE [list|all]\n");
    return 2;
  }
  int all = argc < 3 || strcmp(argv[2], "all") == 0;
  double t0 = kdbb_now();
  kdb *db;
  char err[512];
  if (kdb_open(argv[1], &db, err, sizeof err)) {
    fprintf(stderr, "kdb_bench: %s\n", err);
    return 2;
  }
  if (argc == 5 && strcmp(argv[2], "extract") == 0) {
    long w = kdbb_extract(db, argv[3], argv[4]);
    kdb_close(db);
    if (w < 0)
      return 1;
    printf("code_objects=%ld\n", w);
    return 0;
  }
  size_t n = kdb_kernel_count(db), names = 0;
  for (size_t i = 0; i < n; i++)
    names += strlen(kdb_kernel_at(db, i)->demangled);
  double t1 = kdbb_now();
  size_t insns = 0, mem = 0, lines = 0;
  if (all)
    for (size_t i = 0; i < n; i++) {
      const kdb_isa *isa;
      if (kdb_kernel_isa(db, kdb_kernel_at(db, i), &isa, err, sizeof err)) {
        fprintf(stderr, "kdb_bench: %s\n", err);
        return 1;
      }
      insns += isa->count;
      for (size_t j = 0; j < isa->count; j++) {
        mem += isa->insns[j].space != KDB_MEM_NONE;
        lines += isa->insns[j].src.file != NULL;
      }
    }
  double t2 = kdbb_now();
  printf("kernels=%zu name_bytes=%zu open_list_s=%.4f isa_s=%.4f insns=%zu mem_insns=%zu "
         "with_line=%zu\n",
         n, names, t1 - t0, t2 - t1, insns, mem, lines);
  kdb_close(db);
  return 0;
}
