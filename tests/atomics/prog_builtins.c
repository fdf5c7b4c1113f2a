/*
 * prog_builtins.c: end-to-end program, C with GCC builtins (__atomic_* and
 * __sync_*). Usage: prog_builtins THREADS ITERS MIX, like prog_c11.c. A
 * constructor of priority 101 (before the module's site table may be
 * registered) performs 2 fetch_adds and 1 load. Per mixed round:
 *   fetch_add 3 (fetch_add, add_fetch, __sync_fetch_and_add),
 *   fetch_sub 2 (sub_fetch, __sync_sub_and_fetch), load 2 (load_n, load),
 *   store 2 (store_n, store), exchange 2 (exchange_n, exchange),
 *   compare_exchange 3 (compare_exchange_n weak, compare_exchange,
 *   __sync_bool_compare_and_swap), fetch_nand 1, fetch_or 1
 *   (__sync_or_and_fetch), thread_fence 2 (thread_fence, __sync_synchronize),
 *   signal_fence 1, and a test_and_set + clear pair (the prelude reports
 *   __atomic_test_and_set / __atomic_clear, the plugin sees an exchange and a
 *   store). Compile with -DEXTRA_ATOMIC for one more fetch_add per round (the
 *   gate test's "added atomic").
 */
#include <stdio.h>

#include "e2e_main.h"

struct pair {
  int a, b;
} __attribute__((aligned(8)));

static long hot;
static long ctor_value;
static unsigned long word;
/* Not static: LLVM would fold loads of a global nobody writes. */
struct pair shared_pair;
static long iters, mix;

__attribute__((constructor(101))) static void early(void) {
  __atomic_fetch_add(&ctor_value, 5, __ATOMIC_RELAXED);
  __atomic_fetch_add(&ctor_value, 5, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&ctor_value, __ATOMIC_ACQUIRE) != 10)
    abort();
}

static void *worker(void *arg) {
  (void)arg;
  for (long i = 0; i < iters; i++)
    __atomic_fetch_add(&hot, 1, __ATOMIC_RELAXED); /* HOT */
  for (long i = 0; i < mix; i++) {
    unsigned long w = __atomic_load_n(&word, __ATOMIC_ACQUIRE);
    struct pair p, q = {1, 2}, r;
    __atomic_load(&shared_pair, &p, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&word, 3, __ATOMIC_RELAXED);
    __atomic_add_fetch(&word, 1, __ATOMIC_ACQ_REL);
    __sync_fetch_and_add(&word, 1);
    __atomic_sub_fetch(&word, 4, __ATOMIC_RELEASE);
    __sync_sub_and_fetch(&word, 1);
    unsigned long local = w;
    __atomic_store_n(&local, 7, __ATOMIC_RELAXED);
    __atomic_store(&p, &q, __ATOMIC_RELEASE);
    __atomic_exchange_n(&local, 8, __ATOMIC_ACQ_REL);
    __atomic_exchange(&p, &q, &r, __ATOMIC_SEQ_CST);
    unsigned long expected = 8;
    __atomic_compare_exchange_n(&local, &expected, 9, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    __atomic_compare_exchange(&p, &r, &q, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
    __sync_bool_compare_and_swap(&local, 9, 10);
    __atomic_fetch_nand(&local, 0, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    __sync_or_and_fetch(&local, 1); /* between the fences: LLVM merges adjacent ones */
    __sync_synchronize();
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    unsigned char mine = 0;
    __atomic_test_and_set(&mine, __ATOMIC_ACQUIRE);
    __atomic_clear(&mine, __ATOMIC_RELEASE);
#ifdef EXTRA_ATOMIC
    __atomic_fetch_add(&word, 0, __ATOMIC_RELAXED); /* EXTRA_SITE */
#endif
  }
  return NULL;
}

int main(int argc, char **argv) {
  int rc = e2e_run(argc, argv, &iters, &mix, worker);
  if (rc != 0)
    return rc;
  printf("hot=%ld word=%lu ctor=%ld\n", hot, word, ctor_value);
  return 0;
}
