"""Driver of run.sh: runs each workload plain, under cProfile, under the
pure-Python recorder and under `python -m nanoprobe`, and prints ratios to
the plain run measured here.

Three figures per mode, each the best of N runs: the workload's own wall time
(timed inside the program), the process's CPU time (all threads: the
tracer's writer included, through RUSAGE_CHILDREN) and the process's wall
time (start-up and writing the trace at exit included).
"""
import os
import resource
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
    print("python %s (%s), best of %d; ratios to the plain run" % (python, version, repeat))
    with tempfile.TemporaryDirectory() as tmp:
        modes = {
            "plain": [python, WORKLOAD],
            "cProfile": [python, "-m", "cProfile", "-o", os.path.join(tmp, "prof.out"), WORKLOAD],
            "pyrecorder": [python, os.path.join(HERE, "pyrecorder.py"), WORKLOAD],
            "nanoprobe": [python, "-m", "nanoprobe", "-o", os.path.join(tmp, "trace.rpd"), WORKLOAD],
        }
        print("%-8s %-11s %10s %6s %10s %6s %10s %6s" % (
            "workload", "mode", "work_s", "ratio", "cpu_s", "ratio", "wall_s", "ratio"))
        for work in ("fib", "methods"):
            base = None
            for mode, cmd in modes.items():
                runs = [measure(cmd + [work], env) for _ in range(repeat)]
                best = tuple(min(r[i] for r in runs) for i in range(3))
                base = base or best
                print("%-8s %-11s %10.4f %6.2f %10.4f %6.2f %10.4f %6.2f" % (
                    work, mode, best[0], best[0] / base[0], best[1], best[1] / base[1],
                    best[2], best[2] / base[2]))


if __name__ == "__main__":
    main()
