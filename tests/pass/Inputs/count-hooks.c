/* A minimal stand-in for the runtime, for weak-hooks.test: counts hook calls
 * per kind and checks every site against the module it was registered with.
 * Prints one summary line at exit. */
#include <stdio.h>
#include <string.h>

#include "nano/atomics.h"

static unsigned long hooks_calls[NANO_KIND_COUNT];
static unsigned long hooks_bad;
static unsigned hooks_modules, hooks_sites;
static const char *hooks_name = "";

void __nano_register_module(struct nano_site_module *m) {
  hooks_modules++;
  hooks_name = m->name;
  for (unsigned i = 0; i < m->count; i++) {
    if (m->sites[i].module != m || m->sites[i].id != 0)
      hooks_bad++;
    m->sites[i].id = ++hooks_sites;
  }
}

void __nano_atomic(struct nano_site *s) {
  if (s->kind >= NANO_KIND_COUNT || s->id == 0 || s->function == NULL || s->file == NULL)
    hooks_bad++;
  else
    hooks_calls[s->kind]++;
}

__attribute__((destructor)) static void hooks_report(void) {
  fprintf(stderr, "hooks: modules=%u sites=%u name=%s bad=%lu fetch_add=%lu load=%lu cas=%lu\n",
          hooks_modules, hooks_sites, strrchr(hooks_name, '/') ? strrchr(hooks_name, '/') + 1 : hooks_name,
          hooks_bad, hooks_calls[NANO_KIND_FETCH_ADD], hooks_calls[NANO_KIND_LOAD],
          hooks_calls[NANO_KIND_COMPARE_EXCHANGE]);
}
