// userobjects.cu: not a checked sample but a question for the GPU session
// (session.sh: userobjects.txt), which decides whether graph nodes' buffers
// may be freed when their graphs go (issue 41, runtime/dispatch/README.md):
// does a graph's user object reference survive cudaGraphClone, embedding
// into a child graph node, and instantiation, so that its destructor runs
// only once nothing that can still launch holds it? Prints one line per
// question with what CUDA did.
#include "common.h"

#include <atomic>
#include <chrono>
#include <thread>

static std::atomic<int> destroyed[2];

static void gone(void *which) { destroyed[(long)which].fetch_add(1); }

// A graph with one empty node and a reference to a new user object `which`.
static cudaGraph_t graph_holding(long which) {
  cudaGraph_t g;
  cudaGraphNode_t n;
  cudaUserObject_t o;
  CHECK(cudaGraphCreate(&g, 0));
  CHECK(cudaGraphAddEmptyNode(&n, g, nullptr, 0));
  CHECK(cudaUserObjectCreate(&o, (void *)which, gone, 1, cudaUserObjectNoDestructorSync));
  CHECK(cudaGraphRetainUserObject(g, o, 1, cudaGraphUserObjectMove));
  return g;
}

// Whether object `which`'s destructor ran (it may run on another thread a
// little later: waited for up to a second).
static const char *ran(long which) {
  for (int i = 0; i < 100 && !destroyed[which].load(); i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return destroyed[which].load() ? "yes" : "no";
}

int main() {
  CHECK(cudaFree(nullptr)); // a context
  // 1. clone, then destroy the original: does the clone keep the object?
  cudaGraph_t g = graph_holding(0), clone;
  CHECK(cudaGraphClone(&clone, g));
  CHECK(cudaGraphDestroy(g));
  std::printf("destructor ran after the original's destroy, its clone alive: %s\n", ran(0));
  CHECK(cudaGraphDestroy(clone));
  std::printf("destructor ran after the clone's destroy too: %s\n", ran(0));
  // 2. embed as a child graph node, destroy the original child, then
  // instantiate the parent, destroy it, then the executable
  cudaGraph_t child = graph_holding(1), parent;
  cudaGraphNode_t node;
  cudaGraphExec_t exec;
  CHECK(cudaGraphCreate(&parent, 0));
  CHECK(cudaGraphAddChildGraphNode(&node, parent, nullptr, 0, child));
  CHECK(cudaGraphDestroy(child));
  std::printf("destructor ran after the child's destroy, embedded in a parent: %s\n", ran(1));
  CHECK(cudaGraphInstantiate(&exec, parent, 0));
  CHECK(cudaGraphDestroy(parent));
  std::printf("destructor ran after the parent's destroy, its executable alive: %s\n", ran(1));
  CHECK(cudaGraphExecDestroy(exec));
  std::printf("destructor ran after the executable's destroy: %s\n", ran(1));
  std::printf("userobjects ok rc 0\n");
  return 0;
}
