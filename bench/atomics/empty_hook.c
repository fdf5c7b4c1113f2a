/* empty_hook.c: hooks that do nothing. Preloaded into the plugin-built
 * benchmark it measures the floor of any runtime that is called once per
 * atomic: the call itself. Benchmark use only. */
#include "nano/atomics.h"

__attribute__((visibility("default"))) void __nano_atomic(struct nano_site *site) { (void)site; }

__attribute__((visibility("default"))) void __nano_register_module(struct nano_site_module *m) {
  (void)m;
}
