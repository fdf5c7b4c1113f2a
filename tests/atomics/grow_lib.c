/* grow_lib.c: 300 atomic sites, one event each (grow_main.c). */
static long cell;
#define NANO_GROW_ONE __atomic_fetch_add(&cell, 1, __ATOMIC_RELAXED);
#define NANO_GROW_10                                                                               \
  NANO_GROW_ONE NANO_GROW_ONE NANO_GROW_ONE NANO_GROW_ONE NANO_GROW_ONE NANO_GROW_ONE NANO_GROW_ONE \
      NANO_GROW_ONE NANO_GROW_ONE NANO_GROW_ONE
#define NANO_GROW_100                                                                              \
  NANO_GROW_10 NANO_GROW_10 NANO_GROW_10 NANO_GROW_10 NANO_GROW_10 NANO_GROW_10 NANO_GROW_10       \
      NANO_GROW_10 NANO_GROW_10 NANO_GROW_10

void grow_many(void) { NANO_GROW_100 NANO_GROW_100 NANO_GROW_100 }
