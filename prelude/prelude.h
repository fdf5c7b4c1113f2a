/*
 * prelude.h: nanoprobe's host-atomics hooks for builds without the plugin.
 *
 * Force-include it in every translation unit (gcc or clang, C or C++):
 *
 *     gcc -O2 --include=/path/to/prelude.h app.c -o app
 *
 * Every GCC builtin that performs an atomic operation (__atomic_*, the legacy
 * __sync_*, and under clang the __c11_atomic_* builtins its <stdatomic.h> and
 * libc++ use) becomes a macro that first calls the runtime hook
 * __nano_atomic(&site) with one static site per expansion (kind, memory order,
 * size, function, file, line), then performs the builtin unchanged. The hook
 * is a weak reference: without libnano_tracker.so (or libnano_print.so) the
 * program runs as before, at the cost of one test of a null address.
 *
 * The site layout is the one of runtime/include/nano/atomics.h (struct
 * nano_site). This header includes no system header (a force-included system
 * header would fix feature-test macros such as _GNU_SOURCE too early), so it
 * declares a structure of the same layout under its own name and reaches the
 * hook through an assembler label; both headers can be used in one file.
 *
 * Kinds are normalised like the pass sees them: __atomic_add_fetch counts as
 * __atomic_fetch_add, __atomic_load_n as __atomic_load, __sync_fetch_and_add
 * as __atomic_fetch_add, __sync_lock_test_and_set as __atomic_exchange,
 * __sync_lock_release as __atomic_store, __sync_synchronize as
 * __atomic_thread_fence. The memory order is recorded when it is a constant
 * at the point of expansion, otherwise it is "unknown" (libstdc++ passes the
 * order as a function parameter, so C++ sites mostly record "unknown").
 *
 * Not wrapped, on purpose: __atomic_always_lock_free, __atomic_is_lock_free
 * and __c11_atomic_is_lock_free (they appear in constant expressions), and
 * __c11_atomic_init (not an atomic operation). Not visible to a header:
 * operators on C11 _Atomic objects (x++, x = v), which only the plugin counts.
 * The macros use GNU statement expressions, so an atomic builtin written at
 * file scope (outside any function) does not compile with the prelude.
 */
#ifndef NANO_PRELUDE_H
#define NANO_PRELUDE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Same layout as struct nano_site of nano/atomics.h (48 bytes on LP64). */
struct __nano_prelude_site {
  unsigned int id;
  unsigned short kind;
  unsigned char order;
  unsigned char flags;
  unsigned int size;
  unsigned int line;
  unsigned int column;
  unsigned int reserved;
  const char *function;
  const char *file;
  void *module;
};

/* The runtime's __nano_atomic, weak: null when no runtime is loaded. */
extern void
__nano_prelude_hook(struct __nano_prelude_site *site) __asm__("__nano_atomic")
    __attribute__((weak));

#ifdef __cplusplus
}
#endif

/* enum nano_kind values (nano/atomics.h). */
#define __NANO_K_LOAD 0
#define __NANO_K_STORE 1
#define __NANO_K_EXCHANGE 2
#define __NANO_K_CMPXCHG 3
#define __NANO_K_ADD 4
#define __NANO_K_SUB 5
#define __NANO_K_AND 6
#define __NANO_K_NAND 7
#define __NANO_K_OR 8
#define __NANO_K_XOR 9
#define __NANO_K_MAX 10
#define __NANO_K_MIN 11
#define __NANO_K_UMAX 12
#define __NANO_K_UMIN 13
#define __NANO_K_TAS 24
#define __NANO_K_CLEAR 25
#define __NANO_K_THREAD_FENCE 26
#define __NANO_K_SIGNAL_FENCE 27
/* NANO_SITE_PRELUDE and NANO_SITE_WEAK. */
#define __NANO_F_PRELUDE 0x08
#define __NANO_F_WEAK 0x01

/* A memory order as a constant: the order when `o` is a compile-time
 * constant (HLE bits masked off), else 7 (unknown). Never evaluates `o`. */
#define __NANO_ORDER(o)                                                        \
  ((unsigned char)(__builtin_constant_p((int)(o))                              \
                       ? ((((int)(o)) & 0xffff) <= 5 ? (((int)(o)) & 0xffff)   \
                                                     : 7)                      \
                       : 7))
/* Flags of a compare-exchange: prelude, weak when known, failure order. */
#define __NANO_CAS_FLAGS(w, f)                                                 \
  ((unsigned char)(__NANO_F_PRELUDE |                                          \
                   ((__builtin_constant_p((int)(w)) && (w)) ? __NANO_F_WEAK    \
                                                            : 0) |             \
                   (__NANO_ORDER(f) << 4)))
/* min/max kinds by the signedness of the object's type (clang builtins). */
#define __NANO_SIGNED(p) ((__typeof__(*(p) + 0))-1 < (__typeof__(*(p) + 0))0)

/* Declares this expansion's site and calls the hook with it. Each site has
 * a name of its own (__COUNTER__): builtins nested in another's arguments
 * (uatomic_store(&x, uatomic_load(&y))) must not shadow it (-Wshadow). */
#define __NANO_CAT_(a, b) a##b
#define __NANO_CAT(a, b) __NANO_CAT_(a, b)
#define __NANO_HOOK(kind, order, flags, size)                                  \
  __NANO_HOOK_AT(__NANO_CAT(__nano_site_, __COUNTER__), kind, order, flags,    \
                 size)
#define __NANO_HOOK_AT(site, kind, order, flags, size)                         \
  static struct __nano_prelude_site site = {0u,                                \
                                            (unsigned short)(kind),            \
                                            (order),                           \
                                            (unsigned char)(flags),            \
                                            (unsigned int)(size),              \
                                            (unsigned int)__LINE__,            \
                                            0u,                                \
                                            0u,                                \
                                            __func__,                          \
                                            __FILE__,                          \
                                            (void *)0};                        \
  if (__nano_prelude_hook)                                                     \
    __nano_prelude_hook(&site);

/* Builtins (p, v, o) and (p, o) shapes. */
#define __NANO_RMW(kind, builtin, p, v, o)                                     \
  __extension__({                                                              \
    __NANO_HOOK(kind, __NANO_ORDER(o), __NANO_F_PRELUDE, sizeof(*(p)))         \
    builtin(p, v, o);                                                          \
  })

/* ---- GCC __atomic builtins -------------------------------------------- */

#define __atomic_load_n(p, o)                                                  \
  __extension__({                                                              \
    __NANO_HOOK(__NANO_K_LOAD, __NANO_ORDER(o), __NANO_F_PRELUDE,              \
                sizeof(*(p)))                                                  \
    __atomic_load_n(p, o);                                                     \
  })
#define __atomic_load(p, r, o)                                                 \
  __extension__({                                                              \
    __NANO_HOOK(__NANO_K_LOAD, __NANO_ORDER(o), __NANO_F_PRELUDE,              \
                sizeof(*(p)))                                                  \
    __atomic_load(p, r, o);                                                    \
  })
#define __atomic_store_n(p, v, o)                                              \
  __NANO_RMW(__NANO_K_STORE, __atomic_store_n, p, v, o)
#define __atomic_store(p, v, o)                                                \
  __NANO_RMW(__NANO_K_STORE, __atomic_store, p, v, o)
#define __atomic_exchange_n(p, v, o)                                           \
  __NANO_RMW(__NANO_K_EXCHANGE, __atomic_exchange_n, p, v, o)
#define __atomic_exchange(p, v, r, o)                                          \
  __extension__({                                                              \
    __NANO_HOOK(__NANO_K_EXCHANGE, __NANO_ORDER(o), __NANO_F_PRELUDE,          \
                sizeof(*(p)))                                                  \
    __atomic_exchange(p, v, r, o);                                             \
  })
#define __atomic_compare_exchange_n(p, e, d, w, s, f)                          \
  __extension__({                                                              \
    __NANO_HOOK(__NANO_K_CMPXCHG, __NANO_ORDER(s), __NANO_CAS_FLAGS(w, f),     \
                sizeof(*(p)))                                                  \
    __atomic_compare_exchange_n(p, e, d, w, s, f);                             \
  })
#define __atomic_compare_exchange(p, e, d, w, s, f)                            \
  __extension__({                                                              \
    __NANO_HOOK(__NANO_K_CMPXCHG, __NANO_ORDER(s), __NANO_CAS_FLAGS(w, f),     \
                sizeof(*(p)))                                                  \
    __atomic_compare_exchange(p, e, d, w, s, f);                               \
  })
#define __atomic_fetch_add(p, v, o)                                            \
  __NANO_RMW(__NANO_K_ADD, __atomic_fetch_add, p, v, o)
#define __atomic_fetch_sub(p, v, o)                                            \
  __NANO_RMW(__NANO_K_SUB, __atomic_fetch_sub, p, v, o)
#define __atomic_fetch_and(p, v, o)                                            \
  __NANO_RMW(__NANO_K_AND, __atomic_fetch_and, p, v, o)
#define __atomic_fetch_nand(p, v, o)                                           \
  __NANO_RMW(__NANO_K_NAND, __atomic_fetch_nand, p, v, o)
#define __atomic_fetch_or(p, v, o)                                             \
  __NANO_RMW(__NANO_K_OR, __atomic_fetch_or, p, v, o)
#define __atomic_fetch_xor(p, v, o)                                            \
  __NANO_RMW(__NANO_K_XOR, __atomic_fetch_xor, p, v, o)
#define __atomic_add_fetch(p, v, o)                                            \
  __NANO_RMW(__NANO_K_ADD, __atomic_add_fetch, p, v, o)
#define __atomic_sub_fetch(p, v, o)                                            \
  __NANO_RMW(__NANO_K_SUB, __atomic_sub_fetch, p, v, o)
#define __atomic_and_fetch(p, v, o)                                            \
  __NANO_RMW(__NANO_K_AND, __atomic_and_fetch, p, v, o)
#define __atomic_nand_fetch(p, v, o)                                           \
  __NANO_RMW(__NANO_K_NAND, __atomic_nand_fetch, p, v, o)
#define __atomic_or_fetch(p, v, o)                                             \
  __NANO_RMW(__NANO_K_OR, __atomic_or_fetch, p, v, o)
#define __atomic_xor_fetch(p, v, o)                                            \
  __NANO_RMW(__NANO_K_XOR, __atomic_xor_fetch, p, v, o)
#define __atomic_test_and_set(p, o)                                            \
  __extension__({                                                              \
    __NANO_HOOK(__NANO_K_TAS, __NANO_ORDER(o), __NANO_F_PRELUDE, 1)            \
    __atomic_test_and_set(p, o);                                               \
  })
#define __atomic_clear(p, o)                                                   \
  __extension__({                                                              \
    __NANO_HOOK(__NANO_K_CLEAR, __NANO_ORDER(o), __NANO_F_PRELUDE, 1)          \
    __atomic_clear(p, o);                                                      \
  })
#define __atomic_thread_fence(o)                                               \
  __extension__({                                                              \
    __NANO_HOOK(__NANO_K_THREAD_FENCE, __NANO_ORDER(o), __NANO_F_PRELUDE, 0)   \
    __atomic_thread_fence(o);                                                  \
  })
#define __atomic_signal_fence(o)                                               \
  __extension__({                                                              \
    __NANO_HOOK(__NANO_K_SIGNAL_FENCE, __NANO_ORDER(o), __NANO_F_PRELUDE, 0)   \
    __atomic_signal_fence(o);                                                  \
  })

/* ---- legacy __sync builtins (all sequentially consistent) -------------- */

#define __NANO_SYNC(kind, order, builtin, p, ...)                              \
  __extension__({                                                              \
    __NANO_HOOK(kind, (unsigned char)(order), __NANO_F_PRELUDE, sizeof(*(p)))  \
    builtin(p, __VA_ARGS__);                                                   \
  })
#define __sync_fetch_and_add(p, ...)                                           \
  __NANO_SYNC(__NANO_K_ADD, 5, __sync_fetch_and_add, p, __VA_ARGS__)
#define __sync_fetch_and_sub(p, ...)                                           \
  __NANO_SYNC(__NANO_K_SUB, 5, __sync_fetch_and_sub, p, __VA_ARGS__)
#define __sync_fetch_and_or(p, ...)                                            \
  __NANO_SYNC(__NANO_K_OR, 5, __sync_fetch_and_or, p, __VA_ARGS__)
#define __sync_fetch_and_and(p, ...)                                           \
  __NANO_SYNC(__NANO_K_AND, 5, __sync_fetch_and_and, p, __VA_ARGS__)
#define __sync_fetch_and_xor(p, ...)                                           \
  __NANO_SYNC(__NANO_K_XOR, 5, __sync_fetch_and_xor, p, __VA_ARGS__)
#define __sync_fetch_and_nand(p, ...)                                          \
  __NANO_SYNC(__NANO_K_NAND, 5, __sync_fetch_and_nand, p, __VA_ARGS__)
#define __sync_add_and_fetch(p, ...)                                           \
  __NANO_SYNC(__NANO_K_ADD, 5, __sync_add_and_fetch, p, __VA_ARGS__)
#define __sync_sub_and_fetch(p, ...)                                           \
  __NANO_SYNC(__NANO_K_SUB, 5, __sync_sub_and_fetch, p, __VA_ARGS__)
#define __sync_or_and_fetch(p, ...)                                            \
  __NANO_SYNC(__NANO_K_OR, 5, __sync_or_and_fetch, p, __VA_ARGS__)
#define __sync_and_and_fetch(p, ...)                                           \
  __NANO_SYNC(__NANO_K_AND, 5, __sync_and_and_fetch, p, __VA_ARGS__)
#define __sync_xor_and_fetch(p, ...)                                           \
  __NANO_SYNC(__NANO_K_XOR, 5, __sync_xor_and_fetch, p, __VA_ARGS__)
#define __sync_nand_and_fetch(p, ...)                                          \
  __NANO_SYNC(__NANO_K_NAND, 5, __sync_nand_and_fetch, p, __VA_ARGS__)
#define __sync_bool_compare_and_swap(p, ...)                                   \
  __NANO_SYNC(__NANO_K_CMPXCHG, 5, __sync_bool_compare_and_swap, p, __VA_ARGS__)
#define __sync_val_compare_and_swap(p, ...)                                    \
  __NANO_SYNC(__NANO_K_CMPXCHG, 5, __sync_val_compare_and_swap, p, __VA_ARGS__)
#define __sync_lock_test_and_set(p, ...)                                       \
  __NANO_SYNC(__NANO_K_EXCHANGE, 2, __sync_lock_test_and_set, p, __VA_ARGS__)
#define __sync_lock_release(...)                                               \
  __extension__({                                                              \
    __NANO_HOOK(__NANO_K_STORE, 3, __NANO_F_PRELUDE,                           \
                sizeof(*(__NANO_FIRST(__VA_ARGS__, 0))))                       \
    __sync_lock_release(__VA_ARGS__);                                          \
  })
#define __NANO_FIRST(a, ...) a
#define __sync_synchronize()                                                   \
  __extension__({                                                              \
    __NANO_HOOK(__NANO_K_THREAD_FENCE, 5, __NANO_F_PRELUDE, 0)                 \
    __sync_synchronize();                                                      \
  })

/* ---- clang-only builtins: min/max and the __c11_atomic family ---------- */

#ifdef __clang__
#define __NANO_MINMAX(smax, umax, builtin, p, v, o)                            \
  __extension__({                                                              \
    __NANO_HOOK(__NANO_SIGNED(p) ? (smax) : (umax), __NANO_ORDER(o),           \
                __NANO_F_PRELUDE, sizeof(*(p)))                                \
    builtin(p, v, o);                                                          \
  })
#define __atomic_fetch_max(p, v, o)                                            \
  __NANO_MINMAX(__NANO_K_MAX, __NANO_K_UMAX, __atomic_fetch_max, p, v, o)
#define __atomic_fetch_min(p, v, o)                                            \
  __NANO_MINMAX(__NANO_K_MIN, __NANO_K_UMIN, __atomic_fetch_min, p, v, o)
#define __atomic_max_fetch(p, v, o)                                            \
  __NANO_MINMAX(__NANO_K_MAX, __NANO_K_UMAX, __atomic_max_fetch, p, v, o)
#define __atomic_min_fetch(p, v, o)                                            \
  __NANO_MINMAX(__NANO_K_MIN, __NANO_K_UMIN, __atomic_min_fetch, p, v, o)

#define __c11_atomic_load(p, o)                                                \
  __extension__({                                                              \
    __NANO_HOOK(__NANO_K_LOAD, __NANO_ORDER(o), __NANO_F_PRELUDE,              \
                sizeof(*(p)))                                                  \
    __c11_atomic_load(p, o);                                                   \
  })
#define __c11_atomic_store(p, v, o)                                            \
  __NANO_RMW(__NANO_K_STORE, __c11_atomic_store, p, v, o)
#define __c11_atomic_exchange(p, v, o)                                         \
  __NANO_RMW(__NANO_K_EXCHANGE, __c11_atomic_exchange, p, v, o)
#define __c11_atomic_compare_exchange_strong(p, e, d, s, f)                    \
  __extension__({                                                              \
    __NANO_HOOK(__NANO_K_CMPXCHG, __NANO_ORDER(s), __NANO_CAS_FLAGS(0, f),     \
                sizeof(*(p)))                                                  \
    __c11_atomic_compare_exchange_strong(p, e, d, s, f);                       \
  })
#define __c11_atomic_compare_exchange_weak(p, e, d, s, f)                      \
  __extension__({                                                              \
    __NANO_HOOK(__NANO_K_CMPXCHG, __NANO_ORDER(s), __NANO_CAS_FLAGS(1, f),     \
                sizeof(*(p)))                                                  \
    __c11_atomic_compare_exchange_weak(p, e, d, s, f);                         \
  })
#define __c11_atomic_fetch_add(p, v, o)                                        \
  __NANO_RMW(__NANO_K_ADD, __c11_atomic_fetch_add, p, v, o)
#define __c11_atomic_fetch_sub(p, v, o)                                        \
  __NANO_RMW(__NANO_K_SUB, __c11_atomic_fetch_sub, p, v, o)
#define __c11_atomic_fetch_and(p, v, o)                                        \
  __NANO_RMW(__NANO_K_AND, __c11_atomic_fetch_and, p, v, o)
#define __c11_atomic_fetch_nand(p, v, o)                                       \
  __NANO_RMW(__NANO_K_NAND, __c11_atomic_fetch_nand, p, v, o)
#define __c11_atomic_fetch_or(p, v, o)                                         \
  __NANO_RMW(__NANO_K_OR, __c11_atomic_fetch_or, p, v, o)
#define __c11_atomic_fetch_xor(p, v, o)                                        \
  __NANO_RMW(__NANO_K_XOR, __c11_atomic_fetch_xor, p, v, o)
#define __c11_atomic_fetch_max(p, v, o)                                        \
  __NANO_MINMAX(__NANO_K_MAX, __NANO_K_UMAX, __c11_atomic_fetch_max, p, v, o)
#define __c11_atomic_fetch_min(p, v, o)                                        \
  __NANO_MINMAX(__NANO_K_MIN, __NANO_K_UMIN, __c11_atomic_fetch_min, p, v, o)
#define __c11_atomic_thread_fence(o)                                           \
  __extension__({                                                              \
    __NANO_HOOK(__NANO_K_THREAD_FENCE, __NANO_ORDER(o), __NANO_F_PRELUDE, 0)   \
    __c11_atomic_thread_fence(o);                                              \
  })
#define __c11_atomic_signal_fence(o)                                           \
  __extension__({                                                              \
    __NANO_HOOK(__NANO_K_SIGNAL_FENCE, __NANO_ORDER(o), __NANO_F_PRELUDE, 0)   \
    __c11_atomic_signal_fence(o);                                              \
  })
#endif /* __clang__ */

#endif /* NANO_PRELUDE_H */
