/* For weak-hooks.test: 1000 relaxed fetch_adds in a loop, one load, one CAS. */
#include <stdio.h>

long counter;

int main(void) {
  for (int i = 0; i < 1000; i++)
    __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
  long expected = __atomic_load_n(&counter, __ATOMIC_ACQUIRE);
  __atomic_compare_exchange_n(&counter, &expected, expected + 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  printf("counter=%ld expected=%ld\n", counter, expected);
  return 0;
}
