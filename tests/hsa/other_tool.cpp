/*
 * other_tool.cpp: another HSA tool in HSA_TOOLS_LIB beside nanoprobe's
 * (issue 38 part 6): it wraps hsa_queue_create through the same table and
 * says at OnUnload how many queues it saw, so a test can tell that both
 * tools loaded and both saw the program's calls.
 */
#include <stdio.h>

#define AMD_INTERNAL_BUILD
#include "hsa/hsa_api_trace.h"

static decltype(hsa_queue_create) *next_create;
static int queues;

static hsa_status_t counted_create(hsa_agent_t a, uint32_t n, hsa_queue_type32_t t,
                                   void (*cb)(hsa_status_t, hsa_queue_t *, void *), void *d,
                                   uint32_t p, uint32_t g, hsa_queue_t **q) {
  queues++;
  return next_create(a, n, t, cb, d, p, g, q);
}

extern "C" __attribute__((visibility("default"))) bool OnLoad(HsaApiTable *table, uint64_t,
                                                              uint64_t, const char *const *) {
  next_create = table->core_->hsa_queue_create_fn;
  table->core_->hsa_queue_create_fn = counted_create;
  return true;
}

extern "C" __attribute__((visibility("default"))) void OnUnload(void) {
  fprintf(stderr, "other tool: %d queues\n", queues);
}
