/* dl_lib.c: a library built with the plugin and loaded with dlopen by
 * dl_main.c: its sites are registered when it is loaded. */
long dl_counter;

long dl_work(long n) {
  for (long i = 0; i < n; i++)
    __atomic_fetch_add(&dl_counter, 1, __ATOMIC_RELAXED); /* DL_SITE */
  return __atomic_load_n(&dl_counter, __ATOMIC_ACQUIRE);
}
