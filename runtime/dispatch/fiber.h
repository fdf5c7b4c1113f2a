/*
 * fiber.h: user-level context switching for the CPU back end's virtual waves
 * (the lanes of a wave are fibers of one worker thread).
 */
#ifndef NANO_FIBER_H
#define NANO_FIBER_H

#include <stddef.h>

struct nano_fiber {
  void *sp; /* saved stack pointer (x86-64) or a ucontext_t * (elsewhere) */
};

/* Prepares *f to run fn(arg) on [stack, stack + size) when first resumed.
 * fn must never return: it ends by switching away for good. */
void nano_fiber_init(struct nano_fiber *f, void *stack, size_t size, void (*fn)(void *), void *arg);
/* Saves the running context into *from and resumes *to. */
void nano_fiber_switch(struct nano_fiber *from, struct nano_fiber *to);

#endif
