"""Driver of run.sh: runs each workload plain, under cProfile, under the
pure-Python recorder and under `python -m nanoprobe` (as is, and with
NANO_RPD_OVERFLOW=0: producers wait for the writer when a ring is full; and
with NANO_RPD_MIN_DURATION=10us: shorter calls summed, not rows; and with
NANO_RPD_WRITER_NICE=0: the writer at the program's priority), and prints
ratios to the plain run measured here, then issue 20's two figures
against cProfile: perturbation (the work's own time) and time to a complete
file (the process's wall time). NANO_BENCH_BUSY=1 runs a spinning process
beside every run (cores contended, where the writer's priority matters).

NANO_BENCH_MODES=a,b runs only those modes (plain and cProfile always run),
NANO_BENCH_WORKLOADS=fib,methods only those workloads, and
NANO_BENCH_BASELINE=DIR adds the mode "baseline": `python -m nanoprobe` from
another build's package (DIR is its python folder, e.g. an older commit's
build/python), for an A/B of two builds in one run.

The N runs of the modes are interleaved (run k of every mode, then run k+1),
so that a slow spell of a shared machine hits all modes alike. Five figures
per mode: the best and the median of the N runs of the workload's own wall
time (timed inside the program), the best of the process's CPU time (all
threads: the tracer's writer included, through RUSAGE_CHILDREN), the best
and the median of the process's wall time (start-up and writing the trace at
exit included).

When valgrind is installed (and NANO_BENCH_CALLGRIND is not 0), a second
table gives instructions per profiled call, which do not depend on the load
of the machine: the difference between fib(23) and fib(20) (70844 calls)
under callgrind, and for nanoprobe the split between the profiler's hot path
(the profile callback, including the tracer's push and pop) and the tracer's
writer thread, and the writer's instructions inside SQLite: one rocpd_api
row costs SQLite more than cProfile spends on a whole call, so on two cores
the writer, not the profiled thread, bounds nanoprobe's wall time.
"""
import atexit
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "workload.py")


def measure(cmd, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return float(out.strip().splitlines()[-1]), cpu, wall


def main():
    python, repeat = sys.argv[1], int(sys.argv[2])
    env = dict(os.environ)
    for name in ("RPDT_FILENAME", "NANO_PYTHON_PROFILE", "NANO_PYTHON_LINES", "NANO_PYTHON_C_CALLS"):
        env.pop(name, None)
    version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    print("python %s (%s), best and median of %d interleaved runs; ratios to the plain run" % (
        python, version, repeat))
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.rpd")
        nano = [python, "-m", "nanoprobe", "-o", trace, WORKLOAD]
        # mode: (command, extra environment)
        modes = {
            "plain": ([python, WORKLOAD], {}),
            "cProfile": ([python, "-m", "cProfile", "-o", os.path.join(tmp, "prof.out"), WORKLOAD],
                         {}),
            "pyrecorder": ([python, os.path.join(HERE, "pyrecorder.py"), WORKLOAD], {}),
            "nanoprobe": (nano, {}),
            # producers wait for the writer when their ring is full (before issue 20)
            "nano-wait": (nano, {"NANO_RPD_OVERFLOW": "0"}),
            # calls under 10 us summed per function instead of rows (--min-duration)
            "nano-10us": (nano, {"NANO_RPD_MIN_DURATION": "10us"}),
            # the writer at the program's priority (before issue 20's last round)
            "nano-nice0": (nano, {"NANO_RPD_WRITER_NICE": "0"}),
        }
        baseline = os.environ.get("NANO_BENCH_BASELINE")
        if baseline:
            # another build's package (its python folder), for an A/B in one run
            if not os.path.isdir(os.path.join(baseline, "nanoprobe")):
                sys.exit("bench.py: NANO_BENCH_BASELINE=%s: no nanoprobe package there" % baseline)
            modes["baseline"] = (nano, {"PYTHONPATH": baseline})
        wanted = os.environ.get("NANO_BENCH_MODES")
        if wanted:
            names = wanted.split(",")
            unknown = [m for m in names if m not in modes]
            if unknown:
                sys.exit("bench.py: NANO_BENCH_MODES: no mode %s (modes: %s)" % (
                    ", ".join(unknown), ", ".join(modes)))
            # plain (the ratios' base) and cProfile (the targets' base) always run
            modes = {m: c for m, c in modes.items() if m in ("plain", "cProfile") or m in names}
        workloads = os.environ.get("NANO_BENCH_WORKLOADS", "fib,methods,loops").split(",")
        for work in workloads:
            if work not in ("fib", "methods", "loops"):
                sys.exit("bench.py: NANO_BENCH_WORKLOADS: no workload %r (fib, methods, loops)"
                         % work)
        # NANO_BENCH_BUSY=1: one more process spins all along, as on a machine
        # where the program's threads and the writer compete for cores
        busy = None
        if os.environ.get("NANO_BENCH_BUSY", "0") != "0":
            busy = subprocess.Popen([python, "-c", "while True: pass"])
            atexit.register(busy.kill)  # also when a run fails
            print("NANO_BENCH_BUSY: a spinning process runs beside every run")
        print("%-8s %-11s %10s %6s %10s %6s %10s %6s %10s %6s %10s %6s" % (
            "workload", "mode", "work_s", "ratio", "work_med", "ratio", "cpu_s", "ratio",
            "wall_s", "ratio", "wall_med", "ratio"))
        targets = []
        for work in workloads:
            runs = {mode: [] for mode in modes}
            for _ in range(repeat):
                for mode, (cmd, extra) in modes.items():
                    runs[mode].append(measure(cmd + [work], dict(env, **extra)))
            figs = {}
            for mode in modes:
                r = runs[mode]
                figs[mode] = (min(x[0] for x in r), statistics.median(x[0] for x in r),
                              min(x[1] for x in r), min(x[2] for x in r),
                              statistics.median(x[2] for x in r))
                base = figs["plain"]
                print("%-8s %-11s" % (work, mode) + "".join(
                    " %10.4f %6.2f" % (figs[mode][i], figs[mode][i] / base[i]) for i in range(5)))
            targets.append((work, figs))
        # Issue 20's two figures, nanoprobe against cProfile in this run:
        # perturbation (the work's own time, ratio to plain) and time to a
        # complete file (the process's wall time).
        print("\n/ cProfile                  perturbation (work)   time to file (wall)")
        for work, figs in targets:
            c = figs["cProfile"]
            for mode in [m for m in modes if m not in ("plain", "cProfile", "pyrecorder")]:
                n = figs[mode]
                print("%-8s %-10s best %5.2f  median %5.2f     best %5.2f  median %5.2f" % (
                    work, mode, n[0] / c[0], n[1] / c[1], n[3] / c[3], n[4] / c[4]))
        print("targets: perturbation <= 1.00 on all three; time to file <= 1.30 on fib and methods")
        if busy:
            busy.kill()
            busy.wait()
        if shutil.which("valgrind") and os.environ.get("NANO_BENCH_CALLGRIND", "1") != "0":
            instructions(python, env, tmp)


def callgrind(cmd, env, out):
    """Instructions of one run of cmd under callgrind (profile data in out)."""
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + cmd,
                       env=env, capture_output=True, text=True, check=True)
    return int(re.search(r"Collected : (\d+)", r.stderr).group(1))


def inclusive(out, pattern):
    """Sum of the inclusive costs of functions matching pattern in a callgrind profile."""
    r = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out],
                       capture_output=True, text=True, check=True)
    total = 0
    for line in r.stdout.splitlines():
        m = re.match(r"\s*([\d,]+) .*:(\w+) \[", line)
        if m and re.fullmatch(pattern, m.group(2)):
            total += int(m.group(1).replace(",", ""))
    return total


def instructions(python, env, tmp):
    calls = 92735 - 21891  # calls of fib(23) minus calls of fib(20)
    progs = {}
    for n in (20, 23):
        progs[n] = os.path.join(tmp, "fib%d.py" % n)
        with open(progs[n], "w") as f:
            f.write("def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
                    "fib(%d)\n" % n)
    modes = {
        "plain": [python],
        "cProfile": [python, "-m", "cProfile", "-o", os.path.join(tmp, "p.out")],
        "pyrecorder": [python, os.path.join(HERE, "pyrecorder.py")],
        "nanoprobe": [python, "-m", "nanoprobe", "-o", os.path.join(tmp, "cg.rpd")],
    }
    print("\ninstructions per call (callgrind, fib(23) - fib(20))")
    base = None
    for mode, cmd in modes.items():
        outs = {n: os.path.join(tmp, "cg%d.out" % n) for n in progs}
        total = {n: callgrind(cmd + [progs[n]], env, outs[n]) for n in progs}

        def per_call(pattern=None):
            cost = {n: inclusive(outs[n], pattern) if pattern else total[n] for n in progs}
            return (cost[23] - cost[20]) / calls

        instr = per_call()
        base = base or instr
        line = "%-11s %8.0f  ratio %6.2f" % (mode, instr, instr / base)
        if mode == "cProfile":
            cprofile = instr
        if mode == "nanoprobe":
            sqlite = per_call(r"sqlite3_step")
            line += ("   (profiler hot path %.0f; tracer writer thread %.0f, of which SQLite %.0f"
                     " = %.2fx cProfile's whole call)" % (
                         per_call(r"np_profile_cb|np_trace_cb|np_mon_\w+"),
                         per_call(r"rpdw_main"), sqlite, sqlite / cprofile))
        print(line)


if __name__ == "__main__":
    main()
