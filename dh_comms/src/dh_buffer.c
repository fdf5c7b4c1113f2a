/*
 * dh_buffer.c: dh_comms buffers (descriptor + ring + tail, in a placement),
 * the host placement, the host encoder of CPU-kernel waves and the drains
 * that consume records. The device side is dh_comms/device/dh_device.c; both
 * follow nano/dh_format.h.
 */
#include "dh_decode.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Alignment of host allocations: a cache line, so the device-written head
 * and the host-written tail never share one. */
#define DHBUF_ALIGN 64

struct nano_dh_buffer {
  const struct nano_dh_memory *mem;
  struct nano_dh_placement pl;
  /* The doorbell: a host writer that finds the ring full rings it once
   * (the drain thread sets it while the buffer is attached). */
  void (*_Atomic full_fn)(void *);
  void *_Atomic full_arg;
  struct nano_dh_desc desc;                  /* the host's copy        */
  uint64_t dropped_at_finish;                /* as the last finish read */
  int compact;                               /* drains decode compact   */
  unsigned char scratch[NANO_DH_MAX_RECORD]; /* a record unwrapped     */
};

/* ---- host placement --------------------------------------------------------- */

/* The descriptor and the tail share one allocation (different cache lines);
 * the ring has its own. */
struct dhbuf_host_block {
  struct nano_dh_desc desc;
  _Alignas(DHBUF_ALIGN) uint64_t tail;
};

/* The ring comes from mmap: the kernel's zero pages, faulted in as records
 * reach them (zeroing 16 MiB up front cost the first dispatch 50 ms). */
static int dhbuf_host_alloc(void *ctx, uint64_t capacity, struct nano_dh_placement *out, char *err,
                            size_t errlen) {
  (void)ctx;
  memset(out, 0, sizeof *out);
  struct dhbuf_host_block *blk = aligned_alloc(DHBUF_ALIGN, sizeof *blk);
  void *ring =
      mmap(NULL, (size_t)capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (!blk || ring == MAP_FAILED) {
    int e = ring == MAP_FAILED ? errno : ENOMEM;
    free(blk);
    if (ring != MAP_FAILED)
      munmap(ring, (size_t)capacity);
    if (err && errlen)
      snprintf(err, errlen, "dh_comms: cannot allocate a %llu-byte ring in host memory: %s",
               (unsigned long long)capacity, strerror(e));
    errno = e;
    return -1;
  }
  memset(blk, 0, sizeof *blk);
  out->desc_device = out->desc_host = &blk->desc;
  out->ring = ring;
  out->ring_device = (uint64_t)(uintptr_t)ring;
  out->ring_bytes = capacity;
  out->tail = &blk->tail;
  out->tail_device = (uint64_t)(uintptr_t)&blk->tail;
  out->handle = blk;
  return 0;
}

static void dhbuf_host_free(void *ctx, struct nano_dh_placement *p) {
  (void)ctx;
  munmap(p->ring, (size_t)p->ring_bytes);
  free(p->handle);
}

/* Copies the descriptor field by field: the device may be updating head and
 * dropped of a live descriptor, which this never touches after creation. */
static int dhbuf_host_put(void *ctx, struct nano_dh_placement *p, const void *desc) {
  (void)ctx;
  const struct nano_dh_desc *src = desc;
  struct nano_dh_desc *dst = p->desc_host;
  dst->magic = src->magic;
  dst->version = src->version;
  dst->data = src->data;
  dst->capacity = src->capacity;
  dst->tail_addr = src->tail_addr;
  dst->max_spins = src->max_spins;
  memcpy(dst->block_lo, src->block_lo, sizeof dst->block_lo);
  memcpy(dst->block_hi, src->block_hi, sizeof dst->block_hi);
  __atomic_store_n(&dst->tail_seen, src->tail_seen, __ATOMIC_RELAXED);
  __atomic_store_n(&dst->sums, src->sums, __ATOMIC_RELAXED);
  __atomic_store_n(&dst->stalled, src->stalled, __ATOMIC_RELAXED);
  __atomic_store_n(&dst->blocks, src->blocks, __ATOMIC_RELAXED);
  __atomic_store_n(&dst->nblocks, src->nblocks, __ATOMIC_RELAXED);
  __atomic_store_n(&dst->hook, src->hook, __ATOMIC_RELAXED);
  __atomic_store_n(&dst->flags, src->flags, __ATOMIC_RELEASE);
  return 0;
}

static int dhbuf_host_counters(void *ctx, const struct nano_dh_placement *p, uint64_t *head,
                               uint64_t *dropped) {
  (void)ctx;
  struct nano_dh_desc *d = p->desc_host;
  *head = __atomic_load_n(&d->head, __ATOMIC_ACQUIRE);
  *dropped = __atomic_load_n(&d->dropped, __ATOMIC_RELAXED);
  return 0;
}

const struct nano_dh_memory nano_dh_host_memory = {"host",
                                                   NULL,
                                                   dhbuf_host_alloc,
                                                   dhbuf_host_free,
                                                   dhbuf_host_put,
                                                   dhbuf_host_counters,
                                                   NULL,
                                                   NULL,
                                                   NULL,
                                                   NULL};

/* ---- buffers ---------------------------------------------------------------- */

/* Writes b's descriptor to its placement, tail_seen set to the tail now (the
 * device's lower bound of it: dh_format.h). */
static int dhbuf_put_desc(struct nano_dh_buffer *b) {
  b->desc.tail_seen = __atomic_load_n(b->pl.tail, __ATOMIC_ACQUIRE);
  return b->mem->put_desc(b->mem->ctx, &b->pl, &b->desc);
}

struct nano_dh_buffer *nano_dh_buffer_create(const struct nano_dh_memory *mem, uint64_t capacity,
                                             uint32_t flags, uint32_t max_spins, char *err,
                                             size_t errlen) {
  if (err && errlen)
    err[0] = 0;
  if (capacity < NANO_DH_MIN_CAPACITY || (capacity & (capacity - 1)) != 0 ||
      capacity > (1ull << 40)) {
    if (err && errlen)
      snprintf(err, errlen,
               "dh_comms: a buffer of %llu bytes: the size must be a power of two from %u",
               (unsigned long long)capacity, NANO_DH_MIN_CAPACITY);
    errno = EINVAL;
    return NULL;
  }
  if (!mem)
    mem = &nano_dh_host_memory;
  struct nano_dh_buffer *b = calloc(1, sizeof *b);
  if (!b) {
    errno = ENOMEM;
    return NULL;
  }
  b->mem = mem;
  if (mem->alloc(mem->ctx, capacity, &b->pl, err, errlen) != 0) {
    free(b);
    return NULL;
  }
  b->desc.magic = NANO_DH_MAGIC;
  b->desc.version = NANO_DH_VERSION;
  b->desc.data = b->pl.ring_device;
  b->desc.capacity = capacity;
  b->desc.tail_addr = b->pl.tail_device;
  b->desc.flags = flags & NANO_DH_FLAG_DROP;
  b->desc.max_spins = max_spins;
  for (int i = 0; i < 3; i++)
    b->desc.block_hi[i] = UINT32_MAX;
  if (dhbuf_put_desc(b) != 0) {
    if (err && errlen)
      snprintf(err, errlen, "dh_comms: cannot write the descriptor (%s placement)", mem->name);
    nano_dh_buffer_destroy(b);
    return NULL;
  }
  return b;
}

void nano_dh_buffer_destroy(struct nano_dh_buffer *b) {
  if (!b)
    return;
  b->mem->free(b->mem->ctx, &b->pl);
  free(b);
}

void *nano_dh_buffer_desc(struct nano_dh_buffer *b) { return b->pl.desc_device; }

uint64_t nano_dh_buffer_capacity(const struct nano_dh_buffer *b) { return b->desc.capacity; }

uint64_t nano_dh_buffer_dropped_at_finish(const struct nano_dh_buffer *b) {
  return b->dropped_at_finish;
}

uint64_t nano_dh_buffer_dropped(const struct nano_dh_buffer *b) {
  uint64_t head, dropped;
  if (b->mem->get_counters(b->mem->ctx, &b->pl, &head, &dropped) != 0)
    return 0;
  return dropped;
}

int nano_dh_buffer_set_blocks(struct nano_dh_buffer *b, const uint32_t lo[3],
                              const uint32_t hi[3]) {
  memcpy(b->desc.block_lo, lo, sizeof b->desc.block_lo);
  memcpy(b->desc.block_hi, hi, sizeof b->desc.block_hi);
  return dhbuf_put_desc(b);
}

void nano_dh_buffer_set_doorbell(struct nano_dh_buffer *b, void (*fn)(void *), void *arg) {
  __atomic_store_n(&b->full_arg, arg, __ATOMIC_RELAXED);
  __atomic_store_n(&b->full_fn, fn, __ATOMIC_RELEASE);
}

int nano_dh_buffer_set_sums(struct nano_dh_buffer *b, const void *image, uint64_t head,
                            uint64_t bytes) {
  uint64_t device = 0;
  b->desc.sums = 0;
  if (!image)
    return 0;
  if (!b->mem->put_sums || b->mem->put_sums(b->mem->ctx, &b->pl, image, head, bytes, &device) != 0)
    return -1;
  b->desc.sums = device;
  return 0;
}

int nano_dh_buffer_set_block_times(struct nano_dh_buffer *b, uint32_t nblocks) {
  uint64_t device = 0;
  b->desc.blocks = 0;
  b->desc.nblocks = 0;
  if (!nblocks)
    return 0;
  uint64_t bytes = (uint64_t)nblocks * NANO_DH_BLOCK_WORDS * sizeof(uint64_t);
  if (!b->mem->put_blocks || b->mem->put_blocks(b->mem->ctx, &b->pl, bytes, &device) != 0)
    return -1;
  b->desc.blocks = device;
  b->desc.nblocks = nblocks;
  return 0;
}

int nano_dh_buffer_get_block_times(struct nano_dh_buffer *b, uint64_t *out) {
  uint64_t bytes = (uint64_t)b->desc.nblocks * NANO_DH_BLOCK_WORDS * sizeof(uint64_t);
  return b->mem->get_blocks && b->desc.blocks ? b->mem->get_blocks(b->mem->ctx, &b->pl, out, bytes)
                                              : -1;
}

void nano_dh_buffer_set_compact(struct nano_dh_buffer *b, int on) { b->compact = on != 0; }

void nano_dh_buffer_set_accesses(struct nano_dh_buffer *b, int on) {
  b->desc.flags =
      on ? b->desc.flags & ~NANO_DH_FLAG_NO_ACCESS : b->desc.flags | NANO_DH_FLAG_NO_ACCESS;
}

int nano_dh_buffer_get_sums(struct nano_dh_buffer *b, void *out, uint64_t bytes) {
  return b->mem->get_sums && b->desc.sums ? b->mem->get_sums(b->mem->ctx, &b->pl, out, bytes) : -1;
}

int nano_dh_buffer_set_hook(struct nano_dh_buffer *b, void *hook) {
  if (!b->pl.desc_host)
    return -1;
  b->desc.hook = (uint64_t)(uintptr_t)hook;
  b->desc.flags = hook ? b->desc.flags | NANO_DH_FLAG_HOOK : b->desc.flags & ~NANO_DH_FLAG_HOOK;
  return dhbuf_put_desc(b);
}

/* The ring address of monotonic offset off. */
static unsigned char *dhbuf_at(const struct nano_dh_buffer *b, uint64_t off) {
  return b->pl.ring + (off & (b->desc.capacity - 1));
}

/* Little-endian store of the low `n` bytes of v at ring offset off (never
 * straddles the end: records and their fields are aligned to their size). */
static void dhbuf_put(struct nano_dh_buffer *b, uint64_t off, uint64_t v, unsigned n) {
  unsigned char *p = dhbuf_at(b, off);
  for (unsigned i = 0; i < n; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

unsigned nano_dh_buffer_write(struct nano_dh_buffer *b, const struct nano_dh_record *r) {
  struct nano_dh_desc *d = b->pl.desc_host;
  int64_t stride;
  unsigned enc = nano_dh_encoding(r, &stride);
  unsigned bytes = NANO_DH_HDR_SIZE + NANO_DH_PAYLOAD_BYTES(enc, r->lanes);
  uint64_t cap = b->desc.capacity, off;
  uint32_t spins = 0;
  for (;;) {
    uint64_t head = __atomic_load_n(&d->head, __ATOMIC_RELAXED);
    uint64_t tail = __atomic_load_n(b->pl.tail, __ATOMIC_ACQUIRE);
    if (head + bytes - tail <= cap) {
      if (__atomic_compare_exchange_n(&d->head, &head, head + bytes, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_RELAXED)) {
        off = head;
        break;
      }
      continue;
    }
    if ((b->desc.flags & NANO_DH_FLAG_DROP) || spins >= b->desc.max_spins) {
      __atomic_fetch_add(&d->dropped, 1, __ATOMIC_RELAXED);
      return 0;
    }
    if (spins++ == 0) {
      void (*fn)(void *) = __atomic_load_n(&b->full_fn, __ATOMIC_ACQUIRE);
      if (fn)
        fn(__atomic_load_n(&b->full_arg, __ATOMIC_RELAXED));
    }
    sched_yield();
  }
  uint64_t base = r->addr[0];
  uint64_t payload = off + NANO_DH_HDR_SIZE;
  if (enc == NANO_DH_ENC_STRIDE) {
    dhbuf_put(b, payload, (uint64_t)stride, 8);
  } else {
    for (unsigned i = 0; i < r->lanes; i++)
      if (enc == NANO_DH_ENC_OFF32)
        dhbuf_put(b, payload + 4 * i, r->addr[i] - base, 4);
      else
        dhbuf_put(b, payload + 8 * i, r->addr[i], 8);
  }
  dhbuf_put(b, off + NANO_DH_HDR_OFF_SITE, r->site, 8);
  dhbuf_put(b, off + NANO_DH_HDR_OFF_EXEC, r->exec, 8);
  dhbuf_put(b, off + NANO_DH_HDR_OFF_BLOCK_X, r->block[0], 4);
  dhbuf_put(b, off + NANO_DH_HDR_OFF_BLOCK_Y, r->block[1], 2);
  dhbuf_put(b, off + NANO_DH_HDR_OFF_BLOCK_Z, r->block[2], 2);
  dhbuf_put(b, off + NANO_DH_HDR_OFF_SIZE, r->size, 4);
  dhbuf_put(b, off + NANO_DH_HDR_OFF_HWID, r->hw_id, 4);
  dhbuf_put(b, off + NANO_DH_HDR_OFF_TIME, r->time, 8);
  dhbuf_put(b, off + NANO_DH_HDR_OFF_BASE, base, 8);
  uint64_t w0 = bytes | (uint64_t)NANO_DH_VERSION << 16 |
                (uint64_t)(enc | (unsigned)r->space << NANO_DH_FORMAT_SPACE_SHIFT) << 24 |
                (uint64_t)r->lanes << 32 | (uint64_t)r->wave_size << 40 | (uint64_t)r->wave << 48;
  __atomic_store_n((uint64_t *)dhbuf_at(b, off), w0, __ATOMIC_RELEASE);
  return bytes;
}

/* Copies n bytes from ring offset off into dst, unwrapping. */
static void dhbuf_copy_out(const struct nano_dh_buffer *b, uint64_t off, void *dst, size_t n) {
  uint64_t cap = b->desc.capacity, pos = off & (cap - 1);
  size_t first = (size_t)(cap - pos) < n ? (size_t)(cap - pos) : n;
  memcpy(dst, b->pl.ring + pos, first);
  memcpy((unsigned char *)dst + first, b->pl.ring, n - first);
}

/* Zeroes n bytes at ring offset off, so the slot reads "incomplete" when the
 * ring comes around. */
static void dhbuf_clear(struct nano_dh_buffer *b, uint64_t off, size_t n) {
  uint64_t cap = b->desc.capacity, pos = off & (cap - 1);
  size_t first = (size_t)(cap - pos) < n ? (size_t)(cap - pos) : n;
  memset(b->pl.ring + pos, 0, first);
  memset(b->pl.ring, 0, n - first);
}

/* Moves the tail to `tail` (the device may now reuse the bytes before it). */
static void dhbuf_advance(struct nano_dh_buffer *b, uint64_t tail) {
  __atomic_store_n(b->pl.tail, tail, __ATOMIC_RELEASE);
}

/* A drain clears what it consumed and moves the tail once per this many
 * bytes (or a ring's eighth, if less), and when it stops: not once per
 * record. A GPU whose ring is full polls the tail across the bus, and each
 * poll takes the tail's line from the host's cache, which the next store
 * must fetch back. */
#define DHBUF_RELEASE_BYTES 65536
#define DHBUF_RELEASE_SHARE 8

/* A drain asks for the ring's bytes this far ahead of the record it
 * decodes: its loads were a drain's largest stall (the first word of each
 * record, 11% of its samples in perf), which the hardware's own prefetch
 * of a sequential read did not hide; 2-4 KiB ahead took a compact record's
 * drain from 0.41-0.43 to 0.49-0.55 of memcpy on the development VM
 * (1 KiB: 0.47-0.49). A hint only: a line the device writes again later is
 * fetched again. */
#define DHBUF_PREFETCH_BYTES 4096

/* The consumed bytes a drain has not cleared and released yet: from `from`
 * to the drain's tail. */
struct dhbuf_consumed {
  uint64_t from, tail, step;
};

/* Clears and releases what c holds (all of it, or once a step is there). */
static void dhbuf_release(struct nano_dh_buffer *b, struct dhbuf_consumed *c, int all) {
  if (c->tail == c->from || (!all && c->tail - c->from < c->step))
    return;
  dhbuf_clear(b, c->from, (size_t)(c->tail - c->from));
  dhbuf_advance(b, c->tail);
  c->from = c->tail;
}

/* Why dhbuf_consume stopped. */
enum dhbuf_stop {
  DHBUF_CAUGHT_UP,  /* reached the limit                                    */
  DHBUF_INCOMPLETE, /* the record at the tail is not complete (yet)        */
  DHBUF_STUCK,      /* an undecodable record whose size cannot be trusted  */
  DHBUF_ASKED,      /* the consumer asked to stop                           */
};

/* Consumes complete records from the tail up to `limit` (a monotonic
 * offset), adding the count to *n; what it consumed is cleared and released
 * (dhbuf_release) before it returns. */
static enum dhbuf_stop dhbuf_consume(struct nano_dh_buffer *b, uint64_t limit, nano_dh_record_fn fn,
                                     void *arg, struct nano_dh_drain_stats *st, long *n) {
  uint64_t cap = b->desc.capacity;
  struct dhbuf_consumed c = {*b->pl.tail, *b->pl.tail, DHBUF_RELEASE_BYTES};
  if (c.step > cap / DHBUF_RELEASE_SHARE)
    c.step = cap / DHBUF_RELEASE_SHARE;
  enum dhbuf_stop why = DHBUF_CAUGHT_UP;
  while (c.tail < limit) {
    dhbuf_release(b, &c, 0);
    uint64_t tail = c.tail;
    __builtin_prefetch(dhbuf_at(b, tail + DHBUF_PREFETCH_BYTES));
    uint64_t w0 = __atomic_load_n((uint64_t *)dhbuf_at(b, tail), __ATOMIC_ACQUIRE);
    if (w0 == 0) {
      why = DHBUF_INCOMPLETE;
      break;
    }
    /* Decode in place, unless the record (as its size field claims) wraps
     * around the end of the ring: then from a copy. */
    uint64_t pos = tail & (cap - 1);
    size_t avail =
        (size_t)(limit - tail) < sizeof b->scratch ? (size_t)(limit - tail) : sizeof b->scratch;
    const unsigned char *at = b->pl.ring + pos;
    if (pos + avail > cap && pos + (w0 & 0xffff) > cap) {
      dhbuf_copy_out(b, tail, b->scratch, avail);
      at = b->scratch;
    } else if (pos + avail > cap) {
      avail = (size_t)(cap - pos);
    }
    struct nano_dh_record r;
    char msg[sizeof st->first_error];
    long bytes = b->compact ? dhdec_record(at, avail, &r, 1, msg, sizeof msg)
                            : dhdec_record(at, avail, &r, 0, msg, sizeof msg);
    if (bytes == 0) {
      why = DHBUF_INCOMPLETE;
      break;
    }
    if (bytes < 0) {
      st->decode_errors++;
      if (!st->first_error[0])
        snprintf(st->first_error, sizeof st->first_error, "%s", msg);
      uint64_t claimed = w0 & 0xffff;
      if (claimed < NANO_DH_HDR_SIZE || claimed % 8 || claimed > NANO_DH_MAX_RECORD ||
          claimed > limit - tail) {
        why = DHBUF_STUCK;
        break;
      }
      st->lost_bytes += claimed;
      c.tail += claimed;
      continue;
    }
    int stop = fn ? fn(&r, arg) : 0;
    c.tail += (uint64_t)bytes;
    st->records++;
    st->bytes += (uint64_t)bytes;
    (*n)++;
    if (stop) {
      why = DHBUF_ASKED;
      break;
    }
  }
  dhbuf_release(b, &c, 1);
  return why;
}

long nano_dh_buffer_drain(struct nano_dh_buffer *b, nano_dh_record_fn fn, void *arg,
                          struct nano_dh_drain_stats *st) {
  long n = 0;
  /* The ring never holds more than its capacity past the tail. */
  dhbuf_consume(b, *b->pl.tail + b->desc.capacity, fn, arg, st, &n);
  return n;
}

long nano_dh_buffer_finish(struct nano_dh_buffer *b, nano_dh_record_fn fn, void *arg,
                           struct nano_dh_drain_stats *st) {
  uint64_t head, dropped;
  if (b->mem->get_counters(b->mem->ctx, &b->pl, &head, &dropped) != 0)
    return -1;
  b->dropped_at_finish = dropped;
  long n = 0;
  enum dhbuf_stop why = dhbuf_consume(b, head, fn, arg, st, &n);
  uint64_t tail = *b->pl.tail;
  if (why != DHBUF_CAUGHT_UP && tail < head) {
    /* Reserved but never completed (the writer died), undecodable without a
     * usable size (nothing after it can be found), or refused by fn: left
     * in the ring, it would be taken for the next dispatch's records. */
    uint64_t lost = head - tail;
    dhbuf_clear(b, tail, (size_t)(lost < b->desc.capacity ? lost : b->desc.capacity));
    st->lost_bytes += lost;
    dhbuf_advance(b, head);
  }
  return n;
}
