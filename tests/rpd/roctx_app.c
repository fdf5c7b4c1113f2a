/*
 * roctx_app.c: an application instrumented with roctx and linked against
 * libroctx64 only (never against nanoprobe). Recorded by preloading
 * libnano_rpd.so. Prints the levels roctx returned.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

int roctxRangePushA(const char *message);
int roctxRangePop(void);
void roctxMarkA(const char *message);
uint64_t roctxRangeStartA(const char *message);
void roctxRangeStop(uint64_t id);

static uint64_t g_cross;

static void *other(void *arg) {
  (void)arg;
  roctxRangeStop(g_cross); /* a start/stop range may end on another thread */
  return NULL;
}

int main(void) {
  int l0 = roctxRangePushA("roctx-outer");
  int l1 = roctxRangePushA("roctx-inner");
  roctxMarkA("roctx-mark");
  int p1 = roctxRangePop();
  int p0 = roctxRangePop();
  g_cross = roctxRangeStartA("roctx-cross");
  pthread_t t;
  if (pthread_create(&t, NULL, other, NULL) != 0) return 1;
  pthread_join(t, NULL);
  printf("levels %d %d %d %d\n", l0, l1, p1, p0);
  return 0;
}
