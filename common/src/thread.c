/* thread.c: nano_thread_start (nano/thread.h). */
#define _POSIX_C_SOURCE 200809L /* sigset_t and pthread_sigmask under -std=c11 too */
#include "nano/thread.h"

#include <signal.h>

/* The signals a thread's own faults raise (and abort()'s): blocking them
 * would not stop them (the kernel kills the process instead of running
 * their handlers). */
static const int nano_fault_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};

int nano_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg) {
  sigset_t block, old;
  sigfillset(&block);
  for (size_t i = 0; i < sizeof nano_fault_signals / sizeof nano_fault_signals[0]; i++)
    sigdelset(&block, nano_fault_signals[i]);
  int rc = pthread_sigmask(SIG_BLOCK, &block, &old);
  if (rc != 0)
    return rc;
  rc = pthread_create(thread, NULL, fn, arg); /* the new thread inherits the mask */
  int restored = pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc ? rc : restored;
}
