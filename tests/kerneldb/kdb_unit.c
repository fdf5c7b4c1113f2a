/*
** kerneldb unit tests through the C API: memory classification of
** mnemonics, the twin naming rule, the line query, and concurrent lazy
** disassembly (8 threads on one database must see one cached ISA each,
** identical to a single-threaded run on a second database).
**
** usage: kdb_unit TEST CODE_OBJECT     TEST: classify | twin-names | threads | cache
*/
#include "kerneldb.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int kdbu_failures;

#define KDBU_CHECK(c, ...)                              \
  do {                                                  \
    if (!(c)) {                                         \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                     \
      fputc('\n', stderr);                              \
      kdbu_failures++;                                  \
    }                                                   \
  } while (0)

static void kdbu_classify(void) {
  static const struct {
    const char *m;
    kdb_mem_space s;
    kdb_mem_op o;
    uint32_t w;
  } t[] = {
      {"global_load_dwordx4", KDB_MEM_GLOBAL, KDB_MEMOP_LOAD, 16},
      {"global_load_dword", KDB_MEM_GLOBAL, KDB_MEMOP_LOAD, 4},
      {"global_load_b128", KDB_MEM_GLOBAL, KDB_MEMOP_LOAD, 16},
      {"global_load_ushort", KDB_MEM_GLOBAL, KDB_MEMOP_LOAD, 2},
      {"global_load_u8", KDB_MEM_GLOBAL, KDB_MEMOP_LOAD, 1},
      {"global_load_ubyte_d16_hi", KDB_MEM_GLOBAL, KDB_MEMOP_LOAD, 1},
      {"global_store_dwordx2", KDB_MEM_GLOBAL, KDB_MEMOP_STORE, 8},
      {"global_store_b96", KDB_MEM_GLOBAL, KDB_MEMOP_STORE, 12},
      {"global_atomic_add", KDB_MEM_GLOBAL, KDB_MEMOP_ATOMIC, 4},
      {"global_atomic_add_u32", KDB_MEM_GLOBAL, KDB_MEMOP_ATOMIC, 4},
      {"global_atomic_cmpswap_x2", KDB_MEM_GLOBAL, KDB_MEMOP_ATOMIC, 8},
      {"global_atomic_add_f64", KDB_MEM_GLOBAL, KDB_MEMOP_ATOMIC, 8},
      {"global_atomic_pk_add_f16", KDB_MEM_GLOBAL, KDB_MEMOP_ATOMIC, 4},
      {"flat_load_dword", KDB_MEM_FLAT, KDB_MEMOP_LOAD, 4},
      {"flat_atomic_swap_x2", KDB_MEM_FLAT, KDB_MEMOP_ATOMIC, 8},
      {"scratch_store_dwordx3", KDB_MEM_SCRATCH, KDB_MEMOP_STORE, 12},
      {"scratch_load_b32", KDB_MEM_SCRATCH, KDB_MEMOP_LOAD, 4},
      {"buffer_load_dword", KDB_MEM_BUFFER, KDB_MEMOP_LOAD, 4},
      {"buffer_load_format_xyzw", KDB_MEM_BUFFER, KDB_MEMOP_LOAD, 16},
      {"buffer_load_format_d16_xy", KDB_MEM_BUFFER, KDB_MEMOP_LOAD, 4},
      {"buffer_store_short", KDB_MEM_BUFFER, KDB_MEMOP_STORE, 2},
      {"buffer_atomic_add", KDB_MEM_BUFFER, KDB_MEMOP_ATOMIC, 4},
      {"tbuffer_load_format_x", KDB_MEM_BUFFER, KDB_MEMOP_LOAD, 4},
      {"ds_read_b32", KDB_MEM_LDS, KDB_MEMOP_LOAD, 4},
      {"ds_read2_b64", KDB_MEM_LDS, KDB_MEMOP_LOAD, 16},
      {"ds_read2st64_b32", KDB_MEM_LDS, KDB_MEMOP_LOAD, 8},
      {"ds_write_b8", KDB_MEM_LDS, KDB_MEMOP_STORE, 1},
      {"ds_write2_b32", KDB_MEM_LDS, KDB_MEMOP_STORE, 8},
      {"ds_load_b128", KDB_MEM_LDS, KDB_MEMOP_LOAD, 16},
      {"ds_store_2addr_b32", KDB_MEM_LDS, KDB_MEMOP_STORE, 8},
      {"ds_add_u32", KDB_MEM_LDS, KDB_MEMOP_ATOMIC, 4},
      {"ds_add_rtn_u64", KDB_MEM_LDS, KDB_MEMOP_ATOMIC, 8},
      {"ds_cmpst_b32", KDB_MEM_LDS, KDB_MEMOP_ATOMIC, 4},
      {"ds_swizzle_b32", KDB_MEM_NONE, KDB_MEMOP_NONE, 0},
      {"ds_bpermute_b32", KDB_MEM_NONE, KDB_MEMOP_NONE, 0},
      {"s_load_dwordx8", KDB_MEM_SCALAR, KDB_MEMOP_LOAD, 32},
      {"s_load_b512", KDB_MEM_SCALAR, KDB_MEMOP_LOAD, 64},
      {"s_buffer_load_dword", KDB_MEM_SCALAR, KDB_MEMOP_LOAD, 4},
      {"buffer_wbinvl1_vol", KDB_MEM_NONE, KDB_MEMOP_NONE, 0},
      {"buffer_gl0_inv", KDB_MEM_NONE, KDB_MEMOP_NONE, 0},
      {"v_add_f32_e32", KDB_MEM_NONE, KDB_MEMOP_NONE, 0},
      {"s_waitcnt", KDB_MEM_NONE, KDB_MEMOP_NONE, 0},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    kdb_mem_space s;
    kdb_mem_op o;
    uint32_t w;
    kdb_classify_mnemonic(t[i].m, &s, &o, &w);
    KDBU_CHECK(s == t[i].s && o == t[i].o && w == t[i].w, "%s: %s %s %u, want %s %s %u", t[i].m,
               kdb_mem_space_name(s), kdb_mem_op_name(o), w, kdb_mem_space_name(t[i].s),
               kdb_mem_op_name(t[i].o), t[i].w);
  }
}

static void kdbu_twin_names(void) {
  static const char *const t[][2] = {
      {"axpy", "__nano_twin_axpy"},
      {"_Z4axpyfPKfPfi", "__nano_twin__Z4axpyfPKfPfiPv"},
      {"_Z6noargsv", "__nano_twin__Z6noargsPv"},
      {"_Z5scaleIdEvPT_S0_", "__nano_twin__Z5scaleIdEvPT_S0_Pv"},
      {"_Z1fPv", "__nano_twin__Z1fPvPv"},
      {"_Z1gIiEvv", "__nano_twin__Z1gIiEvPv"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    char *n = kdb_twin_name(t[i][0]);
    KDBU_CHECK(n && strcmp(n, t[i][1]) == 0, "twin of %s: %s, want %s", t[i][0], n ? n : "(null)", t[i][1]);
    free(n);
  }
}

typedef struct kdbu_job {
  kdb *db;
  const kdb_isa **seen; /* per kernel, what this thread got */
} kdbu_job;

static void *kdbu_worker(void *arg) {
  kdbu_job *j = arg;
  size_t n = kdb_kernel_count(j->db);
  for (size_t r = 0; r < 3; r++)
    for (size_t i = 0; i < n; i++) {
      size_t k = (i + r * 7) % n;
      char err[256];
      const kdb_isa *isa;
      if (kdb_kernel_isa(j->db, kdb_kernel_at(j->db, k), &isa, err, sizeof err) == 0) j->seen[k] = isa;
    }
  return NULL;
}

static void kdbu_threads(const char *path) {
  kdb *db, *ref;
  char err[512];
  if (kdb_open(path, &db, err, sizeof err) || kdb_open(path, &ref, err, sizeof err)) {
    KDBU_CHECK(0, "open: %s", err);
    return;
  }
  size_t n = kdb_kernel_count(db);
  enum { T = 8 };
  pthread_t th[T];
  kdbu_job jobs[T];
  for (int t = 0; t < T; t++) {
    jobs[t].db = db;
    jobs[t].seen = calloc(n, sizeof *jobs[t].seen);
    KDBU_CHECK(jobs[t].seen && pthread_create(&th[t], NULL, kdbu_worker, &jobs[t]) == 0, "thread start");
  }
  for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
  size_t total = 0;
  for (size_t k = 0; k < n; k++) {
    const kdb_isa *want;
    KDBU_CHECK(kdb_kernel_isa(ref, kdb_kernel_at(ref, k), &want, err, sizeof err) == 0, "ref isa: %s", err);
    for (int t = 0; t < T; t++) {
      const kdb_isa *got = jobs[t].seen[k];
      KDBU_CHECK(got == jobs[0].seen[k], "kernel %zu: one cached ISA for all threads", k);
      KDBU_CHECK(got && got->count == want->count, "kernel %zu: instruction count", k);
      for (size_t i = 0; got && i < got->count && i < want->count; i++)
        KDBU_CHECK(got->insns[i].addr == want->insns[i].addr &&
                       strcmp(got->insns[i].mnemonic, want->insns[i].mnemonic) == 0 &&
                       strcmp(got->insns[i].operands, want->insns[i].operands) == 0,
                   "kernel %zu insn %zu differs", k, i);
    }
    total += want->count;
  }
  KDBU_CHECK(total > 50, "instructions disassembled: %zu", total);
  /* The line query finds what the instructions say. */
  const kdb_kernel *m[4];
  long f = kdb_find_kernels(db, "axpy", NULL, m, 4);
  KDBU_CHECK(f == 1, "find axpy: %ld", f);
  const kdb_isa *isa;
  if (f == 1 && kdb_kernel_isa(db, m[0], &isa, err, sizeof err) == 0) {
    size_t stores = 0, idx[64];
    for (size_t i = 0; i < isa->count; i++)
      if (isa->insns[i].op == KDB_MEMOP_STORE && isa->insns[i].space == KDB_MEM_GLOBAL) {
        size_t c = kdb_isa_line_insns(isa, "kdb_test.hip", isa->insns[i].src.line, idx, 64);
        int has = 0;
        for (size_t j = 0; j < c && j < 64; j++) has |= idx[j] == i;
        KDBU_CHECK(has, "line query of line %u returns the store", isa->insns[i].src.line);
        KDBU_CHECK(kdb_isa_line_insns(isa, "other.hip", isa->insns[i].src.line, idx, 64) == 0,
                   "line query matches the file name");
        stores++;
      }
    KDBU_CHECK(stores == 1, "axpy has one global store (%zu)", stores);
  }
  for (int t = 0; t < T; t++) free(jobs[t].seen);
  kdb_close(db);
  kdb_close(ref);
}

/* Disassembles every kernel of path in db and checks each ISA against ref's
** (instruction count, first and last address); returns the largest ISA's
** cache bytes. */
static uint64_t kdbu_walk(kdb *db, kdb *ref, int check_each) {
  char err[512];
  uint64_t largest = 0;
  for (size_t k = 0; k < kdb_kernel_count(db); k++) {
    const kdb_isa *got, *want;
    uint64_t before = kdb_isa_cache_bytes(db);
    if (kdb_kernel_isa(db, kdb_kernel_at(db, k), &got, err, sizeof err) != 0 ||
        kdb_kernel_isa(ref, kdb_kernel_at(ref, k), &want, err, sizeof err) != 0)
      continue; /* no code (tested elsewhere) */
    uint64_t after = kdb_isa_cache_bytes(db);
    if (after > before && after - before > largest)
      largest = after - before;
    if (check_each)
      KDBU_CHECK(got->count == want->count && got->count > 0 &&
                     got->insns[0].addr == want->insns[0].addr &&
                     got->insns[got->count - 1].addr == want->insns[want->count - 1].addr,
                 "kernel %zu: ISA as without a cache limit", k);
  }
  return largest;
}

/* The ISA cache (issue 19.2): releasing frees a kernel's ISA (or a code
** object's whole state) and it comes back the same; with a limit the cached
** bytes stay within the limit plus the two ISAs always kept, while every ISA
** is still right. */
static void kdbu_cache(const char *path) {
  kdb *db = NULL, *ref = NULL;
  char err[512];
  if (kdb_open(path, &db, err, sizeof err) || kdb_open(path, &ref, err, sizeof err)) {
    KDBU_CHECK(0, "open: %s", err);
    kdb_close(db);
    return;
  }
  uint64_t largest = kdbu_walk(db, ref, 1);
  uint64_t all = kdb_isa_cache_bytes(db);
  KDBU_CHECK(all > 2 * largest, "unbounded: every ISA cached (%llu bytes, largest %llu)",
             (unsigned long long)all, (unsigned long long)largest);
  for (size_t k = 0; k < kdb_kernel_count(db); k++)
    kdb_kernel_isa_release(db, kdb_kernel_at(db, k));
  KDBU_CHECK(kdb_isa_cache_bytes(db) == 0, "released: %llu bytes left",
             (unsigned long long)kdb_isa_cache_bytes(db));
  KDBU_CHECK(kdb_set_isa_cache_limit(db, 1) == 0, "the default limit is none");
  kdbu_walk(db, ref, 1);
  KDBU_CHECK(kdb_isa_cache_bytes(db) <= 2 * largest, "limited: %llu bytes cached, 2 largest %llu",
             (unsigned long long)kdb_isa_cache_bytes(db), (unsigned long long)(2 * largest));
  kdbu_walk(db, ref, 1); /* evicted ISAs are built again, the same */
  KDBU_CHECK(kdb_set_isa_cache_limit(db, 0) == 1, "the previous limit is returned");
  /* a code object's whole disassembly state goes, and comes back the same */
  kdbu_walk(db, ref, 0);
  for (size_t i = 0; i < kdb_code_object_count(db); i++)
    kdb_code_object_release(db, kdb_code_object_at(db, i));
  KDBU_CHECK(kdb_isa_cache_bytes(db) == 0, "code objects released: %llu bytes left",
             (unsigned long long)kdb_isa_cache_bytes(db));
  kdbu_walk(db, ref, 1);
  kdb_close(db);
  kdb_close(ref);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: kdb_unit classify|twin-names|threads [CODE_OBJECT]\n");
    return 2;
  }
  if (!strcmp(argv[1], "classify")) kdbu_classify();
  else if (!strcmp(argv[1], "twin-names")) kdbu_twin_names();
  else if (!strcmp(argv[1], "threads") && argc > 2) kdbu_threads(argv[2]);
  else if (!strcmp(argv[1], "cache") && argc > 2) kdbu_cache(argv[2]);
  else {
    fprintf(stderr, "kdb_unit: unknown test %s\n", argv[1]);
    return 2;
  }
  if (kdbu_failures) return 1;
  printf("PASS %s\n", argv[1]);
  return 0;
}
