/*
 * dh_device.c: the device side of dh_comms, compiled to LLVM bitcode once per
 * target (AMDGPU GFX9, AMDGPU GFX10+, NVPTX, host CPU) by the clang that
 * matches the plugin's LLVM, and linked into instrumented modules by the pass.
 *
 * The pass calls one function per instrumented access, from every active lane:
 *
 *   __nano_dh_access(desc, site, addr, size)
 *
 * Design: one record per wave (warp) and access. The lanes of the wave that
 * execute the access agree on a leader (the lowest active lane); the leader
 * reserves header + 8 bytes per active lane in the ring of the descriptor with
 * one compare-and-swap on desc->head, and broadcasts the reserved offset; each
 * lane writes its own address at its rank among the active lanes; all lanes
 * fence; the leader writes the header, its first word last (release), which
 * marks the record complete for the host. The ring capacity is a power of two
 * and records are multiples of 8 bytes, so each 8-byte word lands at
 * (offset & (capacity - 1)) without straddling the end.
 *
 * A full ring: with NANO_DH_FLAG_DROP the record is dropped at once; otherwise
 * the leader polls desc->tail up to desc->max_spins times (sleeping between
 * polls on GPUs) and then drops. Every drop increments desc->dropped.
 *
 * Target macros (set by dh_comms/CMakeLists.txt): NANO_DH_AMDGPU with
 * NANO_DH_HWID_REG (the s_getreg id of HW_ID: 4 on GFX9, 23 = HW_ID1 on GFX10+),
 * NANO_DH_NVPTX, or neither for the host CPU. The code uses clang builtins and
 * LLVM intrinsics through asm labels only, so that one source compiles with
 * clang 15 and clang 22 without a target CPU (the pass sets target-cpu and
 * features from the module it links into). Atomics are __sync builtins,
 * volatile accesses and fences: clang 15 turns 8-byte __atomic_* on NVPTX
 * without a host target into library calls that do not exist on the device.
 */
#include "nano/dh_format.h"

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#if defined(NANO_DH_AMDGPU) || defined(NANO_DH_NVPTX)
#define NANO_DH_GLOBAL __attribute__((address_space(1)))
#else
#define NANO_DH_GLOBAL
#endif

/* The descriptor as the device sees it (offsets: nano/dh_format.h). */
struct nano_dh_desc {
  u32 magic;
  u32 version;
  u64 data;
  u64 capacity;
  u64 head;
  u64 tail;
  u64 dropped;
  u32 flags;
  u32 max_spins;
  u64 reserved;
};
_Static_assert(sizeof(struct nano_dh_desc) == NANO_DH_DESC_SIZE, "descriptor size");

typedef NANO_DH_GLOBAL struct nano_dh_desc gdesc;
typedef NANO_DH_GLOBAL u64 gword;

#define NANO_DH_DROPPED_OFFSET (~0ull)

/* ---- Per-target wave primitives ----------------------------------------- */
#if defined(NANO_DH_AMDGPU)
u32 nano_dh_llvm_wavefrontsize(void) __asm("llvm.amdgcn.wavefrontsize");
void nano_dh_llvm_s_sleep(int) __asm("llvm.amdgcn.s.sleep");

static u32 nano_dh_wave_size(void) { return nano_dh_llvm_wavefrontsize(); }
/* clang 15 reads exec as a 64-bit register; in wave32 EXEC_HI is not part of
 * the mask, so it is cleared (the size is a constant after code generation). */
static u64 nano_dh_active(void) {
  u64 exec = __builtin_amdgcn_read_exec();
  return nano_dh_wave_size() == 32 ? (u32)exec : exec;
}
static u32 nano_dh_rank(u64 exec) {
  return __builtin_amdgcn_mbcnt_hi((u32)(exec >> 32), __builtin_amdgcn_mbcnt_lo((u32)exec, 0));
}
static u64 nano_dh_broadcast(u64 v, u64 exec) {
  (void)exec;
  u32 lo = __builtin_amdgcn_readfirstlane((u32)v);
  u32 hi = __builtin_amdgcn_readfirstlane((u32)(v >> 32));
  return ((u64)hi << 32) | lo;
}
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
static void nano_dh_thread(u32 t[3]) {
  t[0] = __builtin_amdgcn_workitem_id_x();
  t[1] = __builtin_amdgcn_workitem_id_y();
  t[2] = __builtin_amdgcn_workitem_id_z();
}
#elif defined(NANO_DH_NVPTX)
u32 nano_dh_llvm_activemask(void) __asm("llvm.nvvm.activemask");
u32 nano_dh_llvm_laneid(void) __asm("llvm.nvvm.read.ptx.sreg.laneid");
u32 nano_dh_llvm_smid(void) __asm("llvm.nvvm.read.ptx.sreg.smid");
u64 nano_dh_llvm_globaltimer(void) __asm("llvm.nvvm.read.ptx.sreg.globaltimer");
u32 nano_dh_llvm_shfl_idx(u32 mask, u32 v, u32 lane, u32 c) __asm("llvm.nvvm.shfl.sync.idx.i32");
void nano_dh_llvm_bar_warp_sync(u32 mask) __asm("llvm.nvvm.bar.warp.sync");
void nano_dh_llvm_membar_gl(void) __asm("llvm.nvvm.membar.gl");
u32 nano_dh_llvm_tid_x(void) __asm("llvm.nvvm.read.ptx.sreg.tid.x");
u32 nano_dh_llvm_tid_y(void) __asm("llvm.nvvm.read.ptx.sreg.tid.y");
u32 nano_dh_llvm_tid_z(void) __asm("llvm.nvvm.read.ptx.sreg.tid.z");
u32 nano_dh_llvm_ntid_x(void) __asm("llvm.nvvm.read.ptx.sreg.ntid.x");
u32 nano_dh_llvm_ntid_y(void) __asm("llvm.nvvm.read.ptx.sreg.ntid.y");
u32 nano_dh_llvm_ntid_z(void) __asm("llvm.nvvm.read.ptx.sreg.ntid.z");
u32 nano_dh_llvm_ctaid_x(void) __asm("llvm.nvvm.read.ptx.sreg.ctaid.x");
u32 nano_dh_llvm_ctaid_y(void) __asm("llvm.nvvm.read.ptx.sreg.ctaid.y");
u32 nano_dh_llvm_ctaid_z(void) __asm("llvm.nvvm.read.ptx.sreg.ctaid.z");

static u64 nano_dh_active(void) { return nano_dh_llvm_activemask(); }
static u32 nano_dh_rank(u64 exec) {
  u32 below = (1u << nano_dh_llvm_laneid()) - 1u;
  return (u32)__builtin_popcount((u32)exec & below);
}
static u32 nano_dh_wave_size(void) { return 32; }
static u64 nano_dh_broadcast(u64 v, u64 exec) {
  u32 leader = (u32)__builtin_ctz((u32)exec);
  u32 lo = nano_dh_llvm_shfl_idx((u32)exec, (u32)v, leader, 31);
  u32 hi = nano_dh_llvm_shfl_idx((u32)exec, (u32)(v >> 32), leader, 31);
  return ((u64)hi << 32) | lo;
}
static void nano_dh_wave_sync(u64 exec) { nano_dh_llvm_bar_warp_sync((u32)exec); }
/* LLVM 15's NVPTX backend cannot select the IR fence instruction. */
static void nano_dh_acquire(void) { nano_dh_llvm_membar_gl(); }
static void nano_dh_release(void) { nano_dh_llvm_membar_gl(); }
static void nano_dh_pause(void) {}
static u64 nano_dh_clock(void) { return nano_dh_llvm_globaltimer(); }
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
static void nano_dh_thread(u32 t[3]) {
  t[0] = nano_dh_llvm_tid_x();
  t[1] = nano_dh_llvm_tid_y();
  t[2] = nano_dh_llvm_tid_z();
}
#else
/* CPU kernels: the launcher in nano/kernel.h sets this per thread; a CPU
 * "wave" is one thread. */
struct nano_kernel_ctx {
  u32 thread[3], block[3], block_dim[3], grid_dim[3];
};
extern _Thread_local struct nano_kernel_ctx __nano_kctx;
u64 nano_dh_llvm_readcyclecounter(void) __asm("llvm.readcyclecounter");

static u64 nano_dh_active(void) { return 1; }
static u32 nano_dh_rank(u64 exec) { (void)exec; return 0; }
static u32 nano_dh_wave_size(void) { return 1; }
static u64 nano_dh_broadcast(u64 v, u64 exec) { (void)exec; return v; }
static void nano_dh_wave_sync(u64 exec) { (void)exec; }
/* No full fence: on x86 these cost nothing, and a full fence after the
 * record's stores would wait for their cache misses, record after record. */
static void nano_dh_acquire(void) { __atomic_thread_fence(__ATOMIC_ACQUIRE); }
static void nano_dh_release(void) { __atomic_thread_fence(__ATOMIC_RELEASE); }
static void nano_dh_pause(void) {}
static u64 nano_dh_clock(void) { return nano_dh_llvm_readcyclecounter(); }
static u32 nano_dh_hwid(void) { return 0; }
static void nano_dh_block(u32 b[3]) {
  b[0] = __nano_kctx.block[0];
  b[1] = __nano_kctx.block[1];
  b[2] = __nano_kctx.block[2];
}
static void nano_dh_block_dim(u32 d[3]) {
  d[0] = __nano_kctx.block_dim[0];
  d[1] = __nano_kctx.block_dim[1];
  d[2] = __nano_kctx.block_dim[2];
}
static void nano_dh_thread(u32 t[3]) {
  t[0] = __nano_kctx.thread[0];
  t[1] = __nano_kctx.thread[1];
  t[2] = __nano_kctx.thread[2];
}
#endif

/* Reserves `bytes` in the ring; returns the ring offset (monotonic byte
 * count) or NANO_DH_DROPPED_OFFSET after counting a drop. Called by the
 * leader lane only. */
static u64 nano_dh_reserve(gdesc *d, u64 bytes) {
  u64 cap = d->capacity;
  u32 spins = 0;
  if (bytes > cap)
    goto drop;
  for (;;) {
    u64 head = *(volatile gword *)&d->head;
    u64 tail = *(volatile gword *)&d->tail;
    nano_dh_acquire();
    if (head + bytes - tail <= cap) {
      if (__sync_bool_compare_and_swap(&d->head, head, head + bytes))
        return head;
      continue;
    }
    if ((d->flags & NANO_DH_FLAG_DROP) || spins++ >= d->max_spins)
      goto drop;
    nano_dh_pause();
  }
drop:
  __sync_fetch_and_add(&d->dropped, 1ull);
  return NANO_DH_DROPPED_OFFSET;
}

/* Records one access of every active lane: see the file comment. `site` is
 * module id << 32 | site index, `addr` the lane's address, `size` the access
 * size in bytes (the leader's is recorded). A null desc records nothing. */
__attribute__((visibility("hidden"), noinline)) void
__nano_dh_access(gdesc *desc, u64 site, u64 addr, u32 size) {
  if (!desc)
    return;
  u64 exec = nano_dh_active();
  u32 rank = nano_dh_rank(exec);
  u32 lanes = (u32)__builtin_popcountll(exec);
  u64 bytes = NANO_DH_HDR_SIZE + 8ull * lanes;
  u64 off = 0;
  if (rank == 0)
    off = nano_dh_reserve(desc, bytes);
  off = nano_dh_broadcast(off, exec);
  if (off == NANO_DH_DROPPED_OFFSET)
    return;
  u64 mask = desc->capacity - 1;
  u64 base = desc->data;
#define NANO_DH_WORD(o) (*(gword *)(base + (((off) + (o)) & mask)))
  NANO_DH_WORD(NANO_DH_HDR_SIZE + 8ull * rank) = addr;
  if (rank == 0) {
    u32 b[3], dim[3], t[3];
    u32 ws = nano_dh_wave_size();
    nano_dh_block(b);
    nano_dh_block_dim(dim);
    nano_dh_thread(t);
    u32 linear = t[0] + dim[0] * (t[1] + dim[1] * t[2]);
    NANO_DH_WORD(NANO_DH_HDR_OFF_SITE) = site;
    NANO_DH_WORD(NANO_DH_HDR_OFF_EXEC) = exec;
    NANO_DH_WORD(NANO_DH_HDR_OFF_TIME) = nano_dh_clock();
    NANO_DH_WORD(NANO_DH_HDR_OFF_BLOCK) = (u64)b[0] | (u64)b[1] << 32;
    NANO_DH_WORD(NANO_DH_HDR_OFF_BLOCK + 8) = (u64)b[2] | (u64)(linear / ws) << 32;
    NANO_DH_WORD(NANO_DH_HDR_OFF_HWID) = (u64)nano_dh_hwid() | (u64)size << 32;
    NANO_DH_WORD(NANO_DH_HDR_OFF_BLOCKDIM) =
        (u64)(u16)dim[0] | (u64)(u16)dim[1] << 16 | (u64)(u16)dim[2] << 32;
  }
  nano_dh_release();
  nano_dh_wave_sync(exec);
  if (rank == 0) {
    u64 w0 = bytes | (u64)NANO_DH_VERSION << 32 | (u64)lanes << 48 |
             (u64)nano_dh_wave_size() << 56;
    *(volatile gword *)&NANO_DH_WORD(0) = w0;
  }
#undef NANO_DH_WORD
}
