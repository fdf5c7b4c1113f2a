#!/usr/bin/env bash
# compile_check.sh COMPILER LANG HEADER PRELUDE: compiles a small use of
# HEADER (C or C++) with the prelude force-included, -Wall -Wextra -Wshadow
# -Werror, under the language standards below. Fails on any warning.
# HEADER "nested" is no header: builtins nested in each other's arguments,
# as userspace-rcu writes them (uatomic_store(&x, uatomic_load(&y))).
set -euo pipefail
cc=$1 lang=$2 header=$3 prelude=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
src=$dir/use.$([ "$lang" = c ] && echo c || echo cpp)
[ "$header" = nested ] && echo "#include <stdint.h>" > "$src" || echo "#include <$header>" > "$src"
case $header in
  nested) cat >> "$src" <<'E'
long x, y, z;
long use(void) {
  __atomic_store_n(&x, __atomic_load_n(&y, __ATOMIC_RELAXED), __ATOMIC_RELEASE);
  __atomic_store_n(&x, __atomic_fetch_add(&y, __atomic_load_n(&z, __ATOMIC_ACQUIRE),
                                          __ATOMIC_RELAXED), __ATOMIC_RELAXED);
  long e = __atomic_load_n(&x, __ATOMIC_RELAXED);
  __atomic_compare_exchange_n(&x, &e, __atomic_exchange_n(&y, __atomic_load_n(&z, 0), 0), 0,
                              __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
  return __sync_fetch_and_add(&z, __sync_add_and_fetch(&y, __atomic_load_n(&x, 0)));
}
E
  ;;
  stdatomic.h) cat >> "$src" <<'E'
atomic_int n; atomic_flag f = ATOMIC_FLAG_INIT;
int use(void) { int e = 0; atomic_fetch_add(&n, 1); atomic_compare_exchange_weak(&n, &e, 2);
  atomic_flag_test_and_set(&f); atomic_flag_clear(&f); atomic_thread_fence(memory_order_acquire);
  atomic_signal_fence(memory_order_release); atomic_store_explicit(&n, 3, memory_order_release);
  _Static_assert(__atomic_always_lock_free(sizeof(int), 0), "lock-free");
  return atomic_load(&n) + atomic_exchange(&n, 0) + atomic_is_lock_free(&n); }
E
  ;;
  atomic) cat >> "$src" <<'E'
static_assert(std::atomic<long>::is_always_lock_free, "lock-free");
int use() { std::atomic<int> a{0}; std::atomic<double> d{0}; std::atomic<int *> p{nullptr};
  std::atomic_flag f = ATOMIC_FLAG_INIT; int e = 0; a.compare_exchange_weak(e, 1); d.store(1.5);
  p.fetch_add(1); f.test_and_set(); f.clear(); std::atomic_thread_fence(std::memory_order_seq_cst);
  return a++ + a.exchange(3) + (int)d.load() + a.is_lock_free(); }
E
  ;;
  memory) cat >> "$src" <<'E'
int use() { auto p = std::make_shared<int>(1); std::weak_ptr<int> w = p; auto q = w.lock();
  std::shared_ptr<int> r = std::atomic_load(&p); return *q + *r + (int)p.use_count(); }
E
  ;;
  thread) echo 'int use() { int x = 0; std::thread t([&] { x = 1; }); t.join(); return x; }' >> "$src" ;;
  mutex) cat >> "$src" <<'E'
std::mutex m; std::once_flag once; std::recursive_mutex rm;
int use() { int x = 0; std::call_once(once, [&] { x = 1; }); std::lock_guard<std::mutex> g(m);
  std::unique_lock<std::recursive_mutex> l(rm); return x; }
E
  ;;
  shared_mutex) cat >> "$src" <<'E'
std::shared_mutex m;
int use() { std::shared_lock<std::shared_mutex> l(m); return 1; }
E
  ;;
  future) cat >> "$src" <<'E'
int use() { std::promise<int> p; auto f = p.get_future(); p.set_value(3);
  auto g = std::async(std::launch::async, [] { return 4; }); return f.get() + g.get(); }
E
  ;;
  condition_variable) cat >> "$src" <<'E'
std::mutex m; std::condition_variable cv; bool ready;
int use() { std::unique_lock<std::mutex> l(m); cv.notify_all(); cv.wait(l, [] { return true; });
  return ready; }
E
  ;;
  *) echo "compile_check.sh: no use of <$header>" >&2; exit 2 ;;
esac
# C++20 changes what <atomic>, <memory> and <future> use; the other headers
# are checked in C++17 only, to keep the suite fast.
case $lang:$header in
  c:*) stds="c11 gnu17" ;;
  *:atomic|*:memory|*:future) stds="c++17 c++20" ;;
  *) stds="c++17" ;;
esac
for std in $stds; do
  "$cc" -std="$std" -Wall -Wextra -Wshadow -Werror -O0 --include="$prelude" -c "$src" -o "$dir/use.o"
  # The prelude really is in effect: the object calls the hook (the uses of
  # <thread>, <mutex>, <shared_mutex>, <condition_variable> inline no atomic:
  # libstdc++ calls pthread there).
  case $header in
    stdatomic.h|atomic|memory|future|nested)
      nm "$dir/use.o" | grep -q '__nano_atomic' || { echo "no hook call with -std=$std" >&2; exit 1; } ;;
  esac
done
echo "compile_check: <$header> with $cc ($stds): clean"
