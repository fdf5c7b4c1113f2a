/*
** libFuzzer target for kerneldb: opens the input as kdb_open() would a file
** (format chosen by its magic), reads every listed field and disassembles
** every AMDGPU kernel with its DWARF lines. One source, several binaries:
** each binary (kdb_fuzz_<format>) gets its own seed corpus (bare code
** objects, bundles, compressed bundles, host ELF files, cubins), so the
** mutations stay near that format. kdb_fuzz_zstdwrap (chosen by the
** program's name) compresses its input into a valid compressed bundle first,
** so mutations reach the bundle parser behind the decompressor. Decompression
** is capped at 64 MiB so a bundle claiming a huge size costs no more.
*/
#include "kerneldb.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

static int kdb_fuzz_wrap;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  const char *name = *argc > 0 ? (*argv)[0] : "";
  size_t n = strlen(name);
  kdb_fuzz_wrap = n >= 8 && strcmp(name + n - 8, "zstdwrap") == 0;
  kdb_set_decompress_limit((uint64_t)64 << 20);
  return 0;
}

/* data as a compressed bundle v3 (zstd); malloc'd, NULL on failure. */
static uint8_t *kdb_fuzz_ccob(const uint8_t *data, size_t size, size_t *out) {
  size_t cap = ZSTD_compressBound(size);
  uint8_t *b = malloc(32 + cap);
  if (!b)
    return NULL;
  size_t c = ZSTD_compress(b + 32, cap, data, size, 1);
  if (ZSTD_isError(c)) {
    free(b);
    return NULL;
  }
  uint64_t total = 32 + c, raw = size;
  memcpy(b, "CCOB\x03\x00\x01\x00", 8);
  for (int i = 0; i < 8; i++) {
    b[8 + i] = (uint8_t)(total >> (8 * i));
    b[16 + i] = (uint8_t)(raw >> (8 * i));
    b[24 + i] = 0;
  }
  *out = (size_t)total;
  return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kdb *db;
  char err[512];
  uint8_t *wrapped = NULL;
  if (kdb_fuzz_wrap) {
    wrapped = kdb_fuzz_ccob(data, size, &size);
    if (!wrapped)
      return 0;
    data = wrapped;
  }
  int r = kdb_open_memory(data, size, "fuzz", &db, err, sizeof err);
  if (r != 0) {
    free(wrapped);
    /* Every failure carries a message naming the input. */
    if (strncmp(err, "fuzz", 4) != 0)
      __builtin_trap();
    return 0;
  }
  volatile size_t sink = 0;
  for (size_t c = 0; c < kdb_code_object_count(db); c++) {
    const kdb_code_object *co = kdb_code_object_at(db, c);
    sink += strlen(co->arch) + strlen(co->target_id) + co->kernel_count;
  }
  for (size_t i = 0; i < kdb_kernel_count(db); i++) {
    const kdb_kernel *k = kdb_kernel_at(db, i);
    sink += strlen(k->name) + strlen(k->demangled) + strlen(k->symbol);
    for (size_t a = 0; a < k->arg_count; a++) {
      const kdb_arg *arg = &k->args[a];
      sink += arg->size + arg->offset + (arg->name ? strlen(arg->name) : 0) +
              (arg->type_name ? strlen(arg->type_name) : 0) +
              (arg->value_kind ? strlen(arg->value_kind) : 0);
    }
    if (k->twin)
      sink += strlen(k->twin->name);
    const kdb_isa *isa;
    if (kdb_kernel_isa(db, k, &isa, err, sizeof err) != 0)
      continue;
    for (size_t j = 0; j < isa->count; j++) {
      const kdb_insn *in = &isa->insns[j];
      sink += in->size + strlen(in->mnemonic) + strlen(in->operands) + in->width;
      if (in->size)
        sink += in->bytes[in->size - 1];
      if (in->src.file)
        sink += strlen(in->src.file) + in->src.line;
      if (in->inlined_func)
        sink += strlen(in->inlined_func);
      if (in->inlined_at.file)
        sink += strlen(in->inlined_at.file);
    }
    if (isa->count && isa->insns[0].src.file) {
      size_t idx[4];
      sink += kdb_isa_line_insns(isa, isa->insns[0].src.file, isa->insns[0].src.line, idx, 4);
    }
  }
  (void)sink;
  kdb_close(db);
  free(wrapped);
  return 0;
}
