#!/usr/bin/env python3
"""Tests of the `rpd` tool's create, info, top and export commands.

usage: test_rpdtool.py RPD_BINARY CASE WORKDIR [TRACE_MAKER]

Traces are made with `rpd create` and filled with known rows through Python's
sqlite3, so every assertion compares against values fixed here; case "tracer" runs
the same commands on a trace written through the tracer's API (trace_maker).
"""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import check_output_safety  # noqa: E402

RPD, CASE, WORK = sys.argv[1:4] if sys.argv[1:] != ["--list"] else (None, None, None)
T0 = 10**12            # a realistic CLOCK_MONOTONIC origin (ns)
US = 1000              # rows below are written in microseconds after T0
GPU_PID = 1000000000   # export's pseudo-process of GPU 0

SPECIAL = 'quote " backslash \\ newline \n tab \t e\u0301 \u00e9 \U0001F680 ctrl \x01 end'


def run(*args, code=0):
    """Runs rpd with args; asserts its exit code; returns (stdout, stderr)."""
    p = subprocess.run([RPD, *args], capture_output=True, text=True, timeout=60)
    assert p.returncode == code, (args, p.returncode, p.stdout, p.stderr)
    return p.stdout, p.stderr


def info_table(out, title):
    """The rows (lists of cells) of the table under the line `title` of rpd info's output."""
    lines = out.splitlines()
    start = lines.index(title) + 3  # the title, the header and the rule
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return [l.split() for l in lines[start:end]]


def make_trace(path):
    """A version-3 trace: two processes, three threads, nested user ranges, a
    mark, API calls linked to GPU ops on two GPUs, monitor samples."""
    if os.path.exists(path):
        os.unlink(path)
    run("create", path)
    db = sqlite3.connect(path)
    strings = ["", "hip", "UserMarker", "hipLaunchKernel", "hipMemcpy", "kern_a",
               "KernelExecution", "CopyHostToDevice", "kern_b"]
    for s in strings:
        db.execute("INSERT INTO rocpd_string(string) VALUES (?)", (s,))
    S = {s: i + 1 for i, s in enumerate(strings)}
    ustrings = ["", "outer", "inner", "checkpoint", SPECIAL, "stream=0x1"]
    for s in ustrings:
        db.execute("INSERT INTO rocpd_ustring(string) VALUES (?)", (s,))
    db.execute("INSERT INTO rocpd_ustring(string) VALUES (CAST(X'6162FF63' AS TEXT))")
    U = {s: i + 1 for i, s in enumerate(ustrings)}
    U["bad"] = len(ustrings) + 1
    um, hip = S["UserMarker"], S["hip"]
    api = [  # id, pid, tid, start, end (us after T0), apiName, domain, args
        (1, 100, 100, 1500, 5000, um, um, U["outer"]),
        (2, 100, 100, 1900, 2600, um, um, U["inner"]),
        (3, 100, 100, 2000, 2200, S["hipLaunchKernel"], hip, U["stream=0x1"]),
        (4, 100, 100, 3000, 3000, um, um, U["checkpoint"]),
        (5, 100, 101, 1600, 4000, S["hipMemcpy"], hip, 1),
        (6, 200, 200, 1000, 1100, um, um, U[SPECIAL]),
        (7, 100, 100, 2300, 2400, S["hipLaunchKernel"], hip, 1),
        (8, 200, 200, 1200, 1300, um, um, U["bad"]),
    ]
    for i, pid, tid, s, e, name, dom, args in api:
        db.execute("INSERT INTO rocpd_api(id,pid,tid,start,end,apiName_id,category_id,domain_id,args_id)"
                   " VALUES (?,?,?,?,?,?,1,?,?)", (i, pid, tid, T0 + s * US, T0 + e * US, name, dom, args))
    ops = [  # id, gpu, queue, seq, start, end, description, opType
        (1, 0, 0, 1, 2100, 2600, S["kern_a"], S["KernelExecution"]),
        (2, 1, 3, 1, 3000, 3800, 1, S["CopyHostToDevice"]),
        (3, 0, 0, 2, 2700, 2800, S["kern_b"], S["KernelExecution"]),
        (4, 0, 0, 3, 7000, 9000, S["kern_a"], S["KernelExecution"]),
    ]
    for i, g, q, seq, s, e, d, t in ops:
        db.execute("INSERT INTO rocpd_op(id,gpuId,queueId,sequenceId,start,end,description_id,opType_id)"
                   " VALUES (?,?,?,?,?,?,?,?)", (i, g, q, seq, T0 + s * US, T0 + e * US, d, t))
    for a, o in [(3, 1), (5, 2), (7, 3)]:
        db.execute("INSERT INTO rocpd_api_ops(api_id, op_id) VALUES (?,?)", (a, o))
    for dt, dev, mt, s, e, v in [("gpu", 0, "sclk", 1000, 2000, "1500"),
                                 ("gpu", 0, "sclk", 4000, 5000, "1700"),
                                 ("gpu", 0, "power", 1200, 1300, "n/a")]:
        db.execute("INSERT INTO rocpd_monitor(deviceType,deviceId,monitorType,start,end,value)"
                   " VALUES (?,?,?,?,?,?)", (dt, dev, mt, T0 + s * US, T0 + e * US, v))
    db.execute("INSERT INTO rocpd_metadata(tag,value) VALUES ('nano_dropped_records','7')")
    db.commit()
    db.close()


def export(path, *extra):
    out = os.path.join(WORK, "out.json")
    _, err = run("export", path, "-o", out, *extra)
    with open(out, encoding="utf-8") as f:
        return json.load(f), err


def us(t):
    """Expected JSON timestamp of a row time in us after T0 (base = T0+1000us)."""
    return float(t - 1000)


def check_nesting(events):
    """Complete slices of each thread nest: none overlaps another partially.
    Returns {name: parent name} for the slices."""
    parents = {}
    by_thread = {}
    for e in events:
        if e["ph"] == "X":
            by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in evs:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            if stack:
                top = stack[-1]
                assert e["ts"] + e["dur"] <= top["ts"] + top["dur"] + 1e-9, ("partial overlap", top, e)
                parents[e["name"]] = top["name"]
            stack.append(e)
    return parents


def case_info():
    path = os.path.join(WORK, "t.rpd")
    make_trace(path)
    out, _ = run("info", path)
    lines = out.splitlines()
    assert "schema version:  3" in lines, out
    assert f"time span:       {T0 + 1000 * US} .. {T0 + 9000 * US} ns (0.008000 s)" in lines, out
    assert "dropped records: 7" in lines, out
    assert "processes: 2, threads: 3" in lines, out
    summary, _ = run("summary", path)
    assert ": 2 processes," in summary.splitlines()[0], summary  # the same count as info's
    assert "GPUs: 2" in lines, out
    rows = {l.split()[0]: l.split()[1] for l in lines if l.startswith("rocpd_")}
    assert rows["rocpd_api"] == "8" and rows["rocpd_op"] == "4" and rows["rocpd_api_ops"] == "3", rows
    assert rows["rocpd_monitor"] == "3" and rows["rocpd_string"] == "9", rows
    # per-process table: pid, threads, api calls, user ranges
    proc = [l.split() for l in lines if l.split()[:1] in (["100"], ["200"])]
    assert proc[0][:4] == ["100", "2", "6", "3"], proc
    assert proc[1][:4] == ["200", "1", "2", "2"], proc
    # per-thread table (no names: the trace has no nano_thread): pid, tid, api calls
    assert "name" not in out.split("threads:\n")[1].splitlines()[0], out
    threads = info_table(out, "threads:")
    assert [t[:3] for t in threads] == [["100", "100", "5"], ["100", "101", "1"], ["200", "200", "2"]], threads
    gpu = [l.split() for l in lines[lines.index("GPUs: 2"):] if l[:1].strip().isdigit() or l.startswith("  ")]
    gpu = [g for g in gpu if g and g[0] in ("0", "1")]
    assert gpu[0][:4] == ["0", "1", "3", str(2600 * US)], gpu  # 500+100+2000 us busy
    assert gpu[1][:4] == ["1", "1", "1", str(800 * US)], gpu


def case_top():
    path = os.path.join(WORK, "t.rpd")
    make_trace(path)
    out, _ = run("top", path)
    lines = out.splitlines()
    assert lines[0].split() == ["Name", "TotalCalls", "TotalDuration_us", "Ave_us", "Percentage"], lines
    assert set(lines[1]) <= set("- "), lines
    rows = [l.split() for l in lines[2:]]
    assert [r[0] for r in rows] == ["kern_a", "CopyHostToDevice", "kern_b"], rows
    assert rows[0][1:] == ["2", "2500", "1250.00", "73.53"], rows   # 2500 of 3400 us
    assert rows[1][1:] == ["1", "800", "800.00", "23.53"], rows
    assert rows[2][1:] == ["1", "100", "100.00", "2.94"], rows
    # aligned: every numeric column ends at the same position on each line
    ends = {len(l.rstrip()) for l in lines[2:]}
    assert len(ends) == 1, lines
    out, _ = run("top", "--limit", "1", path)
    assert len(out.splitlines()) == 3, out
    out2, _ = run("top", path, "--limit", "1")  # options after FILE too
    assert out2 == out
    out, _ = run("top", "-n", "0", path)
    assert len(out.splitlines()) == 5, out
    run("top", "--limit", "x", path, code=2)
    run("top", "--limit", code=2)
    # a CPU-only trace: its ranges and calls instead of an empty GPU table
    cpu = os.path.join(WORK, "cpu.rpd")
    make_trace(cpu)
    db = sqlite3.connect(cpu)
    db.execute("DELETE FROM rocpd_api_ops")
    db.execute("DELETE FROM rocpd_op")
    db.commit()
    db.close()
    p = subprocess.run([RPD, "top", cpu], capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    # names from the trace reach the terminal safely: one row each, control
    # bytes and a stray byte as \xNN, valid UTF-8 as it is
    assert not re.search(rb"[\x00-\x08\x0b-\x1f\x7f]", p.stdout), p.stdout
    text = p.stdout.decode("utf-8")
    assert "newline \\x0a tab \\x09" in text and "ctrl \\x01 end" in text and "ab\\xffc" in text, text
    assert "\u00e9" in text, text
    lines = text.splitlines()
    assert lines[0].startswith("no GPU ops in ") and lines[1].split()[:3] == ["name", "domain", "calls"], lines
    rows = [l.split() for l in lines[3:]]
    assert rows and rows[0][0] == "outer" and rows[0][2:4] == ["1", "3.50"], rows   # 1500..5000 us


def case_export():
    path = os.path.join(WORK, "t.rpd")
    make_trace(path)
    doc, err = export(path)
    assert doc["otherData"]["time_base_ns"] == T0 + 1000 * US, doc["otherData"]
    ev = doc["traceEvents"]
    x = [e for e in ev if e["ph"] == "X"]
    api = {(e["pid"], e["tid"], e["name"], e["ts"]): e for e in x if e["pid"] < GPU_PID}
    assert len(api) == 7, api.keys()
    outer = api[(100, 100, "outer", us(1500))]
    assert outer["dur"] == 3500.0 and outer["cat"] == "UserMarker", outer
    assert api[(100, 100, "inner", us(1900))]["dur"] == 700.0
    launch = api[(100, 100, "hipLaunchKernel", us(2000))]
    assert launch["cat"] == "hip" and launch["args"]["args"] == "stream=0x1" and launch["dur"] == 200.0
    assert api[(100, 101, "hipMemcpy", us(1600))]["dur"] == 2400.0
    assert (200, 200, SPECIAL, us(1000)) in api, [k for k in api if k[0] == 200]
    assert (200, 200, "ab\ufffdc", us(1200)) in api, [k for k in api if k[0] == 200]
    parents = check_nesting(ev)
    assert parents["inner"] == "outer" and parents["hipLaunchKernel"] == "inner", parents
    marks = [e for e in ev if e["ph"] == "i"]
    assert [(m["name"], m["ts"], m["pid"], m["tid"], m["s"]) for m in marks] == \
        [("checkpoint", us(3000), 100, 100, "t")], marks
    ops = sorted((e["pid"], e["tid"], e["name"], e["ts"], e["dur"]) for e in x if e["pid"] >= GPU_PID)
    assert ops == [(GPU_PID, 0, "kern_a", us(2100), 500.0), (GPU_PID, 0, "kern_a", us(7000), 2000.0),
                   (GPU_PID, 0, "kern_b", us(2700), 100.0),
                   (GPU_PID + 1, 3, "CopyHostToDevice", us(3000), 800.0)], ops
    flows = {}
    for e in ev:
        if e["ph"] in ("s", "f"):
            flows.setdefault(e["id"], {})[e["ph"]] = e
    assert len(flows) == 3, flows
    pairs = sorted(((f["s"]["pid"], f["s"]["tid"], f["s"]["ts"]), (f["f"]["pid"], f["f"]["tid"], f["f"]["ts"]))
                   for f in flows.values())
    # both ends at the middle of their slices: call -> op
    assert pairs == [((100, 100, us(2100)), (GPU_PID, 0, us(2350))),
                     ((100, 100, us(2350)), (GPU_PID, 0, us(2750))),
                     ((100, 101, us(2800)), (GPU_PID + 1, 3, us(3400)))], pairs
    assert all(f["f"]["bp"] == "e" and f["s"]["cat"] == f["f"]["cat"] for f in flows.values())
    counters = [(e["name"], e["ts"], e["args"]["value"], e["pid"]) for e in ev
                if e["ph"] == "C" and e["cat"] == "monitor"]
    assert counters == [("sclk", us(1000), 1500, GPU_PID), ("sclk", us(4000), 1700, GPU_PID)], counters
    # queue depth and idle per GPU, as rpd2tracing.py: +1 at the launching
    # call's start, -1 at the op's end, the last values at the trace's end
    queue = [(e["pid"] - GPU_PID, e["name"], e["ts"], list(e["args"].values())[0]) for e in ev
             if e["ph"] == "C" and e["cat"] == "queue"]
    assert queue == [
        (0, "Idle", us(2000), 0), (0, "QueueDepth", us(2000), 1), (0, "QueueDepth", us(2300), 2),
        (0, "QueueDepth", us(2600), 1), (0, "Idle", us(2800), 1), (0, "QueueDepth", us(2800), 0),
        (0, "Idle", us(9000), 1), (0, "QueueDepth", us(9000), 0),
        (1, "Idle", us(1600), 0), (1, "QueueDepth", us(1600), 1), (1, "Idle", us(3800), 1),
        (1, "QueueDepth", us(3800), 0), (1, "Idle", us(9000), 1), (1, "QueueDepth", us(9000), 0)], queue
    assert "1 rocpd_monitor rows with a non-numeric value skipped" in err, err
    names = {(e["pid"], e.get("tid"), e["name"]): e["args"]["name"] for e in ev if e["ph"] == "M"
             and e["name"] in ("process_name", "thread_name")}
    assert names[(100, 0, "process_name")] == "process 100"
    assert names[(200, 0, "process_name")] == "process 200"
    assert names[(100, 100, "thread_name")] == "main thread 100"
    assert names[(100, 101, "thread_name")] == "thread 101"
    assert names[(GPU_PID, 0, "process_name")] == "GPU 0"
    assert names[(GPU_PID + 1, 0, "process_name")] == "GPU 1"
    assert names[(GPU_PID + 1, 3, "thread_name")] == "queue 3"
    # to stdout
    p = subprocess.run([RPD, "export", path, "-o", "-"], capture_output=True, timeout=60)
    assert p.returncode == 0 and json.loads(p.stdout)["traceEvents"] == ev
    # the trace itself is never overwritten
    _, err = run("export", path, "-o", path, code=2)
    assert "is the trace itself" in err, err
    run("info", path)
    # an output that cannot be written fails and leaves nothing behind
    run("export", path, "-o", os.path.join(WORK, "no/such/dir.json"), code=1)


def case_window():
    path = os.path.join(WORK, "t.rpd")
    make_trace(path)
    expect = {"outer", "hipMemcpy", "checkpoint", "CopyHostToDevice"}
    for start, end in [(str(T0 + 2950 * US), str(T0 + 3500 * US)),   # absolute ns
                       ("25%", "30%"),                                # span 1000..9000 us
                       ("+2ms", "+2.4ms"), ("2ms", "2400us")]:   # offsets
        doc, _ = export(path, "--start", start, "--end", end)
        ev = doc["traceEvents"]
        got = {e["name"] for e in ev if e["ph"] in ("X", "i")}
        assert got == expect, (start, end, got)
        flows = [e for e in ev if e["ph"] in ("s", "f")]
        assert len(flows) == 2 and {e["id"] for e in flows} == {flows[0]["id"]}, flows
        counters = [e for e in ev if e["ph"] == "C"]
        assert counters == [], counters
        procs = {e["pid"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
        assert procs == {100, GPU_PID + 1}, procs
    doc, _ = export(path, "--start", "0%", "--end", "100%")
    assert len([e for e in doc["traceEvents"] if e["ph"] == "X"]) == 11
    doc, _ = export(path, "--end", str(T0 + 1050 * US))
    assert [e["name"] for e in doc["traceEvents"] if e["ph"] in ("X", "C")] == [SPECIAL, "sclk"]
    _, err = run("export", path, "-o", os.path.join(WORK, "w.json"), "--start", "50%", "--end", "10%", code=2)
    assert "is after --end" in err, err
    # a number without a unit is absolute ns: far before the trace, it warns,
    # and so does a window that holds nothing (issue 18.3)
    doc, err = export(path, "--start", "5", "--end", "10")
    assert "--start 5 is 5 ns on the trace's clock, outside the trace" in err and "5us" in err, err
    assert "holds no record" in err, err
    assert [e for e in doc["traceEvents"] if e["ph"] != "M"] == [], doc
    # absolute timestamps: the trace's own clock, as rocmProfileData's exporter
    doc, err = export(path, "--absolute")
    assert doc["otherData"]["time_base_ns"] == 0 and "warning" not in err, (doc["otherData"], err)
    outer = [e for e in doc["traceEvents"] if e.get("name") == "outer"]
    assert len(outer) == 1 and outer[0]["ts"] == (T0 + 1500 * US) / 1000.0, outer
    for bad in ["abc", "12x", "-5", "101%", "+3parsecs", "3parsecs", "", "5ms5"]:
        _, err = run("export", path, "-o", os.path.join(WORK, "w.json"), "--start", bad, code=2)
        assert "--start" in err, err
    assert not os.path.exists(os.path.join(WORK, "w.json"))


V2_SCHEMA = """
CREATE TABLE rocpd_string (id integer NOT NULL PRIMARY KEY AUTOINCREMENT, string varchar(4096) NOT NULL);
CREATE TABLE rocpd_op (id integer NOT NULL PRIMARY KEY AUTOINCREMENT, gpuId integer NOT NULL,
  queueId integer NOT NULL, sequenceId integer NOT NULL, completionSignal varchar(18) NOT NULL,
  start integer NOT NULL, end integer NOT NULL, description_id integer NOT NULL, opType_id integer NOT NULL);
CREATE TABLE rocpd_api (id integer NOT NULL PRIMARY KEY AUTOINCREMENT, pid integer NOT NULL,
  tid integer NOT NULL, start integer NOT NULL, end integer NOT NULL, apiName_id integer NOT NULL,
  args_id integer NOT NULL);
CREATE TABLE rocpd_api_ops (id integer NOT NULL PRIMARY KEY AUTOINCREMENT, api_id integer NOT NULL,
  op_id integer NOT NULL);
CREATE TABLE rocpd_metadata (id integer NOT NULL PRIMARY KEY AUTOINCREMENT, tag varchar(4096) NOT NULL,
  value varchar(4096) NOT NULL);
INSERT INTO rocpd_metadata(tag, value) VALUES ('schema_version', '2');
INSERT INTO rocpd_string(string) VALUES (''), ('UserMarker'), ('phase one'), ('hipMalloc'), ('size=64'),
  ('kern_v2'), ('KernelExecution');
INSERT INTO rocpd_api(pid,tid,start,end,apiName_id,args_id) VALUES
  (7,7,1000000,5000000,2,3), (7,7,2000000,3000000,4,5);
INSERT INTO rocpd_op(gpuId,queueId,sequenceId,completionSignal,start,end,description_id,opType_id)
  VALUES (2,1,0,'',2500000,4500000,6,7);
INSERT INTO rocpd_api_ops(api_id, op_id) VALUES (2, 1);
"""


def case_v2():
    path = os.path.join(WORK, "v2.rpd")
    if os.path.exists(path):
        os.unlink(path)
    db = sqlite3.connect(path)
    db.executescript(V2_SCHEMA)
    db.commit()
    db.close()
    out, _ = run("info", path)
    assert "schema version:  2" in out and "processes: 1, threads: 1" in out and "GPUs: 1" in out, out
    summary, _ = run("summary", path)  # no nano_ tables: processes, not API rows, counted
    assert ": 1 process," in summary.splitlines()[0], summary
    out, _ = run("top", path)
    rows = [l.split() for l in out.splitlines()[2:]]
    assert rows == [["kern_v2", "1", "2000", "2000.00", "100.00"]], out
    doc, _ = export(path)
    ev = doc["traceEvents"]
    x = sorted((e["name"], e["cat"], e["ts"], e["dur"]) for e in ev if e["ph"] == "X")
    assert x == [("hipMalloc", "api", 1000.0, 1000.0), ("kern_v2", "op", 1500.0, 2000.0),
                 ("phase one", "UserMarker", 0.0, 4000.0)], x
    hm = [e for e in ev if e["ph"] == "X" and e["name"] == "hipMalloc"][0]
    assert hm["args"]["args"] == "size=64"
    assert len([e for e in ev if e["ph"] in ("s", "f")]) == 2


def case_create():
    path = os.path.join(WORK, "c.rpd")
    if os.path.exists(path):
        os.unlink(path)
    run("create", path)
    db = sqlite3.connect(path)
    meta = dict(db.execute("SELECT tag, value FROM rocpd_metadata"))
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    journal = db.execute("PRAGMA journal_mode").fetchone()[0]
    db.close()
    assert meta["schema_version"] == "3", meta
    # rollback-journal mode: readers without write access can open it (issue 18.1)
    assert journal == "delete" and not os.path.exists(path + "-wal"), journal
    assert {"rocpd_api", "rocpd_op", "rocpd_string", "rocpd_ustring", "rocpd_api_ops"} <= tables, tables
    out, _ = run("info", path)
    assert "time span:       empty (no records)" in out and "processes: 0, threads: 0" in out, out
    _, err = run("create", path, code=1)
    assert path in err and "exists" in err, err
    db = sqlite3.connect(path)
    db.execute("INSERT INTO rocpd_string(string) VALUES ('x')")
    db.commit()
    db.close()
    run("create", "--force", path)
    db = sqlite3.connect(path)
    assert db.execute("SELECT count(*) FROM rocpd_string WHERE string='x'").fetchone()[0] == 0
    db.close()
    _, err = run("create", os.path.join(WORK, "no/such/dir/c.rpd"), code=1)
    assert "no/such/dir/c.rpd" in err, err
    _, err = run("create", WORK, code=1)
    assert "is a directory" in err, err
    run("create", code=2)
    run("create", "a", "b", code=2)


def case_errors():
    bad = {}
    bad["missing"] = os.path.join(WORK, "missing.rpd")
    bad["text"] = os.path.join(WORK, "text.rpd")
    with open(bad["text"], "w") as f:
        f.write("this is not a database, just some text long enough to have a header\n" * 4)
    bad["sqlite"] = os.path.join(WORK, "other.db")
    if os.path.exists(bad["sqlite"]):
        os.unlink(bad["sqlite"])
    db = sqlite3.connect(bad["sqlite"])
    db.execute("CREATE TABLE people(name text)")
    db.commit()
    db.close()
    bad["newer"] = os.path.join(WORK, "newer.rpd")
    make_trace(bad["newer"])
    db = sqlite3.connect(bad["newer"])
    db.execute("UPDATE rocpd_metadata SET value='4' WHERE tag='schema_version'")
    db.commit()
    db.close()
    bad["empty"] = os.path.join(WORK, "empty.rpd")
    open(bad["empty"], "w").close()
    bad["dir"] = WORK
    want = {"missing": ["no such file", "does not exist"], "text": ["not an SQLite database"],
            "sqlite": ["not an RPD", "not RPD"], "newer": ["newer"], "empty": ["not an RPD", "empty", "not RPD"],
            "dir": ["directory", "cannot", "not"]}
    for kind, path in bad.items():
        for cmd in (["info"], ["top"], ["export", "-o", os.path.join(WORK, "e.json")]):
            _, err = run(cmd[0], path, *cmd[1:], code=2)
            assert err.startswith(f"rpd {cmd[0]}: ") and path in err, (kind, cmd, err)
            assert any(w in err for w in want[kind]), (kind, cmd, err)
            assert len(err.splitlines()) == 1, err
    assert not os.path.exists(os.path.join(WORK, "e.json"))
    # usage errors
    out, err = run(code=2)
    assert "usage: rpd" in err
    out, _ = run("--help")
    for c in ("create", "info", "top", "export"):
        assert f"  {c} " in out, out
    for c in ("create", "info", "top", "export"):
        out, _ = run(c, "--help")
        assert out.startswith(f"usage: rpd {c}"), out
        out2, _ = run("help", c)
        assert out2 == out
    _, err = run("bogus", code=2)
    assert "unknown command 'bogus'" in err
    _, err = run("info", code=2)
    assert "missing FILE" in err
    _, err = run("info", "--bogus", "x", code=2)
    assert "unknown option '--bogus'" in err
    t = os.path.join(WORK, "t.rpd")
    make_trace(t)
    _, err = run("export", t, code=2)
    assert "missing -o" in err
    _, err = run("export", t, "-o", code=2)
    assert "needs a value" in err


def case_tracer():
    """info, top and export of a trace the tracer itself wrote (trace_maker)."""
    maker = sys.argv[4]
    path = os.path.join(WORK, "made.rpd")
    env = dict(os.environ, RPDT_AUTOSTART="0")
    env.pop("LD_PRELOAD", None)
    p = subprocess.run([maker, path], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    out, _ = run("info", path)
    assert "schema version:  3" in out and "processes: 1, threads: 3" in out and "GPUs: 2" in out, out
    assert "dropped records: 0" in out, out
    # process and thread names as the OS had them (comm: 15 characters)
    proc = info_table(out, "processes: 1, threads: 3")
    assert len(proc) == 1 and proc[0][1:5] == ["rpdtool_trace_m", "3", "28", "26"], proc  # name,
    pid = proc[0][0]                                   # threads, api rows, user ranges+marks
    threads = {t[2]: t for t in info_table(out, "threads:")}
    assert sorted(threads) == ["maker-exit", "maker-linger", "rpdtool_trace_m"], threads
    assert threads["rpdtool_trace_m"][1] == pid, threads
    assert sum(int(t[3]) for t in threads.values()) == 28, threads
    html = os.path.join(WORK, "made.html")
    run("report", path, "-o", html)
    page = open(html, encoding="utf-8").read()
    tid = threads["maker-exit"][1]
    assert (f"<title>rpdtool_trace_m (pid {pid}), maker-exit (tid {tid})</title>maker-exit ({tid})"
            in page), page
    # readers leave the file alone and as one file: no WAL side files after them
    with open(path, "rb") as f:
        before = f.read()
    for cmd in (["info"], ["top"], ["export", "-o", os.path.join(WORK, "made.json")]):
        run(*cmd, path)
        assert not os.path.exists(path + "-wal") and not os.path.exists(path + "-shm"), cmd
    with open(path, "rb") as f:
        assert f.read() == before
    out, _ = run("top", path)
    rows = [l.split() for l in out.splitlines()[2:]]
    assert [r[0] for r in rows] == ["kernelA", "CopyHostToDevice"], rows
    assert rows[0][1] == "1" and rows[0][4] == "75.00" and rows[1][4] == "25.00", rows
    doc, _ = export(path)
    ev = doc["traceEvents"]
    x = [e for e in ev if e["ph"] == "X"]
    user = [e for e in x if e["cat"] == "UserMarker"]
    assert len(user) == 22, len(user)
    assert sorted({e["name"] for e in user}) == ["inner", "main-outer", "step"] + [f"work {i}" for i in range(5)]
    # as rocmProfileData's exporter: a marker row (apiName UserMarker, any
    # domain) is named by its text; a range with its own args keeps them
    step = [e for e in user if e["name"] == "step"][0]
    assert step["args"]["args"] == "iter=1", step
    dom = [e for e in x if e["cat"] == "mydomain"]
    assert [e["name"] for e in dom] == ["domain-range"] and "args" not in dom[0]["args"], dom
    p = check_nesting(ev)
    assert p["inner"].startswith("work "), p
    outer = [e for e in user if e["name"] == "main-outer"][0]
    for e in x:
        if e["pid"] == outer["pid"] and e["tid"] == outer["tid"] and e is not outer:
            assert outer["ts"] <= e["ts"] and e["ts"] + e["dur"] <= outer["ts"] + outer["dur"], e
    marks = [e for e in ev if e["ph"] == "i"]
    assert sorted((m["name"], m["cat"]) for m in marks) == \
        [("domain-mark", "mydomain"), ("done", "UserMarker"), ("done", "UserMarker")], marks
    assert len({(m["pid"], m["tid"]) for m in marks}) == 3
    hip = sorted(e["name"] for e in x if e["cat"] == "hip")
    assert hip == ["hipLaunchKernel", "hipMemcpyAsync"], hip
    ops = sorted((e["pid"] - GPU_PID, e["tid"], e["name"], e["dur"]) for e in x if e["cat"] == "op")
    assert ops == [(0, 1, "kernelA", 6.0), (1, 0, "CopyHostToDevice", 2.0)], ops
    flows = [e for e in ev if e["ph"] in ("s", "f")]
    assert len(flows) == 4 and len({e["id"] for e in flows}) == 2, flows
    counters = [e["args"]["value"] for e in ev if e["ph"] == "C" and e["cat"] == "monitor"]
    assert counters == [1200, 1800], counters
    # process and thread names as the OS had them (comm: 15 characters)
    names = {(e["name"], e["args"]["name"]) for e in ev
             if e["ph"] == "M" and e["pid"] == outer["pid"] and e["name"].endswith("_name")}
    assert names == {("process_name", "rpdtool_trace_m"), ("thread_name", "rpdtool_trace_m"),
                     ("thread_name", "maker-exit"), ("thread_name", "maker-linger")}, names


def api_trace(path, rows, name="x"):
    """A trace of `rows` API rows (start, end) named `name`."""
    if os.path.exists(path):
        os.unlink(path)
    run("create", path)
    db = sqlite3.connect(path)
    db.execute("INSERT INTO rocpd_string(string) VALUES ('UserMarker')")
    db.execute("INSERT INTO rocpd_string(string) VALUES (?)", (name,))
    db.executemany("INSERT INTO rocpd_api(pid,tid,start,end,apiName_id,category_id,domain_id,args_id)"
                   " VALUES (1,1,?,?,2,1,1,1)", rows)
    db.commit()
    db.close()


def case_pathological():
    """Inputs that once made commands quadratic or lie (issue 21.9)."""
    # A 2 MB name on 600 rows: every naming command reads it once and shows it
    # cut at 16384 characters, saying so; the export stays proportional to the
    # rows, not rows x name.
    big = os.path.join(WORK, "big.rpd")
    api_trace(big, [(T0 + i * 1000, T0 + i * 1000 + 500) for i in range(600)], "N" * 2000000)
    for args in (["info", big], ["top", big], ["export", big, "-o", os.path.join(WORK, "b.json")],
                 ["report", big, "-o", os.path.join(WORK, "b.html")]):
        _, err = run(*args)
        assert "1 strings of rocpd_string are longer than 16384 characters: shown cut" in err, err
    with open(os.path.join(WORK, "b.json")) as f:
        names = [e["name"] for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    assert len(names) == 600 and all(n == "N" * 16384 + "\u2026" for n in names), len(names)
    assert os.path.getsize(os.path.join(WORK, "b.json")) < 600 * 17000
    # A 1 MB op description on 400 ops: `top` and `summary` group and show the
    # cut copy, not the file's string through the file's own `top` view (a
    # 50 MB one took 263 s and 20 GB there)
    ops = os.path.join(WORK, "bigop.rpd")
    api_trace(ops, [(T0, T0 + 1)])
    db = sqlite3.connect(ops)
    db.execute("INSERT INTO rocpd_string(id, string) VALUES (1000, ?)", ("D" * 1000000,))
    db.execute("INSERT INTO rocpd_string(id, string) VALUES (1001, 'KernelExecution')")
    db.executemany("INSERT INTO rocpd_op(gpuId, queueId, sequenceId, start, end, description_id, "
                   "opType_id) VALUES (0, 0, ?, ?, ?, 1000, 1001)",
                   [(i, T0 + i * 1000, T0 + i * 1000 + 500) for i in range(400)])
    db.commit()
    db.close()
    for cmd in ("top", "summary"):
        out, err = run(cmd, ops)
        assert "strings of rocpd_string are longer than 16384 characters: shown cut" in err, err
        assert "D" * 16384 + "\u2026" in out and "D" * 16385 not in out, (cmd, len(out))
        assert max(len(line) for line in out.splitlines()) < 17000, cmd

    # A missing column is named with its table, by every command, exit 2.
    cut = os.path.join(WORK, "cut.rpd")
    api_trace(cut, [(T0, T0 + 1)])
    db = sqlite3.connect(cut)
    for (view,) in db.execute("SELECT name FROM sqlite_master WHERE type='view'").fetchall():
        db.execute('DROP VIEW "%s"' % view)
    db.execute("ALTER TABLE rocpd_api DROP COLUMN start")
    db.commit()
    db.close()
    for args in (["info", cut], ["top", cut], ["callstack", cut], ["export", cut, "-o", "-"]):
        _, err = run(*args, code=2)
        assert 'table rocpd_api has no column "start": damaged, or not written by an RPD tool' \
            in err, (args, err)

    # A file SQLite calls damaged: info shows what it can, says so, exit 1.
    dmg = os.path.join(WORK, "dmg.rpd")
    api_trace(dmg, [(T0 + i, T0 + i + 1) for i in range(20000)])
    db = sqlite3.connect(dmg)
    db.execute("PRAGMA journal_mode=DELETE")
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    leaves = [r[0] for r in db.execute(
        "SELECT pageno FROM dbstat WHERE name='rocpd_api' AND pagetype='leaf'")]
    db.close()
    with open(dmg, "r+b") as f:  # a leaf's first-freeblock offset, into its own header
        f.seek((leaves[len(leaves) // 2] - 1) * page_size + 1)
        f.write(b"\x00\x07")
    out, err = run("info", dmg, code=1)
    assert "integrity:       DAMAGED" in out, out
    assert "the file is damaged (SQLite quick_check: Page" in err, err
    out, _ = run("info", big)
    assert "integrity:       ok" in out, out

    # Nesting 1500 deep: each call is paired with at most 1000 ancestors, so
    # the table grows linearly past that depth, and the run says so.
    deep = os.path.join(WORK, "deep.rpd")
    n = 1500
    api_trace(deep, [(T0 + i, T0 + 2 * n - i) for i in range(n)])
    out, err = run("callstack", deep)
    rows = sum(min(d, 1000) for d in range(1, n + 1))
    assert "%d calls, %d ext_callstack rows, deepest stack %d" % (n, rows, n) in out, out
    assert "500 calls are nested deeper than 1000 levels" in err, err
    db = sqlite3.connect(deep)
    assert db.execute("SELECT count(*), max(depth) FROM ext_callstack").fetchone() == (rows, 999)
    db.close()

    # An export that fills the disk names its output, not the trace.
    many = os.path.join(WORK, "many.rpd")
    api_trace(many, [(T0 + i * 10, T0 + i * 10 + 5) for i in range(20000)])
    p = subprocess.run(["sh", "-c", 'trap "" XFSZ; ulimit -f 1000; exec "$@"', "sh", RPD, "export",
                        many, "-o", os.path.join(WORK, "full.json")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and re.search(r"full\.json\.tmp\.[0-9]+\.[0-9]+: write failed", p.stderr), \
        (p.returncode, p.stderr)
    assert not [f for f in os.listdir(WORK) if f.startswith("full.json")], os.listdir(WORK)
    assert not os.path.exists(os.path.join(WORK, "full.json"))


UPSTREAM_INDEXES = {  # rocmProfileData's index2Schema.cmd: index -> (table, columns)
    "rocpd_api_ops_api_id_op_id_e7e52317_uniq": ("rocpd_api_ops", ["api_id", "op_id"]),
    "rocpd_api_ops_api_id_f87632ad": ("rocpd_api_ops", ["api_id"]),
    "rocpd_api_ops_op_id_b35ab7c9": ("rocpd_api_ops", ["op_id"]),
    "rocpd_op_description_id_c8dc8310": ("rocpd_op", ["description_id"]),
    "rocpd_op_opType_id_810aaccd": ("rocpd_op", ["opType_id"]),
    "rocpd_counter_op_id_0b4d4b59": ("rocpd_counter", ["op_id"]),
    "rocpd_counter_name_id_92b0ed0c": ("rocpd_counter", ["name_id"]),
    "rocpd_api_apiName_id_54bc0a6c": ("rocpd_api", ["apiName_id"]),
    "rocpd_api_category_id_16543984": ("rocpd_api", ["category_id"]),
    "rocpd_api_domain_id_081456b2": ("rocpd_api", ["domain_id"]),
    "rocpd_api_args_id_6a626626": ("rocpd_api", ["args_id"]),
    "rocpd_kernelapi_kernelName_id_c8efa6f0": ("rocpd_kernelapi", ["kernelName_id"]),
}


def case_index():
    """`rpd index` adds rocmProfileData's optional indexes, once (issue 18.2)."""
    path = os.path.join(WORK, "t.rpd")
    make_trace(path)
    before = subprocess.run([RPD, "top", path], capture_output=True).stdout
    out, _ = run("index", path)
    assert "optional indexes are in place" in out, out
    db = sqlite3.connect(path)
    for name, (table, cols) in UPSTREAM_INDEXES.items():
        got = db.execute("SELECT tbl_name FROM sqlite_master WHERE type='index' AND name=?", (name,)).fetchall()
        assert got == [(table,)], (name, got)
        assert [r[2] for r in db.execute("PRAGMA index_info(\"%s\")" % name)] == cols, name
    n = db.execute("SELECT count(*) FROM sqlite_master WHERE type='index'").fetchone()[0]
    db.close()
    run("index", path)  # again: nothing changes
    db = sqlite3.connect(path)
    assert db.execute("SELECT count(*) FROM sqlite_master WHERE type='index'").fetchone()[0] == n
    db.close()
    assert subprocess.run([RPD, "top", path], capture_output=True).stdout == before
    _, err = run("index", os.path.join(WORK, "missing.rpd"), code=2)
    assert "missing.rpd" in err, err


def case_watch():
    """`rpd watch` prints the summary again while the file fills: it waits for
    a file that does not exist yet, and shows live atomics from the samples
    before a flush stored the counts (issue 18.6)."""
    path = os.path.join(WORK, "live.rpd")
    p = subprocess.Popen([RPD, "watch", "--interval", "1", "--count", "3", path],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    tmp = path + ".new"  # made aside and renamed: watch sees no half-made file
    make_trace(tmp)
    db = sqlite3.connect(tmp)
    db.executescript(
        "CREATE TABLE nano_atomic_sample (session integer NOT NULL, pid integer NOT NULL, "
        "start integer NOT NULL, kind_id integer NOT NULL, kind varchar(64) NOT NULL, "
        "count integer NOT NULL);"
        "INSERT INTO nano_atomic_sample VALUES (0, 100, 1, 4, '__atomic_fetch_add', 10);"
        "INSERT INTO nano_atomic_sample VALUES (0, 100, 2, 4, '__atomic_fetch_add', 25);"
        "INSERT INTO nano_atomic_sample VALUES (0, 101, 2, 4, '__atomic_fetch_add', 5);"
        "INSERT INTO nano_atomic_sample VALUES (0, 100, 2, 0, '__atomic_load', 7);")
    db.commit()
    db.close()
    os.rename(tmp, path)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    prints = out.split("rpd watch: ")[1:]
    assert len(prints) == 3, out
    assert "waiting for %s to be created" % path in prints[0], prints[0]
    last = prints[-1]
    assert "ranges and API calls, longest total first" in last, last
    # the latest sample of each process and kind, summed: 25 + 5, and 7
    rows = re.findall(r"^(__atomic_\w+)\s+(\d+)$", last, re.M)
    assert rows == [("__atomic_fetch_add", "30"), ("__atomic_load", "7")], last
    run("watch", "--interval", "0", path, code=2)
    run("watch", "--count", "x", path, code=2)


def case_outputs():
    """export and report never clobber a device, a FIFO or a link (testlib)."""
    t = os.path.join(WORK, "t.rpd")
    make_trace(t)

    def valid_json(text):
        try:
            return bool(json.loads(text)["traceEvents"])
        except ValueError:
            return False

    def valid_html(text):
        return text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")

    for cmd, valid in (("export", valid_json), ("report", valid_html)):
        work = os.path.join(WORK, cmd)
        os.makedirs(work)
        check_output_safety(lambda out, code: run(cmd, t, "-o", out, code=code), work, valid)
    # a standard output that cannot be written fails the command, said
    for cmd in (["summary"], ["info"], ["top"], ["export", "-o", "-"]):
        with open("/dev/full", "w") as full:
            p = subprocess.run([RPD, cmd[0], t] + cmd[1:], stdout=full, stderr=subprocess.PIPE,
                               text=True, timeout=60)
        assert p.returncode == 1 and "No space left on device" in p.stderr, (cmd, p.returncode, p.stderr)


CASES = {"tracer": case_tracer, "pathological": case_pathological, "info": case_info, "top": case_top, "export": case_export, "window": case_window,
         "v2": case_v2, "create": case_create, "errors": case_errors, "index": case_index,
         "watch": case_watch, "outputs": case_outputs}

if __name__ == "__main__":
    if sys.argv[1:] == ["--list"]:  # for CMake: the cases, one per line
        print("\n".join(c for c in CASES if c != "tracer"))
        sys.exit(0)
    WORK = os.path.join(WORK, CASE)
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    CASES[CASE]()
    print(f"rpdtool {CASE}: ok")
