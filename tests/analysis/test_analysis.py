#!/usr/bin/env python3
"""Tests of the analysis commands of `rpd`: callstack, graph, autograd,
report, merge, trim, and their behaviour on bad input.

usage: test_analysis.py RPD_BINARY MKTRACE_BINARY CASE WORKDIR

The traces are written through the tracer's own API by analysis_mktrace
(see its source for the rows and times); the expected values below were
computed by hand from those times. The schema-2 case builds its file here.
"""
import hashlib
import json
import os
import pty
import random
import re
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import report_tables  # noqa: E402

RPD, MKTRACE, CASE, WORK = sys.argv[1:5]


def run(*args, code=0, env=None):
    """Runs rpd with args; asserts its exit code; returns (stdout, stderr)."""
    p = subprocess.run([RPD, *args], capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == code, (args, p.returncode, p.stdout, p.stderr)
    return p.stdout, p.stderr


def make(kind, name, *extra):
    """Writes trace `kind` through the runtime into WORK/name; returns the path."""
    path = os.path.join(WORK, name)
    for sfx in ("", "-wal", "-shm"):
        if os.path.exists(path + sfx):
            os.unlink(path + sfx)
    env = dict(os.environ, RPDT_AUTOSTART="0")
    p = subprocess.run([MKTRACE, kind, path, *extra], capture_output=True, text=True,
                       timeout=60, env=env)
    assert p.returncode == 0, (kind, p.stdout, p.stderr)
    return path


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def q(path, sql, *params):
    db = sqlite3.connect(path)
    try:
        return db.execute(sql, params).fetchall()
    finally:
        db.close()


def api_id(path, text):
    """The id of the call whose args (ranges: their text) or apiName is `text`."""
    rows = q(path, "SELECT id FROM api WHERE args = ? OR (apiName = ? AND args NOT LIKE '%=%')",
             text, text)
    assert len(rows) == 1, (text, rows)
    return rows[0][0]


def view_row(path, view, ident):
    rows = q(path, f"SELECT cpu_time, gpu_time FROM {view} WHERE parent_id = ?", ident)
    assert len(rows) == 1, (view, ident, rows)
    return rows[0]


def reference_callstack(path):
    """Independent O(n^2) reference: ancestors by containment on the thread,
    exclusive time = duration - direct children's durations, GPU time from
    rocpd_api_ops. Returns the set of ext_callstack tuples (without id)."""
    calls = q(path, "SELECT id, pid, tid, start, end FROM rocpd_api")
    gpu = dict(q(path, "SELECT A.api_id, sum(B.end - B.start) FROM rocpd_api_ops A JOIN rocpd_op B "
                 "ON B.id = A.op_id GROUP BY A.api_id"))
    key = {c[0]: (c[3], -c[4], c[0]) for c in calls}

    def ancestors(c):
        return [a for a in calls if a[1:3] == c[1:3] and a[0] != c[0] and key[a[0]] < key[c[0]]
                and a[3] <= c[3] and a[4] >= c[4]]

    anc = {c[0]: ancestors(c) for c in calls}
    parent = {}
    for c in calls:
        if anc[c[0]]:
            parent[c[0]] = max(anc[c[0]], key=lambda a: key[a[0]])[0]
    dur = {c[0]: c[4] - c[3] for c in calls}
    excl = dict(dur)
    for child, par in parent.items():
        excl[par] -= dur[child]
    rows = set()
    for c in calls:
        chain, cur = [c[0]], c[0]
        while cur in parent:
            cur = parent[cur]
            chain.append(cur)
        for depth, p in enumerate(chain):
            rows.add((p, c[0], depth, excl[c[0]], gpu.get(c[0], 0)))
    return rows


def check_callstack_numbers(path, thread_b=True):
    """The hand-computed values of thread A (and B) of the callstack trace."""
    outer, inner, tick = api_id(path, "outer"), api_id(path, "inner"), api_id(path, "tick")
    ka = q(path, "SELECT api_ptr_id FROM rocpd_kernelapi K JOIN rocpd_string S ON S.id = "
           "K.kernelName_id WHERE S.string = 'kA'")
    kb = q(path, "SELECT api_ptr_id FROM rocpd_kernelapi K JOIN rocpd_string S ON S.id = "
           "K.kernelName_id WHERE S.string = 'kB'")
    memcpy = api_id(path, "dst = 0x1 | src = 0x2")
    # outer [1000,11000]: children kA launch (1000), inner (5000), tick (0)
    assert view_row(path, "callStack_inclusive", outer) == (10000, 11000)
    assert view_row(path, "callStack_exclusive", outer) == (4000, 0)
    assert view_row(path, "callStack_inclusive", inner) == (5000, 6000)
    assert view_row(path, "callStack_exclusive", inner) == (3000, 0)
    assert view_row(path, "callStack_exclusive", ka[0][0]) == (1000, 5000)
    assert view_row(path, "callStack_exclusive", kb[0][0]) == (1000, 4000)
    assert view_row(path, "callStack_inclusive", memcpy) == (1000, 2000)
    assert view_row(path, "callStack_inclusive", tick) == (0, 0)
    assert q(path, "SELECT depth, cpu_time, gpu_time FROM ext_callstack WHERE parent_id = ? AND "
             "child_id = ?", outer, memcpy) == [(2, 1000, 2000)]
    assert q(path, "SELECT depth FROM ext_callstack WHERE parent_id = ? AND child_id = ?",
             outer, tick) == [(1,)]
    if thread_b:
        worker = api_id(path, "worker")
        assert view_row(path, "callStack_inclusive", worker) == (4000, 0)
        assert view_row(path, "callStack_exclusive", worker) == (1000, 0)
    named = q(path, "SELECT apiName, args, cpu_time, gpu_time FROM callStack_inclusive_name "
              "WHERE parent_id = ?", outer)
    assert named == [("UserMarker", "outer", 10000, 11000)], named
    named = q(path, "SELECT apiName, args, cpu_time, gpu_time FROM callStack_exclusive_name "
              "WHERE parent_id = ?", inner)
    assert named == [("UserMarker", "inner", 3000, 0)], named


def case_callstack():
    path = make("callstack", "cs.rpd")
    out, err = run("callstack", path)
    assert "ext_callstack rows" in out and err == "", (out, err)
    # 6 rows of thread A's own calls, 13 in all there; 3 for B; 3 for C.
    assert q(path, "SELECT count(*) FROM ext_callstack") == [(19,)]
    check_callstack_numbers(path)
    # The runtime's real push/pop ranges nest.
    ro, ri = api_id(path, "real-outer"), api_id(path, "real-inner")
    assert q(path, "SELECT depth FROM ext_callstack WHERE parent_id = ? AND child_id = ?",
             ro, ri) == [(1,)]
    dur = q(path, "SELECT end - start FROM rocpd_api WHERE id = ?", ro)[0][0]
    assert view_row(path, "callStack_inclusive", ro)[0] == dur
    # No row links calls of different threads.
    assert q(path, "SELECT count(*) FROM ext_callstack E JOIN rocpd_api P ON P.id = E.parent_id "
             "JOIN rocpd_api C ON C.id = E.child_id WHERE P.tid <> C.tid OR P.pid <> C.pid") == [(0,)]
    # Every row equals the independent reference.
    got = set(q(path, "SELECT parent_id, child_id, depth, cpu_time, gpu_time FROM ext_callstack"))
    assert got == reference_callstack(path)
    tags = dict(q(path, "SELECT tag, value FROM rocpd_metadata"))
    assert tags["Callstack::Generated"] == "True" and tags["Callstack::Table"] == "True"


V2_SCHEMA = """
CREATE TABLE rocpd_metadata (id integer NOT NULL PRIMARY KEY AUTOINCREMENT, tag varchar(4096) NOT NULL, value varchar(4096) NOT NULL);
CREATE TABLE rocpd_string (id integer NOT NULL PRIMARY KEY AUTOINCREMENT, string varchar(4096) NOT NULL);
CREATE TABLE rocpd_api (id integer NOT NULL PRIMARY KEY AUTOINCREMENT, pid integer NOT NULL, tid integer NOT NULL, start integer NOT NULL, end integer NOT NULL, apiName_id integer NOT NULL, args_id integer NOT NULL);
CREATE TABLE rocpd_op (id integer NOT NULL PRIMARY KEY AUTOINCREMENT, gpuId integer NOT NULL, queueId integer NOT NULL, sequenceId integer NOT NULL, completionSignal varchar(18) NOT NULL, start integer NOT NULL, end integer NOT NULL, description_id integer NOT NULL, opType_id integer NOT NULL);
CREATE TABLE rocpd_api_ops (id integer NOT NULL PRIMARY KEY AUTOINCREMENT, api_id integer NOT NULL, op_id integer NOT NULL);
CREATE TABLE rocpd_kernelapi (api_ptr_id integer NOT NULL PRIMARY KEY, stream varchar(18) NOT NULL, gridX integer NOT NULL, gridY integer NOT NULL, gridZ integer NOT NULL, workgroupX integer NOT NULL, workgroupY integer NOT NULL, workgroupZ integer NOT NULL, groupSegmentSize integer NOT NULL, privateSegmentSize integer NOT NULL, kernelName_id integer NOT NULL);
CREATE VIEW api AS SELECT rocpd_api.id,pid,tid,start,end,A.string AS apiName, B.string AS args FROM rocpd_api INNER JOIN rocpd_string A ON A.id = rocpd_api.apiName_id INNER JOIN rocpd_string B ON B.id = rocpd_api.args_id;
INSERT INTO rocpd_metadata(tag, value) VALUES ('schema_version', '2');
"""


def make_v2(path):
    """Thread A of the callstack trace, one autograd range, in the schema-2
    layout (no domain/category, args in rocpd_string)."""
    if os.path.exists(path):
        os.unlink(path)
    db = sqlite3.connect(path)
    db.executescript(V2_SCHEMA)
    ids = {}

    def s(x):
        if x not in ids:
            ids[x] = db.execute("INSERT INTO rocpd_string(string) VALUES (?)", (x,)).lastrowid
        return ids[x]

    def call(name, args, start, end):
        return db.execute("INSERT INTO rocpd_api(pid, tid, start, end, apiName_id, args_id) "
                          "VALUES (7, 7, ?, ?, ?, ?)", (start, end, s(name), s(args))).lastrowid

    def op(api, start, end, desc, typ):
        o = db.execute("INSERT INTO rocpd_op(gpuId, queueId, sequenceId, completionSignal, start, "
                       "end, description_id, opType_id) VALUES (0, 0, 0, '', ?, ?, ?, ?)",
                       (start, end, s(desc), s(typ))).lastrowid
        db.execute("INSERT INTO rocpd_api_ops(api_id, op_id) VALUES (?, ?)", (api, o))

    def kern(api, name):
        db.execute("INSERT INTO rocpd_kernelapi VALUES (?, '0x1', 1, 1, 1, 64, 1, 1, 0, 0, ?)",
                   (api, s(name)))

    s("")
    call("UserMarker", "outer", 1000, 11000)
    a = call("hipLaunchKernel", "", 2000, 3000)
    kern(a, "kA")
    op(a, 20000, 25000, "kA", "KernelExecution")
    call("UserMarker", "inner", 4000, 9000)
    m = call("hipMemcpy", "dst = 0x1 | src = 0x2", 5000, 6000)
    op(m, 26000, 28000, "", "CopyHostToDevice")
    b = call("hipLaunchKernel", "", 7000, 8000)
    kern(b, "kB")
    op(b, 30000, 31000, "kB", "KernelExecution")
    op(b, 32000, 35000, "kB", "KernelExecution")
    call("UserMarker", "tick", 10000, 10000)
    call("UserMarker", "aten::mm, seq = 1, op_id = 2, sizes = [[3, 3]], input_op_ids = []",
         20000, 21000)
    g = call("hipLaunchKernel", "", 20100, 20200)
    kern(g, "gemm")
    op(g, 40000, 40600, "gemm", "KernelExecution")
    db.commit()
    db.close()


def case_callstack_v2():
    path = os.path.join(WORK, "v2.rpd")
    make_v2(path)
    run("callstack", path)
    check_callstack_numbers(path, thread_b=False)
    assert q(path, "SELECT count(*) FROM ext_callstack") == [(16,)]
    run("autograd", path)
    assert q(path, "SELECT autogradName, kernelName, sizes, calls, total_gpu FROM autogradKernel") \
        == [("aten::mm", "gemm", "[[3, 3]]", 1, 600)]
    # A schema-2 file merges into a schema-3 one: markers get domain UserMarker.
    out = os.path.join(WORK, "v2merged.rpd")
    for sfx in ("", "-wal", "-shm"):
        if os.path.exists(out + sfx):
            os.unlink(out + sfx)
    run("merge", out, path)
    assert q(out, "SELECT domain, count(*) FROM api GROUP BY domain ORDER BY domain") == \
        [("", 4), ("UserMarker", 4)]
    assert q(out, "SELECT args FROM api WHERE apiName = 'hipMemcpy'") == [("dst = 0x1 | src = 0x2",)]


def case_callstack_order():
    """The walk's order (threads by pid then tid, calls by start, longer
    first, then id) on calls stored in no order: many threads, 64-bit and
    negative pids and tids, negative times, calls that share their start,
    identical intervals. Every row equals the O(n^2) reference."""
    path = os.path.join(WORK, "order.rpd")
    if os.path.exists(path):
        os.unlink(path)
    rnd = random.Random(7)
    calls = []
    threads = [(1, 1), (1, 2), (2, 1), (-5, 3), (9, 2**40 + 7), (2**62, -4), (7, 123456789)]
    for pid, tid in threads:
        first = len(calls)

        def tree(start, end, depth):
            """Nested calls inside [start, end]: siblings in sequence."""
            t = start
            while t < end and len(calls) - first < 500:
                length = rnd.randint(0, max(0, (end - t) // 2))
                calls.append((pid, tid, t, t + length))
                if rnd.random() < 0.2:  # one sharing its start, shorter, or the same interval
                    calls.append((pid, tid, t, t + rnd.choice([length, length // 2])))
                if depth < 6 and length > 4:
                    tree(t, t + length, depth + 1)
                t += length + rnd.randint(0, 3)
        tree(rnd.randint(-5000, 5000) - 10**9, 10**9, 0)  # the threads overlap in time
    rnd.shuffle(calls)
    db = sqlite3.connect(path)
    db.executescript(V2_SCHEMA)
    db.execute("INSERT INTO rocpd_string(string) VALUES ('')")
    db.executemany("INSERT INTO rocpd_api(pid, tid, start, end, apiName_id, args_id) "
                   "VALUES (?, ?, ?, ?, 1, 1)", calls)
    db.commit()
    db.close()
    run("callstack", path)
    got = set(q(path, "SELECT parent_id, child_id, depth, cpu_time, gpu_time FROM ext_callstack"))
    want = reference_callstack(path)
    assert len(want) > len(calls) and got == want, (len(got), len(want), sorted(got ^ want)[:5])


def case_graph():
    path = make("graph", "graph.rpd")
    out, _ = run("graph", path)
    assert "1 graphs" in out and "3 graph launches" in out, out
    assert q(path, "SELECT graph, graphExec, stream, start, end FROM ext_graph") == \
        [("0xaaa", "0xbbb", "0x10", 1000, 10000)]
    assert q(path, "SELECT sequence, kernelName, gridX, gridY, gridZ, workgroupX FROM graphKernel "
             "ORDER BY sequence") == [(1, "g0", 256, 1, 1, 64), (2, "g1", 512, 1, 1, 64),
                                      (3, "g2", 768, 1, 1, 64)]
    # Each launch: API 20 us; ops span 25/26/27 us; GPU time 3 x 5/6/7 us.
    rows = q(path, "SELECT apiName, graphExec, stream, gpuId, apiDuration_usec, opDuration_usec, "
             "gpuTime_usec FROM graphLaunch ORDER BY id")
    assert rows == [("hipGraphLaunch", "0xbbb", "0x10", 0, 20, 25, 15),
                    ("hipGraphLaunch", "0xbbb", "0x10", 0, 20, 26, 18),
                    ("hipGraphLaunch", "0xbbb", "0x10", 0, 20, 27, 21)], rows
    assert q(path, "SELECT count(*) FROM rocpd_graphapi") == [(3,)]
    assert q(path, "SELECT count(*) FROM graphLaunchapi") == [(3,)]
    cols = [r[1] for r in q(path, "PRAGMA table_info(rocpd_graphapi)")]
    assert cols[:4] == ["api_ptr_id", "stream", "graph", "graphExec"] and "mode" in cols, cols
    # a trace trimmed mid-capture: the stream's first graph call already carries
    # the graph (its begin-capture is not in the trace); the capture then starts
    # at its end-capture call (rocpd's fill failed: NOT NULL constraint)
    cut = make("graph", "graph-cut.rpd")
    db = sqlite3.connect(cut)
    db.execute("DELETE FROM rocpd_api WHERE apiName_id IN (SELECT id FROM rocpd_string WHERE "
               "string LIKE '%BeginCapture')")
    db.commit()
    db.close()
    out, _ = run("graph", cut)
    assert "1 graphs" in out, out
    assert q(cut, "SELECT graph, graphExec, stream, start, end FROM ext_graph") == \
        [("0xaaa", "0xbbb", "0x10", 9000, 10000)]


def case_autograd():
    path = make("autograd", "ag.rpd")
    out, err = run("autograd", path)
    assert "7 autograd operator calls, 2 malformed" in out, out
    assert "broken, seq = x" in err and "aten::foo, sizes = [[1]]" in err, err
    rows = q(path, "SELECT autogradName, kernelName, sizes, calls, avg_gpu, total_gpu FROM "
             "autogradKernel ORDER BY autogradName, sizes")
    assert rows == [
        ("aten::add", "add_kernel", "[[4], [4]]", 1, 70.0, 70),
        ("aten::mm", "Cijk_gemm", "[[16, 16]]", 1, 400.0, 400),
        ("aten::mm", "Cijk_gemm", "[[2688, 768], [768, 768]]", 3, 200.0, 600),
        ("aten::relu", "relu_kernel", "", 1, 50.0, 50),
    ], rows
    rows = q(path, "SELECT autogradName, seq, op_id, sizes, input_op_ids FROM autograd ORDER BY "
             "op_id")
    assert rows[0] == ("aten::mm", 0, 40, "[[2688, 768], [768, 768]]", "[(38, 0), (39, 0)]"), rows
    assert ("aten::add", "", 51, "[[4], [4]]", "[(50, 0)]") in rows
    assert ("aten::relu", 7, 50, "", "") in rows
    tags = dict(q(path, "SELECT tag, value FROM rocpd_metadata"))
    assert tags["Callstack::Generated"] == "True" and tags["Autograd::Generated"] == "True"
    # The state rocmProfileData's `rocpd.autograd --skip_callstacks` leaves (its
    # table filled and tagged, no views; what it needs after `rpd callstack`):
    # `rpd autograd` adds the views and gives the same answer (issue 18.2).
    before = rows
    db = sqlite3.connect(path)
    db.executescript("DROP VIEW autogradKernel; DROP VIEW _autogradKernel; "
                     "DROP VIEW _callstack_autograd_kernel_exclusive; "
                     "DROP VIEW _callstack_autograd_kernel;")
    db.close()
    out, _ = run("autograd", path)
    assert "now has its views" in out, out
    assert q(path, "SELECT autogradName, seq, op_id, sizes, input_op_ids FROM autograd ORDER BY "
             "op_id") == before
    assert len(q(path, "SELECT * FROM autogradKernel")) == 4
    out, _ = run("autograd", path)
    assert "nothing to do" in out, out


def chromium(*args):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "chromium is not installed (scripts/deps.sh installs it)"
    with tempfile.TemporaryDirectory() as prof:
        p = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                            "--no-first-run", "--disable-background-networking",
                            "--disable-component-update", "--disable-sync",
                            f"--user-data-dir={prof}", *args],
                           capture_output=True, text=True, timeout=90)
    assert p.returncode == 0, (args, p.stderr[-2000:])
    return p.stdout


def case_report():
    path = make("autograd", "report.rpd")
    run("autograd", path)
    before = digest(path)
    html = os.path.join(WORK, "report.html")
    run("report", path, "-o", html)
    assert digest(path) == before, "report changed the trace"
    page = open(html, encoding="utf-8").read()
    assert "<link" not in page and "src=" not in page and "https://" not in page
    # aten::mm: 4 ranges of 500 ns, 100 ns of kernel launch in each; 1000 ns of GPU.
    mm = [r for r in report_tables(page)["calls-incl"] if r["call or range"] == "aten::mm"]
    assert len(mm) == 1 and (mm[0]["kind"], mm[0]["calls"], mm[0]["inclusive CPU"],
                             mm[0]["exclusive CPU"], mm[0]["inclusive GPU"]) == \
        ("range", 4, 2000, 1600, 1000), mm
    dom = chromium("--dump-dom", "file://" + html)
    body = re.search(r"<body[^>]*>", dom).group(0)
    assert 'data-ok="1"' in body and "data-error" not in body, body
    canvas = re.search(r"<canvas[^>]*>", dom).group(0)  # the zoomable timeline drew every slice
    slices = re.search(r'data-slices="(\d+)"', canvas)
    assert slices and int(slices.group(1)) > 0 and 'data-drawn="%s"' % slices.group(1) in canvas, canvas
    for text in ("aten::mm", "Cijk_gemm", "[[2688, 768], [768, 768]]", "epoch-mark",
                 "<svg", 'class="mark"', "Top GPU kernels", "exclusive CPU", "GPU busy", "Call tree",
                 'class="fl"'):
        assert text in dom, text
    png = os.path.join(WORK, "report.png")
    if os.path.exists(png):
        os.unlink(png)
    chromium(f"--screenshot={png}", "--window-size=1300,1600", "file://" + html)
    with open(png, "rb") as f:
        head = f.read(8)
    assert head == b"\x89PNG\r\n\x1a\n" and os.path.getsize(png) > 20000


def case_report_recursion():
    """A recursive call's time is counted once, in its outermost call, and a
    mark is no call (issue 18.5: fib showed 752.8 ms inclusive in a 169.5 ms
    trace; marks showed as 0 ns ranges)."""
    path = os.path.join(WORK, "recursion.rpd")
    for sfx in ("", "-wal", "-shm"):
        if os.path.exists(path + sfx):
            os.unlink(path + sfx)
    run("create", path)
    db = sqlite3.connect(path)
    ids = {}
    for text in ("", "fib", "main", "UserMarker"):
        ids[text] = db.execute("INSERT INTO rocpd_string(string) VALUES (?)", (text,)).lastrowid
    uempty = db.execute("INSERT INTO rocpd_ustring(string) VALUES ('')").lastrowid
    umark = db.execute("INSERT INTO rocpd_ustring(string) VALUES ('checkpoint')").lastrowid
    uhostile = db.execute("INSERT INTO rocpd_ustring(string) VALUES ('</script><b>x')").lastrowid
    rows = [("main", 0, 10000, uempty),                         # 10 us
            ("fib", 1000, 9000, uempty), ("fib", 2000, 8000, uempty),
            ("fib", 3000, 4000, uempty), ("fib", 5000, 7000, uempty),
            ("UserMarker", 6000, 6000, umark),                  # a mark inside fib
            ("UserMarker", 9500, 9600, uhostile)]               # a range named like markup
    for name, start, end, args in rows:
        db.execute("INSERT INTO rocpd_api(pid, tid, start, end, apiName_id, category_id, domain_id, "
                   "args_id) VALUES (1, 1, ?, ?, ?, ?, ?, ?)",
                   (start, end, ids[name], ids[""], ids[""], args))
    db.commit()
    db.close()
    html = os.path.join(WORK, "recursion.html")
    run("report", path, "-o", html)
    page = open(html, encoding="utf-8").read()
    table = {r["call or range"]: (r["calls"], r["inclusive CPU"])
             for r in report_tables(page)["calls-incl"]}
    # fib: 4 calls, inclusive 8000 ns (the outermost), not 8000+6000+1000+2000
    assert table.get("fib") == (4, 8000), table
    assert table.get("main") == (1, 10000), table
    # the zoomable timeline: its document, nesting by depth, the mark left out
    doc = json.loads(re.search(r'<script type="application/json" id=tl-data>(.*?)</script>',
                               page, re.S).group(1))
    assert doc["lanes"] == [{"name": "pid 1 tid 1", "rows": 4}] and doc["total"] == 6, doc
    named = sorted((doc["names"][x[4]], x[1], x[2], x[3]) for x in doc["s"])
    assert named == [("</script><b>x", 1, 9500, 100), ("fib", 1, 1000, 8000), ("fib", 2, 2000, 6000),
                     ("fib", 3, 3000, 1000), ("fib", 3, 5000, 2000), ("main", 0, 0, 10000)], named
    dom = chromium("--dump-dom", "file://" + html)
    canvas = re.search(r"<canvas[^>]*>", dom).group(0)
    assert 'data-slices="6"' in canvas and 'data-drawn="6"' in canvas, canvas
    body = re.search(r"<body[^>]*>", dom).group(0)
    assert 'data-ok="1"' in body and "data-error" not in body, body
    assert "checkpoint" not in table, table
    assert "checkpoint" in page[page.index("id=marks"):], "the mark is in the marks section"
    # the call tree: a box per call path with its inclusive time; the two
    # innermost fib calls share one path (3000 ns together)
    tree = re.findall(r'data-label="([^"]*)" data-depth=(\d+) data-incl=(\d+)', page)
    assert tree == [("main", "0", "10000"), ("&lt;/script&gt;&lt;b&gt;x", "1", "100"),
                    ("fib", "1", "8000"), ("fib", "2", "6000"), ("fib", "3", "3000")], tree
    widths = re.findall(r'class=fn style="width:([\d.]+)%"', page)
    assert widths == ["100.000", "1.000", "80.000", "75.000", "50.000"], widths


def case_merge():
    r0, r1 = make("rank", "rank0.rpd"), make("rank", "rank1.rpd")
    pids = [q(p, "SELECT DISTINCT pid FROM rocpd_api")[0][0] for p in (r0, r1)]
    assert pids[0] != pids[1]
    out = os.path.join(WORK, "all.rpd")
    for sfx in ("", "-wal", "-shm"):
        if os.path.exists(out + sfx):
            os.unlink(out + sfx)
    run("merge", out, r0, r1)
    assert q(out, "SELECT node, pid, count(*) FROM napi GROUP BY node, pid ORDER BY node") == \
        [(0, pids[0], 3), (1, pids[1], 3)]
    assert q(out, "SELECT node, gpuId, count(*) FROM nop GROUP BY node, gpuId ORDER BY node, gpuId") \
        == [(0, 0, 1), (0, 1, 1), (1, 0, 1), (1, 1, 1)]
    # Links and strings survive: each kernel op belongs to its node's launch.
    assert q(out, "SELECT N.node, O.node, O.description FROM rocpd_api_ops L JOIN napi N ON "
             "N.id = L.api_id JOIN nop O ON O.id = L.op_id ORDER BY 1, 3") == \
        [(0, 0, ""), (0, 0, "rank_kernel"), (1, 1, ""), (1, 1, "rank_kernel")]
    assert q(out, "SELECT count(*), count(DISTINCT string) FROM rocpd_string")[0][0] == \
        q(out, "SELECT count(DISTINCT string) FROM rocpd_string")[0][0]
    # The OS names the tracer stored come along, pids encoded like the calls';
    # rpd info names node 1's process through the row (pid, pid mod pid_stride).
    stride = int(q(out, "SELECT value FROM rocpd_metadata WHERE tag='pid_stride'")[0][0])
    names = [q(p, "SELECT pid, tid, name FROM nano_thread") for p in (r0, r1)]
    assert len(names[0]) == 1 and names[0][0][:2] == (pids[0], pids[0]), names
    assert sorted(q(out, "SELECT pid, tid, name FROM nano_thread")) == \
        sorted(names[0] + [(pid + stride, tid, name) for pid, tid, name in names[1]])
    # Each rank's recording window comes along, its pid encoded, its session
    # past the other's (ids never collide).
    wins = [q(p, "SELECT session, pid, start, \"end\" FROM nano_window") for p in (r0, r1)]
    assert [len(w) for w in wins] == [1, 1], wins
    merged = q(out, "SELECT id >> 32, session, pid, start, \"end\" FROM nano_window ORDER BY pid")
    assert [m[2:] for m in merged] == [wins[0][0][1:], (wins[1][0][1] + stride,) + wins[1][0][2:]] \
        and merged[0][0] == merged[0][1] < merged[1][0] == merged[1][1], (wins, merged)
    info, _ = run("info", out)
    procs = info.split("processes: 2, threads: 2\n")[1].split("\n\n")[0].splitlines()[2:]
    assert [p.split()[:2] for p in procs] == \
        [[str(pids[0]), names[0][0][2]], [str(pids[1] + stride), names[1][0][2]]], info
    again, _ = run("merge", out, r0, r1)
    assert "nothing to do" in again
    _, err = run("merge", out, r1, r0, code=1)
    assert "refusing to overwrite" in err
    # Ranks of one node: --nodes.
    same = os.path.join(WORK, "same.rpd")
    for sfx in ("", "-wal", "-shm"):
        if os.path.exists(same + sfx):
            os.unlink(same + sfx)
    run("merge", same, r0, r1, "--nodes", "3,3")
    assert q(same, "SELECT DISTINCT node FROM napi UNION SELECT DISTINCT node FROM nop") == [(3,)]
    # A merged file is refused as the input of a node > 0.
    bad = os.path.join(WORK, "bad.rpd")
    if os.path.exists(bad):
        os.unlink(bad)
    _, err = run("merge", bad, r0, out, code=1)
    assert "already holds several nodes" in err and not os.path.exists(bad), err


def case_trim():
    path = make("graph", "trimsrc.rpd")
    before = digest(path)
    out = os.path.join(WORK, "window.rpd")
    for sfx in ("", "-wal", "-shm"):
        if os.path.exists(out + sfx):
            os.unlink(out + sfx)
    run("trim", path, "--start", "3000", "--end", "13000", "-o", out)
    assert digest(path) == before
    got = q(out, "SELECT id, start, apiName FROM api ORDER BY start")
    want = q(path, "SELECT id, start, apiName FROM api WHERE start BETWEEN 3000 AND 13000 ORDER BY "
             "start")
    assert got == want and len(got) == 6, got
    strings = {r[0] for r in q(out, "SELECT string FROM rocpd_string")}
    assert strings == {"", "hip", "hipLaunchKernel", "hipStreamEndCapture", "hipGraphInstantiate",
                       "g0", "g1", "g2", "after"}, strings
    assert q(out, "SELECT count(*) FROM rocpd_ustring") == [(6,)]
    assert q(out, "SELECT count(*) FROM rocpd_op") == [(0,)]
    names = q(path, "SELECT pid, tid, name FROM nano_thread")
    assert names and q(out, "SELECT pid, tid, name FROM nano_thread") == names, names
    # Percentages of the calls' span [1000, 320000]: 50% = 160500.
    out2 = os.path.join(WORK, "window2.rpd")
    for sfx in ("", "-wal", "-shm"):
        if os.path.exists(out2 + sfx):
            os.unlink(out2 + sfx)
    run("trim", path, "--start", "50%", "--end", "100%", "-o", out2)
    assert q(out2, "SELECT start FROM rocpd_api ORDER BY start") == [(200000,), (300000,)]
    assert q(out2, "SELECT count(*) FROM rocpd_op") == [(6,)]
    assert q(out2, "SELECT count(*) FROM rocpd_api_ops A JOIN rocpd_op O ON O.id = A.op_id JOIN "
             "rocpd_api C ON C.id = A.api_id") == [(6,)]
    again, _ = run("trim", path, "--start", "50%", "--end", "100%", "-o", out2)
    assert "nothing to do" in again
    # The recording window (real CLOCK_MONOTONIC times, the calls' are made
    # up): a time window inside it keeps the part inside; one before it, none.
    (w0, w1), = q(path, "SELECT start, \"end\" FROM nano_window")
    lo, hi = w0 + (w1 - w0) // 4, w1 - (w1 - w0) // 4
    out3 = os.path.join(WORK, "window3.rpd")
    for sfx in ("", "-wal", "-shm"):
        if os.path.exists(out3 + sfx):
            os.unlink(out3 + sfx)
    run("trim", path, "--start", str(lo), "--end", str(hi), "-o", out3)
    assert q(out3, "SELECT start, \"end\" FROM nano_window") == [(lo, hi)]
    assert q(out, "SELECT count(*) FROM nano_window") == [(0,)]


def case_idempotent():
    path = make("autograd", "idem.rpd")
    run("autograd", path)
    run("graph", path)
    counts = q(path, "SELECT (SELECT count(*) FROM ext_callstack), (SELECT count(*) FROM "
               "ext_autogradapi), (SELECT count(*) FROM ext_graph), (SELECT count(*) FROM "
               "rocpd_metadata)")
    before = digest(path)
    for cmd in ("callstack", "autograd", "graph"):
        out, _ = run(cmd, path)
        assert "nothing to do" in out, out
    assert digest(path) == before
    assert q(path, "SELECT (SELECT count(*) FROM ext_callstack), (SELECT count(*) FROM "
             "ext_autogradapi), (SELECT count(*) FROM ext_graph), (SELECT count(*) FROM "
             "rocpd_metadata)") == counts


def case_errors():
    text = os.path.join(WORK, "notes.txt")
    with open(text, "w") as f:
        f.write("not a trace\n" * 100)
    for cmd in ("callstack", "graph", "autograd"):
        _, err = run(cmd, text, code=2)
        assert "not an SQLite database" in err, err
    _, err = run("report", text, "-o", os.path.join(WORK, "x.html"), code=2)
    assert "not an SQLite database" in err
    other = os.path.join(WORK, "other.db")
    if os.path.exists(other):
        os.unlink(other)
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE t(x)")
    db.commit()
    db.close()
    before = digest(other)
    _, err = run("callstack", other, code=2)
    assert "not an RPD" in err and digest(other) == before, err
    _, err = run("callstack", os.path.join(WORK, "missing.rpd"), code=2)
    assert "no such file" in err.lower() or "does not exist" in err.lower(), err
    run("callstack", code=2)
    run("trim", other, code=2)
    path = make("rank", "err.rpd")
    _, err = run("trim", path, "--start", "later", "-o", os.path.join(WORK, "e.rpd"), code=2)
    assert "--start: 'later' is not a time" in err, err
    run("report", path, code=2)


def case_locked():
    path = make("callstack", "locked.rpd")
    before = digest(path)
    holder = sqlite3.connect(path, isolation_level=None, timeout=0)
    holder.execute("BEGIN IMMEDIATE")
    try:
        _, err = run("callstack", path, code=1)
        assert "locked by another writer" in err, err
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert digest(path) == before
    assert q(path, "SELECT count(*) FROM sqlite_master WHERE name = 'ext_callstack'") == [(0,)]
    run("callstack", path)
    check_callstack_numbers(path)


def case_readonly():
    d = tempfile.mkdtemp(dir=WORK)
    os.chmod(d, 0o755)
    path = os.path.join(d, "ro.rpd")
    shutil.copy(make("callstack", "ro-src.rpd"), path)
    os.chmod(path, 0o444)
    before = digest(path)
    cmd = [RPD, "callstack", path]
    if os.geteuid() == 0:  # root writes anywhere: run as nobody
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert p.returncode != 0, (p.stdout, p.stderr)
    assert "read-only" in p.stderr or "cannot write" in p.stderr, p.stderr
    assert digest(path) == before
    assert q(path, "SELECT count(*) FROM sqlite_master WHERE name = 'ext_callstack'") == [(0,)]


def case_interrupted():
    """A step that fails half-way leaves the file as it was: a trigger makes
    the 10th insert into a leftover ext_callstack fail."""
    path = make("callstack", "intr.rpd")
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE ext_callstack (id integer NOT NULL PRIMARY KEY AUTOINCREMENT, parent_id integer
          NOT NULL, child_id integer NOT NULL, depth integer NOT NULL, cpu_time integer NOT NULL
          DEFAULT 0, gpu_time integer NOT NULL DEFAULT 0);
        INSERT INTO ext_callstack(parent_id, child_id, depth) VALUES (-1, -1, -1);
        CREATE TRIGGER boom AFTER INSERT ON ext_callstack WHEN
          (SELECT count(*) FROM ext_callstack) > 10 BEGIN SELECT RAISE(ABORT, 'boom'); END;
    """)
    db.commit()
    db.close()
    before = q(path, "SELECT * FROM ext_callstack")
    _, err = run("callstack", path, code=1)
    assert "boom" in err, err
    assert q(path, "SELECT * FROM ext_callstack") == before
    assert q(path, "SELECT count(*) FROM rocpd_metadata WHERE tag LIKE 'Callstack::%'") == [(0,)]
    assert q(path, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'callStack_%'") == [(0,)]
    db = sqlite3.connect(path)
    db.execute("DROP TRIGGER boom")
    db.commit()
    db.close()
    run("callstack", path)  # the leftover partial table is started over
    check_callstack_numbers(path)
    assert q(path, "SELECT count(*) FROM ext_callstack WHERE parent_id = -1") == [(0,)]


def case_progress():
    path = make("flat", "flat.rpd", "20000")
    copy = os.path.join(WORK, "flat-tty.rpd")
    shutil.copy(path, copy)
    out, err = run("callstack", path)
    assert err == "" and "20000 calls" in out, (out, err)
    # On a terminal: a progress line on stderr.
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(RPD, [RPD, "callstack", copy])
    data = b""
    while True:
        r, _, _ = select.select([fd], [], [], 60)
        if not r:
            break
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, data
    assert b"callstack" in data and b"%" in data and b"\r" in data, data


def case_killed():
    """rpd callstack killed (SIGKILL) while it works leaves the trace as it was;
    the progress line on a terminal tells when it is working."""
    path = make("flat", "killed.rpd", "200000")
    state = q(path, "SELECT name FROM sqlite_master ORDER BY name") + \
        q(path, "SELECT tag, value FROM rocpd_metadata ORDER BY id")
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(RPD, [RPD, "callstack", path])
    data = b""
    while b"%" not in data:
        r, _, _ = select.select([fd], [], [], 60)
        assert r, data
        chunk = os.read(fd, 4096)
        assert chunk, data
        data += chunk
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status), (status, data)
    assert q(path, "SELECT name FROM sqlite_master ORDER BY name") + \
        q(path, "SELECT tag, value FROM rocpd_metadata ORDER BY id") == state
    out, _ = run("callstack", path)
    assert "200000 calls" in out and "200000 ext_callstack rows" in out, out


def case_killed_output():
    """rpd merge and trim killed (SIGKILL) while they write leave no output:
    they build it in a temporary beside it, so the rerun makes it instead of
    refusing a half-written file (issue 37.4)."""
    big = make("flat", "bigflat.rpd", "200000")
    other = make("rank", "rank9.rpd")
    for cmd in (["merge", "{out}", big, other], ["trim", big, "--start", "0%", "--end", "100%",
                                                  "-o", "{out}"]):
        out = os.path.join(WORK, "killed-%s.rpd" % cmd[0])
        for f in os.listdir(WORK):
            if f.startswith(os.path.basename(out)):
                os.unlink(os.path.join(WORK, f))
        args = [a.format(out=out) for a in cmd]
        proc = subprocess.Popen([RPD] + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not [f for f in os.listdir(WORK) if f.startswith(os.path.basename(out) + ".tmp.")]:
            assert proc.poll() is None and time.monotonic() < deadline, "%s: no temporary" % cmd[0]
            time.sleep(0.001)
        proc.kill()
        proc.wait()
        assert not os.path.exists(out), "%s: a killed run left %s" % (cmd[0], out)
        done, _ = run(*args)
        assert os.path.exists(out) and q(out, "SELECT count(*) FROM rocpd_api")[0][0] > 0, done


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}

if __name__ == "__main__":
    os.makedirs(WORK, exist_ok=True)
    if CASE not in CASES:
        sys.exit(f"unknown case {CASE}")
    CASES[CASE]()
    print(f"analysis_{CASE}: ok")
