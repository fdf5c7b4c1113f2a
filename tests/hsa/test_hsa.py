#!/usr/bin/env python3
"""libnano_rpd.so as an HSA tool, and the kernel cache (issue 38), without an AMD GPU.

A stand-in ROCr (standin_hsa.cpp, on ROCr's real headers) loads the tool as ROCr
does (HSA_TOOLS_LIB, OnLoad with the API table), and hsa_app.c runs hipcc-built
code objects (made without the plugin) through it as the HIP runtime would;
hip_app.hip, built by plain hipcc, runs on a stand-in HIP (standin_hip.c) and on
Debian's real HIP runtime over it (case real_hip). The
stand-in logs every kernel its "hardware" ran (and every copy of its engine), with its code object, segment
sizes, times and kernarg bytes; the checks below compare that log, the program's
output and the trace against what the code objects' metadata (read by LLVM's
llvm-readelf, not kerneldb) and the AQL rules say.

usage: test_hsa.py ROOT OUT RPD_LIB HIPCC BUNDLER LLVM_BIN CXX KERNELDB_CLI KERNELDB_LIB NANOPROBE RPD [CASE...]
HSA_TEST_PRELOAD: LD_PRELOAD for the runs that load RPD_LIB (ASan's runtime, tests/sanitize).
"""
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import check, fail  # noqa: E402

ROOT, OUT, RPD_LIB, HIPCC, BUNDLER, LLVM_BIN, CXX, KERNELDB, KERNELDB_LIB, NANOPROBE, RPD = sys.argv[1:12]
HERE = os.path.join(ROOT, "tests", "hsa")
KERNEL_US = 200  # the stand-in's default kernel time


def sh(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        fail("%s: exit %d\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    return r


def hip_build(src, out, archs, v5=True, opt="-O2"):
    cmd = [HIPCC, opt, "-g", "--cuda-device-only", "-c", "-B" + LLVM_BIN, src, "-o", out]
    cmd += ["--offload-arch=" + a for a in archs]
    cmd.append("-mcode-object-version=%d" % (5 if v5 else 4))
    sh(cmd)


def unbundle(bundle, arch, out):
    sh([BUNDLER, "--type=o", "--targets=hipv4-amdgcn-amd-amdhsa--" + arch, "--input=" + bundle,
        "--output=" + out, "--unbundle"])
    return out


def fnv64(path):
    h = 0xCBF29CE484222325
    for b in open(path, "rb").read():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def metadata(co):
    """Each kernel's args, segment sizes and kernarg size, from llvm-readelf's notes."""
    notes = sh([os.path.join(LLVM_BIN, "llvm-readelf"), "--notes", co]).stdout
    doc = notes[notes.index("---"):notes.index("\n...") + 4]
    kernels = {}
    for k in yaml.safe_load(doc)["amdhsa.kernels"]:
        kernels[k[".name"]] = {
            "args": [(a[".value_kind"], a[".offset"], a[".size"]) for a in k.get(".args", [])],
            "group": k[".group_segment_fixed_size"],
            "private": k[".private_segment_fixed_size"],
            "kernarg": k[".kernarg_segment_size"],
        }
    return kernels


def build_all():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    inc = ["-I" + os.path.join(ROOT, "dh_comms", "include"), "-I" + os.path.join(ROOT, "tests", "common")]
    sh([os.path.join(LLVM_BIN, "clang"), "-std=c11", "-O1", "-fPIC", "-c"] + inc +
       [os.path.join(ROOT, "dh_comms", "device", "dh_device.c"), "-o", OUT + "/dh_device.o"])
    # ROCr's symbol version, which Debian's libamdhip64 asks for (case_real_hip)
    with open(OUT + "/rocr.map", "w") as f:
        f.write("ROCR_1 { global: hsa_*; local: *; };\n")
    sh(["cc", "-std=c11", "-O1", "-fPIC", "-Wall", "-Werror", "-c", HERE + "/standin_unsupported.c",
        "-o", OUT + "/standin_unsupported.o"])
    sh([CXX, "-std=c++17", "-O1", "-g", "-shared", "-fPIC", "-fvisibility=hidden", "-Wall", "-Werror",
        "-DAMD_INTERNAL_BUILD", "-I/usr/include/hsa"] + inc +
       [HERE + "/standin_hsa.cpp", OUT + "/standin_unsupported.o", OUT + "/dh_device.o",
        "-Wl,-soname,libhsa-runtime64.so.1", "-Wl,--version-script," + OUT + "/rocr.map",
        "-o", OUT + "/libhsa-runtime64.so.1", "-lpthread", "-ldl"])
    if not os.path.exists(OUT + "/libhsa-runtime64.so"):
        os.symlink("libhsa-runtime64.so.1", OUT + "/libhsa-runtime64.so")
    sh(["cc", "-std=c11", "-O2", "-g", "-Wall", "-Werror", HERE + "/hsa_app.c", "-o", OUT + "/hsa_app",
        "-L" + OUT, "-lhsa-runtime64", "-Wl,-rpath," + OUT, "-lpthread"])
    sh([CXX, "-std=c++17", "-O1", "-shared", "-fPIC", "-Wall", "-Werror", "-I/usr/include/hsa",
        HERE + "/other_tool.cpp", "-o", OUT + "/libother_tool.so"])
    # a HIP runtime on HSA (hip_4.2: the symbol version hipcc's programs ask for)
    os.makedirs(OUT + "/hip")
    with open(OUT + "/hip/hip.map", "w") as f:
        # the graph calls came with HIP 4.3, as in Debian's libamdhip64
        f.write("hip_4.2 { global: hip*; __hip*; _Z24hipExtModuleLaunchKernel*; local: *; };\n"
                "hip_4.3 { global: hipGraph*; hipStreamBeginCapture; hipStreamEndCapture; } hip_4.2;\n")
    kdb_dir = os.path.dirname(KERNELDB_LIB)
    sh(["cc", "-std=c11", "-O1", "-g", "-shared", "-fPIC", "-Wall", "-Werror",
        "-I" + os.path.join(ROOT, "kerneldb", "include"), HERE + "/standin_hip.c",
        "-Wl,--version-script," + OUT + "/hip/hip.map", "-Wl,-soname,libamdhip64.so.5",
        "-o", OUT + "/hip/libamdhip64.so.5", "-L" + OUT, "-lhsa-runtime64", "-L" + kdb_dir,
        "-l:" + os.path.basename(KERNELDB_LIB), "-Wl,-rpath," + OUT + ":" + kdb_dir, "-lpthread"])
    # the same runtime as HIP 6.2 (its tracer interface in HIP 6.2's layout),
    # under HIP 6.2's file name, which the tool reads the version from
    os.makedirs(OUT + "/hip6")
    sh(["cc", "-std=c11", "-O1", "-g", "-shared", "-fPIC", "-Wall", "-Werror", "-DSTANDIN_HIP_TRACER",
        "-I" + os.path.join(ROOT, "kerneldb", "include"), HERE + "/standin_hip.c",
        "-Wl,--version-script," + OUT + "/hip/hip.map", "-Wl,-soname,libamdhip64.so.5",
        "-o", OUT + "/hip6/libamdhip64.so.6.2.60200", "-L" + OUT, "-lhsa-runtime64", "-L" + kdb_dir,
        "-l:" + os.path.basename(KERNELDB_LIB), "-Wl,-rpath," + OUT + ":" + kdb_dir, "-lpthread"])
    os.symlink("libamdhip64.so.6.2.60200", OUT + "/hip6/libamdhip64.so.5")
    # and as a later HIP of that interface whose layout the tool does not know
    os.makedirs(OUT + "/hip6x")
    shutil.copy(OUT + "/hip6/libamdhip64.so.6.2.60200", OUT + "/hip6x/libamdhip64.so.6.9.0")
    os.symlink("libamdhip64.so.6.9.0", OUT + "/hip6x/libamdhip64.so.5")
    # the program: plain hipcc, linked against the real libamdhip64
    r = subprocess.run([HIPCC, "--offload-arch=gfx90a", "-O2", HERE + "/hip_app.hip", "-o",
                        OUT + "/hip/hip_app"], capture_output=True, text=True)
    if r.returncode != 0:
        fail("hipcc hip_app.hip: %s%s" % (r.stdout, r.stderr))
    r = subprocess.run([HIPCC, "--offload-arch=gfx90a", "-O2", HERE + "/hip_vars.hip", "-o",
                        OUT + "/hip/hip_vars"], capture_output=True, text=True)
    if r.returncode != 0:
        fail("hipcc hip_vars.hip: %s%s" % (r.stdout, r.stderr))
    # the same program built with the plugin (nanoprobe cc picks the one
    # matching hipcc's LLVM)
    sh([NANOPROBE, "cc", "--", HIPCC, "--offload-arch=gfx90a", "-O2", "-g", HERE + "/hip_app.hip",
        "-o", OUT + "/hip/hip_app_plugin"])
    src = HERE + "/kernels.hip"
    hip_build(src, OUT + "/prog5.bundle", ["gfx90a", "gfx1030"])
    hip_build(src, OUT + "/prog4.bundle", ["gfx90a"], v5=False)
    os.makedirs(OUT + "/cache", exist_ok=True)
    # the cache as a user builds it
    sh([NANOPROBE, "cache", "build", "-o", OUT + "/cache", "--", HIPCC, "-O2", "-g", "-B" + LLVM_BIN,
        "--offload-arch=gfx90a", "--offload-arch=gfx1030", "-mcode-object-version=5", src])
    listing = sh([NANOPROBE, "cache", "list", OUT + "/cache"]).stdout
    for arch in ("gfx90a", "gfx1030"):
        check(arch in listing, "cache list names the target %s:\n%s" % (arch, listing))
    for k in ("axpy(float, float const*, float*, int)", "dyn(int*)"):
        check(re.search(r"twin of +%s" % re.escape(k), listing) and
              re.search(r"original, with its twin +%s" % re.escape(k), listing),
              "cache list shows %s and its twin:\n%s" % (k, listing))
    # a program and caches sharing module variables (case_variables)
    hip_build(HERE + "/kernels_variable.hip", OUT + "/variable.bundle", ["gfx90a"])
    for cache, source in (("varcache", "kernels_variable.hip"), ("widecache", "kernels_variable_wide.hip")):
        sh([NANOPROBE, "cache", "build", "-o", OUT + "/" + cache, "--", HIPCC, "-O2", "-g", "-B" + LLVM_BIN,
            "--offload-arch=gfx90a", HERE + "/" + source])
    os.makedirs(OUT + "/plain", exist_ok=True)
    hip_build(src, OUT + "/plain/kernels.bundle", ["gfx90a"], opt="-O1")
    os.makedirs(OUT + "/mismatch", exist_ok=True)
    hip_build(HERE + "/kernels_mismatch.hip", OUT + "/mismatch/dyn.bundle", ["gfx90a"])
    for arch in ("gfx90a", "gfx1030"):
        unbundle(OUT + "/prog5.bundle", arch, OUT + "/prog5.%s.co" % arch)
        unbundle(OUT + "/cache/kernels.hip.o", arch, OUT + "/cache.%s.co" % arch)
    unbundle(OUT + "/prog4.bundle", "gfx90a", OUT + "/prog4.gfx90a.co")
    unbundle(OUT + "/variable.bundle", "gfx90a", OUT + "/variable.gfx90a.co")
    unbundle(OUT + "/varcache/kernels_variable.hip.o", "gfx90a", OUT + "/varcache.gfx90a.co")
    unbundle(OUT + "/plain/kernels.bundle", "gfx90a", OUT + "/plain.gfx90a.co")
    unbundle(OUT + "/mismatch/dyn.bundle", "gfx90a", OUT + "/mismatch.gfx90a.co")


def sites(arch, cache="/cache/kernels.hip.o", want=None):
    """The twins' site ids in the order the stand-in emulates: axpy x, y, y;
    dyn out; merged4's four loads and its store (one site per line)."""
    out = sh([KERNELDB, "sites", OUT + cache, "--arch", arch]).stdout
    want = want or ["kernels.hip:7:25", "kernels.hip:7:32", "kernels.hip:7:19", "kernels.hip:13:20"] + \
        ["kernels.hip:%d:" % line for line in MERGED4_LINES]
    ids = []
    for w in want:
        m = [ln.split()[0] for ln in out.splitlines() if ln.split()[6:7] and
             (ln.split()[6].endswith(w) or (w.endswith(":") and w in ln.split()[6]))]
        check(len(m) == 1, "one site at %s in the cache's %s code object:\n%s" % (w, arch, out))
        ids.append(m[0])
    return " ".join(ids)


def check_allocs_and_graph(name, trace):
    """hip_app's trace: its three allocations and frees with pointer and size,
    as rocmProfileData writes them, and its graph (capture, executable, two
    launches) as `rpd graph` finds it."""
    allocs = [r[0] for r in rows(trace, "select args from api where apiName in ('hipMalloc', 'hipFree') "
                                 "order by start")]
    check(len(allocs) == 6 and all(re.fullmatch(r"ptr=0x[0-9a-f]+ \| size=0x(fa0|100)", a) for a in allocs[:3])
          and [a.split(" |")[0] for a in allocs[:3]] == allocs[3:],
          "%s: hipMalloc's and hipFree's args: %s" % (name, allocs))
    g = subprocess.run([RPD, "graph", trace], capture_output=True, text=True, timeout=120)
    check(g.returncode == 0, "%s: rpd graph: exit %d %s" % (name, g.returncode, g.stderr))
    graphs = rows(trace, "select count(*) from ext_graph")
    launched = rows(trace, "select count(*) from graphLaunch")
    captured = rows(trace, "select count(*) from ext_graph_kernelapis")
    check(graphs == [(1,)] and launched == [(2,)] and captured == [(1,)],
          "%s: rpd graph finds one graph of one kernel, launched twice: %s %s %s\n%s" %
          (name, graphs, launched, captured, g.stdout))


def plugin_sites():
    """hip_app_plugin's own twins' site ids: axpy x, y, y; dyn out."""
    return sites("gfx90a", "/hip/hip_app_plugin",
                 ["hip_app.hip:20:25", "hip_app.hip:20:32", "hip_app.hip:20:19", "hip_app.hip:26:20"])


# The source lines of merged4's four loads and its store (kernels.hip).
MERGED4_LINES = (21, 22, 23, 24, 25)


def remove(*paths):
    """Removes those of paths that exist (a run's output from a former run)."""
    for p in paths:
        if os.path.exists(p):
            os.unlink(p)


def run(name, co, args=(), env=None, tool=True, arch="gfx90a"):
    """Runs hsa_app on co; returns (stdout, stderr, log lines, trace path or None)."""
    log = "%s/%s.log" % (OUT, name)
    trace = "%s/%s.rpd" % (OUT, name)
    remove(log, trace)
    e = dict(os.environ, FAKE_HSA_LOG=log, FAKE_HSA_ARCH=arch)
    for k in list(e):
        if k.startswith("NANO_") or k in ("HSA_TOOLS_LIB", "RPDT_FILENAME", "LD_PRELOAD"):
            del e[k]
    if tool:
        e.update(HSA_TOOLS_LIB=RPD_LIB, RPDT_FILENAME=trace)
        if os.environ.get("HSA_TEST_PRELOAD"):  # the sanitizers' runtime, for a sanitized tool
            e["LD_PRELOAD"] = os.environ["HSA_TEST_PRELOAD"]
    e.update(env or {})
    r = subprocess.run([OUT + "/hsa_app", co] + list(args), capture_output=True, text=True, env=e,
                       timeout=120)
    if r.returncode != 0:
        fail("%s: hsa_app exit %d\n%s%s" % (name, r.returncode, r.stdout, r.stderr))
    lines = open(log).read().splitlines() if os.path.exists(log) else []
    return r.stdout, r.stderr, [parse(ln) for ln in lines], trace if tool else None


def tracer_preload():
    """LD_PRELOAD for the tracer alone: the sanitizers' runtime first where the
    tool is a sanitized one (HSA_TEST_PRELOAD)."""
    first = [os.environ["HSA_TEST_PRELOAD"]] if os.environ.get("HSA_TEST_PRELOAD") else []
    return ":".join(first + [RPD_LIB])


def parse(line):
    fields = dict(f.split("=", 1) for f in line.split()[1:])
    for k in ("group", "private", "signal", "start", "end", "queue"):
        fields[k] = int(fields[k])
    fields["kernarg"] = bytes.fromhex(fields["kernarg"])
    return fields


def program_kernargs(stdout):
    return {m.group(1): bytes.fromhex(m.group(2)) for m in re.finditer(r"kernarg (\w+) (\w+)", stdout)}


def expect_ok(name, stdout, kernels=("axpy", "dyn")):
    for k in kernels:
        check("ok %s" % k in stdout, "%s: %s's results are right:\n%s" % (name, k, stdout))


MANGLED = {"axpy": "_Z4axpyfPKfPfi", "dyn": "_Z3dynPi"}


def hidden_from_packet(kind, d, orig_meta):
    """What a hidden argument holds when the original kernel has none: the packet's."""
    grid = [int(v) for v in d["grid"].split(",")]
    wg = [int(v) for v in d["wg"].split(",")]
    for i, axis in enumerate("xyz"):
        if kind == "hidden_block_count_" + axis:
            return (grid[i] + wg[i] - 1) // wg[i]
        if kind == "hidden_group_size_" + axis:
            return wg[i]
        if kind == "hidden_remainder_" + axis:
            return grid[i] % wg[i]
    if kind == "hidden_grid_dims":
        return 1
    if kind == "hidden_dynamic_lds_size":
        return d["program_group"] - orig_meta["group"]
    return 0


def expect_kernargs(name, d, original, orig_meta, alt_meta, twin):
    """Every byte of the replacement's kernarg segment, from the program's and the metadata."""
    want = bytearray(alt_meta["kernarg"])
    orig_args = [a for a in orig_meta["args"]]
    explicit = [a for a in orig_args if not a[0].startswith("hidden_")]
    alt_explicit = [a for a in alt_meta["args"] if not a[0].startswith("hidden_")]
    buffer_at = None
    if twin:
        buffer_at = alt_explicit[-1][1]
        alt_explicit = alt_explicit[:-1]
    check(len(explicit) == len(alt_explicit), "%s: explicit argument counts" % name)
    for (k1, o1, s1), (k2, o2, s2) in zip(explicit, alt_explicit):
        want[o2:o2 + s2] = original[o1:o1 + s1]
    by_kind = {k: (o, s) for k, o, s in orig_args if k.startswith("hidden_")}
    for k, o, s in alt_meta["args"]:
        if not k.startswith("hidden_"):
            continue
        if k in by_kind:
            oo, os_ = by_kind[k]
            n = min(s, os_)
            want[o:o + n] = original[oo:oo + n]
        else:
            want[o:o + s] = hidden_from_packet(k, d, orig_meta).to_bytes(8, "little")[:s]
    got = bytearray(d["kernarg"])
    if twin:
        ptr = int.from_bytes(got[buffer_at:buffer_at + 8], "little")
        check(ptr != 0, "%s: the twin's buffer argument (offset %d) is set" % (name, buffer_at))
        got[buffer_at:buffer_at + 8] = bytes(8)
    if bytes(got) != bytes(want):
        diff = [i for i in range(len(want)) if got[i] != want[i]]
        fail("%s: kernarg bytes differ at offsets %s\n got %s\nwant %s" % (name, diff[:16], got.hex(), want.hex()))


def shown(mangled, mark=""):
    """How the trace may name a kernel: demangled where the program has a demangler
    (C++ programs, or the sanitizers' runtime), else as is."""
    demangled = sh([os.path.join(LLVM_BIN, "llvm-cxxfilt"), mangled]).stdout.strip()
    return (mangled + mark, demangled + mark)


def rows(trace, sql):
    db = sqlite3.connect(trace)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def case_plain_and_timed():
    co = OUT + "/prog5.gfx90a.co"
    out0, _, log0, _ = run("untraced", co, tool=False)
    expect_ok("untraced", out0)
    check([d["signal"] for d in log0] == [1, 0], "untraced: dyn has no completion signal of its own")
    out, err, log, trace = run("timed", co)
    expect_ok("timed", out)
    # the program's own completion signal still carries its kernel's times
    # (hsa_amd_profiling_get_dispatch_time on it: the hardware's, as without
    # the tool, whose signal the packet carried)
    for name, o, lg in (("untraced", out0, log0), ("timed", out, log)):
        own = re.search(r"times axpy (\d+) (\d+)", o)
        check(own and (int(own.group(1)), int(own.group(2))) == (lg[0]["start"], lg[0]["end"]),
              "%s: axpy's own signal's times are the hardware's %s: %s" %
              (name, (lg[0]["start"], lg[0]["end"]), o))
    check(len(log) == 2 and [d["kernel"] for d in log] == ["_Z4axpyfPKfPfi", "_Z3dynPi"],
          "timed: the program's two kernels ran:\n%s" % log)
    check(all(d["image"] == fnv64(co) for d in log), "timed: from the program's code object")
    check(all(d["signal"] == 1 for d in log), "timed: every dispatch carries the tool's signal")
    kargs = program_kernargs(out)
    for d, k in zip(log, ("axpy", "dyn")):
        check(d["kernarg"] == kargs[k], "timed: %s's kernarg segment is the program's own" % k)
    check(log[1]["group"] == 256, "timed: dyn keeps its 256 bytes of dynamic LDS")
    ops = rows(trace, "select description, opType, gpuId, queueId, start, end, id from op order by start")
    check(len(ops) == 2, "timed: two kernel ops: %s" % ops)
    # the trace's clock is CLOCK_MONOTONIC; the stand-in's system domain is _RAW
    skew = time.clock_gettime_ns(time.CLOCK_MONOTONIC) - time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
    for (desc, optype, gpu, queue, start, end, _), d in zip(ops, log):
        check(desc in shown(d["kernel"]) and optype == "KernelExecution" and gpu == 0,
              "timed: op %s is a KernelExecution of %s on GPU 0" % (desc, d["kernel"]))
        check(abs((end - start) - (d["end"] - d["start"])) <= 2,
              "timed: %s's duration %d ns is the profiling times' %d ns" % (desc, end - start, d["end"] - d["start"]))
        check(abs((start - d["start"]) - skew) < 2000000,
              "timed: %s starts where the profiling time says (%d ns apart, clocks %d)" % (desc, start - d["start"], skew))
        check(d["end"] - d["start"] >= KERNEL_US * 1000, "timed: the kernel ran its time")
    check(ops[0][3] != ops[1][3], "timed: the two queues are two queueIds")
    apis = rows(trace, "select a.apiName, a.domain, k.gridX, k.workgroupX, k.groupSegmentSize, "
                "k.privateSegmentSize, s.string, o.description from api a "
                "join rocpd_kernelapi k on k.api_ptr_id = a.id join rocpd_string s on s.id = k.kernelName_id "
                "join rocpd_api_ops ao on ao.api_id = a.id join op o on o.id = ao.op_id order by a.start")
    check([r[:6] for r in apis] == [("hsa_kernel_dispatch", "hsa", 1024, 256, 0, 0),
                                    ("hsa_kernel_dispatch", "hsa", 64, 64, 256, 0)] and
          apis[0][6] in shown("_Z4axpyfPKfPfi") and apis[1][6] in shown("_Z3dynPi"),
          "timed: each dispatch's API row carries grid, workgroup, LDS, scratch, kernel: %s" % apis)
    check(all(r[6] == r[7] for r in apis), "timed: each op is linked to its dispatch")
    print("ok timed: two kernels, their profiling times, grid/workgroup/LDS, the program's signals")


def case_concurrent():
    co = OUT + "/prog5.gfx90a.co"
    for tool in (False, True):
        name = "concurrent_traced" if tool else "concurrent"
        out, _, log, _ = run(name, co, ["concurrent"], {"FAKE_HSA_KERNEL_US": "300000"}, tool=tool)
        expect_ok(name, out, ("concurrent axpy",))
        check(len(log) == 2 and log[0]["queue"] != log[1]["queue"], "%s: two queues" % name)
        a, b = log
        check(a["start"] < b["end"] and b["start"] < a["end"],
              "%s: the two kernels ran at the same time: %s" % (name, [(d["start"], d["end"]) for d in log]))
    print("ok concurrent: kernels on two queues still overlap with the tool (not serialised)")


def check_twins(name, prog_co, cache_co, out, log, trace, arch, wave):
    orig = metadata(prog_co)
    alt = metadata(cache_co)
    kargs = program_kernargs(out)
    check([d["kernel"] for d in log] == ["__nano_twin__Z4axpyfPKfPfiPv", "__nano_twin__Z3dynPiPv"],
          "%s: the twins ran: %s" % (name, [d["kernel"] for d in log]))
    check(all(d["image"] == fnv64(cache_co) for d in log), "%s: from the cache's code object" % name)
    for d, k in zip(log, ("axpy", "dyn")):
        om, tm = orig[MANGLED[k]], alt["__nano_twin_%sPv" % MANGLED[k]]
        d["program_group"] = om["group"] + (256 if k == "dyn" else 0)
        expect_kernargs("%s %s" % (name, k), d, kargs[k], om, tm, twin=True)
        check(d["group"] == d["program_group"] - om["group"] + tm["group"],
              "%s: %s's group segment: the twin's static LDS plus the dispatch's dynamic" % (name, k))
        check(d["private"] == tm["private"], "%s: %s's private segment is the twin's" % (name, k))
    disp = rows(trace, "select kernel, backend, arch, wave_size, records, dropped from nano_dispatch "
                "order by id")
    check(disp == [("_Z4axpyfPKfPfi", "hsa", arch, wave, 3000, 0), ("_Z3dynPi", "hsa", arch, wave, 64, 0)],
          "%s: the dispatches' rows (every access of the emulated twins): %s" % (name, disp))
    reports = rows(trace, "select report from nano_analysis where analyzer = 'MemoryAnalysis' order by dispatch_id")
    check(len(reports) == 2, "%s: a MemoryAnalysis report per dispatch" % name)
    import json
    locs = {(l["file"].split("/")[-1], l["line"], l["column"]): l for r in reports for l in json.loads(r[0])["locations"]}
    for key, n in ((("kernels.hip", 7, 25), 1000), (("kernels.hip", 7, 32), 1000), (("kernels.hip", 7, 19), 1000),
                   (("kernels.hip", 13, 20), 64)):
        check(key in locs, "%s: a location at %s:%d:%d (the cache file's site table): %s" % ((name,) + key + (sorted(locs),)))
        l = locs[key]
        # the stand-in's emulation records one lane per access: n accesses of 4 bytes
        check((l["accesses"], l["bytes"], l["space"]) == (n, 4 * n, "global"),
              "%s: %d accesses of 4 bytes at %s: %s" % (name, n, key, l))
    ops = [r[0] for r in rows(trace, "select description from op order by start")]
    check(len(ops) == 2 and ops[0] in shown("_Z4axpyfPKfPfi", " [instrumented]") and
          ops[1] in shown("_Z3dynPi", " [instrumented]"),
          "%s: the ops name the program's kernels, instrumented: %s" % (name, ops))


def case_twins():
    # records (what check_twins counts); the twins' own sums: case_summed
    env = {"NANO_KERNEL_CACHE": OUT + "/cache", "NANO_INSTRUMENT": "1", "NANO_ANALYZERS": "MemoryAnalysis",
           "NANO_AGGREGATE": "host", "NANO_ANALYZER_OUTPUT": OUT + "/twins.txt"}
    for arch, wave, prog in (("gfx90a", 64, "prog5"), ("gfx1030", 32, "prog5"), ("gfx90a", 64, "prog4")):
        name = "twins_%s_%s" % (arch, prog)
        e = dict(env, FAKE_SITES=sites(arch))
        out, err, log, trace = run(name, OUT + "/%s.%s.co" % (prog, arch), env=e, arch=arch)
        expect_ok(name, out)
        check_twins(name, OUT + "/%s.%s.co" % (prog, arch), OUT + "/cache.%s.co" % arch, out, log, trace, arch, wave)
        check("nanoprobe: hsa:" not in err, "%s: nothing to say: %s" % (name, err))
    print("ok twins: the cache's twins ran with rebuilt kernargs (v5 and v4 programs, wave 64 and 32), "
          "records drained, MemoryAnalysis at the cache's source lines")


MEMORY_COLUMNS = ("kernel, file, line, \"column\", function, kind, space, access_bytes, executions, "
                  "accesses, bytes, line_bytes, lines_needed, lines_used, sector_bytes, sectors_needed, "
                  "sectors_used, bank_conflicts")


def case_summed():
    """The cache's twins sum their accesses into a table in fine-grained
    system memory (written before the packet, read after its completion)
    and time their blocks there: the same MemoryAnalysis as from records,
    field by field, no record, one nano_block row per workgroup of each
    dispatch, inside it, the first at its start."""
    base = {"NANO_KERNEL_CACHE": OUT + "/cache", "NANO_INSTRUMENT": "1"}
    for arch, wave in (("gfx90a", 64), ("gfx1030", 32)):
        e = dict(base, FAKE_SITES=sites(arch))
        co = OUT + "/prog5.%s.co" % arch
        out, err, log, host = run("records_" + arch, co, ["signals"],
                                  env=dict(e, NANO_ANALYZERS="MemoryAnalysis", NANO_AGGREGATE="host"),
                                  arch=arch)
        expect_ok("records_" + arch, out)
        name = "summed_" + arch
        # dyn waited for through its own signal: the tool's rows of both
        # dispatches are written before the program goes on (with the
        # barrier, a loaded machine may run the tool's handler past
        # hsa_shut_down's wait)
        out, err, log, trace = run(name, co, ["signals"],
                                   env=dict(e, NANO_ANALYZERS="KernelTimeline,MemoryAnalysis",
                                            NANO_AGGREGATE="device"), arch=arch)
        expect_ok(name, out)
        check("nanoprobe: hsa:" not in err and "cannot time its blocks" not in err,
              "%s: nothing to say: %s" % (name, err))
        disp = rows(trace, "select kernel, aggregate, records from nano_dispatch order by id")
        check(disp == [("_Z4axpyfPKfPfi", "device", 0), ("_Z3dynPi", "device", 0)],
              "%s: both dispatches summed by their twins, no record: %s" % (name, disp))
        sql = "select %s from nano_memory order by kernel, line, \"column\"" % MEMORY_COLUMNS
        summed, recorded = rows(trace, sql), rows(host, sql)
        check(summed == recorded and len(summed) == 4,
              "%s: MemoryAnalysis from the sums equals the records' answer:\n%s\n%s" % (name, summed, recorded))
        # the model: each dispatch's workgroups from its packet's grid and
        # workgroup sizes (the stand-in's log), unit = linear id mod 4
        want = []
        for d, kernel in zip(log, ("_Z4axpyfPKfPfi", "_Z3dynPi")):
            grid = [int(v) for v in d["grid"].split(",")]
            wg = [int(v) for v in d["wg"].split(",")]
            groups = [(g + w - 1) // w for g, w in zip(grid, wg)]
            for b in range(groups[0] * groups[1] * groups[2]):
                want.append((kernel, b % groups[0], b // groups[0] % groups[1],
                             b // (groups[0] * groups[1]), b % 4, 1, 1))
        blocks = rows(trace, "select d.kernel, b.block_x, b.block_y, b.block_z, b.unit, "
                      "b.start >= d.start and b.\"end\" <= d.\"end\", b.\"end\" >= b.start "
                      "from nano_block b join nano_dispatch d on d.id = b.dispatch_id "
                      "order by d.id, b.block_z, b.block_y, b.block_x")
        check(blocks == want, "%s: one nano_block row per workgroup, with its unit, inside its dispatch:\n%s\n%s"
              % (name, blocks, want))
        first = rows(trace, "select count(*) from nano_dispatch d where d.start = "
                     "(select min(start) from nano_block b where b.dispatch_id = d.id)")
        check(first == [(2,)], "%s: each dispatch's first block starts with it: %s" % (name, first))
    print("ok summed: the cache's twins sum on the device (fine-grained tables) and time their "
          "workgroups, wave 64 and 32: MemoryAnalysis equals the records' answer")


def case_isa_width():
    """What the machine code made of merged4's four 4-byte loads reaches
    MemoryAnalysis of the cache's twin through kerneldb: llvm-objdump shows
    one 16-byte load (global_load_dwordx4) in the original's gfx90a code, so
    the first load's location counts 16 bytes per lane (isa_bytes), the
    other three are folded into it (merged: no lines of their own), and the
    store keeps its 4 bytes."""
    co = OUT + "/cache.gfx90a.co"
    dis = sh([os.path.join(LLVM_BIN, "llvm-objdump"), "-d", "--disassemble-symbols=_Z7merged4PfPKfi",
              co]).stdout
    # dword loads: the data (a global_load_ushort reads blockDim.x from the hidden arguments)
    loads = re.findall(r"global_load_dword\w*", dis)
    check(loads == ["global_load_dwordx4"], "merged4's data loads in the cache's gfx90a code: %s" % loads)
    env = {"NANO_KERNEL_CACHE": OUT + "/cache", "NANO_INSTRUMENT": "1", "NANO_ANALYZERS": "MemoryAnalysis",
           "FAKE_SITES": sites("gfx90a")}
    out, err, log, trace = run("isa_width", OUT + "/prog5.gfx90a.co", ["merged"], env=env)
    expect_ok("isa_width", out, ("merged4",))
    check([d["kernel"] for d in log] == ["__nano_twin__Z7merged4PfPKfiPv"], "the twin ran: %s" % log)
    import json
    reports = rows(trace, "select report from nano_analysis where analyzer = 'MemoryAnalysis'")
    check(len(reports) == 1, "a MemoryAnalysis report: %s" % reports)
    locs = {l["line"]: l for l in json.loads(reports[0][0])["locations"]}
    check(sorted(locs) == list(MERGED4_LINES), "merged4's locations: %s" % sorted(locs))
    first, store = locs[MERGED4_LINES[0]], locs[MERGED4_LINES[-1]]
    check(first.get("isa_bytes") == 16 and not first.get("merged") and first["lines_used"] > 0,
          "the first load moves 16 bytes per lane: %s" % first)
    for line in MERGED4_LINES[1:4]:
        l = locs[line]
        check(l.get("merged") is True and l.get("lines_used", 0) == 0 and "isa_bytes" not in l,
              "the load at line %d is folded into the first: %s" % (line, l))
    check("isa_bytes" not in store and not store.get("merged") and store["accesses"] == 1000,
          "the store keeps its own 4 bytes: %s" % store)
    # summed on the device but for the four loads, which the table leaves to
    # records (one per lane under the stand-in): every one of them arrives
    check(all(locs[line]["accesses"] == 1000 for line in MERGED4_LINES),
          "every lane's access counted at each location: %s"
          % [(line, locs[line]["accesses"]) for line in MERGED4_LINES])
    disp = rows(trace, "select aggregate, records, dropped, lost_bytes from nano_dispatch")
    check(disp == [("device", 4000, 0, 0)],
          "the dispatch summed on the device, the loads' 4000 records all drained: %s" % disp)
    print("ok isa_width: merged4's dwordx4 (llvm-objdump) reaches MemoryAnalysis through kerneldb: "
          "16 bytes per lane at the first load, the other three merged, their records all drained")


def case_plain_cache():
    co = OUT + "/prog5.gfx90a.co"
    out, err, log, trace = run("plain_cache", co, env={"NANO_KERNEL_CACHE": OUT + "/plain"})
    expect_ok("plain_cache", out)
    check([d["kernel"] for d in log] == ["_Z4axpyfPKfPfi", "_Z3dynPi"], "plain_cache: same names")
    check(all(d["image"] == fnv64(OUT + "/plain.gfx90a.co") for d in log),
          "plain_cache: both kernels ran from the cache's code object")
    orig, alt = metadata(co), metadata(OUT + "/plain.gfx90a.co")
    kargs = program_kernargs(out)
    for d, k in zip(log, ("axpy", "dyn")):
        d["program_group"] = orig[MANGLED[k]]["group"] + (256 if k == "dyn" else 0)
        expect_kernargs("plain_cache " + k, d, kargs[k], orig[MANGLED[k]], alt[MANGLED[k]], twin=False)
    check(not rows(trace, "select name from sqlite_master where name = 'nano_dispatch'"),
          "plain_cache: nothing instrumented")
    print("ok plain_cache: kernels of the same name and arguments replace the program's")


VARIABLES_COUNT = 5  # hsa_app's axpy_count before its variables run


def case_variables():
    """A program whose code object defines module variables (axpy_bias, which
    it sets, and axpy_count, which axpy adds n to and the program reads back;
    llvm-readelf shows them in the program's and the cache's code objects)
    and a cache built from the same source: the cache's twins
    (NANO_INSTRUMENT=1) and its plain kernels replace the program's, with
    the program's values copied into the cache's copies before each dispatch
    and axpy_count back after it, so the program's answers are exact: count
    5 + 2n after two dispatches, every y with the program's bias (hsa_app
    variables). A cache whose axpy_count is 8 bytes, not 4, replaces no axpy,
    said once, naming the variable and both sizes."""
    co, cache_co = OUT + "/variable.gfx90a.co", OUT + "/varcache.gfx90a.co"
    for f in (co, cache_co):
        syms = sh([os.path.join(LLVM_BIN, "llvm-readelf"), "-s", f]).stdout
        for v in ("axpy_count", "axpy_bias"):
            check(re.search(r"OBJECT +GLOBAL .* %s$" % v, syms, re.M), "%s defines %s:\n%s" % (f, v, syms))
    out, _, log, _ = run("variables_alone", co, args=["variables"], tool=False)
    check("ok variables" in out and len(log) == 2, "the program alone gets its answers:\n%s" % out)
    n = 1000  # hsa_app's N
    for name, env, twin in (("variables_twins", {"NANO_INSTRUMENT": "1", "NANO_ANALYZERS": "MemoryAnalysis",
                                                  "FAKE_SITES": sites("gfx90a", "/varcache/kernels_variable.hip.o",
                                                                        ["kernels_variable.hip:14:25",
                                                                         "kernels_variable.hip:14:32",
                                                                         "kernels_variable.hip:14:19",
                                                                         "kernels_variable.hip:20:20"])}, True),
                            ("variables_plain", {}, False)):
        out, err, log, trace = run(name, co, args=["variables"],
                                   env=dict(env, NANO_KERNEL_CACHE=OUT + "/varcache"))
        check("ok variables" in out and "axpy_count %d " % (VARIABLES_COUNT + 2 * n) in out,
              "%s: the program's variables were read and written by the cache's kernels:\n%s%s" % (name, out, err))
        want = "__nano_twin__Z4axpyfPKfPfiPv" if twin else "_Z4axpyfPKfPfi"
        check([d["kernel"] for d in log] == [want, want] and all(d["image"] == fnv64(cache_co) for d in log),
              "%s: both dispatches ran the cache's %s: %s" % (name, want, log))
        check("nanoprobe: hsa:" not in err, "%s: nothing to say: %s" % (name, err))
        ops = rows(trace, "select count(*) from rocpd_op o join rocpd_string s on s.id = o.opType_id "
                          "where s.string = 'KernelExecution'")
        check(ops == [(2,)], "%s: one op per dispatch, the barriers none: %s" % (name, ops))
        if twin:
            got = rows(trace, "select line, \"column\", kind, sum(accesses) from nano_memory "
                              "group by line, \"column\", kind order by \"column\"")
            check(got == [(14, 19, "store", 2 * n), (14, 25, "load", 2 * n), (14, 32, "load", 2 * n)],
                  "%s: MemoryAnalysis of both dispatches at the cache's axpy sites: %s" % (name, got))
    out, err, log, _ = run("variables_wide", co, args=["variables"],
                           env={"NANO_KERNEL_CACHE": OUT + "/widecache", "NANO_INSTRUMENT": "1"})
    check("ok variables" in out and all(d["image"] == fnv64(co) for d in log) and len(log) == 2,
          "variables_wide: the program's own axpy ran: %s\n%s" % (log, out))
    said = [ln for ln in err.splitlines() if "does not replace _Z4axpyfPKfPfi:" in ln]
    check(len(said) == 1 and "its module variable axpy_count is 4 bytes in the program and 8 in the cache" in said[0]
          and said[0].endswith("it runs as built"),
          "variables_wide: the refusal is said once, naming the variable and its sizes: %s" % err)
    # copies the runtime refuses: said once per kernel and direction, the queue goes on (no hang)
    out, err, log, _ = run("variables_refused", co, args=["variables"],
                           env={"NANO_KERNEL_CACHE": OUT + "/varcache", "FAKE_HSA_COPY_REFUSE": "1"})
    check("WRONG variables" in out and "axpy_count %d " % VARIABLES_COUNT in out and len(log) == 2 and
          all(d["image"] == fnv64(cache_co) for d in log),
          "variables_refused: the cache's kernels ran without the copies, the program's count untouched:\n%s" % out)
    for direction, then in (("to", "the dispatch computed with the cache's values"),
                            ("back from", "the program's variables miss the dispatch's writes")):
        said = [ln for ln in err.splitlines()
                if "copying the module variables of _Z4axpyfPKfPfi %s the cache's" % direction in ln]
        check(len(said) == 1 and said[0].endswith(then), "variables_refused: said once (%s): %s" % (direction, err))
    # a handler the runtime refuses (registrations 1 and 2 time the
    # program's two copies of its variables; hsa_app submits both dispatches
    # before either completes: 3 and 4 are the first dispatch's end and its
    # copies' start): that dispatch runs as built (untimed where its end's
    # handler was refused), the other is replaced, the answers exact
    for nth, said, ops in (("3", "is not timed and runs as built: no async handler", 1),
                           ("4", "runs as built: no async handler for its module variables' copies", 2)):
        name = "variables_handler_%s" % nth
        out, err, log, trace = run(name, co, args=["variables"],
                                   env={"NANO_KERNEL_CACHE": OUT + "/varcache", "FAKE_HSA_HANDLER_REFUSE": nth})
        check("ok variables" in out and [d["image"] for d in log] == [fnv64(co), fnv64(cache_co)],
              "%s: the first dispatch as built, the second the cache's, the answers exact: %s\n%s" % (name, log, out))
        check(len([ln for ln in err.splitlines() if said in ln]) == 1, "%s: said once: %s" % (name, err))
        got = rows(trace, "select count(*) from rocpd_op o join rocpd_string s on s.id = o.opType_id "
                          "where s.string = 'KernelExecution'")
        check(got == [(ops,)], "%s: %d timed dispatches: %s" % (name, ops, got))
    print("ok variables: the cache's twins and plain kernels compute with the program's module variables "
          "(copied in before each dispatch, the writable ones back after); one of another size refuses, said")


def case_mismatch_and_bad_cache():
    co = OUT + "/prog5.gfx90a.co"
    junk = OUT + "/junkdir"
    os.makedirs(junk, exist_ok=True)
    with open(junk + "/junk.co", "w") as f:
        f.write("not a code object\n")
    cache = ":".join([OUT + "/mismatch", junk, OUT + "/plain", OUT + "/plain"])
    out, err, log, _ = run("mismatch", co, env={"NANO_KERNEL_CACHE": cache})
    expect_ok("mismatch", out)
    check(log[0]["image"] == fnv64(OUT + "/plain.gfx90a.co"), "mismatch: axpy ran the plain cache's")
    check(log[1]["image"] == fnv64(co),
          "mismatch: dyn ran the program's (the first entry for it, in mismatch/, is refused)")
    refusals = [ln for ln in err.splitlines() if "does not replace _Z3dynPi" in ln]
    check(len(refusals) == 1 and "explicit arguments" in refusals[0],
          "mismatch: the refusal is said once, with the reason:\n%s" % err)
    junk_lines = [ln for ln in err.splitlines() if "junk.co" in ln]
    check(len(junk_lines) == 1 and "skipped" in junk_lines[0], "mismatch: the junk file is said once:\n%s" % err)
    dup = [ln for ln in err.splitlines() if "the first is used" in ln]
    kernels = len(metadata(OUT + "/plain.gfx90a.co"))
    check(len(dup) == kernels, "mismatch: each of the %d kernels twice in the cache is said once:\n%s"
          % (kernels, err))
    print("ok mismatch: a different argument list refused once, junk and duplicates said once")


def case_full_pool():
    co = OUT + "/prog5.gfx90a.co"
    out, err, log, _ = run("full_pool", co, ["concurrent"],
                           {"FAKE_HSA_KERNEL_US": "300000", "NANO_KERNEL_CACHE": OUT + "/plain",
                            "NANO_KERNARG_POOL": "1"})
    expect_ok("full_pool", out, ("concurrent axpy",))
    images = sorted(d["image"] for d in log)
    check(images == sorted([fnv64(co), fnv64(OUT + "/plain.gfx90a.co")]),
          "full_pool: of two dispatches at once with one kernarg slot, one is replaced, one runs as built")
    check(err.count("kernarg pool (1 slots, NANO_KERNARG_POOL) is full") == 1 and
          "1 dispatches ran as built: the kernarg pool was full" in err,
          "full_pool: said once, counted at the end:\n%s" % err)
    print("ok full_pool: a dispatch that finds the kernarg pool full runs as built, said and counted")


def case_shutdown():
    co = OUT + "/prog5.gfx90a.co"
    out, err, log, trace = run("shutdown_quick", co, ["nowait"], {"FAKE_HSA_KERNEL_US": "200000"})
    check("still running" not in err and len(rows(trace, "select * from op")) == 1,
          "shutdown: a kernel that completes within the wait is in the trace:\n%s" % err)
    out, err, log, trace = run("shutdown_slow", co, ["nowait"], {"FAKE_HSA_KERNEL_US": "3000000"})
    check("1 kernel dispatches were still running at hsa_shut_down (after 1000 ms): they may be "
          "missing from the trace" in err and not rows(trace, "select * from op"),
          "shutdown: a kernel still running is said, not silently missing:\n%s" % err)
    print("ok shutdown: kernels running at hsa_shut_down get a second, then are said")


def case_two_tools():
    co = OUT + "/prog5.gfx90a.co"
    other = OUT + "/libother_tool.so"
    out, err, log, trace = run("two_tools", co, env={"HSA_TOOLS_LIB": RPD_LIB + " " + other})
    expect_ok("two_tools", out)
    check("other tool: 2 queues" in err, "two_tools: the other tool saw the program's queues:\n%s" % err)
    check(len(rows(trace, "select * from rocpd_op")) == 2, "two_tools: nanoprobe traced both kernels")
    out, err, log, trace = run("two_tools_after", co, env={"HSA_TOOLS_LIB": other + " " + RPD_LIB})
    expect_ok("two_tools_after", out)
    check(len(rows(trace, "select * from rocpd_op")) == 2, "two_tools_after: nanoprobe traced both kernels")
    check("hsa_queue_create is wrapped by %s" % other in err and "other tool: 0 queues" in err,
          "two_tools_after: the tool nanoprobe bypasses is named:\n%s" % err)
    print("ok two_tools: another tool in HSA_TOOLS_LIB loads and works beside nanoprobe's "
          "(listed after it; listed before, it is told it is bypassed)")


def case_nanoprobe_run():
    co = OUT + "/prog5.gfx90a.co"
    trace = OUT + "/run.rpd"
    remove(trace, OUT + "/run.log")
    e = {k: v for k, v in os.environ.items() if not k.startswith(("NANO_", "HSA_", "RPDT_"))}
    e.update(FAKE_HSA_LOG=OUT + "/run.log", FAKE_SITES=sites("gfx90a"))
    r = subprocess.run([NANOPROBE, "run", "-q", "-o", trace, "-c", OUT + "/cache", "-a", "MemoryAnalysis",
                        "-l", OUT + "/run.txt", "--", OUT + "/hsa_app", co],
                       capture_output=True, text=True, env=e, timeout=120)
    check(r.returncode == 0, "nanoprobe run -c: exit %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
    expect_ok("nanoprobe run", r.stdout)
    kernels = [parse(ln)["kernel"] for ln in open(OUT + "/run.log").read().splitlines()]
    check(kernels == ["__nano_twin__Z4axpyfPKfPfiPv", "__nano_twin__Z3dynPiPv"],
          "nanoprobe run -i -c DIR -a MemoryAnalysis: the twins ran: %s" % kernels)
    check(len(rows(trace, "select * from nano_analysis")) == 2, "nanoprobe run: the reports are in the trace")
    print("ok nanoprobe run -c DIR -a MemoryAnalysis -- ./hsa_app: the tool set up, twins from the cache")


# hip_app's HIP calls with "graph" and a module (hip_app.hip), in order.
HIP_APP_CALLS = ["hipMalloc", "hipMalloc", "hipMemcpy", "hipMemcpy", "hipLaunchKernel", "hipMalloc",
                 "hipLaunchKernel", "hipDeviceSynchronize", "hipMemcpy", "hipMemcpy",
                 "hipModuleLoadData", "hipModuleLaunchKernel", "hipMemcpy",
                 "hipExtModuleLaunchKernel", "hipMemcpy", "hipMemcpy", "hipStreamCreate",
                 "hipStreamBeginCapture", "hipLaunchKernel", "hipStreamEndCapture", "hipGraphInstantiate",
                 "hipGraphLaunch", "hipGraphLaunch", "hipStreamSynchronize", "hipMemcpy", "hipMemcpyHtoD",
                 "hipLaunchCooperativeKernel", "hipMemcpyDtoHAsync", "hipStreamSynchronize",
                 "hipStreamCreate", "hipLaunchCooperativeKernelMultiDevice", "hipDeviceSynchronize", "hipMemcpy",
                 "hipExtLaunchMultiKernelMultiDevice", "hipDeviceSynchronize", "hipMemcpy", "hipMemcpy2D",
                 "hipMemcpyPeer", "hipMemcpyPeer", "hipMemcpyWithStream", "hipFree", "hipFree", "hipFree"]
HIP_APP_OK = ("axpy", "dyn", "module axpy", "ext module axpy", "graph axpy", "cooperative axpy",
              "multi-device axpy", "ext multi-device axpy",
              "2d peer and stream copies")


def case_hip_program():
    """A program built by plain hipcc, on the stand-in HIP over the stand-in ROCr."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NANO_", "HSA_", "RPDT_"))}
    env.update(LD_LIBRARY_PATH=OUT + "/hip:" + OUT, FAKE_HSA_LOG=OUT + "/hip.log", FAKE_SITES=sites("gfx90a"))
    app = OUT + "/hip/hip_app"
    module = OUT + "/prog5.gfx90a.co"  # run again through hipModuleLaunchKernel
    r = subprocess.run([app, module, "graph"], capture_output=True, text=True, env=env, timeout=120)
    check(r.returncode == 0, "hip_app alone: exit %d %s" % (r.returncode, r.stderr))
    expect_ok("hip_app alone", r.stdout, HIP_APP_OK)
    # "preloaded": the tracer by LD_PRELOAD alone, as rocmProfileData's
    # runTracer.sh loads its own: it names itself in HSA_TOOLS_LIB; "hip62":
    # the same on the runtime as HIP 6.2 (its tracer interface), whose calls
    # must give the same rows
    for mode, args in (("traced", []), ("preloaded", None), ("hip62", None),
                       ("twins", ["-i", "-c", OUT + "/cache", "-a", "MemoryAnalysis"])):
        trace = "%s/hip_%s.rpd" % (OUT, mode)
        remove(trace, OUT + "/hip.log")
        if args is None:
            libs = OUT + ("/hip6:" if mode == "hip62" else "/hip:") + OUT
            r = subprocess.run([app, module, "graph"], capture_output=True, text=True, timeout=120,
                               env=dict(env, LD_PRELOAD=tracer_preload(), RPDT_FILENAME=trace,
                                        LD_LIBRARY_PATH=libs))
        else:
            r = subprocess.run([NANOPROBE, "run", "-q", "-o", trace] + args +
                               ["-l", OUT + "/hip.txt", "--", app, module, "graph"],
                               capture_output=True, text=True, env=env, timeout=120)
        check(r.returncode == 0, "%s -- hip_app: exit %d\n%s" % (args, r.returncode, r.stderr))
        expect_ok("hip_app " + mode, r.stdout, HIP_APP_OK)
        log = [parse(ln) for ln in open(OUT + "/hip.log").read().splitlines()]
        # module, ext, graph twice, coop, the two multi-device calls
        want = ["_Z4axpyfPKfPfi", "_Z3dynPi"] + ["_Z4axpyfPKfPfi"] * 7
        if mode == "twins":
            want = ["__nano_twin_%sPv" % k for k in want]
        check([d["kernel"] for d in log] == want, "hip_app %s: the kernels that ran: %s" % (mode, log))
        ops = rows(trace, "select description from op order by start")
        check(len(ops) == 9, "hip_app %s: the nine kernels are ops: %s" % (mode, ops))
        # the HIP calls, through the runtime's callbacks (roctracer's contract)
        calls = [r[0] for r in rows(trace, "select apiName from api where domain = 'hip' order by start")]
        check(calls == HIP_APP_CALLS, "hip_app %s: the program's HIP calls in order: %s" % (mode, calls))
        check(not rows(trace, "select * from api where apiName = 'hsa_kernel_dispatch'"),
              "hip_app %s: a launch's row is its hipLaunchKernel" % mode)
        launches = rows(trace, "select k.gridX, k.workgroupX, k.groupSegmentSize, s.string, o.description "
                        "from api a join rocpd_kernelapi k on k.api_ptr_id = a.id "
                        "join rocpd_string s on s.id = k.kernelName_id join rocpd_api_ops ao on ao.api_id = a.id "
                        "join op o on o.id = ao.op_id where a.apiName like '%Launch%Kernel' "
                        "or a.apiName like '%Launch%MultiDevice' order by a.start")
        mark = " [instrumented]" if mode == "twins" else ""
        axpy, dyn = "axpy(float, float const*, float*, int)", "dyn(int*)"  # a C++ program: demangled
        check(launches == [(1024, 256, 0, axpy, axpy + mark), (64, 64, 256, dyn, dyn + mark),
                           (1024, 256, 0, axpy, axpy + mark), (1024, 256, 0, axpy, axpy + mark),
                           (1024, 256, 0, axpy, axpy + mark), (1024, 256, 0, axpy, axpy + mark),
                           (1024, 256, 0, axpy, axpy + mark)],
              "hip_app %s: each launch's arguments (a multi-device call's: its first launch's), and "
              "its kernel's op linked to it: %s" % (mode, launches))
        copies = rows(trace, "select c.size, c.kind, c.sync from api a join rocpd_copyapi c on c.api_ptr_id = a.id "
                      "order by a.start")
        check(copies == HIP_APP_COPIES, "hip_app %s: the copies' sizes and kinds: %s" % (mode, copies))
        shapes = rows(trace, "select a.apiName, c.width, c.height, c.dstDevice, c.srcDevice, c.stream "
                      "from api a join rocpd_copyapi c on c.api_ptr_id = a.id where a.apiName in "
                      "('hipMemcpy2D', 'hipMemcpyPeer', 'hipMemcpyWithStream') order by a.start")
        check(shapes == [("hipMemcpy2D", 160, 25, 0, 0, ""), ("hipMemcpyPeer", 0, 0, 0, 0, ""),
                         ("hipMemcpyPeer", 0, 0, 0, 0, ""), ("hipMemcpyWithStream", 0, 0, 0, 0, "(nil)")],
              "hip_app %s: the 2D copy's width and height, the peer copies' devices: %s" % (mode, shapes))
        begin = rows(trace, "select args from api where apiName = 'hipStreamBeginCapture'")
        check(len(begin) == 1 and re.fullmatch(r"stream = 0x[0-9a-f]+ \| mode = 0", begin[0][0]),
              "hip_app %s: the capture's stream and mode, as rocmProfileData writes them: %s" % (mode, begin))
        if mode == "twins":
            # MemoryAnalysis alone (NANO_AGGREGATE=auto): the twins sum their
            # accesses, every one of them, and make no record
            disp = rows(trace, "select d.kernel, d.backend, d.aggregate, d.records, sum(m.accesses) "
                        "from nano_dispatch d join nano_memory m on m.dispatch_id = d.id "
                        "group by d.id order by d.id")
            check(disp == [("_Z4axpyfPKfPfi", "hsa", "device", 0, 3000), ("_Z3dynPi", "hsa", "device", 0, 64)] +
                  [("_Z4axpyfPKfPfi", "hsa", "device", 0, 3000)] * 7,
                  "hip_app twins: the dispatches summed by their twins, every access: %s" % disp)
            check(len(rows(trace, "select * from nano_analysis")) == 9, "hip_app twins: the reports")
        graph_ops = rows(trace, "select count(*) from api a join rocpd_api_ops ao on ao.api_id = a.id "
                         "where a.apiName = 'hipGraphLaunch'")
        check(graph_ops == [(2,)], "hip_app %s: each graph launch's kernel linked to it: %s" % (mode, graph_ops))
        check_allocs_and_graph("hip_app " + mode, trace)
    # a tracer interface of a version whose layout the tool does not know:
    # said once, no HIP rows, every kernel still an op; the program runs
    trace = OUT + "/hip_unknown.rpd"
    remove(trace)
    r = subprocess.run([app, module, "graph"], capture_output=True, text=True, timeout=120,
                       env=dict(env, LD_PRELOAD=tracer_preload(), RPDT_FILENAME=trace,
                                LD_LIBRARY_PATH=OUT + "/hip6x:" + OUT))
    check(r.returncode == 0 and r.stderr.count("HIP 6.9, read from its file name): its calls are "
                                                "not traced") == 1,
          "hip_app, unknown tracer layout: exit %d, said once: %s" % (r.returncode, r.stderr))
    expect_ok("hip_app unknown tracer layout", r.stdout, HIP_APP_OK)
    check(not rows(trace, "select * from api where domain = 'hip'") and
          len(rows(trace, "select * from op")) == 9,
          "hip_app, unknown tracer layout: no HIP rows, the nine kernels ops")
    # NANO_HSA_TOOL=0: the preloaded tracer leaves HSA_TOOLS_LIB alone
    trace = OUT + "/hip_no_tool.rpd"
    remove(trace)
    r = subprocess.run([app, module, "graph"], capture_output=True, text=True, timeout=120,
                       env=dict(env, LD_PRELOAD=tracer_preload(), RPDT_FILENAME=trace, NANO_HSA_TOOL="0"))
    check(r.returncode == 0, "hip_app, NANO_HSA_TOOL=0: exit %d %s" % (r.returncode, r.stderr))
    check(not rows(trace, "select * from api where domain = 'hip'") and not rows(trace, "select * from op"),
          "hip_app, NANO_HSA_TOOL=0: no HIP calls, no kernels")
    print("ok hip_program: a program built by plain hipcc: its HIP calls with their kernels and copies "
          "(nanoprobe run, or LD_PRELOAD alone), then the cache's twins (nanoprobe run -i -c DIR -a "
          "MemoryAnalysis)")



# hip_app's copies (size, kind, sync) in order: hipMemcpyDeviceToDevice is 3;
# a 2D copy's size is its width times its height.
HIP_APP_COPIES = [(4000, 1, 1), (4000, 1, 1), (4000, 2, 1), (256, 2, 1), (4000, 2, 1), (4000, 2, 1),
                  (4000, 1, 1), (4000, 2, 1), (4000, 1, 1), (4000, 2, 0), (4000, 2, 1), (4000, 2, 1),
                  (40 * 4 * 25, 1, 1),
                  (256, 3, 1), (256, 3, 1), (4000, 2, 0)]
# The same calls as Debian's HIP 5.2 runtime reports them: its hipMemcpyPeer
# calls hipMemcpy itself, and each call is reported.
REAL_HIP_CALLS = [c for call in HIP_APP_CALLS
                  for c in ([call, "hipMemcpy"] if call == "hipMemcpyPeer" else [call])]
# The GPU work of hip_app on that runtime, in order, each with the call that
# submitted it: the program's kernels, the runtime's own (a cooperative
# launch's global wave sync set up first; a peer copy's blit kernel, under
# the hipMemcpy inside it), and the copies its copy engines make (the
# device-to-host ones and the 2D one; its small host-to-device copies are
# written by the CPU and reach no engine).
D2H, H2D = "CopyDeviceToHost", "CopyHostToDevice"
REAL_HIP_WORK = [("hipLaunchKernel", "axpy"), ("hipLaunchKernel", "dyn"), ("hipMemcpy", D2H),
                 ("hipMemcpy", D2H), ("hipModuleLaunchKernel", "axpy"), ("hipMemcpy", D2H),
                 ("hipExtModuleLaunchKernel", "axpy"), ("hipMemcpy", D2H), ("hipGraphLaunch", "axpy"),
                 ("hipGraphLaunch", "axpy"), ("hipMemcpy", D2H),
                 ("hipLaunchCooperativeKernel", "__amd_rocclr_gwsInit"), ("hipLaunchCooperativeKernel", "axpy"),
                 ("hipMemcpyDtoHAsync", D2H),
                 ("hipLaunchCooperativeKernelMultiDevice", "__amd_rocclr_gwsInit"),
                 ("hipLaunchCooperativeKernelMultiDevice", "axpy"), ("hipMemcpy", D2H),
                 ("hipExtLaunchMultiKernelMultiDevice", "axpy"), ("hipMemcpy", D2H),
                 ("hipMemcpy2D", H2D), ("hipMemcpy", "__amd_rocclr_copyBuffer"),
                 ("hipMemcpy", "__amd_rocclr_copyBuffer"), ("hipMemcpyWithStream", D2H)]
REAL_HIP_KERNELS = [w for _, w in REAL_HIP_WORK if not w.startswith("Copy")]
# What the tool says of HIP 5.2's callbacks while its calls are traced.
CALLBACKS_SAID = "HIP 5.2 runs no stream callback or graph host node while its calls are traced"


def case_real_hip():
    """hip_app built by plain hipcc, on Debian's real HIP runtime
    (libamdhip64.so.5: its device setup, memory pools, staging and SDMA
    copies, blit and cooperative kernels, queues and signals, and the
    roctracer callback spawner) over the stand-in ROCr: traced by the
    preloaded tracer alone (which names itself in HSA_TOOLS_LIB), then with
    the cache's twins (nanoprobe run -i -c DIR -a MemoryAnalysis)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NANO_", "HSA_", "RPDT_"))}
    env.update(LD_LIBRARY_PATH=OUT, FAKE_HSA_LOG=OUT + "/real_hip.log", FAKE_SITES=sites("gfx90a"),
               FAKE_HSA_COPY_LOG=OUT + "/real_hip_copies.log")
    app = OUT + "/hip/hip_app"
    # the runtime's comgr (ROCm 5.2) cannot name a code object v5's ISA: a v4 module
    module = OUT + "/prog4.gfx90a.co"
    ldd = sh(["ldd", app], env=env).stdout
    hip = re.search(r"libamdhip64\.so\.5 => (\S+)", ldd)
    check(hip and not hip.group(1).startswith(OUT) and re.search(r"libhsa-runtime64\.so\.1 => " +
                                                                  re.escape(OUT), ldd),
          "hip_app on the real HIP runtime over the stand-in ROCr:\n%s" % ldd)
    for mode in ("alone", "preloaded", "twins"):
        trace = "%s/real_hip_%s.rpd" % (OUT, mode)
        remove(trace, OUT + "/real_hip.log", OUT + "/real_hip_copies.log")
        cmd = [app, module, "graph"]
        e = dict(env)
        if mode == "preloaded":
            e.update(LD_PRELOAD=tracer_preload(), RPDT_FILENAME=trace)
        elif mode == "twins":
            cmd = [NANOPROBE, "run", "-q", "-o", trace, "-i", "-c", OUT + "/cache", "-a", "MemoryAnalysis",
                   "-l", OUT + "/real_hip.txt", "--"] + cmd
        r = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=120)
        check(r.returncode == 0, "real HIP, %s: exit %d\n%s%s" % (mode, r.returncode, r.stdout, r.stderr))
        expect_ok("real HIP " + mode, r.stdout, HIP_APP_OK)
        check(r.stderr.count(CALLBACKS_SAID) == (mode != "alone"),
              "real HIP, %s: HIP 5.2's callbacks said once while its calls are traced:\n%s" % (mode, r.stderr))
        log = [parse(ln) for ln in open(OUT + "/real_hip.log").read().splitlines()]
        twin = "__nano_twin_" if mode == "twins" else ""
        want = [k if k.startswith("__amd") else twin + {"axpy": "_Z4axpyfPKfPfi", "dyn": "_Z3dynPi"}[k] +
                ("Pv" if twin else "") for k in REAL_HIP_KERNELS]
        check([d["kernel"] for d in log] == want, "real HIP, %s: the kernels that ran: %s" %
              (mode, [d["kernel"] for d in log]))
        if mode == "alone":
            continue
        calls = [c[0] for c in rows(trace, "select apiName from api where domain = 'hip' order by start")]
        check(calls == REAL_HIP_CALLS, "real HIP, %s: the program's HIP calls in order, through the "
              "runtime's callbacks: %s" % (mode, calls))
        # their arguments as the real runtime wrote them: copies (a peer
        # copy's and the hipMemcpy inside it), launches, allocations
        copies = rows(trace, "select c.size, c.kind, c.sync from api a join rocpd_copyapi c "
                      "on c.api_ptr_id = a.id order by a.start")
        check(copies == [c for copy in HIP_APP_COPIES for c in [copy] * (2 if copy[1] == 3 else 1)],
              "real HIP, %s: the copies' sizes and kinds: %s" % (mode, copies))
        launches = rows(trace, "select a.apiName, k.gridX, k.workgroupX, k.groupSegmentSize, s.string "
                        "from api a join rocpd_kernelapi k on k.api_ptr_id = a.id "
                        "join rocpd_string s on s.id = k.kernelName_id order by a.start")
        axpy, dyn = "axpy(float, float const*, float*, int)", "dyn(int*)"
        check(launches == [("hipLaunchKernel", 1024, 256, 0, axpy), ("hipLaunchKernel", 64, 64, 256, dyn),
                           ("hipModuleLaunchKernel", 1024, 256, 0, axpy),
                           ("hipExtModuleLaunchKernel", 1024, 256, 0, axpy),
                           ("hipLaunchKernel", 1024, 256, 0, axpy),
                           ("hipLaunchCooperativeKernel", 1024, 256, 0, axpy),
                           ("hipLaunchCooperativeKernelMultiDevice", 1024, 256, 0, axpy),
                           ("hipExtLaunchMultiKernelMultiDevice", 1024, 256, 0, axpy)],
              "real HIP, %s: each launch's grid, workgroup, LDS and kernel: %s" % (mode, launches))
        check_allocs_and_graph("real HIP, " + mode, trace)
        shown = {"axpy": "axpy(float, float const*, float*, int)", "dyn": "dyn(int*)"}
        mark = " [instrumented]" if mode == "twins" else ""
        want = [(c, "", w) if w.startswith("Copy") else (c, shown[w] + mark if w in shown else w, "KernelExecution")
                for c, w in REAL_HIP_WORK]
        ops = rows(trace, "select a.apiName, o.description, o.opType, o.start, o.end from op o "
                   "left join rocpd_api_ops ao on ao.op_id = o.id left join api a on a.id = ao.api_id "
                   "order by o.start")
        check([o[:3] for o in ops] == want and all(o[3] < o[4] for o in ops),
              "real HIP, %s: every kernel and copy an op with its GPU times, linked to the call that "
              "submitted it: %s" % (mode, ops))
        # the copies' times are the engine's (its system domain is
        # CLOCK_MONOTONIC_RAW, the trace's CLOCK_MONOTONIC)
        skew = time.clock_gettime_ns(time.CLOCK_MONOTONIC) - time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
        engine = [dict(f.split("=") for f in ln.split()[1:]) for ln in open(OUT + "/real_hip_copies.log")]
        copies = [o for o in ops if o[2].startswith("Copy")]
        check(len(engine) == len(copies) and
              all(abs((o[4] - o[3]) - (int(c["end"]) - int(c["start"]))) <= 2 and
                  abs(o[3] - int(c["start"]) - skew) < 2000000 for o, c in zip(copies, engine)),
              "real HIP, %s: each copy's op has the engine's times: %s\n%s" % (mode, copies, engine))
        if mode == "twins":
            disp = rows(trace, "select d.kernel, d.aggregate, d.records, sum(m.accesses) "
                        "from nano_dispatch d join nano_memory m on m.dispatch_id = d.id "
                        "group by d.id order by d.id")
            check(disp == [("_Z4axpyfPKfPfi", "device", 0, 3000), ("_Z3dynPi", "device", 0, 64)] +
                  [("_Z4axpyfPKfPfi", "device", 0, 3000)] * 7,
                  "real HIP, twins: the program's dispatches summed by the cache's twins: %s" % disp)
    # NANO_HIP_CALLS=0: no HIP rows (the runtime's profiler stays off), each
    # kernel still an op, of an hsa_kernel_dispatch row
    trace = OUT + "/real_hip_no_calls.rpd"
    remove(trace)
    r = subprocess.run([app, module, "graph"], capture_output=True, text=True, timeout=120,
                       env=dict(env, LD_PRELOAD=tracer_preload(), RPDT_FILENAME=trace, NANO_HIP_CALLS="0"))
    check(r.returncode == 0 and CALLBACKS_SAID not in r.stderr,
          "real HIP, NANO_HIP_CALLS=0: exit %d, nothing said of callbacks: %s" % (r.returncode, r.stderr))
    expect_ok("real HIP NANO_HIP_CALLS=0", r.stdout, HIP_APP_OK)
    kernels = rows(trace, "select a.apiName from op o join rocpd_api_ops ao on ao.op_id = o.id "
                   "join api a on a.id = ao.api_id where o.opType = 'KernelExecution'")
    check(not rows(trace, "select * from api where domain = 'hip'") and
          kernels == [("hsa_kernel_dispatch",)] * len(REAL_HIP_KERNELS),
          "real HIP, NANO_HIP_CALLS=0: no HIP rows, every kernel an op of its dispatch row: %s" % kernels)
    real_hip_plugin(env)
    real_hip_variables(env)
    print("ok real_hip: Debian's HIP runtime over the stand-in ROCr: its calls through its callbacks, "
          "every kernel (its own too) and engine copy an op linked to its call, the cache's twins swapped in; "
          "the plugin-built program's launches run their twins through the GPU back end on that runtime")


def real_hip_variables(env):
    """Module variables on Debian's HIP runtime: the program sets and reads
    them (hipMemcpyToSymbol, FromSymbol); the kernel cache's kernels, plain
    and twins, compute with them and leave their writes there."""
    app, cache = OUT + "/hip/hip_vars", OUT + "/varcache"
    cached = fnv64(OUT + "/varcache.gfx90a.co")
    for mode in ("alone", "plain", "twins"):
        log = OUT + "/real_hip_vars.log"
        remove(log)
        e = dict(env, FAKE_HSA_LOG=log, RPDT_FILENAME=OUT + "/real_hip_vars.rpd")
        cmd = [app]
        if mode == "plain":
            e.update(LD_PRELOAD=tracer_preload(), NANO_KERNEL_CACHE=cache)
        elif mode == "twins":
            cmd = [NANOPROBE, "run", "-q", "-f", "-o", OUT + "/real_hip_vars.rpd", "-i", "-c", cache, "--"] + cmd
        r = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=120)
        check(r.returncode == 0 and "ok hip variables count 2005 " in r.stdout,
              "real HIP variables, %s: the program's bias used, its count bumped twice:\n%s%s" %
              (mode, r.stdout, r.stderr))
        ran = [parse(ln) for ln in open(log).read().splitlines()]
        kernel = "__nano_twin__Z4axpyfPKfPfiPv" if mode == "twins" else "_Z4axpyfPKfPfi"
        check([d["kernel"] for d in ran] == [kernel] * 2 and
              all((d["image"] == cached) == (mode != "alone") for d in ran),
              "real HIP variables, %s: the kernels that ran, the cache's or the program's: %s" % (mode, ran))


def real_hip_plugin(env):
    """hip_app built with the plugin, under nanoprobe run -i, on Debian's HIP
    5.2: the GPU back end on the real runtime, which has no
    hipLaunchHostFunc (a stream callback ends a twin's dispatch; in graphs
    the original runs, said once)."""
    app = OUT + "/hip/hip_app_plugin"
    trace = OUT + "/real_hip_plugin.rpd"
    remove(trace, OUT + "/real_hip.log")
    r = subprocess.run([NANOPROBE, "run", "-q", "-o", trace, "-i", "-a", "MemoryAnalysis", "-l",
                        OUT + "/real_hip_plugin.txt", "--", app, OUT + "/prog4.gfx90a.co", "graph"],
                       capture_output=True, text=True, timeout=120,
                       env=dict(env, FAKE_SITES=plugin_sites()))
    check(r.returncode == 0, "real HIP, plugin: exit %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
    expect_ok("real HIP plugin", r.stdout, HIP_APP_OK)
    said = [ln for ln in r.stderr.splitlines() if ln.startswith("nanoprobe") and "trace written" not in ln
            and CALLBACKS_SAID not in ln]
    check(len(said) == 1 and "_Z4axpyfPKfPfi: captured into a graph, into which this hip runtime captures "
          "no host function" in said[0], "real HIP, plugin: the graph's launch said once: %s" % said)
    # the plugin's launches run their twins (hipLaunchKernel's two, the
    # cooperative one, the two multi-device calls' of one device: HIP 5.2
    # cannot say a stream's device, and the thread's is the one); the
    # module's and the graph's launch the original; the back end's own table
    # zeroing (memsets: the runtime's fill kernel) is no op of the trace
    twin, axpy, dyn = "__nano_twin_%sPv", "_Z4axpyfPKfPfi", "_Z3dynPi"
    gws, copy = "__amd_rocclr_gwsInit", "__amd_rocclr_copyBuffer"
    ran = [twin % axpy, twin % dyn, axpy, axpy, axpy, axpy, gws, twin % axpy, gws, twin % axpy,
           twin % axpy, copy, copy]
    log = [parse(ln)["kernel"] for ln in open(OUT + "/real_hip.log").read().splitlines()]
    check([k for k in log if k != "__amd_rocclr_fillBufferAligned"] == ran,
          "real HIP, plugin: the kernels that ran: %s" % log)
    shown_as = {twin % axpy: "axpy(float, float const*, float*, int) [instrumented]",
                twin % dyn: "dyn(int*) [instrumented]", axpy: "axpy(float, float const*, float*, int)"}
    ops = [o[0] for o in rows(trace, "select description from op where opType = 'KernelExecution' "
                                     "order by start")]
    check(ops == [shown_as.get(k, k) for k in ran], "real HIP, plugin: one op per kernel, named: %s" % ops)
    calls = [c[0] for c in rows(trace, "select apiName from api where domain = 'hip' order by start")]
    check(calls == REAL_HIP_CALLS, "real HIP, plugin: the program's HIP calls only, in order: %s" % calls)
    disp = rows(trace, "select d.kernel, d.backend, d.aggregate, d.records, group_concat(m.accesses) "
                "from nano_dispatch d join nano_memory m on m.dispatch_id = d.id group by d.id order by d.id")
    a3 = ("hip", "device", 0, "1000,1000,1000")
    check(disp == [(axpy,) + a3, (dyn, "hip", "device", 0, "64")] + [(axpy,) + a3] * 3,
          "real HIP, plugin: the twins' dispatches, summed on the device, every access: %s" % disp)


def case_plugin_program():
    """hip_app built with the plugin (hipcc), run by nanoprobe run -i (which
    also loads the HSA tool), on the stand-in HIP over the stand-in ROCr:
    the plugin's launches run the program's own twins (no cache), the HSA
    tool records each dispatch once, as the kernel the program launched,
    marked instrumented, and the program's HIP calls are the trace's, none
    of the GPU back end's own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NANO_", "HSA_", "RPDT_"))}
    app = OUT + "/hip/hip_app_plugin"
    env.update(LD_LIBRARY_PATH=OUT + "/hip:" + OUT, FAKE_HSA_LOG=OUT + "/plugin.log", FAKE_SITES=plugin_sites())
    module = OUT + "/prog5.gfx90a.co"
    trace = OUT + "/plugin.rpd"
    remove(trace, OUT + "/plugin.log")
    r = subprocess.run([NANOPROBE, "run", "-q", "-o", trace, "-i", "-a", "MemoryAnalysis", "-l",
                        OUT + "/plugin.txt", "--", app, module, "graph"],
                       capture_output=True, text=True, env=env, timeout=120)
    check(r.returncode == 0, "nanoprobe run -i -- hip_app_plugin: exit %d\n%s" % (r.returncode, r.stderr))
    expect_ok("hip_app_plugin", r.stdout, HIP_APP_OK)
    said = [ln for ln in r.stderr.splitlines() if ln.startswith("nanoprobe") and "trace written" not in ln]
    check(not said, "hip_app_plugin: nothing to say: %s" % said)
    # the plugin's launches (axpy, dyn, the graph's two replays, the
    # cooperative one, the two multi-device calls') run the twins; the
    # module's two launches, which the plugin cannot route, the original
    twin, axpy, dyn = "__nano_twin_%sPv", "_Z4axpyfPKfPfi", "_Z3dynPi"
    log = [parse(ln) for ln in open(OUT + "/plugin.log").read().splitlines()]
    ran = [twin % axpy, twin % dyn, axpy, axpy] + [twin % axpy] * 5
    check([d["kernel"] for d in log] == ran, "hip_app_plugin: the kernels that ran: %s" % log)
    # the HSA tool records each dispatch once, as the kernel the program
    # launched (demangled), a twin's marked
    shown_as = {twin % axpy: "axpy(float, float const*, float*, int) [instrumented]",
                twin % dyn: "dyn(int*) [instrumented]", axpy: "axpy(float, float const*, float*, int)"}
    ops = [r[0] for r in rows(trace, "select description from op order by start")]
    check(ops == [shown_as[k] for k in ran], "hip_app_plugin: one op per dispatch, named: %s" % ops)
    # the program's HIP calls, none of the back end's own (its copies,
    # events, host memory), and nanoLaunchKernel before each routed launch
    calls = [r[0] for r in rows(trace, "select apiName from api where domain = 'hip' order by start")]
    check(calls == HIP_APP_CALLS, "hip_app_plugin: the program's HIP calls in order: %s" % calls)
    routed = [r[0] for r in rows(trace, "select b.apiName from api a join api b on b.id = "
                                 "(select c.id from api c where c.start >= a.start and c.domain = 'hip' "
                                 "order by c.start limit 1) where a.apiName = 'nanoLaunchKernel' order by a.start")]
    check(routed == ["hipLaunchKernel"] * 3 + ["hipLaunchCooperativeKernel",
                                               "hipLaunchCooperativeKernelMultiDevice",
                                               "hipExtLaunchMultiKernelMultiDevice"],
          "hip_app_plugin: each routed launch's call after its nanoLaunchKernel row: %s" % routed)
    check(not rows(trace, "select * from api where apiName = 'hsa_kernel_dispatch'"),
          "hip_app_plugin: a launch's row is its HIP call")
    # seven dispatches (the graph's replays too), summed on the device by the
    # twins (MemoryAnalysis alone), every access: axpy's 1000 threads load
    # x and y and store y, dyn's 64 store once
    disp = rows(trace, "select d.kernel, d.backend, d.aggregate, d.records, group_concat(m.accesses) "
                "from nano_dispatch d join nano_memory m on m.dispatch_id = d.id group by d.id order by d.id")
    a3 = ("hip", "device", 0, "1000,1000,1000")
    check(disp == [(axpy,) + a3, (dyn, "hip", "device", 0, "64")] + [(axpy,) + a3] * 5,
          "hip_app_plugin: the dispatches, summed by their twins, every access: %s" % disp)
    print("ok plugin_program: hip_app built with the plugin under nanoprobe run -i (HSA tool and GPU "
          "back end together): twins of its launches and replays, one op each, its own HIP calls only")

if __name__ == "__main__":
    build_all()
    which = sys.argv[12:] or ["plain_and_timed", "concurrent", "twins", "summed", "isa_width", "plain_cache",
                              "variables",
                              "mismatch_and_bad_cache", "full_pool", "shutdown", "two_tools", "nanoprobe_run", "hip_program",
                              "plugin_program", "real_hip"]
    for c in which:
        globals()["case_" + c]()
