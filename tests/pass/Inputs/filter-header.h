// Included by filters.c: an inline function whose atomic is written here.
static inline void header_op(int *p) { __atomic_fetch_xor(p, 1, __ATOMIC_RELAXED); }
