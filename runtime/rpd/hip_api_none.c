/*
 * hip_api_none.c: hip_api.h where nanoprobe is built without HIP's headers:
 * no HIP API calls are recorded, GPU work is linked to its own rows.
 */
#include <stddef.h>

#include "hip_api.h"

void rpd_hip_api_start(void) {}
struct rpd_hip_call *rpd_hip_call_current(void) {
  return NULL;
}
uint64_t rpd_hip_call_api(struct rpd_hip_call *c) {
  (void)c;
  return 0;
}
void rpd_hip_call_link(struct rpd_hip_call *c, void (*record)(uint64_t api, void *arg), void *arg) {
  (void)c;
  record(0, arg);
}
