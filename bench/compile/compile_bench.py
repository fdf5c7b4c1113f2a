#!/usr/bin/env python3
"""compile_bench.py PLUGIN KERNELS ROUNDS: see run.sh."""
import os
import statistics
import subprocess
import sys
import tempfile

plugin, kernels, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ACC = 32  # accumulators per kernel: register pressure, as real kernels have


def source(n):
    """n kernels, each its own constants, so none is merged with another."""
    out = []
    for k in range(n):
        out.append(f"""
__global__ void k{k}(const float *in, float *out, int iters) {{
  float acc[{ACC}];
  int t = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
  for (int j = 0; j < {ACC}; j++) acc[j] = in[t + j * {k + 1}];
  for (int i = 0; i < iters; i++) {{
#pragma unroll
    for (int j = 0; j < {ACC}; j++) acc[j] = acc[j] * {1.0 + k / 100:.3f}f + in[i * {ACC} + j];
  }}
  float s = 0;
#pragma unroll
  for (int j = 0; j < {ACC}; j++) s += acc[j];
  out[t] = s;
}}
""")
    out.append("int launch_all(const float *in, float *out) {\n")
    out += [f"  k{k}<<<1, 128>>>(in, out, 4);\n" for k in range(n)]
    out.append("  return 0;\n}\n")
    return "".join(out)


def cpu(cmd, env):
    """CPU seconds (user+sys) of cmd and its children."""
    before = os.times()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    after = os.times()
    return (after.children_user - before.children_user) + (after.children_system - before.children_system)


with tempfile.TemporaryDirectory() as work:
    src = os.path.join(work, "kernels.cu")
    with open(src, "w") as f:
        f.write(source(kernels))
    base = ["clang++-22", "-x", "cuda", "--cuda-gpu-arch=sm_90", "--cuda-path=/usr/local/cuda",
            "-Wno-unknown-cuda-version", "-O2", src]
    env = {k: v for k, v in os.environ.items() if not k.startswith("NANO_")}
    env["TMPDIR"] = work
    variants = {"plain": ([], env),
                "plugin": ([f"-fpass-plugin={plugin}"], env),
                "selected": ([f"-fpass-plugin={plugin}"], dict(env, NANO_KERNELS="k0"))}
    stages = {"device to PTX": ["--cuda-device-only", "-S", "-o", os.path.join(work, "k.ptx")],
              "whole compile": ["-c", "-o", os.path.join(work, "k.o")]}
    times = {(s, v): [] for s in stages for v in variants}
    for _ in range(rounds):
        for s, extra in stages.items():
            for v, (flags, e) in variants.items():
                times[(s, v)].append(cpu(base + flags + extra, e))
    print(f"{kernels} kernels, {rounds} rounds, CPU seconds (clang and ptxas)")
    for s in stages:
        plain = times[(s, "plain")]
        for v in variants:
            t = times[(s, v)]
            line = f"{s:14} {v:9} best {min(t):7.3f} median {statistics.median(t):7.3f}"
            if v != "plain":
                line += (f"   ratio best {min(t) / min(plain):.2f}x"
                         f" median {statistics.median(t) / statistics.median(plain):.2f}x")
            print(line)
