// baseline_tracker.cpp: a tracker built the way the original PyTorch tool's
// is (tools/cpp_nano_regression/tracker.cpp: a global
// unordered_map<string, int> keyed by the builtin's name, incremented per
// event), behind nanoprobe's hook ABI so that it runs the same binary as
// libnano_tracker.so. The original is not thread-safe; a mutex makes it so,
// as it must be for the 2-thread figure. Benchmark use only.
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>

#include "nano/atomics.h"

static std::unordered_map<std::string, int> events;
static std::mutex events_lock;

extern "C" void __nano_atomic(struct nano_site *site) {
  std::lock_guard<std::mutex> g(events_lock);
  ++events[std::string(nano_kind_name(site->kind))];
}

extern "C" void __nano_register_module(struct nano_site_module *) {}

namespace {
struct Finalizer {
  ~Finalizer() {
    std::fprintf(stderr, "NANO TRACKER {\n");
    for (const auto &it : events)
      std::fprintf(stderr, "  %s: %d\n", it.first.c_str(), it.second);
    std::fprintf(stderr, "}\n");
  }
} finalizer;
} // namespace
