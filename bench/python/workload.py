"""Call-heavy workloads of the profiler benchmark; prints the workload's own time.

    python workload.py fib|methods
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


def main():
    which = sys.argv[1]
    t0 = time.perf_counter()
    if which == "fib":
        fib(25)
    elif which == "methods":
        methods()
    else:
        sys.exit("workload.py: unknown workload %r (fib or methods)" % which)
    print("%.6f" % (time.perf_counter() - t0))


if __name__ == "__main__":
    main()
