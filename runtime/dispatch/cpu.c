/*
 * cpu.c: the CPU back end. __nano_cpu_launch is what every NANO_LAUNCH of a
 * module built with the plugin calls when libnano_rpd.so is loaded
 * (nano/kernel.h, llvm-pass/LaunchRouting.cpp).
 *
 * A launch runs its blocks in parallel: the launching thread and the pool's
 * workers (NANO_CPU_THREADS in all) claim blocks from a shared counter. A
 * block runs its threads one after another, calling the kernel through the
 * launch's thread function.
 *
 * When the dispatch layer instruments the launch, each selected block runs
 * its threads as virtual waves of NANO_CPU_WAVE lanes, so that its records
 * describe what a GPU wave of the same kernel would do. The lanes of a wave
 * are fibers of the worker (fiber.h), each on its own stack. The twin's
 * device runtime calls cpu_hook at every instrumented access (the buffer's
 * descriptor carries NANO_DH_FLAG_HOOK); the hook parks the lane there and
 * switches to the next lane of the step (the last one to the wave's
 * scheduler), so every live lane runs until it is parked or done. Then the
 * lanes parked deepest in calls (nano_kernel_ctx.depth, which the twin's
 * callees count), and of those the ones at the lowest place in the code
 * (cpu_order), form one record (exec mask, address of each lane) and only
 * they go on; the others wait. Site indices follow the code's layout within
 * a function with each loop's sites together, a loop's latches carry a
 * reconvergence point after all of its sites (where lanes meet without a
 * record), and a device function's accesses come before its caller's next
 * ones, so this reconverges as a GPU does: lanes that took a shorter branch
 * wait at the join for the others, lanes that finished an iteration wait at
 * its end for those still in it, lanes still in a loop run on while those
 * that left wait after it, and lanes that called a function finish it
 * before the caller goes on. (Code the compiler lays out out of source
 * order, such as a branch moved to the end as cold, can split a record of
 * the join in two; every access is still recorded once.)
 *
 * Generic addresses inside the block's shared memory (NANO_LAUNCH_SHARED)
 * are classified as shared, so MemoryAnalysis counts bank conflicts for them.
 */
#define _GNU_SOURCE
#define NANO_KERNEL_TYPES_ONLY
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dispatch.h"
#include "fiber.h"
#include "nano/aggregate.h"
#include "nano/handler.h"
#include "nano/kernel.h"
#include "nano/thread.h"
#include "rpd.h"
#include "rpd_internal.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

/* The CPU as a device, for the analyzers: 64-byte cache lines. */
#define CPU_LINE_BYTES 64
#define CPU_MAX_LANES 64
/* Grid y and z are recorded in 16 bits (CUDA's limit: 65535 blocks). */
#define CPU_MAX_GRID_YZ 65536u
/* Pages at the top of each lane's stack touched when the stacks are made
 * (a lane of the sample kernels uses two or three). */
#define CPU_STACK_WARM_PAGES 4u
/* Wave ids are recorded in 16 bits. */
#define CPU_MAX_WAVES 65536u
/* Alignment of a block's shared memory: its bank of an address is then the
 * bank of its offset. */
#define CPU_SHARED_ALIGN 4096u

enum cpu_lane_state { LANE_RUNNING, LANE_AT_ACCESS, LANE_DONE };

struct cpu_lane {
  struct nano_fiber fiber;
  struct nano_kernel_ctx pos;
  enum cpu_lane_state state;
  uint64_t site, addr; /* the access it is parked at */
  uint32_t size;
  int point;      /* parked at a loop's reconvergence point, not an access */
  uint64_t order; /* cpu_order of where it is parked                      */
  uint32_t depth; /* its call depth there (pos.depth)                     */
};

/* One launch, shared by the threads running it. */
struct cpu_job {
  const struct nano_cpu_kernel *k;
  const void *args;
  nano_dim3 grid, block;
  uint32_t shared;
  struct nano_dispatch *d; /* NULL: originals only */
  int on_device;           /* d's sums are made here (nano_dispatch_on_device) */
  int time_blocks;         /* d wants its blocks' times                         */
  int twin_waves;          /* selected blocks run the twin as virtual waves     */
  void *desc;
  struct nano_dh_buffer *buf;
  uint32_t wave;
  uint64_t nblocks;
  _Atomic uint64_t next; /* next block to claim */
};

/* A thread that runs blocks: a pool worker, or a launching thread. */
struct cpu_worker {
  unsigned index;            /* recorded as the hardware id                  */
  const struct cpu_job *job; /* the launch it runs, NULL between launches    */
  unsigned char *shared;     /* its blocks' shared memory                    */
  uint32_t shared_cap;
  unsigned char *stacks; /* CPU_MAX_LANES fiber stacks, each after a guard page */
  size_t stack_size, stride;
  struct nano_fiber sched;                 /* the wave scheduler's context                 */
  unsigned run[CPU_MAX_LANES], nrun, next; /* the lanes of this step, in order */
  struct nano_kernel_ctx pos;              /* the position of the thread running (originals) */
  struct cpu_lane lane[CPU_MAX_LANES];
  unsigned cur; /* the lane running                             */
  uint32_t block[3];
  uint32_t wave;
  struct nano_aggregate *shard; /* its share of the job's sums (on_device) */
  int shard_failed;
};

/* The worker the calling thread runs (initial-exec: read by the signal
 * handler, cpu_lane_overflow). */
static __thread struct cpu_worker *cpu_self __attribute__((tls_model("initial-exec")));

/* Whether addr (a fault's) lies in a guard page of the calling thread's CPU
 * kernel lane stacks: 1 and *stack_bytes the lanes' stack size when it does
 * (a lane overflowed its NANO_CPU_STACK). Async-signal-safe. */
static int cpu_lane_overflow(const void *addr, uint64_t *stack_bytes) {
  const struct cpu_worker *w = cpu_self;
  uintptr_t a = (uintptr_t)addr, base = w ? (uintptr_t)w->stacks : 0;
  if (!base || a < base || a >= base + w->stride * CPU_MAX_LANES)
    return 0;
  *stack_bytes = w->stack_size;
  return (a - base) % w->stride < w->stride - w->stack_size; /* a lane's guard page */
}

static struct {
  pthread_mutex_t launch; /* one launch at a time uses the pool            */
  pthread_mutex_t m;      /* the fields below                              */
  pthread_cond_t go, done;
  unsigned workers;    /* pool threads started                          */
  unsigned ready;      /* ... of them waiting for work                  */
  uint64_t generation; /* bumped per launch                             */
  struct cpu_job *job;
  unsigned busy; /* pool threads that took the current job, on it   */
  int noted_limits;
} g_cpu = {.launch = PTHREAD_MUTEX_INITIALIZER,
           .m = PTHREAD_MUTEX_INITIALIZER,
           .go = PTHREAD_COND_INITIALIZER,
           .done = PTHREAD_COND_INITIALIZER};

/* ---- virtual waves ---------------------------------------------------------- */

/* The position a lane gets back if the hook ever runs outside a wave (it
 * cannot: only the CPU back end's buffers carry the hook). */
static const struct nano_kernel_ctx cpu_nowhere;

/* Leaves lane l (parked or done) for the next lane of the step, or for the
 * scheduler after the last: one switch per lane and step. */
static void cpu_yield(struct cpu_worker *w, struct cpu_lane *l) {
  if (w->next < w->nrun) {
    w->cur = w->run[w->next++];
    nano_fiber_switch(&l->fiber, &w->lane[w->cur].fiber);
  } else {
    nano_fiber_switch(&l->fiber, &w->sched);
  }
}

/* Where a parked lane stands in its function's code: site index i (the
 * pass numbers them so that forward edges go up, each loop's sites before
 * the sites after the loop) at 2i + 2; a loop's reconvergence point, whose
 * index is the site count at the loop's end, at 2i + 1: after every site of
 * the loop, before the first after it. */
static uint64_t cpu_order(uint64_t site, int point) {
  return 2 * (site & UINT32_MAX) + (point ? 1 : 2);
}

/* NANO_DH_FLAG_HOOK target: parks the calling lane at its access, or at a
 * loop's reconvergence point (space NANO_DH_HOOK_POINT). */
static const struct nano_kernel_ctx *cpu_hook(void *desc, uint64_t site, uint64_t addr,
                                              uint32_t size, uint32_t space) {
  (void)desc; /* every CPU site is generic: classified by address */
  struct cpu_worker *w = cpu_self;
  if (!w || !w->job)
    return &cpu_nowhere;
  struct cpu_lane *l = &w->lane[w->cur];
  l->site = site;
  l->addr = addr;
  l->size = size;
  l->point = space == NANO_DH_HOOK_POINT;
  l->order = cpu_order(site, l->point);
  l->depth = l->pos.depth;
  l->state = LANE_AT_ACCESS;
  cpu_yield(w, l);
  return &l->pos;
}

/* A lane's fiber: one kernel thread of the twin. */
static void cpu_lane_main(void *arg) {
  struct cpu_worker *w = arg;
  struct cpu_lane *l = &w->lane[w->cur];
  w->job->k->thread(w->job->args, w->job->desc, &l->pos);
  l->state = LANE_DONE;
  cpu_yield(w, l);
  abort(); /* a finished lane is never resumed */
}

/* Maps the worker's fiber stacks once (guard page under each). 0 or -1. */
static int cpu_stacks(struct cpu_worker *w) {
  if (w->stacks)
    return 0;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t size = (nano_dispatch_cpu_stack() + page - 1) / page * page;
  size_t stride = size + page;
  void *p = mmap(NULL, stride * CPU_MAX_LANES, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (p == MAP_FAILED)
    return -1;
  for (unsigned i = 0; i < CPU_MAX_LANES; i++)
    if (mprotect((unsigned char *)p + i * stride, page, PROT_NONE) != 0) {
      munmap(p, stride * CPU_MAX_LANES);
      return -1;
    }
  w->stacks = p;
  w->stack_size = size;
  w->stride = stride;
  /* the top of each lane's stack faulted in now, not in the dispatch's first
   * block (which took 2 ms longer than the others on the development VM) */
  for (unsigned i = 0; i < CPU_MAX_LANES; i++)
    for (size_t k = 1; k <= CPU_STACK_WARM_PAGES && k * page <= size; k++)
      ((volatile unsigned char *)p)[(i + 1) * stride - k * page] = 0;
  return 0;
}

/* Whether addr lies in the block's shared memory. */
static int cpu_in_shared(const struct cpu_worker *w, uint64_t addr) {
  uint32_t bytes = w->job->shared;
  return bytes && addr >= (uint64_t)(uintptr_t)w->shared &&
         addr < (uint64_t)(uintptr_t)w->shared + bytes;
}

/* Where a wave's addresses pointed: all into the block's shared memory, none,
 * or some. */
static unsigned cpu_classify(const struct cpu_worker *w, const struct nano_dh_record *r) {
  unsigned in = 0;
  for (unsigned i = 0; i < r->lanes; i++)
    in += cpu_in_shared(w, r->addr[i]);
  return in == 0          ? NANO_DH_SPACE_GLOBAL
         : in == r->lanes ? NANO_DH_SPACE_SHARED
                          : NANO_DH_SPACE_MIXED;
}

static uint64_t cpu_clock(void) {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return (uint64_t)rpd_now();
#endif
}

/* Adds the wave's access r to the worker's shard of the job's sums (the
 * device path: what the analyzers would make of r, made here, no record). */
static void cpu_sum(struct cpu_worker *w, const struct cpu_job *j, struct nano_dh_record *r) {
  if (!w->shard && !w->shard_failed && !(w->shard = nano_dispatch_shard(j->d)))
    w->shard_failed = 1;
  if (!w->shard) {
    nano_dispatch_shard_lost(j->d, 1);
    return;
  }
  int64_t stride;
  r->encoding = (uint8_t)nano_dh_encoding(r, &stride); /* the analyzers' fast paths rely on it */
  nano_aggregate_add(w->shard, r);
}

/* Writes the wave's record r, or sums it (cpu_sum). */
static void cpu_emit(struct cpu_worker *w, const struct cpu_job *j, struct nano_dh_record *r) {
  if (j->on_device)
    cpu_sum(w, j, r);
  else
    nano_dh_buffer_write(j->buf, r);
}

/* A wave whose lanes went to shared and to global memory at one generic
 * access: one record per space, each lane in its own, so that the shared
 * lanes count bank conflicts and the global ones cache lines (a GPU's record
 * of such a wave is counted as global: its device sees only the vote). */
static void cpu_emit_split(struct cpu_worker *w, const struct cpu_job *j,
                           const struct nano_dh_record *r) {
  for (int shared = 0; shared < 2; shared++) {
    struct nano_dh_record p;
    memcpy(&p, r, offsetof(struct nano_dh_record, lane));
    p.lanes = 0;
    p.exec = 0;
    p.space = (uint8_t)(shared ? NANO_DH_SPACE_SHARED : NANO_DH_SPACE_GLOBAL);
    for (unsigned i = 0; i < r->lanes; i++)
      if (cpu_in_shared(w, r->addr[i]) == shared) {
        p.lane[p.lanes] = r->lane[i];
        p.addr[p.lanes++] = r->addr[i];
        p.exec |= 1ull << r->lane[i];
      }
    cpu_emit(w, j, &p);
  }
}

/* Runs `lanes` threads from linear thread id `first` of the current block as
 * one wave, writing its records or summing them (cpu_emit). */
static void cpu_run_wave(struct cpu_worker *w, const struct nano_kernel_ctx *base, uint32_t first,
                         unsigned lanes) {
  const struct cpu_job *j = w->job;
  for (unsigned i = 0; i < lanes; i++) {
    struct cpu_lane *l = &w->lane[i];
    uint32_t t = first + i;
    l->pos = *base;
    l->pos.thread[0] = t % j->block.x;
    l->pos.thread[1] = t / j->block.x % j->block.y;
    l->pos.thread[2] = t / j->block.x / j->block.y;
    l->state = LANE_RUNNING;
    nano_fiber_init(&l->fiber, w->stacks + i * w->stride + (w->stride - w->stack_size),
                    w->stack_size, cpu_lane_main, w);
  }
  unsigned *run = w->run;
  w->nrun = lanes;
  for (unsigned i = 0; i < lanes; i++)
    run[i] = i;
  struct nano_dh_record r;
  for (;;) {
    /* the step: its lanes run in order, each switching to the next */
    w->cur = run[0];
    w->next = 1;
    nano_fiber_switch(&w->sched, &w->lane[run[0]].fiber);
    /* deepest first, then the lowest place in the code */
    uint64_t order = UINT64_MAX;
    uint32_t depth = 0;
    for (unsigned i = 0; i < lanes; i++) {
      const struct cpu_lane *l = &w->lane[i];
      if (l->state == LANE_AT_ACCESS &&
          (order == UINT64_MAX || l->depth > depth || (l->depth == depth && l->order < order))) {
        order = l->order;
        depth = l->depth;
      }
    }
    if (order == UINT64_MAX)
      return; /* every lane is done */
    memset(&r, 0, offsetof(struct nano_dh_record, lane));
    w->nrun = 0;
    int point = 0;
    for (unsigned i = 0; i < lanes; i++) {
      struct cpu_lane *l = &w->lane[i];
      if (l->state != LANE_AT_ACCESS || l->order != order || l->depth != depth)
        continue;
      point = l->point;
      if (r.lanes == 0) {
        r.size = l->size;
        r.site = l->site;
      }
      r.lane[r.lanes] = (uint8_t)i;
      r.addr[r.lanes++] = l->addr;
      r.exec |= 1ull << i;
      l->state = LANE_RUNNING;
      run[w->nrun++] = i;
    }
    if (point)
      continue; /* the lanes met at a loop's end: nothing to record */
    r.version = NANO_DH_VERSION;
    r.wave_size = (uint8_t)j->wave;
    r.wave = (uint16_t)(first / j->wave);
    memcpy(r.block, w->block, sizeof r.block);
    r.hw_id = w->index;
    r.time = cpu_clock();
    r.space = (uint8_t)cpu_classify(w, &r);
    if (r.space == NANO_DH_SPACE_MIXED)
      cpu_emit_split(w, j, &r);
    else
      cpu_emit(w, j, &r);
  }
}

/* Says once that a block ran its original threads for want of fiber stacks. */
static void cpu_note_no_stacks(const struct nano_cpu_kernel *k) {
  static _Atomic int said;
  if (!atomic_exchange(&said, 1))
    fprintf(stderr,
            "nanoprobe: %s: out of memory for a worker's fiber stacks: its blocks run "
            "uninstrumented\n",
            k->name);
}

/* Runs block number b of the job (x fastest). The kernel threads read their
 * position through a pointer to w->pos (or to their lane's): it lives as
 * long as the worker. */
static void cpu_run_block(struct cpu_worker *w, const struct cpu_job *j, uint64_t b) {
  uint32_t blk[3] = {(uint32_t)(b % j->grid.x), (uint32_t)(b / j->grid.x % j->grid.y),
                     (uint32_t)(b / j->grid.x / j->grid.y)};
  if (j->shared)
    memset(w->shared, 0, j->shared);
  struct nano_kernel_ctx *pos = &w->pos;
  *pos = (struct nano_kernel_ctx){{0, 0, 0},
                                  {blk[0], blk[1], blk[2]},
                                  {j->block.x, j->block.y, j->block.z},
                                  {j->grid.x, j->grid.y, j->grid.z},
                                  j->shared ? w->shared : NULL,
                                  j->shared,
                                  0};
  uint32_t threads = j->block.x * j->block.y * j->block.z;
  int selected = j->d && nano_dispatch_block_selected(j->d, blk);
  int64_t start = selected && j->time_blocks ? rpd_now() : 0;
  if (selected && j->twin_waves && cpu_stacks(w) != 0)
    cpu_note_no_stacks(j->k);
  if (selected && j->twin_waves && w->stacks) {
    memcpy(w->block, blk, sizeof w->block);
    for (uint32_t first = 0; first < threads; first += j->wave)
      cpu_run_wave(w, pos, first, threads - first < j->wave ? threads - first : j->wave);
  } else {
    for (pos->thread[2] = 0; pos->thread[2] < j->block.z; pos->thread[2]++)
      for (pos->thread[1] = 0; pos->thread[1] < j->block.y; pos->thread[1]++)
        for (pos->thread[0] = 0; pos->thread[0] < j->block.x; pos->thread[0]++)
          j->k->thread(j->args, NULL, pos);
  }
  if (selected && j->time_blocks)
    nano_dispatch_block_time(j->d, blk, w->index, start, rpd_now());
}

/* Claims and runs blocks of j until none is left. */
static void cpu_run_blocks(struct cpu_worker *w, const struct cpu_job *j) {
  w->job = j;
  w->shard = NULL; /* the dispatch owns the last job's */
  w->shard_failed = 0;
  for (;;) {
    uint64_t b = atomic_fetch_add_explicit((_Atomic uint64_t *)&j->next, 1, memory_order_relaxed);
    if (b >= j->nblocks)
      break;
    cpu_run_block(w, j, b);
  }
  w->job = NULL;
}

/* Makes w ready for j: shared memory. (The fiber stacks are a pool thread's
 * from its start when the run instruments, the launching thread's from its
 * launch; cpu_run_block makes them where that failed.) 0 or -1. */
static int cpu_prepare(struct cpu_worker *w, const struct cpu_job *j) {
  if (j->shared > w->shared_cap) {
    void *p = aligned_alloc(CPU_SHARED_ALIGN, (j->shared + CPU_SHARED_ALIGN - 1) /
                                                  CPU_SHARED_ALIGN * CPU_SHARED_ALIGN);
    if (!p)
      return -1;
    free(w->shared);
    w->shared = p;
    w->shared_cap = j->shared;
  }
  return 0;
}

static void cpu_worker_free(struct cpu_worker *w) {
  if (!w)
    return;
  if (w->stacks)
    munmap(w->stacks, w->stride * CPU_MAX_LANES);
  free(w->shared);
  free(w);
}

/* ---- the pool ------------------------------------------------------------------ */

static void *cpu_pool_main(void *arg) {
  struct cpu_worker *w = arg;
  cpu_self = w;
  rpd_altstack_take(); /* a lane's stack overflow is said (cpu_fault) */
  /* the fiber stacks now, while the launch that started the pool waits for
   * it to be ready, not in the dispatch's first block (4.5 ms there on the
   * development VM); a failure is retried by the first block that needs them */
  if (nano_dispatch_instrumenting())
    (void)cpu_stacks(w);
  uint64_t seen = 0;
  pthread_mutex_lock(&g_cpu.m);
  g_cpu.ready++;
  pthread_cond_broadcast(&g_cpu.done);
  for (;;) {
    while (g_cpu.generation == seen)
      pthread_cond_wait(&g_cpu.go, &g_cpu.m);
    seen = g_cpu.generation;
    struct cpu_job *j = g_cpu.job;
    if (!j)
      continue; /* woken too late: its launch ran every block without it */
    g_cpu.busy++;
    pthread_mutex_unlock(&g_cpu.m);
    if (cpu_prepare(w, j) == 0)
      cpu_run_blocks(w, j);
    pthread_mutex_lock(&g_cpu.m);
    if (--g_cpu.busy == 0)
      pthread_cond_broadcast(&g_cpu.done);
  }
  return NULL;
}

/* Starts pool threads up to `want` (g_cpu.m held) and waits until they are
 * ready: their start-up (a few ms on the development VM, with the tracer's
 * per-thread setup) is the launch call's, not the kernel's. Asynchronous
 * signals stay with the program's threads (nano/thread.h). */
static void cpu_pool_grow(unsigned want) {
  while (g_cpu.workers < want) {
    struct cpu_worker *w = calloc(1, sizeof *w);
    pthread_t t;
    if (!w)
      break;
    w->index = g_cpu.workers + 1;
    int rc = nano_thread_start(&t, cpu_pool_main, w);
    if (rc != 0) {
      free(w);
      fprintf(stderr, "nanoprobe: cannot start a CPU-kernel worker thread: %s\n", strerror(rc));
      break;
    }
    char name[16];
    snprintf(name, sizeof name, "nano-cpu-%u", w->index);
    pthread_setname_np(t, name);
    pthread_detach(t);
    g_cpu.workers++;
  }
  while (g_cpu.ready < g_cpu.workers)
    pthread_cond_wait(&g_cpu.done, &g_cpu.m);
}

/* The fork child has the launching thread only. */
static void cpu_atfork_child(void) {
  pthread_mutex_init(&g_cpu.launch, NULL);
  pthread_mutex_init(&g_cpu.m, NULL);
  pthread_cond_init(&g_cpu.go, NULL);
  pthread_cond_init(&g_cpu.done, NULL);
  g_cpu.workers = 0;
  g_cpu.ready = 0;
  g_cpu.busy = 0;
  g_cpu.job = NULL;
}

/* A launching thread's worker goes with the thread. */
static pthread_key_t cpu_key;
static void cpu_key_free(void *w) { cpu_worker_free(w); }

static int cpu_key_ok; /* else every launch has a temporary worker */

static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;
static void cpu_init(void) {
  int rc = pthread_key_create(&cpu_key, cpu_key_free);
  cpu_key_ok = rc == 0;
  if (!cpu_key_ok)
    fprintf(stderr, "nanoprobe: pthread_key_create: %s: each CPU-kernel launch starts a worker\n",
            strerror(rc));
  rc = pthread_atfork(NULL, NULL, cpu_atfork_child);
  if (rc != 0)
    fprintf(stderr,
            "nanoprobe: pthread_atfork: %s: CPU-kernel launches in a fork child may wait forever\n",
            strerror(rc));
}

/* The worker the calling thread launches with: its own (made on its first
 * launch), or, for a launch from inside a kernel thread (the thread's worker
 * is busy with the outer launch), a temporary one (*temp set). */
static struct cpu_worker *cpu_launcher(int *temp) {
  *temp = 0;
  struct cpu_worker *w = cpu_self;
  if (w && !w->job)
    return w;
  struct cpu_worker *n = calloc(1, sizeof *n);
  if (!n)
    return NULL;
  if (w)
    *temp = 1;
  else if (cpu_key_ok && pthread_setspecific(cpu_key, n) == 0)
    cpu_self = n;
  else
    *temp = 1;
  return n;
}

/* ---- the launch ------------------------------------------------------------------ */

/* Whether records of this shape fit the record format; said once if not. */
static int cpu_instrumentable(const struct nano_cpu_kernel *k, nano_dim3 g, nano_dim3 b,
                              uint32_t wave) {
  uint64_t threads = (uint64_t)b.x * b.y * b.z;
  if (g.y <= CPU_MAX_GRID_YZ && g.z <= CPU_MAX_GRID_YZ && threads <= (uint64_t)CPU_MAX_WAVES * wave)
    return 1;
  pthread_mutex_lock(&g_cpu.m);
  if (!g_cpu.noted_limits)
    fprintf(stderr,
            "nanoprobe: %s: a grid of %ux%ux%u blocks of %ux%ux%u threads is beyond what "
            "records hold (grid y and z up to %u, %u waves per block): it runs uninstrumented\n",
            k->name, g.x, g.y, g.z, b.x, b.y, b.z, CPU_MAX_GRID_YZ, CPU_MAX_WAVES);
  g_cpu.noted_limits = 1;
  pthread_mutex_unlock(&g_cpu.m);
  return 0;
}

__attribute__((visibility("default"))) void __nano_cpu_launch(const struct nano_cpu_kernel *k,
                                                              const nano_dim3 *grid,
                                                              const nano_dim3 *block,
                                                              uint32_t shared, const void *args) {
  pthread_once(&cpu_once, cpu_init);
  struct cpu_job j = {.k = k, .args = args, .grid = *grid, .block = *block, .shared = shared};
  j.nblocks = (uint64_t)grid->x * grid->y * grid->z;
  if (j.nblocks == 0 || (uint64_t)block->x * block->y * block->z == 0)
    return;
  if ((uint64_t)block->x * block->y * block->z > UINT32_MAX) {
    fprintf(stderr, "nanoprobe: %s: a block of %ux%ux%u threads is more than 2^32; not launched\n",
            k->name, block->x, block->y, block->z);
    return;
  }
  int64_t start = rpd_now();
  uint32_t wave = nano_dispatch_cpu_wave();
  struct nano_launch_desc l = {.kernel = k->name,
                               .backend = "cpu",
                               .arch = "cpu",
                               .wave_size = wave,
                               .grid = {grid->x, grid->y, grid->z},
                               .block = {block->x, block->y, block->z},
                               .shared_bytes = shared,
                               .line_bytes = CPU_LINE_BYTES,
                               .sector_bytes = CPU_LINE_BYTES,
                               .lds_model = wave == 64 ? NANO_LDS_AMD_WAVE64 : NANO_LDS_PHASED,
                               .aggregates = NANO_LAUNCH_SUMS_SHARDS,
                               .times_blocks = NANO_LAUNCH_BLOCKS_CALLS,
                               .twin = cpu_instrumentable(k, *grid, *block, wave) ? k->twin : NULL};
  j.d = nano_dispatch_begin(&l);
  if (j.d) {
    j.buf = nano_dispatch_buffer(j.d);
    j.desc = nano_dispatch_desc(j.d);
    j.on_device = nano_dispatch_on_device(j.d);
    j.time_blocks = nano_dispatch_times_blocks(j.d);
    j.twin_waves = nano_dispatch_needs_accesses(j.d);
    j.wave = wave;
    if (nano_dh_buffer_set_hook(j.buf, (void *)cpu_hook) != 0) {
      nano_dispatch_cancel(j.d);
      j.d = NULL;
    }
  }

  /* The launching thread runs blocks too. */
  int temp;
  struct cpu_worker *w = cpu_launcher(&temp), *outer = cpu_self;
  /* The dispatch's time is its blocks' (start-up of the runtime, the site
   * tables, the pool threads: the launch call's row has it all) */
  int64_t run_start = start;
  if (!w || cpu_prepare(w, &j) != 0 || (j.d && j.twin_waves && cpu_stacks(w) != 0)) {
    fprintf(stderr,
            "nanoprobe: %s: out of memory for a worker, shared memory or fiber stacks; "
            "not launched\n",
            k->name);
  } else {
    cpu_self = w;
    rpd_altstack_take();
    unsigned threads = nano_dispatch_cpu_threads();
    int pooled = threads > 1 && j.nblocks > 1 && !temp && pthread_mutex_trylock(&g_cpu.launch) == 0;
    if (pooled) {
      pthread_mutex_lock(&g_cpu.m);
      cpu_pool_grow(threads - 1);
      run_start = rpd_now();
      g_cpu.job = &j;
      g_cpu.generation++;
      pthread_cond_broadcast(&g_cpu.go);
      pthread_mutex_unlock(&g_cpu.m);
    } else {
      run_start = rpd_now();
    }
    cpu_run_blocks(w, &j);
    if (pooled) {
      /* every block is claimed: pool threads that have not taken the job yet
       * never will (j lives on this stack), those that did are waited for */
      pthread_mutex_lock(&g_cpu.m);
      g_cpu.job = NULL;
      while (g_cpu.busy)
        pthread_cond_wait(&g_cpu.done, &g_cpu.m);
      pthread_mutex_unlock(&g_cpu.m);
      pthread_mutex_unlock(&g_cpu.launch);
    }
    cpu_self = outer;
  }
  if (temp)
    cpu_worker_free(w);

  int64_t end = rpd_now();
  uint64_t api = rpd_record_api("nano", "", "nanoLaunchKernel", k->name, start, end);
  if (api) {
    struct rpd_kernel_launch kl = {NULL,          (int)grid->x,  (int)grid->y,
                                   (int)grid->z,  (int)block->x, (int)block->y,
                                   (int)block->z, (int)shared,   0,
                                   k->name};
    rpd_record_kernelapi(api, &kl);
  }
  if (j.d)
    nano_dispatch_end(j.d, run_start, end, api);
}

/* The tracer's fault hook: a lane that overflowed its stack is named. */
static void cpu_fault(int sig, const siginfo_t *info) {
  uint64_t stack;
  if (sig == SIGSEGV && info && cpu_lane_overflow(info->si_addr, &stack)) {
    char n[24];
    rpdi_say("nanoprobe: a thread of a CPU kernel overflowed its stack of ");
    rpdi_say(rpdi_dec(stack, n));
    rpdi_say(" bytes (NANO_CPU_STACK gives instrumented kernel threads more)\n");
  }
}

__attribute__((constructor(RPDI_REGISTER_CPU))) static void cpu_register(void) {
  static const struct rpdi_component cpu = {"cpu kernels", NULL, NULL, cpu_fault};
  rpdi_component_register(&cpu);
}
