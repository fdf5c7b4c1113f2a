/*
 * hip_api.h: the HIP API calls of programs not built with anything of ours
 * (hip_api.c), and the link from the GPU work a call submits to its row.
 */
#ifndef NANO_RPD_HIP_API_H
#define NANO_RPD_HIP_API_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rpd_hip_call;

/* Registers for the HIP runtime's API callbacks, once; nothing when the
 * process has no HIP runtime. */
void rpd_hip_api_start(void);
/* The HIP call the calling thread is in (a reference), or NULL. */
struct rpd_hip_call *rpd_hip_call_current(void);
/* The call's row, 0 while it runs (or when it is not recorded). */
uint64_t rpd_hip_call_api(struct rpd_hip_call *c);
/* Calls record(the call's row, arg) once the row exists: now, or when the
 * call returns; gives the reference back. */
void rpd_hip_call_link(struct rpd_hip_call *c, void (*record)(uint64_t api, void *arg), void *arg);

#ifdef __cplusplus
}
#endif

#endif
