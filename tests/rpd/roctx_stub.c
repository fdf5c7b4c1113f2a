/*
 * roctx_stub.c: a stand-in for ROCm's libroctx64.so (no ROCm here), so that
 * roctx_app links the way a real roctx-instrumented application does. Every
 * function does nothing; libnano_rpd.so, preloaded, takes their place.
 */
#include <stdint.h>

int roctxRangePushA(const char *message) { (void)message; return 0; }
int roctxRangePop(void) { return 0; }
void roctxMarkA(const char *message) { (void)message; }
uint64_t roctxRangeStartA(const char *message) { (void)message; return 1; }
void roctxRangeStop(uint64_t id) { (void)id; }
