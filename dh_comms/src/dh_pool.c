/*
 * dh_pool.c: the buffer pool and the drain thread of dh_comms.
 *
 * Pool: up to `count` buffers, allocated on first use and handed out again
 * after release, so no dispatch allocates (omniprobe allocates 64 MiB per
 * dispatch). An exhausted pool answers NULL: the caller runs that dispatch
 * uninstrumented rather than waiting.
 *
 * Drain threads: one or more per drainer. Each sweeps the attached buffers
 * with nano_dh_buffer_drain, skipping one another thread is draining: a
 * buffer is drained by one thread at a time, in order, so several
 * dispatches at once (streams) are drained in parallel, one dispatch's
 * records never. When a sweep found a buffer more than
 * 1/DHPOOL_BUSY_FRACTION full, the next sweep follows at once (briefly
 * yielding the CPU); otherwise the thread sleeps, DHPOOL_SLEEP_MIN_NS after
 * a sweep that found records, doubling up to DHPOOL_SLEEP_MAX_NS while
 * sweeps find none. A buffer of B bytes then overflows only if the device
 * writes faster than B per millisecond (16 GB/s for the default 16 MiB),
 * while a steady trickle of records costs a wake-up per sleep, not a core;
 * a host writer that finds a ring full rings the doorbell, which ends the
 * sleep at once.
 * With nothing attached it blocks on a condition variable: an idle drainer
 * uses no CPU. (omniprobe's and NVBit's drain threads poll without
 * sleeping.)
 *
 * Attach and detach run on the dispatching threads. Detach waits until the
 * thread is out of the buffer, so the final drain (nano_dh_buffer_finish)
 * never runs concurrently with the thread's.
 */
#include "nano/dh_comms.h"
#include "nano/thread.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A sweep that found a buffer fuller than 1/4 is followed at once. */
#define DHPOOL_BUSY_FRACTION 4
/* The sleep after a sweep that found records, and the longest: a buffer is
 * drained at most this long after it started to fill. */
#define DHPOOL_SLEEP_MIN_NS 50000L
#define DHPOOL_SLEEP_MAX_NS 1000000L
#define DHPOOL_NS_PER_S 1000000000L

/* ---- pool ------------------------------------------------------------------- */

struct nano_dh_pool {
  const struct nano_dh_memory *mem;
  unsigned count;
  uint64_t capacity;
  uint32_t flags, max_spins;
  pthread_mutex_t lock;
  unsigned made;                /* buffers allocated so far (<= count) */
  struct nano_dh_buffer **bufs; /* count slots, made of them filled    */
  unsigned char *busy;          /* 1 while acquired                    */
};

struct nano_dh_pool *nano_dh_pool_create(const struct nano_dh_memory *mem, unsigned count,
                                         uint64_t capacity, uint32_t flags, uint32_t max_spins) {
  if (count == 0) {
    errno = EINVAL;
    return NULL;
  }
  struct nano_dh_pool *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->bufs = calloc(count, sizeof *p->bufs);
  p->busy = calloc(count, 1);
  if (!p->bufs || !p->busy) {
    free(p->bufs);
    free(p->busy);
    free(p);
    errno = ENOMEM;
    return NULL;
  }
  p->mem = mem;
  p->count = count;
  p->capacity = capacity;
  p->flags = flags;
  p->max_spins = max_spins;
  pthread_mutex_init(&p->lock, NULL);
  return p;
}

void nano_dh_pool_destroy(struct nano_dh_pool *p) {
  if (!p)
    return;
  for (unsigned i = 0; i < p->made; i++)
    nano_dh_buffer_destroy(p->bufs[i]);
  pthread_mutex_destroy(&p->lock);
  free(p->bufs);
  free(p->busy);
  free(p);
}

struct nano_dh_buffer *nano_dh_pool_acquire(struct nano_dh_pool *p, char *err, size_t errlen) {
  if (err && errlen)
    err[0] = 0;
  struct nano_dh_buffer *b = NULL;
  pthread_mutex_lock(&p->lock);
  for (unsigned i = 0; i < p->made && !b; i++)
    if (!p->busy[i]) {
      p->busy[i] = 1;
      b = p->bufs[i];
    }
  if (!b && p->made < p->count) {
    b = nano_dh_buffer_create(p->mem, p->capacity, p->flags, p->max_spins, err, errlen);
    if (b) {
      p->busy[p->made] = 1;
      p->bufs[p->made++] = b;
    }
  }
  pthread_mutex_unlock(&p->lock);
  return b;
}

void nano_dh_pool_release(struct nano_dh_pool *p, struct nano_dh_buffer *b) {
  pthread_mutex_lock(&p->lock);
  for (unsigned i = 0; i < p->made; i++)
    if (p->bufs[i] == b)
      p->busy[i] = 0;
  pthread_mutex_unlock(&p->lock);
}

/* ---- drain thread ----------------------------------------------------------- */

struct dhpool_slot {
  struct nano_dh_buffer *b; /* NULL: free slot                          */
  nano_dh_record_fn fn;
  void *arg;
  struct nano_dh_drain_stats *st;
  int busy; /* the thread is draining it right now      */
};

struct nano_dh_drainer {
  pthread_mutex_t lock;
  pthread_cond_t wake; /* attach, stop                             */
  pthread_cond_t left; /* a thread finished a slot                 */
  struct dhpool_slot *slots;
  unsigned nslots, active;
  int quit;
  unsigned nthreads; /* started                                  */
  pthread_t *threads;
};

/* now + ns on CLOCK_MONOTONIC (the condition variables' clock). */
static struct timespec dhpool_deadline(long ns) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  t.tv_nsec += ns;
  if (t.tv_nsec >= DHPOOL_NS_PER_S) {
    t.tv_sec += t.tv_nsec / DHPOOL_NS_PER_S;
    t.tv_nsec %= DHPOOL_NS_PER_S;
  }
  return t;
}

static void *dhpool_main(void *arg) {
  struct nano_dh_drainer *d = arg;
  long sleep_ns = DHPOOL_SLEEP_MIN_NS;
  pthread_mutex_lock(&d->lock);
  while (!d->quit) {
    if (d->active == 0) {
      sleep_ns = DHPOOL_SLEEP_MIN_NS;
      pthread_cond_wait(&d->wake, &d->lock);
      continue;
    }
    int got = 0, busy = 0;
    for (unsigned i = 0; i < d->nslots; i++) {
      if (!d->slots[i].b || d->slots[i].busy) /* free, or another thread's now */
        continue;
      struct dhpool_slot s = d->slots[i];
      d->slots[i].busy = 1;
      pthread_mutex_unlock(&d->lock);
      uint64_t before = s.st->bytes;
      got |= nano_dh_buffer_drain(s.b, s.fn, s.arg, s.st) > 0;
      busy |= (s.st->bytes - before) * DHPOOL_BUSY_FRACTION > nano_dh_buffer_capacity(s.b);
      pthread_mutex_lock(&d->lock);
      d->slots[i].busy = 0;
      pthread_cond_broadcast(&d->left);
    }
    if (busy) {
      sleep_ns = DHPOOL_SLEEP_MIN_NS;
      pthread_mutex_unlock(&d->lock);
      sched_yield();
      pthread_mutex_lock(&d->lock);
      continue;
    }
    sleep_ns = got ? DHPOOL_SLEEP_MIN_NS
                   : (sleep_ns * 2 > DHPOOL_SLEEP_MAX_NS ? DHPOOL_SLEEP_MAX_NS : sleep_ns * 2);
    struct timespec until = dhpool_deadline(sleep_ns);
    pthread_cond_timedwait(&d->wake, &d->lock, &until);
  }
  pthread_mutex_unlock(&d->lock);
  return NULL;
}

struct nano_dh_drainer *nano_dh_drainer_start(unsigned threads) {
  if (threads == 0) {
    errno = EINVAL;
    return NULL;
  }
  struct nano_dh_drainer *d = calloc(1, sizeof *d);
  if (!d || !(d->threads = calloc(threads, sizeof *d->threads))) {
    free(d);
    errno = ENOMEM;
    return NULL;
  }
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&d->lock, NULL);
  pthread_cond_init(&d->wake, &ca);
  pthread_cond_init(&d->left, NULL);
  pthread_condattr_destroy(&ca);
  for (; d->nthreads < threads; d->nthreads++) {
    int rc = nano_thread_start(&d->threads[d->nthreads], dhpool_main, d);
    if (rc != 0) {
      nano_dh_drainer_stop(d); /* the threads started so far */
      errno = rc;
      return NULL;
    }
    pthread_setname_np(d->threads[d->nthreads], "nano-drain");
  }
  return d;
}

void nano_dh_drainer_stop(struct nano_dh_drainer *d) {
  if (!d)
    return;
  pthread_mutex_lock(&d->lock);
  d->quit = 1;
  pthread_cond_broadcast(&d->wake);
  pthread_mutex_unlock(&d->lock);
  for (unsigned i = 0; i < d->nthreads; i++)
    pthread_join(d->threads[i], NULL);
  pthread_cond_destroy(&d->wake);
  pthread_cond_destroy(&d->left);
  pthread_mutex_destroy(&d->lock);
  free(d->slots);
  free(d->threads);
  free(d);
}

/* The doorbell of attached buffers: wakes the thread from its sleep. */
static void dhpool_ring(void *arg) {
  struct nano_dh_drainer *d = arg;
  pthread_cond_signal(&d->wake);
}

int nano_dh_drainer_attach(struct nano_dh_drainer *d, struct nano_dh_buffer *b,
                           nano_dh_record_fn fn, void *arg, struct nano_dh_drain_stats *st) {
  pthread_mutex_lock(&d->lock);
  unsigned i = 0;
  while (i < d->nslots && (d->slots[i].b || d->slots[i].busy))
    i++;
  if (i == d->nslots) {
    struct dhpool_slot *s = realloc(d->slots, (d->nslots + 1) * sizeof *s);
    if (!s) {
      pthread_mutex_unlock(&d->lock);
      errno = ENOMEM;
      return -1;
    }
    d->slots = s;
    memset(&d->slots[d->nslots++], 0, sizeof *s);
  }
  d->slots[i] = (struct dhpool_slot){b, fn, arg, st, 0};
  d->active++;
  nano_dh_buffer_set_doorbell(b, dhpool_ring, d);
  /* every thread: one sleeping while another drains would leave b waiting */
  pthread_cond_broadcast(&d->wake);
  pthread_mutex_unlock(&d->lock);
  return 0;
}

void nano_dh_drainer_detach(struct nano_dh_drainer *d, struct nano_dh_buffer *b) {
  nano_dh_buffer_set_doorbell(b, NULL, NULL);
  pthread_mutex_lock(&d->lock);
  for (unsigned i = 0; i < d->nslots; i++) {
    if (d->slots[i].b != b)
      continue;
    d->slots[i].b = NULL;
    d->active--;
    while (d->slots[i].busy)
      pthread_cond_wait(&d->left, &d->lock);
  }
  pthread_mutex_unlock(&d->lock);
}

uint64_t nano_dh_drainer_cpu_ns(const struct nano_dh_drainer *d) {
  uint64_t ns = 0;
  for (unsigned i = 0; i < d->nthreads; i++) {
    clockid_t c;
    struct timespec t;
    if (pthread_getcpuclockid(d->threads[i], &c) == 0 && clock_gettime(c, &t) == 0)
      ns += (uint64_t)t.tv_sec * DHPOOL_NS_PER_S + (uint64_t)t.tv_nsec;
  }
  return ns;
}
