/*
 * dh_device.c: the device side of dh_comms, compiled to LLVM bitcode once per
 * target (AMDGPU GFX9 wave64, AMDGPU GFX10+ wave32 and wave64, NVPTX, host
 * CPU) by the clang that matches the plugin's LLVM, and linked into
 * instrumented modules by the pass.
 *
 * The pass calls one function per instrumented access, from every active lane:
 *
 *   __nano_dh_access(desc, site, addr, size, space)
 *
 * Design: one record per wave (warp) and access (layout: nano/dh_format.h).
 * The lanes that execute the access agree on the lowest active lane as
 * leader. Every lane learns the leader's address (base) and the second
 * lane's; the wave votes whether all lanes sit at base + rank * stride, or
 * within 32 bits of base, and so picks the smallest payload encoding. The
 * leader reserves header + payload in the ring of the descriptor with one
 * compare-and-swap on desc->head and broadcasts the offset; each lane writes
 * its own payload entry at its rank; all lanes fence; the leader writes the
 * header, its first word last (release), which marks the record complete for
 * the host. The ring capacity is a power of two and records are multiples of
 * 8 bytes, so each 8-byte word (and each 4-byte offset) lands at
 * (offset & (capacity - 1)) without straddling the end.
 *
 * A full ring: with NANO_DH_FLAG_DROP the record is dropped at once; otherwise
 * the leader polls the tail (host memory, read through desc->tail_addr) up to
 * desc->max_spins times, sleeping between polls on GPUs, and then drops.
 * Every drop increments desc->dropped; a wave never waits forever, not even
 * for room it reserved (nano_dh_reserve, step 3). Only head, dropped and
 * stalled are written by the device in the descriptor (head and dropped by
 * read-modify-write), which the host places in device memory.
 *
 * CPU kernels (host target) built into a program the runtime launches run as
 * virtual waves: the runtime sets NANO_DH_FLAG_HOOK and the access goes to its
 * hook, which suspends the lane until the wave's lanes at this site form one
 * record, and returns the lane's position, which __nano_kctx points to again.
 *
 * Sums (desc->sums set, NANO_AGGREGATE=device): a wave access that the
 * wave's own primitives can sum exactly is added to the dispatch's sums
 * table (nano/dh_format.h) with one atomic per counter, by the leader, into
 * its shard; nothing crosses the bus. nano_dh_sum says which accesses: the
 * rest are records as above, summed by the host with the same arithmetic
 * (nano/dh_sums.h).
 *
 * Target macros (set by dh_comms/CMakeLists.txt): NANO_DH_AMDGPU with
 * NANO_DH_WAVE (64 or 32) and NANO_DH_HWID_REG (the s_getreg id of HW_ID: 4 on
 * GFX9, 23 = HW_ID1 on GFX10+), NANO_DH_NVPTX, NANO_DH_EMU (a test's wave
 * emulator supplies the primitives: tests/device/wave_emu.c), or none for
 * the host CPU.
 * The code uses clang builtins and LLVM intrinsics through asm labels only, so
 * that one source compiles with clang 15 and clang 22 without a target CPU
 * (the pass sets target-cpu and features from the module it links into).
 * Atomics are __sync builtins, volatile accesses and fences: clang 15 turns
 * 8-byte __atomic_* on NVPTX without a host target into library calls that do
 * not exist on the device.
 */
#include "nano/dh_format.h"
#include "nano/dh_sums.h"

#if !defined(NANO_DH_AMDGPU) && !defined(NANO_DH_NVPTX) && !defined(NANO_DH_EMU)
#define NANO_DH_CPU 1
#endif

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#if defined(NANO_DH_AMDGPU) || defined(NANO_DH_NVPTX)
#define NANO_DH_GLOBAL __attribute__((address_space(1)))
#else
#define NANO_DH_GLOBAL
#endif

typedef NANO_DH_GLOBAL struct nano_dh_desc gdesc;
typedef NANO_DH_GLOBAL struct nano_dh_sums_hdr gsums;
typedef NANO_DH_GLOBAL u64 gword;
typedef NANO_DH_GLOBAL u32 ghalf;
typedef NANO_DH_GLOBAL u8 gbyte;

#define NANO_DH_DROPPED_OFFSET (~0ull)

/* ---- Per-target wave primitives ------------------------------------------
 * active(): the active lanes; lane(): this lane's index in the wave;
 * rank(exec): this lane's rank among the active lanes;
 * lane_value(v, lane): v of lane `lane` (uniform lane index); vote(p, exec):
 * the active lanes where p holds; wave_sync(exec): the lanes meet;
 * reserve_add(p, v): the leader's fetch-and-add on the ring's head. */
#if defined(NANO_DH_AMDGPU)
#if NANO_DH_WAVE == 64
u64 nano_dh_llvm_ballot(_Bool) __asm("llvm.amdgcn.ballot.i64");
#else
u32 nano_dh_llvm_ballot(_Bool) __asm("llvm.amdgcn.ballot.i32");
#endif
void nano_dh_llvm_s_sleep(int) __asm("llvm.amdgcn.s.sleep");
/* The intrinsic rather than the builtin, which insists on a target feature
 * this file is compiled without (the pass supplies the kernel's). */
_Bool nano_dh_llvm_is_shared(const void *) __asm("llvm.amdgcn.is.shared");
u64 nano_dh_llvm_s_memrealtime(void) __asm("llvm.amdgcn.s.memrealtime");

static u32 nano_dh_wave_size(void) { return NANO_DH_WAVE; }
/* clang 15 reads exec as a 64-bit register; in wave32 EXEC_HI is not part of
 * the mask. */
static u64 nano_dh_active(void) {
  u64 exec = __builtin_amdgcn_read_exec();
  return NANO_DH_WAVE == 32 ? (u32)exec : exec;
}
static u32 nano_dh_rank(u64 exec) {
  return __builtin_amdgcn_mbcnt_hi((u32)(exec >> 32), __builtin_amdgcn_mbcnt_lo((u32)exec, 0));
}
static u32 nano_dh_lane(void) { return nano_dh_rank(~0ull); }
static u64 nano_dh_lane_value(u64 v, u32 lane) {
  u32 lo = (u32)__builtin_amdgcn_readlane((int)(u32)v, (int)lane);
  u32 hi = (u32)__builtin_amdgcn_readlane((int)(u32)(v >> 32), (int)lane);
  return ((u64)hi << 32) | lo;
}
static u64 nano_dh_vote(_Bool p, u64 exec) {
  (void)exec;
  return nano_dh_llvm_ballot(p);
}
static _Bool nano_dh_is_shared(u64 addr) { return nano_dh_llvm_is_shared((const void *)addr); }
static void nano_dh_wave_sync(u64 exec) { (void)exec; }
static void nano_dh_acquire(void) { __atomic_thread_fence(__ATOMIC_ACQUIRE); }
static void nano_dh_release(void) { __atomic_thread_fence(__ATOMIC_RELEASE); }
static void nano_dh_pause(void) { nano_dh_llvm_s_sleep(2); }
static u64 nano_dh_clock(void) { return __builtin_readcyclecounter(); }
static u32 nano_dh_hwid(void) { return __builtin_amdgcn_s_getreg(NANO_DH_HWID_REG | (31 << 11)); }
static void nano_dh_block(u32 b[3]) {
  b[0] = __builtin_amdgcn_workgroup_id_x();
  b[1] = __builtin_amdgcn_workgroup_id_y();
  b[2] = __builtin_amdgcn_workgroup_id_z();
}
static void nano_dh_block_dim(u32 d[3]) {
  /* hsa_kernel_dispatch_packet_t: workgroup_size_x/y/z are u16 at 4, 6, 8. */
  const __attribute__((address_space(4))) u16 *p =
      (const __attribute__((address_space(4))) u16 *)__builtin_amdgcn_dispatch_ptr();
  d[0] = p[2];
  d[1] = p[3];
  d[2] = p[4];
}
/* Blocks per grid dimension: the packet's grid size (work-items, u32 at 12,
 * 16, 20) over its workgroup size, rounded up (partial workgroups). */
static void nano_dh_grid(u32 g[3]) {
  const __attribute__((address_space(4))) u32 *p =
      (const __attribute__((address_space(4))) u32 *)__builtin_amdgcn_dispatch_ptr();
  u32 d[3];
  nano_dh_block_dim(d);
  for (int i = 0; i < 3; i++)
    g[i] = d[i] ? (p[3 + i] + d[i] - 1) / d[i] : 1;
}
/* s_memrealtime counts at a constant 100 MHz on GFX9 and later. */
#define NANO_DH_REALTIME_NS 10ull
static u64 nano_dh_time_ns(void) { return nano_dh_llvm_s_memrealtime() * NANO_DH_REALTIME_NS; }
static void nano_dh_thread(u32 t[3]) {
  t[0] = __builtin_amdgcn_workitem_id_x();
  t[1] = __builtin_amdgcn_workitem_id_y();
  t[2] = __builtin_amdgcn_workitem_id_z();
}
#elif defined(NANO_DH_NVPTX)
u32 nano_dh_llvm_laneid(void) __asm("llvm.nvvm.read.ptx.sreg.laneid");
u32 nano_dh_llvm_smid(void) __asm("llvm.nvvm.read.ptx.sreg.smid");
u32 nano_dh_llvm_shfl_idx(u32 mask, u32 v, u32 lane, u32 c) __asm("llvm.nvvm.shfl.sync.idx.i32");
u32 nano_dh_llvm_ballot(u32 mask, _Bool p) __asm("llvm.nvvm.vote.ballot.sync");
_Bool nano_dh_llvm_isspacep_shared(const void *p) __asm("llvm.nvvm.isspacep.shared");
void nano_dh_llvm_bar_warp_sync(u32 mask) __asm("llvm.nvvm.bar.warp.sync");
void nano_dh_llvm_membar_sys(void) __asm("llvm.nvvm.membar.sys");
u32 nano_dh_llvm_tid_x(void) __asm("llvm.nvvm.read.ptx.sreg.tid.x");
u32 nano_dh_llvm_tid_y(void) __asm("llvm.nvvm.read.ptx.sreg.tid.y");
u32 nano_dh_llvm_tid_z(void) __asm("llvm.nvvm.read.ptx.sreg.tid.z");
u32 nano_dh_llvm_ntid_x(void) __asm("llvm.nvvm.read.ptx.sreg.ntid.x");
u32 nano_dh_llvm_ntid_y(void) __asm("llvm.nvvm.read.ptx.sreg.ntid.y");
u32 nano_dh_llvm_ntid_z(void) __asm("llvm.nvvm.read.ptx.sreg.ntid.z");
u32 nano_dh_llvm_ctaid_x(void) __asm("llvm.nvvm.read.ptx.sreg.ctaid.x");
u32 nano_dh_llvm_ctaid_y(void) __asm("llvm.nvvm.read.ptx.sreg.ctaid.y");
u32 nano_dh_llvm_ctaid_z(void) __asm("llvm.nvvm.read.ptx.sreg.ctaid.z");
u32 nano_dh_llvm_nctaid_x(void) __asm("llvm.nvvm.read.ptx.sreg.nctaid.x");
u32 nano_dh_llvm_nctaid_y(void) __asm("llvm.nvvm.read.ptx.sreg.nctaid.y");
u32 nano_dh_llvm_nctaid_z(void) __asm("llvm.nvvm.read.ptx.sreg.nctaid.z");

static u32 nano_dh_wave_size(void) { return 32; }
/* PTX's activemask (ISA 6.2); inline assembly because LLVM 15 has no
 * intrinsic for it. */
static u64 nano_dh_active(void) {
  u32 m;
  __asm__ volatile("activemask.b32 %0;" : "=r"(m));
  return m;
}
static u32 nano_dh_lane(void) { return nano_dh_llvm_laneid(); }
static u32 nano_dh_rank(u64 exec) {
  u32 below = (1u << nano_dh_llvm_laneid()) - 1u;
  return (u32)__builtin_popcount((u32)exec & below);
}
static u64 nano_dh_lane_value(u64 v, u32 lane) {
  u32 exec = (u32)nano_dh_active();
  u32 lo = nano_dh_llvm_shfl_idx(exec, (u32)v, lane, 31);
  u32 hi = nano_dh_llvm_shfl_idx(exec, (u32)(v >> 32), lane, 31);
  return ((u64)hi << 32) | lo;
}
static u64 nano_dh_vote(_Bool p, u64 exec) { return nano_dh_llvm_ballot((u32)exec, p); }
static _Bool nano_dh_is_shared(u64 addr) {
  return nano_dh_llvm_isspacep_shared((const void *)addr);
}
static void nano_dh_wave_sync(u64 exec) { nano_dh_llvm_bar_warp_sync((u32)exec); }
/* System scope: the ring and the tail are host memory (the CUDA placement,
 * runtime/dispatch/gpu.c), which membar.gl does not order for the host's
 * reads. (LLVM 15's NVPTX backend cannot select the IR fence instruction.) */
static void nano_dh_acquire(void) { nano_dh_llvm_membar_sys(); }
static void nano_dh_release(void) { nano_dh_llvm_membar_sys(); }
/* PTX's %globaltimer (ns); inline assembly because LLVM 15 has no intrinsic
 * for it (its PTX then calls an undefined "llvm.nvvm..." that ptxas refuses). */
static u64 nano_dh_clock(void) {
  u64 t;
  __asm__ volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
/* Between two polls of the tail (a read across the bus that every waiting
 * warp would otherwise repeat back to back): about NANO_DH_PAUSE_NS on the
 * global timer, which needs no sm_70 (nanosleep does). */
#define NANO_DH_PAUSE_NS 500u
static void nano_dh_pause(void) {
  u64 start = nano_dh_clock();
  while (nano_dh_clock() - start < NANO_DH_PAUSE_NS)
    ;
}
static u32 nano_dh_hwid(void) { return nano_dh_llvm_smid(); }
static void nano_dh_block(u32 b[3]) {
  b[0] = nano_dh_llvm_ctaid_x();
  b[1] = nano_dh_llvm_ctaid_y();
  b[2] = nano_dh_llvm_ctaid_z();
}
static void nano_dh_block_dim(u32 d[3]) {
  d[0] = nano_dh_llvm_ntid_x();
  d[1] = nano_dh_llvm_ntid_y();
  d[2] = nano_dh_llvm_ntid_z();
}
static void nano_dh_grid(u32 g[3]) {
  g[0] = nano_dh_llvm_nctaid_x();
  g[1] = nano_dh_llvm_nctaid_y();
  g[2] = nano_dh_llvm_nctaid_z();
}
static u64 nano_dh_time_ns(void) { return nano_dh_clock(); }
static void nano_dh_thread(u32 t[3]) {
  t[0] = nano_dh_llvm_tid_x();
  t[1] = nano_dh_llvm_tid_y();
  t[2] = nano_dh_llvm_tid_z();
}
#elif defined(NANO_DH_EMU)
/* The test's emulated wave: lanes of one wave run in turn, and each of these
 * returns once every active lane has called it (convergent code only). */
u32 nano_emu_wave_size(void);
u64 nano_emu_active(void);
u32 nano_emu_lane(void);
u64 nano_emu_lane_value(u64 v, u32 lane);
u64 nano_emu_vote(_Bool p);
_Bool nano_emu_is_shared(u64 addr);
u32 nano_emu_hwid(void);
/* the harness may let another leader reserve first (a race it controls) */
u64 nano_emu_reserve_add(gword *p, u64 v);

static u32 nano_dh_wave_size(void) { return nano_emu_wave_size(); }
static u64 nano_dh_active(void) { return nano_emu_active(); }
static u32 nano_dh_lane(void) { return nano_emu_lane(); }
static u32 nano_dh_rank(u64 exec) {
  return (u32)__builtin_popcountll(exec & ((1ull << nano_emu_lane()) - 1));
}
static u64 nano_dh_lane_value(u64 v, u32 lane) { return nano_emu_lane_value(v, lane); }
static u64 nano_dh_vote(_Bool p, u64 exec) {
  (void)exec;
  return nano_emu_vote(p);
}
static _Bool nano_dh_is_shared(u64 addr) { return nano_emu_is_shared(addr); }
static u64 nano_dh_reserve_add(gword *p, u64 v) { return nano_emu_reserve_add(p, v); }
static void nano_dh_wave_sync(u64 exec) {
  (void)nano_emu_lane_value(exec, (u32)__builtin_ctzll(exec));
}
static void nano_dh_acquire(void) { __atomic_thread_fence(__ATOMIC_ACQUIRE); }
static void nano_dh_release(void) { __atomic_thread_fence(__ATOMIC_RELEASE); }
static void nano_dh_pause(void) {}
static u64 nano_dh_clock(void) { return 0; }
static u32 nano_dh_hwid(void) { return nano_emu_hwid(); }
static void nano_dh_block(u32 b[3]) { b[0] = b[1] = b[2] = 0; }
static void nano_dh_block_dim(u32 d[3]) {
  d[0] = nano_emu_wave_size();
  d[1] = d[2] = 1;
}
static void nano_dh_thread(u32 t[3]) {
  t[0] = nano_emu_lane();
  t[1] = t[2] = 0;
}
#else
/* CPU kernels: the thread position of nano/kernel.h, reached through the
 * thread-local pointer the launcher sets (NANO_DH_KCTX_SIZE bytes; kernel.h
 * checks the same size). */
struct nano_kernel_ctx {
  u32 thread[3], block[3], block_dim[3], grid_dim[3];
  void *shared;
  u32 shared_bytes, depth;
};
_Static_assert(sizeof(struct nano_kernel_ctx) == NANO_DH_KCTX_SIZE, "kernel context size");
extern _Thread_local const struct nano_kernel_ctx *__nano_kctx;
u64 nano_dh_llvm_readcyclecounter(void) __asm("llvm.readcyclecounter");
/* The runtime's hook (NANO_DH_FLAG_HOOK): takes the access and returns once
 * the lane may go on, with the position to restore. */
typedef const struct nano_kernel_ctx *(*nano_dh_hook_fn)(void *desc, u64 site, u64 addr, u32 size,
                                                         u32 space);

static u32 nano_dh_wave_size(void) { return 1; }
static u64 nano_dh_active(void) { return 1; }
static u32 nano_dh_lane(void) { return 0; }
static u32 nano_dh_rank(u64 exec) {
  (void)exec;
  return 0;
}
static u64 nano_dh_lane_value(u64 v, u32 lane) {
  (void)lane;
  return v;
}
static u64 nano_dh_vote(_Bool p, u64 exec) {
  (void)exec;
  return p;
}
static _Bool nano_dh_is_shared(u64 addr) {
  (void)addr;
  return 0;
}
static void nano_dh_wave_sync(u64 exec) { (void)exec; }
/* No full fence: on x86 these cost nothing, and a full fence after the
 * record's stores would wait for their cache misses, record after record. */
static void nano_dh_acquire(void) { __atomic_thread_fence(__ATOMIC_ACQUIRE); }
static void nano_dh_release(void) { __atomic_thread_fence(__ATOMIC_RELEASE); }
static void nano_dh_pause(void) {}
static u64 nano_dh_clock(void) { return nano_dh_llvm_readcyclecounter(); }
static u32 nano_dh_hwid(void) { return 0; }
static void nano_dh_block(u32 b[3]) {
  b[0] = __nano_kctx->block[0];
  b[1] = __nano_kctx->block[1];
  b[2] = __nano_kctx->block[2];
}
static void nano_dh_block_dim(u32 d[3]) {
  d[0] = __nano_kctx->block_dim[0];
  d[1] = __nano_kctx->block_dim[1];
  d[2] = __nano_kctx->block_dim[2];
}
static void nano_dh_thread(u32 t[3]) {
  t[0] = __nano_kctx->thread[0];
  t[1] = __nano_kctx->thread[1];
  t[2] = __nano_kctx->thread[2];
}
#endif

#if !defined(NANO_DH_EMU)
static u64 nano_dh_reserve_add(gword *p, u64 v) { return __sync_fetch_and_add(p, v); }
#endif

/* Whether this thread's block b (filled) is within the descriptor's block
 * filter. */
static int nano_dh_block_selected(gdesc *d, u32 b[3]) {
  nano_dh_block(b);
  for (int i = 0; i < 3; i++)
    if (b[i] < d->block_lo[i] || b[i] > d->block_hi[i])
      return 0;
  return 1;
}

/* Reserves `bytes` in the ring; returns the ring offset (monotonic byte
 * count) or NANO_DH_DROPPED_OFFSET after counting a drop. Called by the
 * leader lane only.
 *
 * The common case touches the descriptor alone (device memory): room is
 * judged against desc->tail_seen, a lower bound of the host's tail (the host
 * sets it with each descriptor it writes; leaders raise it after reading the
 * tail), and the reservation is one fetch-and-add on head. Reading the tail
 * itself crosses the bus, and on a GPU those reads queue: with a read and a
 * compare-and-swap retry per reservation, a grid of 2,048 warps made about
 * 1,400 records per second on an H100.
 *
 *   1. Room for `bytes` after head? If not as far as tail_seen tells, poll
 *      the tail (pausing between polls); a ring still full after max_spins
 *      polls, or at once with NANO_DH_FLAG_DROP, drops the record.
 *   2. Fetch-and-add: the reservation. Leaders that passed step 1 together
 *      may have reserved past the room between them (at most one record per
 *      leader in flight); such a leader waits for the host, which drains
 *      while the dispatch runs, in ring order, so the earliest reservation
 *      always has room and every one after it gets it in turn.
 *   3. A host that stops taking records (stopped, or its drain thread
 *      stuck) would hold such a leader forever, and its kernel with it.
 *      After NANO_DH_STALL_SPINS_FACTOR times max_spins polls the leader
 *      gives up: its reserved bytes are never written (the host's final
 *      drain counts them, and all after them, as lost bytes), it sets
 *      desc->stalled, and every later leader drops at once instead of
 *      waiting its turn. */
static u64 nano_dh_reserve(gdesc *d, u64 bytes) {
  u64 cap = d->capacity;
  const gword *tail = (const gword *)d->tail_addr;
  volatile gword *seen = (volatile gword *)&d->tail_seen;
  u64 t = *seen;
  u32 spins = 0;
  if (bytes > cap || *(volatile gword *)&d->stalled)
    goto drop;
  while (*(volatile gword *)&d->head + bytes - t > cap) {
    if (spins && ((d->flags & NANO_DH_FLAG_DROP) || spins > d->max_spins))
      goto drop;
    if (spins++)
      nano_dh_pause();
    t = *(const volatile gword *)tail;
    nano_dh_acquire();
    *seen = t;
  }
  u64 off = nano_dh_reserve_add(&d->head, bytes);
  u64 waits = 0, most = (u64)d->max_spins * NANO_DH_STALL_SPINS_FACTOR;
  while (off + bytes - t > cap) {
    if (waits++ > most || *(volatile gword *)&d->stalled) {
      *(volatile gword *)&d->stalled = 1;
      goto drop;
    }
    t = *(const volatile gword *)tail;
    nano_dh_acquire();
    if (off + bytes - t > cap)
      nano_dh_pause();
  }
  return off;
drop:
  __sync_fetch_and_add(&d->dropped, 1ull);
  return NANO_DH_DROPPED_OFFSET;
}

/* Adds v to the counter at p when v is not 0 (a zero add is an atomic
 * spent for nothing). */
static void nano_dh_count(gword *p, u64 v) {
  if (v)
    __sync_fetch_and_add(p, v);
}

/* Adds n lane accesses to page `page` of the table's page slots: the slot
 * holding page + 1, else the first free one a compare-and-swap takes, within
 * NANO_DH_PAGE_PROBES slots of the page's hash; else they are counted lost. */
static void nano_dh_page_add(gsums *s, u64 page, u64 n) {
  gword *slots = (gword *)((u64)s + s->pages);
  u64 key = page + 1, mask = (u64)s->page_slots - 1;
  u64 h = (key * 0x9E3779B97F4A7C15ull) >> 32;
  for (u32 probe = 0; probe < NANO_DH_PAGE_PROBES; probe++, h++) {
    gword *slot = &slots[2 * (h & mask)];
    u64 k = *(volatile gword *)slot;
    if (k == 0)
      k = __sync_val_compare_and_swap(slot, 0ull, key);
    if (k == 0 || k == key) {
      __sync_fetch_and_add(&slot[1], n);
      return;
    }
  }
  __sync_fetch_and_add((gword *)((u64)s + s->lost), n);
}

/* Sums this wave's access at `site` into desc->sums when the wave's
 * primitives give exactly what the host's arithmetic would give its record
 * (nano/dh_sums.h, aggregate.c); returns 1 then, 0 when the access must be a
 * record. Every active lane calls it with the same view of the wave (exec,
 * leader, base, stride, strided: the vote that the lanes sit at base + rank
 * * stride; where: the record's space) and gets the same answer.
 *
 * Summed here: sites the table has a slot for and the host did not mark
 * (kerneldb widened or merged them), not mixed between shared and global,
 *   global  lanes in progression (closed form), or lanes aligned to a
 *           power-of-two size (distinct addresses, lines and sectors
 *           counted by comparing each lane with the lower ones);
 *   shared  lanes aligned to a power-of-two size up to a bank row (128
 *           bytes), 32 banks of 4 bytes: per phase, the distinct units per
 *           bank group, the busiest group setting the cycles;
 *   pages   every lane's page, counted once per page by its lowest lane.
 * Anything else (unaligned scattered lanes, other bank geometries) is a
 * record. */
static int nano_dh_sum(gdesc *d, u64 site, u64 addr, u32 size, u32 space, u32 where, u64 exec,
                       u32 lanes, u32 leader, u64 base, u64 stride, int strided) {
  gsums *s = (gsums *)d->sums;
  u32 index = (u32)site, what = s->what;
  if ((u32)(site >> 32) != s->module || index >= s->sites || where == NANO_DH_SPACE_MIXED ||
      ((const gbyte *)((u64)s + s->modes))[index])
    return 0;
  int shared = space == NANO_DH_AS_SHARED || where == NANO_DH_SPACE_SHARED;
  if (shared && (what & NANO_DH_SUMS_SITES) && !(what & NANO_DH_SUMS_BANKS))
    return 0;
  /* the record's size is its leader's; 0 counts as 1 in the arithmetic */
  u32 rsize = (u32)nano_dh_lane_value(size, leader), unit = rsize ? rsize : 1;
  int zs = (unit & (unit - 1)) ? -1 : __builtin_ctz(unit);
  int aligned = zs >= 0 && nano_dh_vote((addr & (unit - 1)) == 0, exec) == exec;
  u32 me = nano_dh_lane();
  u64 c[NANO_DH_COUNTS] = {1, lanes, (u64)lanes * rsize, 0, 0, 0, 0, 0};
  if ((what & NANO_DH_SUMS_SITES) && shared) {
    if (!aligned || zs > 7)
      return 0;
    /* a lane covers the `unit` (>= a bank's 4 bytes) at addr; aligned units
     * are equal or disjoint, and a bank group is the banks one unit spans */
    u32 us = zs < 2 ? 2 : (u32)zs;
    u64 key = addr >> us, groups = (1ull << (7 - us)) - 1;
    int amd64 = (what & NANO_DH_SUMS_AMD_WAVE64) != 0;
    u32 phase = nano_dh_phase(amd64, me, unit);
    int dup = 0;
    for (u64 m = exec; m; m &= m - 1) {
      u32 j = (u32)__builtin_ctzll(m);
      u64 k = nano_dh_lane_value(key, j);
      dup |= j < me && k == key && nano_dh_phase(amd64, j, unit) == phase;
    }
    u64 first = nano_dh_vote(!dup, exec);
    u64 in_group = 0;
    for (u64 m = first; m; m &= m - 1) {
      u32 j = (u32)__builtin_ctzll(m);
      u64 k = nano_dh_lane_value(key, j);
      in_group += (k & groups) == (key & groups) && nano_dh_phase(amd64, j, unit) == phase;
    }
    /* the busiest group per phase (at most 8 phases, 8 bits each) */
    u64 most = 0, phases = 0;
    for (u64 m = exec; m; m &= m - 1) {
      u32 j = (u32)__builtin_ctzll(m), p = nano_dh_phase(amd64, j, unit);
      u64 n = nano_dh_lane_value(in_group, j);
      phases |= 1ull << p;
      if (n > (most >> (8 * p) & 0xff))
        most = (most & ~(0xffull << (8 * p))) | n << (8 * p);
    }
    for (u32 p = 0; p < 8; p++)
      c[NANO_DH_COUNT_BANK_CONFLICTS] += most >> (8 * p) & 0xff;
    c[NANO_DH_COUNT_BANK_CONFLICTS] -= (u64)__builtin_popcountll(phases);
  } else if (what & NANO_DH_SUMS_SITES) {
    u32 ls = s->line_shift, ss = s->sector_shift, line = 1u << ls, sector = 1u << ss;
    u64 bytes, lines, sectors;
    if (strided) {
      int down = (long long)stride < 0;
      u64 step = down ? -stride : stride, lo = down ? base - (lanes - 1) * step : base;
      struct nano_dh_cover v =
          nano_dh_progression_cover(lo, step, lanes, unit, line, (int)ls, sector, (int)ss);
      bytes = v.bytes;
      lines = v.lines;
      sectors = v.sectors;
    } else if (aligned) {
      int dup_addr = 0, dup_line = 0, dup_sector = 0;
      for (u64 m = exec; m; m &= m - 1) {
        u32 j = (u32)__builtin_ctzll(m);
        u64 v = nano_dh_lane_value(addr, j);
        if (j < me) {
          dup_addr |= v == addr;
          dup_line |= v >> ls == addr >> ls;
          dup_sector |= v >> ss == addr >> ss;
        }
      }
      u64 distinct = (u64)__builtin_popcountll(nano_dh_vote(!dup_addr, exec));
      u64 in_lines = (u64)__builtin_popcountll(nano_dh_vote(!dup_line, exec));
      u64 in_sectors = (u64)__builtin_popcountll(nano_dh_vote(!dup_sector, exec));
      bytes = distinct * unit;
      lines = (u32)zs <= ls ? in_lines : distinct << ((u32)zs - ls);
      sectors = (u32)zs <= ss ? in_sectors : distinct << ((u32)zs - ss);
    } else {
      return 0;
    }
    c[NANO_DH_COUNT_LINES_NEEDED] = (bytes + line - 1) >> ls;
    c[NANO_DH_COUNT_LINES_USED] = lines;
    c[NANO_DH_COUNT_SECTORS_NEEDED] = (bytes + sector - 1) >> ss;
    c[NANO_DH_COUNT_SECTORS_USED] = sectors;
  }
  if (what & NANO_DH_SUMS_PAGES) {
    u64 page = addr >> s->page_shift, same = 0;
    int dup = 0;
    for (u64 m = exec; m; m &= m - 1) {
      u32 j = (u32)__builtin_ctzll(m);
      if (nano_dh_lane_value(page, j) == page) {
        same++;
        dup |= j < me;
      }
    }
    if (!dup)
      nano_dh_page_add(s, page, same);
  }
  if ((what & NANO_DH_SUMS_SITES) && me == leader) {
    u64 slot =
        ((u64)(nano_dh_hwid() & (s->shards - 1)) * s->sites + index) * NANO_DH_SUMS_SPACES + where;
    gword *counts = (gword *)((u64)s + s->counts) + slot * NANO_DH_COUNTS;
    for (u32 k = 0; k < NANO_DH_COUNTS; k++)
      nano_dh_count(&counts[k], c[k]);
  }
  return 1;
}

/* Records one access of every active lane: see the file comment. `site` is
 * module id << 32 | site index, `addr` the lane's address, `size` the access
 * size in bytes (the leader's is recorded), `space` the site's address-space
 * class (NANO_DH_AS_*: generic addresses are classified). A null desc records
 * nothing. */
__attribute__((visibility("hidden"), noinline)) void
__nano_dh_access(gdesc *desc, u64 site, u64 addr, u32 size, u32 space) {
  if (!desc || (desc->flags & NANO_DH_FLAG_NO_ACCESS))
    return;
#if defined(NANO_DH_CPU)
  if (desc->flags & NANO_DH_FLAG_HOOK) {
    __nano_kctx = ((nano_dh_hook_fn)desc->hook)((void *)desc, site, addr, size, space);
    return;
  }
#endif
  u32 b[3];
  if (!nano_dh_block_selected(desc, b))
    return;
  u64 exec = nano_dh_active();
  u32 rank = nano_dh_rank(exec);
  u32 lanes = (u32)__builtin_popcountll(exec);
  u32 leader = (u32)__builtin_ctzll(exec);
  u64 base = nano_dh_lane_value(addr, leader);
  u64 stride = 0;
  if (lanes > 1)
    stride = nano_dh_lane_value(addr, (u32)__builtin_ctzll(exec & (exec - 1))) - base;
  u64 delta = addr - base;
  int strided = nano_dh_vote(delta == (u64)rank * stride, exec) == exec;
  u32 where = NANO_DH_SPACE_UNKNOWN;
  if (space == NANO_DH_AS_GENERIC && nano_dh_wave_size() > 1) {
    u64 shared = nano_dh_vote(nano_dh_is_shared(addr), exec);
    where = shared == 0      ? NANO_DH_SPACE_GLOBAL
            : shared == exec ? NANO_DH_SPACE_SHARED
                             : NANO_DH_SPACE_MIXED;
  }
  if (desc->sums &&
      nano_dh_sum(desc, site, addr, size, space, where, exec, lanes, leader, base, stride, strided))
    return;
  u32 enc = strided                                                           ? NANO_DH_ENC_STRIDE
            : nano_dh_vote((u64)(long long)(int)delta == delta, exec) == exec ? NANO_DH_ENC_OFF32
                                                                              : NANO_DH_ENC_ADDR64;
  u64 bytes = NANO_DH_HDR_SIZE + NANO_DH_PAYLOAD_BYTES(enc, lanes);
  u64 off = 0;
  if (rank == 0)
    off = nano_dh_reserve(desc, bytes);
  off = nano_dh_lane_value(off, leader);
  if (off == NANO_DH_DROPPED_OFFSET)
    return;
  u64 mask = desc->capacity - 1;
  u64 ring = desc->data;
#define NANO_DH_WORD(o) (*(gword *)(ring + ((off + (o)) & mask)))
  if (enc == NANO_DH_ENC_OFF32)
    *(ghalf *)(ring + ((off + NANO_DH_HDR_SIZE + 4ull * rank) & mask)) = (u32)delta;
  else if (enc == NANO_DH_ENC_ADDR64)
    NANO_DH_WORD(NANO_DH_HDR_SIZE + 8ull * rank) = addr;
  u32 wave = 0;
  if (rank == 0) {
    u32 dim[3], t[3];
    nano_dh_block_dim(dim);
    nano_dh_thread(t);
    wave = (t[0] + dim[0] * (t[1] + dim[1] * t[2])) / nano_dh_wave_size();
    if (enc == NANO_DH_ENC_STRIDE)
      NANO_DH_WORD(NANO_DH_HDR_SIZE) = stride;
    NANO_DH_WORD(NANO_DH_HDR_OFF_SITE) = site;
    NANO_DH_WORD(NANO_DH_HDR_OFF_EXEC) = exec;
    NANO_DH_WORD(NANO_DH_HDR_OFF_BLOCK_X) = (u64)b[0] | (u64)(u16)b[1] << 32 | (u64)(u16)b[2] << 48;
    NANO_DH_WORD(NANO_DH_HDR_OFF_SIZE) = (u64)size | (u64)nano_dh_hwid() << 32;
    NANO_DH_WORD(NANO_DH_HDR_OFF_TIME) = nano_dh_clock();
    NANO_DH_WORD(NANO_DH_HDR_OFF_BASE) = base;
  }
  nano_dh_release();
  nano_dh_wave_sync(exec);
  if (rank == 0) {
    u64 w0 = bytes | (u64)NANO_DH_VERSION << 16 |
             (u64)(enc | where << NANO_DH_FORMAT_SPACE_SHIFT) << 24 | (u64)lanes << 32 |
             (u64)nano_dh_wave_size() << 40 | (u64)(u16)wave << 48;
    *(volatile gword *)&NANO_DH_WORD(0) = w0;
  }
#undef NANO_DH_WORD
}

#if defined(NANO_DH_AMDGPU) || defined(NANO_DH_NVPTX)
/* KernelTimeline on GPUs (the pass calls these in kernel twins: entry and
 * every return). The entry of this thread's block in desc->blocks (format:
 * nano/dh_format.h), or NULL: no table, a block the filter leaves out, or
 * one past the table. */
static gword *nano_dh_block_entry(gdesc *d) {
  if (!d || !d->blocks)
    return 0;
  u32 b[3], g[3];
  if (!nano_dh_block_selected(d, b))
    return 0;
  nano_dh_grid(g);
  u64 linear = b[0] + (u64)g[0] * (b[1] + (u64)g[1] * b[2]);
  if (linear >= d->nblocks)
    return 0;
  return (gword *)d->blocks + NANO_DH_BLOCK_WORDS * linear;
}

/* Thread 0 of the block stamps its start and unit. */
__attribute__((visibility("hidden"), noinline)) void __nano_dh_block_enter(gdesc *desc) {
  gword *e = nano_dh_block_entry(desc);
  u32 t[3];
  nano_dh_thread(t);
  if (!e || (t[0] | t[1] | t[2]))
    return;
  e[NANO_DH_BLOCK_UNIT] = nano_dh_hwid();
  e[NANO_DH_BLOCK_START] = nano_dh_time_ns();
}

/* The lowest active lane of each wave that returns raises the block's end
 * to now (a compare-and-swap loop: a 64-bit atomic max the same way on
 * every target and compiler). */
__attribute__((visibility("hidden"), noinline)) void __nano_dh_block_leave(gdesc *desc) {
  gword *e = nano_dh_block_entry(desc);
  u64 exec = nano_dh_active();
  if (!e || nano_dh_lane() != (u32)__builtin_ctzll(exec))
    return;
  gword *end = &e[NANO_DH_BLOCK_END];
  u64 now = nano_dh_time_ns(), old = *(volatile gword *)end;
  while (old < now) {
    u64 seen = __sync_val_compare_and_swap(end, old, now);
    if (seen == old)
      break;
    old = seen;
  }
}
#endif

#if defined(NANO_DH_CPU)
/* CPU twins only (the pass calls these in host modules; llvm-pass/
 * DeviceTwins.cpp's banner). Outside a virtual wave (no hook) they do
 * nothing. */

/* A loop's latch: the lane waits there for the wave's lanes still in the
 * iteration (point: module id << 32 | the site count at the loop's end). */
__attribute__((visibility("hidden"), noinline)) void __nano_dh_reconverge(gdesc *desc, u64 point) {
  if (desc && (desc->flags & NANO_DH_FLAG_HOOK))
    __nano_kctx = ((nano_dh_hook_fn)desc->hook)((void *)desc, point, 0, 0, NANO_DH_HOOK_POINT);
}

/* Entry to and return from a cloned callee: the lane's call depth. */
__attribute__((visibility("hidden"), noinline)) void __nano_dh_enter(gdesc *desc) {
  if (desc && (desc->flags & NANO_DH_FLAG_HOOK))
    ((struct nano_kernel_ctx *)__nano_kctx)->depth++;
}

__attribute__((visibility("hidden"), noinline)) void __nano_dh_leave(gdesc *desc) {
  if (desc && (desc->flags & NANO_DH_FLAG_HOOK))
    ((struct nano_kernel_ctx *)__nano_kctx)->depth--;
}
#endif
