#!/usr/bin/env python3
"""Bad-input corpus for the sanitizer build (ASan + UBSan) of the tracer and
the rpd tool: every rpd command on well-formed, crafted and damaged traces,
and the tracer under malformed settings. A sanitizer report, a signal or an
exit status other than 0, 1 or 2 fails; so does a run longer than its
timeout (an input that makes a command super-linear).

usage: rpd_corpus.py SAN_BUILD_DIR WORK_DIR
"""
import os
import random
import shutil
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import check, fail  # noqa: E402 (tests/testlib.py)

SAN_ENV = {
    "ASAN_OPTIONS": "exitcode=97:detect_leaks=1:abort_on_error=0:allocator_may_return_null=1",
    "UBSAN_OPTIONS": "halt_on_error=1:exitcode=98:print_stacktrace=1",
    "LSAN_OPTIONS": "exitcode=96",
}
T0 = 10**18  # a plausible CLOCK_MONOTONIC-ish origin in ns
I64_MAX = 2**63 - 1
I64_MIN = -2**63
RUN_TIMEOUT = 60  # seconds: every input here is small; more means a blow-up


def run(cmd, env=None, timeout=RUN_TIMEOUT):
    e = dict(os.environ, **SAN_ENV)
    for k in ("LD_PRELOAD", "RPDT_FILENAME", "RPDT_AUTOSTART"):
        e.pop(k, None)
    e.update(env or {})
    try:
        p = subprocess.run(cmd, env=e, capture_output=True, text=True, errors="replace",
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        fail("%s: still running after %d s" % (" ".join(cmd), timeout))
    report = ("runtime error:" in p.stderr or "AddressSanitizer" in p.stderr
              or "LeakSanitizer" in p.stderr)
    if report or p.returncode not in (0, 1, 2):
        fail("%s: exit %d\n%s" % (" ".join(cmd), p.returncode, p.stderr[-6000:]))
    return p


def crafted(rpd, work):
    """Traces that are valid SQLite but odd: empty, extreme or inverted times,
    dangling string ids, deep nesting, long names, missing tables."""
    out = {}

    def make(name, sql_rows):
        path = os.path.join(work, name + ".rpd")
        run([rpd, "create", path])
        con = sqlite3.connect(path)
        for sql, params in sql_rows:
            con.execute(sql, params)
        con.commit()
        con.close()
        out[name] = path

    api = ("INSERT INTO rocpd_api(pid,tid,start,end,apiName_id,category_id,domain_id,args_id)"
           " VALUES (?,?,?,?,?,?,?,?)")
    op = ("INSERT INTO rocpd_op(gpuId,queueId,sequenceId,start,end,description_id,opType_id)"
          " VALUES (?,?,?,?,?,?,?)")
    s = "INSERT INTO rocpd_string(string) VALUES (?)"
    make("empty", [])
    make("extreme-times", [(s, ("hip",)), (s, ("k",)),
                           (api, (1, 1, I64_MIN, I64_MAX, 1, 1, 1, 1)),
                           (api, (1, 1, I64_MAX, I64_MIN, 1, 1, 1, 1)),
                           (api, (1, 2, 0, I64_MAX, 1, 1, 1, 1)),
                           (op, (0, 0, 0, I64_MIN, I64_MAX, 2, 2)),
                           (op, (I64_MAX, I64_MIN, 0, I64_MAX, I64_MIN, 2, 2)),
                           ("INSERT INTO rocpd_api_ops(api_id, op_id) VALUES (1, 1)", ())])
    # report's marks section (a mark's time from the span's start) and the
    # GPU time summed per call (two ops of nearly 2^63 ns on one call)
    link = "INSERT INTO rocpd_api_ops(api_id, op_id) VALUES (?, ?)"
    make("extreme-marks", [(s, ("UserMarker",)), (s, ("k",)), (s, ("KernelExecution",)),
                           (api, (1, 1, I64_MIN, I64_MIN, 1, 1, 1, 1)),
                           (api, (1, 1, I64_MAX, I64_MAX, 1, 1, 1, 1)),
                           (api, (1, 2, 0, 10, 2, 1, 1, 1)),
                           (op, (0, 0, 1, 0, I64_MAX, 2, 3)), (op, (0, 0, 2, 1, I64_MAX, 2, 3)),
                           (link, (3, 1)), (link, (3, 2))])
    make("dangling", [(api, (1, 1, T0, T0 + 10, 999, 999, 999, 999)),
                      (op, (0, 0, 1, T0, T0 + 5, 999, 999)),
                      ("INSERT INTO rocpd_api_ops(api_id, op_id) VALUES (77, 88)", ())])
    make("text-in-ints", [(api, ("x", "y", "start", "end", "a", "b", "c", "d")),
                          (op, ("g", "q", "s", "t0", "t1", "d", "o"))])
    deep = [(s, ("UserMarker",))]
    depth = 3000
    for i in range(depth):
        deep.append((api, (1, 1, T0 + i, T0 + 2 * depth - i, 1, 1, 1, 1)))
    make("deep", deep)
    make("long-name", [(s, ("n" * 200000,)), (api, (1, 1, T0, T0 + 1, 1, 1, 1, 1)),
                       (op, (0, 0, 1, T0, T0 + 1, 1, 1)),
                       ("INSERT INTO rocpd_api_ops(api_id, op_id) VALUES (1, 1)", ())])
    make("bad-utf8", [("INSERT INTO rocpd_string(string) VALUES (CAST(X'FF00FE' AS TEXT))", ()),
                      (api, (1, 1, T0, T0 + 1, 1, 1, 1, 1)), (op, (0, 0, 1, T0, T0 + 1, 1, 1))])
    make("dropped-api", [("DROP VIEW IF EXISTS api", ()), ("DROP VIEW IF EXISTS top", ())])
    for name in ("no-op-table", "no-metadata"):
        path = os.path.join(work, name + ".rpd")
        run([rpd, "create", path])
        con = sqlite3.connect(path)
        if name == "no-op-table":
            for v in con.execute("SELECT name FROM sqlite_master WHERE type='view'").fetchall():
                con.execute("DROP VIEW %s" % v[0])
            con.execute("DROP TABLE rocpd_api_ops")
            con.execute("DROP TABLE rocpd_op")
        else:
            con.execute("DELETE FROM rocpd_metadata")
        con.commit()
        con.close()
        out[name] = path
    return out


def damaged(src, work, count):
    """Byte-flipped and truncated copies of src (a fixed seed: the same files
    every run)."""
    with open(src, "rb") as f:
        data = f.read()
    rng = random.Random(21)
    out = {}
    for i in range(count):
        b = bytearray(data)
        if i % 4 == 3:
            b = b[:rng.randrange(1, len(b))]
        else:
            for _ in range(1 + i % 8):
                b[rng.randrange(len(b))] = rng.randrange(256)
        path = os.path.join(work, "damaged-%02d.rpd" % i)
        with open(path, "wb") as f:
            f.write(b)
        out["damaged-%02d" % i] = path
    return out


def every_command(rpd, name, path, work):
    """Runs each rpd command on a copy of path (some commands add tables)."""
    copy = os.path.join(work, "cmd.rpd")
    for cmd in (["info"], ["top"], ["export", "-o", os.path.join(work, "o.json")],
                ["report", "-o", os.path.join(work, "o.html")], ["callstack"], ["graph"],
                ["autograd"], ["trim", "--start", "10%", "--end", "90%", "-o",
                               os.path.join(work, "t.rpd")],
                ["merge", "-o", os.path.join(work, "m.rpd"), "COPY", "COPY"]):
        shutil.copyfile(path, copy)
        for suffix in ("-wal", "-shm"):
            if os.path.exists(path + suffix):
                shutil.copyfile(path + suffix, copy + suffix)
            elif os.path.exists(copy + suffix):
                os.unlink(copy + suffix)
        for out in ("t.rpd", "m.rpd"):
            if os.path.exists(os.path.join(work, out)):
                os.unlink(os.path.join(work, out))
        args = [copy if a == "COPY" else a for a in cmd]
        if "COPY" not in cmd:
            args = args[:1] + [copy] + args[1:]
        run([rpd] + args)


def settings(build, work):
    """The tracer (ASan'd) under malformed settings: still runs, stays clean."""
    prog = os.path.join(build, "tests", "rpd", "rpd_workload")
    bad = {"NANO_RPD_BUFFER": ["-1", "0", "1e9", "18446744073709551616"],
           "RPDT_AUTOSTART": ["4294967296", ""], "NANO_RPD_SIGNALS": ["\x7f", "-0"],
           "NANO_RPD_CLOCK": ["sundial", "TSC"], "NANO_RPD_CRASH_WAIT_MS": ["-1", "99999999999"],
           "RPDT_AUTOFLUSH": ["nan", "inf", "0x10", "1e400", "."],
           "NANO_RPD_STACKDEPTH": ["0", "256", "-3"], "RPDT_FILENAME": ["", "/" + "x" * 5000],
           "NANO_RPD_SYNC": ["FULL "], "NANO_RPD_DROP": ["2"]}
    for var, values in bad.items():
        for v in values:
            env = {"RPDT_FILENAME": os.path.join(work, "s.rpd"), "RPDT_STACKFRAMES": "1", var: v}
            run([prog, "marks", "100"], env)


def main():
    build, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    rpd = os.path.join(build, "tools", "rpd", "rpd")
    maker = os.path.join(build, "tests", "rpdtool", "rpdtool_trace_maker")
    good = os.path.join(work, "good.rpd")
    run([maker, good], {"RPDT_AUTOSTART": "0"})
    run([rpd, "info", good])  # a reader first, as users do
    inputs = {"good": good}
    inputs.update(crafted(rpd, work))
    inputs.update(damaged(good, work, 40))
    for name, path in sorted(inputs.items()):
        every_command(rpd, name, path, work)
    settings(build, work)
    print("PASS sanitize_rpd: %d traces x 9 commands, settings" % len(inputs))


if __name__ == "__main__":
    main()
