"""Workloads of the profiler benchmark; prints the workload's own time.

    python workload.py fib|methods|loops

fib and methods are call-heavy (a call every ~0.1 us unprofiled): the tracer's
writer thread, not the profiled thread, limits nanoprobe there. loops calls a
function with a 60-iteration loop 100k times (a call every ~3 us), a rate the
writer keeps up with.
"""
import sys
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Counter:
    def __init__(self):
        self.total = 0

    def step(self, i):
        self.total += i
        return self.total


def methods(n=300_000):
    c = Counter()
    for i in range(n):
        c.step(i)
    return c.total


def leaf(i):
    s = 0
    for k in range(60):
        s += k * i
    return s


def loops(n=100_000):
    for i in range(n):
        leaf(i)


def main():
    which = sys.argv[1]
    t0 = time.perf_counter()
    if which == "fib":
        fib(25)
    elif which == "methods":
        methods()
    elif which == "loops":
        loops()
    else:
        sys.exit("workload.py: unknown workload %r (fib, methods or loops)" % which)
    print("%.6f" % (time.perf_counter() - t0))


if __name__ == "__main__":
    main()
