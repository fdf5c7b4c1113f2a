/*
 * prog_c11.c: end-to-end program, C11 <stdatomic.h>. Usage: prog_c11 THREADS
 * ITERS MIX. Each of THREADS threads does ITERS relaxed fetch_adds on one
 * shared counter (the "hot" line), then MIX rounds of the mixed body. Per
 * round: 3 fetch_add (incl. the explicit one below), 1 fetch_sub, 2 load,
 * 1 store, 1 exchange, 1 compare_exchange, 1 fetch_or, 1 fetch_and,
 * 1 fetch_xor, 1 thread_fence; main adds 3 loads. run_e2e.py holds the same
 * table.
 * Prints only values that do not depend on instrumentation.
 */
#include <stdatomic.h>
#include <stdio.h>

#include "e2e_main.h"

static atomic_long hot;
static atomic_long mixed;
static atomic_uint bits;
static long iters, mix;

static void *worker(void *arg) {
  (void)arg;
  for (long i = 0; i < iters; i++)
    atomic_fetch_add_explicit(&hot, 1, memory_order_relaxed); /* HOT */
  for (long i = 0; i < mix; i++) {
    atomic_fetch_add(&mixed, 2);
    atomic_fetch_sub(&mixed, 1);
    long v = atomic_load_explicit(&mixed, memory_order_acquire);
    atomic_fetch_add_explicit(&mixed, 1, memory_order_release);
    atomic_fetch_add(&mixed, -1);
    atomic_long seen = atomic_load(&mixed); /* initialisation: not an atomic op */
    atomic_compare_exchange_strong(&seen, &v, v); /* a local atomic counts too */
    atomic_store_explicit(&seen, 0, memory_order_relaxed);
    atomic_exchange(&seen, 1);
    atomic_fetch_or(&bits, 1u << (i & 7));
    atomic_fetch_and(&bits, ~(1u << 8)); /* operands LLVM cannot fold away */
    atomic_fetch_xor(&bits, 1u << 9);
    atomic_thread_fence(memory_order_seq_cst);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int rc = e2e_run(argc, argv, &iters, &mix, worker);
  if (rc != 0)
    return rc;
  /* Explicit loads: a plain read of an _Atomic object is an atomic load the
   * plugin sees and the prelude cannot. */
  printf("hot=%ld mixed=%ld bits=%u\n", atomic_load(&hot), atomic_load(&mixed), atomic_load(&bits));
  return 0;
}
