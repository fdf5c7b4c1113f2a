#!/usr/bin/env python3
"""Instrumented CPU kernels through the runtime, end to end: NANO_LAUNCH routed
by the plugin, twins run as virtual waves, records drained, analyzers
reporting, results in the trace. One case per run:

    test_dispatch.py CASE --bin BUILD/tests/dispatch --lib libnano_rpd.so --src tests/dispatch
                          --work DIR --example BUILD/examples/memory --rpd BUILD/tools/rpd/rpd
    test_dispatch.py --list

Every expectation is computed here from the access pattern (arrays are 4 KiB
aligned; the CPU's lines are 64 bytes), never copied from a run. The source
lines of accesses are found by the @markers in kernels.c.
"""
import argparse
import html.parser
import json
import math
import os
import re
import signal
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import check, fail  # noqa: E402 (tests/testlib.py)

ARGS = None
LINE = 64


def run(prog, args, env=None, expect_rc=0, preload=True, llvm="15", fixed_addresses=False):
    """Runs app (or another program of the build) with the runtime preloaded
    (fixed_addresses: without address space randomisation, so that two runs
    place their arrays alike); returns (stdout JSON of the app, [report
    objects], stderr)."""
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("NANO_", "RPDT_")) and k != "LD_PRELOAD"}
    out = os.path.join(ARGS.work, "reports.jsonl")
    if os.path.exists(out):
        os.unlink(out)
    e.update({"RPDT_FILENAME": os.path.join(ARGS.work, "trace.rpd"),
              "NANO_ANALYZER_OUTPUT": out, "NANO_ANALYZER_FORMAT": "json",
              "NANO_CPU_THREADS": "2"})
    if preload:
        e["LD_PRELOAD"] = ARGS.lib
    e.update({k: str(v) for k, v in (env or {}).items()})
    path = prog if os.path.isabs(prog) else os.path.join(ARGS.bin, prog)
    fixed = ["setarch", os.uname().machine, "-R"] if fixed_addresses else []
    p = subprocess.run(fixed + [path] + [str(a) for a in args], env=e, capture_output=True,
                       text=True, timeout=120)
    if expect_rc is not None and p.returncode != expect_rc:
        fail("%s %s exited %d (expected %d)\nstdout: %s\nstderr: %s"
             % (path, args, p.returncode, expect_rc, p.stdout, p.stderr))
    last = p.stdout.splitlines()[-1] if p.stdout else ""
    info = json.loads(last) if p.returncode == 0 and last.startswith("{") else None
    reports = []
    if os.path.exists(out) and e["NANO_ANALYZER_FORMAT"] == "json":
        with open(out) as f:
            for n, line in enumerate(f, 1):
                try:
                    reports.append(json.loads(line))
                except ValueError as x:
                    fail("%s line %d is not JSON (%s): %r" % (out, n, x, line))
    return info, reports, p.stderr


def app(llvm="15"):
    return "app_llvm%s" % llvm


def fresh_trace():
    path = os.path.join(ARGS.work, "trace.rpd")
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)
    return path


def markers():
    """@name -> line number in kernels.c (and kernels_cxx.cpp)."""
    lines = {}
    for src in ("kernels.c", "kernels_cxx.cpp"):
        with open(os.path.join(ARGS.src, src)) as f:
            for n, text in enumerate(f, 1):
                for m in re.finditer(r"@([\w.]+)", text):
                    lines[m.group(1)] = n
    return lines


def located(reports, marker, kind=None):
    """The MemoryAnalysis objects at the marker's line (one per column, kind,
    space), summed over dispatches."""
    want = markers()[marker]
    rows = [r for r in reports if r["analyzer"] == "MemoryAnalysis" and r["line"] == want
            and r["file"].endswith(("kernels.c", "kernels_cxx.cpp"))
            and (kind is None or r["kind"] == kind)]
    check(rows, "no MemoryAnalysis location at @%s (line %d) kind %s; got %s"
          % (marker, want, kind, sorted({(r["line"], r["kind"]) for r in reports
                                          if r["analyzer"] == "MemoryAnalysis"})))
    return rows


def one(reports, marker, kind=None):
    rows = located(reports, marker, kind)
    check(len(rows) == 1, "@%s %s: %d locations, expected 1: %s" % (marker, kind, len(rows), rows))
    return rows[0]


def dispatches(reports):
    return [r for r in reports if r["analyzer"] == "dispatch"]


def waves(n, block, wave):
    return (n // block) * math.ceil(block / wave)


# ---- cases ------------------------------------------------------------------

def case_coalesced():
    """k_copy: every wave's load and store use exactly the lines they need,
    summed from records (host) or where the waves ran (device, the default
    for MemoryAnalysis: no record is made)."""
    for wave in (64, 32):
        for where in ("host", "device"):
            info, rep, _ = run(app(), ["copy"], {"NANO_INSTRUMENT": "1", "NANO_CPU_WAVE": wave,
                                                 "NANO_AGGREGATE": where})
            n, w = info["n"], waves(info["n"], info["block"], wave)
            for kind in ("load", "store"):
                r = one(rep, "copy", kind)
                need = w * wave * 4 // LINE
                check(r["executions"] == w and r["accesses"] == n and r["lines_needed"] == need
                      and r["lines_used"] == need and r["bytes"] == 4 * n,
                      "wave %d %s %s: %s (want %d executions, %d lines)" % (wave, where, kind, r, w, need))
            d = dispatches(rep)
            records = 2 * w if where == "host" else 0
            check(len(d) == 1 and d[0]["aggregate"] == where and d[0]["wave_accesses"] == 2 * w
                  and d[0]["records"] == records and d[0]["dropped"] == 0
                  and d[0]["record_bytes"] == records * 64 and d[0]["wave_size"] == wave,
                  "dispatch summary (%s): %s (coalesced records are 64 bytes)" % (where, d))


def case_strided():
    """k_stride by k: used = k x needed for k up to a line of floats (16)."""
    for k in (1, 2, 4, 8, 16):
        info, rep, _ = run(app(), ["stride", k], {"NANO_INSTRUMENT": "1"})
        w = waves(info["n"], info["block"], 64)
        r = one(rep, "stride.load", "load")
        check(r["lines_needed"] == 4 * w and r["lines_used"] == 4 * k * w,
              "stride %d: %s (want %d needed, %d used)" % (k, r, 4 * w, 4 * k * w))
        s = one(rep, "stride.store", "store")
        check(s["lines_used"] == s["lines_needed"] == 4 * w, "stride %d store: %s" % (k, s))


def case_reverse():
    """k_reverse: lanes reading downwards, a float off the lines, use the
    lines their addresses touch, computed here, summed from records (host:
    compact records in descending progression) or where the waves ran;
    Heatmap counts each lane's load and store on the page of its address."""
    for wave in (64, 32):
        for where in ("host", "device"):
            info, rep, _ = run(app(), ["reverse"], {"NANO_INSTRUMENT": "1", "NANO_CPU_WAVE": wave,
                                                    "NANO_ANALYZERS": "MemoryAnalysis,Heatmap",
                                                    "NANO_AGGREGATE": where})
            n, block = info["n"], info["block"]
            heat = [h for h in rep if h["analyzer"] == "Heatmap"]
            check(len(heat) == 1, "reverse wave %d %s: Heatmap reports %s" % (wave, where, heat))
            page = heat[0]["page_bytes"]
            need = used = 0
            pages = {}
            for b0 in range(0, n, block):
                for w0 in range(b0, b0 + block, wave):
                    lanes = range(w0, min(w0 + wave, b0 + block))
                    addrs = [info["src"] + 4 * (n - i) for i in lanes]
                    need += math.ceil(4 * len(set(addrs)) / LINE)
                    used += len({a // LINE for a in addrs})
                    for a in addrs + [info["dst"] + 4 * i for i in lanes]:
                        pages[a // page * page] = pages.get(a // page * page, 0) + 1
            r = one(rep, "reverse", "load")
            check(r["lines_needed"] == need and r["lines_used"] == used and r["accesses"] == n,
                  "reverse wave %d %s: %s (want %d needed, %d used)" % (wave, where, r, need, used))
            check(used > need, "the pattern does not straddle lines: %d used, %d needed" % (used, need))
            got = {p["start"]: p["accesses"] for p in heat[0]["pages"]}
            check(got == pages, "reverse wave %d %s: Heatmap pages %s, want %s" % (wave, where, got, pages))


def case_random():
    """k_gather: the scattered load uses what its indices touch, computed here."""
    info, rep, _ = run(app(), ["gather"], {"NANO_INSTRUMENT": "1"})
    n = info["n"]
    idx = [(i * i * 31 + 17) % n for i in range(n)]
    need = used = 0
    for w0 in range(0, n, 64):
        addrs = [info["src"] + 4 * idx[i] for i in range(w0, w0 + 64)]
        need += math.ceil(4 * len(set(addrs)) / LINE)
        used += len({a // LINE for a in addrs})
    r = one(rep, "gather.load", "load")
    check(r["lines_needed"] == need and r["lines_used"] == used,
          "gather: %s (want %d needed, %d used)" % (r, need, used))
    check(used > need, "the pattern is not scattered: %d used, %d needed" % (used, need))


def case_banks():
    """k_bank in shared memory: conflicts 2(gcd(s,32) - 1) per wave64 for a
    4-byte stride of s words (lanes 0-31 and 32-63 served apart), gcd - 1 for
    wave32; 8-byte stride 2: 4 (wave64, 16-lane sets) and 2 (wave32); a
    broadcast read: none; global memory is not counted as shared."""
    for wave in (64, 32):
        for s in (1, 2, 4, 32):
            info, rep, _ = run(app(), ["bank", s], {"NANO_INSTRUMENT": "1", "NANO_CPU_WAVE": wave})
            waves64 = 64 // wave
            g = math.gcd(s, 32)
            per_wave = (2 * (g - 1)) if wave == 64 else (g - 1)
            r = one(rep, "bank.store", "store")
            check(r["space"] == "shared" and r["bank_conflicts"] == per_wave * waves64
                  and r["executions"] == waves64 and "lines_used" not in r,
                  "wave %d stride %d: %s (want %d conflicts)" % (wave, s, r, per_wave * waves64))
            r8 = one(rep, "bank.store8", "store")
            want8 = 4 if wave == 64 else 2 * 2
            check(r8["space"] == "shared" and r8["bank_conflicts"] == want8,
                  "wave %d, 8-byte stride 2: %s (want %d)" % (wave, r8, want8))
            b = one(rep, "bank.broadcast", "load")
            check(b["space"] == "shared" and b["bank_conflicts"] == 0, "broadcast: %s" % b)
            o = one(rep, "bank.broadcast", "store")
            check(o["space"] == "global" and o["lines_used"] == o["lines_needed"],
                  "the global store: %s" % o)


def bank_model(wave, lanes, addr, size, banks=32):
    """Bank conflicts of one shared-memory access as the documented model has
    them, by brute force: lanes served in phases (wave64: AMD's ds_*_b128
    sets for accesses over 8 bytes, halves or quarters otherwise; wave32:
    32, 16 or 8 consecutive lanes by size), each phase as many cycles as its
    busiest bank has distinct 4-byte words."""
    def phase(lane):
        if wave == 64 and size > 8:
            return (lane // 32) * 4 + [0, 1, 2, 3, 1, 0, 3, 2][(lane % 32) // 4]
        return lane // (32 if size <= 4 else 16 if size <= 8 else 8)
    words = {}
    for lane in lanes:
        first, last = addr(lane) // 4, (addr(lane) + size - 1) // 4
        words.setdefault(phase(lane), set()).update(range(first, last + 1))
    total = 0
    for ws in words.values():
        per_bank = [0] * banks
        for w in ws:
            per_bank[w % banks] += 1
        total += max(per_bank) - 1
    return total


def case_mixed_space():
    """One generic load whose even lanes read shared memory and odd lanes
    global memory: each lane counted in its own space (shared: bank
    conflicts by the model above; global: cache lines), both paths."""
    for wave in (64, 32):
        for where in ("host", "device"):
            info, rep, _ = run(app(), ["mixed"], {"NANO_INSTRUMENT": "1", "NANO_CPU_WAVE": wave,
                                                 "NANO_AGGREGATE": where})
            n, block = info["n"], info["block"]
            rows = {r["space"]: r for r in located(rep, "mixed.load", "load")}
            check(sorted(rows) == ["global", "shared"], "wave %d %s: spaces %s" % (wave, where, rows))
            waves_ = waves(n, block, wave)
            conflicts = used = needed = 0
            for w0 in range(0, n, wave):
                lanes = [t for t in range(w0, w0 + wave) if t % block % 2 == 0]
                conflicts += bank_model(wave, [t - w0 for t in lanes], lambda l: 8 * ((w0 + l) % block), 4)
                addrs = [info["a"] + 4 * t for t in range(w0, w0 + wave) if t % block % 2]
                used += len({a // LINE for a in addrs})
                needed += -(-4 * len(addrs) // LINE)
            sh, gl = rows["shared"], rows["global"]
            check(sh["executions"] == waves_ and sh["accesses"] == n // 2
                  and sh["bank_conflicts"] == conflicts,
                  "wave %d %s shared: %s (want %d executions, %d conflicts)" % (wave, where, sh, waves_, conflicts))
            check(gl["executions"] == waves_ and gl["accesses"] == n // 2 and gl["lines_used"] == used
                  and gl["lines_needed"] == needed,
                  "wave %d %s global: %s (want %d used, %d needed)" % (wave, where, gl, used, needed))


def case_bankwide():
    """A 256-byte copy per lane out of shared memory (64 words: every bank
    several times over) is counted whole, as the brute-force model counts it,
    at strides that put every lane on the same banks (256), that overlap
    (64, 4), and contiguous (256-byte records side by side)."""
    for wave in (64, 32):
        for s in (256, 64, 4, 1024):
            info, rep, _ = run(app(), ["bankwide", s], {"NANO_INSTRUMENT": "1", "NANO_CPU_WAVE": wave})
            want = sum(bank_model(wave, range(w * wave, (w + 1) * wave) if wave == 32 else range(64),
                                  lambda lane: lane * s, 256)
                       for w in range(64 // wave))
            r = one(rep, "bankwide.copy", "load")
            check(r["space"] == "shared" and r["access_bytes"] == 256 and r["bank_conflicts"] == want,
                  "wave %d stride %d: %s (want %d conflicts)" % (wave, s, r, want))


def case_lane_stack():
    """A kernel thread that overflows its lane's stack under instrumentation
    (NANO_CPU_STACK) is named, not a bare SIGSEGV; with a larger stack it runs."""
    _, _, err = run(app(), ["deep", 64], {"NANO_INSTRUMENT": "1", "NANO_CPU_STACK": "65536"},
                    expect_rc=-signal.SIGSEGV)
    check("a thread of a CPU kernel overflowed its stack of 65536 bytes (NANO_CPU_STACK" in err,
          "the overflow is named: " + err[-500:])
    info, rep, _ = run(app(), ["deep", 64], {"NANO_INSTRUMENT": "1", "NANO_CPU_STACK": "1M"})
    check(info and info["depth"] == 64 and len(dispatches(rep)) == 1, "a 1 MiB lane stack holds it")


def case_calls():
    """A device function's load is recorded at its own line, named after it."""
    info, rep, _ = run(app(), ["calls"], {"NANO_INSTRUMENT": "1"})
    w = waves(info["n"], info["block"], 64)
    r = one(rep, "calls.helper", "load")
    check(r["function"] == "helper" and r["executions"] == w and r["accesses"] == info["n"],
          "helper: %s" % r)
    s = one(rep, "calls.store", "store")
    check(s["function"] == "k_calls" and s["executions"] == w, "store: %s" % s)


def gpu_records(n, block, wave, iterations):
    """The records a GPU makes of an access inside a loop: per wave and
    iteration, one record of the lanes whose predicate holds there (lanes that
    skip it wait at the loop's end, as SIMT reconverges at the immediate post-
    dominator). iterations: [(k, predicate(t), element(i))]. Returns
    (executions, accesses, lines used, lines needed) of 4-byte accesses."""
    ex = acc = used = needed = 0
    for w0 in range(0, n, wave):
        for _, pred, elem in iterations:
            addrs = [4 * elem(i) for i in range(w0, min(w0 + wave, n)) if pred(i % block)]
            if not addrs:
                continue
            ex += 1
            acc += len(addrs)
            used += len({a // LINE for a in addrs})
            needed += -(-4 * len(set(addrs)) // LINE)
    return ex, acc, used, needed


def case_reconverge_loops():
    """Virtual waves reconverge as a GPU's do inside loops: a branch in a loop
    (directly, through a call, in a nested loop) is one execution per
    iteration by the lanes that take it, never lanes of two iterations in one
    record; a variable-length array of a different size per lane does not
    split the access after it. Counted against a model of SIMT execution,
    wave 64 and 32, both plugins."""
    halves = [(k, (lambda k: lambda t: (t + k) % 2 == 0)(k), (lambda k: lambda i: i * 4 + k)(k))
              for k in range(4)]
    nested = [(k * 2 + m, (lambda k, m: lambda t: (t + k + m) % 2 == 0)(k, m),
               (lambda k, m: lambda i: i * 4 + k * 2 + m)(k, m)) for k in range(2) for m in range(2)]
    plain = [(0, lambda t: True, lambda i: i)]
    for llvm in ("15", "22"):
        for wave in (64, 32):
            for sc, marker, kind, model in (("loopbranch", "loopbranch.load", "load", halves),
                                            ("loopcall", "loopcall.load", "load", halves),
                                            ("nested", "nested.load", "load", nested),
                                            ("vla", "vla.load", "load", plain)):
                info, rep, _ = run(app(llvm), [sc], {"NANO_INSTRUMENT": "1", "NANO_CPU_WAVE": wave})
                ex, acc, used, needed = gpu_records(info["n"], info["block"], wave, model)
                r = one(rep, marker, kind)
                got = (r["executions"], r["accesses"], r["lines_used"], r["lines_needed"])
                check(got == (ex, acc, used, needed),
                      "llvm %s wave %d %s: executions, accesses, lines used, needed %s; "
                      "a GPU makes %s" % (llvm, wave, sc, got, (ex, acc, used, needed)))


def case_atomics():
    """Atomics: all lanes on one counter (one word, one line per wave), and
    each lane on its own (coalesced)."""
    info, rep, _ = run(app(), ["atomic"], {"NANO_INSTRUMENT": "1"})
    w = waves(info["n"], info["block"], 64)
    one_counter = one(rep, "atomic.one", "atomic")
    check(one_counter["executions"] == w and one_counter["accesses"] == info["n"]
          and one_counter["lines_needed"] == w and one_counter["lines_used"] == w,
          "one counter: %s" % one_counter)
    each = one(rep, "atomic.each", "atomic")
    check(each["lines_needed"] == each["lines_used"] == 4 * w, "each: %s" % each)


def case_kernel_atomics():
    """A kernel's atomics are counted the same whichever variant runs (the
    host atomics pass runs before the twins are cloned, so a twin carries its
    kernel's hook calls on the kernel's sites): two fetch_adds per thread."""
    for llvm in ("15", "22"):
        for env in ({}, {"NANO_INSTRUMENT": "1", "NANO_ANALYZERS": "none"}):
            trace = fresh_trace()
            info, _, err = run(app(llvm), ["atomic"], env)
            db = sqlite3.connect(trace)
            totals = db.execute("SELECT kind, count FROM nano_atomic_totals").fetchall()
            sites = db.execute("SELECT count(*) FROM nano_atomic_site").fetchone()[0]
            db.close()
            check(totals == [("__atomic_fetch_add", 2 * info["n"])] and sites == 2,
                  "llvm%s %s: %s over %d sites, want %d fetch_adds over 2 (%s)"
                  % (llvm, env or "uninstrumented", totals, sites, 2 * info["n"], err[-300:]))


def case_reconverge():
    """Divergence: a quarter of the lanes call pick_a, the rest pick_b; the
    store after the join is one record of the whole wave. A loop of thread % 4
    trips: 48, 32 and 16 lanes in its three iterations, then all 64 store."""
    info, rep, _ = run(app(), ["branch"], {"NANO_INSTRUMENT": "1"})
    w = waves(info["n"], info["block"], 64)
    a, b = one(rep, "branch.a", "load"), one(rep, "branch.b", "load")
    check(a["executions"] == w and a["accesses"] == 16 * w and b["executions"] == w
          and b["accesses"] == 48 * w, "branches: %s / %s" % (a, b))
    s = one(rep, "branch.store", "store")
    check(s["executions"] == w and s["accesses"] == 64 * w,
          "the join did not reconverge: %s (want %d records of 64 lanes)" % (s, w))
    info, rep, _ = run(app(), ["loop"], {"NANO_INSTRUMENT": "1"})
    body = one(rep, "loop.body", "load")
    check(body["executions"] == 3 * w and body["accesses"] == (48 + 32 + 16) * w,
          "loop body: %s" % body)
    s = one(rep, "loop.store", "store")
    check(s["executions"] == w and s["accesses"] == 64 * w, "after the loop: %s" % s)


def case_addresses():
    """AddressLogger: every access of k_copy, exact: each thread loads src+4i
    and stores dst+4i, in its block and wave, with its lane; CSV and JSON."""
    info, rep, _ = run(app(), ["copy", 2], {"NANO_INSTRUMENT": "1", "NANO_ANALYZERS": "AddressLogger",
                                           "NANO_CPU_WAVE": "32"})
    n = info["n"]
    rows = [r for r in rep if r["analyzer"] == "AddressLogger"]
    check(len(rows) == 2 * n, "%d accesses logged, want %d" % (len(rows), 2 * n))
    seen = set()
    for r in rows:
        i = r["block"][0] * info["block"] + r["thread"]
        base = info["src"] if r["kind"] == "load" else info["dst"]
        check(r["address"] == base + 4 * i and r["size"] == 4 and r["wave"] == r["thread"] // 32
              and r["lane"] == r["thread"] % 32 and r["line"] == markers()["copy"],
              "access %s (thread %d)" % (r, i))
        seen.add((r["kind"], i))
    check(len(seen) == 2 * n, "some accesses twice, others never")
    # CSV: the same rows, a header once
    e = {"NANO_INSTRUMENT": "1", "NANO_ANALYZERS": "AddressLogger", "NANO_ANALYZER_FORMAT": "text"}
    run(app(), ["copy", 2], e)
    with open(os.path.join(ARGS.work, "reports.jsonl")) as f:
        lines = [l for l in f.read().splitlines() if not l.startswith("nanoprobe:")]
    check(lines[0].startswith("kernel,dispatch,site,file,line,column,kind,space,block_x")
          and len(lines) == 1 + 2 * n and all(l.startswith("k_copy,1,0x") for l in lines[1:]),
          "CSV: %s" % lines[:3])


def case_selection():
    """NANO_DISPATCHES all, first, N and random; NANO_KERNELS by name; an
    uninstrumented dispatch still runs (app checks its results)."""
    def picked(env):
        _, rep, _ = run(app(), ["repeat", 5], dict({"NANO_INSTRUMENT": "1"}, **env))
        return sorted((d["kernel"], d["kernel_dispatch"]) for d in dispatches(rep))
    got = picked({})
    check(got == sorted([(k, i) for k in ("k_calls", "k_copy") for i in range(1, 6)]), "all: %s" % got)
    check(picked({"NANO_DISPATCHES": "first"}) == [("k_calls", 1), ("k_copy", 1)], "first")
    check(picked({"NANO_DISPATCHES": "3"}) == [("k_calls", 3), ("k_copy", 3)], "third")
    check(picked({"NANO_DISPATCHES": "9"}) == [], "a ninth of five")
    check(picked({"NANO_KERNELS": "k_co.*"}) == [("k_copy", i) for i in range(1, 6)], "regex")
    check(picked({"NANO_KERNELS": "copy"}) == [], "the regex matches whole names")
    # a NANO_KERNELS that selects none of the kernels launched is said at exit
    _, _, err = run(app(), ["repeat", 2], {"NANO_INSTRUMENT": "1", "NANO_KERNELS": "copy"})
    check(re.search(r"NANO_KERNELS=copy selected none of the 2 kernels launched \((k_calls, k_copy|"
                    r"k_copy, k_calls)\): nothing was instrumented", err), "unmatched NANO_KERNELS: " + err)
    _, _, err = run(app(), ["repeat", 2], {"NANO_INSTRUMENT": "1", "NANO_KERNELS": "k_copy"})
    check("selected none" not in err, "a NANO_KERNELS that selects a kernel is not said: " + err)
    # random: one dispatch per kernel, uniform over its dispatches, reported at exit
    counts = {}
    for seed in range(40):
        got = picked({"NANO_DISPATCHES": "random", "NANO_RANDOM_SEED": str(seed)})
        check(len(got) == 2 and got[0][0] == "k_calls" and got[1][0] == "k_copy",
              "random, seed %d: %s" % (seed, got))
        for _, k in got:
            counts[k] = counts.get(k, 0) + 1
    check(set(counts) == {1, 2, 3, 4, 5},
          "random never picked some dispatches in 80 picks: %s" % counts)
    # the same seed, the same picks
    check(picked({"NANO_DISPATCHES": "random", "NANO_RANDOM_SEED": "7"}) ==
          picked({"NANO_DISPATCHES": "random", "NANO_RANDOM_SEED": "7"}), "seeded picks repeat")


def case_cxx():
    """C++: a namespaced template kernel, selected by its bare name, its
    demangled name, or its mangled name; the twin is the mangled name + Pv."""
    for pattern in ("scale", "void blas::scale<float>\\(float\\*, float\\)", "_ZN4blas5scaleIfEEvPT_S1_"):
        _, rep, _ = run("app_cxx_llvm15", [], {"NANO_INSTRUMENT": "1", "NANO_KERNELS": pattern})
        names = sorted(d["kernel_name"] for d in dispatches(rep))
        want = ["void blas::scale<double>(double*, double)", "void blas::scale<float>(float*, float)"]
        if pattern != "scale":
            want = want[1:]
        check(names == want, "NANO_KERNELS=%s: %s" % (pattern, names))
    r = one(rep, "cxx.scale", "load")
    check(r["executions"] == 4 and r["accesses"] == 256 and r["function"] == "_ZN4blas5scaleIfEEvPT_S1_",
          "scale<float>: %s" % r)


def case_blocks():
    """NANO_BLOCKS: only blocks 1 and 2 of 4 are recorded (the others run the
    original kernel)."""
    info, rep, _ = run(app(), ["copy", 4], {"NANO_INSTRUMENT": "1", "NANO_BLOCKS": "x=1:2",
                                           "NANO_ANALYZERS": "AddressLogger,MemoryAnalysis"})
    blocks = {r["block"][0] for r in rep if r["analyzer"] == "AddressLogger"}
    check(blocks == {1, 2}, "blocks recorded: %s" % blocks)
    r = one(rep, "copy", "load")
    check(r["executions"] == 2 * info["block"] // 64, "executions: %s" % r)


def case_drops():
    """A tiny buffer that drops at once when full: every record is either
    delivered or counted as dropped, and the count is reported. (Whether any
    drop happens depends on the drain thread falling behind two producers;
    with 2048 records for a 16-record ring it does, and a run where it did not
    is tried again, at most 3 times.)"""
    for attempt in range(3):
        fresh_trace()
        info, rep, err = run(app(), ["copy", 256], {"NANO_INSTRUMENT": "1", "NANO_BUFFER_SIZE": "1024",
                                                   "NANO_BUFFER_SPINS": "0", "NANO_AGGREGATE": "host"})
        w = waves(info["n"], info["block"], 64)
        d = dispatches(rep)
        check(len(d) == 1, "dispatches: %s" % d)
        d = d[0]
        check(d["records"] + d["dropped"] == 2 * w,
              "records %d + dropped %d, want %d" % (d["records"], d["dropped"], 2 * w))
        load, store = one(rep, "copy", "load"), one(rep, "copy", "store")
        check(load["executions"] + store["executions"] == d["records"], "analyzed what arrived")
        # every result says how many records it lacks
        check(load["lost_records"] == store["lost_records"] == d["dropped"],
              "lost_records %d/%d, dropped %d" % (load["lost_records"], store["lost_records"], d["dropped"]))
        if d["dropped"] > 0:
            db = sqlite3.connect(os.path.join(ARGS.work, "trace.rpd"))
            docs = [json.loads(r[0]) for r in db.execute("SELECT report FROM nano_analysis")]
            db.close()
            check(docs and all(doc["complete"] is False and doc["lost_records"] == d["dropped"]
                               for doc in docs),
                  "the stored results say they are incomplete: %s" % [(doc.get("complete"), doc.get("lost_records")) for doc in docs])
            check("records dropped" in err and "dispatch 1 of k_copy" in err,
                  "no warning on stderr: %s" % err)
            return
    fail("nothing was dropped in 3 runs of 2048 records through a 16-record ring")


def case_trace():
    """Results in the trace: nano_dispatch rows, the analyses and their views,
    an API row per launch with its kernel arguments."""
    path = fresh_trace()
    info, rep, _ = run(app(), ["stride", 4], {"NANO_INSTRUMENT": "1",
                                             "NANO_ANALYZERS": "MemoryAnalysis,Heatmap"})
    con = sqlite3.connect(path)
    d = con.execute("select id, kernel, kernel_dispatch, backend, wave_size, grid_x, block_x, "
                    "records, dropped, aggregate, api_id from nano_dispatch").fetchall()
    check(len(d) == 1 and d[0][1:10] == ("k_stride", 1, "cpu", 64, 2, 128, 0, 0, "device"),
          "nano_dispatch: %s" % d)
    api = con.execute("select apiName, domain, args from api where id = ?", (d[0][10],)).fetchall()
    check(api == [("nanoLaunchKernel", "nano", "k_stride")], "the launch's api row: %s" % api)
    k = con.execute("select gridX, workgroupX, S.string from rocpd_kernelapi K join rocpd_string S "
                    "on S.id = K.kernelName_id").fetchall()
    check(k == [(2, 128, "k_stride")], "kernelapi: %s" % k)
    mem = con.execute("select kind, lines_needed, lines_used from nano_memory where line = ?",
                      (markers()["stride.load"],)).fetchall()
    w = waves(info["n"], info["block"], 64)
    check(mem == [("load", 4 * w, 16 * w)], "nano_memory: %s" % mem)
    heat = con.execute("select sum(accesses) from nano_heatmap").fetchone()[0]
    check(heat == 2 * info["n"], "nano_heatmap accesses %s" % heat)
    an = con.execute("select analyzer from nano_analysis order by analyzer").fetchall()
    check(an == [("Heatmap",), ("MemoryAnalysis",)], "nano_analysis: %s" % an)
    con.close()


def case_trace_upgrade():
    """A trace written before nano_dispatch had its aggregate column: rpd info
    reads it (the path shows as host), and a run that appends to it adds the
    column, its old rows NULL, its new row 'device'."""
    path = fresh_trace()
    run(app(), ["copy"], {"NANO_INSTRUMENT": "1"})
    con = sqlite3.connect(path)
    con.execute("ALTER TABLE nano_dispatch DROP COLUMN aggregate")
    con.commit()
    con.close()
    out = subprocess.run([ARGS.rpd, "info", path], capture_output=True, text=True)
    check(out.returncode == 0 and re.search(r"k_copy\s+1\s+cpu\s+cpu\s+64\s+4x1x1\s+128x1x1\s+host\s",
                                            out.stdout), "rpd info of the old file:\n%s%s" % (out.stdout, out.stderr))
    run(app(), ["copy"], {"NANO_INSTRUMENT": "1"})
    con = sqlite3.connect(path)
    rows = con.execute("select aggregate from nano_dispatch order by id").fetchall()
    con.close()
    check(rows == [(None,), ("device",)], "after the append: %s" % rows)


def timeline_model(rows):
    """KernelTimeline's figures from its rows [(x, y, z, unit, start, end)],
    as its README defines them."""
    d = sorted(r[5] - r[4] for r in rows)
    busy, last = {}, {}
    for r in rows:
        busy[r[3]] = busy.get(r[3], 0) + r[5] - r[4]
        last[r[3]] = max(last.get(r[3], r[5]), r[5])
    mean = sum(busy.values()) / len(busy)
    end = max(r[5] for r in rows)
    return {"blocks": len(rows), "units": len(busy), "span_ns": end - min(r[4] for r in rows),
            "block_ns": {"min": d[0], "median": d[len(d) // 2], "max": d[-1]},
            "unit_busy_max": max(busy.values()), "imbalance": max(busy.values()) / mean,
            "tail_ns": end - min(last.values())}


def case_kernel_timeline():
    """KernelTimeline: one nano_block row per block (NANO_BLOCKS respected),
    inside its dispatch, on the worker that ran it; the figures match a model
    of the rows; alone it makes no record (the original runs, timed); beside
    MemoryAnalysis both answer; rpd export shows the blocks as slices per
    unit, rpd report draws them."""
    for analyzers, blocks_env, want in (("KernelTimeline", None, 4),
                                        ("KernelTimeline,MemoryAnalysis", None, 4),
                                        ("AddressLogger,KernelTimeline", None, 4),
                                        ("KernelTimeline", "x=1:2", 2)):
        path = fresh_trace()
        env = {"NANO_INSTRUMENT": "1", "NANO_ANALYZERS": analyzers}
        if blocks_env:
            env["NANO_BLOCKS"] = blocks_env
        info, rep, _ = run(app(), ["copy"], env)
        d = dispatches(rep)
        check(len(d) == 1, "%s: dispatches %s" % (analyzers, d))
        if analyzers == "KernelTimeline":
            check(d[0]["records"] == 0 and d[0]["wave_accesses"] == 0 and d[0]["aggregate"] == "device",
                  "KernelTimeline alone made records: %s" % d)
        con = sqlite3.connect(path)
        rows = con.execute("select block_x, block_y, block_z, unit, start, \"end\" from nano_block").fetchall()
        span = con.execute("select start, \"end\" from nano_dispatch").fetchone()
        con.close()
        blocks = sorted(r[0] for r in rows)
        lo = 1 if blocks_env else 0
        check(blocks == list(range(lo, lo + want)) and all(r[1] == r[2] == 0 for r in rows),
              "%s %s: blocks %s" % (analyzers, blocks_env, rows))
        check(all(0 <= r[3] < 2 and span[0] <= r[4] <= r[5] <= span[1] for r in rows),
              "%s: rows outside their dispatch %s or on no worker: %s" % (analyzers, span, rows))
        t = [r for r in rep if r["analyzer"] == "KernelTimeline"]
        m = timeline_model(rows)
        check(len(t) == 1 and all(t[0][k] == m[k] for k in ("blocks", "units", "span_ns", "block_ns", "tail_ns"))
              and t[0]["unit_busy_ns"]["max"] == m["unit_busy_max"]
              and abs(t[0]["imbalance"] - m["imbalance"]) < 1e-3,
              "%s: figures %s, model %s" % (analyzers, t, m))
        if "MemoryAnalysis" in analyzers:
            w = waves(info["n"], info["block"], 64)
            check(one(rep, "copy", "load")["executions"] == w, "MemoryAnalysis beside KernelTimeline")
    out = os.path.join(ARGS.work, "blocks.json")
    p = subprocess.run([ARGS.rpd, "export", path, "-o", out], capture_output=True, text=True)
    check(p.returncode == 0, "rpd export: %s" % p.stderr)
    with open(out) as f:
        ev = json.load(f)["traceEvents"]
    slices = [e for e in ev if e.get("cat") == "block"]
    check(len(slices) == 2 and all(e["name"] == "k_copy" and e["pid"] == 1200000000 for e in slices)
          and sorted(e["args"]["block"][0] for e in slices) == [1, 2],
          "exported blocks: %s" % slices)
    check(any(e.get("ph") == "M" and e["pid"] == 1200000000 and e["args"]["name"] == "blocks: CPU kernels"
              for e in ev), "no name for the blocks' process")
    page = os.path.join(ARGS.work, "blocks.html")
    p = subprocess.run([ARGS.rpd, "report", path, "-o", page], capture_output=True, text=True)
    check(p.returncode == 0, "rpd report: %s" % p.stderr)
    with open(page) as f:
        html_text = f.read()
    check("Blocks (KernelTimeline): 2 on" in html_text and html_text.count("data-unit=") == 2,
          "the report's block lanes")


def copy_addr_sum(info):
    """The sum (mod 2^64) of k_copy's lanes' addresses: its loads and stores."""
    return sum(info["src"] + info["dst"] + 8 * i for i in range(info["n"])) % 2**64


def case_plugin():
    """A plugin from a path gets every record (its count is exact), each
    whole (every lane's address in addr[], although the analyzers beside it
    take compact records), and stores its result; one that claims records
    hides them from later handlers."""
    path = fresh_trace()
    info, rep, _ = run(app(), ["copy"], {"NANO_INSTRUMENT": "1",
                                        "NANO_ANALYZERS": os.path.join(ARGS.bin, "plugin_good.so") + ",MemoryAnalysis"})
    w = waves(info["n"], info["block"], 64)
    c = [r for r in rep if r["analyzer"] == "RecordCounter"]
    addr_sum = copy_addr_sum(info)
    check(c == [{"analyzer": "RecordCounter", "dispatch": 1, "records": 2 * w, "lanes": 2 * info["n"],
                 "addr_sum": addr_sum}],
          "plugin report: %s (want %d records, %d lanes, addresses summing to %d)"
          % (c, 2 * w, 2 * info["n"], addr_sum))
    check(one(rep, "copy", "load")["executions"] == w, "MemoryAnalysis after a passing plugin")
    con = sqlite3.connect(path)
    stored = con.execute("select report from nano_analysis where analyzer = 'RecordCounter'").fetchall()
    check(len(stored) == 1 and json.loads(stored[0][0])["records"] == 2 * w, "stored: %s" % stored)
    con.close()
    _, rep, _ = run(app(), ["copy"], {"NANO_INSTRUMENT": "1",
                                     "NANO_ANALYZERS": os.path.join(ARGS.bin, "plugin_good.so") + ":claim,MemoryAnalysis"})
    check(not [r for r in rep if r["analyzer"] == "MemoryAnalysis"],
          "a claiming plugin's records reached MemoryAnalysis")


# Scenarios of app and their argument, for comparing the two paths: every
# pattern of kernels.c (coalesced, strided, scattered, shared with conflicts,
# wide shared copies, calls, divergence, loops, atomics).
PATH_SCENARIOS = [("copy", []), ("stride", [4]), ("reverse", []), ("gather", []), ("bank", [3]),
                  ("bankwide", [64]), ("calls", []), ("branch", []), ("loop", []),
                  ("atomic", [])]


def case_aggregate_paths():
    """MemoryAnalysis and Heatmap say the same whether their sums are made
    from records (NANO_AGGREGATE=host) or where the waves ran (device):
    every field of every location and page, wave 32 and 64, on every
    scenario; the trace's documents too, and the dispatch row names the path."""
    for sc, arg in PATH_SCENARIOS:
        for wave in (64, 32):
            got = {}
            for where in ("host", "device"):
                path = fresh_trace()
                _, rep, _ = run(app(), [sc] + arg, {"NANO_INSTRUMENT": "1", "NANO_CPU_WAVE": wave,
                                                    "NANO_ANALYZERS": "MemoryAnalysis,Heatmap",
                                                    "NANO_AGGREGATE": where},
                                    fixed_addresses=True)
                d = dispatches(rep)
                check(len(d) == 1 and d[0]["aggregate"] == where, "%s %s: dispatches %s" % (sc, where, d))
                mem = sorted(json.dumps(r, sort_keys=True) for r in rep if r["analyzer"] == "MemoryAnalysis")
                heat = [r for r in rep if r["analyzer"] == "Heatmap"]
                check(mem and len(heat) == 1 and heat[0]["aggregate"] == where,
                      "%s %s: reports %s" % (sc, where, rep))
                con = sqlite3.connect(path)
                row = con.execute("select aggregate from nano_dispatch").fetchall()
                docs = {a: json.loads(r) for a, r in con.execute("select analyzer, report from nano_analysis")}
                con.close()
                check(row == [(where,)] and docs["MemoryAnalysis"]["aggregate"] == where,
                      "%s %s: the trace says %s / %s" % (sc, where, row, docs["MemoryAnalysis"].get("aggregate")))
                for doc in docs.values():
                    del doc["aggregate"]
                del heat[0]["aggregate"]
                got[where] = (mem, heat, docs, d[0]["wave_accesses"])
            check(got["host"] == got["device"],
                  "%s wave %d: host and device differ:\n%s\n%s" % (sc, wave, got["host"], got["device"]))


def case_aggregate_choice():
    """Which path a dispatch takes: records for an analyzer that needs them
    (AddressLogger, an ABI-1 plugin even when it claims sums), sums for a
    plugin that declares them; NANO_AGGREGATE=device that cannot be had is
    said once and the dispatches stream."""
    env = {"NANO_INSTRUMENT": "1"}
    _, rep, _ = run(app(), ["copy"], dict(env, NANO_ANALYZERS="AddressLogger,MemoryAnalysis"))
    d = dispatches(rep)
    check(d and d[0]["aggregate"] == "host" and d[0]["records"] == d[0]["wave_accesses"] > 0,
          "AddressLogger streams: %s" % d)
    info, rep, err = run(app(), ["copy"], dict(env, NANO_ANALYZERS="AddressLogger",
                                              NANO_AGGREGATE="device"))
    check(err.count("NANO_AGGREGATE=device: analyzer AddressLogger needs every record") == 1
          and dispatches(rep)[0]["aggregate"] == "host", "device refused: %s" % err)
    w = waves(info["n"], info["block"], 64)
    sums = os.path.join(ARGS.bin, "plugin_sums.so")
    for where in ("auto", "host"):
        info, rep, _ = run(app(), ["copy"], dict(env, NANO_ANALYZERS=sums + ",MemoryAnalysis",
                                                  NANO_AGGREGATE=where))
        want = ({"where": "device", "executions": 2 * w} if where == "auto" else
                {"records": 2 * w, "lanes": 2 * info["n"], "addr_sum": copy_addr_sum(info)})
        c = [r for r in rep if r["analyzer"] == "RecordCounter"]
        check(c == [dict({"analyzer": "RecordCounter", "dispatch": 1}, **want)],
              "sums plugin, NANO_AGGREGATE=%s: %s" % (where, c))
    info, rep, _ = run(app(), ["copy"], dict(env, NANO_ANALYZERS=os.path.join(ARGS.bin, "plugin_abi1.so")))
    c = [r for r in rep if r["analyzer"] == "RecordCounter"]
    check(c == [{"analyzer": "RecordCounter", "dispatch": 1, "records": 2 * w, "lanes": 2 * info["n"],
                 "addr_sum": copy_addr_sum(info)}]
          and dispatches(rep)[0]["aggregate"] == "host", "ABI 1 plugin: %s" % c)


def case_bad_settings():
    """Every bad setting: one message naming the variable or file, and the
    program runs uninstrumented with correct results (exit 0)."""
    bad = [
        ({"NANO_KERNELS": "k_("}, "NANO_KERNELS=k_(: invalid regular expression"),
        ({"NANO_ANALYZERS": "Heatmapp"}, "unknown analyzer 'Heatmapp'"),
        ({"NANO_ANALYZERS": "/nonexistent/libmine.so"}, "/nonexistent/libmine.so does not load"),
        ({"NANO_ANALYZERS": os.path.join(ARGS.bin, "plugin_badabi.so")}, "is built for handler ABI 99"),
        ({"NANO_ANALYZERS": os.path.join(ARGS.bin, "plugin_nocreate.so")}, "does not export nano_handler_create()"),
        ({"NANO_DISPATCHES": "often"}, "NANO_DISPATCHES=often"),
        ({"NANO_CPU_WAVE": "48"}, "NANO_CPU_WAVE=48"),
        ({"NANO_BLOCKS": "x=3:1"}, "NANO_BLOCKS=x=3:1"),
        ({"NANO_BUFFER_SIZE": "3000"}, "NANO_BUFFER_SIZE=3000"),
        ({"NANO_BUFFER_SIZE": "-1"}, "NANO_BUFFER_SIZE=-1"),
        ({"NANO_ANALYZER_FORMAT": "xml"}, "NANO_ANALYZER_FORMAT=xml"),
        ({"NANO_INSTRUMENT": "maybe"}, "NANO_INSTRUMENT=maybe"),
        ({"NANO_AGGREGATE": "gpu"}, "NANO_AGGREGATE=gpu"),
        # empty is a value, refused like the others (never unset in silence)
        ({"NANO_CPU_WAVE": ""}, "NANO_CPU_WAVE=: expected one of"),
        ({"NANO_BUFFER_POOL": ""}, "NANO_BUFFER_POOL=: expected an integer"),
        ({"NANO_INSTRUMENT": ""}, "NANO_INSTRUMENT=: expected 1/0"),
    ]
    for env, msg in bad:
        e = dict({"NANO_INSTRUMENT": "1"}, **env)
        info, rep, err = run(app(), ["calls"], e)
        check(msg in err, "%s: message %r not in stderr: %s" % (env, msg, err))
        check(not dispatches(rep), "%s: instrumented anyway" % env)
        check(info and info["n"] == 256, "%s: the program's output changed" % env)
    for on in ("1", "on", "TRUE", "yes"):
        _, rep, _ = run(app(), ["calls"], {"NANO_INSTRUMENT": on})
        check(len(dispatches(rep)) == 1, "NANO_INSTRUMENT=%s did not instrument" % on)


def case_output_link():
    """NANO_ANALYZER_OUTPUT naming a link: refused with a message, the reports
    go to stderr, the link's target is never written."""
    victim = os.path.join(ARGS.work, "victim")
    link = os.path.join(ARGS.work, "reports-link")
    for path in (victim, link):
        if os.path.lexists(path):
            os.unlink(path)
    with open(victim, "w") as f:
        f.write("precious\n")
    os.symlink(victim, link)
    info, _, err = run(app(), ["calls"], {"NANO_INSTRUMENT": "1", "NANO_ANALYZER_OUTPUT": link})
    check("%s is a symbolic link; refusing" % link in err, "no refusal: %s" % err)
    check('"analyzer":"dispatch"' in err.replace(" ", ""), "the reports went to stderr: %s" % err)
    check(open(victim).read() == "precious\n", "the link's target was written")
    check(info and info["n"] == 256, "the program's output changed")


def case_unchanged():
    """Without the runtime, without NANO_INSTRUMENT, built without the plugin,
    or with kernels built without it: the same results, nothing recorded."""
    for scenario in (["copy"], ["branch"], ["bank", "2"]):
        run(app(), scenario, preload=False)
        _, rep, _ = run(app(), scenario)
        check(not rep, "recorded without NANO_INSTRUMENT: %s" % rep[:2])
        _, rep, _ = run("app_plain", scenario, {"NANO_INSTRUMENT": "1"})
        check(not rep, "a program built without the plugin recorded: %s" % rep[:2])
    _, rep, err = run("app_notwin", ["copy"], {"NANO_INSTRUMENT": "1"})
    check(not dispatches(rep) and "kernel k_copy has no twin" in err, "no twin: %s" % err)


def case_llvm22():
    """The LLVM 22 plugin: the same chain and numbers (coalesced and strided)."""
    info, rep, _ = run(app("22"), ["stride", 2], {"NANO_INSTRUMENT": "1"})
    w = waves(info["n"], info["block"], 64)
    r = one(rep, "stride.load", "load")
    check(r["lines_needed"] == 4 * w and r["lines_used"] == 8 * w, "llvm22 stride 2: %s" % r)


def case_text_report():
    """The text report names the location, shows the source line with a caret
    under the column, and the figures."""
    e = {"NANO_INSTRUMENT": "1", "NANO_ANALYZER_FORMAT": "text"}
    run(app(), ["stride", 4], e)
    with open(os.path.join(ARGS.work, "reports.jsonl")) as f:
        text = f.read()
    line = markers()["stride.load"]
    check(re.search(r"kernels\.c:%d:\d+: load of 4 bytes \(global\), executed 4 times by 256 lanes" % line, text)
          and "float v = src[(uint64_t)i * k];" in text and "cache lines: 64 used, 16 needed (4.00x)" in text,
          "text report:\n%s" % text)
    check(re.search(r"\n +\^\n", text), "no caret:\n%s" % text)


class _Cells(html.parser.HTMLParser):
    """The text of every table cell of an HTML page, table by table, row by
    row, and the attributes of the page's SVG rects."""

    def __init__(self):
        super().__init__()
        self.tables, self.rects, self._cell = [], [], None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = ""
        elif tag == "rect":
            self.rects.append(dict(attrs))

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append(self._cell.strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def case_rpd_tools():
    """rpd info lists the dispatches and analyses; rpd report's memory section
    holds the analysis' numbers (read from the page's cells, not its markup)."""
    path = fresh_trace()
    info, _, _ = run(app(), ["stride", 4], {"NANO_INSTRUMENT": "1",
                                           "NANO_ANALYZERS": "MemoryAnalysis,Heatmap"})
    out = subprocess.run([ARGS.rpd, "info", path], capture_output=True, text=True)
    check(out.returncode == 0 and "instrumented dispatches: 1, records dropped in them: 0" in out.stdout
          and re.search(r"\n\s*\d+\s+k_stride\s+1\s+cpu\s+cpu\s+64\s+2x1x1\s+128x1x1\s+device\s+0\s+0", out.stdout)
          and re.search(r"Heatmap\s+1\s+\d+", out.stdout) and re.search(r"MemoryAnalysis\s+1\s+\d+", out.stdout),
          "rpd info:\n%s%s" % (out.stdout, out.stderr))
    page = os.path.join(ARGS.work, "report.html")
    out = subprocess.run([ARGS.rpd, "report", path, "-o", page], capture_output=True, text=True)
    check(out.returncode == 0, "rpd report: %s" % out.stderr)
    cells = _Cells()
    with open(page) as f:
        cells.feed(f.read())
    w = waves(info["n"], info["block"], 64)
    rows = [r for t in cells.tables for r in t if r and r[0] == "kernels.c:%d:%s" % (markers()["stride.load"], r[0].split(":")[-1])]
    check(len(rows) == 1, "memory rows for the strided load: %s" % rows)
    r = rows[0]
    check(r[1] == "k_stride" and r[2].startswith("load 4 B") and r[3] == str(w) and r[5] == str(4 * w)
          and r[6] == str(16 * w) and r[7] == "4.00x", "the strided load's row: %s" % r)
    heat = [int(x["data-accesses"]) for x in cells.rects if "data-accesses" in x]
    check(sum(heat) == 2 * info["n"], "heatmap cells hold %d accesses, want %d" % (sum(heat), 2 * info["n"]))


def case_example():
    """The README tour's example (examples/memory.c, built by the build):
    MemoryAnalysis finds the strided load at 4x and everything else at 1x."""
    e = {"NANO_INSTRUMENT": "1", "NANO_ANALYZERS": "MemoryAnalysis", "NANO_ANALYZER_FORMAT": "text",
         "NANO_ANALYZER_OUTPUT": "stderr"}
    _, _, err = run(ARGS.example, [], e)
    check(err.count("cache lines: 256 used, 256 needed (1.00x)") == 3
          and err.count("cache lines: 1024 used, 256 needed (4.00x)") == 1
          and "y[i] = a * x[4 * i];" in err and "1 with excess cache lines" in err,
          "the tour's output changed:\n%s" % err)


CASES = {name[5:]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")}


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("case", nargs="?")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--bin")
    ap.add_argument("--lib")
    ap.add_argument("--src")
    ap.add_argument("--work")
    ap.add_argument("--example")
    ap.add_argument("--rpd")
    ARGS = ap.parse_args()
    if ARGS.list:
        print(";".join(CASES))
        return
    os.makedirs(ARGS.work, exist_ok=True)
    ARGS.work = os.path.join(ARGS.work, ARGS.case)
    os.makedirs(ARGS.work, exist_ok=True)
    CASES[ARGS.case]()
    print("ok", ARGS.case)


main()
