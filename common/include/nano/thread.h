/*
 * nano/thread.h: nanoprobe's own threads (the tracer's writer, the CPU-kernel
 * workers, the dh_comms drain thread, the remote-control thread).
 */
#ifndef NANO_THREAD_H
#define NANO_THREAD_H

#include <pthread.h>

/*
 * Starts fn(arg) on a new thread that never takes the application's
 * asynchronous signals: they are blocked from its first instruction (all but
 * the faults of the thread's own code, SIGSEGV, SIGBUS, SIGILL, SIGFPE,
 * SIGABRT, SIGTRAP, SIGSYS, whose handlers must still run). A
 * process-directed signal then reaches one of the application's threads, as
 * it would without nanoprobe. Blocking them only once the thread runs left a
 * window in which dash's TERM trap, under the tracer and under load, was
 * lost (frontdoor_run_signals). The caller's mask is unchanged. Returns 0 or
 * pthread_create's error number.
 */
int nano_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg);

#endif /* NANO_THREAD_H */
