/*
 * remote_target.c: a process for the remote-control tests. Records a range
 * "tick N" of about 2 ms every few milliseconds (recorded only while the
 * tracer's start count is positive), prints "ready PID" when it is running,
 * and exits when the file argv[1] appears (or after 30 s). With a second
 * argument "fork" it forks first and both processes run the loop; the child
 * prints "child PID".
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rpd.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: remote_target STOPFILE [fork]\n");
    return 2;
  }
  pid_t child = -1;
  if (argc > 2 && !strcmp(argv[2], "fork")) {
    child = fork();
    if (child < 0) {
      perror("fork");
      return 1;
    }
    if (child == 0) {
      printf("child %ld\n", (long)getpid());
      fflush(stdout);
    }
  }
  if (child != 0) {
    printf("ready %ld\n", (long)getpid());
    fflush(stdout);
  }
  struct timespec nap = {0, 2000000};
  time_t deadline = time(NULL) + 30;
  for (long i = 0; access(argv[1], F_OK) != 0 && time(NULL) < deadline; i++) {
    char name[32];
    snprintf(name, sizeof name, "tick %ld", i);
    rpd_rangePush(NULL, name, NULL);
    nanosleep(&nap, NULL);
    rpd_rangePop();
    nanosleep(&nap, NULL);
  }
  if (child > 0) waitpid(child, NULL, 0);
  return 0;
}
