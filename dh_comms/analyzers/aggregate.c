/*
 * aggregate.c: the sums of a dispatch's wave accesses that MemoryAnalysis and
 * Heatmap report (nano/aggregate.h), and the arithmetic behind them.
 *
 * Per site id and record space (NANO_DH_SPACE_*), one struct
 * nano_site_counts (nano/handler.h):
 *
 *   global (and generic accesses that went to global memory), per record:
 *     needed = ceil(distinct bytes / L)      the fewest lines that can hold
 *                                            the bytes the wave touched
 *     used   = |{ line of every byte any lane touched }|
 *   (omniprobe divides lanes * size instead, which makes a broadcast, all
 *   lanes at one address, "need" more lines than it uses).
 *   with L the architecture's cache line (info->line_bytes: CPU 64, gfx906/
 *   908 64, gfx90a/94x 128, NVIDIA 128), and on NVIDIA the same for 32-byte
 *   sectors (info->sector_bytes). A coalesced wave has used == needed; a wave
 *   whose lanes stride by k elements of a line's size or less uses k times
 *   what it needs.
 *
 *   LDS/shared (shared sites, and generic accesses that went to shared
 *   memory), per record: bank conflicts. Lanes are served in phases
 *   (info->lds_model, nano/handler.h); in a phase every 4-byte word a lane
 *   touches falls in bank (address / 4) mod 32; the phase takes as many
 *   cycles as the busiest bank has distinct words (the same word is a
 *   broadcast), so conflicts = that number - 1, summed over phases; every
 *   word of an access of any width counts.
 *
 * Per page of page_bytes: the lane accesses whose first byte lies on it.
 *
 * One piece of code for both places a dispatch's sums are made: the
 * analyzers add the records the drain hands them (NANO_AGGREGATE=host), and
 * the CPU back end adds each virtual wave's access where it forms, one table
 * per worker thread, merged at the dispatch's end (device).
 */
#include "nano/aggregate.h"

#include "analyzer.h"
#include "nano/dh_sums.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Initial slots of the site table and of the page table (powers of two; each
 * doubles at 1/2 full). */
#define AGG_INITIAL_SITE_SLOTS 64u
#define AGG_INITIAL_PAGE_SLOTS 256u
/* Banks modelled at most (LDS and shared memory have 32; a larger count in
 * the dispatch info is taken as this many). */
#define AGG_MAX_BANKS 64u

/* Slots of the set that counts a record's distinct blocks (a power of two,
 * four times a wave64's lanes: short probes). */
#define AGG_SET_BITS 8
#define AGG_SET_SLOTS (1u << AGG_SET_BITS)

/* A set of block numbers, emptied by a new stamp instead of clearing. */
struct agg_set {
  uint64_t key[AGG_SET_SLOTS];
  uint32_t stamp[AGG_SET_SLOTS];
  uint32_t now;
};

/* Lanes up to which agg_sort sorts by insertion (no call per comparison). */
#define AGG_INSERTION_SORT_MAX 64u

static int agg_u64_cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Sorts v ascending: by insertion for a wave's worth, else qsort. */
static void agg_sort(uint64_t *v, size_t n) {
  if (n > AGG_INSERTION_SORT_MAX) {
    qsort(v, n, sizeof *v, agg_u64_cmp);
    return;
  }
  for (size_t i = 1; i < n; i++) {
    uint64_t x = v[i];
    size_t j = i;
    for (; j > 0 && v[j - 1] > x; j--)
      v[j] = v[j - 1];
    v[j] = x;
  }
}

/* The lanes' addresses of r in ascending order: r's own when they already
 * are (a wave's lanes usually go up with the lane), reversed when they go
 * down, else sorted into buf. r is whole: a strided record, which may be
 * compact, never comes here (agg_progression takes every one). */
static const uint64_t *agg_sorted(const struct nano_dh_record *r, uint64_t buf[64]) {
  unsigned n = r->lanes, up = 1, down = 1;
  if (r->encoding == NANO_DH_ENC_STRIDE && n > 1) /* in progression: its stride's sign says */
    up = !(down = (int64_t)(r->addr[1] - r->addr[0]) < 0);
  for (unsigned i = 1; r->encoding != NANO_DH_ENC_STRIDE && i < n && (up || down); i++) {
    up &= r->addr[i - 1] <= r->addr[i];
    down &= r->addr[i - 1] >= r->addr[i];
  }
  if (up)
    return r->addr;
  for (unsigned i = 0; i < n; i++)
    buf[i] = r->addr[down ? n - 1 - i : i];
  if (!down)
    agg_sort(buf, n);
  return buf;
}

/* What the lanes' [addr, addr + size) intervals cover, addr ascending in
 * `a`: distinct bytes, and distinct `line`- and `sector`-byte blocks. One
 * sweep: intervals sorted by start cover sorted block ranges, so a block is
 * new exactly when it lies past the last one counted. */
struct agg_cover {
  uint64_t bytes, lines, sectors;
};

static void agg_blocks(uint64_t first, uint64_t last, int *any, uint64_t *top, uint64_t *count) {
  if (*any && first <= *top)
    first = *top + 1;
  if (first <= last) {
    *count += last - first + 1;
    *top = last;
    *any = 1;
  }
}

/* A block size as a shift (every architecture's lines and sectors are powers
 * of two: a division per lane was most of the analyzer's time), or -1. */
static int agg_shift(uint32_t unit) {
  return unit && !(unit & (unit - 1)) ? __builtin_ctz(unit) : -1;
}

/* Units of `unit` bytes that `bytes` fill, rounded up (no division for the
 * powers of two every real line and sector size is). */
static uint64_t agg_units(uint64_t bytes, uint32_t unit, int shift) {
  return nano_dh_block_of(bytes + unit - 1, unit, shift);
}

static struct agg_cover agg_cover(const uint64_t *a, unsigned n, uint32_t size, uint32_t line,
                                  uint32_t sector) {
  struct agg_cover c = {0, 0, 0};
  uint64_t end = 0, line_top = 0, sector_top = 0;
  int line_any = 0, sector_any = 0, ls = agg_shift(line), ss = agg_shift(sector);
  for (unsigned i = 0; i < n; i++) {
    uint64_t s = a[i], e = a[i] + size; /* [s, e) */
    uint64_t from = i && s < end ? end : s;
    if (e > from)
      c.bytes += e - from;
    if (!i || e > end)
      end = e;
    agg_blocks(nano_dh_block_of(s, line, ls), nano_dh_block_of(e - 1, line, ls), &line_any,
               &line_top, &c.lines);
    agg_blocks(nano_dh_block_of(s, sector, ss), nano_dh_block_of(e - 1, sector, ss), &sector_any,
               &sector_top, &c.sectors);
  }
  return c;
}

/* Adds the words [first, last] to per_bank: word w is in bank w mod banks.
 * Whole turns of the banks in closed form, so an access of any width costs
 * at most one pass over the banks. */
static void agg_bank_add(uint64_t *per_bank, uint32_t banks, uint64_t first, uint64_t last) {
  uint64_t words = last - first + 1, turns = words / banks;
  unsigned rest = (unsigned)(words % banks), b = (unsigned)(first % banks);
  if (turns)
    for (unsigned i = 0; i < banks; i++)
      per_bank[i] += turns;
  for (unsigned i = 0; i < rest; i++)
    per_bank[(b + i) % banks]++;
}

/* Bank conflicts of one LDS/shared record (see the file comment). In each
 * phase the lanes' word ranges are merged into disjoint runs (the same word
 * twice is a broadcast), whose words are then counted per bank: exact for
 * accesses of any width (a 256-byte copy per lane spans 64 words). */
static uint64_t agg_bank_conflicts(const struct nano_dispatch_info *info,
                                   const struct nano_dh_record *r, uint32_t size) {
  uint32_t banks = info->lds_banks ? info->lds_banks : 32;
  uint32_t bank_bytes = info->lds_bank_bytes ? info->lds_bank_bytes : 4;
  if (banks > AGG_MAX_BANKS)
    banks = AGG_MAX_BANKS;
  uint64_t conflicts = 0, buf[64];
  const uint64_t *v = nano_dh_record_addrs(r, buf);
  unsigned phase_of[64], phases = 0;
  for (unsigned i = 0; i < r->lanes; i++) {
    phase_of[i] = nano_dh_phase(info->lds_model == NANO_LDS_AMD_WAVE64, r->lane[i], size);
    if (phase_of[i] + 1 > phases)
      phases = phase_of[i] + 1;
  }
  for (unsigned phase = 0; phase < phases; phase++) {
    /* the phase's word ranges [first[k], last[k]], sorted by first */
    uint64_t first[64], last[64];
    unsigned n = 0;
    for (unsigned i = 0; i < r->lanes; i++) {
      if (phase_of[i] != phase)
        continue;
      uint64_t f = v[i] / bank_bytes, l = (v[i] + size - 1) / bank_bytes;
      unsigned j = n++;
      for (; j > 0 && first[j - 1] > f; j--) {
        first[j] = first[j - 1];
        last[j] = last[j - 1];
      }
      first[j] = f;
      last[j] = l;
    }
    if (n == 0)
      continue;
    /* distinct words per bank; the busiest bank sets the cycles */
    uint64_t per_bank[AGG_MAX_BANKS] = {0}, worst = 0;
    uint64_t run_first = first[0], run_last = last[0];
    for (unsigned k = 1; k <= n; k++) {
      if (k < n && first[k] <= run_last + 1) {
        if (last[k] > run_last)
          run_last = last[k];
        continue;
      }
      agg_bank_add(per_bank, banks, run_first, run_last);
      if (k < n) {
        run_first = first[k];
        run_last = last[k];
      }
    }
    for (unsigned b = 0; b < banks; b++)
      if (per_bank[b] > worst)
        worst = per_bank[b];
    conflicts += worst - 1;
  }
  return conflicts;
}

/* The common case in closed form: lanes in arithmetic progression (rank r
 * at addr[0] + r * stride: coalesced, strided, broadcast, reversed), counted
 * by nano_dh_progression_cover. A strided record's lanes are in progression
 * by its encoding's promise; another's are checked, for steps up to `size`
 * (lanes farther apart are counted as well by the cases below). True and *c
 * filled then; false otherwise. */
static int agg_progression(const struct nano_dh_record *r, uint32_t size, uint32_t line,
                           uint32_t sector, struct agg_cover *c) {
  unsigned n = r->lanes;
  if (!n)
    return 0;
  uint64_t stride = n > 1 ? r->addr[1] - r->addr[0] : 0, next = r->addr[0];
  int down = (int64_t)stride < 0;
  uint64_t step = down ? -stride : stride;
  if (r->encoding != NANO_DH_ENC_STRIDE) {
    if (step > size)
      return 0;
    for (unsigned i = 0; i < n; i++, next += stride)
      if (r->addr[i] != next)
        return 0;
  }
  struct nano_dh_cover v =
      nano_dh_progression_cover(down ? nano_dh_record_addr(r, n - 1) : r->addr[0], step, n, size,
                                line, agg_shift(line), sector, agg_shift(sector));
  *c = (struct agg_cover){v.bytes, v.lines, v.sectors};
  return 1;
}

/* Distinct values of v[i] >> shift over n values, counted in set s. */
static uint64_t agg_distinct(struct agg_set *s, const uint64_t *v, unsigned n, int shift) {
  if (++s->now == 0) { /* the stamps wrapped: clear once in 2^32 counts */
    memset(s->stamp, 0, sizeof s->stamp);
    s->now = 1;
  }
  uint64_t count = 0;
  for (unsigned i = 0; i < n; i++) {
    uint64_t k = v[i] >> shift;
    size_t h = (size_t)((k * 0x9E3779B97F4A7C15ull) >> (64 - AGG_SET_BITS));
    while (s->stamp[h] == s->now && s->key[h] != k)
      h = (h + 1) & (AGG_SET_SLOTS - 1);
    if (s->stamp[h] != s->now) {
      s->stamp[h] = s->now;
      s->key[h] = k;
      count++;
    }
  }
  return count;
}

/* Blocks of 2^unit_shift bytes that accesses of 2^size_shift bytes, each
 * aligned to its size, cover at the `distinct` distinct addresses of v. */
static uint64_t agg_aligned_units(struct agg_set *s, const uint64_t *v, unsigned n, int size_shift,
                                  int unit_shift, uint64_t distinct) {
  if (size_shift <= unit_shift) /* an access lies within one block */
    return agg_distinct(s, v, n, unit_shift);
  return distinct << (size_shift - unit_shift); /* accesses are equal or disjoint */
}

/* The scattered case without sorting: lanes whose accesses are aligned to
 * their size (a power of two), as compilers lay data out, in any order. Two
 * such accesses are equal or disjoint, so the bytes are the distinct
 * addresses times the size, and the blocks counted in a set. True and *c
 * filled then; false otherwise (agg_cover sweeps those). r is whole, as in
 * agg_sorted. */
static int agg_aligned(struct agg_set *set, const struct nano_dh_record *r, uint32_t size,
                       uint32_t line, uint32_t sector, struct agg_cover *c) {
  int zs = agg_shift(size), ls = agg_shift(line), ss = agg_shift(sector);
  if (zs < 0 || ls < 0 || ss < 0 || !r->lanes)
    return 0;
  uint64_t misaligned = 0;
  for (unsigned i = 0; i < r->lanes; i++)
    misaligned |= r->addr[i];
  if (misaligned & (size - 1))
    return 0;
  uint64_t distinct = agg_distinct(set, r->addr, r->lanes, zs);
  c->bytes = distinct * size;
  c->lines = agg_aligned_units(set, r->addr, r->lanes, zs, ls, distinct);
  c->sectors = ss == ls ? c->lines : agg_aligned_units(set, r->addr, r->lanes, zs, ss, distinct);
  return 1;
}

/* ---- the tables ------------------------------------------------------------ */

/* The sums of one site id and record space field: the key is the record's
 * own, so the site tables are searched once per slot, not per record. A site
 * no table names keeps a slot with site NULL. */
struct agg_site {
  uint64_t id;
  uint8_t rspace; /* NANO_DH_SPACE_* of its records */
  uint8_t taken;  /* 0: a free slot                 */
  const struct nano_dh_site *site;
  struct nano_site_counts c;
};

struct agg_page {
  uint64_t key; /* page index + 1 (0 marks a free slot) */
  uint64_t accesses;
};

struct nano_aggregate {
  const struct nano_dispatch_info *info;
  unsigned what;
  uint64_t page_bytes;
  struct agg_site *sites;
  size_t cap, used;
  struct agg_page *pages;
  size_t page_cap, pages_used;
  uint64_t records, unknown, sites_lost, page_accesses, pages_lost;
  struct agg_set set;
  struct nano_site_counts *view_sites; /* nano_aggregate_view's arrays */
  struct nano_page_counts *view_pages;
};

static struct agg_site *agg_site_slot(struct agg_site *slots, size_t cap, uint64_t id,
                                      unsigned rspace) {
  size_t i = (size_t)(((id ^ (uint64_t)rspace << 61) * 0x9E3779B97F4A7C15ull) >> 24) & (cap - 1);
  while (slots[i].taken && (slots[i].id != id || slots[i].rspace != rspace))
    i = (i + 1) & (cap - 1);
  return &slots[i];
}

static int agg_sites_grow(struct nano_aggregate *a) {
  size_t cap = a->cap ? a->cap * 2 : AGG_INITIAL_SITE_SLOTS;
  struct agg_site *s = calloc(cap, sizeof *s);
  if (!s)
    return -1;
  for (size_t i = 0; i < a->cap; i++)
    if (a->sites[i].taken)
      *agg_site_slot(s, cap, a->sites[i].id, a->sites[i].rspace) = a->sites[i];
  free(a->sites);
  a->sites = s;
  a->cap = cap;
  return 0;
}

static struct agg_page *agg_page_slot(struct agg_page *slots, size_t cap, uint64_t key) {
  size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
  while (slots[i].key && slots[i].key != key)
    i = (i + 1) & (cap - 1);
  return &slots[i];
}

static int agg_pages_grow(struct nano_aggregate *a) {
  size_t cap = a->page_cap ? a->page_cap * 2 : AGG_INITIAL_PAGE_SLOTS;
  struct agg_page *p = calloc(cap, sizeof *p);
  if (!p)
    return -1;
  for (size_t i = 0; i < a->page_cap; i++)
    if (a->pages[i].key)
      *agg_page_slot(p, cap, a->pages[i].key) = a->pages[i];
  free(a->pages);
  a->pages = p;
  a->page_cap = cap;
  return 0;
}

/* The slot of (id, rspace): found, or taken (*fresh set); NULL when out of
 * memory. */
static struct agg_site *agg_site_slot_take(struct nano_aggregate *a, uint64_t id, unsigned rspace,
                                           int *fresh) {
  *fresh = 0;
  if (2 * (a->used + 1) > a->cap && agg_sites_grow(a) != 0)
    return NULL;
  struct agg_site *s = agg_site_slot(a->sites, a->cap, id, rspace);
  if (!s->taken) {
    *fresh = 1;
    s->taken = 1;
    s->id = id;
    s->rspace = (uint8_t)rspace;
    s->c.site = id;
    a->used++;
  }
  return s;
}

/* What the machine code made of `site` (info's isa_width, where the runtime
 * has one): *isa_size the bytes per lane of a wider instruction, else 0;
 * returns 1 when the site was folded into a neighbour's instruction. */
static int agg_isa(const struct nano_dispatch_info *info, const struct nano_dh_site *site,
                   uint32_t *isa_size) {
  *isa_size = 0;
  if (info->size < offsetof(struct nano_dispatch_info, isa_width) + sizeof info->isa_width ||
      !info->isa_width)
    return 0;
  uint32_t width = 0;
  int verdict = info->isa_width(info, site->id, &width);
  if (verdict == NANO_ISA_WIDER && width > site->size)
    *isa_size = width;
  return verdict == NANO_ISA_MERGED;
}

/* The slot of r's site and space, its site looked up and what the machine
 * code made of it asked when new; NULL when out of memory. */
static struct agg_site *agg_site_take(struct nano_aggregate *a, const struct nano_dh_record *r) {
  int fresh;
  struct agg_site *s = agg_site_slot_take(a, r->site, r->space, &fresh);
  if (!s || !fresh)
    return s;
  const struct nano_dispatch_info *info = a->info;
  uint64_t id = r->site;
  s->site = info->site ? info->site(info, id) : NULL;
  if (!s->site)
    return s;
  s->c.space = nano_analyzer_space(s->site, r);
  /* a wider machine access replaces the IR's size in the line and bank
   * arithmetic; a site folded into a neighbour's instruction is counted there */
  s->c.merged = (uint32_t)agg_isa(info, s->site, &s->c.isa_size);
  return s;
}

static void agg_add_sites(struct nano_aggregate *a, const struct nano_dh_record *r) {
  const struct nano_dispatch_info *info = a->info;
  struct agg_site *s = agg_site_take(a, r);
  if (!s) {
    a->sites_lost++;
    return;
  }
  if (!s->site) {
    a->unknown++;
    return;
  }
  struct nano_site_counts *c = &s->c;
  c->size = r->size;
  c->executions++;
  c->accesses += r->lanes;
  c->bytes += (uint64_t)r->lanes * r->size;
  if (c->merged)
    return;
  uint32_t size = c->isa_size ? c->isa_size : r->size ? r->size : 1;
  if (c->space == NANO_DH_AS_SHARED) {
    c->bank_conflicts += agg_bank_conflicts(info, r, size);
    return;
  }
  uint32_t line = info->line_bytes, sector = info->sector_bytes;
  struct agg_cover cov;
  if (!agg_progression(r, size, line, sector, &cov) &&
      !agg_aligned(&a->set, r, size, line, sector, &cov)) {
    uint64_t buf[64];
    cov = agg_cover(agg_sorted(r, buf), r->lanes, size, line, sector);
  }
  c->lines_needed += agg_units(cov.bytes, line, agg_shift(line));
  c->lines_used += cov.lines;
  c->sectors_needed += agg_units(cov.bytes, sector, agg_shift(sector));
  c->sectors_used += cov.sectors;
}

/* Adds n accesses on page index+1 `key`; counted as lost when no slot can
 * be had. */
static void agg_add_page(struct nano_aggregate *a, uint64_t key, uint64_t n) {
  if (2 * (a->pages_used + 1) > a->page_cap && agg_pages_grow(a) != 0) {
    a->pages_lost += n;
    return;
  }
  struct agg_page *p = agg_page_slot(a->pages, a->page_cap, key);
  if (!p->key) {
    p->key = key;
    a->pages_used++;
  }
  p->accesses += n;
  a->page_accesses += n;
}

/* Adds the lanes of r to their pages, a run of lanes on one page at once
 * (a coalesced wave's lanes share one or two). */
static void agg_add_pages(struct nano_aggregate *a, const struct nano_dh_record *r) {
  uint64_t buf[64];
  const uint64_t *v = nano_dh_record_addrs(r, buf);
  uint64_t key = 0, run = 0;
  for (unsigned i = 0; i < r->lanes; i++) {
    uint64_t k = v[i] / a->page_bytes + 1;
    if (k != key && run) {
      agg_add_page(a, key, run);
      run = 0;
    }
    key = k;
    run++;
  }
  if (run)
    agg_add_page(a, key, run);
}

struct nano_aggregate *nano_aggregate_create(const struct nano_dispatch_info *info, unsigned what,
                                             uint64_t page_bytes) {
  struct nano_aggregate *a = calloc(1, sizeof *a);
  if (!a)
    return NULL;
  a->info = info;
  a->what = what;
  a->page_bytes = page_bytes ? page_bytes : 1;
  if (((what & NANO_AGG_SITES) && agg_sites_grow(a) != 0) ||
      ((what & NANO_AGG_PAGES) && agg_pages_grow(a) != 0)) {
    nano_aggregate_destroy(a);
    return NULL;
  }
  return a;
}

void nano_aggregate_add(struct nano_aggregate *a, const struct nano_dh_record *r) {
  a->records++;
  if (a->what & NANO_AGG_SITES)
    agg_add_sites(a, r);
  if (a->what & NANO_AGG_PAGES)
    agg_add_pages(a, r);
}

void nano_aggregate_merge(struct nano_aggregate *into, const struct nano_aggregate *from) {
  into->records += from->records;
  into->unknown += from->unknown;
  into->sites_lost += from->sites_lost;
  into->pages_lost += from->pages_lost;
  for (size_t i = 0; i < from->cap; i++) {
    const struct agg_site *f = &from->sites[i];
    if (!f->taken || !f->site) /* unknown sites: counted in from->unknown */
      continue;
    int fresh;
    struct agg_site *s = agg_site_slot_take(into, f->id, f->rspace, &fresh);
    if (!s) {
      into->sites_lost += f->c.executions;
      continue;
    }
    if (fresh) { /* the shard's lookups stand */
      s->site = f->site;
      s->c = f->c;
      continue;
    }
    s->c.size = f->c.size;
    s->c.executions += f->c.executions;
    s->c.accesses += f->c.accesses;
    s->c.bytes += f->c.bytes;
    s->c.lines_needed += f->c.lines_needed;
    s->c.lines_used += f->c.lines_used;
    s->c.sectors_needed += f->c.sectors_needed;
    s->c.sectors_used += f->c.sectors_used;
    s->c.bank_conflicts += f->c.bank_conflicts;
  }
  for (size_t i = 0; i < from->page_cap; i++)
    if (from->pages[i].key)
      agg_add_page(into, from->pages[i].key, from->pages[i].accesses);
}

int nano_aggregate_view(struct nano_aggregate *a, const char *where, struct nano_aggregates *v) {
  free(a->view_sites);
  free(a->view_pages);
  a->view_sites = malloc((a->used ? a->used : 1) * sizeof *a->view_sites);
  a->view_pages = malloc((a->pages_used ? a->pages_used : 1) * sizeof *a->view_pages);
  if (!a->view_sites || !a->view_pages)
    return -1;
  *v = (struct nano_aggregates){.size = sizeof *v,
                                .where = where,
                                .sites = a->view_sites,
                                .unknown_site_records = a->unknown,
                                .sites_lost = a->sites_lost,
                                .page_bytes = (a->what & NANO_AGG_PAGES) ? a->page_bytes : 0,
                                .pages = a->view_pages,
                                .page_accesses = a->page_accesses,
                                .pages_lost = a->pages_lost};
  for (size_t i = 0; i < a->cap; i++)
    if (a->sites[i].taken && a->sites[i].site)
      a->view_sites[v->nsites++] = a->sites[i].c;
  for (size_t i = 0; i < a->page_cap; i++)
    if (a->pages[i].key)
      a->view_pages[v->npages++] =
          (struct nano_page_counts){a->pages[i].key - 1, a->pages[i].accesses};
  return 0;
}

void nano_aggregate_clear(struct nano_aggregate *a) {
  if (a->sites)
    memset(a->sites, 0, a->cap * sizeof *a->sites);
  if (a->pages)
    memset(a->pages, 0, a->page_cap * sizeof *a->pages);
  a->used = a->pages_used = 0;
  a->records = a->unknown = a->sites_lost = a->page_accesses = a->pages_lost = 0;
}

/* ---- the device's sums table ---------------------------------------------- */

/* Bytes of one site's counters in one space. */
#define AGG_TABLE_SLOT_BYTES (NANO_DH_COUNTS * sizeof(uint64_t))

/* The header of a table of `sites` slots, `shards` shards and `page_slots`
 * page slots: the arrays' offsets; its bytes in *bytes. */
static struct nano_dh_sums_hdr agg_table_layout(uint32_t sites, uint32_t shards,
                                                uint32_t page_slots, uint64_t *bytes) {
  struct nano_dh_sums_hdr h = {.sites = sites, .shards = shards, .page_slots = page_slots};
  h.modes = NANO_DH_SUMS_HDR_SIZE;
  h.lost = h.modes + ((uint64_t)sites + 7) / 8 * 8;
  h.counts = h.lost + sizeof(uint64_t);
  h.pages = h.counts + (uint64_t)shards * sites * NANO_DH_SUMS_SPACES * AGG_TABLE_SLOT_BYTES;
  *bytes = h.pages + (uint64_t)page_slots * 2 * sizeof(uint64_t);
  return h;
}

/* Whether the device sums site `id` as the host sums its records (see
 * nano_aggregate_table). */
static int agg_device_sums(const struct nano_dispatch_info *info, uint64_t id) {
  const struct nano_dh_site *site = info->site ? info->site(info, id) : NULL;
  uint32_t isa_size;
  return site && site->size && !(site->flags & NANO_DH_SITE_MEMINTRINSIC) &&
         !agg_isa(info, site, &isa_size) && !isa_size;
}

size_t nano_aggregate_table(const struct nano_dispatch_info *info, unsigned what,
                            uint64_t page_bytes, uint32_t module, uint32_t sites, uint32_t shards,
                            uint32_t page_slots, void *buf, uint64_t *head) {
  int ls = agg_shift(info->line_bytes), ss = agg_shift(info->sector_bytes);
  int ps = page_bytes >> 32 ? -1 : agg_shift((uint32_t)page_bytes);
  if (!shards || (shards & (shards - 1)) || ((what & NANO_AGG_SITES) && (ls < 0 || ss < 0)) ||
      ((what & NANO_AGG_PAGES) && (ps < 0 || !page_slots || (page_slots & (page_slots - 1)))))
    return 0;
  if (!(what & NANO_AGG_PAGES))
    page_slots = 0;
  uint64_t bytes;
  struct nano_dh_sums_hdr h = agg_table_layout(sites, shards, page_slots, &bytes);
  *head = h.lost;
  if (!buf)
    return (size_t)bytes;
  h.module = module;
  h.line_shift = (uint8_t)(ls < 0 ? 0 : ls);
  h.sector_shift = (uint8_t)(ss < 0 ? 0 : ss);
  h.page_shift = (uint8_t)(ps < 0 ? 0 : ps);
  uint32_t banks = info->lds_banks ? info->lds_banks : 32;
  uint32_t bank_bytes = info->lds_bank_bytes ? info->lds_bank_bytes : 4;
  h.what = (uint8_t)(((what & NANO_AGG_SITES) ? NANO_DH_SUMS_SITES : 0) |
                     ((what & NANO_AGG_PAGES) ? NANO_DH_SUMS_PAGES : 0) |
                     (banks == 32 && bank_bytes == 4 ? NANO_DH_SUMS_BANKS : 0) |
                     (info->lds_model == NANO_LDS_AMD_WAVE64 ? NANO_DH_SUMS_AMD_WAVE64 : 0));
  memset(buf, 0, (size_t)bytes);
  memcpy(buf, &h, sizeof h);
  unsigned char *modes = (unsigned char *)buf + h.modes;
  for (uint32_t i = 0; i < sites; i++)
    modes[i] = !(what & NANO_AGG_SITES) ? 0 : !agg_device_sums(info, (uint64_t)module << 32 | i);
  return (size_t)bytes;
}

int nano_aggregate_add_table(struct nano_aggregate *a, const void *table, size_t bytes) {
  struct nano_dh_sums_hdr h;
  uint64_t need;
  if (bytes < sizeof h)
    return -1;
  memcpy(&h, table, sizeof h);
  struct nano_dh_sums_hdr want = agg_table_layout(h.sites, h.shards, h.page_slots, &need);
  if (need > bytes || h.lost != want.lost || h.modes != want.modes || h.counts != want.counts ||
      h.pages != want.pages)
    return -1;
  const unsigned char *base = table;
  for (uint64_t shard = 0; shard < h.shards; shard++)
    for (uint32_t i = 0; i < h.sites; i++)
      for (unsigned space = 0; space < NANO_DH_SUMS_SPACES; space++) {
        uint64_t n[NANO_DH_COUNTS];
        memcpy(n,
               base + h.counts +
                   ((shard * h.sites + i) * NANO_DH_SUMS_SPACES + space) * AGG_TABLE_SLOT_BYTES,
               sizeof n);
        uint64_t executions = n[NANO_DH_COUNT_EXECUTIONS];
        if (!executions)
          continue;
        a->records += executions;
        struct nano_dh_record key = {.site = (uint64_t)h.module << 32 | i, .space = (uint8_t)space};
        struct agg_site *s = agg_site_take(a, &key);
        if (!s || !s->site) {
          *(s ? &a->unknown : &a->sites_lost) += executions;
          continue;
        }
        struct nano_site_counts *c = &s->c;
        c->size = s->site->size;
        c->executions += executions;
        c->accesses += n[NANO_DH_COUNT_ACCESSES];
        c->bytes += n[NANO_DH_COUNT_BYTES];
        c->lines_needed += n[NANO_DH_COUNT_LINES_NEEDED];
        c->lines_used += n[NANO_DH_COUNT_LINES_USED];
        c->sectors_needed += n[NANO_DH_COUNT_SECTORS_NEEDED];
        c->sectors_used += n[NANO_DH_COUNT_SECTORS_USED];
        c->bank_conflicts += n[NANO_DH_COUNT_BANK_CONFLICTS];
      }
  for (uint32_t i = 0; i < h.page_slots; i++) {
    uint64_t slot[2];
    memcpy(slot, base + h.pages + (uint64_t)i * sizeof slot, sizeof slot);
    if (slot[0] && slot[1])
      agg_add_page(a, slot[0], slot[1]);
  }
  uint64_t lost;
  memcpy(&lost, base + h.lost, sizeof lost);
  a->pages_lost += lost;
  return 0;
}

const struct nano_aggregates *nano_aggregate_report(struct nano_aggregate *a,
                                                    const struct nano_aggregates *given,
                                                    struct nano_aggregates *own) {
  if (given)
    return given;
  return nano_aggregate_view(a, "host", own) == 0 ? own : NULL;
}

uint64_t nano_aggregate_records(const struct nano_aggregate *a) { return a->records; }

void nano_aggregate_destroy(struct nano_aggregate *a) {
  if (!a)
    return;
  free(a->sites);
  free(a->pages);
  free(a->view_sites);
  free(a->view_pages);
  free(a);
}
