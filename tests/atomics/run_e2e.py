#!/usr/bin/env python3
"""End-to-end checks of host-atomics counting (tests/atomics/CMakeLists.txt
registers one ctest per scenario). Each scenario runs instrumented programs
untracked, under libnano_tracker.so (text and JSON) and under libnano_print.so,
and compares the counts with the ones each program's comment derives."""
import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
import tempfile

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL: " + what, file=sys.stderr)


def run(argv, env_extra=None, expect_rc=0, timeout=300, cwd=None):
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "NANO_TRACKER_OUTPUT", "NANO_TRACKER_FORMAT", "NANO_PRINT_OUTPUT"):
        env.pop(k, None)
    env.update(env_extra or {})
    try:
        p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        FAILS.append("%s with %s: no exit within %d s (a deadlock?)" % (argv, env_extra, timeout))
        print("FAIL: " + FAILS[-1], file=sys.stderr)
        return subprocess.CompletedProcess(argv, -1, "", "")
    if expect_rc is not None and p.returncode != expect_rc:
        print("command %s exited %d (expected %d)\nstdout: %s\nstderr: %s"
              % (argv, p.returncode, expect_rc, p.stdout[-2000:], p.stderr[-2000:]), file=sys.stderr)
        FAILS.append("exit status of %s" % argv)
    return p


def marker_line(source, marker):
    with open(source) as f:
        for n, line in enumerate(f, 1):
            if marker in line:
                return n
    raise SystemExit("no marker %s in %s" % (marker, source))


def expected(prog, mode, threads, iters, mix, extra=False):
    """Counts per kind of one run, as the programs' comments derive them."""
    e = {}

    def add(kind, n):
        if n:
            e["__atomic_" + kind] = e.get("__atomic_" + kind, 0) + n

    T, R = threads, threads * mix
    if prog == "c11":
        for k, n in (("fetch_add", 3), ("fetch_sub", 1), ("load", 2), ("store", 1), ("exchange", 1),
                     ("compare_exchange", 1), ("fetch_or", 1), ("fetch_and", 1), ("fetch_xor", 1),
                     ("thread_fence", 1)):
            add(k, n * R)
        add("fetch_add", T * iters)
        add("load", 3)
    elif prog == "builtins":
        for k, n in (("fetch_add", 3 + (1 if extra else 0)), ("fetch_sub", 2), ("load", 2), ("store", 2),
                     ("exchange", 2), ("compare_exchange", 3), ("fetch_nand", 1), ("fetch_or", 1),
                     ("thread_fence", 2), ("signal_fence", 1)):
            add(k, n * R)
        if mode == "prelude":
            add("test_and_set", R)
            add("clear", R)
        else:
            add("exchange", R)
            add("store", R)
        add("fetch_add", T * iters + 2)
        add("load", 1)
    elif prog == "cxx":
        for k, n in (("fetch_add", 4), ("load", 2), ("store", 1), ("exchange", 1), ("compare_exchange", 1)):
            add(k, n * R)
        add("fetch_add", T * iters + 2 * T)
        add("load", T + 3)
    else:
        raise SystemExit("unknown program " + prog)
    return e


def parse_text(stderr):
    """The NANO TRACKER block of stderr as {kind: count}; None if absent."""
    m = re.search(r"^NANO TRACKER \{\n((?:  \S+: \d+\n)*)\}$", stderr, re.M)
    if not m:
        return None
    return {k: int(v) for k, v in re.findall(r"^  (\S+): (\d+)$", m.group(1), re.M)}


PRINT_RE = re.compile(r"^NANO ATOMIC (\S+) (\S+) (\d+) (\S+) (.+):(\d+):(\d+)$")


def worker_function(prog, name):
    """Whether name is the test programs' worker function (mangled in C++)."""
    return name == ("_ZL6workerllSt10shared_ptrIlE" if prog == "cxx" else "worker")


def scenario_e2e(a):
    prog, mode, binary = a.prog, a.mode, a.bin
    hot_line = marker_line(a.source, "HOT")
    tracker = {"LD_PRELOAD": a.tracker}
    for threads, iters, mix in ((1, 1000000, 1000), (8, 1000000, 1000)):
        args = [binary, str(threads), str(iters), str(mix)]
        plain = run(args)
        check(plain.stderr == "", "untracked run writes nothing to stderr")
        tracked = run(args, tracker)
        check(tracked.stdout == plain.stdout, "%s: tracked output equals untracked (%d threads)" % (prog, threads))
        counts = parse_text(tracked.stderr)
        want = expected(prog, mode, threads, iters, mix)
        check(counts == want, "%s/%s %d threads: counts %s, expected %s" % (prog, mode, threads, counts, want))

    # JSON per kind and per site.
    threads, iters, mix = 2, 1000, 10
    args = [binary, str(threads), str(iters), str(mix)]
    plain = run(args)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "counts.json")
        tracked = run(args, dict(tracker, NANO_TRACKER_FORMAT="json", NANO_TRACKER_OUTPUT=out))
        check(tracked.stdout == plain.stdout, "json run: output equals untracked")
        check("NANO TRACKER" not in tracked.stderr, "json run: no text dump on stderr")
        with open(out) as f:
            doc = json.load(f)
    want = expected(prog, mode, threads, iters, mix)
    check(doc["format"] == "nanoprobe-atomics" and doc["version"] == 1, "json format and version")
    check(doc["kinds"] == want, "json kinds %s, expected %s" % (doc["kinds"], want))
    check(doc["total"] == sum(want.values()), "json total")
    check(sum(s["count"] for s in doc["sites"]) == doc["total"], "json sites sum to the total")
    for s in doc["sites"]:
        check(set(s) >= {"kind", "order", "size", "flags", "function", "file", "line", "column",
                         "instances", "count"}, "json site fields: %s" % s)
        check(("prelude" in s["flags"]) == (mode == "prelude"), "prelude flag matches the build: %s" % s)
    # C++ atomics are written in libstdc++'s headers: the plugin reports them
    # at the user's line they were inlined into (the prelude cannot).
    user_sites = prog != "cxx" or mode == "plugin"
    if user_sites:
        hot = [s for s in doc["sites"] if s["file"].endswith(os.path.basename(a.source)) and s["line"] == hot_line]
        check(len(hot) == 1, "one site at the hot line %d: %s" % (hot_line, hot))
        if hot:
            s = hot[0]
            check(s["kind"] == "__atomic_fetch_add" and s["order"] == "relaxed" and s["size"] == 8,
                  "hot site kind/order/size: %s" % s)
            check(s["count"] == threads * iters, "hot site count %d" % s["count"])
            check(worker_function(prog, s["function"]), "hot site function: %s" % s["function"])
            check((s["column"] > 0) == (mode == "plugin"), "column known with the plugin only: %s" % s)
            origin = s.get("inlined_from")
            if prog == "cxx":
                check(origin is not None and origin["file"].endswith("/atomic_base.h") and origin["line"] > 0
                      and "fetch_add" in origin["function"], "hot site inlined from libstdc++: %s" % s)
            else:
                check(origin is None, "a C site is where it is written: %s" % s)
        # Library code that was not inlined (shared_ptr's _M_release) keeps its
        # own location; everything the worker executes is at the worker's lines.
        mine = [s for s in doc["sites"] if worker_function(prog, s["function"])]
        check(mine and all(os.path.realpath(s["file"]) == os.path.realpath(a.source) for s in mine),
              "the worker's sites are in %s: %s" % (a.source, mine))

    # The printing tracker: one line per event.
    threads, iters, mix = 2, 50, 5
    args = [binary, str(threads), str(iters), str(mix)]
    plain = run(args)
    printed = run(args, {"LD_PRELOAD": a.print_lib})
    check(printed.stdout == plain.stdout, "print run: output equals untracked")
    lines = printed.stderr.splitlines()
    want = expected(prog, mode, threads, iters, mix)
    check(len(lines) == sum(want.values()), "print: %d lines, expected %d" % (len(lines), sum(want.values())))
    kinds, hot = {}, 0
    for line in lines:
        m = PRINT_RE.match(line)
        check(m is not None, "print line format: %r" % line)
        if not m:
            continue
        kinds[m.group(1)] = kinds.get(m.group(1), 0) + 1
        if m.group(5).endswith(os.path.basename(a.source)) and int(m.group(6)) == hot_line:
            hot += 1
            check(m.group(1) == "__atomic_fetch_add" and m.group(2) == "relaxed" and m.group(3) == "8"
                  and worker_function(prog, m.group(4)), "print hot line content: %r" % line)
    check(kinds == want, "print kinds %s, expected %s" % (kinds, want))
    if user_sites:
        check(hot == threads * iters, "print: %d hot lines, expected %d" % (hot, threads * iters))
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "events.txt")
        printed = run(args, {"LD_PRELOAD": a.print_lib, "NANO_PRINT_OUTPUT": out})
        check(printed.stderr == "", "NANO_PRINT_OUTPUT: nothing on stderr")
        with open(out) as f:
            check(len(f.read().splitlines()) == sum(want.values()), "NANO_PRINT_OUTPUT: all lines in the file")
        # a link at NANO_PRINT_OUTPUT is refused (the events go to stderr), its target never written
        victim = os.path.join(d, "victim")
        with open(victim, "w") as f:
            f.write("precious\n")
        link = os.path.join(d, "link.txt")
        os.symlink(victim, link)
        printed = run(args, {"LD_PRELOAD": a.print_lib, "NANO_PRINT_OUTPUT": link})
        check("%s is a symbolic link; refusing" % link in printed.stderr
              and "NANO ATOMIC" in printed.stderr, "NANO_PRINT_OUTPUT link: %s" % printed.stderr[:500])
        check(open(victim).read() == "precious\n", "NANO_PRINT_OUTPUT: a link's target is never written")


def scenario_linked(a):
    """A program linked with -lnano_tracker counts without LD_PRELOAD."""
    args = [a.bin, "2", "1000", "10"]
    p = run(args)
    check(parse_text(p.stderr) == expected("c11", "plugin", 2, 1000, 10), "linked: counts %s" % parse_text(p.stderr))


def scenario_dlopen(a):
    """Sites of a dlopen'ed plugin-built library are registered then, and
    still reported after dlclose."""
    line = marker_line(a.source, "DL_SITE")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "c.json")
        p = run([a.bin, a.lib, "12345"], {"LD_PRELOAD": a.tracker, "NANO_TRACKER_FORMAT": "json",
                                          "NANO_TRACKER_OUTPUT": out})
        check(p.stdout == "dl_work=12345\n", "dlopen: program output")
        with open(out) as f:
            doc = json.load(f)
    check(doc["kinds"] == {"__atomic_fetch_add": 12346, "__atomic_load": 1}, "dlopen kinds: %s" % doc["kinds"])
    sites = [s for s in doc["sites"] if s["file"].endswith("dl_lib.c") and s["line"] == line]
    check(len(sites) == 1 and sites[0]["count"] == 12345 and sites[0]["function"] == "dl_work",
          "dlopen: the library's site at dl_lib.c:%d: %s" % (line, sites))


def scenario_grow(a):
    """Inline counting after the runtime grew a thread's array: the
    executable's counter, bound to the old array at its first event, must
    follow the thread to the new one (grow_main.c), every event counted."""
    line = marker_line(a.source, "GROW_SITE")
    n = 1000
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "c.json")
        p = run([a.bin, a.lib, str(n)], {"LD_PRELOAD": a.tracker, "NANO_TRACKER_FORMAT": "json",
                                          "NANO_TRACKER_OUTPUT": out})
        check(p.stdout == "own=%d\n" % (2 * n), "grow: program output %r" % p.stdout)
        with open(out) as f:
            doc = json.load(f)
    own = [s for s in doc["sites"] if s["file"].endswith("grow_main.c") and s["line"] == line]
    check(len(own) == 1 and own[0]["count"] == 2 * n,
          "grow: the executable's site at grow_main.c:%d: %s" % (line, own))
    # (the library's 300 sites share three source positions: the dump
    # merges each position's instances)
    lib = [s for s in doc["sites"] if s["file"].endswith("grow_lib.c")]
    check(sum(s["instances"] for s in lib) == 300 and sum(s["count"] for s in lib) == 300,
          "grow: the library's sites %s" % [(s["instances"], s["count"]) for s in lib])


def scenario_late(a):
    """Events a thread makes after the tracker folded its counts (a key
    destructor of the program's that runs after the tracker's) are counted:
    the thread's inline counter was cleared, so they reach the runtime
    (late_main.c)."""
    n = 1000
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "c.json")
        p = run([a.bin, str(n)], {"LD_PRELOAD": a.tracker, "NANO_TRACKER_FORMAT": "json",
                                  "NANO_TRACKER_OUTPUT": out})
        check(p.stdout == "cell=%d\n" % (2 * n + 1), "late: program output %r" % p.stdout)
        with open(out) as f:
            doc = json.load(f)
    for marker, want in (("MAIN_SITE", 1), ("EARLY_SITE", n), ("LATE_SITE", n)):
        line = marker_line(a.source, marker)
        got = [s["count"] for s in doc["sites"] if s["file"].endswith("late_main.c") and s["line"] == line]
        check(got == [want], "late: %s (line %d) counted %s, expected %d" % (marker, line, got, want))


CTYPES_SCRIPT = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])      # built with the plugin
dll = ctypes.CDLL(sys.argv[2])      # the tracker, as PyTorch's tool's README does
lib.dl_work.argtypes = [ctypes.c_long]
dll.nano_tracking_reset()
lib.dl_work(5)
print("first", flush=True)
dll.nano_tracking_dump()
dll.nano_tracking_reset()
lib.dl_work(3)
print("second", flush=True)
sys.exit(dll.nano_tracking_dump())
"""


def scenario_ctypes(a):
    """Scripts written for PyTorch's atomics tracker work unchanged (issue
    17.4): nano_tracking_reset and nano_tracking_dump through ctypes, the
    dump in its "NANO TRACKER {" text, where the exit dump goes."""
    env = {"LD_PRELOAD": a.tracker, "NANO_TRACKER_OUTPUT": "stdout"}
    p = run([sys.executable, "-c", CTYPES_SCRIPT, a.lib, a.tracker], env)
    blocks = p.stdout.split("NANO TRACKER {")
    check(len(blocks) == 4 and blocks[0] == "first\n", "three dumps, the last at exit: %r" % p.stdout)
    if len(blocks) == 4:
        check(parse_text("NANO TRACKER {" + blocks[1].replace("second\n", "")) ==
              {"__atomic_fetch_add": 5, "__atomic_load": 1}, "first dump: %r" % blocks[1])
        check(blocks[1].endswith("}\nsecond\n"), "the dump before the script's next line: %r" % blocks[1])
        check(parse_text("NANO TRACKER {" + blocks[2]) == {"__atomic_fetch_add": 3, "__atomic_load": 1},
              "after the reset: %r" % blocks[2])
    # the JSON format applies too; a failed dump is -1 (the script's exit status)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "c.json")
        run([sys.executable, "-c", CTYPES_SCRIPT, a.lib, a.tracker],
            dict(env, NANO_TRACKER_FORMAT="json", NANO_TRACKER_OUTPUT=out))
        with open(out) as f:
            check(json.load(f)["kinds"] == {"__atomic_fetch_add": 3, "__atomic_load": 1}, "json dump")
        p = run([sys.executable, "-c", CTYPES_SCRIPT, a.lib, a.tracker],
                dict(env, NANO_TRACKER_OUTPUT=os.path.join(d, "no", "such", "dir", "x")), expect_rc=255)
        check("cannot write the atomic counts" in p.stderr, p.stderr)
        # a link at the output is refused (the counts go to stderr), its target
        # never written; a planted OUT.tmp link is left alone
        victim = os.path.join(d, "victim")
        with open(victim, "w") as f:
            f.write("precious\n")
        link = os.path.join(d, "link.json")
        os.symlink(victim, link)
        p = run([sys.executable, "-c", CTYPES_SCRIPT, a.lib, a.tracker],
                dict(env, NANO_TRACKER_OUTPUT=link), expect_rc=255)
        check("%s is a symbolic link; refusing" % link in p.stderr and "NANO TRACKER {" in p.stderr,
              p.stderr)
        os.symlink(victim, out + ".tmp")
        run([sys.executable, "-c", CTYPES_SCRIPT, a.lib, a.tracker],
            dict(env, NANO_TRACKER_FORMAT="json", NANO_TRACKER_OUTPUT=out))
        check(open(victim).read() == "precious\n" and os.path.islink(link)
              and os.readlink(out + ".tmp") == victim, "links and their target left alone")
        check("kinds" in json.load(open(out)), "the dump replaced OUT beside a planted OUT.tmp")


def scenario_override(a):
    """A program whose malloc is its own and instrumented (as mimalloc's
    MI_OVERRIDE build) runs to its end under the tracker, under the tracer
    and the tracker together, and under the printing runtime, with threads
    allocating while an instrumented library is dlopen'ed: no deadlock, and
    every allocator event counted (the NOTED_SITE total is the program's
    own count of them); and forks 200 times under the tracer and the tracker
    without a deadlock."""
    line = marker_line(a.source, "NOTED_SITE")
    threads, iters = 4, 5000
    args = [a.bin, a.lib, str(threads), str(iters)]
    # the program's own guard against a hang in a test: 60 s is 100x its run
    deadline = 60
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "c.json")
        for preload in ([a.tracker], [a.tracer, a.tracker]):
            p = run(args, {"LD_PRELOAD": " ".join(preload), "NANO_TRACKER_FORMAT": "json",
                           "NANO_TRACKER_OUTPUT": out}, timeout=deadline, cwd=d)
            m = re.match(r"noted=(\d+) dl_work=(\d+)\n$", p.stdout)
            check(m and int(m.group(2)) == iters, "override %s: output %r" % (preload, p.stdout))
            if not m or not os.path.exists(out):
                continue
            with open(out) as f:
                doc = json.load(f)
            noted = sum(s["count"] for s in doc["sites"]
                        if s["file"].endswith("override_main.c") and s["line"] == line)
            check(noted == int(m.group(1)) and noted >= threads * iters * 5,
                  "override %s: NOTED_SITE counted %d, the program noted %s" % (preload, noted,
                                                                                m.group(1)))
            check("uncounted" not in doc, "override %s: uncounted events %s" % (
                preload, doc.get("uncounted")))
            check(not [l for l in p.stderr.splitlines() if l.startswith("nanoprobe:")],
                  "override %s: warnings %s" % (preload, p.stderr[-500:]))
            os.remove(out)
        # Forks while the tracer's writer holds its lock and allocates (it
        # samples the atomics 1000 times a second): the tracker's lock must be
        # taken last at fork (200 forks deadlocked every run when the
        # tracker's fork handlers came after the tracer's).
        p = run(args + ["200"], {"LD_PRELOAD": " ".join([a.tracer, a.tracker]),
                                 "NANO_RPD_ATOMICS_HZ": "1000", "NANO_RPD_QUIET": "1"},
                timeout=deadline, cwd=d)
        check(re.match(r"noted=\d+ dl_work=%d\n$" % iters, p.stdout),
              "override, 200 forks under the tracer: output %r" % p.stdout)
        printed = os.path.join(d, "p.txt")
        p = run([a.bin, a.lib, "2", "50"], {"LD_PRELOAD": a.print_lib, "NANO_PRINT_OUTPUT": printed},
                timeout=deadline, cwd=d)
        with open(printed) if os.path.exists(printed) else open(os.devnull) as f:
            lines = f.read().count("override_main.c:%d:" % line)
        m = re.match(r"noted=(\d+) ", p.stdout)
        check(m and lines == int(m.group(1)), "override, printing runtime: %d lines of NOTED_SITE, "
              "the program noted %s" % (lines, m and m.group(1)))


def scenario_env(a):
    """Bad NANO_* values: one warning and the default; an unwritable path:
    an error naming it, and the counts on stderr."""
    args = [a.bin, "1", "10", "1"]
    want = expected("c11", "plugin", 1, 10, 1)
    p = run(args, {"LD_PRELOAD": a.tracker, "NANO_TRACKER_FORMAT": "yaml"})
    warnings = [l for l in p.stderr.splitlines() if l.startswith("nanoprobe:")]
    check(len(warnings) == 1 and "NANO_TRACKER_FORMAT" in warnings[0] and "yaml" in warnings[0],
          "one warning for a bad format: %s" % warnings)
    check(parse_text(p.stderr) == want, "bad format falls back to text")
    bad = "/nonexistent-dir/counts.json"
    p = run(args, {"LD_PRELOAD": a.tracker, "NANO_TRACKER_OUTPUT": bad})
    check(bad in p.stderr and "cannot write" in p.stderr, "unwritable path named: %r" % p.stderr)
    check(parse_text(p.stderr) == want, "unwritable path: counts on stderr")
    p = run(args, {"LD_PRELOAD": a.tracker, "NANO_TRACKER_OUTPUT": "stdout"})
    check(parse_text(p.stdout) == want and "NANO TRACKER" not in p.stderr, "NANO_TRACKER_OUTPUT=stdout")
    with tempfile.TemporaryDirectory() as d:
        p = run(args, {"LD_PRELOAD": a.tracker, "NANO_TRACKER_OUTPUT": os.path.join(d, "c-%p.txt")})
        files = os.listdir(d)
        check(len(files) == 1 and re.fullmatch(r"c-\d+\.txt", files[0]), "%%p expands to the pid: %s" % files)
    # A process without instrumented code (here: the shell) writes no dump.
    p = run(["/bin/sh", "-c", "true"], {"LD_PRELOAD": a.tracker})
    check(p.stderr == "", "an uninstrumented process writes no dump: %r" % p.stderr)


def scenario_gate(a):
    """nanoprobe gate: 0 unchanged, 1 with an added atomic (diff names the
    site), 2 for a missing or malformed baseline; --current; tolerance."""
    np_ = [a.nanoprobe, "gate", "--tracker", a.tracker]
    args = ["2", "100", "10"]
    with tempfile.TemporaryDirectory() as d:
        base = os.path.join(d, "base.json")
        p = run(np_ + ["--baseline", base, "--update", "--", a.bin] + args)
        check(os.path.exists(base), "--update writes the baseline")
        p = run(np_ + ["--baseline", base, "--", a.bin] + args, expect_rc=0)
        check("OK" in p.stdout, "unchanged: OK")
        p = run(np_ + ["--baseline", base, "--", a.extra] + args, expect_rc=1)
        check("REGRESSED" in p.stdout and "prog_builtins.c:%d" % marker_line(a.source, "EXTRA_SITE") in p.stdout
              and "FAIL" in p.stdout, "added atomic: a diff naming the site: %r" % p.stdout)
        p = run(np_ + ["--baseline", base, "--tolerance", "100000", "--", a.extra] + args, expect_rc=0)
        p = run(np_ + ["--baseline", os.path.join(d, "missing.json"), "--", a.bin] + args, expect_rc=2)
        check("missing" in p.stderr and "missing.json" in p.stderr, "missing baseline named: %r" % p.stderr)
        bad = os.path.join(d, "bad.json")
        with open(bad, "w") as f:
            f.write('{"format": "nanoprobe-atomics", "version": 1, "kinds": {"x": "many"}, "sites": []}')
        p = run(np_ + ["--baseline", bad, "--", a.bin] + args, expect_rc=2)
        check("malformed" in p.stderr and "bad.json" in p.stderr, "malformed baseline named: %r" % p.stderr)
        with open(bad, "w") as f:
            f.write("{not json")
        p = run(np_ + ["--baseline", bad, "--current", base], expect_rc=2)
        check("malformed" in p.stderr, "unparsable baseline: %r" % p.stderr)
        # Two dumps compared with --current.
        cur = os.path.join(d, "cur.json")
        run([a.extra] + args, {"LD_PRELOAD": a.tracker, "NANO_TRACKER_FORMAT": "json", "NANO_TRACKER_OUTPUT": cur})
        run([a.nanoprobe, "gate", "--baseline", base, "--current", cur], expect_rc=1)
        run([a.nanoprobe, "gate", "--baseline", cur, "--current", base], expect_rc=0)
        # the measuring run's scratch folder goes under $TMPDIR; one that cannot be made is named
        nowhere = os.path.join(d, "no-such-dir")
        p = run(np_ + ["--baseline", base, "--", a.bin] + args, {"TMPDIR": nowhere}, expect_rc=2)
        check(nowhere + "/nanoprobe-gate-" in p.stderr and "No such file" in p.stderr,
              "unusable TMPDIR named: %r" % p.stderr)


def scenario_gate_tolerances(a):
    """Gating a noisy program (issue 21.4): --kinds-only compares per-kind
    totals alone; tolerances N, M% and N+M%, scoped to kinds, sites or one kind
    (the most specific wins), pass the noise and still catch an added atomic.
    Documents are compared with --current, so every count is fixed here."""
    def doc(sites):
        kinds = {}
        for (f, line, kind, n) in sites:
            kinds["__atomic_" + kind] = kinds.get("__atomic_" + kind, 0) + n
        return {"format": "nanoprobe-atomics", "version": 1, "total": sum(kinds.values()),
                "kinds": kinds,
                "sites": [{"file": f, "line": line, "column": 3, "function": "work",
                           "kind": "__atomic_" + kind, "order": "relaxed", "size": 4, "count": n}
                          for (f, line, kind, n) in sites]}
    base_sites = [("q.c", 10, "fetch_add", 991), ("q.c", 20, "fetch_add", 9), ("q.c", 30, "load", 10)]
    cases = {
        "noisy": [("q.c", 10, "fetch_add", 991), ("q.c", 20, "fetch_add", 21), ("q.c", 30, "load", 10)],
        "moved": [("q.c", 11, "fetch_add", 991), ("q.c", 20, "fetch_add", 9), ("q.c", 30, "load", 10)],
        "added": [("q.c", 10, "fetch_add", 991), ("q.c", 20, "fetch_add", 9), ("q.c", 30, "load", 10),
                  ("q.c", 40, "fetch_or", 300)],
        "load+1": [("q.c", 10, "fetch_add", 991), ("q.c", 20, "fetch_add", 9), ("q.c", 30, "load", 11)],
        "1060": [("q.c", 10, "fetch_add", 1051), ("q.c", 20, "fetch_add", 9), ("q.c", 30, "load", 10)],
        "1061": [("q.c", 10, "fetch_add", 1052), ("q.c", 20, "fetch_add", 9), ("q.c", 30, "load", 10)],
    }
    with tempfile.TemporaryDirectory() as d:
        def path(name, sites):
            p = os.path.join(d, name + ".json")
            with open(p, "w") as f:
                json.dump(doc(sites), f)
            return p
        base = path("base", base_sites)
        cur = {k: path(k, v) for k, v in cases.items()}

        def gate(which, *opts, rc):
            p = run([a.nanoprobe, "gate", "--baseline", base, "--current", cur[which], *opts],
                    expect_rc=rc)
            return p.stdout + p.stderr
        gate("noisy", rc=1)                                     # a site 9 -> 21
        gate("noisy", "--tolerance", "15", rc=0)                # absolute, everywhere
        gate("noisy", "--tolerance", "sites=15", rc=1)          # the fetch_add total grew too
        gate("noisy", "--tolerance", "sites=15", "--tolerance", "kinds=2%", rc=0)
        out = gate("noisy", "--kinds-only", "--tolerance", "2%", rc=0)
        check("site" not in out, "--kinds-only compared sites: %r" % out)
        gate("moved", rc=0)                                     # line:column is not matched
        gate("moved", "--kinds-only", rc=0)
        out = gate("added", "--tolerance", "15", rc=1)          # an added atomic is still caught
        check("__atomic_fetch_or" in out and "q.c:40" in out, out)
        gate("added", "--kinds-only", "--tolerance", "15", rc=1)
        gate("added", "--tolerance", "fetch_or=300", "--tolerance", "15", rc=0)
        gate("load+1", "--tolerance", "0", "--tolerance", "fetch_add=100", rc=1)  # load: 0 allowed
        gate("load+1", "--tolerance", "__atomic_load=1", rc=0)  # the kind's GCC name, too
        gate("1060", "--tolerance", "10+5%", rc=0)              # 60 allowed on a base of 1000
        gate("1061", "--tolerance", "10+5%", "--kinds-only", rc=1)
        for bad in ("bogus=5", "5%%", "1.5", "-3", "sites=", "+5%", "fetch_add=x"):
            out = gate("noisy", "--tolerance", bad, rc=2)
            check("--tolerance '%s'" % bad in out, "bad tolerance %r: %r" % (bad, out))


def scenario_gate_unseen(a):
    """The gate warns when nothing but loads and stores was counted while the
    program has lock-prefixed instructions (inline assembly, code built
    without the plugin: issue 21.5), and stays quiet when it counted them."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "asm.c")
        with open(src, "w") as f:
            f.write("int n;\nint main(void) {\n"
                    "  __asm__ volatile(\"lock; incl %0\" : \"+m\"(n));\n"
                    "  return n == 1 ? 0 : 1;\n}\n")
        exe = os.path.join(d, "asm")
        run(["gcc", "-O1", src, "-o", exe])
        base = os.path.join(d, "b.json")
        p = run([a.nanoprobe, "gate", "--tracker", a.tracker, "--baseline", base, "--update", "--",
                 exe], expect_rc=2)
        check("executed no instrumented atomic" in p.stderr, "nothing counted is an error: %r" % p.stderr)
        check("no read-modify-write was counted, yet %s has 1 lock-prefixed instruction:" % exe
              in p.stderr, "no warning: %r" % p.stderr)
        p = run([a.nanoprobe, "gate", "--tracker", a.tracker, "--baseline", base, "--update", "--",
                 a.bin, "2", "100", "10"])
        check("lock-prefixed" not in p.stderr, "warned about a counted program: %r" % p.stderr)


# work() stays out of line: a site's function is the one it is compiled in,
# after inlining (attribution to the source's function is issue 17.2).
GATE_PROGRAM = """#include <stdio.h>
%s
static long hits, misses;
__attribute__((noinline)) void work(long n) {
  for (long i = 0; i < n; i++) {%s
    __atomic_fetch_add(&hits, 1, __ATOMIC_RELAXED);
    if (i %% 10 == 0)
      __atomic_fetch_add(&misses, 1, __ATOMIC_RELAXED);%s
  }
}
int main(void) { work(1000); printf("%%ld\\n", __atomic_load_n(&hits, __ATOMIC_ACQUIRE)); return 0; }
"""


def gate_in(a, base, folder, exe, *opts, rc, env=None):
    """`nanoprobe gate` of exe against baseline base, run in folder (the
    source root is found from there); its stdout and stderr."""
    p = run([a.nanoprobe, "gate", "--tracker", a.tracker, "--baseline", base, *opts, "--", exe],
            env, expect_rc=rc, cwd=folder)
    return p.stdout + p.stderr


def scenario_gate_identity(a):
    """A site is what survives edits that do not touch atomics (issue 17.1):
    the same program built in another checkout folder, or with lines added
    above its sites, passes; an added atomic fails naming its function and
    line (also one added before the others, which moves them); a run with no
    instrumented atomic, or none in common with the baseline, is an error
    (2), never a pass."""
    def build(folder, top="", extra="", cc="clang-15", early=""):
        os.makedirs(os.path.join(folder, "src"), exist_ok=True)
        src = os.path.join(folder, "src", "app.c")
        with open(src, "w") as f:
            f.write(GATE_PROGRAM % (top, early, extra))
        if not os.path.isdir(os.path.join(folder, ".git")):
            run(["git", "init", "-q", folder])
        exe = os.path.join(folder, "app")
        flags = ["-fpass-plugin=" + a.plugin] if cc != "gcc" else []
        run([cc, "-O2", "-g"] + flags + [src, "-o", exe])
        return exe

    def gate(folder, exe, *opts, rc):
        return gate_in(a, base, folder, exe, *opts, rc=rc)

    with tempfile.TemporaryDirectory() as d:
        base = os.path.join(d, "base.json")
        first = os.path.join(d, "checkout-a")
        exe = build(first)
        gate(first, exe, "--update", rc=0)
        with open(base) as f:
            check(json.load(f).get("root") == first, "the baseline records its source root")
        # CI's checkout elsewhere, with a comment block added at the top
        other = os.path.join(d, "ci", "checkout-b")
        out = gate(other, build(other, top="/* a\n * comment\n * block */\n"), rc=0)
        check("OK" in out, out)
        # the same with the root given instead of found through git
        plain = os.path.join(d, "plain")
        exe_plain = build(plain, top="\n\n")
        shutil.rmtree(os.path.join(plain, ".git"))
        out = gate(plain, exe_plain, rc=2)
        check("none of the 3 sites of this run is one of the baseline's 3" in out, out)
        gate(plain, exe_plain, "--root", plain, rc=0)
        run([a.nanoprobe, "gate", "--tracker", a.tracker, "--baseline", base, "--", exe_plain],
            {"NANO_GATE_ROOT": plain}, expect_rc=0, cwd=plain)
        # an atomic added in work(): the diff names the function and the line
        added = os.path.join(d, "added")
        exe_added = build(added, extra="\n      __atomic_fetch_add(&misses, 1, __ATOMIC_RELAXED);")
        out = gate(added, exe_added, rc=1)
        # (outside the if: it runs on every iteration; the third fetch_add of work())
        check(re.search(r"REGRESSED site +src/app\.c work #\+0 relaxed __atomic_fetch_add: 0 -> 1000 "
                        r"\(\+1000, new\) at src/app\.c:9:", out), out)
        # one added before the others, which it moves down a line: it is the new one
        # (sites used to be told apart by their rank alone: the first would have
        # been blamed, the last reported new)
        before = os.path.join(d, "before")
        exe_before = build(before, early="\n    __atomic_fetch_add(&misses, 2, __ATOMIC_RELAXED);")
        out = gate(before, exe_before, rc=1)
        check(re.search(r"REGRESSED site +src/app\.c work #\+0 relaxed __atomic_fetch_add: 0 -> 1000 "
                        r"\(\+1000, new\) at src/app\.c:6:", out)
              and not re.search(r"site .* work #[01] ", out), out)
        # built without the plugin: nothing counted is an error, not a pass
        bare = os.path.join(d, "bare")
        out = gate(bare, build(bare, cc="gcc"), rc=2)
        check("executed no instrumented atomic" in out, out)


GATE_CXX_PROGRAM = """#include <atomic>
#include <memory>
#include <thread>
struct Stats {
  std::atomic<long> n{0};
};
std::atomic<int> ready{0}; /* not static: never folded away */
static void worker(std::shared_ptr<Stats> s, int from, int to) {
  for (int i = from; i < to; i++) {%s
    s->n.fetch_add(1, std::memory_order_relaxed);
  }
}
int main() {
  auto s = std::make_shared<Stats>();
  std::thread a(worker, s, 0, 500), b(worker, s, 500, 1000);
  a.join();
  b.join();
  return s->n.load() == 1000 ? 0 : 1;
}
"""


def scenario_gate_cxx(a):
    """The gate on C++ (issue 37.5): functions are shown demangled; an atomic
    added to a function that also runs a library's inlined atomics (the
    shared_ptr's reference counts) is reported at its own line, not at the
    library's; outside a git checkout the folder of the sources is the root,
    so the same sources measured from another folder keep their keys."""
    def build(folder, added=""):
        os.makedirs(folder, exist_ok=True)  # no git checkout
        src = os.path.join(folder, "app.cpp")
        with open(src, "w") as f:
            f.write(GATE_CXX_PROGRAM % added)
        exe = os.path.join(folder, "app")
        run(["clang++-15", "-O1", "-g", "-pthread", "-fpass-plugin=" + a.plugin, src, "-o", exe])
        return exe

    def gate(folder, exe, *opts, rc):
        # no checkout: not even one the temporary folder lies in (CI's TMPDIR is
        # in the clone)
        return gate_in(a, base, folder, exe, *opts, rc=rc, env={"GIT_CEILING_DIRECTORIES": d})

    with tempfile.TemporaryDirectory() as d:
        base = os.path.join(d, "base.json")
        first = os.path.join(d, "one")
        gate(first, build(first), "--update", rc=0)
        with open(base) as f:
            check(json.load(f).get("root") == first, "no checkout: the sources' folder is the root")
        moved = os.path.join(d, "elsewhere", "two")
        out = gate(moved, build(moved), rc=0)
        check("OK" in out, "the same sources in another folder: %s" % out)
        added = os.path.join(d, "added")
        out = gate(added, build(added, "\n    if (ready.load(std::memory_order_acquire) < 0)\n      return;"),
                   rc=1)
        # the one site line: the load at line 10; worker's fetch_add, moved two
        # lines down, and the shared_ptr's inlined counts keep their keys
        sites = [l for l in out.splitlines() if " site " in l]
        check(len(sites) == 1 and "REGRESSED" in sites[0]
              and "app.cpp worker(std::shared_ptr<Stats>, int, int) #+0 acquire __atomic_load" in sites[0]
              and re.search(r"0 -> 1000 \(\+1000, new\) at app\.cpp:10:", sites[0]),
              "the added load, demangled, at its line: %s" % out)


TRACE_PROGRAM = r"""#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>

static std::atomic<long> hits{0};

__attribute__((noinline)) static void work(long n) {
  for (long i = 0; i < n; i++)
    hits.fetch_add(1, std::memory_order_relaxed); // USER LINE
}

int main(int argc, char **argv) {
  long n = std::atol(argv[1]);
  for (int round = 0; round < 3; round++) {
    work(n);
    struct timespec ts = {0, 150000000};
    nanosleep(&ts, nullptr);
  }
  std::printf("%ld\n", hits.load());
  return 0;
}
"""


def scenario_trace_atomics(a):
    """The atomics a trace holds are visible everywhere (issue 17.3): sites at
    the user's line with the library location they were inlined from, samples
    over time, `rpd report`'s section with the source line, `rpd export`'s
    counter tracks, and the gate reading a trace as baseline or current run,
    equal to the tracker's own JSON of the same run."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "app.cpp")
        with open(src, "w") as f:
            f.write(TRACE_PROGRAM)
        user_line = TRACE_PROGRAM.splitlines().index(
            "    hits.fetch_add(1, std::memory_order_relaxed); // USER LINE") + 1
        exe = os.path.join(d, "app")
        run(["clang++-15", "-std=c++17", "-O2", "-g", "-fpass-plugin=" + a.plugin, src, "-o", exe])
        trace = os.path.join(d, "t.rpd")
        run([a.nanoprobe, "run", "-q", "--atomics", "-o", trace, "--", exe, "1000"], cwd=d)
        con = sqlite3.connect(trace)
        rows = con.execute(
            "SELECT S.function, S.file, S.line, sum(C.count), O.function, O.file, O.line "
            "FROM nano_atomic_site S JOIN nano_atomic_count C ON C.site_id = S.id "
            "LEFT JOIN nano_atomic_origin O ON O.site_id = S.id WHERE S.kind = '__atomic_fetch_add' "
            "GROUP BY 1, 2, 3, 5, 6, 7"  # an unrolled loop has several copies of the site
        ).fetchall()
        check(len(rows) == 1 and rows[0][:4] == ("_ZL4workl", src, user_line, 3000)
              and rows[0][5].endswith("/atomic_base.h") and "fetch_add" in rows[0][4] and rows[0][6] > 0,
              "the fetch_add site at the user's line, inlined from atomic_base.h: %s" % rows)
        samples = con.execute("SELECT start, count FROM nano_atomic_sample "
                              "WHERE kind = '__atomic_fetch_add' ORDER BY start").fetchall()
        counts = [c for _, c in samples]
        # (two samples at least: on a loaded machine the sampler may miss a
        # phase of the program, which sleeps between them)
        check(len(samples) >= 2 and counts == sorted(counts) and counts[-1] == 3000
              and counts[0] < 3000, "fetch_add samples rise to the total: %s" % samples)
        con.close()

        rpd = os.path.join(os.path.dirname(a.nanoprobe), "..", "rpd", "rpd")
        out = os.path.join(d, "t.json")
        run([rpd, "export", trace, "-o", out])
        with open(out) as f:
            events = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "atomics"]
        adds = [e["args"]["count"] for e in events if e["name"] == "__atomic_fetch_add"]
        check(adds == counts and all(e["ph"] == "C" for e in events), "export counter track: %s" % events)
        # an atomics-only trace: one process for both summary and info
        summary = subprocess.run([rpd, "summary", trace], capture_output=True, text=True).stdout
        info = subprocess.run([rpd, "info", trace], capture_output=True, text=True).stdout
        check(": 1 process," in summary and "processes: 1, threads: 0" in info,
              "summary and info count the atomics-only process alike:\n%s\n%s" % (summary, info))
        # its span: the recording window's, which holds every sample
        con = sqlite3.connect(trace)
        first, last = con.execute("SELECT min(start), max(start) FROM nano_atomic_sample").fetchone()
        windows = con.execute("SELECT pid, start, \"end\" FROM nano_window").fetchall()
        con.close()
        check(len(windows) == 1 and windows[0][1] <= first and last <= windows[0][2],
              "one recording window, holding the samples: %s (samples %d .. %d)" % (windows, first, last))
        w0, w1 = windows[0][1:] if len(windows) == 1 else (0, 0)
        check(("%.6f s" % ((w1 - w0) / 1e9)) in summary.splitlines()[0] and
              ("time span:       %d .. %d ns" % (w0, w1)) in info,
              "the span of an atomics-only trace is its recording window's:\n%s\n%s" % (summary, info))
        # sampled once (at the exit flush only): the span is still the run's,
        # inside the time the run took (the trace's clock is CLOCK_MONOTONIC)
        once = os.path.join(d, "once.rpd")
        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        run([a.nanoprobe, "run", "-q", "--atomics", "-o", once, "--", exe, "1"], cwd=d,
            env_extra={"NANO_RPD_ATOMICS_HZ": "0"})
        after = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        con = sqlite3.connect(once)
        times = [t for (t,) in con.execute("SELECT DISTINCT start FROM nano_atomic_sample")]
        windows = con.execute("SELECT start, \"end\" FROM nano_window").fetchall()
        con.close()
        summary = subprocess.run([rpd, "summary", once], capture_output=True, text=True).stdout
        info = subprocess.run([rpd, "info", once], capture_output=True, text=True).stdout
        check(len(times) == 1 and len(windows) == 1 and
              before <= windows[0][0] < times[0] <= windows[0][1] <= after and
              ("time span:       %d .. %d ns" % windows[0]) in info and
              ("%.6f s" % ((windows[0][1] - windows[0][0]) / 1e9)) in summary.splitlines()[0],
              "an atomics-only trace sampled once spans its recording window, within the run "
              "(%d .. %d): %s %s\n%s\n%s" % (before, after, times, windows, summary, info))
        html = os.path.join(d, "r.html")
        run([rpd, "report", trace, "-o", html])
        with open(html) as f:
            page = f.read()
        section = page[page.find("id=atomics"):]
        check("id=atomics" in page and "hits.fetch_add(1, std::memory_order_relaxed); // USER LINE" in section
              and "atomic_base.h:" in section and "%s:%d:" % (src, user_line) in section,
              "report: the atomics section with the user's source line")

        # the gate: a trace as baseline and as current run, and against JSON
        dump = os.path.join(d, "dump.json")
        run([exe, "1000"], {"LD_PRELOAD": a.tracker, "NANO_TRACKER_FORMAT": "json",
                            "NANO_TRACKER_OUTPUT": dump})
        for base, cur in ((trace, trace), (dump, trace), (trace, dump)):
            p = run([a.nanoprobe, "gate", "--root", d, "--baseline", base, "--current", cur])
            check("OK" in p.stdout, "gate %s vs %s: %s" % (base, cur, p.stdout))
        more = os.path.join(d, "more.rpd")
        run([a.nanoprobe, "run", "-q", "--atomics", "-o", more, "--", exe, "1001"], cwd=d)
        p = run([a.nanoprobe, "gate", "--root", d, "--baseline", trace, "--current", more], expect_rc=1)
        check(re.search(r"REGRESSED site +app\.cpp work\(long\) #0 relaxed __atomic_fetch_add: 3000 -> 3003 "
                        r"\(\+3, \+0\.10%%\) at app\.cpp:%d:\d+ \(inlined from atomic_base\.h:\d+\)" % user_line,
                        p.stdout), p.stdout)
        p = run([a.nanoprobe, "gate", "--baseline", trace, "--current", more, "--update"], expect_rc=2)
        check("is a trace" in p.stderr and os.path.getsize(trace) > 0, p.stderr)
        plain = os.path.join(d, "plain.rpd")
        run([a.nanoprobe, "run", "-q", "-o", plain, "--", "true"], cwd=d)
        p = run([a.nanoprobe, "gate", "--baseline", trace, "--current", plain], expect_rc=2)
        check("executed no instrumented atomic" in p.stderr or "holds no host atomics" in p.stderr, p.stderr)


CALLERS_PROGRAM = r"""#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>

static std::atomic<long> hits{0};
static long sum;

static void copy_many(const std::shared_ptr<long> &p, long n) {
  for (long i = 0; i < n; i++) {
    std::shared_ptr<long> q = p; // MANY COPY
    hits.fetch_add(1, std::memory_order_relaxed); // USER ATOMIC
  } // MANY RELEASE
}

static long copy_once(const std::shared_ptr<long> &p) {
  std::shared_ptr<long> q = p; // ONCE COPY
  return *q;
} // ONCE RELEASE

int main(int argc, char **argv) {
  long n = std::atol(argv[1]);
  auto p = std::make_shared<long>(1);
  std::thread a(copy_many, std::cref(p), n), b(copy_many, std::cref(p), n);
  a.join();
  b.join();
  sum = copy_once(p);
  std::printf("%ld %ld\n", hits.load(), sum);
  return 0;
}
"""


def scenario_library_callers(a):
    """Atomics of library code that is not inlined (libstdc++'s shared_ptr at
    -O0) cannot name the user's line: the plugin flags them "library", and
    `nanoprobe run --atomics-callers` counts them per caller in the user's
    files, through call stacks (issue 17.2). The callers of a site sum to its
    count, the counts are those of a run without callers, and summary and
    report show them with the user's lines."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "app.cpp")
        with open(src, "w") as f:
            f.write(CALLERS_PROGRAM)
        lines = CALLERS_PROGRAM.splitlines()
        line = {m: next(i for i, t in enumerate(lines, 1) if "// " + m in t)
                for m in ("MANY COPY", "MANY RELEASE", "ONCE COPY", "ONCE RELEASE", "USER ATOMIC")}
        exe = os.path.join(d, "app")
        run(["clang++-15", "-std=c++17", "-O0", "-g", "-pthread", "-fpass-plugin=" + a.plugin, src,
             "-o", exe])
        n = 500
        traces = {}
        for mode in ("plain", "callers"):
            traces[mode] = os.path.join(d, mode + ".rpd")
            opt = ["--atomics-callers"] if mode == "callers" else ["--atomics"]
            p = run([a.nanoprobe, "run", "-q"] + opt + ["-o", traces[mode], "--", exe, str(n)], cwd=d)
            check(p.stdout.startswith("%d 1" % (2 * n)), "%s run's output: %s" % (mode, p.stdout))

        def sites(trace):
            con = sqlite3.connect(trace)
            rows = con.execute(
                "SELECT S.id, S.kind, S.function, S.file, S.line, S.flags, C.count FROM nano_atomic_site S "
                "JOIN nano_atomic_count C ON C.site_id = S.id").fetchall()
            callers = con.execute("SELECT site_id, function, file, line, count FROM nano_atomic_caller").fetchall()
            con.close()
            return rows, callers

        plain, plain_callers = sites(traces["plain"])
        rows, callers = sites(traces["callers"])
        check(plain_callers == [], "no caller rows without --atomics-callers: %s" % plain_callers)
        key = lambda r: (r[1], r[2], r[3], r[4], r[5], r[6])
        check(sorted(map(key, plain)) == sorted(map(key, rows)),
              "the same sites and counts with and without callers:\n%s\n%s" % (plain, rows))
        library = [r for r in rows if r[5] & 0x80]
        user = [r for r in rows if r[3] == src]
        check(library and all("/include/c++/" in r[3] for r in library),
              "library-flagged sites are libstdc++'s: %s" % rows)
        check(all(not r[5] & 0x80 for r in user)
              and sum(r[6] for r in user if r[1] == "__atomic_fetch_add" and r[4] == line["USER ATOMIC"]) == 2 * n,
              "the inlined std::atomic sites are the user's, not flagged: %s" % user)
        per_site = {}
        for site, _, _, _, count in callers:
            per_site[site] = per_site.get(site, 0) + count
        check(per_site == {r[0]: r[6] for r in library if r[6] > 0},
              "the callers of each library site sum to its count: %s vs %s" % (per_site, library))
        at = {}
        for site, fn, file, ln, count in callers:
            check(file == src, "every caller is in the user's file: %s" % ((fn, file, ln),))
            at[ln] = at.get(ln, 0) + count
        # one increment per copy; each release runs __exchange_and_add and,
        # at -O0, _M_release's load of the weak count check (kinds vary by
        # libstdc++ version, so only increments are counted exactly here)
        add = [r[0] for r in library if "__atomic_add" in r[2]]
        adds = {}
        for site, fn, file, ln, count in callers:
            if site in add:
                adds[ln] = adds.get(ln, 0) + count
        check(adds.get(line["MANY COPY"]) == 2 * n and adds.get(line["ONCE COPY"]) == 1,
              "shared_ptr copies counted at the user's copy lines: %s (lines %s)" % (adds, line))
        check(at.get(line["MANY RELEASE"], 0) >= 2 * n and at.get(line["ONCE RELEASE"], 0) >= 1,
              "releases counted at the user's closing braces: %s (lines %s)" % (at, line))

        rpd = os.path.join(os.path.dirname(a.nanoprobe), "..", "rpd", "rpd")
        p = run([rpd, "summary", traces["callers"]])
        section = p.stdout[p.stdout.find("library atomics by caller"):]
        check("library atomics by caller" in p.stdout and "%s:%d" % (src, line["MANY COPY"]) in section,
              "summary's callers section: %s" % p.stdout)
        html = os.path.join(d, "r.html")
        run([rpd, "report", traces["callers"], "-o", html])
        with open(html) as f:
            page = f.read()
        section = page[page.find("Library atomics by caller"):]
        check("Library atomics by caller" in page and "std::shared_ptr&lt;long&gt; q = p; // MANY COPY" in section,
              "report's callers table with the user's source line")

        # the tracker's JSON names the flag
        dump = os.path.join(d, "dump.json")
        run([exe, "3"], {"LD_PRELOAD": a.tracker, "NANO_TRACKER_FORMAT": "json", "NANO_TRACKER_OUTPUT": dump})
        with open(dump) as f:
            js = json.load(f)
        flagged = [s for s in js["sites"] if "library" in s.get("flags", [])]
        check(flagged and all("/include/c++/" in s["file"] for s in flagged), "JSON 'library' flag: %s" % flagged)

        # a bad run-time library pattern is said and the default used
        bad = os.path.join(d, "bad.rpd")
        p = run([a.nanoprobe, "run", "-q", "--atomics-callers", "-o", bad, "--", exe, "3"],
                {"NANO_ATOMICS_LIBRARY_FILES": "("}, cwd=d)
        check("NANO_ATOMICS_LIBRARY_FILES=(: invalid regular expression" in p.stderr, p.stderr)
        _, bad_callers = sites(bad)
        check(bad_callers and all(c[2] == src for c in bad_callers), "default pattern used: %s" % bad_callers)


def scenario_json_bytes(a):
    """A site whose file name is not UTF-8 (a stray Latin-1 byte) still gives a
    valid JSON dump that the gate reads (issue 14.3: the tracker's own string
    writer copied the byte through, and the gate rejected the whole dump)."""
    prelude = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "prelude",
                           "prelude.h")
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d.encode(), b"caf\xe9.c")
        with open(src, "wb") as f:
            f.write(b"int n;\nint main(void) { __atomic_fetch_add(&n, 1, __ATOMIC_RELAXED); return 0; }\n")
        exe = os.path.join(d, "cafe")
        run(["gcc", "-O1", "--include=" + prelude, src, "-o", exe])
        dump = os.path.join(d, "dump.json")
        run([exe], {"LD_PRELOAD": a.tracker, "NANO_TRACKER_FORMAT": "json", "NANO_TRACKER_OUTPUT": dump})
        with open(dump, "rb") as f:
            doc = json.loads(f.read().decode("utf-8"))  # valid UTF-8 and valid JSON
        files = [s["file"] for s in doc["sites"]]
        check(len(files) == 1 and files[0].endswith("caf\ufffd.c"), "file names: %r" % files)
        run([a.nanoprobe, "gate", "--baseline", dump, "--current", dump], expect_rc=0)


def scenario_instructions(a):
    """--metric instructions through callgrind: update, then unchanged."""
    with tempfile.TemporaryDirectory() as d:
        base = os.path.join(d, "instr.json")
        args = [a.bin, "1", "1000", "10"]
        run([a.nanoprobe, "gate", "--metric", "instructions", "--baseline", base, "--update", "--"] + args)
        with open(base) as f:
            doc = json.load(f)
        check(doc["format"] == "nanoprobe-instructions" and doc["instructions"] > 10000, "instructions doc: %s" % doc)
        p = run([a.nanoprobe, "gate", "--metric", "instructions", "--tolerance", "2%", "--baseline", base, "--"]
                + args, expect_rc=0)
        check("OK" in p.stdout, "instructions unchanged: OK")
        doc["instructions"] //= 2
        with open(base, "w") as f:
            json.dump(doc, f)
        p = run([a.nanoprobe, "gate", "--metric", "instructions", "--baseline", base, "--"] + args, expect_rc=1)
        check("REGRESSED" in p.stdout, "instructions doubled: regression")
        run([a.nanoprobe, "gate", "--baseline", base, "--"] + args, expect_rc=2)  # wrong metric
        # clang's DWARF 5, which valgrind 3.19 reads in part: one line says so,
        # valgrind's own lines about each form it skipped are not passed on
        src, exe = os.path.join(d, "d5.c"), os.path.join(d, "d5")
        with open(src, "w") as f:
            f.write("int main(void) { volatile int s = 0; for (int i = 0; i < 100; i++) s += i; "
                    "return 0; }\n")
        run(["clang-15", "-g", "-O1", src, "-o", exe])
        p = run([a.nanoprobe, "gate", "--metric", "instructions", "--baseline",
                 os.path.join(d, "d5.json"), "--update", "--", exe])
        said = [l for l in p.stderr.splitlines() if "DWARF 5" in l]
        check(len(said) == 1 and "-gdwarf-4" in said[0] and "unaffected" in said[0]
              and "unhandled dwarf2" not in p.stderr, "DWARF 5 under valgrind: %r" % p.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario")
    for opt in ("prog", "mode", "bin", "source", "tracker", "tracer", "print-lib", "lib",
                "nanoprobe", "extra", "plugin"):
        ap.add_argument("--" + opt)
    a = ap.parse_args()
    globals()["scenario_" + a.scenario](a)
    if FAILS:
        print("%d check(s) failed" % len(FAILS), file=sys.stderr)
        sys.exit(1)
    print("%s: all checks passed" % a.scenario)


if __name__ == "__main__":
    main()
