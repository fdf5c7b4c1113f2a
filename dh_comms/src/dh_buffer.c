/*
 * dh_buffer.c: a dh_comms buffer in host memory (descriptor + ring) and the
 * drain loop that consumes its records. The device side is
 * dh_comms/device/dh_device.c; both follow nano/dh_format.h.
 */
#include "nano/dh_comms.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Host view of the descriptor; offsets checked below against dh_format.h. */
struct dhbuf_desc {
  uint32_t magic, version;
  uint64_t data, capacity, head, tail, dropped;
  uint32_t flags, max_spins;
  uint64_t reserved;
};
_Static_assert(sizeof(struct dhbuf_desc) == NANO_DH_DESC_SIZE, "descriptor size");
_Static_assert(offsetof(struct dhbuf_desc, head) == NANO_DH_DESC_OFF_HEAD, "head offset");
_Static_assert(offsetof(struct dhbuf_desc, tail) == NANO_DH_DESC_OFF_TAIL, "tail offset");
_Static_assert(offsetof(struct dhbuf_desc, dropped) == NANO_DH_DESC_OFF_DROPPED, "dropped");
_Static_assert(offsetof(struct dhbuf_desc, max_spins) == NANO_DH_DESC_OFF_MAXSPINS, "spins");

struct nano_dh_buffer {
  struct dhbuf_desc *desc; /* 64-aligned */
  unsigned char *ring;     /* capacity bytes, 64-aligned */
  unsigned char scratch[NANO_DH_HDR_SIZE + 8 * 64]; /* a record unwrapped */
};

struct nano_dh_buffer *nano_dh_buffer_create(uint64_t capacity, uint32_t flags,
                                             uint32_t max_spins) {
  if (capacity < 128 || (capacity & (capacity - 1)) != 0 || capacity > (1ull << 40)) {
    errno = EINVAL;
    return NULL;
  }
  struct nano_dh_buffer *b = calloc(1, sizeof *b);
  if (!b)
    return NULL;
  b->desc = aligned_alloc(64, sizeof *b->desc);
  b->ring = aligned_alloc(64, (size_t)capacity);
  if (!b->desc || !b->ring) {
    nano_dh_buffer_destroy(b);
    errno = ENOMEM;
    return NULL;
  }
  memset(b->desc, 0, sizeof *b->desc);
  memset(b->ring, 0, (size_t)capacity);
  b->desc->magic = NANO_DH_MAGIC;
  b->desc->version = NANO_DH_VERSION;
  b->desc->data = (uint64_t)(uintptr_t)b->ring;
  b->desc->capacity = capacity;
  b->desc->flags = flags;
  b->desc->max_spins = max_spins;
  return b;
}

void nano_dh_buffer_destroy(struct nano_dh_buffer *b) {
  if (!b)
    return;
  free(b->desc);
  free(b->ring);
  free(b);
}

void *nano_dh_buffer_desc(struct nano_dh_buffer *b) { return b->desc; }

uint64_t nano_dh_buffer_dropped(const struct nano_dh_buffer *b) {
  return __atomic_load_n(&b->desc->dropped, __ATOMIC_RELAXED);
}

/* Copies n bytes from ring offset off (monotonic) into dst, unwrapping. */
static void dhbuf_copy_out(const struct nano_dh_buffer *b, uint64_t off, void *dst, size_t n) {
  uint64_t cap = b->desc->capacity, pos = off & (cap - 1);
  size_t first = (size_t)(cap - pos) < n ? (size_t)(cap - pos) : n;
  memcpy(dst, b->ring + pos, first);
  memcpy((unsigned char *)dst + first, b->ring, n - first);
}

/* Zeroes n bytes at ring offset off, so the slot reads "incomplete" when the
 * ring comes around. */
static void dhbuf_clear(struct nano_dh_buffer *b, uint64_t off, size_t n) {
  uint64_t cap = b->desc->capacity, pos = off & (cap - 1);
  size_t first = (size_t)(cap - pos) < n ? (size_t)(cap - pos) : n;
  memset(b->ring + pos, 0, first);
  memset(b->ring, 0, n - first);
}

long nano_dh_buffer_drain(struct nano_dh_buffer *b, nano_dh_record_fn fn, void *arg,
                          char *errmsg, size_t errlen) {
  long n = 0;
  uint64_t tail = b->desc->tail;
  uint64_t head = __atomic_load_n(&b->desc->head, __ATOMIC_ACQUIRE);
  while (tail < head) {
    uint32_t w0 = __atomic_load_n((uint32_t *)(b->ring + (tail & (b->desc->capacity - 1))),
                                  __ATOMIC_ACQUIRE);
    if (w0 == 0)
      break;
    size_t avail = (size_t)(head - tail) < sizeof b->scratch ? (size_t)(head - tail)
                                                               : sizeof b->scratch;
    dhbuf_copy_out(b, tail, b->scratch, avail);
    struct nano_dh_record r;
    long bytes = nano_dh_decode(b->scratch, avail, &r, errmsg, errlen);
    if (bytes < 0)
      return -1;
    if (bytes == 0)
      break;
    int stop = fn ? fn(&r, arg) : 0;
    dhbuf_clear(b, tail, (size_t)bytes);
    tail += (uint64_t)bytes;
    __atomic_store_n(&b->desc->tail, tail, __ATOMIC_RELEASE);
    n++;
    if (stop)
      break;
  }
  return n;
}
