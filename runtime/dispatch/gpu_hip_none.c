/*
 * gpu_hip_none.c: the HIP API of gpu.h where libnano_rpd.so is built without
 * HIP's headers: HIP kernels run uninstrumented, said once.
 */
#include <stdio.h>

#include "gpu.h"

static int hip_none_load(char *why, size_t len) {
  snprintf(why, len, "nanoprobe was built without HIP's headers");
  return -1;
}

const struct gpu_api gpu_hip_api = {"hip", "libamdhip64.so", hip_none_load};
