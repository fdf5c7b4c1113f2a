/*
 * fiber.c: nano_fiber_switch and nano_fiber_init (fiber.h).
 *
 * x86-64 (System V): a switch pushes the callee-saved registers (rbp, rbx,
 * r12-r15) and the MXCSR and x87 control words on the running stack, stores
 * the stack pointer in *from, loads *to's and pops the same. No system call
 * (glibc's swapcontext makes one per switch to save the signal mask, which
 * the lanes of one thread share anyway). A new fiber's stack is laid out as
 * if it had switched away right before entering nano_fiber_start, which
 * moves r12 (arg) into the first argument and calls r13 (fn) with the stack
 * 16-byte aligned. Elsewhere: ucontext.
 *
 * Stack of a new fiber, from its saved stack pointer sp up (8 bytes each):
 *   sp+0  MXCSR (low 4 bytes), x87 control word (bytes 4-5)
 *   sp+8  r15   sp+16 r14   sp+24 r13 = fn   sp+32 r12 = arg
 *   sp+40 rbx   sp+48 rbp   sp+56 return address = nano_fiber_start
 *   sp+64 16-byte aligned: the stack pointer nano_fiber_start runs with
 */
#include "fiber.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)

/* Bytes the switch keeps on a stack: control words, six registers, return. */
#define FIBER_FRAME 64
/* Room left above a new fiber's first frame (the red zone of nothing). */
#define FIBER_TOP_PAD 64

__asm__(".text\n"
        ".globl nano_fiber_switch\n"
        ".hidden nano_fiber_switch\n"
        ".type nano_fiber_switch,@function\n"
        "nano_fiber_switch:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  subq $8, %rsp\n"
        "  stmxcsr (%rsp)\n"
        "  fnstcw 4(%rsp)\n"
        "  movq %rsp, (%rdi)\n"
        "  movq (%rsi), %rsp\n"
        "  ldmxcsr (%rsp)\n"
        "  fldcw 4(%rsp)\n"
        "  addq $8, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size nano_fiber_switch, .-nano_fiber_switch\n"
        ".type nano_fiber_start,@function\n"
        "nano_fiber_start:\n"
        "  .cfi_startproc\n"
        "  .cfi_undefined rip\n" /* unwinders stop here */
        "  movq %r12, %rdi\n"
        "  callq *%r13\n"
        "  ud2\n"
        "  .cfi_endproc\n"
        ".size nano_fiber_start, .-nano_fiber_start\n");

void nano_fiber_start(void);

void nano_fiber_init(struct nano_fiber *f, void *stack, size_t size, void (*fn)(void *),
                     void *arg) {
  uintptr_t top = ((uintptr_t)stack + size - FIBER_TOP_PAD) & ~(uintptr_t)15;
  uint64_t *sp = (uint64_t *)(top - FIBER_FRAME);
  uint32_t mxcsr;
  uint16_t fpucw;
  __asm__ volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(mxcsr), "=m"(fpucw));
  memset(sp, 0, FIBER_FRAME);
  memcpy(&sp[0], &mxcsr, 4);
  memcpy((char *)&sp[0] + 4, &fpucw, 2);
  sp[3] = (uint64_t)(uintptr_t)fn;
  sp[4] = (uint64_t)(uintptr_t)arg;
  sp[7] = (uint64_t)(uintptr_t)nano_fiber_start;
  f->sp = sp;
}

#else
#include <stdlib.h>
#include <ucontext.h>

/* makecontext passes int arguments only: the pointers go in two halves. */
static void fiber_entry(unsigned fn_hi, unsigned fn_lo, unsigned arg_hi, unsigned arg_lo) {
  void (*fn)(void *) = (void (*)(void *))(uintptr_t)((uint64_t)fn_hi << 32 | fn_lo);
  fn((void *)(uintptr_t)((uint64_t)arg_hi << 32 | arg_lo));
  abort();
}

void nano_fiber_init(struct nano_fiber *f, void *stack, size_t size, void (*fn)(void *),
                     void *arg) {
  ucontext_t *uc = f->sp ? f->sp : malloc(sizeof *uc);
  if (!uc || getcontext(uc) != 0)
    abort();
  uc->uc_stack.ss_sp = stack;
  uc->uc_stack.ss_size = size;
  uc->uc_link = NULL;
  uint64_t a = (uint64_t)(uintptr_t)arg, p = (uint64_t)(uintptr_t)fn;
  makecontext(uc, (void (*)(void))fiber_entry, 4, (unsigned)(p >> 32), (unsigned)p,
              (unsigned)(a >> 32), (unsigned)a);
  f->sp = uc;
}

void nano_fiber_switch(struct nano_fiber *from, struct nano_fiber *to) {
  if (!from->sp && !(from->sp = malloc(sizeof(ucontext_t))))
    abort();
  swapcontext(from->sp, to->sp);
}
#endif
