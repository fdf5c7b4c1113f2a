"""Fork latency while recording: a thread calls functions all along (faster
than the tracer's writer can write them) and the main thread forks N times;
the child leaves at once (SIGKILL: no exit work). Prints the median and the
longest os.fork() of the program plain and under `python -m nanoprobe`, in
runs interleaved N_RUNS times, and their ratios. A fork waits for the tracer's
writer to finish the round it is in (the writer's lock, rpd fork handlers);
the writer cuts a round short for a waiting fork.

    python3 bench/python/forks.py [BUILD_DIR] [FORKS] [RUNS]   (build, 10, 3)

NANO_BENCH_BUSY=1: two spinning processes beside every run (cores contended:
the writer falls far behind, which is where rounds grew long).
"""
import os
import statistics
import subprocess
import sys
import tempfile

PROGRAM = r"""
import os, sys, threading, time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
stop = False
def busy():
    while not stop:
        fib(18)
threading.Thread(target=busy, daemon=True).start()
time.sleep(0.2)
for _ in range(int(sys.argv[1])):
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.kill(os.getpid(), 9)
    print("%.6f" % (time.perf_counter() - t0), flush=True)
    os.waitpid(pid, 0)
    time.sleep(0.02)
stop = True
"""


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    forks = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    package = os.path.join(build, "python")
    if not os.path.isdir(os.path.join(package, "nanoprobe")):
        sys.exit("forks.py: no nanoprobe package in %s (build the tree first)" % package)
    python = sys.executable
    busy = []
    if os.environ.get("NANO_BENCH_BUSY", "0") != "0":
        busy = [subprocess.Popen([python, "-c", "while True: pass"]) for _ in range(2)]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            prog = os.path.join(tmp, "forks_prog.py")
            with open(prog, "w") as f:
                f.write(PROGRAM)
            env = dict(os.environ, PYTHONPATH=package)
            modes = {"plain": [python, prog, str(forks)],
                     "nanoprobe": [python, "-m", "nanoprobe", "-o", os.path.join(tmp, "t.rpd"),
                                   prog, str(forks)]}
            lat = {m: [] for m in modes}
            for _ in range(runs):
                for mode, cmd in modes.items():
                    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True,
                                         timeout=600).stdout
                    lat[mode] += [float(x) * 1e3 for x in out.split()]
    finally:
        for p in busy:
            p.kill()
    print("os.fork() while a thread records, %d forks x %d runs%s" % (
        forks, runs, ", two busy processes beside" if busy else ""))
    for mode, v in lat.items():
        print("%-10s median %8.2f ms   max %8.2f ms" % (mode, statistics.median(v), max(v)))
    p, n = lat["plain"], lat["nanoprobe"]
    print("nanoprobe / plain: median %.1fx, max %.1fx" % (
        statistics.median(n) / statistics.median(p), max(n) / max(p)))


if __name__ == "__main__":
    main()
