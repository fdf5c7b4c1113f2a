#!/usr/bin/env python3
"""Per-dispatch cost of the HSA tool's interception (issue 38), on the stand-in ROCr.

Runs tests/hsa's hsa_app in repeat mode (N axpy dispatches, each waited for, the
stand-in's kernels taking no time) three ways, interleaved, ROUNDS times:
  bare      no tool
  traced    HSA_TOOLS_LIB=libnano_rpd.so: intercept queue, the tool's signal,
            the async completion, the trace rows
  replaced  traced, and each kernel replaced by the kernel cache's (plain mode:
            kernarg slot, rebuilt segment)
and, given HIP_REPEAT (hip_repeat.hip built by hipcc), the same three with N
launches of a HIP program on Debian's real HIP runtime over the stand-in
(real_bare; real_traced: the tracer preloaded, which also takes the HIP
calls; real_replaced), each mode's ratio to its own bare. Prints each one's
time per dispatch (best and median) and the ratios.
The stand-in's queues and signals are not ROCr's: the ratio says what the tool
adds to a dispatch path of this cost, not what it adds on a GPU.

usage: dispatch_bench.py HSA_TEST_DIR LIBNANO_RPD [DISPATCHES] [ROUNDS] [HIP_REPEAT]  (run.sh calls it)
  HSA_TEST_DIR: the folder the device_hsa_tool test built (build/tests/device/hsa)
"""
import os
import statistics
import subprocess
import sys
import tempfile

d, lib = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 7
hip_repeat = sys.argv[5] if len(sys.argv) > 5 else None
co = os.path.join(d, "prog5.gfx90a.co")
tmp = tempfile.mkdtemp()
cache = {"NANO_KERNEL_CACHE": os.path.join(d, "plain")}
# mode: (program, environment, the mode its ratio is to)
modes = {
    "bare": ([os.path.join(d, "hsa_app"), co, "repeat", str(n)], {}, "bare"),
    "traced": ([os.path.join(d, "hsa_app"), co, "repeat", str(n)], {"HSA_TOOLS_LIB": lib}, "bare"),
    "replaced": ([os.path.join(d, "hsa_app"), co, "repeat", str(n)], dict(cache, HSA_TOOLS_LIB=lib), "bare"),
}
if hip_repeat:
    real = {"LD_LIBRARY_PATH": d}  # Debian's libamdhip64 over the stand-in ROCr
    modes.update({
        "real_bare": ([hip_repeat, str(n)], real, "real_bare"),
        "real_traced": ([hip_repeat, str(n)], dict(real, LD_PRELOAD=lib), "real_bare"),
        "real_replaced": ([hip_repeat, str(n)], dict(real, LD_PRELOAD=lib, **cache), "real_bare"),
    })
times = {m: [] for m in modes}
for r in range(rounds):
    for m, (cmd, extra, _) in modes.items():
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NANO_", "HSA_", "RPDT_"))}
        env.update(extra, FAKE_HSA_KERNEL_US="0", RPDT_FILENAME=os.path.join(tmp, "%s%d.rpd" % (m, r)),
                   NANO_RPD_QUIET="1")
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
        line = [ln for ln in out.splitlines() if "per dispatch" in ln or "per launch" in ln][0]
        if not line.startswith("ok"):
            sys.exit("%s: wrong results" % m)
        times[m].append(float(line.split()[-1]) / 1000)
print("%d dispatches x %d rounds (us per dispatch; ratio of medians to the mode's bare)" % (n, rounds))
for m, t in times.items():
    base = statistics.median(times[modes[m][2]])
    print("  %-13s best %7.2f  median %7.2f  ratio %.2fx" % (m, min(t), statistics.median(t),
                                                             statistics.median(t) / base))
