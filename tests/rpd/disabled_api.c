/*
 * disabled_api.c: every call of rpd.h under -DNANO_DISABLE, written as
 * programs write them, must compile without a warning under -Wall -Wextra
 * -Werror with gcc, g++ and clang (a bare `rpdstart();`, a variable used only
 * as a range's name), and link without libnano_rpd (nothing is left behind).
 */
#include <string.h>

#include "rpd.h"

int main(int argc, char **argv) {
  const char *range = argc > 1 ? argv[1] : "range"; /* used only by disabled calls */
  const char *name = argc > 2 ? argv[2] : "kernel";
  int64_t t = rpd_now();
  rpd_set_filename("x.rpd", 0);
  rpdstart();
  rpd_name_thread(0, "main");
  rpd_rangePush(NULL, range, NULL);
  rpd_mark("domain", range, "args");
  rpd_rangePushInterned(rpd_intern("d"), rpd_intern("n"), 0);
  rpd_rangePop();
  rpd_rangePop();
  uint64_t api = rpd_record_api("hip", "", "hipLaunchKernel", "", t, t + 1);
  struct rpd_kernel_launch launch;
  memset(&launch, 0, sizeof launch);
  launch.kernelName = name;
  rpd_record_kernelapi(api, &launch);
  struct rpd_copy copy;
  memset(&copy, 0, sizeof copy);
  rpd_record_copyapi(api, &copy);
  rpd_record_op(api, 0, 0, t, t + 1, "k", "KernelExecution");
  rpd_record_monitor("gpu", 0, "sclk", t, t + 1, "1500");
  {
    NANO_ZONE("zone");
  }
  int count;
  char path[16];
  rpd_status(&count, path, sizeof path);
  rpdflush();
  rpdstop_nowait();
  return rpdstop();
}
