/*
 * memory_analysis.c: the MemoryAnalysis analyzer.
 *
 * Per source location (file, line, column) and access kind it answers how
 * well the wave accesses there use memory:
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
 * Results: executions (records), accesses (lanes), bytes, lines_needed,
 * lines_used (and sectors_*), bank_conflicts. Text: one block per location,
 * worst first, with the source line and a caret under the column (as
 * omniprobe prints). JSON: one object per location and dispatch, one per
 * line; the trace gets one document per dispatch with "locations".
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "nano/json.h"

/* Initial slots of the per-site table (a power of two; doubles at 1/2 full). */
#define MA_INITIAL_SLOTS 64u
/* Lanes per phase of the phased model, by access size. */
#define MA_PHASE_LANES_4B 32u
#define MA_PHASE_LANES_8B 16u
#define MA_PHASE_LANES_16B 8u
/* Banks modelled at most (LDS and shared memory have 32; a larger count in
 * the dispatch info is taken as this many). */
#define MA_MAX_BANKS 64u

/* omniprobe's lane sets of a 16-byte LDS access on AMD wave64
 * (ds_read_b128/ds_write_b128): set index of each lane. */
static const unsigned char ma_amd_b128_set[64] = {
    0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 3, 3, 3, 3, 2, 2, 2, 2,
    4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 5, 5, 5, 5, 4, 4, 4, 4, 7, 7, 7, 7, 6, 6, 6, 6};

/* What the records of one site id and space field gathered: the key is the
 * record's own, so the runtime's site table is searched once per slot, not
 * per record. A site no table names keeps a slot with site NULL. */
struct ma_site {
  uint64_t id;    /* the records' site id                              */
  uint8_t rspace; /* their space field (NANO_DH_SPACE_*)               */
  uint8_t taken;  /* 0: a free slot                                    */
  const struct nano_dh_site *site;
  unsigned space;
  uint32_t size;     /* access size of the last record (memcpy: varies) */
  uint32_t isa_size; /* bytes per lane of the machine code where wider, else 0 */
  int merged;        /* no instruction of its own: counted at a wider neighbour */
  uint64_t executions, accesses, bytes;
  uint64_t lines_needed, lines_used, sectors_needed, sectors_used;
  uint64_t bank_conflicts;
};

/* Slots of the set that counts a record's distinct blocks (a power of two,
 * four times a wave64's lanes: short probes). */
#define MA_SET_BITS 8
#define MA_SET_SLOTS (1u << MA_SET_BITS)

/* A set of block numbers, emptied by a new stamp instead of clearing. */
struct ma_set {
  uint64_t key[MA_SET_SLOTS];
  uint32_t stamp[MA_SET_SLOTS];
  uint32_t now;
};

struct memory_analysis {
  struct nano_handler h;
  const struct nano_dispatch_info *info;
  struct ma_site *slots;
  size_t cap, used;
  uint64_t unknown_sites; /* records whose site no table names */
  int failed;
  struct ma_set set;
};

/* ---- the arithmetic (also used on synthetic records by the unit tests) ---- */

/* Lanes up to which ma_sort sorts by insertion (no call per comparison). */
#define MA_INSERTION_SORT_MAX 64u

static int ma_u64_cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Sorts v ascending: by insertion for a wave's worth, else qsort. */
static void ma_sort(uint64_t *v, size_t n) {
  if (n > MA_INSERTION_SORT_MAX) {
    qsort(v, n, sizeof *v, ma_u64_cmp);
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
 * down, else sorted into buf. */
static const uint64_t *ma_sorted(const struct nano_dh_record *r, uint64_t buf[64]) {
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
    ma_sort(buf, n);
  return buf;
}

/* What the lanes' [addr, addr + size) intervals cover, addr ascending in
 * `a`: distinct bytes, and distinct `line`- and `sector`-byte blocks. One
 * sweep: intervals sorted by start cover sorted block ranges, so a block is
 * new exactly when it lies past the last one counted. */
struct ma_cover {
  uint64_t bytes, lines, sectors;
};

static void ma_blocks(uint64_t first, uint64_t last, int *any, uint64_t *top, uint64_t *count) {
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
static int ma_shift(uint32_t unit) {
  return unit && !(unit & (unit - 1)) ? __builtin_ctz(unit) : -1;
}

static uint64_t ma_block(uint64_t x, uint32_t unit, int shift) {
  return shift >= 0 ? x >> shift : x / unit;
}

/* Blocks of `unit` bytes that the bytes [lo, hi) touch, hi > lo. */
static uint64_t ma_span(uint64_t lo, uint64_t hi, uint32_t unit, int shift) {
  return ma_block(hi - 1, unit, shift) - ma_block(lo, unit, shift) + 1;
}

/* Units of `unit` bytes that `bytes` fill, rounded up (no division for the
 * powers of two every real line and sector size is). */
static uint64_t ma_units(uint64_t bytes, uint32_t unit, int shift) {
  return ma_block(bytes + unit - 1, unit, shift);
}

static struct ma_cover ma_cover(const uint64_t *a, unsigned n, uint32_t size, uint32_t line,
                                uint32_t sector) {
  struct ma_cover c = {0, 0, 0};
  uint64_t end = 0, line_top = 0, sector_top = 0;
  int line_any = 0, sector_any = 0, ls = ma_shift(line), ss = ma_shift(sector);
  for (unsigned i = 0; i < n; i++) {
    uint64_t s = a[i], e = a[i] + size; /* [s, e) */
    uint64_t from = i && s < end ? end : s;
    if (e > from)
      c.bytes += e - from;
    if (!i || e > end)
      end = e;
    ma_blocks(ma_block(s, line, ls), ma_block(e - 1, line, ls), &line_any, &line_top, &c.lines);
    ma_blocks(ma_block(s, sector, ss), ma_block(e - 1, sector, ss), &sector_any, &sector_top,
              &c.sectors);
  }
  return c;
}

/* The phase (set of lanes served together) of lane `lane` for an access of
 * `size` bytes. */
static unsigned ma_phase(uint32_t model, unsigned lane, uint32_t size) {
  if (model == NANO_LDS_AMD_WAVE64) {
    if (size <= 4)
      return lane / 32;
    if (size <= 8)
      return lane / 16;
    return ma_amd_b128_set[lane & 63];
  }
  return lane / (size <= 4   ? MA_PHASE_LANES_4B
                 : size <= 8 ? MA_PHASE_LANES_8B
                             : MA_PHASE_LANES_16B);
}

/* Adds the words [first, last] to per_bank: word w is in bank w mod banks.
 * Whole turns of the banks in closed form, so an access of any width costs
 * at most one pass over the banks. */
static void ma_bank_add(uint64_t *per_bank, uint32_t banks, uint64_t first, uint64_t last) {
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
static uint64_t ma_bank_conflicts(const struct nano_dispatch_info *info,
                                  const struct nano_dh_record *r, uint32_t size) {
  uint32_t banks = info->lds_banks ? info->lds_banks : 32;
  uint32_t bank_bytes = info->lds_bank_bytes ? info->lds_bank_bytes : 4;
  if (banks > MA_MAX_BANKS)
    banks = MA_MAX_BANKS;
  uint64_t conflicts = 0;
  unsigned phase_of[64], phases = 0;
  for (unsigned i = 0; i < r->lanes; i++) {
    phase_of[i] = ma_phase(info->lds_model, r->lane[i], size);
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
      uint64_t f = r->addr[i] / bank_bytes, l = (r->addr[i] + size - 1) / bank_bytes;
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
    uint64_t per_bank[MA_MAX_BANKS] = {0}, worst = 0;
    uint64_t run_first = first[0], run_last = last[0];
    for (unsigned k = 1; k <= n; k++) {
      if (k < n && first[k] <= run_last + 1) {
        if (last[k] > run_last)
          run_last = last[k];
        continue;
      }
      ma_bank_add(per_bank, banks, run_first, run_last);
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
 * at addr[0] + r * stride, as coalesced, broadcast and overlapping accesses
 * are) no farther apart than `size` cover one interval [lo, hi), whose
 * blocks are all used. True and *c filled then; false otherwise (ma_cover
 * counts those). */
static int ma_contiguous(const struct nano_dh_record *r, uint32_t size, uint32_t line,
                         uint32_t sector, struct ma_cover *c) {
  unsigned n = r->lanes;
  if (!n)
    return 0;
  uint64_t stride = n > 1 ? r->addr[1] - r->addr[0] : 0, next = r->addr[0];
  int down = (int64_t)stride < 0;
  uint64_t step = down ? -stride : stride;
  if (step > size)
    return 0;
  /* a strided record's lanes are in progression by its encoding's promise */
  for (unsigned i = 0; r->encoding != NANO_DH_ENC_STRIDE && i < n; i++, next += stride)
    if (r->addr[i] != next)
      return 0;
  uint64_t lo = down ? r->addr[n - 1] : r->addr[0], hi = lo + (n - 1) * step + size;
  int ls = ma_shift(line), ss = ma_shift(sector);
  c->bytes = hi - lo;
  c->lines = ma_span(lo, hi, line, ls);
  c->sectors = ma_span(lo, hi, sector, ss);
  return 1;
}

/* Blocks of `unit` bytes that n accesses of `size` bytes cover, the first at
 * lo, each `step` bytes after the last, step > size (so none overlap). */
static uint64_t ma_progression_units(uint64_t lo, uint64_t step, unsigned n, uint32_t size,
                                     uint32_t unit, int shift) {
  uint64_t hi = lo + (n - 1) * step + size;
  /* gaps shorter than a block: no block lies in one, so every block from the
   * first to the last is covered */
  if (step - size < unit)
    return ma_span(lo, hi, unit, shift);
  /* gaps of a block or more: no two accesses share a block; with a step of
   * whole blocks every access covers as many */
  if ((shift >= 0 ? step & (unit - 1) : step % unit) == 0)
    return n * ma_span(lo, lo + size, unit, shift);
  uint64_t count = 0;
  for (unsigned k = 0; k < n; k++, lo += step)
    count += ma_span(lo, lo + size, unit, shift);
  return count;
}

/* The strided case in closed form: a strided record's lanes (in progression
 * by its encoding's promise) farther apart than `size`. True and *c filled
 * then; false otherwise. */
static int ma_progression(const struct nano_dh_record *r, uint32_t size, uint32_t line,
                          uint32_t sector, struct ma_cover *c) {
  unsigned n = r->lanes;
  if (r->encoding != NANO_DH_ENC_STRIDE || n < 2)
    return 0;
  uint64_t stride = r->addr[1] - r->addr[0];
  int down = (int64_t)stride < 0;
  uint64_t step = down ? -stride : stride, lo = down ? r->addr[n - 1] : r->addr[0];
  if (step <= size)
    return 0;
  c->bytes = (uint64_t)n * size;
  c->lines = ma_progression_units(lo, step, n, size, line, ma_shift(line));
  c->sectors = ma_progression_units(lo, step, n, size, sector, ma_shift(sector));
  return 1;
}

/* Distinct values of v[i] >> shift over n values, counted in set s. */
static uint64_t ma_distinct(struct ma_set *s, const uint64_t *v, unsigned n, int shift) {
  if (++s->now == 0) { /* the stamps wrapped: clear once in 2^32 counts */
    memset(s->stamp, 0, sizeof s->stamp);
    s->now = 1;
  }
  uint64_t count = 0;
  for (unsigned i = 0; i < n; i++) {
    uint64_t k = v[i] >> shift;
    size_t h = (size_t)((k * 0x9E3779B97F4A7C15ull) >> (64 - MA_SET_BITS));
    while (s->stamp[h] == s->now && s->key[h] != k)
      h = (h + 1) & (MA_SET_SLOTS - 1);
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
static uint64_t ma_aligned_units(struct ma_set *s, const uint64_t *v, unsigned n, int size_shift,
                                 int unit_shift, uint64_t distinct) {
  if (size_shift <= unit_shift) /* an access lies within one block */
    return ma_distinct(s, v, n, unit_shift);
  return distinct << (size_shift - unit_shift); /* accesses are equal or disjoint */
}

/* The scattered case without sorting: lanes whose accesses are aligned to
 * their size (a power of two), as compilers lay data out, in any order. Two
 * such accesses are equal or disjoint, so the bytes are the distinct
 * addresses times the size, and the blocks counted in a set. True and *c
 * filled then; false otherwise (ma_cover sweeps those). */
static int ma_aligned(struct ma_set *set, const struct nano_dh_record *r, uint32_t size,
                      uint32_t line, uint32_t sector, struct ma_cover *c) {
  int zs = ma_shift(size), ls = ma_shift(line), ss = ma_shift(sector);
  if (zs < 0 || ls < 0 || ss < 0 || !r->lanes)
    return 0;
  uint64_t misaligned = 0;
  for (unsigned i = 0; i < r->lanes; i++)
    misaligned |= r->addr[i];
  if (misaligned & (size - 1))
    return 0;
  uint64_t distinct = ma_distinct(set, r->addr, r->lanes, zs);
  c->bytes = distinct * size;
  c->lines = ma_aligned_units(set, r->addr, r->lanes, zs, ls, distinct);
  c->sectors = ss == ls ? c->lines : ma_aligned_units(set, r->addr, r->lanes, zs, ss, distinct);
  return 1;
}

/* ---- accumulation --------------------------------------------------------- */

static struct ma_site *ma_slot(struct ma_site *slots, size_t cap, uint64_t id, unsigned rspace) {
  size_t i = (size_t)(((id ^ (uint64_t)rspace << 61) * 0x9E3779B97F4A7C15ull) >> 24) & (cap - 1);
  while (slots[i].taken && (slots[i].id != id || slots[i].rspace != rspace))
    i = (i + 1) & (cap - 1);
  return &slots[i];
}

static int ma_grow(struct memory_analysis *m) {
  size_t cap = m->cap ? m->cap * 2 : MA_INITIAL_SLOTS;
  struct ma_site *s = calloc(cap, sizeof *s);
  if (!s)
    return -1;
  for (size_t i = 0; i < m->cap; i++)
    if (m->slots[i].taken)
      *ma_slot(s, cap, m->slots[i].id, m->slots[i].rspace) = m->slots[i];
  free(m->slots);
  m->slots = s;
  m->cap = cap;
  return 0;
}

/* Asks the runtime what the machine code made of site `id` (nano/handler.h:
 * isa_width): a wider access replaces the IR's size in the line and bank
 * arithmetic; a site folded into a neighbour's wider instruction is counted
 * there, so its own lines are not. */
static void ma_isa(const struct nano_dispatch_info *info, struct ma_site *s, uint64_t id) {
  if (info->size < offsetof(struct nano_dispatch_info, isa_width) + sizeof info->isa_width ||
      !info->isa_width)
    return;
  uint32_t width = 0;
  int verdict = info->isa_width(info, id, &width);
  if (verdict == NANO_ISA_WIDER && width > s->site->size)
    s->isa_size = width;
  else if (verdict == NANO_ISA_MERGED)
    s->merged = 1;
}

static int ma_handle(struct nano_handler *h, const struct nano_dh_record *r) {
  struct memory_analysis *m = (struct memory_analysis *)h;
  const struct nano_dispatch_info *info = m->info;
  if (m->failed || (2 * (m->used + 1) > m->cap && ma_grow(m) != 0)) {
    m->failed = 1;
    return NANO_RECORD_PASS;
  }
  struct ma_site *s = ma_slot(m->slots, m->cap, r->site, r->space);
  if (!s->taken) {
    s->taken = 1;
    s->id = r->site;
    s->rspace = r->space;
    s->site = info->site ? info->site(info, r->site) : NULL;
    if (s->site) {
      s->space = nano_analyzer_space(s->site, r);
      ma_isa(info, s, r->site);
    }
    m->used++;
  }
  if (!s->site) {
    m->unknown_sites++;
    return NANO_RECORD_PASS;
  }
  unsigned space = s->space;
  s->size = r->size;
  s->executions++;
  s->accesses += r->lanes;
  s->bytes += (uint64_t)r->lanes * r->size;
  if (s->merged)
    return NANO_RECORD_PASS;
  uint32_t size = s->isa_size ? s->isa_size : r->size ? r->size : 1;
  if (space == NANO_DH_AS_SHARED) {
    s->bank_conflicts += ma_bank_conflicts(info, r, size);
    return NANO_RECORD_PASS;
  }
  struct ma_cover c;
  if (!ma_contiguous(r, size, info->line_bytes, info->sector_bytes, &c) &&
      !ma_progression(r, size, info->line_bytes, info->sector_bytes, &c) &&
      !ma_aligned(&m->set, r, size, info->line_bytes, info->sector_bytes, &c)) {
    uint64_t buf[64];
    c = ma_cover(ma_sorted(r, buf), r->lanes, size, info->line_bytes, info->sector_bytes);
  }
  s->lines_needed += ma_units(c.bytes, info->line_bytes, ma_shift(info->line_bytes));
  s->lines_used += c.lines;
  s->sectors_needed += ma_units(c.bytes, info->sector_bytes, ma_shift(info->sector_bytes));
  s->sectors_used += c.sectors;
  return NANO_RECORD_PASS;
}

/* ---- report --------------------------------------------------------------- */

/* One reported location: the sites of one file:line:column, kind and space
 * summed (an unrolled loop or inlined code gives several sites there). */
struct ma_row {
  const struct nano_dh_site *site; /* the first; names the location */
  unsigned space;
  uint32_t size, isa_size;
  int merged; /* every site of the location folded into a wider neighbour */
  uint64_t executions, accesses, bytes;
  uint64_t lines_needed, lines_used, sectors_needed, sectors_used, bank_conflicts;
};

static int ma_same_location(const struct ma_row *a, const struct ma_site *s) {
  return a->space == s->space && a->site->kind == s->site->kind && a->site->line == s->site->line &&
         a->site->column == s->site->column && strcmp(a->site->file, s->site->file) == 0;
}

/* Worst first: excess lines, then bank conflicts, then by position. */
static int ma_row_cmp(const void *a, const void *b) {
  const struct ma_row *x = a, *y = b;
  uint64_t ex = x->lines_used - x->lines_needed, ey = y->lines_used - y->lines_needed;
  if (ex != ey)
    return ex > ey ? -1 : 1;
  if (x->bank_conflicts != y->bank_conflicts)
    return x->bank_conflicts > y->bank_conflicts ? -1 : 1;
  int c = strcmp(x->site->file, y->site->file);
  if (c)
    return c;
  if (x->site->line != y->site->line)
    return x->site->line < y->site->line ? -1 : 1;
  if (x->site->column != y->site->column)
    return x->site->column < y->site->column ? -1 : 1;
  return (int)x->site->kind - (int)y->site->kind;
}

static const char *ma_space_name(unsigned space) { return nano_dh_addrspace_name(space); }

/* Writes the fields of one location (no braces). */
static void ma_json_row(FILE *out, const struct nano_dispatch_info *info, const struct ma_row *r) {
  fputs("\"file\":", out);
  nano_json_str(out, r->site->file);
  fprintf(out, ",\"line\":%u,\"column\":%u,\"function\":", r->site->line, r->site->column);
  nano_json_str(out, r->site->kernel);
  fprintf(out,
          ",\"kind\":\"%s\",\"space\":\"%s\",\"site_space\":\"%s\",\"access_bytes\":%u,"
          "\"executions\":%" PRIu64 ",\"accesses\":%" PRIu64 ",\"bytes\":%" PRIu64,
          nano_dh_kind_name(r->site->kind), ma_space_name(r->space),
          nano_dh_addrspace_name(r->site->addrspace), r->size, r->executions, r->accesses,
          r->bytes);
  if (r->isa_size)
    fprintf(out, ",\"isa_bytes\":%u", r->isa_size);
  if (r->merged)
    fputs(",\"merged\":true", out);
  if (r->space == NANO_DH_AS_SHARED) {
    fprintf(out, ",\"bank_conflicts\":%" PRIu64, r->bank_conflicts);
    return;
  }
  fprintf(out, ",\"line_bytes\":%u,\"lines_needed\":%" PRIu64 ",\"lines_used\":%" PRIu64,
          info->line_bytes, r->lines_needed, r->lines_used);
  if (info->sector_bytes != info->line_bytes)
    fprintf(out, ",\"sector_bytes\":%u,\"sectors_needed\":%" PRIu64 ",\"sectors_used\":%" PRIu64,
            info->sector_bytes, r->sectors_needed, r->sectors_used);
}

static void ma_text(FILE *out, const struct memory_analysis *m, const struct ma_row *rows,
                    size_t n) {
  const struct nano_dispatch_info *info = m->info;
  size_t excess = 0, conflicted = 0;
  fprintf(out, "=== MemoryAnalysis: %s, dispatch %" PRIu64 " (%s, wave %u, %u-byte lines",
          info->kernel_name, info->dispatch_id, info->arch, info->wave_size, info->line_bytes);
  if (info->sector_bytes != info->line_bytes)
    fprintf(out, ", %u-byte sectors", info->sector_bytes);
  fputs(") ===\n", out);
  for (size_t i = 0; i < n; i++) {
    const struct ma_row *r = &rows[i];
    fprintf(out, "%s:%u:%u: %s of %u bytes (%s), executed %" PRIu64 " times by %" PRIu64 " lanes\n",
            *r->site->file ? r->site->file : "<unknown file>", r->site->line, r->site->column,
            nano_dh_kind_name(r->site->kind), r->size, ma_space_name(r->space), r->executions,
            r->accesses);
    nano_analyzer_source(out, info, r->site->file, r->site->line, r->site->column);
    if (r->merged) {
      fputs("    folded into a neighbouring access's wider instruction: counted there\n", out);
      continue;
    }
    if (r->isa_size)
      fprintf(out, "    machine code: %u bytes per lane (the backend merged accesses)\n",
              r->isa_size);
    if (r->space == NANO_DH_AS_SHARED) {
      fprintf(out, "    %" PRIu64 " bank conflicts\n", r->bank_conflicts);
      conflicted += r->bank_conflicts > 0;
      continue;
    }
    fprintf(out, "    cache lines: %" PRIu64 " used, %" PRIu64 " needed", r->lines_used,
            r->lines_needed);
    if (r->lines_needed)
      fprintf(out, " (%.2fx)", (double)r->lines_used / (double)r->lines_needed);
    if (info->sector_bytes != info->line_bytes)
      fprintf(out, "; sectors: %" PRIu64 " used, %" PRIu64 " needed", r->sectors_used,
              r->sectors_needed);
    fputc('\n', out);
    excess += r->lines_used > r->lines_needed;
  }
  fprintf(out,
          "=== end of MemoryAnalysis: %zu locations, %zu with excess cache lines, %zu with bank "
          "conflicts",
          n, excess, conflicted);
  if (m->unknown_sites)
    fprintf(out, "; %" PRIu64 " records of sites no site table names", m->unknown_sites);
  if (m->failed)
    fputs("; incomplete: out of memory", out);
  if (nano_dispatch_lost(m->info))
    fprintf(out, "; incomplete: %" PRIu64 " records of the dispatch were lost",
            nano_dispatch_lost(m->info));
  fputs(" ===\n", out);
}

static void ma_report(struct nano_handler *h) {
  struct memory_analysis *m = (struct memory_analysis *)h;
  const struct nano_dispatch_info *info = m->info;
  struct ma_row *rows = calloc(m->used ? m->used : 1, sizeof *rows);
  if (!rows) {
    fprintf(stderr,
            "nanoprobe: MemoryAnalysis: out of memory for the report of dispatch %" PRIu64 "\n",
            info->dispatch_id);
    return;
  }
  size_t n = 0;
  for (size_t i = 0; i < m->cap; i++) {
    const struct ma_site *s = &m->slots[i];
    if (!s->taken || !s->site)
      continue;
    size_t j = 0;
    while (j < n && !ma_same_location(&rows[j], s))
      j++;
    if (j == n)
      rows[n++] = (struct ma_row){.site = s->site, .space = s->space, .size = s->size, .merged = 1};
    struct ma_row *r = &rows[j];
    r->merged &= s->merged;
    if (s->isa_size > r->isa_size)
      r->isa_size = s->isa_size;
    r->executions += s->executions;
    r->accesses += s->accesses;
    r->bytes += s->bytes;
    r->lines_needed += s->lines_needed;
    r->lines_used += s->lines_used;
    r->sectors_needed += s->sectors_needed;
    r->sectors_used += s->sectors_used;
    r->bank_conflicts += s->bank_conflicts;
  }
  qsort(rows, n, sizeof *rows, ma_row_cmp);
  if (info->format == NANO_FORMAT_JSON) {
    for (size_t i = 0; i < n; i++) {
      fputc('{', info->out);
      nano_analyzer_json_head(info->out, info, "MemoryAnalysis");
      fputc(',', info->out);
      ma_json_row(info->out, info, &rows[i]);
      fputs("}\n", info->out);
    }
  } else {
    ma_text(info->out, m, rows, n);
  }
  fflush(info->out);
  char *doc = NULL;
  size_t len = 0;
  FILE *mem = info->store ? open_memstream(&doc, &len) : NULL;
  if (mem) {
    fputc('{', mem);
    nano_analyzer_json_head(mem, info, "MemoryAnalysis");
    fprintf(mem,
            ",\"line_bytes\":%u,\"sector_bytes\":%u,\"unknown_site_records\":%" PRIu64
            ",\"complete\":%s,\"locations\":[",
            info->line_bytes, info->sector_bytes, m->unknown_sites,
            m->failed || nano_dispatch_lost(info) ? "false" : "true");
    for (size_t i = 0; i < n; i++) {
      fputs(i ? ",{" : "{", mem);
      ma_json_row(mem, info, &rows[i]);
      fputc('}', mem);
    }
    fputs("]}", mem);
    if (fclose(mem) == 0)
      info->store(info, "MemoryAnalysis", doc);
    free(doc);
  }
  free(rows);
}

static void ma_clear(struct nano_handler *h) {
  struct memory_analysis *m = (struct memory_analysis *)h;
  memset(m->slots, 0, m->cap * sizeof *m->slots);
  m->used = 0;
  m->unknown_sites = 0;
  m->failed = 0;
}

static void ma_destroy(struct nano_handler *h) {
  struct memory_analysis *m = (struct memory_analysis *)h;
  free(m->slots);
  free(m);
}

static const struct nano_handler_ops ma_ops = {ma_handle, ma_report, ma_clear, ma_destroy};

struct nano_handler *nano_memory_analysis_create(const struct nano_dispatch_info *info) {
  if (!info->line_bytes || !info->sector_bytes) {
    fprintf(stderr, "nanoprobe: MemoryAnalysis: the dispatch of %s names no cache line size\n",
            info->kernel_name);
    return NULL;
  }
  struct memory_analysis *m = calloc(1, sizeof *m);
  if (!m)
    return NULL;
  m->h = (struct nano_handler){&ma_ops, "MemoryAnalysis", NANO_HANDLER_PASS_THROUGH};
  m->info = info;
  if (ma_grow(m) != 0) {
    free(m);
    return NULL;
  }
  return &m->h;
}
