/*
 * wave_emu.c: the device runtime (dh_device.c) on an emulated wave: its sums
 * (nano_dh_sum, the NANO_AGGREGATE=device path of GPU twins) against its
 * records, and its bounded wait for room it reserved.
 *
 * dh_device.c is compiled here with NANO_DH_EMU: its wave primitives
 * (lane_value, vote, active, lane) are this file's, over a wave whose
 * active lanes are fibers run in turn; a primitive returns once every
 * active lane has called it, as a GPU's shuffles and ballots do in
 * convergent code. Each case is one wave access, run twice through
 * __nano_dh_access: once with a sums table (what a GPU twin does under
 * NANO_AGGREGATE=device) and once without (its record, what the streaming
 * path hands the analyzers). The first's table (nano_aggregate_add_table)
 * plus whatever records it still made must give, field by field, the sums
 * aggregate.c makes of the second's record: every MemoryAnalysis counter per
 * site and space, every Heatmap page. Cases the device is meant to sum
 * (coalesced, strided, broadcast, reversed, aligned scattered, shared
 * phases of every size, pages) must not fall back to records, and the ones
 * it cannot (unaligned scattered lanes, mixed shared/global, sites kerneldb
 * widened or merged, memory intrinsics, unknown sites, other bank
 * geometries) must. Wave 32 and 64, partial and single-lane waves, NVIDIA
 * and AMD line, sector and LDS models, shards; a full page table counts what
 * it could not place.
 *
 * A ring the host stopped draining: a leader that reserved room it never
 * gets gives up after NANO_DH_STALL_SPINS_FACTOR times max_spins polls,
 * marks the descriptor stalled and drops; the next wave drops at once.
 * (Before, it waited forever, and so did its kernel: this test then hangs
 * and ctest's timeout fails it.)
 *
 * This checks the arithmetic and the protocol of the device code, not a
 * GPU: on hardware the same source runs with the real shuffles and atomics
 * (tests/gpu compares both paths there).
 */
#include "nano/aggregate.h"
#include "nano/dh_comms.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/dispatch/fiber.h"
#include "check.h"

void __nano_dh_access(void *desc, uint64_t site, uint64_t addr, uint32_t size, uint32_t space);

/* ---- the emulated wave -------------------------------------------------------- */

#define EMU_MAX_LANES 64
#define EMU_STACK (64 * 1024)

static struct {
  unsigned wave, nactive, cur, done;
  unsigned order[EMU_MAX_LANES]; /* the active lanes, ascending */
  uint64_t exec, slot[EMU_MAX_LANES];
  struct nano_fiber main, fiber[EMU_MAX_LANES];
  char *stack[EMU_MAX_LANES];
  /* the access */
  void *desc;
  uint64_t site, addr[EMU_MAX_LANES];
  uint32_t size[EMU_MAX_LANES], space, hwid;
  unsigned char shared[EMU_MAX_LANES];
} E;

static unsigned emu_me(void) { return E.order[E.cur]; }

/* The next active lane runs (the wave's lanes take turns). */
static void emu_next(void) {
  if (E.nactive == 1)
    return;
  unsigned from = E.cur;
  E.cur = (E.cur + 1) % E.nactive;
  nano_fiber_switch(&E.fiber[E.order[from]], &E.fiber[E.order[E.cur]]);
}

uint32_t nano_emu_wave_size(void) { return E.wave; }
uint64_t nano_emu_active(void) { return E.exec; }
uint32_t nano_emu_lane(void) { return emu_me(); }
_Bool nano_emu_is_shared(uint64_t addr) {
  (void)addr;
  return E.shared[emu_me()];
}
uint32_t nano_emu_hwid(void) { return E.hwid; }

/* Bytes another leader reserves just before the next reservation (once). */
static uint64_t emu_race;
uint64_t nano_emu_reserve_add(uint64_t *p, uint64_t v) {
  *p += emu_race;
  emu_race = 0;
  return __sync_fetch_and_add(p, v);
}

/* Every lane puts its value, then every lane reads: two turns of the wave,
 * so that no lane puts the next value before all have read this one. */
uint64_t nano_emu_lane_value(uint64_t v, uint32_t lane) {
  CHECK(E.exec >> lane & 1, "lane_value of inactive lane %u", lane);
  E.slot[emu_me()] = v;
  emu_next();
  uint64_t r = E.slot[lane];
  emu_next();
  return r;
}

uint64_t nano_emu_vote(_Bool p) {
  E.slot[emu_me()] = p;
  emu_next();
  uint64_t mask = 0;
  for (unsigned i = 0; i < E.nactive; i++)
    if (E.slot[E.order[i]])
      mask |= 1ull << E.order[i];
  emu_next();
  return mask;
}

static void emu_lane_main(void *arg) {
  unsigned lane = (unsigned)(uintptr_t)arg;
  __nano_dh_access(E.desc, E.site, E.addr[lane], E.size[lane], E.space);
  if (++E.done == E.nactive)
    nano_fiber_switch(&E.fiber[lane], &E.main);
  emu_next();
  CHECK(0, "lane %u resumed after its access", lane);
}

/* One access of the wave's active lanes (E.exec) through the device code. */
static void emu_run(void *desc) {
  E.desc = desc;
  E.nactive = E.cur = E.done = 0;
  for (unsigned l = 0; l < E.wave; l++)
    if (E.exec >> l & 1) {
      E.order[E.nactive++] = l;
      if (!E.stack[l])
        CHECK((E.stack[l] = malloc(EMU_STACK)) != NULL, "stack");
      nano_fiber_init(&E.fiber[l], E.stack[l], EMU_STACK, emu_lane_main, (void *)(uintptr_t)l);
    }
  nano_fiber_switch(&E.main, &E.fiber[E.order[0]]);
  CHECK(E.done == E.nactive, "%u of %u lanes finished", E.done, E.nactive);
}

/* ---- the dispatch: sites, descriptor, ring ------------------------------------ */

#define EMU_MODULE 0x5eu
/* The module's sites by index: global loads of each size of emu_global,
 * shared stores of each size of emu_shared, then generic 4- and 8-byte
 * accesses, a memcpy, a load kerneldb widened to 16 bytes, one it merged, a
 * constant load. The next index has a slot but no site; the one after has
 * neither. */
static const uint32_t emu_global[] = {1, 2, 4, 8, 16, 12};
static const uint32_t emu_shared[] = {1, 2, 4, 8, 16, 32, 128, 256};
#define EMU_NGLOBAL (sizeof emu_global / sizeof *emu_global)
#define EMU_NSHARED (sizeof emu_shared / sizeof *emu_shared)
enum {
  EMU_GENERIC4 = EMU_NGLOBAL + EMU_NSHARED,
  EMU_GENERIC8,
  EMU_MEMCPY,
  EMU_WIDENED,
  EMU_MERGED,
  EMU_CONSTANT,
  EMU_SITES,
  EMU_SLOTS = EMU_SITES + 1
};
static struct nano_dh_site emu_sites[EMU_SITES];

static uint64_t emu_id(uint32_t index) { return (uint64_t)EMU_MODULE << 32 | index; }

static uint32_t emu_sized(const uint32_t *sizes, unsigned n, uint32_t z, uint32_t first) {
  for (unsigned i = 0; i < n; i++)
    if (sizes[i] == z)
      return first + i;
  CHECK(0, "no site of %u bytes", z);
}

static uint64_t emu_global_site(uint32_t z) { return emu_id(emu_sized(emu_global, EMU_NGLOBAL, z, 0)); }
static uint64_t emu_shared_site(uint32_t z) {
  return emu_id(emu_sized(emu_shared, EMU_NSHARED, z, EMU_NGLOBAL));
}

static void emu_sites_init(void) {
  for (uint32_t i = 0; i < EMU_SITES; i++) {
    struct nano_dh_site *s = &emu_sites[i];
    *s = (struct nano_dh_site){emu_id(i), "k", "k.cu", 1 + i, 1, NANO_DH_KIND_LOAD,
                               NANO_DH_AS_GLOBAL, 0, 4};
    if (i < EMU_NGLOBAL) {
      s->size = emu_global[i];
    } else if (i < EMU_GENERIC4) {
      s->kind = NANO_DH_KIND_STORE;
      s->addrspace = NANO_DH_AS_SHARED;
      s->size = emu_shared[i - EMU_NGLOBAL];
    } else if (i == EMU_GENERIC4 || i == EMU_GENERIC8) {
      s->addrspace = NANO_DH_AS_GENERIC;
      s->size = i == EMU_GENERIC4 ? 4 : 8;
    } else if (i == EMU_MEMCPY) {
      s->kind = NANO_DH_KIND_STORE;
      s->flags = NANO_DH_SITE_MEMINTRINSIC;
      s->size = 0;
    } else if (i == EMU_CONSTANT) {
      s->addrspace = NANO_DH_AS_CONSTANT;
    }
  }
}

static const struct nano_dh_site *emu_site(const struct nano_dispatch_info *info, uint64_t id) {
  (void)info;
  return id >> 32 == EMU_MODULE && (uint32_t)id < EMU_SITES ? &emu_sites[(uint32_t)id] : NULL;
}

static int emu_isa_width(const struct nano_dispatch_info *info, uint64_t id, uint32_t *width) {
  (void)info;
  switch ((uint32_t)id) {
  case EMU_WIDENED:
    *width = 16;
    return NANO_ISA_WIDER;
  case EMU_MERGED:
    return NANO_ISA_MERGED;
  default:
    *width = 0;
    return NANO_ISA_SAME;
  }
}

#define EMU_RING (1u << 20)
#define EMU_PAGE_BYTES 4096u
#define EMU_PAGE_SLOTS 1024u


static unsigned char emu_ring[EMU_RING] __attribute__((aligned(64)));
static uint64_t emu_tail;

static void emu_desc_init(struct nano_dh_desc *d, void *sums) {
  memset(d, 0, sizeof *d);
  d->magic = NANO_DH_MAGIC;
  d->version = NANO_DH_VERSION;
  d->data = (uint64_t)(uintptr_t)emu_ring;
  d->capacity = EMU_RING;
  d->tail_addr = (uint64_t)(uintptr_t)&emu_tail;
  d->max_spins = 1;
  d->block_hi[0] = d->block_hi[1] = d->block_hi[2] = ~0u;
  d->sums = (uint64_t)(uintptr_t)sums;
  memset(emu_ring, 0, sizeof emu_ring);
}

/* Adds the records in the ring of d to a; their number. */
static unsigned emu_drain(const struct nano_dh_desc *d, struct nano_aggregate *a) {
  unsigned n = 0;
  char err[128];
  for (uint64_t off = 0; off < d->head;) {
    struct nano_dh_record r;
    long got = nano_dh_decode(emu_ring + off, d->head - off, &r, err, sizeof err);
    CHECK(got > 0, "record at %llu: %s", (unsigned long long)off, got ? err : "incomplete");
    nano_aggregate_add(a, &r);
    off += (uint64_t)got;
    n++;
  }
  return n;
}

/* ---- comparing the two paths --------------------------------------------------- */

static int emu_site_cmp(const void *x, const void *y) {
  const struct nano_site_counts *a = x, *b = y;
  return a->site != b->site ? (a->site < b->site ? -1 : 1) : (int)a->space - (int)b->space;
}

static int emu_page_cmp(const void *x, const void *y) {
  const struct nano_page_counts *a = x, *b = y;
  return a->page < b->page ? -1 : a->page > b->page;
}

/* Every field of both aggregates' views equal. */
static void emu_same(struct nano_aggregate *dev, struct nano_aggregate *host, const char *what) {
  struct nano_aggregates v[2];
  CHECK(nano_aggregate_view(dev, "device", &v[0]) == 0 &&
            nano_aggregate_view(host, "host", &v[1]) == 0,
        "views");
  for (int k = 0; k < 2; k++) {
    qsort((void *)v[k].sites, v[k].nsites, sizeof *v[k].sites, emu_site_cmp);
    qsort((void *)v[k].pages, v[k].npages, sizeof *v[k].pages, emu_page_cmp);
  }
  CHECK(v[0].nsites == v[1].nsites, "%s: %zu sites summed on the device, %zu from records", what,
        v[0].nsites, v[1].nsites);
  CHECK(v[0].unknown_site_records == v[1].unknown_site_records, "%s: unknown %llu vs %llu", what,
        (unsigned long long)v[0].unknown_site_records,
        (unsigned long long)v[1].unknown_site_records);
  for (size_t i = 0; i < v[0].nsites; i++) {
    const struct nano_site_counts *a = &v[0].sites[i], *b = &v[1].sites[i];
#define EMU_FIELD(f)                                                                               \
  CHECK(a->f == b->f, "%s: site %llx space %u: " #f " %llu on the device, %llu from records",     \
        what, (unsigned long long)a->site, a->space, (unsigned long long)a->f,                     \
        (unsigned long long)b->f)
    EMU_FIELD(site);
    EMU_FIELD(space);
    EMU_FIELD(size);
    EMU_FIELD(isa_size);
    EMU_FIELD(merged);
    EMU_FIELD(executions);
    EMU_FIELD(accesses);
    EMU_FIELD(bytes);
    EMU_FIELD(lines_needed);
    EMU_FIELD(lines_used);
    EMU_FIELD(sectors_needed);
    EMU_FIELD(sectors_used);
    EMU_FIELD(bank_conflicts);
#undef EMU_FIELD
  }
  CHECK(v[0].npages == v[1].npages && v[0].page_accesses == v[1].page_accesses &&
            v[0].pages_lost == v[1].pages_lost,
        "%s: pages %zu/%zu, accesses %llu/%llu", what, v[0].npages, v[1].npages,
        (unsigned long long)v[0].page_accesses, (unsigned long long)v[1].page_accesses);
  for (size_t i = 0; i < v[0].npages; i++)
    CHECK(v[0].pages[i].page == v[1].pages[i].page &&
              v[0].pages[i].accesses == v[1].pages[i].accesses,
          "%s: page %llx: %llu accesses on the device, %llu from records", what,
          (unsigned long long)v[0].pages[i].page, (unsigned long long)v[0].pages[i].accesses,
          (unsigned long long)v[1].pages[i].accesses);
  CHECK(nano_aggregate_records(dev) == nano_aggregate_records(host),
        "%s: %llu wave accesses on the device, %llu from records", what,
        (unsigned long long)nano_aggregate_records(dev),
        (unsigned long long)nano_aggregate_records(host));
}

/* ---- the cases ----------------------------------------------------------------- */

struct emu_model {
  const char *name;
  uint32_t line, sector, lds_model, banks, shards;
};

static struct nano_dispatch_info emu_info(const struct emu_model *m) {
  struct nano_dispatch_info info = {.abi = NANO_HANDLER_ABI, .size = sizeof info};
  info.kernel = info.kernel_name = "k";
  info.backend = "emu";
  info.arch = m->name;
  info.wave_size = E.wave;
  info.line_bytes = m->line;
  info.sector_bytes = m->sector;
  info.lds_banks = m->banks;
  info.lds_bank_bytes = 4;
  info.lds_model = m->lds_model;
  info.site = emu_site;
  info.isa_width = emu_isa_width;
  return info;
}

static uint64_t emu_rng = 0x9e3779b97f4a7c15ull;
static uint64_t emu_rand(void) {
  emu_rng ^= emu_rng << 13;
  emu_rng ^= emu_rng >> 7;
  emu_rng ^= emu_rng << 17;
  return emu_rng;
}

static unsigned emu_summed, emu_recorded;

/* Runs the wave access set up in E both ways under model m and compares;
 * `summed`: 1 the device must sum it, 0 it must be a record, -1 either. */
static void emu_case(const struct emu_model *m, int summed, const char *what) {
  struct nano_dispatch_info info = emu_info(m);
  unsigned aggs = NANO_AGG_SITES | NANO_AGG_PAGES;
  uint64_t head;
  size_t bytes = nano_aggregate_table(&info, aggs, EMU_PAGE_BYTES, EMU_MODULE, EMU_SLOTS,
                                      m->shards, EMU_PAGE_SLOTS, NULL, &head);
  CHECK(bytes > 0, "%s: no table for %s", what, m->name);
  void *table = calloc(1, bytes);
  CHECK(table && nano_aggregate_table(&info, aggs, EMU_PAGE_BYTES, EMU_MODULE, EMU_SLOTS,
                                      m->shards, EMU_PAGE_SLOTS, table, &head) == bytes,
        "table");
  struct nano_aggregate *dev = nano_aggregate_create(&info, aggs, EMU_PAGE_BYTES);
  struct nano_aggregate *host = nano_aggregate_create(&info, aggs, EMU_PAGE_BYTES);
  CHECK(dev && host, "aggregates");
  struct nano_dh_desc d;
  emu_desc_init(&d, table);
  emu_run(&d);
  unsigned records = emu_drain(&d, dev);
  CHECK(nano_aggregate_add_table(dev, table, bytes) == 0, "%s: the table does not read back",
        what);
  emu_desc_init(&d, NULL);
  emu_run(&d);
  CHECK(emu_drain(&d, host) == 1, "%s: the streaming path made no record", what);
  char full[160];
  snprintf(full, sizeof full, "%s (%s, wave %u, %u lanes)", what, m->name, E.wave,
           __builtin_popcountll(E.exec));
  CHECK(summed < 0 || (summed ? records == 0 : records == 1), "%s: %s", full,
        summed ? "fell back to a record" : "was summed where it must be a record");
  emu_same(dev, host, full);
  records ? emu_recorded++ : emu_summed++;
  nano_aggregate_destroy(dev);
  nano_aggregate_destroy(host);
  free(table);
}

/* Sets every lane of the wave: active by exec, address base + rank * stride
 * (signed), size, shared flag. */
static void emu_lanes(uint64_t exec, uint64_t base, int64_t stride, uint32_t size, int shared) {
  E.exec = exec;
  unsigned rank = 0;
  for (unsigned l = 0; l < E.wave; l++) {
    E.addr[l] = base + (uint64_t)((int64_t)rank * stride);
    E.size[l] = size;
    E.shared[l] = (unsigned char)shared;
    if (exec >> l & 1)
      rank++;
  }
}

static uint64_t emu_exec(int kind) {
  uint64_t full = E.wave == 64 ? ~0ull : (1ull << E.wave) - 1;
  switch (kind) {
  case 0:
    return full;
  case 1: /* one lane */
    return 1ull << (emu_rand() % E.wave);
  case 2: /* a tail: the first lanes */
    return full >> (1 + emu_rand() % (E.wave - 1));
  default: { /* divergent */
    uint64_t m = emu_rand() & full;
    return m ? m : 1;
  }
  }
}

#define EMU_GLOBAL_BASE 0x7f0000001000ull

static void emu_global_cases(const struct emu_model *m) {
  static const uint32_t sizes[] = {1, 4, 8, 16};
  for (int kind = 0; kind < 4; kind++)
    for (unsigned s = 0; s < sizeof sizes / sizeof *sizes; s++) {
      uint32_t z = sizes[s];
      uint64_t exec = emu_exec(kind);
      E.site = emu_global_site(z);
      static const int64_t strides[] = {1, 0, 2, 3, 4, 32, 64, 130, -1, -4};
      for (unsigned k = 0; k < sizeof strides / sizeof *strides; k++) {
        int64_t stride = strides[k] * (int64_t)z;
        uint64_t base = EMU_GLOBAL_BASE + (stride < 0 ? 64 * 4096 : 0) + z * (emu_rand() % 40);
        emu_lanes(exec, base, stride, z, 0);
        emu_case(m, 1, "global, lanes in progression");
      }
      /* aligned, scattered (duplicates, several lines and pages) */
      for (unsigned l = 0; l < E.wave; l++)
        E.addr[l] = EMU_GLOBAL_BASE + z * (emu_rand() % (3 * EMU_PAGE_BYTES / z));
      emu_case(m, 1, "global, aligned, scattered");
      if (z > 1) { /* unaligned, scattered: records unless in progression */
        for (unsigned l = 0; l < E.wave; l++)
          E.addr[l] = EMU_GLOBAL_BASE + 1 + z * (emu_rand() % 500);
        emu_case(m, -1, "global, unaligned, scattered");
      }
    }
  /* the cases' classification, on full waves */
  E.site = emu_global_site(4);
  emu_lanes(emu_exec(0), EMU_GLOBAL_BASE, 0, 4, 0);
  for (unsigned l = 0; l < E.wave; l++)
    E.addr[l] = EMU_GLOBAL_BASE + 4 * ((l * 37) % E.wave);
  emu_case(m, 1, "global, aligned, permuted");
  for (unsigned l = 0; l < E.wave; l++)
    E.addr[l] = EMU_GLOBAL_BASE + 2 + 4 * ((l * 37) % E.wave);
  emu_case(m, 0, "global, unaligned, permuted");
  E.site = emu_global_site(2);
  emu_lanes(emu_exec(0), EMU_GLOBAL_BASE + 1, 2, 2, 0);
  emu_case(m, 1, "global, unaligned, contiguous");
  E.site = emu_global_site(12); /* not a power of two */
  emu_lanes(emu_exec(0), EMU_GLOBAL_BASE, 12, 12, 0);
  emu_case(m, 1, "global, 12 bytes, contiguous");
  emu_lanes(emu_exec(0), EMU_GLOBAL_BASE, 40, 12, 0);
  emu_case(m, 1, "global, 12 bytes, strided");
  for (unsigned l = 0; l < E.wave; l++)
    E.addr[l] = EMU_GLOBAL_BASE + 12 * ((l * 37) % E.wave);
  emu_case(m, 0, "global, 12 bytes, permuted");
  E.site = emu_id(EMU_CONSTANT);
  emu_lanes(emu_exec(0), EMU_GLOBAL_BASE, 0, 4, 0);
  emu_case(m, 1, "constant, broadcast");
}

static void emu_shared_cases(const struct emu_model *m) {
  int banks = m->banks == 32;
  for (unsigned s = 0; s < EMU_NSHARED; s++) {
    uint32_t z = emu_shared[s];
    int can = banks && z <= 128;
    E.site = emu_shared_site(z);
    for (int kind = 0; kind < 4; kind++) {
      uint64_t exec = emu_exec(kind);
      static const int64_t strides[] = {1, 0, 2, 3, 8, 32, 33, -1};
      for (unsigned k = 0; k < sizeof strides / sizeof *strides; k++) {
        int64_t stride = strides[k] * (int64_t)z;
        emu_lanes(exec, stride < 0 ? 64 * 1024 : z * (emu_rand() % 64), stride, z, 1);
        emu_case(m, can, "shared, lanes in progression");
      }
      for (unsigned l = 0; l < E.wave; l++)
        E.addr[l] = z * (emu_rand() % (8192 / z));
      emu_case(m, can, "shared, aligned, scattered");
      for (unsigned l = 0; l < E.wave; l++)
        E.addr[l] = z * (emu_rand() % 4) * 32; /* few distinct units: broadcasts */
      emu_case(m, can, "shared, few units");
    }
  }
  E.site = emu_shared_site(4);
  emu_lanes(emu_exec(0), 4, 4, 4, 1);
  E.addr[E.wave - 1] = 4096 + 2;
  emu_case(m, 0, "shared, unaligned lane");
  emu_lanes(emu_exec(3), 0, 128, 4, 1);
  emu_case(m, banks, "shared, stride 128");
}

static void emu_generic_cases(const struct emu_model *m) {
  for (uint32_t z = 4; z <= 8; z *= 2) {
    E.site = emu_id(z == 4 ? EMU_GENERIC4 : EMU_GENERIC8);
    emu_lanes(emu_exec(0), EMU_GLOBAL_BASE, z, z, 0);
    emu_case(m, 1, "generic, global");
    emu_lanes(emu_exec(0), 0, 2 * z, z, 1);
    emu_case(m, m->banks == 32, "generic, shared");
    emu_lanes(emu_exec(0), 0, z, z, 1);
    E.shared[E.wave - 1] = 0;
    E.addr[E.wave - 1] = EMU_GLOBAL_BASE;
    emu_case(m, 0, "generic, mixed");
  }
}

static void emu_fallback_cases(const struct emu_model *m) {
  static const struct {
    uint32_t site, size;
    const char *what;
  } cases[] = {{EMU_MEMCPY, 64, "memcpy"},
               {EMU_WIDENED, 4, "widened by the machine code"},
               {EMU_MERGED, 4, "merged by the machine code"},
               {EMU_SITES, 4, "a slot without a site"},
               {EMU_SLOTS, 4, "no slot"}};
  for (unsigned i = 0; i < sizeof cases / sizeof *cases; i++) {
    E.site = emu_id(cases[i].site);
    emu_lanes(emu_exec(0), EMU_GLOBAL_BASE, cases[i].size, cases[i].size, 0);
    emu_case(m, 0, cases[i].what);
  }
  E.site = (uint64_t)(EMU_MODULE + 1) << 32 | 1;
  emu_lanes(emu_exec(0), EMU_GLOBAL_BASE, 4, 4, 0);
  emu_case(m, 0, "another module");
}

/* A page table of 2 slots: what it cannot place is counted, and with what
 * it placed makes every lane's access. */
static void emu_full_pages(const struct emu_model *m) {
  struct nano_dispatch_info info = emu_info(m);
  uint64_t head;
  size_t bytes = nano_aggregate_table(&info, NANO_AGG_PAGES, EMU_PAGE_BYTES, EMU_MODULE, EMU_SLOTS,
                                      1, 2, NULL, &head);
  void *table = calloc(1, bytes);
  CHECK(table && nano_aggregate_table(&info, NANO_AGG_PAGES, EMU_PAGE_BYTES, EMU_MODULE,
                                      EMU_SLOTS, 1, 2, table, &head) == bytes,
        "table");
  E.site = emu_global_site(4);
  emu_lanes(emu_exec(0), EMU_GLOBAL_BASE, EMU_PAGE_BYTES, 4, 0); /* a page per lane */
  struct nano_dh_desc d;
  emu_desc_init(&d, table);
  emu_run(&d);
  CHECK(d.head == 0, "a full page table made a record");
  struct nano_aggregate *a = nano_aggregate_create(&info, NANO_AGG_PAGES, EMU_PAGE_BYTES);
  CHECK(a && nano_aggregate_add_table(a, table, bytes) == 0, "read back");
  struct nano_aggregates v;
  CHECK(nano_aggregate_view(a, "device", &v) == 0, "view");
  CHECK(v.npages == 2 && v.page_accesses == 2 && v.pages_lost == E.wave - 2,
        "pages %zu, accesses %llu, lost %llu of %u lanes", v.npages,
        (unsigned long long)v.page_accesses, (unsigned long long)v.pages_lost, E.wave);
  nano_aggregate_destroy(a);
  free(table);
}

/* The host stopped taking records (the tail stays at 0): the ring has room
 * for one more record, the leader sees it, and another leader reserves it
 * first; this one waits for room that never comes. */
static void emu_stalled(void) {
  struct nano_dh_desc d;
  E.wave = 32;
  E.site = emu_global_site(4);
  emu_lanes(emu_exec(0), EMU_GLOBAL_BASE, 4, 4, 0);
  uint64_t record = NANO_DH_HDR_SIZE + NANO_DH_PAYLOAD_BYTES(NANO_DH_ENC_STRIDE, 32);
  emu_desc_init(&d, NULL);
  d.capacity = NANO_DH_MIN_CAPACITY;
  d.head = NANO_DH_MIN_CAPACITY - record;
  d.max_spins = 4;
  emu_tail = 0;
  emu_race = record;
  emu_run(&d);
  CHECK(d.stalled == 1 && d.dropped == 1 && d.head == NANO_DH_MIN_CAPACITY + record,
        "a leader that never gets the room it reserved: stalled %llu, dropped %llu, head %llu",
        (unsigned long long)d.stalled, (unsigned long long)d.dropped,
        (unsigned long long)d.head);
  emu_run(&d);
  CHECK(d.dropped == 2 && d.head == NANO_DH_MIN_CAPACITY + record,
        "after a stall a wave drops at once: dropped %llu, head %llu",
        (unsigned long long)d.dropped, (unsigned long long)d.head);
}

int main(void) {
  emu_sites_init();
  emu_stalled();
  static const struct emu_model models[] = {
      {"sm_90", 128, 32, NANO_LDS_PHASED, 32, 8},
      {"gfx908", 64, 64, NANO_LDS_AMD_WAVE64, 32, 4},
      {"gfx90a", 128, 128, NANO_LDS_AMD_WAVE64, 32, 1},
      {"gfx1030", 128, 128, NANO_LDS_PHASED, 32, 2},
      {"banks64", 128, 32, NANO_LDS_PHASED, 64, 1},
  };
  for (unsigned i = 0; i < sizeof models / sizeof *models; i++) {
    const struct emu_model *m = &models[i];
    for (unsigned wave = 32; wave <= 64; wave *= 2) {
      if (m->lds_model == NANO_LDS_AMD_WAVE64 && wave != 64)
        continue;
      E.wave = wave;
      E.hwid = (uint32_t)emu_rand();
      emu_global_cases(m);
      emu_shared_cases(m);
      emu_generic_cases(m);
      emu_fallback_cases(m);
      emu_full_pages(m);
    }
  }
  printf("wave_emu: a stalled ring ends its waits; %u wave accesses summed on the device, %u as records; every field equal to "
         "the streaming path's\n",
         emu_summed, emu_recorded);
  return 0;
}
