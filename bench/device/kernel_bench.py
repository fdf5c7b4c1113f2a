#!/usr/bin/env python3
"""CPU-kernel slowdown through the runtime, as ratios measured in one run:
cpu_bench run in each mode, the modes interleaved round by round (a slow spell
of the shared machine hits every mode), best and median of each launch's
wall time, per thread, and the ratio to the original kernel run by the
runtime in the same round.

usage: kernel_bench.py CPU_BENCH CPU_BENCH_INLINE LIBNANO_RPD [ROUNDS]

Modes: serial (no runtime: the calling thread runs every thread), original
(the runtime, NANO_INSTRUMENT=0), twin + none (records drained and counted),
twin + MemoryAnalysis and twin + Heatmap each with their sums made from
records (NANO_AGGREGATE=host: ring, drain thread, analyzer) and where the
virtual waves run (device: no record), and twin + none with the device
runtime inlined at every access (NANO_DEVICE_INLINE=1 build). One worker
thread (NANO_CPU_THREADS=1), so the drain thread has the other core.
"""
import json
import os
import statistics
import subprocess
import sys

bench, bench_inline, lib = sys.argv[1:4]
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 5
base = {"NANO_CPU_THREADS": "1", "RPDT_AUTOSTART": "0", "NANO_ANALYZER_OUTPUT": "/dev/null"}
modes = [
    ("serial (no runtime)", bench, None),
    ("original (runtime)", bench, {"NANO_INSTRUMENT": "0"}),
    ("twin, no analyzer", bench, {"NANO_INSTRUMENT": "1", "NANO_ANALYZERS": "none"}),
    ("twin + MemoryAnalysis, host", bench, {"NANO_INSTRUMENT": "1", "NANO_ANALYZERS": "MemoryAnalysis",
                                            "NANO_AGGREGATE": "host"}),
    ("twin + MemoryAnalysis, device", bench, {"NANO_INSTRUMENT": "1", "NANO_ANALYZERS": "MemoryAnalysis",
                                              "NANO_AGGREGATE": "device"}),
    ("twin + Heatmap, host", bench, {"NANO_INSTRUMENT": "1", "NANO_ANALYZERS": "Heatmap",
                                     "NANO_AGGREGATE": "host"}),
    ("twin + Heatmap, device", bench, {"NANO_INSTRUMENT": "1", "NANO_ANALYZERS": "Heatmap",
                                       "NANO_AGGREGATE": "device"}),
    ("twin, no analyzer, inlined", bench_inline, {"NANO_INSTRUMENT": "1", "NANO_ANALYZERS": "none"}),
]
times = {m[0]: {"triad": [], "poly": []} for m in modes}
threads = 0
for _ in range(rounds):
    for name, prog, env in modes:
        e = {k: v for k, v in os.environ.items() if not k.startswith(("NANO_", "RPDT_")) and k != "LD_PRELOAD"}
        if env is not None:
            e.update(base)
            e.update(env)
            e["LD_PRELOAD"] = lib
        out = subprocess.run([prog], env=e, capture_output=True, text=True, check=True).stdout
        doc = json.loads(out.splitlines()[-1])
        threads = doc["threads"]
        for k in ("triad", "poly"):
            times[name][k] += doc[k]

print("== CPU kernels: wall time per launch of %d threads (%d rounds x 3 launches, interleaved)"
      % (threads, rounds))
print("  %-31s %-6s %12s %12s %14s" % ("mode", "kernel", "best ns/thr", "median", "x original best/median"))
for k in ("triad", "poly"):
    ob, om = min(times["original (runtime)"][k]), statistics.median(times["original (runtime)"][k])
    for name, _, _ in modes:
        t = times[name][k]
        b, m = min(t), statistics.median(t)
        print("  %-31s %-6s %12.2f %12.2f %10.2f/%.2f" % (name, k, 1e9 * b / threads, 1e9 * m / threads,
                                                          b / ob, m / om))
