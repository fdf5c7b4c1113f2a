/*
 * nano/thread.h: nanoprobe's own threads (the tracer's writer, the CPU-kernel
 * workers, the dh_comms drain thread, the remote-control thread).
 */
#ifndef NANO_THREAD_H
#define NANO_THREAD_H

#include <pthread.h>

/*
 * Starts fn(arg) on a new thread that never takes the application's
 * asynchronous signals: they stay blocked there (all but the faults of the
 * thread's own code, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP,
 * SIGSYS, whose handlers must still run). A process-directed signal then reaches one of
 * the application's threads, as it would without nanoprobe. It matters: a
 * handler that runs on a helper thread while the application's thread is
 * suspended in vfork() (dash's trap handler checks a flag the vfork child
 * has set in the shared memory) drops the signal. The caller's mask is
 * unchanged. Returns 0 or pthread_create's error number.
 */
int nano_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg);

#endif /* NANO_THREAD_H */
