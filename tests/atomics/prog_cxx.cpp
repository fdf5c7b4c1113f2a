// prog_cxx.cpp: end-to-end program, C++ (std::atomic, std::shared_ptr,
// std::mutex, std::thread). Usage: prog_cxx THREADS ITERS MIX, like
// prog_c11.c. Per mixed round: std::atomic: fetch_add, ++ (a fetch_add),
// load, store, exchange, compare_exchange_strong; a shared_ptr copy and its
// destruction while other owners live (libstdc++ 12: one fetch_add to take
// the reference; to drop it, one load of both counts and one fetch_add);
// a std::mutex lock/unlock (no atomics in the program: pthread does them).
// So per round: fetch_add 4, load 2, store 1, exchange 1, compare_exchange 1.
// Per thread: copying the shared_ptr into the thread (fetch_add) and
// dropping it at the end of worker (load, fetch_add). main: two loads for
// the output and one for destroying the last owner. main first runs an empty
// thread, so that libstdc++ (which skips atomics while a process has one
// thread) takes the atomic path from the start.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

static std::atomic<long> hot{0};
static std::atomic<long> mixed{0};
static std::mutex lock;
static long guarded = 0;

static void worker(long iters, long mix, std::shared_ptr<long> shared) {
  for (long i = 0; i < iters; i++)
    hot.fetch_add(1, std::memory_order_relaxed); // HOT
  for (long i = 0; i < mix; i++) {
    mixed.fetch_add(2);
    ++mixed;
    long v = mixed.load(std::memory_order_acquire);
    long expected = v;
    std::atomic<long> local{v};
    local.store(v + 1, std::memory_order_release);
    local.exchange(v);
    local.compare_exchange_strong(expected, v + 2);
    {
      std::shared_ptr<long> copy = shared;
      if (*copy != 42)
        std::abort();
    }
    std::lock_guard<std::mutex> g(lock);
    guarded++;
  }
}

int main(int argc, char **argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s THREADS ITERS MIX\n", argv[0]);
    return 2;
  }
  int threads = std::atoi(argv[1]);
  long iters = std::atol(argv[2]), mix = std::atol(argv[3]);
  std::thread([] {}).join();
  std::vector<std::thread> pool;
  {
    auto shared = std::make_shared<long>(42);
    for (int i = 0; i < threads; i++)
      pool.emplace_back(worker, iters, mix, shared);
    for (auto &t : pool)
      t.join();
  }
  std::printf("hot=%ld mixed=%ld guarded=%ld\n", hot.load(std::memory_order_relaxed),
              mixed.load(std::memory_order_relaxed), guarded);
  return 0;
}
