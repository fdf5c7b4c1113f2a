#!/usr/bin/env python3
"""timeit.py RUNS CMD...: runs CMD RUNS times (stdout to /dev/null) and prints
"cpu=<best user+sys seconds> wall=<best wall seconds> rss=<smallest peak
resident KiB>". CPU time is the robust figure on a shared machine; wall time
is shown alongside."""
import os
import sys
import time

runs, cmd = int(sys.argv[1]), sys.argv[2:]
best_cpu = best_wall = best_rss = None
for _ in range(runs):
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.execvp(cmd[0], cmd)
    _, status, ru = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("timeit: %s failed" % " ".join(cmd))
    cpu = ru.ru_utime + ru.ru_stime
    best_cpu = cpu if best_cpu is None else min(best_cpu, cpu)
    best_wall = wall if best_wall is None else min(best_wall, wall)
    best_rss = ru.ru_maxrss if best_rss is None else min(best_rss, ru.ru_maxrss)
print("cpu=%.4f wall=%.4f rss=%d" % (best_cpu, best_wall, best_rss))
