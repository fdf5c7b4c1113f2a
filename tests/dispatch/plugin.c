/*
 * Analyzer plugins for the tests, one source built three ways:
 *   (default)          a good plugin: counts records and lanes per dispatch
 *                      and sums their addresses (reading addr[] as a plugin
 *                      that knows nothing of compact records does),
 *                      claims records of its kernel's first site when asked
 *                      (option claim), reports one JSON line and stores it;
 *   -DPLUGIN_ABI=99    the same with another ABI version (refused);
 *   -DPLUGIN_ABI=1     the same as an ABI 1 plugin (loads, takes records);
 *   -DPLUGIN_SUMS      a plugin served by per-site sums (ABI 2,
 *                      NANO_HANDLER_SITE_COUNTS): reports where they were
 *                      made and their executions, or the records it got;
 *   -DPLUGIN_NO_CREATE without nano_handler_create (refused).
 * It needs nothing of nanoprobe at link time, as any plugin.
 */
#include "nano/handler.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#ifndef PLUGIN_ABI
#define PLUGIN_ABI NANO_HANDLER_ABI
#endif

uint32_t nano_handler_abi(void) { return PLUGIN_ABI; }

#ifndef PLUGIN_NO_CREATE
struct counter {
  struct nano_handler h;
  const struct nano_dispatch_info *info;
  uint64_t records, lanes, addr_sum;
  int claim;
  const char *where; /* PLUGIN_SUMS: "device" when served by sums */
  uint64_t executions;
};

#ifdef PLUGIN_SUMS
static void counter_sums(struct nano_handler *h, const struct nano_aggregates *a) {
  struct counter *c = (struct counter *)h;
  c->where = a->where;
  for (size_t i = 0; i < a->nsites; i++)
    c->executions += a->sites[i].executions;
}
#define COUNTER_SUMS counter_sums
#else
#define COUNTER_SUMS NULL
#endif

static int counter_handle(struct nano_handler *h, const struct nano_dh_record *r) {
  struct counter *c = (struct counter *)h;
  c->records++;
  c->lanes += r->lanes;
  for (unsigned i = 0; i < r->lanes; i++)
    c->addr_sum += r->addr[i];
  return c->claim ? NANO_RECORD_CONSUMED : NANO_RECORD_PASS;
}

static void counter_report(struct nano_handler *h) {
  struct counter *c = (struct counter *)h;
  char json[256];
  if (c->where)
    snprintf(json, sizeof json,
             "{\"analyzer\":\"RecordCounter\",\"dispatch\":%" PRIu64 ",\"where\":\"%s\","
             "\"executions\":%" PRIu64 "}",
             c->info->dispatch_id, c->where, c->executions);
  else
    snprintf(json, sizeof json,
             "{\"analyzer\":\"RecordCounter\",\"dispatch\":%" PRIu64 ",\"records\":%" PRIu64
             ",\"lanes\":%" PRIu64 ",\"addr_sum\":%" PRIu64 "}",
             c->info->dispatch_id, c->records, c->lanes, c->addr_sum);
  fprintf(c->info->out, "%s\n", json);
  c->info->store(c->info, "RecordCounter", json);
}

static void counter_clear(struct nano_handler *h) {
  struct counter *c = (struct counter *)h;
  c->records = c->lanes = c->addr_sum = 0;
}

static void counter_destroy(struct nano_handler *h) { free(h); }

static const struct nano_handler_ops counter_ops = {counter_handle, counter_report, counter_clear,
                                                    counter_destroy, COUNTER_SUMS};

struct nano_handler *nano_handler_create(const struct nano_dispatch_info *info) {
  struct counter *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  c->h.ops = &counter_ops;
  c->h.name = "RecordCounter";
#ifdef PLUGIN_SUMS
  c->h.flags = NANO_HANDLER_PASS_THROUGH | NANO_HANDLER_SITE_COUNTS;
#endif
  c->info = info;
  c->claim = strstr(info->options, "claim") != NULL;
  return &c->h;
}
#endif
