/*
 * gpu.c: the GPU back end of the dispatch layer: __nano_gpu_launch
 * (nano/gpu_launch.h), which the plugin puts in front of every launch of a
 * kernel that has a twin in CUDA and HIP programs built with it. The GPU API
 * is gpu.h's: the CUDA driver (gpu_cuda.c) or the HIP runtime (gpu_hip.c),
 * after the launch call's API.
 *
 * Per launch:
 *   1. the API (opened at run time: libnano_rpd links against no GPU library
 *      and loads in any process) and the launch's device (CUDA: its
 *      stream's context, else the thread's current one, else the primary
 *      context of the thread's runtime device, made current, the one cudart
 *      would use);
 *   2. nano_dispatch_begin with the kernel's name, the device's arch (sm_XY,
 *      gfxNNN), wave size, cache line, grid, block, dynamic shared bytes and
 *      the device's placement; NULL: the original, through the program's own
 *      launch function (a static cudart has no other);
 *   3. else the twin, with the buffer's descriptor as one more argument,
 *      after the stream waits for the descriptor's copy (an event on the
 *      copy stream: the launching thread does not wait), between two events;
 *   4. a waiter thread of the twin's stream (one per stream waited on at
 *      once) waits, sleeping, for the end event and queues the dispatch for
 *      the finisher thread, which ends it: elapsed time from the events,
 *      final drain, reports, trace rows. With NANO_GPU_END=hostfn, a host
 *      function after the twin on its stream (the API runs it once the twin
 *      is done; it may not call the API) queues it instead.
 * Nothing waits for the program's streams: kernels overlap as they do
 * without the tool (NVBit's memtrace synchronizes the device after each
 * launch).
 *
 * Placement, one per device (its buffers are pooled by the dispatch layer):
 *
 *   part              memory                        why
 *   ring              pinned host, device-mapped    the drain reads records in place
 *   descriptor        device memory                 head and dropped are the device's
 *                                                   atomics: none cross the bus
 *   tail              pinned host, device-mapped    the host moves it, the device polls it
 *   counter staging   pinned host (same block)      head and dropped, copied at the end;
 *                                                   the next use's descriptor is written
 *                                                   whole, in one copy, with them
 *
 * The descriptor and the counters move through a private non-blocking stream:
 * a copy on the legacy default stream would wait for the program's kernels.
 *
 * A launch into a stream being captured into a graph becomes five nodes of
 * the graph (up to nine with tables), so that every replay is a dispatch of
 * its own:
 *
 *   host function    begin: nano_dispatch_begin, which stages the descriptor
 *                    (head = the ring's tail) in the pinned block; a replay
 *                    not picked (NANO_DISPATCHES, or the buffer busy) stages
 *                    one whose block filter records nothing
 *   copy             the staged descriptor to the device
 *   memsets          (tables) the sums table's counters, the block times
 *   twin             with that descriptor, as outside graphs
 *   copy             head and dropped back to the pinned block
 *   copies           (tables) the sums table, the block times, to pinned memory
 *   host function    end: the replay goes to the finisher, which ends it with
 *                    the counters and tables staged there; the next replay's
 *                    begin waits for that only if it has not happened yet
 *
 * No API call runs in the host functions (the API forbids it): the node's
 * placement (its own pool of one buffer) and its tables are allocated at
 * capture, with the capturing thread's mode relaxed for it; the tables are
 * those the kernel's dispatches outside graphs took (a sums table when they
 * summed on the device, block times when KernelTimeline read them). The
 * replay's time is the host functions' (no events in graphs). A twin is
 * captured only once it has launched outside a graph on that device (a
 * failed launch, or a device's setup, would spoil the program's capture);
 * until then the original is captured, said once. A kernel node the
 * program adds to a graph by hand gets the same nodes, captured on a
 * stream of the runtime's own into a graph of its own, which goes into the
 * program's graph as one child graph node (__nano_gpu_graph_add_kernel).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dispatch.h"
#include "gpu.h"
#include "nano/gpu_launch.h"
#include "nano/handler.h"
#include "nano/hash.h"
#include "nano/rpdfile.h"
#include "nano/settings.h"
#include "nano/thread.h"
#include "rpd.h"
#include "rpd_internal.h"

/* Events a device keeps for reuse: two per launch, created and destroyed,
 * were four driver calls per instrumented launch. */
__thread int rpd_gpu_quiet;

#define GPU_EVENT_POOL 64
/* Waiter threads (NANO_GPU_END=event), one per stream whose twins are being
 * waited for at once: streams beyond it wait for a free waiter. */
#define GPU_MAX_WAITERS 16
/* The most arguments a kernel's launch passes (the twin gets one more). */
#define GPU_MAX_ARGS 255
/* Room for why an API cannot be used (gpu_api.load). */
#define GPU_WHY_BYTES 256
/* How long the exit handler waits for twins still running. */
#define GPU_EXIT_WAIT_NS 2000000000L
#define GPU_NS_PER_S 1000000000L
#define GPU_NS_PER_MS 1e6
/* The pinned block of a buffer: the tail, then the counters' staging area
 * on a cache line of its own, then the descriptor staged for its copy. */
#define GPU_LINE 64
#define GPU_STAGE_COUNTERS GPU_LINE
#define GPU_STAGE_DESC (2 * GPU_LINE)
#define GPU_BLOCK_BYTES (GPU_STAGE_DESC + (NANO_DH_DESC_SIZE + GPU_LINE - 1) / GPU_LINE * GPU_LINE)
/* The counters' copy: the descriptor's words from head to dropped (head, the
 * tail's address, dropped), and where dropped lies in it. */
#define GPU_COUNTERS_BYTES (NANO_DH_DESC_OFF_DROPPED + 8 - NANO_DH_DESC_OFF_HEAD)
#define GPU_STAGED_DROPPED ((NANO_DH_DESC_OFF_DROPPED - NANO_DH_DESC_OFF_HEAD) / 8)

/* One device the program launched on (CUDA: one context): its API,
 * placement and copy stream. */
struct gpu_context {
  const struct gpu_api *api;
  void *key;
  int dev;
  struct gpu_device_info info;
  void *copies;
  void *staged; /* recorded on copies after each descriptor's copy; NULL: waited for */
  struct nano_dh_memory mem;
  pthread_mutex_t events_lock; /* events, nevents, held */
  void *events[GPU_EVENT_POOL];
  unsigned nevents;
  struct gpu_held *held;
  int nheld; /* read without the lock: a hint */
  struct gpu_context *next;
};

/* A buffer whose twin's end the device did not confirm (every wait for it
 * failed: the twin may still run and write it): kept out of the pool until
 * its end event says the device is done with it, checked at the context's
 * next launches and ends; without an event, for good. */
struct gpu_held {
  struct nano_dispatch_hold hold;
  void *ev;
  struct gpu_held *next;
};

struct gpu_node;

/* An instrumented launch in flight. Two owners, the launching thread (until
 * it has recorded the launch's API row) and the API's host function (until
 * the twin is done): whichever lets go last hands it to the finisher. */
struct gpu_flight {
  struct nano_dispatch *d;
  struct gpu_context *c;
  void *ev[2]; /* before and after the twin; NULL: no timing */
  int64_t launched, done;
  uint64_t api;
  int owners;
  struct gpu_node *node;     /* a graph replay's: its node, told when it ended */
  void *stream;              /* the API's name for the program's stream */
  const void *queue;         /* the stream as waiters tell streams apart (with c) */
  int unconfirmed;           /* no wait for its end succeeded: its buffer is held */
  int wait_copies;           /* its placement put work on the copy stream */
  struct gpu_buffer *buffer; /* its buffer, where a descriptor was put (outside graphs) */
  struct gpu_flight *next;
};

/* Distinct per thread: a per-thread default stream's name is the same in
 * every thread, its queue for the waiters is its thread's. */
static __thread char gpu_thread_tag;

/* Flights handed from one thread to another, in order (under g_gpu.lock). */
struct gpu_fifo {
  struct gpu_flight *head, **end;
  pthread_cond_t wake;
};

/* A waiter thread's state (under g_gpu.lock). */
struct gpu_waiter {
  struct gpu_context *c; /* the context and queue of the stream it waits on, */
  const void *queue;
  int busy;   /* if it waits on one */
  int asleep; /* until a push wakes it */
};

/* An API's state: loaded once, at its first instrumented launch. */
struct gpu_loaded {
  pthread_once_t once;
  int usable; /* loaded with every function */
};

static struct {
  struct gpu_loaded cuda, hip;
  pthread_once_t finisher_once;
  int finisher_usable;
  pthread_mutex_t contexts_lock; /* contexts */
  struct gpu_context *contexts;
  int end_by_event;     /* waiters end twins, not host functions (NANO_GPU_END) */
  pthread_mutex_t lock; /* everything below */
  pthread_cond_t idle, replay_ended;
  struct gpu_fifo queue;   /* for the finisher */
  struct gpu_fifo waiting; /* for the waiters, in launch order */
  unsigned waiters;        /* waiter threads started */
  struct gpu_waiter waiter[GPU_MAX_WAITERS];
  unsigned in_flight; /* launched twins not yet ended */
  int exiting;
  pthread_t finisher;
  int noted_waiter;
} g_gpu = {.cuda = {PTHREAD_ONCE_INIT, 0},
           .hip = {PTHREAD_ONCE_INIT, 0},
           .finisher_once = PTHREAD_ONCE_INIT,
           .contexts_lock = PTHREAD_MUTEX_INITIALIZER,
           .lock = PTHREAD_MUTEX_INITIALIZER,
           .idle = PTHREAD_COND_INITIALIZER,
           .replay_ended = PTHREAD_COND_INITIALIZER,
           .queue = {NULL, &g_gpu.queue.head, PTHREAD_COND_INITIALIZER},
           .waiting = {NULL, &g_gpu.waiting.head, PTHREAD_COND_INITIALIZER}};

/* Appends f to q and wakes q's thread (g_gpu.lock held). */
static void gpu_fifo_push(struct gpu_fifo *q, struct gpu_flight *f) {
  f->next = NULL;
  *q->end = f;
  q->end = &f->next;
  pthread_cond_signal(&q->wake);
}

/* Takes the flight of graph node n out of q, NULL when none is there
 * (g_gpu.lock held). */
static struct gpu_flight *gpu_fifo_take_node(struct gpu_fifo *q, const struct gpu_node *n) {
  for (struct gpu_flight **at = &q->head; *at; at = &(*at)->next) {
    struct gpu_flight *f = *at;
    if (f->node != n)
      continue;
    if (!(*at = f->next))
      q->end = at;
    return f;
  }
  return NULL;
}

/* The first flight of q, waited for (g_gpu.lock held, released meanwhile). */
static struct gpu_flight *gpu_fifo_pop(struct gpu_fifo *q) {
  while (!q->head)
    pthread_cond_wait(&q->wake, &g_gpu.lock);
  struct gpu_flight *f = q->head;
  if (!(q->head = f->next))
    q->end = &q->head;
  return f;
}

/* Distinct messages gpu_note remembers having said; past that many, later
 * new ones are still said (a repeat may then be said again). */
#define GPU_NOTES_MAX 256

/* Says what failed, once per process for each distinct message: a kind of
 * failure, and the kernel or device it names, each said on its own (one flag
 * for every kind once kept all but the first silent). Returns whether it was
 * said now. */
static int gpu_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int gpu_note(const char *fmt, ...) {
  static uint64_t said[GPU_NOTES_MAX];
  static size_t nsaid;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  uint64_t h = nano_fnv64_str(line);
  pthread_mutex_lock(&g_gpu.lock);
  int first = 1;
  for (size_t i = 0; i < nsaid && first; i++)
    first = said[i] != h;
  if (first && nsaid < GPU_NOTES_MAX)
    said[nsaid++] = h;
  pthread_mutex_unlock(&g_gpu.lock);
  if (first)
    fprintf(stderr, "nanoprobe: %s\n", line);
  return first;
}

/* Says, once per cause, why `kinds` of kernels run uninstrumented (why: a
 * sentence), and records it in the trace (NANO_RPDFILE_TAG_GPU_UNAVAILABLE,
 * which `nanoprobe run` and `rpd info` name). */
static void gpu_unavailable(const char *kinds, const char *why) {
  char text[GPU_WHY_BYTES + 64];
  snprintf(text, sizeof text, "%s; %s kernels run uninstrumented", why, kinds);
  if (gpu_note("%s", text))
    (void)rpdi_metadata(NANO_RPDFILE_TAG_GPU_UNAVAILABLE, text); /* none without a trace */
}

/* What the user calls an API's kernels ("CUDA", "HIP"). */
static const char *gpu_kinds(const struct gpu_api *api) {
  return api == &gpu_hip_api ? "HIP" : "CUDA";
}

/* ---- placement ------------------------------------------------------------------ */

/* Runs under c's device, whichever thread calls (drain, finisher, launcher),
 * with the thread's capture mode relaxed: the placement's allocations, copies
 * and synchronizations of its private stream are the API's "potentially
 * unsafe" calls, which a capture in global mode anywhere in the process
 * (the program's) would refuse and be spoiled by. */
struct gpu_relaxed {
  int swapped, saved; /* the thread's mode before, when it was swapped */
};
static void gpu_relax(const struct gpu_api *api, struct gpu_relaxed *r) {
  r->saved = GPU_CAPTURE_MODE_RELAXED;
  r->swapped = api->capture_mode(&r->saved) == 0;
}
static void gpu_unrelax(const struct gpu_api *api, const struct gpu_relaxed *r) {
  int saved = r->saved, rc;
  if (r->swapped && (rc = api->capture_mode(&saved)) != 0)
    gpu_note("%s: a thread's capture mode cannot be restored (%s): it stays relaxed", api->backend,
             api->error(rc));
}

static __thread int gpu_pushed; /* nesting: the outermost push relaxes */
static __thread struct gpu_relaxed gpu_push_mode;
static int gpu_push(struct gpu_context *c) {
  if (c->api->enter(c->key, c->dev) != 0)
    return 0;
  if (gpu_pushed++ == 0)
    gpu_relax(c->api, &gpu_push_mode);
  return 1;
}
static void gpu_pop(struct gpu_context *c) {
  if (--gpu_pushed == 0)
    gpu_unrelax(c->api, &gpu_push_mode);
  c->api->leave();
}

/* The pinned block and the descriptor of a placement (its handle). */
struct gpu_buffer {
  unsigned char *block; /* tail at 0, staging from GPU_STAGE_COUNTERS */
  uint64_t desc;
  uint64_t sums, sums_bytes;      /* device memory of the sums tables, grown to the largest */
  struct gpu_sums_state in_place; /* its device part zeroed in stream order */
  uint64_t blocks, blocks_bytes;  /* device memory of the block-times tables */
  /* a graph node's buffer (gpu_node_tables): the block-times table's bytes
   * placed at capture, and pinned memory that each replay's last copies fill
   * with its tables (sums, then block times) for the finisher */
  uint64_t blocks_used;
  unsigned char *back;
  /* the descriptor last copied to desc, when that copy is known to have
   * reached it (gpu_put_desc) */
  unsigned char uploaded[NANO_DH_DESC_SIZE];
  int uploaded_ok;
};

/* Set on the launching thread while a dispatch is begun (gpu_begin):
 * whether its placement put work on the copy stream (a descriptor, a
 * table), which the twin's stream must then wait for, and its buffer. */
static __thread int gpu_copies_issued;
static __thread struct gpu_buffer *gpu_begun_buffer;

static int gpu_fail(const struct gpu_context *c, char *err, size_t errlen, const char *what,
                    uint64_t bytes, int r) {
  if (err && errlen)
    snprintf(err, errlen, "%s: cannot allocate %s of %llu bytes: %s", c->api->backend, what,
             (unsigned long long)bytes, c->api->error(r));
  return -1;
}

static void gpu_free(void *ctx, struct nano_dh_placement *p) {
  struct gpu_context *c = ctx;
  struct gpu_buffer *b = p->handle;
  /* At exit the program's cudart may have torn the context down already;
   * the process returns the memory anyway. */
  if (b && !g_gpu.exiting && gpu_push(c)) {
    if (b->desc)
      c->api->dev_free(b->desc);
    if (b->sums)
      c->api->dev_free(b->sums);
    if (b->blocks)
      c->api->dev_free(b->blocks);
    if (b->block)
      c->api->host_free(b->block);
    if (b->back)
      c->api->host_free(b->back);
    if (p->ring)
      c->api->host_free(p->ring);
    gpu_pop(c);
  }
  free(b);
  memset(p, 0, sizeof *p);
}

static int gpu_alloc(void *ctx, uint64_t capacity, struct nano_dh_placement *out, char *err,
                     size_t errlen) {
  struct gpu_context *c = ctx;
  memset(out, 0, sizeof *out);
  struct gpu_buffer *b = calloc(1, sizeof *b);
  if (!b) {
    if (err && errlen)
      snprintf(err, errlen, "out of memory");
    return -1;
  }
  out->handle = b;
  if (!gpu_push(c)) {
    if (err && errlen)
      snprintf(err, errlen, "%s: device %d cannot be made current", c->api->backend, c->dev);
    free(b);
    out->handle = NULL;
    return -1;
  }
  const struct gpu_api *api = c->api;
  void *ring = NULL, *block = NULL;
  uint64_t ring_dev = 0, tail_dev = 0;
  int r, rc = -1;
  if ((r = api->host_alloc(&ring, (size_t)capacity)) != 0)
    gpu_fail(c, err, errlen, "a mapped host ring", capacity, r);
  else if ((out->ring = ring, r = api->host_device_ptr(&ring_dev, ring)) != 0)
    gpu_fail(c, err, errlen, "the ring's device view", capacity, r);
  else if ((r = api->host_alloc(&block, GPU_BLOCK_BYTES)) != 0)
    gpu_fail(c, err, errlen, "a mapped host tail", GPU_BLOCK_BYTES, r);
  else if ((b->block = block, r = api->host_device_ptr(&tail_dev, block)) != 0)
    gpu_fail(c, err, errlen, "the tail's device view", GPU_BLOCK_BYTES, r);
  else if ((r = api->dev_alloc(&b->desc, NANO_DH_DESC_SIZE)) != 0)
    gpu_fail(c, err, errlen, "a descriptor in device memory", NANO_DH_DESC_SIZE, r);
  else
    rc = 0;
  gpu_pop(c);
  if (rc != 0) {
    gpu_free(c, out);
    return -1;
  }
  /* The drain expects a zeroed ring (a record's first word is its flag). */
  memset(ring, 0, (size_t)capacity);
  memset(block, 0, GPU_BLOCK_BYTES);
  out->desc_device = (void *)(uintptr_t)b->desc;
  out->desc_host = NULL;
  out->ring_device = ring_dev;
  out->ring_bytes = capacity;
  out->tail = (uint64_t *)block;
  out->tail_device = tail_dev;
  return 0;
}

/* The counters last copied to b's staging area (zero for a new buffer). */
static void gpu_staged_counters(const struct gpu_buffer *b, uint64_t *head, uint64_t *dropped) {
  const uint64_t *stage = (const uint64_t *)(b->block + GPU_STAGE_COUNTERS);
  *head = stage[0];
  *dropped = stage[GPU_STAGED_DROPPED];
}

/* Stages desc in b's pinned block for its copy to the device, with head and
 * dropped, the device's words, as given; returns the staged bytes. */
static unsigned char *gpu_stage_desc(const struct gpu_buffer *b, const void *desc, uint64_t head,
                                     uint64_t dropped) {
  unsigned char *stage = b->block + GPU_STAGE_DESC;
  memcpy(stage, desc, NANO_DH_DESC_SIZE);
  memcpy(stage + NANO_DH_DESC_OFF_HEAD, &head, sizeof head);
  memcpy(stage + NANO_DH_DESC_OFF_DROPPED, &dropped, sizeof dropped);
  return stage;
}

/* Writes the descriptor to the device in one copy on the copy stream, from
 * the buffer's pinned staging area: the host's fields, and head and dropped,
 * which the device owns, as it left them: the counters the buffer's last
 * finish staged (gpu_counters), or zero for a new buffer (the device's memory
 * is not cleared). Between a finish and the buffer's next use nothing else
 * changes them. Then c->staged is recorded after the copy, and the twin's
 * stream waits for it (gpu_launch_twin): the launching thread does not. The
 * copy stream runs in order, so the latest record, whichever thread made
 * it, follows this copy. Without that event the copy is waited for here. */
static int gpu_put_desc(void *ctx, struct nano_dh_placement *p, const void *desc) {
  struct gpu_context *c = ctx;
  struct gpu_buffer *b = p->handle;
  uint64_t head, dropped;
  gpu_staged_counters(b, &head, &dropped);
  unsigned char *image = gpu_stage_desc(b, desc, head, dropped);
  /* The device holds this very descriptor already: the buffer's last one,
   * as its twin left it. A twin writes head, dropped, tail_seen and stalled
   * only when a wave reserves room, which moves head or dropped, and those
   * two are staged as the device left them: so an image equal to the last
   * copy means nothing changed (the same kernel's dispatch again, summed
   * on the device, no record): no copy, and where no table was placed
   * either (gpu_place_table), nothing for the twin's stream to wait for. */
  gpu_begun_buffer = b;
  int unchanged = b->uploaded_ok && memcmp(image, b->uploaded, NANO_DH_DESC_SIZE) == 0;
  if (unchanged && !gpu_copies_issued)
    return 0;
  b->uploaded_ok = 0;
  if (!gpu_push(c))
    return -1;
  int r = unchanged ? 0 : c->api->copy_to_device(b->desc, image, NANO_DH_DESC_SIZE, c->copies);
  if (r == 0) /* after the tables' copies too */
    r = c->staged ? c->api->event_record(c->staged, c->copies) : c->api->stream_sync(c->copies);
  gpu_pop(c);
  if (r != 0)
    return -1;
  memcpy(b->uploaded, image, NANO_DH_DESC_SIZE);
  b->uploaded_ok = 1;
  gpu_copies_issued = 1;
  return 0;
}

static int gpu_counters(void *ctx, const struct nano_dh_placement *p, uint64_t *head,
                        uint64_t *dropped) {
  struct gpu_context *c = ctx;
  struct gpu_buffer *b = p->handle;
  if (!gpu_push(c))
    return -1;
  int r = c->api->copy_to_host(b->block + GPU_STAGE_COUNTERS, b->desc + NANO_DH_DESC_OFF_HEAD,
                               GPU_COUNTERS_BYTES, c->copies);
  if (r == 0)
    r = c->api->stream_sync(c->copies);
  gpu_pop(c);
  if (r != 0) {
    b->uploaded_ok = 0; /* what the device holds is not known */
    return -1;
  }
  gpu_staged_counters(b, head, dropped);
  return 0;
}

/* Device memory *d of *cap bytes kept with a buffer, grown to `bytes` when
 * smaller (its contents are not kept). 0 or the API's error (with it *d 0). */
static int gpu_dev_room(const struct gpu_api *api, uint64_t *d, uint64_t *cap, uint64_t bytes) {
  if (*cap >= bytes)
    return 0;
  if (*d)
    api->dev_free(*d);
  *d = *cap = 0;
  int r = api->dev_alloc(d, (size_t)bytes);
  if (r == 0)
    *cap = bytes;
  return r;
}

/* Places a table of `bytes` in the device memory *d kept with a buffer
 * (capacity *cap, grown when smaller): its first `head` bytes from image, the
 * rest zeroed, on the copy stream, so before the descriptor's copy, which the
 * twin's stream waits for. 0, or -1 after saying that `what` cannot be
 * placed and what such dispatches do (`then`). */
static int gpu_place_table(struct gpu_context *c, uint64_t *d, uint64_t *cap, const void *image,
                           uint64_t head, uint64_t bytes, const char *what, const char *then) {
  const struct gpu_api *api = c->api;
  if (!gpu_push(c))
    return -1;
  int r = gpu_dev_room(api, d, cap, bytes);
  if (r == 0 && head)
    r = api->copy_to_device(*d, image, (size_t)head, c->copies);
  if (r == 0 && bytes > head)
    r = api->memset_device(*d + head, 0, (size_t)(bytes - head), c->copies);
  gpu_pop(c);
  gpu_copies_issued = 1;
  if (r != 0)
    gpu_note("%s: %s of a dispatch (%llu bytes) cannot be placed on device %d: %s; such "
             "dispatches %s",
             api->backend, what, (unsigned long long)bytes, c->dev, api->error(r), then);
  return r == 0 ? 0 : -1;
}

/* Copies bytes of the table at d back into out once the twin has ended (the
 * finisher). 0 or the API's error. */
static int gpu_read_table(struct gpu_context *c, uint64_t d, void *out, uint64_t bytes) {
  if (!gpu_push(c))
    return -1;
  int r = c->api->copy_to_host(out, d, (size_t)bytes, c->copies);
  if (r == 0)
    r = c->api->stream_sync(c->copies);
  gpu_pop(c);
  return r;
}

/* A dispatch's sums table (nano/dh_format.h), placed by gpu_place_table. The
 * image is the runtime's, kept for the process, so the copy from it needs
 * no staging. A buffer whose last dispatch was the same kernel's has the
 * table in place already (the finisher zeroed the counters after reading
 * them, gpu_get_sums): the launching thread then adds nothing. */
static int gpu_put_sums(void *ctx, struct nano_dh_placement *p, const void *image, uint64_t head,
                        uint64_t bytes, uint64_t *device) {
  struct gpu_context *c = ctx;
  struct gpu_buffer *b = p->handle;
  if (!gpu_sums_reuse(&b->in_place, image, head, bytes)) {
    if (gpu_place_table(c, &b->sums, &b->sums_bytes, image, head, bytes, "the sums table",
                        "stream their records") != 0)
      return -1;
    gpu_sums_placed(&b->in_place, image, head, bytes);
  }
  *device = b->sums;
  return 0;
}

/* Reads the sums table back, then zeroes its device part for the buffer's
 * next dispatch, waited for here (the finisher): a next dispatch that finds
 * the table clean and its descriptor in place makes no copy for its twin's
 * stream to wait for (gpu_put_desc). */
static int gpu_get_sums(void *ctx, const struct nano_dh_placement *p, void *out, uint64_t bytes) {
  struct gpu_context *c = ctx;
  struct gpu_buffer *b = p->handle;
  int r = gpu_read_table(c, b->sums, out, bytes);
  struct gpu_sums_state *s = &b->in_place;
  s->clean = r == 0 && bytes == s->used && gpu_push(c);
  if (s->clean) {
    s->clean =
        c->api->memset_device(b->sums + s->head, 0, (size_t)(bytes - s->head), c->copies) == 0 &&
        c->api->stream_sync(c->copies) == 0;
    gpu_pop(c);
  }
  return r == 0 ? 0 : -1;
}

/* A dispatch's block-times table (nano/dh_format.h): all zero. */
static int gpu_put_blocks(void *ctx, struct nano_dh_placement *p, uint64_t bytes,
                          uint64_t *device) {
  struct gpu_context *c = ctx;
  struct gpu_buffer *b = p->handle;
  if (gpu_place_table(c, &b->blocks, &b->blocks_bytes, NULL, 0, bytes, "the block times",
                      "report no block times") != 0)
    return -1;
  *device = b->blocks;
  return 0;
}

static int gpu_get_blocks(void *ctx, const struct nano_dh_placement *p, void *out, uint64_t bytes) {
  const struct gpu_buffer *b = p->handle;
  return gpu_read_table(ctx, b->blocks, out, bytes) == 0 ? 0 : -1;
}

/* The device of a launch on stream s under api (gpu_api.current: CUDA the
 * stream's context, else the thread's, else its runtime device's primary
 * one made current, as cudart would), with its placement, made where it is
 * new and `create` allows; NULL after saying why (silently for a new device
 * that may not be made). */
static struct gpu_context *gpu_context(const struct gpu_api *api, void *s, int create) {
  void *key = NULL;
  int dev = 0, r = api->current(s, &key, &dev);
  if (r != 0 || !key) {
    char why[GPU_WHY_BYTES];
    snprintf(why, sizeof why, "%s: no device to launch on (%s)", api->backend,
             r != 0 ? api->error(r) : "no context current");
    gpu_unavailable(gpu_kinds(api), why);
    return NULL;
  }
  /* One lock over lookup and creation: two threads new to one device make
   * one placement (creation is rare; the API's calls under this lock call
   * back into nothing of ours). */
  pthread_mutex_lock(&g_gpu.contexts_lock);
  struct gpu_context *c = g_gpu.contexts;
  while (c && (c->api != api || c->key != key))
    c = c->next;
  if (c || !create) {
    pthread_mutex_unlock(&g_gpu.contexts_lock);
    return c;
  }
  c = calloc(1, sizeof *c);
  /* the copy stream and event are the device's own: made under it (a
   * stream of another device's than the thread's: a multi-device launch) */
  int entered = c && (r = api->enter(key, dev)) == 0;
  struct gpu_relaxed relaxed; /* creating a stream is unsafe in another's capture */
  gpu_relax(api, &relaxed);
  if (!entered || (r = api->describe(key, dev, &c->info)) != 0 ||
      (r = api->stream_create(&c->copies)) != 0) {
    gpu_unrelax(api, &relaxed);
    if (entered)
      api->leave();
    pthread_mutex_unlock(&g_gpu.contexts_lock);
    char why[GPU_WHY_BYTES];
    snprintf(why, sizeof why, "%s: device %d cannot be queried (%s)", api->backend, dev,
             c ? api->error(r) : "out of memory");
    gpu_unavailable(gpu_kinds(api), why);
    free(c);
    return NULL;
  }
  if (api->event_create(&c->staged, 0) != 0)
    c->staged = NULL; /* descriptors' copies are waited for */
  gpu_unrelax(api, &relaxed);
  api->leave();
  c->api = api;
  c->key = key;
  c->dev = dev;
  pthread_mutex_init(&c->events_lock, NULL);
  c->mem = (struct nano_dh_memory){api->backend,   c,
                                   gpu_alloc,      gpu_free,
                                   gpu_put_desc,   gpu_counters,
                                   gpu_put_sums,   gpu_get_sums,
                                   gpu_put_blocks, gpu_get_blocks};
  c->next = g_gpu.contexts;
  g_gpu.contexts = c;
  pthread_mutex_unlock(&g_gpu.contexts_lock);
  return c;
}

/* ---- end of a dispatch ------------------------------------------------------------ */

/* An event of c, kept or new (blocking as NANO_GPU_END asks; c current). */
static int gpu_event_get(struct gpu_context *c, void **e) {
  pthread_mutex_lock(&c->events_lock);
  int kept = c->nevents > 0;
  if (kept)
    *e = c->events[--c->nevents];
  pthread_mutex_unlock(&c->events_lock);
  return kept ? 0 : c->api->event_create(e, g_gpu.end_by_event);
}

/* Lets go of f's events: kept for reuse (recording an event again replaces
 * a record still pending), destroyed past GPU_EVENT_POOL (the API frees
 * them once their records completed). */
static void gpu_drop_events(struct gpu_flight *f) {
  struct gpu_context *c = f->c;
  for (int i = 0; i < 2; i++) {
    if (!f->ev[i])
      continue;
    pthread_mutex_lock(&c->events_lock);
    int kept = c->nevents < GPU_EVENT_POOL;
    if (kept)
      c->events[c->nevents++] = f->ev[i];
    pthread_mutex_unlock(&c->events_lock);
    if (!kept)
      c->api->event_destroy(f->ev[i]);
    f->ev[i] = NULL;
  }
}

/* One instrumented dispatch fewer in flight; wakes the exit handler at none. */
static void gpu_flight_done(void) {
  pthread_mutex_lock(&g_gpu.lock);
  if (--g_gpu.in_flight == 0)
    pthread_cond_broadcast(&g_gpu.idle);
  pthread_mutex_unlock(&g_gpu.lock);
}

static void gpu_node_ended(struct gpu_node *n);

/* Gives back the held buffers of c whose end events have passed (c current
 * or pushed). */
static void gpu_held_check(struct gpu_context *c) {
  if (!__atomic_load_n(&c->nheld, __ATOMIC_RELAXED))
    return;
  pthread_mutex_lock(&c->events_lock);
  for (struct gpu_held **p = &c->held; *p;) {
    struct gpu_held *h = *p;
    if (!h->ev || c->api->event_query(h->ev) != 0) {
      p = &h->next;
      continue;
    }
    *p = h->next;
    __atomic_sub_fetch(&c->nheld, 1, __ATOMIC_RELAXED);
    nano_dispatch_hold_release(&h->hold);
    c->api->event_destroy(h->ev);
    free(h);
  }
  pthread_mutex_unlock(&c->events_lock);
}

/* Ends f, whose end was not confirmed: its buffer is held (gpu_held). */
static void gpu_end_unconfirmed(struct gpu_flight *f, int64_t start, int64_t end) {
  struct gpu_context *c = f->c;
  if (f->buffer) /* the twin may write its descriptor after the counters were read */
    f->buffer->uploaded_ok = 0;
  struct gpu_held *h = calloc(1, sizeof *h);
  struct nano_dispatch_hold lost;
  nano_dispatch_end_held(f->d, start, end, f->api, h ? &h->hold : &lost);
  if (h) {
    h->ev = f->ev[1]; /* kept: it says when the device is done */
    f->ev[1] = NULL;
  }
  if (gpu_push(c)) {
    gpu_drop_events(f);
    gpu_pop(c);
  }
  if (h) {
    pthread_mutex_lock(&c->events_lock);
    h->next = c->held;
    c->held = h;
    __atomic_add_fetch(&c->nheld, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&c->events_lock);
  }
  gpu_note("%s: a twin's end could not be confirmed: its buffer stays out of use %s",
           c->api->backend,
           h && h->ev ? "until the device is done with it" : "for the rest of the run");
}

static void gpu_end(struct gpu_flight *f) {
  int64_t start = f->launched, end = f->done ? f->done : rpd_now();
  float ms;
  if (f->unconfirmed) {
    gpu_end_unconfirmed(f, start, end);
  } else {
    /* API calls only for a flight with events: a graph replay's end makes
     * none (gpu_node_begin may end one on the API's callback thread) */
    if (f->ev[0] && gpu_push(f->c)) {
      if (f->c->api->event_ms(&ms, f->ev[0], f->ev[1]) == 0 && end - ms * GPU_NS_PER_MS >= start)
        start = end - (int64_t)(ms * GPU_NS_PER_MS);
      gpu_drop_events(f);
      gpu_held_check(f->c);
      gpu_pop(f->c);
    }
    nano_dispatch_end(f->d, start, end, f->api);
  }
  if (f->node)
    gpu_node_ended(f->node);
  free(f);
  gpu_flight_done();
}

static void *gpu_finisher(void *arg) {
  (void)arg;
  rpd_gpu_quiet = 1; /* every GPU API call of this thread is nanoprobe's */
  pthread_mutex_lock(&g_gpu.lock);
  for (;;) {
    struct gpu_flight *f = gpu_fifo_pop(&g_gpu.queue);
    if (g_gpu.exiting) /* past the exit handler: said there, and the layer is going */
      continue;
    pthread_mutex_unlock(&g_gpu.lock);
    gpu_end(f);
    pthread_mutex_lock(&g_gpu.lock);
  }
  return NULL;
}

/* Lets go of f; the last owner queues it for the finisher. */
static void gpu_release(struct gpu_flight *f) {
  if (__atomic_sub_fetch(&f->owners, 1, __ATOMIC_ACQ_REL) != 0)
    return;
  pthread_mutex_lock(&g_gpu.lock);
  gpu_fifo_push(&g_gpu.queue, f);
  pthread_mutex_unlock(&g_gpu.lock);
}

/* The API's host function after the twin: no API calls here. */
static void gpu_done(void *arg) {
  struct gpu_flight *f = arg;
  f->done = rpd_now();
  gpu_release(f);
}

/* Whether a waiter other than w waits on f's stream (g_gpu.lock held). */
static int gpu_stream_waited(const struct gpu_flight *f, unsigned w) {
  for (unsigned i = 0; i < g_gpu.waiters; i++)
    if (i != w && g_gpu.waiter[i].busy && g_gpu.waiter[i].c == f->c &&
        g_gpu.waiter[i].queue == f->queue)
      return 1;
  return 0;
}

/* Waiter w's next flight: the first in launch order whose stream no other
 * waiter waits on, waited for (g_gpu.lock held, released meanwhile). */
static struct gpu_flight *gpu_waiting_pop(unsigned w) {
  for (;;) {
    for (struct gpu_flight **at = &g_gpu.waiting.head; *at; at = &(*at)->next) {
      struct gpu_flight *f = *at;
      if (gpu_stream_waited(f, w))
        continue;
      if (!(*at = f->next) && g_gpu.waiting.end == &f->next)
        g_gpu.waiting.end = at;
      g_gpu.waiter[w] = (struct gpu_waiter){f->c, f->queue, 1, 0};
      return f;
    }
    g_gpu.waiter[w].asleep = 1;
    while (g_gpu.waiter[w].asleep)
      pthread_cond_wait(&g_gpu.waiting.wake, &g_gpu.lock);
  }
}

/* Waiter w (NANO_GPU_END=event, the default): waits, sleeping, for twins'
 * end events, one stream at a time in launch order (a stream's twins end in
 * that order), and then does what the host function would. The program's
 * stream carries no host function, whose round trip through the driver's
 * callback thread a program that waits for its stream would wait for too
 * (an H200: a tiny kernel 4.97x plain instrumented, 6.06x with host
 * functions; medians of 11 rounds). Each stream waited on has a waiter of
 * its own, so a long twin on one stream does not hold back the end of short
 * ones on others, as one waiter in launch order would (tests/gpu's streams
 * and tests/device/gpu_launch's held.cu check it). */
static void *gpu_waiter(void *arg) {
  unsigned w = (unsigned)(uintptr_t)arg;
  rpd_gpu_quiet = 1; /* every GPU API call of this thread is nanoprobe's */
  pthread_mutex_lock(&g_gpu.lock);
  for (;;) {
    struct gpu_flight *f = gpu_waiting_pop(w);
    pthread_mutex_unlock(&g_gpu.lock);
    const struct gpu_api *api = f->c->api;
    int r = -1;
    if (gpu_push(f->c)) {
      /* (a per-thread default stream names this thread's own here) */
      if ((r = api->event_sync(f->ev[1])) != 0 && f->stream != GPU_STREAM_PER_THREAD) {
        gpu_note("%s: waiting for a twin's end event failed (%s): waiting for its stream",
                 api->backend, api->error(r));
        r = api->stream_sync(f->stream);
      }
      gpu_pop(f->c);
    }
    if (r != 0) {
      gpu_note("%s: a twin's end cannot be waited for: its report may miss "
               "records",
               api->backend);
      f->unconfirmed = 1;
    }
    gpu_done(f);
    pthread_mutex_lock(&g_gpu.lock);
    g_gpu.waiter[w].busy = 0;
  }
  return NULL;
}

/* Hands f to the waiters (g_gpu.lock held): the one waiting on its stream
 * takes it next, else an idle one is woken, else one more is started; with
 * GPU_MAX_WAITERS busy, f waits for the first to be free. */
static void gpu_waiting_push(struct gpu_flight *f) {
  gpu_fifo_push(&g_gpu.waiting, f);
  if (gpu_stream_waited(f, GPU_MAX_WAITERS))
    return;
  for (unsigned i = 0; i < g_gpu.waiters; i++)
    if (g_gpu.waiter[i].asleep) { /* claimed: a second push wakes another */
      g_gpu.waiter[i].asleep = 0;
      pthread_cond_broadcast(&g_gpu.waiting.wake);
      return;
    }
  if (g_gpu.waiters == GPU_MAX_WAITERS)
    return;
  pthread_t t;
  unsigned w = g_gpu.waiters;
  if (nano_thread_start(&t, gpu_waiter, (void *)(uintptr_t)w) != 0) {
    if (!g_gpu.noted_waiter)
      fprintf(stderr, "nanoprobe: cannot start another GPU waiter thread; twins on different "
                      "streams are waited for one after another\n");
    g_gpu.noted_waiter = 1;
    return;
  }
  pthread_detach(t);
  g_gpu.waiters++;
}

/* At exit, before the program's cudart tears its contexts down (this handler
 * is registered after cudart's, so runs first): twins still running are
 * waited for, up to GPU_EXIT_WAIT_NS, and ended while CUDA still works. */
static void gpu_exit(void) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += GPU_EXIT_WAIT_NS / GPU_NS_PER_S;
  pthread_mutex_lock(&g_gpu.lock);
  while (g_gpu.in_flight && pthread_cond_timedwait(&g_gpu.idle, &g_gpu.lock, &until) == 0)
    ;
  unsigned left = g_gpu.in_flight;
  g_gpu.exiting = 1;
  pthread_cond_broadcast(&g_gpu.replay_ended); /* replays waiting for one: give up */
  pthread_mutex_unlock(&g_gpu.lock);
  if (left)
    fprintf(stderr,
            "nanoprobe: %u instrumented dispatches had not ended at exit (the program did not "
            "wait for its kernels): they are not reported\n",
            left);
}

/* NANO_GPU_END: how the end of a twin is learnt (docs/ENVIRONMENT.md). */
static int gpu_end_setting(void) {
  static const char *const ends[] = {"event", "hostfn", NULL};
  int end = 0; /* a bad value is said and the default kept (nano/settings.h) */
  nano_env_choice("NANO_GPU_END", ends, &end);
  return end != 1;
}

static void gpu_start_finisher(void) {
  if (nano_thread_start(&g_gpu.finisher, gpu_finisher, NULL) != 0) {
    gpu_unavailable("GPU", "the GPU finisher thread cannot be started");
    return;
  }
  pthread_detach(g_gpu.finisher);
  if (gpu_end_setting()) {
    pthread_t waiter;
    pthread_mutex_lock(&g_gpu.lock);
    if (nano_thread_start(&waiter, gpu_waiter, (void *)(uintptr_t)0) != 0) {
      fprintf(stderr, "nanoprobe: cannot start the GPU waiter thread; host functions end "
                      "twins\n");
    } else {
      pthread_detach(waiter);
      g_gpu.waiters = 1; /* more start as streams need them */
      g_gpu.end_by_event = 1;
    }
    pthread_mutex_unlock(&g_gpu.lock);
  }
  atexit(gpu_exit);
  g_gpu.finisher_usable = 1;
}
static void gpu_load(const struct gpu_api *api, struct gpu_loaded *l, const char *kinds) {
  char why[GPU_WHY_BYTES];
  l->usable = api->load(why, sizeof why) == 0;
  if (!l->usable)
    gpu_unavailable(kinds, why);
}
static void gpu_load_cuda(void) { gpu_load(&gpu_cuda_api, &g_gpu.cuda, "CUDA"); }
static void gpu_load_hip(void) { gpu_load(&gpu_hip_api, &g_gpu.hip, "HIP"); }

/* The API of a launch (the api argument), loaded; NULL when it cannot be. */
const struct gpu_api *gpu_api_of(int api) {
  pthread_once(&g_gpu.finisher_once, gpu_start_finisher);
  if (!g_gpu.finisher_usable)
    return NULL;
  if ((api & NANO_GPU_API_MASK) == NANO_GPU_HIP) {
    pthread_once(&g_gpu.hip.once, gpu_load_hip);
    return g_gpu.hip.usable ? &gpu_hip_api : NULL;
  }
  pthread_once(&g_gpu.cuda.once, gpu_load_cuda);
  return g_gpu.cuda.usable ? &gpu_cuda_api : NULL;
}

/* ---- the twins of kernel handles (__nano_gpu_register) -------------------------- */

/* A kernel's twin: as its module announced it (keyed by the kernel's handle),
 * or one that has launched outside a graph (keyed by the twin). */
struct gpu_twin {
  const void *key, *twin;
  const char *name;
  uint32_t nargs;
};

/* Open addressing on the key; doubles at half full. */
#define GPU_TWINS_INITIAL 64
struct gpu_twin_table {
  pthread_mutex_t lock;
  struct gpu_twin *slots;
  size_t cap, used;
};
static struct gpu_twin_table g_twins = {.lock = PTHREAD_MUTEX_INITIALIZER};
static struct gpu_twin_table g_proven = {.lock = PTHREAD_MUTEX_INITIALIZER};

static size_t gpu_twin_slot(const struct gpu_twin *slots, size_t cap, const void *key) {
  size_t i = ((uintptr_t)key >> 4) * 0x9E3779B97F4A7C15ull & (cap - 1);
  while (slots[i].key && slots[i].key != key)
    i = (i + 1) & (cap - 1);
  return i;
}

/* Adds or replaces t's entry of e.key; -1 when out of memory. */
static int gpu_twin_put(struct gpu_twin_table *t, struct gpu_twin e) {
  pthread_mutex_lock(&t->lock);
  if (2 * (t->used + 1) > t->cap) {
    size_t cap = t->cap ? 2 * t->cap : GPU_TWINS_INITIAL;
    struct gpu_twin *slots = calloc(cap, sizeof *slots);
    if (!slots) {
      pthread_mutex_unlock(&t->lock);
      return -1;
    }
    for (size_t i = 0; i < t->cap; i++)
      if (t->slots[i].key)
        slots[gpu_twin_slot(slots, cap, t->slots[i].key)] = t->slots[i];
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
  }
  size_t i = gpu_twin_slot(t->slots, t->cap, e.key);
  t->used += !t->slots[i].key;
  t->slots[i] = e;
  pthread_mutex_unlock(&t->lock);
  return 0;
}

/* t's entry of key into *out (may be NULL); 0 when it has none. */
static int gpu_twin_find(struct gpu_twin_table *t, const void *key, struct gpu_twin *out) {
  pthread_mutex_lock(&t->lock);
  int found = 0;
  if (t->cap) {
    size_t i = gpu_twin_slot(t->slots, t->cap, key);
    if ((found = t->slots[i].key != NULL) && out)
      *out = t->slots[i];
  }
  pthread_mutex_unlock(&t->lock);
  return found;
}

__attribute__((visibility("default"))) void __nano_gpu_register(int api, const void *kernel,
                                                                const void *twin, const char *name,
                                                                uint32_t nargs) {
  (void)api;
  if (gpu_twin_put(&g_twins, (struct gpu_twin){kernel, twin, name, nargs}) != 0)
    fprintf(stderr,
            "nanoprobe: out of memory: launches of %s through a kernel pointer run "
            "uninstrumented\n",
            name);
}

__attribute__((visibility("default"))) const void *__nano_gpu_twin_of(int api, const void *kernel) {
  (void)api;
  struct gpu_twin t;
  return gpu_twin_find(&g_twins, kernel, &t) ? t.twin : NULL;
}

/* ---- conditional nodes' bodies (__nano_gpu_graph_add_node) ------------------------ */

/* The body graphs of every conditional node the program added, as keys of a
 * twin table (nothing else of an entry is used). A graph lives as long as
 * its node: one that goes and whose address comes back as another graph is
 * taken for a body still, and its launches run uninstrumented. */
static struct gpu_twin_table g_bodies = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Bytes of one edge's data (cudaGraphEdgeData, CUgraphEdgeData: ports,
 * type, reserved); all zero is a full dependency, as no edge data says. */
#define GPU_EDGE_DATA_BYTES 8

int gpu_edges_default(const void *edges, size_t ndeps) {
  const unsigned char *e = edges;
  for (size_t i = 0; e && i < ndeps * GPU_EDGE_DATA_BYTES; i++)
    if (e[i])
      return 0;
  return 1;
}

/* The plugin's twin of a kernel node's kernel p->func (launched into the
 * twin's capture through the program's launch call): 1 and *ht, or 0 where
 * there is none (not built with the plugin, or no launch call). */
static int gpu_plugin_twin(nano_gpu_launch_fn launch, const struct gpu_kernel_params *p,
                           struct gpu_hand_twin *ht) {
  struct gpu_twin t;
  if (!launch || !gpu_twin_find(&g_twins, p->func, &t))
    return 0;
  *ht = (struct gpu_hand_twin){t.twin, t.name, NULL, t.nargs, launch};
  return 1;
}

/* The table of API api (enum nano_gpu_api, flags ignored), not loaded:
 * reading a call's parameters needs no API loaded (nor touches the device). */
static const struct gpu_api *gpu_api_table(int api) {
  return (api & NANO_GPU_API_MASK) == NANO_GPU_HIP ? &gpu_hip_api : &gpu_cuda_api;
}

__attribute__((visibility("default"))) int
__nano_gpu_graph_add_node(int api, void *add, nano_gpu_launch_fn launch, int with_edges,
                          void **node, void *graph, const void *deps, const void *edges,
                          size_t ndeps, void *params) {
  const struct gpu_api *a = gpu_api_table(api);
  /* a kernel node goes in as its twin's nodes, as cudaGraphAddKernelNode's,
   * unless its edges are not all full dependencies (a child graph node is
   * added without edge data) */
  const void *kernel =
      node && params && a->graphs && a->graphs->generic_kernel && nano_dispatch_instrumenting()
          ? a->graphs->generic_kernel(params)
          : NULL;
  int how = GPU_HAND_AS_IS;
  struct gpu_hand_twin ht = {0};
  const char *why = NULL;
  struct gpu_kernel_params p;
  if (kernel)
    a->graphs->kernel_params_read(kernel, &p);
  if (kernel && gpu_plugin_twin(launch, &p, &ht)) {
    if (!gpu_edges_default(edges, ndeps))
      gpu_note("%s: %s", ht.name, GPU_HAND_EDGES_SAID);
    else if ((how = gpu_hand_add(api, &ht, &p, node, graph, deps, ndeps, &why)) == GPU_HAND_ADDED)
      return 0;
  }
  int rc = with_edges ? ((nano_gpu_add_node_edges_fn)add)(node, graph, deps, edges, ndeps, params)
                      : ((nano_gpu_add_node_fn)add)(node, graph, deps, ndeps, params);
  if (kernel)
    return gpu_hand_added(how, rc, node, ht.name, why);
  void *const *bodies = NULL;
  unsigned n = 0;
  if (rc == 0 && a->node_bodies && nano_dispatch_instrumenting())
    a->node_bodies(params, &bodies, &n);
  for (unsigned i = 0; i < n; i++)
    if (bodies[i] && gpu_twin_put(&g_bodies, (struct gpu_twin){.key = bodies[i]}) != 0)
      fprintf(stderr,
              "nanoprobe: out of memory: a twin captured into a conditional node's body may "
              "spoil the capture\n");
  return rc;
}

/* Whether s is being captured into a conditional node's body graph. */
static int gpu_capturing_body(const struct gpu_api *api, void *s) {
  void *graph = NULL;
  return api->captured_graph && api->captured_graph(s, &graph) == 0 && graph &&
         gpu_twin_find(&g_bodies, graph, NULL);
}

/* ---- the program's own API: last error, error names (__nano_gpu_api) ------------- */

/* Per API (index: enum nano_gpu_api), the program's copies of its last-error
 * calls and error names: a failed twin launch leaves its error there, which
 * the program would read as its own. Written by module constructors, read at
 * launches: atomic. */
typedef int (*gpu_last_error_fn)(void);
typedef const char *(*gpu_error_name_fn)(int);
static struct {
  gpu_last_error_fn get, peek;
  gpu_error_name_fn name;
} g_program_api[NANO_GPU_HIP + 1];

__attribute__((visibility("default"))) void
__nano_gpu_api(int api, gpu_last_error_fn get, gpu_last_error_fn peek, gpu_error_name_fn name) {
  api &= NANO_GPU_API_MASK;
  if (api < NANO_GPU_CUDA || api > NANO_GPU_HIP)
    return;
  __atomic_store_n(&g_program_api[api].get, get, __ATOMIC_RELEASE);
  __atomic_store_n(&g_program_api[api].peek, peek, __ATOMIC_RELEASE);
  __atomic_store_n(&g_program_api[api].name, name, __ATOMIC_RELEASE);
}

/* Whether the program has an error of its own pending (its API's
 * PeekAtLastError; 0 where the program did not say how to ask). */
static int gpu_program_error_pending(int api) {
  if (api & GPU_DRIVER) /* the driver keeps no last error */
    return 0;
  api &= NANO_GPU_API_MASK;
  gpu_last_error_fn peek = __atomic_load_n(&g_program_api[api].peek, __ATOMIC_ACQUIRE);
  return peek && peek() != 0;
}

/* Twins that failed to launch, said once each (keyed by the twin's handle). */
static struct gpu_twin_table g_failed = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* After a twin failed to launch with the API's error rc (-1: the runtime's
 * own step before it): takes the error out of the program's last error
 * unless one of its own was pending before (the original then runs, and
 * the program must see what it would without the tool). */
static void gpu_twin_error_take(int api, int rc, int pending) {
  gpu_last_error_fn get =
      __atomic_load_n(&g_program_api[api & NANO_GPU_API_MASK].get, __ATOMIC_ACQUIRE);
  if (rc > 0 && !pending && get && !(api & GPU_DRIVER))
    get();
}

/* Says once per twin that the twin of kernel `name` failed (captured: into
 * a graph being captured) with rc, with the API's name of the error; `same`:
 * the original's launch failed with the same error, so the launch itself is
 * wrong, not its twin. */
static void gpu_twin_say(int api, const void *twin, const char *name, int rc, int captured,
                         int same) {
  if (gpu_twin_find(&g_failed, twin, NULL))
    return;
  (void)gpu_twin_put(&g_failed, (struct gpu_twin){twin, twin, name, 0}); /* best effort */
  gpu_error_name_fn error_name =
      __atomic_load_n(&g_program_api[api & NANO_GPU_API_MASK].name, __ATOMIC_ACQUIRE);
  char reason[96];
  const char *n = rc > 0 && (api & GPU_DRIVER) ? gpu_cuda_api.error(rc)
                  : rc > 0 && error_name       ? error_name(rc)
                                               : NULL;
  if (rc <= 0)
    snprintf(reason, sizeof reason, "its buffer could not be made ready");
  else if (n)
    snprintf(reason, sizeof reason, "%s, error %d", n, rc);
  else
    snprintf(reason, sizeof reason, "error %d", rc);
  if (same)
    fprintf(stderr,
            "nanoprobe: %s: the launch fails with and without instrumentation (%s): the "
            "program's own launch error (a grid, block or shared memory size over what the "
            "kernel or device allows?), not nanoprobe's\n",
            name, reason);
  else
    fprintf(stderr, "nanoprobe: %s: its twin %s (%s): it runs uninstrumented%s\n", name,
            captured ? "was not captured" : "did not launch", reason,
            captured ? " in the graph" : "");
}

/* ---- the launch ------------------------------------------------------------------- */

/* The program's launch call: traced by CUPTI as the program's, unlike the
 * rest of __nano_gpu_launch's CUDA calls (rpd_gpu_quiet). */
static int gpu_program_launch(nano_gpu_launch_fn launch, const void *kernel, uint64_t grid_xy,
                              uint32_t grid_z, uint64_t block_xy, uint32_t block_z, void **args,
                              size_t shared, void *stream) {
  rpd_gpu_quiet--;
  int rc = launch(kernel, grid_xy, grid_z, block_xy, block_z, args, shared, stream);
  rpd_gpu_quiet++;
  return rc;
}

/* The twin's arguments into all: the kernel's, then a pointer to the
 * descriptor's address (*desc must live until the launch returns). */
static void gpu_twin_args(void **all, void **args, uint32_t nargs, void **desc) {
  memcpy(all, args, nargs * sizeof *args);
  all[nargs] = desc;
}

/* Before f's twin is launched on s (the API's name for the program's
 * stream; f's device current): s waits for the placement's copies (the
 * descriptor, tables), then f's start event; 0, or -1 where the copies can
 * be neither waited for nor synchronized. */
static int gpu_twin_before(struct gpu_flight *f, void *s) {
  const struct gpu_api *api = f->c->api;
  /* none made, nothing to wait for */
  if (f->wait_copies && f->c->staged && api->stream_wait(s, f->c->staged) != 0 &&
      api->stream_sync(f->c->copies) != 0)
    return -1;
  /* the start event after that wait: the twin's time is its own */
  if (gpu_event_get(f->c, &f->ev[0]) != 0)
    f->ev[0] = NULL;
  else if (gpu_event_get(f->c, &f->ev[1]) != 0 || api->event_record(f->ev[0], s) != 0)
    gpu_drop_events(f);
  return 0;
}

/* After f's twin (of nargs explicit arguments) launched on s: its end
 * event, and a waiter or a host function after it to learn its end. */
static void gpu_twin_after(struct gpu_flight *f, const void *twin, uint32_t nargs, void *s) {
  const struct gpu_api *api = f->c->api;
  if (!gpu_twin_find(&g_proven, twin, NULL))
    (void)gpu_twin_put(&g_proven, (struct gpu_twin){twin, twin, NULL, nargs}); /* best effort */
  if (f->ev[0] && api->event_record(f->ev[1], s) != 0)
    gpu_drop_events(f);
  f->stream = s;
  f->queue = s == GPU_STREAM_PER_THREAD ? (const void *)&gpu_thread_tag : s;
  pthread_mutex_lock(&g_gpu.lock);
  g_gpu.in_flight++;
  if (g_gpu.end_by_event && f->ev[1]) { /* a waiter learns the end */
    gpu_waiting_push(f);
    pthread_mutex_unlock(&g_gpu.lock);
    return;
  }
  pthread_mutex_unlock(&g_gpu.lock);
  int r = api->host_func(s, gpu_done, f);
  if (r != 0) {
    /* No word when the twin is done: wait for this stream alone. */
    gpu_note("%s: the host function after a twin failed (%s): instrumented dispatches wait for "
             "their stream",
             api->backend, api->error(r));
    f->unconfirmed = api->stream_sync(s) != 0;
    gpu_done(f);
  }
}

/* Launches the twin of dispatch f on stream s (the API's name for the
 * program's stream, which `stream` is as the program passed it); 0, or the
 * launch's error (-1: the runtime's step before it) with f not ended. */
static int gpu_launch_twin(struct gpu_flight *f, nano_gpu_launch_fn launch, const void *twin,
                           uint64_t grid_xy, uint32_t grid_z, uint64_t block_xy, uint32_t block_z,
                           void **args, uint32_t nargs, size_t shared, void *stream, void *s) {
  void *all[GPU_MAX_ARGS + 1], *desc = nano_dispatch_desc(f->d);
  gpu_twin_args(all, args, nargs, &desc);
  if (gpu_twin_before(f, s) != 0)
    return -1;
  int rc =
      gpu_program_launch(launch, twin, grid_xy, grid_z, block_xy, block_z, all, shared, stream);
  if (rc == 0)
    gpu_twin_after(f, twin, nargs, s);
  return rc;
}

/* Set while this thread captures a kernel node added by hand into a graph
 * of nanoprobe's own (gpu_hand_capture), and the node its launch made. */
static __thread int gpu_hand_capturing;
static __thread struct gpu_node *gpu_hand_captured;

/* The device of a launch on stream s, and s's capture status; NULL: the
 * original runs. */
static struct gpu_context *gpu_prepare(int api_id, const void *twin, const char *name,
                                       uint32_t nargs, void *s, int *status) {
  if (nargs > GPU_MAX_ARGS) {
    gpu_note("%s: more than %d arguments; it runs uninstrumented", name, GPU_MAX_ARGS);
    return NULL;
  }
  const struct gpu_api *api = gpu_api_of(api_id);
  if (!api)
    return NULL;
  /* The capture status first: inside a program's capture in global mode a
   * new device's placement (a stream, memory) would spoil the capture. A
   * thread that captures has its context current; a query that fails (no
   * context yet) means no capture. */
  if (api->capture_status(s, status) == 0 && *status != GPU_CAPTURE_NONE) {
    if (*status != GPU_CAPTURE_ACTIVE) /* an invalidated capture: the program's business */
      return NULL;
    if (api->host_func_captured && !api->host_func_captured()) {
      gpu_note("%s: captured into a graph, into which this %s runtime captures no host function "
               "(HIP's hipLaunchHostFunc came with ROCm 5.3) as a twin's dispatch needs: it runs "
               "uninstrumented in graphs",
               name, api->backend);
      return NULL;
    }
    if (gpu_hand_capturing) /* nanoprobe's own (a kernel node added by hand): a failed twin
                               spoils only it */
      return gpu_context(api, s, 0);
    if (gpu_capturing_body(api, s)) {
      gpu_note("%s: captured into a conditional node's body graph, which may hold no host "
               "function (CUDA's rule) as a twin's dispatch needs: it runs uninstrumented there",
               name);
      return NULL;
    }
    struct gpu_context *c = gpu_twin_find(&g_proven, twin, NULL) ? gpu_context(api, s, 0) : NULL;
    if (!c)
      gpu_note("%s: captured into a graph before its twin ever launched outside one on this "
               "device: it runs uninstrumented in the graph (captures after an instrumented "
               "launch are instrumented)",
               name);
    return c;
  }
  struct gpu_context *c = gpu_context(api, s, 1);
  if (!c || api->capture_status(s, status) != 0)
    return NULL;
  return c;
}

/* What the dispatch layer is told of a launch on c. */
static struct nano_launch_desc gpu_launch_desc(struct gpu_context *c, const void *twin,
                                               const char *name, uint64_t grid_xy, uint32_t grid_z,
                                               uint64_t block_xy, uint32_t block_z, size_t shared,
                                               const struct nano_dh_memory *memory) {
  return (struct nano_launch_desc){
      .kernel = name,
      .backend = c->api->backend,
      .arch = c->info.arch,
      .device = (uint32_t)c->dev,
      .wave_size = c->info.wave_size,
      .grid = {(uint32_t)grid_xy, (uint32_t)(grid_xy >> 32), grid_z},
      .block = {(uint32_t)block_xy, (uint32_t)(block_xy >> 32), block_z},
      .shared_bytes = shared,
      .line_bytes = c->info.line_bytes,
      .sector_bytes = c->info.sector_bytes,
      .lds_model = c->info.lds_model,
      .twin = twin,
      .aggregates = memory && memory->put_sums ? NANO_LAUNCH_SUMS_TABLE : NANO_LAUNCH_SUMS_NONE,
      .times_blocks =
          memory && memory->put_blocks ? NANO_LAUNCH_BLOCKS_TABLE : NANO_LAUNCH_BLOCKS_NONE,
      .memory = memory};
}

/* The dispatch of one launch on c outside a graph, or NULL: the original runs. */
static struct gpu_flight *gpu_begin(struct gpu_context *c, const struct nano_launch_desc *l,
                                    int64_t start) {
  gpu_held_check(c); /* the launching thread has c current */
  gpu_copies_issued = 0;
  gpu_begun_buffer = NULL;
  struct nano_dispatch *d = nano_dispatch_begin(l);
  if (!d)
    return NULL;
  struct gpu_flight *f = calloc(1, sizeof *f);
  if (!f) {
    nano_dispatch_cancel(d);
    return NULL;
  }
  f->wait_copies = gpu_copies_issued;
  f->buffer = gpu_begun_buffer;
  f->d = d;
  f->c = c;
  f->launched = start;
  f->owners = 2;
  return f;
}

/* ---- launches captured into a graph ------------------------------------------------ */

/* One twin launch captured into a graph (see the file comment). Lives as
 * long as the process: nothing tells the runtime when the graph goes. */
struct gpu_node {
  struct gpu_context *c;
  struct nano_dh_memory mem;    /* c's placement, the descriptor staged */
  struct nano_launch_desc l;    /* l.memory = &mem */
  struct nano_dh_placement *pl; /* the pool's one buffer */
  int allocating;               /* its allocation is allowed: at capture only */
  int broken;                   /* capturing the nodes failed: replays record nothing */
  struct nano_dispatch *d;      /* the replay running */
  int ending;                   /* (g_gpu.lock) a replay's end is queued for the finisher */
  int64_t start;
  uint64_t api; /* the capture's launch row */
};

static int gpu_node_alloc(void *ctx, uint64_t capacity, struct nano_dh_placement *out, char *err,
                          size_t errlen) {
  struct gpu_node *n = ctx;
  if (!n->allocating) { /* a host function: no API calls */
    snprintf(err, errlen, "the graph's buffer of %s is in use by another replay", n->l.kernel);
    return -1;
  }
  int rc = gpu_alloc(n->c, capacity, out, err, errlen);
  if (rc == 0)
    n->pl = out;
  return rc;
}

static void gpu_node_free(void *ctx, struct nano_dh_placement *p) {
  struct gpu_node *n = ctx;
  gpu_free(n->c, p);
}

/* Stages the descriptor for the next replay's copy: head continues from the
 * ring's tail (everything before it was drained; desc's tail_seen, set by
 * dh_comms, is that tail too), dropped from the last replay's count. No API
 * call. */
static int gpu_node_put_desc(void *ctx, struct nano_dh_placement *p, const void *desc) {
  (void)ctx;
  const struct gpu_buffer *b = p->handle;
  uint64_t staged_head, dropped;
  gpu_staged_counters(b, &staged_head, &dropped);
  gpu_stage_desc(b, desc, *p->tail, dropped);
  return 0;
}

/* The counters the last replay copied back. No API call. */
static int gpu_node_counters(void *ctx, const struct nano_dh_placement *p, uint64_t *head,
                             uint64_t *dropped) {
  (void)ctx;
  gpu_staged_counters(p->handle, head, dropped);
  return 0;
}

/* A replay's sums table: the one placed at capture (gpu_node_tables) when it
 * is the table the dispatch layer asks for, else none (the replay streams).
 * No API call: the replay's own nodes zero the counters before the twin and
 * copy the table back after it. */
static int gpu_node_put_sums(void *ctx, struct nano_dh_placement *p, const void *image,
                             uint64_t head, uint64_t bytes, uint64_t *device) {
  (void)ctx;
  const struct gpu_buffer *b = p->handle;
  if (!gpu_sums_holds(&b->in_place, image, head, bytes))
    return -1;
  *device = b->sums;
  return 0;
}

/* The sums table the replay's copy brought back. No API call. */
static int gpu_node_get_sums(void *ctx, const struct nano_dh_placement *p, void *out,
                             uint64_t bytes) {
  (void)ctx;
  const struct gpu_buffer *b = p->handle;
  if (bytes != b->in_place.used)
    return -1;
  memcpy(out, b->back, (size_t)bytes);
  return 0;
}

/* A replay's block-times table, placed at capture for the capture's grid.
 * No API call. */
static int gpu_node_put_blocks(void *ctx, struct nano_dh_placement *p, uint64_t bytes,
                               uint64_t *device) {
  (void)ctx;
  const struct gpu_buffer *b = p->handle;
  if (!b->blocks_used || bytes != b->blocks_used)
    return -1;
  *device = b->blocks;
  return 0;
}

static int gpu_node_get_blocks(void *ctx, const struct nano_dh_placement *p, void *out,
                               uint64_t bytes) {
  (void)ctx;
  const struct gpu_buffer *b = p->handle;
  if (bytes != b->blocks_used)
    return -1;
  memcpy(out, b->back + b->in_place.used, (size_t)bytes);
  return 0;
}

/* Stages a descriptor whose block filter admits no block: the replay's twin
 * records nothing. */
static void gpu_node_silence(struct gpu_node *n) {
  unsigned char *stage = ((struct gpu_buffer *)n->pl->handle)->block + GPU_STAGE_DESC;
  const uint32_t lo[3] = {UINT32_MAX, UINT32_MAX, UINT32_MAX}, hi[3] = {0, 0, 0};
  memcpy(stage + NANO_DH_DESC_OFF_BLOCK_LO, lo, sizeof lo);
  memcpy(stage + NANO_DH_DESC_OFF_BLOCK_HI, hi, sizeof hi);
}

/* Marks n's capture failed: its replays record nothing (read by the host
 * functions, on the API's thread). */
static void gpu_node_break(struct gpu_node *n) {
  pthread_mutex_lock(&g_gpu.lock);
  n->broken = 1;
  pthread_mutex_unlock(&g_gpu.lock);
  gpu_node_silence(n);
}

/* The finisher ended a replay of n: its buffer and staged counters are free
 * for the next. */
static void gpu_node_ended(struct gpu_node *n) {
  pthread_mutex_lock(&g_gpu.lock);
  n->ending = 0;
  pthread_cond_broadcast(&g_gpu.replay_ended);
  pthread_mutex_unlock(&g_gpu.lock);
}

/* The graph's first host function of a replay. A replay whose predecessor
 * has not been ended yet (its twin would write into the ring and counters
 * being read) ends it here when it still waits in the finisher's queue,
 * behind other flights whose ends make API calls, which a host function
 * must not wait for (cuLaunchHostFunc's rules); a replay's end makes none.
 * Only a predecessor the finisher is ending now is waited for, and that end
 * makes no API call either. The stream waits only when replays come faster
 * than their reports. */
static void gpu_node_begin(void *arg) {
  struct gpu_node *n = arg;
  n->d = NULL;
  pthread_mutex_lock(&g_gpu.lock);
  struct gpu_flight *prev =
      n->ending && !g_gpu.exiting ? gpu_fifo_take_node(&g_gpu.queue, n) : NULL;
  pthread_mutex_unlock(&g_gpu.lock);
  if (prev)
    gpu_end(prev); /* clears n->ending */
  pthread_mutex_lock(&g_gpu.lock);
  while (n->ending && !g_gpu.exiting)
    pthread_cond_wait(&g_gpu.replay_ended, &g_gpu.lock);
  int go = !n->broken && !g_gpu.exiting;
  g_gpu.in_flight += go; /* before the dispatch exists: the exit handler waits */
  pthread_mutex_unlock(&g_gpu.lock);
  if (go) {
    n->start = rpd_now();
    n->d = nano_dispatch_begin(&n->l);
    if (n->d && nano_dispatch_desc(n->d) != n->pl->desc_device) { /* not the node's buffer */
      nano_dispatch_cancel(n->d);
      n->d = NULL;
    }
  }
  if (!n->d) {
    gpu_node_silence(n);
    if (go)
      gpu_flight_done();
  }
}

/* The graph's last host function of a replay: the replay's end goes to the
 * finisher (the counters are already staged), as an ungraphed twin's does. */
static void gpu_node_end(void *arg) {
  struct gpu_node *n = arg;
  struct nano_dispatch *d = n->d;
  if (!d)
    return;
  n->d = NULL;
  int64_t done = rpd_now();
  struct gpu_flight *f = calloc(1, sizeof *f);
  if (!f) { /* out of memory: end it here, the stream waits */
    pthread_mutex_lock(&g_gpu.lock);
    int exiting = g_gpu.exiting;
    pthread_mutex_unlock(&g_gpu.lock);
    if (!exiting) /* past the exit handler: said there, and the layer is going */
      nano_dispatch_end(d, n->start, done, n->api);
    gpu_flight_done();
    return;
  }
  *f = (struct gpu_flight){
      .d = d, .c = n->c, .launched = n->start, .done = done, .api = n->api, .owners = 1, .node = n};
  pthread_mutex_lock(&g_gpu.lock);
  n->ending = 1;
  pthread_mutex_unlock(&g_gpu.lock);
  gpu_release(f);
}

/* Places the tables of n's replays at capture, where API calls are allowed
 * (a replay's begin is a host function): the sums table with its image and
 * the block-times table, as the kernel's dispatches so far took them
 * (nano_dispatch_tables), and the pinned memory the replay's copies fill.
 * What cannot be placed is said (gpu_place_table) and left out: those
 * replays stream their records, or report no block times. */
static void gpu_node_tables(struct gpu_node *n) {
  struct nano_dispatch_tables t;
  if (nano_dispatch_tables(&n->l, &t) != 0 || (!t.sums && !t.block_bytes))
    return;
  struct gpu_context *c = n->c;
  const struct gpu_api *api = c->api;
  struct gpu_buffer *b = n->pl->handle;
  uint64_t sums = t.sums ? t.sums_bytes : 0;
  if (!gpu_push(c))
    return;
  int r = api->host_alloc((void **)&b->back, (size_t)(sums + t.block_bytes));
  if (r != 0) {
    b->back = NULL;
    gpu_note("%s: no pinned memory (%llu bytes) for the tables of a launch captured into a "
             "graph (%s): its replays stream their records and report no block times",
             n->l.kernel, (unsigned long long)(sums + t.block_bytes), api->error(r));
  }
  if (r == 0 && sums &&
      gpu_place_table(c, &b->sums, &b->sums_bytes, t.sums, t.sums_head, sums, "the sums table",
                      "stream their records") == 0) {
    gpu_sums_placed(&b->in_place, t.sums, t.sums_head, sums);
  }
  if (r == 0 && t.block_bytes &&
      gpu_place_table(c, &b->blocks, &b->blocks_bytes, NULL, 0, t.block_bytes, "the block times",
                      "report no block times") == 0)
    b->blocks_used = t.block_bytes;
  /* the replays run on the program's stream, not after the copy stream */
  if (r == 0 && (b->in_place.image || b->blocks_used) && (r = api->stream_sync(c->copies)) != 0) {
    gpu_note("%s: the tables of a launch captured into a graph cannot be placed (%s): its "
             "replays stream their records and report no block times",
             n->l.kernel, api->error(r));
    b->in_place.image = NULL;
    b->blocks_used = 0;
  }
  gpu_pop(c);
  n->l.aggregates = b->in_place.image ? NANO_LAUNCH_SUMS_TABLE : NANO_LAUNCH_SUMS_NONE;
  n->l.times_blocks = b->blocks_used ? NANO_LAUNCH_BLOCKS_TABLE : NANO_LAUNCH_BLOCKS_NONE;
}

/* A node for a capture of l on c, its buffer allocated; NULL after saying why. */
static struct gpu_node *gpu_node_create(struct gpu_context *c, const struct nano_launch_desc *l) {
  struct gpu_node *n = calloc(1, sizeof *n);
  char *kernel = l->kernel ? strdup(l->kernel) : NULL;
  if (!n || !kernel) {
    free(n);
    free(kernel);
    gpu_note("out of memory: launches captured into graphs run uninstrumented");
    return NULL;
  }
  n->c = c;
  n->mem = (struct nano_dh_memory){c->api->backend,     n,
                                   gpu_node_alloc,      gpu_node_free,
                                   gpu_node_put_desc,   gpu_node_counters,
                                   gpu_node_put_sums,   gpu_node_get_sums,
                                   gpu_node_put_blocks, gpu_node_get_blocks};
  n->l = *l;
  n->l.kernel = kernel;
  n->l.memory = &n->mem;
  char err[256] = "";
  n->allocating = 1; /* gpu_alloc relaxes the capturing thread's mode for it */
  int rc = nano_dispatch_reserve(&n->mem, err, sizeof err);
  n->allocating = 0;
  if (rc != 0 || !n->pl) {
    /* the dispatch layer may hold the node's (empty) pool: the node stays */
    gpu_note("%s: no buffer for a launch captured into a graph (%s): it runs uninstrumented in "
             "the graph",
             l->kernel, err[0] ? err : "the dispatch layer is off");
    return NULL;
  }
  gpu_node_tables(n);
  return n;
}

/* Tells the tracer that the node just captured into s is nanoprobe's (a
 * copy of a graph's descriptor or counters), not the program's. */
static void gpu_own_node(const struct gpu_api *api, void *s) {
  void *node = NULL;
  if (api->captured_node && api->captured_node(s, &node) == 0)
    rpd_cupti_own_graph_node(node);
}

/* Captures into s the nodes that zero n's tables for a replay's twin
 * (before: 1) or copy them back for its finisher after the twin (0). 0 or
 * the API's error. */
static int gpu_node_table_nodes(struct gpu_node *n, void *s, int before) {
  const struct gpu_api *api = n->c->api;
  struct gpu_buffer *b = n->pl->handle;
  int r = 0;
  const struct gpu_sums_state *t = &b->in_place;
  if (t->image && t->used > t->head) {
    r = before ? api->memset_device(b->sums + t->head, 0, (size_t)(t->used - t->head), s)
               : api->copy_to_host(b->back, b->sums, (size_t)t->used, s);
    if (r == 0)
      gpu_own_node(api, s);
  }
  if (r == 0 && b->blocks_used) {
    r = before ? api->memset_device(b->blocks, 0, (size_t)b->blocks_used, s)
               : api->copy_to_host(b->back + t->used, b->blocks, (size_t)b->blocks_used, s);
    if (r == 0)
      gpu_own_node(api, s);
  }
  return r;
}

/* Captures the nodes of an instrumented launch of twin into stream s; 0, or
 * an error, said (then the original is to be captured). */
static int gpu_capture(struct gpu_node *n, int api_id, nano_gpu_launch_fn launch, const void *twin,
                       uint64_t grid_xy, uint32_t grid_z, uint64_t block_xy, uint32_t block_z,
                       void **args, uint32_t nargs, size_t shared, void *stream, void *s) {
  const struct gpu_api *api = n->c->api;
  struct gpu_buffer *b = n->pl->handle;
  void *all[GPU_MAX_ARGS + 1], *desc = n->pl->desc_device;
  gpu_twin_args(all, args, nargs, &desc);
  int r = api->host_func(s, gpu_node_begin, n);
  if (r == 0 &&
      (r = api->copy_to_device(b->desc, b->block + GPU_STAGE_DESC, NANO_DH_DESC_SIZE, s)) == 0) {
    gpu_own_node(api, s);
    r = gpu_node_table_nodes(n, s, 1);
  }
  if (r != 0) {
    gpu_node_break(n);
    gpu_note("%s: capturing its buffer's nodes into the graph failed (%s): it runs uninstrumented "
             "in the graph",
             n->l.kernel, api->error(r));
    return r;
  }
  int pending = gpu_program_error_pending(api_id);
  int rc =
      gpu_program_launch(launch, twin, grid_xy, grid_z, block_xy, block_z, all, shared, stream);
  if (rc != 0) {
    gpu_node_break(n);
    gpu_twin_error_take(api_id, rc, pending);
    gpu_twin_say(api_id, twin, n->l.kernel, rc, 1, 0);
    return rc;
  }
  r = api->copy_to_host(b->block + GPU_STAGE_COUNTERS, b->desc + NANO_DH_DESC_OFF_HEAD,
                        GPU_COUNTERS_BYTES, s);
  if (r == 0) {
    gpu_own_node(api, s);
    r = gpu_node_table_nodes(n, s, 0);
  }
  if (r == 0)
    r = api->host_func(s, gpu_node_end, n);
  if (r != 0) {
    /* the twin is in the graph: it must record nothing from now on */
    gpu_node_break(n);
    gpu_note("%s: capturing its buffer's nodes into the graph failed (%s): its replays record "
             "nothing",
             n->l.kernel, api->error(r));
  }
  return 0;
}

/* The trace's row of a launch of kernel `name` (api as gpu_launch's) from
 * start to now, with the launch's arguments (on `stream` where has_stream)
 * where CUPTI's row of the program's call has none; its id, or 0. */
static uint64_t gpu_launch_row(int api, const char *name, int has_stream, void *stream,
                               uint64_t grid_xy, uint32_t grid_z, uint64_t block_xy,
                               uint32_t block_z, size_t shared, int64_t start) {
  uint64_t id = rpd_record_api("nano", "", "nanoLaunchKernel", name, start, rpd_now());
  if (id && !((api & NANO_GPU_API_MASK) == NANO_GPU_CUDA && rpd_cupti_records_calls())) {
    char sname[24] = "";
    if (has_stream)
      snprintf(sname, sizeof sname, "%p", stream);
    struct rpd_kernel_launch kl = {sname,
                                   (int)(uint32_t)grid_xy,
                                   (int)(grid_xy >> 32),
                                   (int)grid_z,
                                   (int)(uint32_t)block_xy,
                                   (int)(block_xy >> 32),
                                   (int)block_z,
                                   (int)shared,
                                   0,
                                   name};
    rpd_record_kernelapi(id, &kl);
  }
  return id;
}

int gpu_launch(int api, nano_gpu_launch_fn launch, const void *kernel, const void *twin,
               const char *name, const char *sites_path, uint64_t grid_xy, uint32_t grid_z,
               uint64_t block_xy, uint32_t block_z, void **args, uint32_t nargs, size_t shared,
               void *stream) {
  int64_t start = rpd_now();
  struct gpu_twin known;
  if (!twin && gpu_twin_find(&g_twins, kernel, &known)) { /* a handle that was no constant */
    twin = known.twin;
    name = known.name;
    nargs = known.nargs;
  }
  if (!twin) { /* never announced: not built with the plugin */
    int rc = launch(kernel, grid_xy, grid_z, block_xy, block_z, args, shared, stream);
    rpd_record_api("nano", "", "nanoLaunchKernel", "", start, rpd_now());
    return rc;
  }
  rpd_gpu_quiet++;
  /* The stream as the API names it: a NULL of the per-thread variant is the
   * thread's default stream. */
  void *s = !stream && (api & NANO_GPU_PER_THREAD) ? GPU_STREAM_PER_THREAD : stream;
  struct gpu_flight *f = NULL;
  struct gpu_node *node = NULL;
  int rc = -1, launched = 0, status = GPU_CAPTURE_NONE, twin_rc = 0;
  struct gpu_context *c =
      nano_dispatch_instrumenting() ? gpu_prepare(api, twin, name, nargs, s, &status) : NULL;
  if (c && status == GPU_CAPTURE_NONE) {
    struct nano_launch_desc l =
        gpu_launch_desc(c, twin, name, grid_xy, grid_z, block_xy, block_z, shared, &c->mem);
    l.sites_path = sites_path;
    f = gpu_begin(c, &l, start);
    int pending = f ? gpu_program_error_pending(api) : 0;
    if (f && (rc = gpu_launch_twin(f, launch, twin, grid_xy, grid_z, block_xy, block_z, args, nargs,
                                   shared, stream, s)) != 0) {
      gpu_twin_error_take(api, rc, pending);
      twin_rc = rc;
      gpu_drop_events(f);
      nano_dispatch_cancel(f->d);
      free(f);
      f = NULL;
    }
    launched = f != NULL;
  } else if (c && status == GPU_CAPTURE_ACTIVE) {
    struct nano_launch_desc l =
        gpu_launch_desc(c, twin, name, grid_xy, grid_z, block_xy, block_z, shared, NULL);
    l.sites_path = sites_path;
    node = gpu_node_create(c, &l);
    if (node && (rc = gpu_capture(node, api, launch, twin, grid_xy, grid_z, block_xy, block_z, args,
                                  nargs, shared, stream, s)) != 0)
      node = NULL; /* said */
    launched = node != NULL;
    if (gpu_hand_capturing)
      gpu_hand_captured = node;
  }
  if (!launched)
    rc = gpu_program_launch(launch, kernel, grid_xy, grid_z, block_xy, block_z, args, shared,
                            stream);
  if (twin_rc)
    gpu_twin_say(api, twin, name, twin_rc, 0, rc == twin_rc);
  rpd_gpu_quiet--;
  /* a kernel node added by hand has no stream of the program's */
  uint64_t id = gpu_launch_row(api, name, !gpu_hand_capturing, stream, grid_xy, grid_z, block_xy,
                               block_z, shared, start);
  if (node)
    node->api = id;
  if (f) {
    f->api = id;
    gpu_release(f);
  }
  return rc;
}

__attribute__((visibility("default"))) int
__nano_gpu_launch(int api, nano_gpu_launch_fn launch, const void *kernel, const void *twin,
                  const char *name, uint64_t grid_xy, uint32_t grid_z, uint64_t block_xy,
                  uint32_t block_z, void **args, uint32_t nargs, size_t shared, void *stream) {
  return gpu_launch(api & ~GPU_DRIVER, launch, kernel, twin, name, NULL, grid_xy, grid_z, block_xy,
                    block_z, args, nargs, shared, stream);
}

/* The configured launch running on this thread (__nano_gpu_launch_ex): what
 * gpu_launch_configured passes on besides grid, block, memory and stream. */
static __thread const struct nano_gpu_launch_config *gpu_config;
static __thread nano_gpu_launch_ex_fn gpu_config_launch;

/* The program's configured launch with another kernel and arguments (the
 * back end's launch function of __nano_gpu_launch_ex). */
static int gpu_launch_configured(const void *kernel, uint64_t grid_xy, uint32_t grid_z,
                                 uint64_t block_xy, uint32_t block_z, void **args, size_t shared,
                                 void *stream) {
  struct nano_gpu_launch_config c = *gpu_config;
  c.grid[0] = (uint32_t)grid_xy, c.grid[1] = (uint32_t)(grid_xy >> 32), c.grid[2] = grid_z;
  c.block[0] = (uint32_t)block_xy, c.block[1] = (uint32_t)(block_xy >> 32), c.block[2] = block_z;
  c.shared = shared;
  c.stream = stream;
  return gpu_config_launch(&c, kernel, args);
}

__attribute__((visibility("default"))) int
__nano_gpu_launch_ex(int api, nano_gpu_launch_ex_fn launch,
                     const struct nano_gpu_launch_config *config, const void *kernel,
                     const void *twin, const char *name, void **args, uint32_t nargs) {
  const struct nano_gpu_launch_config *outer = gpu_config;
  nano_gpu_launch_ex_fn outer_launch = gpu_config_launch;
  gpu_config = config;
  gpu_config_launch = launch;
  int rc = gpu_launch(api & ~GPU_DRIVER, gpu_launch_configured, kernel, twin, name, NULL,
                      config->grid[0] | (uint64_t)config->grid[1] << 32, config->grid[2],
                      config->block[0] | (uint64_t)config->block[1] << 32, config->block[2], args,
                      nargs, config->shared, config->stream);
  gpu_config = outer;
  gpu_config_launch = outer_launch;
  return rc;
}

/* The events launch running on this thread (__nano_gpu_launch_events):
 * what gpu_launch_with_events passes on besides the launch's own. */
static __thread nano_gpu_launch_events_fn gpu_events_launch;
static __thread void *gpu_events_start, *gpu_events_stop;
static __thread int gpu_events_flags;

/* The program's events launch with another kernel and arguments (the back
 * end's launch function of __nano_gpu_launch_events). */
static int gpu_launch_with_events(const void *kernel, uint64_t grid_xy, uint32_t grid_z,
                                  uint64_t block_xy, uint32_t block_z, void **args, size_t shared,
                                  void *stream) {
  return gpu_events_launch(kernel, grid_xy, grid_z, block_xy, block_z, args, shared, stream,
                           gpu_events_start, gpu_events_stop, gpu_events_flags);
}

__attribute__((visibility("default"))) int
__nano_gpu_launch_events(int api, nano_gpu_launch_events_fn launch, const void *kernel,
                         const void *twin, const char *name, uint64_t grid_xy, uint32_t grid_z,
                         uint64_t block_xy, uint32_t block_z, void **args, uint32_t nargs,
                         size_t shared, void *stream, void *start, void *stop, int flags) {
  nano_gpu_launch_events_fn outer_launch = gpu_events_launch;
  void *outer_start = gpu_events_start, *outer_stop = gpu_events_stop;
  int outer_flags = gpu_events_flags;
  gpu_events_launch = launch;
  gpu_events_start = start, gpu_events_stop = stop, gpu_events_flags = flags;
  int rc = gpu_launch(api & ~GPU_DRIVER, gpu_launch_with_events, kernel, twin, name, NULL, grid_xy,
                      grid_z, block_xy, block_z, args, nargs, shared, stream);
  gpu_events_launch = outer_launch;
  gpu_events_start = outer_start, gpu_events_stop = outer_stop, gpu_events_flags = outer_flags;
  return rc;
}

/* ---- multi-device launches (__nano_gpu_launch_multi) ------------------------------ */

/* The most launches (devices) of one multi-device call that are instrumented. */
#define GPU_MAX_MULTI 64

/* One launch of a multi-device call: its kernel's twin (t.twin NULL: none
 * announced), and, instrumented, its flight and the twin's arguments. */
struct gpu_multi {
  struct gpu_twin t;
  struct gpu_flight *f;
  void *desc;
  void *all[GPU_MAX_ARGS + 1];
};

/* Begins the dispatch of launch p (one of n, its kernel's entry in m->t) in
 * m, and makes *use its twin's launch; 0: the original runs (said where it
 * is not the program's choice). */
static int gpu_multi_begin(int api, const struct nano_gpu_launch_params *p, int n,
                           struct gpu_multi *m, struct nano_gpu_launch_params *use, int64_t start) {
  if (!m->t.twin) /* announced without one */
    return 0;
  const struct gpu_api *a = gpu_api_of(api);
  if (!a)
    return 0;
  if (n > 1 && a->stream_device_known && !a->stream_device_known()) {
    gpu_note("%s: launched on %d devices at once by a %s runtime that cannot say a stream's "
             "device (neither hipStreamGetDevice nor hipGetStreamDeviceId): it runs "
             "uninstrumented there",
             m->t.name, n, a->backend);
    return 0;
  }
  int status = GPU_CAPTURE_NONE;
  struct gpu_context *c = gpu_prepare(api, m->t.twin, m->t.name, m->t.nargs, p->stream, &status);
  if (!c || status != GPU_CAPTURE_NONE || !gpu_push(c)) /* (the API refuses it in captures) */
    return 0;
  struct nano_launch_desc l =
      gpu_launch_desc(c, m->t.twin, m->t.name, p->grid[0] | (uint64_t)p->grid[1] << 32, p->grid[2],
                      p->block[0] | (uint64_t)p->block[1] << 32, p->block[2], p->shared, &c->mem);
  struct gpu_flight *f = gpu_begin(c, &l, start);
  if (f && gpu_twin_before(f, p->stream) != 0) {
    gpu_drop_events(f);
    nano_dispatch_cancel(f->d);
    free(f);
    f = NULL;
  }
  gpu_pop(c);
  if (!f)
    return 0;
  m->f = f;
  m->desc = nano_dispatch_desc(f->d);
  gpu_twin_args(m->all, p->args, m->t.nargs, &m->desc);
  use->func = m->t.twin;
  use->args = m->all;
  return 1;
}

/* The program's multi-device call (traced as the program's). */
static int gpu_program_multi(nano_gpu_launch_multi_fn launch, struct nano_gpu_launch_params *list,
                             int n, unsigned flags) {
  rpd_gpu_quiet--;
  int rc = launch(list, n, flags);
  rpd_gpu_quiet++;
  return rc;
}

__attribute__((visibility("default"))) int
__nano_gpu_launch_multi(int api, nano_gpu_launch_multi_fn launch,
                        struct nano_gpu_launch_params *list, int n, unsigned flags) {
  int64_t start = rpd_now();
  api &= ~GPU_DRIVER;
  struct gpu_multi *m = list && n > 0 && n <= GPU_MAX_MULTI ? calloc(n, sizeof *m) : NULL;
  struct nano_gpu_launch_params *use = m ? malloc(n * sizeof *use) : NULL;
  if (!use) { /* nothing to look up, or no memory for it: the program's call */
    free(m);
    return launch(list, n, flags);
  }
  rpd_gpu_quiet++;
  memcpy(use, list, n * sizeof *use);
  int begun = 0, rc = -1, twin_rc = 0, instrumenting = nano_dispatch_instrumenting();
  for (int i = 0; i < n; i++)
    if (gpu_twin_find(&g_twins, list[i].func, &m[i].t) && instrumenting)
      begun += gpu_multi_begin(api, &list[i], n, &m[i], &use[i], start);
  if (begun) {
    int pending = gpu_program_error_pending(api);
    if ((rc = gpu_program_multi(launch, use, n, flags)) != 0) {
      gpu_twin_error_take(api, rc, pending);
      twin_rc = rc;
    }
  }
  if (!begun || twin_rc)
    rc = gpu_program_multi(launch, list, n, flags);
  for (int i = 0; i < n; i++) {
    struct gpu_flight *f = m[i].f;
    if (!f)
      continue;
    struct gpu_context *c = f->c;
    int pushed = gpu_push(c);
    if (twin_rc) {
      if (pushed)
        gpu_drop_events(f);
      gpu_twin_say(api, m[i].t.twin, m[i].t.name, twin_rc, 0, rc == twin_rc);
      nano_dispatch_cancel(f->d);
      free(f);
      m[i].f = NULL;
    } else if (pushed) {
      gpu_twin_after(f, m[i].t.twin, m[i].t.nargs, list[i].stream);
    } else { /* its device was current a moment ago: not expected. The twin
                runs, its end unknown: its buffer is held for good (its
                events are left, with no device to give them back on) */
      f->ev[0] = f->ev[1] = NULL;
      f->unconfirmed = 1;
      pthread_mutex_lock(&g_gpu.lock);
      g_gpu.in_flight++;
      pthread_mutex_unlock(&g_gpu.lock);
      gpu_done(f);
    }
    if (pushed)
      gpu_pop(c);
  }
  rpd_gpu_quiet--;
  for (int i = 0; i < n; i++) {
    const struct nano_gpu_launch_params *p = &list[i];
    uint64_t id = gpu_launch_row(
        api, m[i].t.twin ? m[i].t.name : "", 1, p->stream, p->grid[0] | (uint64_t)p->grid[1] << 32,
        p->grid[2], p->block[0] | (uint64_t)p->block[1] << 32, p->block[2], p->shared, start);
    if (m[i].f) {
      m[i].f->api = id;
      gpu_release(m[i].f);
    }
  }
  free(use);
  free(m);
  return rc;
}

/* ---- kernel nodes added to a graph by hand (__nano_gpu_graph_add_kernel) ----------- */

/* A kernel node the program added by hand and whose twin runs: the program
 * holds a child graph node in its place, whose graph is the twin's nodes as
 * a capture makes them (gpu_capture: host functions, copies, the twin), so
 * that each replay is a dispatch of its own; or (plain) whose kernel
 * cache's kernel runs, with the module variables' copies around it. Kept
 * until the API gives its address to another node (gpu_hand_forget); its
 * gpu_node lives as long as the process. */
struct gpu_hand_node {
  void *node;         /* the child graph node the program holds */
  void *twin_node;    /* the twin's (the replacement's) kernel node inside node's graph */
  struct gpu_node *n; /* NULL once the program gave it another kernel, and for plain */
  const void *kernel; /* the program's kernel handle */
  const void *twin;   /* the twin, or plain's replacement */
  uint32_t nargs;
  int plain; /* a kernel cache's kernel in place of the program's (gpu_hand_add_plain) */
  struct gpu_hand_node *next;
};
static struct {
  pthread_mutex_t lock;
  struct gpu_hand_node *list;
} g_hand = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Room for any API's node parameters (cudaKernelNodeParams: 56 bytes; the
 * generic cudaGraphNodeParams: 256). */
#define GPU_KERNEL_PARAMS_ROOM 256

/* Forgets what is known of node, an address the API has just given a new
 * node: a node of ours that the program destroyed (with its graph) may
 * have had it, and its parameter calls must not go to that one's twin. The
 * forgotten one's gpu_node stays: executables made before may replay it. */
static void gpu_hand_forget(const void *node) {
  pthread_mutex_lock(&g_hand.lock);
  for (struct gpu_hand_node **at = &g_hand.list; *at;) {
    struct gpu_hand_node *h = *at;
    if (h->node == node) {
      *at = h->next;
      free(h);
    } else {
      at = &h->next;
    }
  }
  pthread_mutex_unlock(&g_hand.lock);
}

static struct gpu_hand_node *gpu_hand_find(const void *node) {
  pthread_mutex_lock(&g_hand.lock);
  struct gpu_hand_node *h = g_hand.list;
  while (h && h->node != node)
    h = h->next;
  pthread_mutex_unlock(&g_hand.lock);
  return h;
}

/* The kernel node of graph (a child graph of ours holds one, the twin);
 * NULL where none or the API fails. own: the other nodes are told to the
 * tracer as nanoprobe's. */
static void *gpu_graph_kernel(const struct gpu_api *api, void *graph, int own) {
  size_t n = 0;
  void **nodes = NULL, *kernel = NULL;
  if (api->graphs->graph_nodes(graph, NULL, &n) != 0 || !n || !(nodes = calloc(n, sizeof *nodes)))
    return NULL;
  if (api->graphs->graph_nodes(graph, nodes, &n) == 0)
    for (size_t i = 0; i < n; i++) {
      int is_kernel = 0;
      if (api->graphs->node_is_kernel(nodes[i], &is_kernel) != 0)
        continue;
      if (is_kernel)
        kernel = nodes[i];
      else if (own)
        rpd_cupti_own_graph_node(nodes[i]);
    }
  free(nodes);
  return kernel;
}

/* Runs fn(arg, s) on a stream s of nanoprobe's own captured (relaxed mode,
 * the thread's mode relaxed too) into a graph of its own: 0 and the graph in
 * *graph; fn's non-zero result; or (*api_failed set) the API's error making
 * the stream, beginning or ending the capture. */
static int gpu_capture_own(const struct gpu_api *a, int (*fn)(void *arg, void *s), void *arg,
                           void **graph, int *api_failed) {
  void *s = NULL;
  *graph = NULL;
  *api_failed = 0;
  struct gpu_relaxed relaxed; /* a stream is unsafe in another thread's capture */
  gpu_relax(a, &relaxed);
  int r = a->stream_create(&s);
  if (r == 0 && (r = a->graphs->capture_begin(s)) != 0)
    (void)a->graphs->stream_destroy(s);
  if (r != 0) {
    gpu_unrelax(a, &relaxed);
    *api_failed = 1;
    return r;
  }
  rpd_gpu_quiet++; /* the capture is nanoprobe's, not the program's */
  int rc = fn(arg, s);
  rpd_gpu_quiet--;
  r = a->graphs->capture_end(s, graph);
  (void)a->graphs->stream_destroy(s);
  gpu_unrelax(a, &relaxed);
  if (rc == 0 && r != 0) {
    *api_failed = 1;
    rc = r;
  }
  if (rc != 0 && *graph) {
    (void)a->graphs->graph_destroy(*graph);
    *graph = NULL;
  }
  return rc;
}

/* The twin's launch into gpu_hand_capture's stream s; its node in n. */
struct gpu_hand_launch {
  int api;
  const struct gpu_hand_twin *t;
  const struct gpu_kernel_params *p;
  struct gpu_node *n;
};
static int gpu_hand_launch(void *arg, void *s) {
  struct gpu_hand_launch *x = arg;
  const struct gpu_kernel_params *p = x->p;
  int pending = gpu_program_error_pending(x->api);
  gpu_hand_capturing = 1;
  gpu_hand_captured = NULL;
  int rc = gpu_launch(x->api, x->t->launch, p->func, x->t->twin, x->t->name, x->t->sites_path,
                      p->grid[0] | (uint64_t)p->grid[1] << 32, p->grid[2],
                      p->block[0] | (uint64_t)p->block[1] << 32, p->block[2], p->args, x->t->nargs,
                      p->shared, s);
  gpu_hand_capturing = 0;
  x->n = gpu_hand_captured;
  if (rc != 0) /* the original's launch into the capture the twin spoiled: not the program's */
    gpu_twin_error_take(x->api, rc, pending);
  return rc;
}

/* Captures the twin's nodes of a kernel node with parameters p (kernel t)
 * into a graph of nanoprobe's own; the graph, and in *n the capture's node,
 * or NULL after saying why (the node then runs the original kernel). */
static void *gpu_hand_capture(const struct gpu_api *a, int api_id, const struct gpu_hand_twin *t,
                              const struct gpu_kernel_params *p, struct gpu_node **n) {
  if (!gpu_context(a, NULL, 1)) /* said */
    return NULL;
  struct gpu_hand_launch x = {api_id, t, p, NULL};
  void *graph = NULL;
  int api_failed;
  int rc = gpu_capture_own(a, gpu_hand_launch, &x, &graph, &api_failed);
  *n = x.n;
  if (rc == 0 && *n)
    return graph;
  /* a twin that failed, or a capture of the original (said by gpu_launch) */
  if (graph)
    (void)a->graphs->graph_destroy(graph);
  if (*n)
    gpu_node_break(*n);
  if (api_failed)
    gpu_note("%s: a kernel node added by hand: its twin's nodes cannot be captured (%s): it runs "
             "uninstrumented in the graph",
             t->name, a->error(rc));
  return NULL;
}

/* Adds child (a graph of nanoprobe's own, destroyed here) to graph as one
 * child graph node, *node, remembered with h's fields (h->node and
 * h->twin_node filled here: the kernel node inside). GPU_HAND_ADDED, or
 * GPU_HAND_NOT_ADDED with why (h freed). */
static int gpu_hand_insert(const struct gpu_api *a, void *child, struct gpu_hand_node *h,
                           void **node, void *graph, const void *deps, size_t ndeps,
                           const char **why) {
  int r = -1;
  if (h) {
    rpd_gpu_quiet++;
    r = a->graphs->graph_add_child(node, graph, deps, ndeps, child);
    rpd_gpu_quiet--;
  }
  (void)a->graphs->graph_destroy(child); /* the node holds a copy */
  if (r != 0) {
    *why = h ? a->error(r) : "out of memory";
    free(h);
    return GPU_HAND_NOT_ADDED;
  }
  void *embedded = NULL;
  gpu_hand_forget(*node); /* an address a destroyed node of ours had */
  h->node = *node;
  h->twin_node = a->graphs->graph_child(*node, &embedded) == 0 && embedded
                     ? gpu_graph_kernel(a, embedded, 1)
                     : NULL;
  pthread_mutex_lock(&g_hand.lock);
  h->next = g_hand.list;
  g_hand.list = h;
  pthread_mutex_unlock(&g_hand.lock);
  return GPU_HAND_ADDED;
}

int gpu_hand_add(int api, const struct gpu_hand_twin *t, const struct gpu_kernel_params *p,
                 void **node, void *graph, const void *deps, size_t ndeps, const char **why) {
  if (p->extra || t->nargs > GPU_MAX_ARGS) {
    gpu_note("%s: a kernel node added by hand with its arguments in `extra` or more than %d: it "
             "runs uninstrumented in the graph",
             t->name, GPU_MAX_ARGS);
    return GPU_HAND_AS_IS;
  }
  if (gpu_twin_find(&g_bodies, graph, NULL)) {
    gpu_note("%s: a kernel node added by hand to a conditional node's body graph, which may hold "
             "no host function (CUDA's rule) as a twin's dispatch needs: it runs uninstrumented "
             "there",
             t->name);
    return GPU_HAND_AS_IS;
  }
  const struct gpu_api *a = gpu_api_of(api);
  struct gpu_node *n = NULL;
  void *child = a ? gpu_hand_capture(a, api, t, p, &n) : NULL;
  if (!child)
    return GPU_HAND_AS_IS; /* said */
  struct gpu_hand_node *h = calloc(1, sizeof *h);
  if (h)
    *h = (struct gpu_hand_node){NULL, NULL, n, p->func, t->twin, t->nargs, 0, NULL};
  int how = gpu_hand_insert(a, child, h, node, graph, deps, ndeps, why);
  if (how != GPU_HAND_ADDED && n)
    gpu_node_break(n);
  return how;
}

int gpu_hand_add_plain(int api, int (*fn)(void *arg, void *s), void *arg, const void *kernel,
                       const void *use, const char *name, void **node, void *graph,
                       const void *deps, size_t ndeps, const char **why) {
  const struct gpu_api *a = gpu_api_of(api);
  if (!a || !a->graphs)
    return GPU_HAND_AS_IS;
  void *child = NULL;
  int api_failed;
  int rc = gpu_capture_own(a, fn, arg, &child, &api_failed);
  if (rc != 0) {
    gpu_note("%s: a kernel node added by hand: its replacement's nodes cannot be captured (%s): "
             "it runs as built in the graph",
             name, a->error(rc));
    return GPU_HAND_AS_IS;
  }
  struct gpu_hand_node *h = calloc(1, sizeof *h);
  if (h)
    *h = (struct gpu_hand_node){NULL, NULL, NULL, kernel, use, 0, 1, NULL};
  return gpu_hand_insert(a, child, h, node, graph, deps, ndeps, why);
}

int gpu_hand_added(int how, int rc, void *const *node, const char *name, const char *why) {
  if (rc == 0 && node)
    gpu_hand_forget(*node);
  if (how == GPU_HAND_NOT_ADDED && rc == 0)
    gpu_note("%s: a kernel node added by hand: its twin's nodes cannot be added to the graph "
             "(%s): it runs uninstrumented in the graph",
             name, why);
  return rc;
}

__attribute__((visibility("default"))) int
__nano_gpu_graph_add_kernel(int api, nano_gpu_add_kernel_node_fn add, nano_gpu_launch_fn launch,
                            void **node, void *graph, const void *deps, size_t ndeps,
                            const void *params) {
  const struct gpu_api *probe = gpu_api_table(api);
  if (!node || !params || !probe->graphs || !nano_dispatch_instrumenting())
    return add(node, graph, deps, ndeps, params);
  struct gpu_kernel_params p;
  struct gpu_hand_twin t;
  const char *why = NULL;
  probe->graphs->kernel_params_read(params, &p);
  int how = gpu_plugin_twin(launch, &p, &t)
                ? gpu_hand_add(api, &t, &p, node, graph, deps, ndeps, &why)
                : GPU_HAND_AS_IS;
  if (how == GPU_HAND_ADDED)
    return 0;
  return gpu_hand_added(how, add(node, graph, deps, ndeps, params), node, t.name, why);
}

/* The parameters q of h's twin node for the program's parameters p (of h's
 * kernel): the twin, and the arguments p's then the address of the node's
 * descriptor (all: room for them; *desc must outlive the use of out), in
 * the API's kernel node layout at out. */
static void gpu_hand_twin_params(const struct gpu_api *a, const struct gpu_hand_node *h,
                                 const struct gpu_kernel_params *p, void **all, void **desc,
                                 void *out) {
  struct gpu_kernel_params q = *p;
  *desc = h->n->pl->desc_device;
  gpu_twin_args(all, p->args, h->nargs, desc);
  q.func = h->twin;
  q.args = all;
  a->graphs->kernel_params_write(out, &q);
}

/* The program set parameters p on h: its replays' shape from now on, or
 * (another kernel, or arguments in `extra`: the node runs them as they are)
 * no record any more, said. */
static void gpu_hand_params_set(struct gpu_hand_node *h, const struct gpu_kernel_params *p,
                                int twin) {
  struct gpu_node *n = h->n;
  if (twin) {
    pthread_mutex_lock(&g_gpu.lock);
    memcpy(n->l.grid, p->grid, sizeof n->l.grid);
    memcpy(n->l.block, p->block, sizeof n->l.block);
    n->l.shared_bytes = p->shared;
    pthread_mutex_unlock(&g_gpu.lock);
    return;
  }
  gpu_node_break(n);
  h->n = NULL;
  gpu_note("%s: a kernel node added by hand was given another kernel or arguments in `extra`: "
           "it runs them uninstrumented from now on",
           n->l.kernel);
}

/* The twin's kernel node in a copy (*clone, to destroy) of the graph of h's
 * child graph node, for an executable's node; NULL where the API cannot
 * say. */
static void *gpu_hand_clone_kernel(const struct gpu_api *a, const struct gpu_hand_node *h,
                                   void **clone) {
  void *embedded = NULL;
  *clone = NULL;
  if (a->graphs->graph_child(h->node, &embedded) != 0 || !embedded ||
      a->graphs->graph_clone(clone, embedded) != 0)
    return NULL;
  return gpu_graph_kernel(a, *clone, 0);
}

__attribute__((visibility("default"))) void *__nano_gpu_graph_kernel_node(int api, void *node) {
  (void)api;
  struct gpu_hand_node *h = node ? gpu_hand_find(node) : NULL;
  return h && h->twin_node ? h->twin_node : node;
}

int gpu_hand_params(int api, int op, void *call, nano_gpu_node_params_fn set, void *exec,
                    void *node, void *params, size_t bytes) {
  int on_exec = op == NANO_GPU_NODE_EXEC_SET || op == NANO_GPU_NODE_GENERIC_EXEC_SET;
  int generic = op == NANO_GPU_NODE_GENERIC_SET || op == NANO_GPU_NODE_GENERIC_EXEC_SET;
  struct gpu_hand_node *h = node && params ? gpu_hand_find(node) : NULL;
  const struct gpu_api *a = h ? gpu_api_of(api) : NULL;
  /* the kernel part of the parameters (a generic call's: a kernel node's) */
  void *kp = !a                          ? NULL
             : !generic                  ? params
             : a->graphs->generic_kernel ? a->graphs->generic_kernel(params)
                                         : NULL;
  void *clone = NULL;
  void *kernel = !kp ? NULL : on_exec ? gpu_hand_clone_kernel(a, h, &clone) : h->twin_node;
  if (!kernel) { /* not ours (or the API failed: then the program's call says so) */
    if (clone)
      (void)a->graphs->graph_destroy(clone);
    return on_exec ? ((nano_gpu_exec_node_params_fn)call)(exec, node, params)
                   : ((nano_gpu_node_params_fn)call)(node, params);
  }
  struct gpu_kernel_params p;
  if (op == NANO_GPU_NODE_GET) { /* params: the call's to fill */
    int rc = ((nano_gpu_node_params_fn)call)(kernel, params);
    if (rc == 0 && (h->n || h->plain)) { /* the program's kernel, not the twin */
      a->graphs->kernel_params_read(params, &p);
      p.func = h->kernel;
      a->graphs->kernel_params_write(params, &p);
    }
    return rc;
  }
  a->graphs->kernel_params_read(kp, &p);
  int twin = h->n && p.func == h->kernel && !p.extra;
  int plain = h->plain && p.func == h->kernel; /* the same arguments, the replacement */
  _Alignas(16) unsigned char buf[GPU_KERNEL_PARAMS_ROOM];
  void *all[GPU_MAX_ARGS + 1], *desc = NULL;
  if (twin || plain) { /* the call's whole struct, its kernel part ours */
    memcpy(buf, params,
           generic              ? a->graphs->generic_bytes
           : bytes < sizeof buf ? bytes
                                : sizeof buf);
    void *part = generic ? a->graphs->generic_kernel(buf) : buf;
    if (twin) {
      gpu_hand_twin_params(a, h, &p, all, &desc, part);
    } else {
      struct gpu_kernel_params q = p;
      q.func = h->twin;
      a->graphs->kernel_params_write(part, &q);
    }
  }
  int rc;
  if (!on_exec) {
    rc = ((nano_gpu_node_params_fn)call)(kernel, twin || plain ? buf : params);
  } else { /* the clone's kernel node set, the clone given to the executable's node */
    rpd_gpu_quiet++;
    rc = set(kernel, twin || plain ? buf : params);
    if (rc == 0)
      rc = a->graphs->exec_child_set(exec, node, clone);
    (void)a->graphs->graph_destroy(clone);
    rpd_gpu_quiet--;
  }
  if (rc == 0 && h->n)
    gpu_hand_params_set(h, &p, twin);
  return rc;
}

__attribute__((visibility("default"))) int
__nano_gpu_graph_kernel_params(int api, int op, void *call, nano_gpu_node_params_fn set, void *exec,
                               void *node, void *params) {
  return gpu_hand_params(api, op, call, set, exec, node, params, 0);
}

/* AMD: 128-byte lines (64 on gfx900/906/908), no sectors. */
#define GPU_AMD_LINE_BYTES 128
#define GPU_AMD_LINE_BYTES_GFX9_EARLY 64

void gpu_amd_memory_model(struct gpu_device_info *out) {
  int early =
      !strcmp(out->arch, "gfx900") || !strcmp(out->arch, "gfx906") || !strcmp(out->arch, "gfx908");
  out->line_bytes = out->sector_bytes = early ? GPU_AMD_LINE_BYTES_GFX9_EARLY : GPU_AMD_LINE_BYTES;
  out->lds_model = out->wave_size == 64 ? NANO_LDS_AMD_WAVE64 : NANO_LDS_PHASED;
}
