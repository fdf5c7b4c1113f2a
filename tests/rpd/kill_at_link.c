/*
 * kill_at_link.c: an LD_PRELOAD shim that kills its process at the first
 * link(2), where the tracer makes a new trace appear whole: it stands for a
 * SIGKILL that lands while the schema is written (tests/rpd case
 * create_whole).
 */
#include <signal.h>
#include <unistd.h>

int link(const char *from, const char *to) {
  (void)from, (void)to;
  raise(SIGKILL);
  return -1;
}
