#!/usr/bin/env python3
"""Tests of the RPD tracer (libnano_rpd.so) and nano_rpdfile, one case per run.

    test_rpd.py CASE --lib libnano_rpd.so --bin BUILD/tests/rpd --nvtx-app PATH --work DIR

Every case runs programs built next to this file (rpd_workload, roctx_app,
nvtx_app, atomics_app, rpdfile_probe) in a fresh directory and checks the
resulting RPD file with Python's sqlite3. Exit status 0 means the case passed.
"""
import argparse
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import check, fail  # noqa: E402 (tests/testlib.py)

ARGS = None


def run(cmd, env=None, expect_rc=0, timeout=60):
    e = dict(os.environ)
    e.pop("LD_PRELOAD", None)
    e.pop("RPDT_AUTOSTART", None)
    e.pop("RPDT_FILENAME", None)
    e.pop("RPDT_STACKFRAMES", None)
    e.pop("RPDT_AUTOFLUSH", None)
    # the tracer's exit line ("... rows written by pid N") is checked in
    # tests/frontdoor (settings_bool); these cases read stderr without it
    e["NANO_RPD_QUIET"] = "1"
    e.update(env or {})
    p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=timeout)
    if expect_rc is not None and p.returncode != expect_rc:
        fail("%s exited %d (expected %d)\nstdout: %s\nstderr: %s"
             % (" ".join(cmd), p.returncode, expect_rc, p.stdout, p.stderr))
    return p


def prog(name):
    return os.path.join(ARGS.bin, name)


def db(path):
    check(os.path.exists(path), "%s was not created" % path)
    return sqlite3.connect(path)


def alter(path, sql):
    """Runs one statement on the SQLite file at path and commits it."""
    con = sqlite3.connect(path)
    con.execute(sql)
    con.commit()
    con.close()


def q(con, sql, *params):
    return con.execute(sql, params).fetchall()


def integrity(con):
    check(q(con, "PRAGMA integrity_check") == [("ok",)], "integrity_check failed")


def api_rows(con, where="1", *params):
    return q(con, "SELECT id, pid, tid, start, end, domain, category, apiName, args FROM api WHERE "
             + where + " ORDER BY start, id", *params)


def views_complete(con):
    """Every rocpd_api row appears in the api view (no dangling string ids)."""
    n_raw = q(con, "SELECT count(*) FROM rocpd_api")[0][0]
    n_view = q(con, "SELECT count(*) FROM api")[0][0]
    check(n_raw == n_view, "rocpd_api has %d rows but the api view %d" % (n_raw, n_view))


# ---- schema ------------------------------------------------------------------

def affinity(decl):
    """SQLite's type affinity of a declared type (section 3.1 of datatype3)."""
    t = decl.upper()
    if "INT" in t:
        return "INTEGER"
    if "CHAR" in t or "CLOB" in t or "TEXT" in t:
        return "TEXT"
    if t == "" or "BLOB" in t:
        return "BLOB"
    if "REAL" in t or "FLOA" in t or "DOUB" in t:
        return "REAL"
    return "NUMERIC"


# The tables of rpd-schema.md, written from the format note, not from the SQL:
# column, affinity of the documented type (int, text, bool, real).
I, T, B, R = "INTEGER", "TEXT", "NUMERIC", "REAL"
EXPECTED_TABLES = {
    "rocpd_metadata": [("id", I), ("tag", T), ("value", T)],
    "rocpd_string": [("id", I), ("string", T)],
    "rocpd_ustring": [("id", I), ("string", T)],
    "rocpd_api": [("id", I), ("pid", I), ("tid", I), ("start", I), ("end", I),
                  ("apiName_id", I), ("category_id", I), ("domain_id", I), ("args_id", I)],
    "rocpd_kernelapi": [("api_ptr_id", I), ("stream", T), ("gridX", I), ("gridY", I),
                        ("gridZ", I), ("workgroupX", I), ("workgroupY", I), ("workgroupZ", I),
                        ("groupSegmentSize", I), ("privateSegmentSize", I),
                        ("kernelName_id", I)],
    "rocpd_copyapi": [("api_ptr_id", I), ("stream", T), ("size", I), ("width", I),
                      ("height", I), ("kind", I), ("dst", T), ("src", T), ("dstDevice", I),
                      ("srcDevice", I), ("sync", B), ("pinned", B)],
    "rocpd_op": [("id", I), ("gpuId", I), ("queueId", I), ("sequenceId", I), ("start", I),
                 ("end", I), ("description_id", I), ("opType_id", I)],
    "rocpd_api_ops": [("id", I), ("api_id", I), ("op_id", I)],
    "rocpd_monitor": [("id", I), ("deviceType", T), ("deviceId", I), ("monitorType", T),
                      ("start", I), ("end", I), ("value", T)],
    "rocpd_counter": [("id", I), ("value", R), ("op_id", I), ("name_id", I)],
    "rocpd_stackframe": [("id", I), ("api_ptr_id", I), ("depth", I), ("name_id", I)],
}
PRIMARY = {"rocpd_kernelapi": "api_ptr_id", "rocpd_copyapi": "api_ptr_id"}
API_COLS = ["id", "pid", "tid", "start", "end", "domain", "category", "apiName", "args"]
OP_COLS = ["id", "gpuId", "queueId", "sequenceId", "start", "end", "description", "opType"]
COPY_ARGS = ["size", "width", "height", "kind", "dst", "src", "dstDevice", "srcDevice", "sync",
             "pinned"]
EXPECTED_VIEWS = {
    "api": API_COLS,
    "op": OP_COLS,
    "busy": ["gpuId", "GpuTime", "WallTime", "Busy"],
    "top": ["Name", "TotalCalls", "TotalDuration_us", "Ave_us", "Percentage"],
    "kernel": ["id", "gpuId", "queueId", "sequenceId", "start", "end", "duration", "stream",
               "gridX", "gridY", "gridZ", "workgroupX", "workgroupY", "workgroupZ",
               "groupSegmentSize", "privateSegmentSize", "kernelName"],
    "copy": ["id", "pid", "tid", "start", "end", "apiName", "stream"] + COPY_ARGS,
    "copyop": ["id", "gpuId", "queueId", "sequenceId", "start", "end", "duration", "stream"]
              + COPY_ARGS + ["apiName"],
    # rocmProfileData's columns as SQLite names them, then readable names
    "stackframe": ["id", "string", "depth", "string:1", "apiName", "name"],
}


def check_schema(con, what):
    tables = {r[0] for r in q(con, "SELECT name FROM sqlite_master WHERE type='table'")}
    own = {t for t in tables if t.startswith("nano_") or t == "sqlite_sequence"}
    check(tables - own == set(EXPECTED_TABLES),
          "%s: tables %s, expected %s" % (what, sorted(tables - own), sorted(EXPECTED_TABLES)))
    for t, cols in EXPECTED_TABLES.items():
        info = q(con, "PRAGMA table_info(%s)" % t)
        got = [(r[1], affinity(r[2])) for r in info]
        check(got == cols, "%s: %s columns %s, expected %s" % (what, t, got, cols))
        pk = [r[1] for r in info if r[5]]
        check(pk == [PRIMARY.get(t, "id")], "%s: %s primary key %s" % (what, t, pk))
    views = {r[0] for r in q(con, "SELECT name FROM sqlite_master WHERE type='view'")}
    views -= {v for v in views if v.startswith("nano_")}
    check(views == set(EXPECTED_VIEWS) | {"napi", "nop"},
          "%s: views %s" % (what, sorted(views)))
    for v, cols in EXPECTED_VIEWS.items():
        got = [r[1] for r in q(con, "PRAGMA table_info(%s)" % v)]
        check(got == cols, "%s: view %s columns %s, expected %s" % (what, v, got, cols))
    for v, base in (("napi", API_COLS), ("nop", OP_COLS)):
        got = [r[1] for r in q(con, "PRAGMA table_info(%s)" % v)]
        check(sorted(got) == sorted(base + ["node"]), "%s: view %s columns %s" % (what, v, got))
    for t in ("rocpd_string", "rocpd_ustring"):
        cols = [[c[2] for c in q(con, "PRAGMA index_info(%s)" % i[1])]
                for i in q(con, "PRAGMA index_list(%s)" % t)]
        check(["string"] in cols, "%s: no index on %s(string): %s" % (what, t, cols))
    meta = dict(q(con, "SELECT tag, value FROM rocpd_metadata WHERE tag IN "
                       "('schema_version', 'gpu_stride', 'pid_stride')"))
    check(meta == {"schema_version": "3", "gpu_stride": "1000", "pid_stride": "10000000"},
          "%s: metadata %s" % (what, meta))
    # rocmProfileData's string clean-up keeps the strings these columns use
    refs = {r[0] for r in q(con, "SELECT value FROM rocpd_metadata "
                                 "WHERE tag = 'references::rocpd_string.id'")}
    check({'("rocpd_stackframe", "name_id")', '("rocpd_counter", "name_id")'} <= refs,
          "%s: string references %s" % (what, refs))


def case_views():
    """The multi-node views apply the strides to tid and queueId as upstream's
    do, and `top` adds up ops of one name that start and end together (on two
    GPUs): upstream's UNION would count them once (issue 18.2)."""
    run([prog("rpdfile_probe"), "write", "views.rpd"])
    con = sqlite3.connect("views.rpd")
    sid = {}
    for text in ("", "k", "KernelExecution"):
        sid[text] = con.execute("INSERT INTO rocpd_string(string) VALUES (?)", (text,)).lastrowid
    uid = con.execute("INSERT INTO rocpd_ustring(string) VALUES ('')").lastrowid
    node = 2
    con.execute("INSERT INTO rocpd_api(pid, tid, start, end, apiName_id, category_id, domain_id, args_id) "
                "VALUES (?, ?, 10, 20, ?, ?, ?, ?)",
                (node * 10000000 + 42, node * 10000000 + 43, sid["k"], sid[""], sid[""], uid))
    for gpu in (0, 1):
        con.execute("INSERT INTO rocpd_op(gpuId, queueId, sequenceId, start, end, "
                    "description_id, opType_id) VALUES (?, ?, 0, 100, 200, ?, ?)",
                    (node * 1000 + gpu, node * 1000 + 7, sid["k"], sid["KernelExecution"]))
    con.commit()
    check(q(con, "SELECT node, pid, tid FROM napi") == [(node, 42, 43)], str(q(con, "SELECT * FROM napi")))
    check(sorted(q(con, "SELECT node, gpuId, queueId FROM nop")) == [(node, 0, 7), (node, 1, 7)],
          str(q(con, "SELECT * FROM nop")))
    check(q(con, "SELECT Name, TotalCalls, TotalDuration_us FROM top") == [("k", 2, 0)],
          str(q(con, "SELECT * FROM top")))
    con.close()


def case_schema():
    # a file made by the tracer, and one made by nano_rpdfile alone
    run([prog("rpd_workload"), "api"], {"RPDT_FILENAME": "traced.rpd"})
    con = db("traced.rpd")
    check_schema(con, "traced.rpd")
    check(q(con, "SELECT string FROM rocpd_string WHERE id = 1") == [("",)], "string 1 is not ''")
    check(q(con, "SELECT string FROM rocpd_ustring WHERE id = 1") == [("",)], "ustring 1 is not ''")
    integrity(con)
    run([prog("rpdfile_probe"), "write", "made.rpd"])
    check_schema(db("made.rpd"), "made.rpd")
    # an existing empty file and a table-less SQLite file get the schema too
    open("empty.rpd", "w").close()
    run([prog("rpd_workload"), "marks", "3"], {"RPDT_FILENAME": "empty.rpd"})
    check_schema(db("empty.rpd"), "empty.rpd")
    check(q(db("empty.rpd"), "SELECT count(*) FROM api")[0][0] == 3, "3 marks expected")
    alter("bare.rpd", "PRAGMA user_version = 1")
    run([prog("rpdfile_probe"), "write", "bare.rpd"])
    check_schema(db("bare.rpd"), "bare.rpd")


def case_errors():
    with open("text.rpd", "w") as f:
        f.write("this is not a database\n" * 10)
    p = run([prog("rpdfile_probe"), "read", "text.rpd"], expect_rc=3)
    check("text.rpd: not an SQLite database" in p.stdout, p.stdout)
    run([prog("rpdfile_probe"), "write", "text.rpd"], expect_rc=3)
    alter("other.db", "CREATE TABLE foo(x)")
    for mode in ("read", "write"):
        p = run([prog("rpdfile_probe"), mode, "other.db"], expect_rc=4)
        check("other.db: an SQLite database but not an RPD trace" in p.stdout, p.stdout)
    run([prog("rpdfile_probe"), "write", "new.rpd"])
    alter("new.rpd", "UPDATE rocpd_metadata SET value = '4' WHERE tag = 'schema_version'")
    for mode in ("read", "write"):
        p = run([prog("rpdfile_probe"), mode, "new.rpd"], expect_rc=5)
        check("new.rpd: RPD schema version 4 is newer" in p.stdout, p.stdout)
    # version 2 (no schema_version tag): readable, not appended to
    run([prog("rpdfile_probe"), "write", "v2.rpd"])
    alter("v2.rpd", "DELETE FROM rocpd_metadata WHERE tag = 'schema_version'")
    p = run([prog("rpdfile_probe"), "read", "v2.rpd"])
    check(p.stdout.strip() == "version 2", p.stdout)
    p = run([prog("rpdfile_probe"), "write", "v2.rpd"], expect_rc=6)
    check("v2.rpd: RPD schema version 2" in p.stdout, p.stdout)
    p = run([prog("rpdfile_probe"), "read", "missing.rpd"], expect_rc=2)
    check("missing.rpd: no such file" in p.stdout, p.stdout)
    # the tracer refuses a foreign file, names it, and leaves it alone
    p = run([prog("rpd_workload"), "marks", "3"], {"RPDT_FILENAME": "other.db"})
    check("other.db: an SQLite database but not an RPD trace" in p.stderr, p.stderr)
    # The writer opens the file on its own thread (the program never waits
    # for it) and turns recording off when it cannot: the marks made before
    # that are counted as not written, those after are not recorded at all.
    lost = re.search(r"other\.db: the trace could not be opened \(said above\); (\d+) records "
                     r"were not written", p.stderr)
    check(lost is None or 1 <= int(lost.group(1)) <= 3,
          "what the refusal cost, said as such: " + p.stderr)
    check(q(sqlite3.connect("other.db"), "SELECT name FROM sqlite_master") == [("foo",)],
          "other.db was changed")
    # NANO_RPD_SYNC: a bad value is named and recording goes on with the default
    for sync, warned in (("sometimes", True), ("full", False), ("normal", False), ("off", False)):
        path = "sync-%s.rpd" % sync
        p = run([prog("rpd_workload"), "marks", "3"], {"RPDT_FILENAME": path, "NANO_RPD_SYNC": sync})
        check(("NANO_RPD_SYNC=%s:" % sync in p.stderr) == warned, "%s: %s" % (sync, p.stderr))
        check(q(db(path), "SELECT count(*) FROM api") == [(3,)], "%s: 3 marks expected" % path)


def case_session():
    for n in range(3):
        p = run([prog("rpdfile_probe"), "session", "s.rpd"])
        check(p.stdout.strip() == "session %d" % n, p.stdout)
    con = db("s.rpd")
    check(q(con, "SELECT value FROM rocpd_metadata WHERE tag='session_count'") == [("3",)],
          "session_count is not 3")
    check(len(q(con, "SELECT 1 FROM rocpd_metadata WHERE tag='session'")) == 3, "3 session rows")


def case_threads(extra_env=None):
    T, N = 4, 2000
    env = {"RPDT_FILENAME": "t.rpd"}
    if os.path.exists("t.rpd"):
        os.unlink("t.rpd")
    env.update(extra_env or {})
    run([prog("rpd_workload"), "threads", str(T), str(N)], env)
    con = db("t.rpd")
    integrity(con)
    views_complete(con)
    rows = api_rows(con)
    check(len(rows) == 3 * T * N + T, "expected %d rows, got %d" % (3 * T * N + T, len(rows)))
    tids = sorted({r[2] for r in rows})
    check(len(tids) == T, "expected %d threads, got %s" % (T, tids))
    # the process's name and each thread's, taken at its exit
    pid = rows[0][1]
    names = q(con, "SELECT tid, name FROM nano_thread WHERE pid = ? ORDER BY tid", pid)
    check(sorted(names) == sorted([(pid, "rpd_workload")] + [(t, "rpd-worker") for t in tids]),
          "nano_thread: %s" % names)
    for tid in tids:
        mine = [r for r in rows if r[2] == tid]
        outer = [r for r in mine if r[7] == "UserMarker" and r[8] == "outer"]
        inner = [r for r in mine if r[7] == "inner"]
        ticks = [r for r in mine if r[7] == "UserMarker" and r[8] == "tick"]
        left = [r for r in mine if r[8] == "left-open"]
        check(len(left) == 1 and left[0][3] <= left[0][4], "tid %d: left-open %s" % (tid, left))
        check(outer[-1][4] <= left[0][3], "left-open starts after the last outer range")
        check(len(outer) == N and len(inner) == N and len(ticks) == N,
              "tid %d: %d outer, %d inner, %d ticks" % (tid, len(outer), len(inner), len(ticks)))
        for r in mine:
            check(r[5] == "UserMarker" and r[6] == "", "domain/category of %s" % (r,))
        for k in range(N):
            o, i, t = outer[k], inner[k], ticks[k]
            check(i[8] == "i=%d" % k, "inner %d has args %r" % (k, i[8]))
            check(o[3] <= i[3] <= t[3] == t[4] <= i[4] <= o[4],
                  "nesting broken at %d: outer %s inner %s tick %s" % (k, o[3:5], i[3:5], t[3:5]))
            # ids in the order rows complete (a range's at its pop), as
            # rocmProfileData numbers roctx ranges
            check(t[0] < i[0] < o[0], "ids at %d: outer %d inner %d tick %d" % (k, o[0], i[0], t[0]))
            if k:
                check(outer[k - 1][4] <= o[3], "outer ranges overlap at %d" % k)


def case_roctx():
    p = run([prog("roctx_app")], {"LD_PRELOAD": ARGS.lib, "RPDT_FILENAME": "r.rpd"})
    check(p.stdout.strip() == "levels 0 1 1 0", p.stdout)
    con = db("r.rpd")
    views_complete(con)
    rows = {r[8]: r for r in api_rows(con)}
    for text in ("roctx-outer", "roctx-inner", "roctx-mark", "roctx-cross"):
        check(text in rows, "no row for %s: %s" % (text, list(rows)))
        check(rows[text][5:8] == ("UserMarker", "", "UserMarker"), "%s: %s" % (text, rows[text]))
    o, i, m = rows["roctx-outer"], rows["roctx-inner"], rows["roctx-mark"]
    check(o[3] <= i[3] <= m[3] == m[4] <= i[4] <= o[4], "roctx nesting: %s %s %s" % (o, i, m))
    check(rows["roctx-cross"][3] <= rows["roctx-cross"][4], "cross range times")


def case_nvtx():
    if not ARGS.nvtx_app:
        fail("nvtx_app was not built (no nvtx3 headers)")
    p = run([ARGS.nvtx_app], {"NVTX_INJECTION64_PATH": ARGS.lib, "RPDT_FILENAME": "n.rpd"})
    check(p.stdout.strip() == "levels 0 1", p.stdout)
    con = db("n.rpd")
    views_complete(con)
    rows = {r[8]: r for r in api_rows(con)}
    for text in ("nvtx-outer", "nvtx-mark", "nvtx-wide", "nvtx-startend"):
        check(text in rows and rows[text][5] == "UserMarker", "%s: %s" % (text, list(rows)))
    check(rows["nvtx-mark"][3] == rows["nvtx-mark"][4], "mark has a duration")
    o, w = rows["nvtx-outer"], rows["nvtx-wide"]
    check(o[3] <= w[3] <= w[4] <= o[4], "nvtx nesting")
    for text in ("nvtx-domain-range", "nvtx-registered"):
        check(text in rows and rows[text][5] == "mydomain", "%s: %s" % (text, rows.get(text)))
    aten = [t for t in rows if t.startswith("aten::add, seq = 7")]
    check(len(aten) == 1, "emit_nvtx style text missing")
    # nvtxNameOsThread names the (main) thread, over its OS name
    pid = rows["nvtx-outer"][1]
    check(q(con, "SELECT tid, name FROM nano_thread WHERE pid = ?", pid) == [(pid, "nvtx-main-thread")],
          "nano_thread: %s" % q(con, "SELECT * FROM nano_thread"))


def case_append():
    N, K = 20000, 5000
    env = {"RPDT_FILENAME": "a.rpd"}
    e = dict(os.environ, **env)
    procs = [subprocess.Popen([prog("rpd_workload"), "heavy", str(N), str(K)], env=e,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    pids = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        check(p.returncode == 0, "writer failed: %s" % err.decode())
        pids.append(p.pid)
    con = db("a.rpd")
    integrity(con)
    views_complete(con)
    for pid in pids:
        texts = {r[0] for r in q(con, "SELECT args FROM api WHERE pid = ?", pid)}
        check(texts == {"r%d" % i for i in range(N)},
              "pid %d: %d of %d ranges" % (pid, len(texts), N))
    check(q(con, "SELECT value FROM rocpd_metadata WHERE tag='session_count'") == [("2",)],
          "two sessions expected")
    # ids carry the session offset: each session's rows lie in its own 2^32 block
    blocks = q(con, "SELECT pid, count(DISTINCT id >> 32) FROM rocpd_api GROUP BY pid")
    check(all(b == 1 for _, b in blocks) and len({p for p, _ in blocks}) == 2, str(blocks))
    # and are the tracer's own, in push order: N consecutive ids a session
    spans = q(con, "SELECT pid, count(*), max(id) - min(id) + 1 FROM rocpd_api GROUP BY pid")
    check(all(c == N and s == N for _, c, s in spans), str(spans))


def case_sigkill():
    runs, hot = 50, 0
    rnd = random.Random(1234)
    for n in range(runs):
        e = dict(os.environ, RPDT_FILENAME="k.rpd")
        p = subprocess.Popen([prog("rpd_workload"), "heavy", "100000000", "997"], env=e,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        time.sleep(rnd.uniform(0.005, 0.15))
        p.kill()
        out, _ = p.communicate()
        committed = 0
        for line in out.decode().splitlines():
            if line.startswith("committed "):
                committed = int(line.split()[1])
        if not os.path.exists("k.rpd"):
            check(committed == 0, "run %d: no file after %d committed" % (n, committed))
            continue
        if os.path.exists("k.rpd-journal"):
            # killed inside a transaction: the rpd tools' reader (query_only)
            # rolls a hot journal back (one whose header was not written yet
            # is no hot journal: it is ignored) and reads the file, checked
            # below
            hot += 1
            r = run([prog("rpdfile_probe"), "read", "k.rpd"])
            check(r.stdout.strip() == "version 3", "run %d: read after the kill: %s" % (n, r.stdout))
        con = sqlite3.connect("k.rpd")
        integrity(con)
        if committed:
            got = q(con, "SELECT count(DISTINCT args) FROM api WHERE pid = ? AND "
                         "CAST(substr(args, 2) AS integer) < ?", p.pid, committed)[0][0]
            check(got == committed, "run %d: %d of %d committed ranges" % (n, got, committed))
        con.close()
    print("%d SIGKILL runs, file consistent after each; %d killed inside a transaction" % (runs, hot))


def case_create_whole():
    """A new trace appears whole: a kill while its schema is written (the
    shim kills the process at the link that puts the finished file in place)
    leaves no file at the path, never an empty one the tools would refuse;
    the next run makes the trace, and leaves no temporary beside it."""
    path = os.path.abspath("whole.rpd")
    for f in os.listdir("."):
        if f.startswith("whole.rpd"):
            os.unlink(f)
    p = run([prog("rpd_workload"), "marks", "10"],
            {"RPDT_FILENAME": path, "LD_PRELOAD": prog("kill_at_link.so")}, expect_rc=None)
    check(p.returncode == -signal.SIGKILL, "the shim did not kill at link(): rc %d" % p.returncode)
    check(not os.path.exists(path), "a killed creation left %s (%d bytes)"
          % (path, os.path.getsize(path) if os.path.exists(path) else -1))
    for f in os.listdir("."):
        if f.startswith("whole.rpd"):
            os.unlink(f)  # the killed run's temporary
    run([prog("rpd_workload"), "marks", "10"], {"RPDT_FILENAME": path})
    r = run([prog("rpdfile_probe"), "read", path])
    check(r.stdout.strip() == "version 3", "the new trace: %s" % r.stdout)
    left = sorted(f for f in os.listdir(".") if f.startswith("whole.rpd") and f != "whole.rpd")
    check(not left, "files left beside the trace: %s" % left)


def case_diskfull():
    """The file cannot grow (RLIMIT_FSIZE, SIGXFSZ ignored: writes fail with
    EFBIG as on a full disk). The first flush that cannot commit returns -1
    and every later one too, so is the final rpdstop(); every range of an
    acknowledged flush is in the file, which stays readable; the loss is
    reported on stderr with its size and recorded in the file when it can
    be."""
    limit_kib, n, k = 300, 100000, 1000
    for keepgoing in (False, True):
        for f in ("f.rpd", "f.rpd-journal"):
            if os.path.exists(f):
                os.remove(f)
        cmd = ["bash", "-c", "trap '' XFSZ; ulimit -f %d; exec \"$@\"" % limit_kib, "bash",
               prog("rpd_workload"), "heavy", str(n), str(k)] + (["keepgoing"] if keepgoing else [])
        p = run(cmd, {"RPDT_FILENAME": "f.rpd"}, expect_rc=0 if keepgoing else 1)
        acked = [int(l.split()[1]) for l in p.stdout.splitlines() if l.startswith("committed ")]
        committed = acked[-1] if acked else 0
        check(0 < committed < n, "the limit is hit after some flushes: %d acknowledged" % committed)
        if keepgoing:
            tail = [l for l in p.stdout.splitlines() if l.startswith("failed ")]
            check(tail == ["failed %d stop -1" % (n // k - committed // k)],
                  "every flush after the failure and the final stop fail: %s" % tail)
        check("recording into this file stops" in p.stderr, "the failure is reported: " + p.stderr)
        m = re.search(r"(\d+) rows were rolled back and (\d+) later records were not written "
                      r"\((recorded as nano_lost_records|the file could not)", p.stderr)
        check(m and int(m.group(1)) > 0, "the loss is reported with its size: " + p.stderr)
        if keepgoing and m:
            # one record per range pushed after the failed flush (a leaf
            # range's pop folds into its push's slot)
            later = n - committed - k
            check(int(m.group(2)) == later, "%s later records lost, %d ranges were pushed after "
                  "the failed flush" % (m.group(2), later))
        con = db("f.rpd")
        integrity(con)
        got = q(con, "SELECT count(DISTINCT args) FROM api WHERE CAST(substr(args, 2) AS integer) < ?",
                committed)[0][0]
        check(got == committed, "%d of %d acknowledged ranges in the file" % (got, committed))
        lost = q(con, "SELECT value FROM rocpd_metadata WHERE tag = 'nano_lost_records'")
        if m and m.group(3).startswith("recorded"):
            check(lost == [(str(int(m.group(1)) + int(m.group(2))),)], "recorded loss %s" % lost)
        con.close()
    print("disk full: flushes and the stop fail, acknowledged ranges kept, the loss reported")


def case_crash(kind, sig):
    N = 500
    p = run([prog("rpd_workload"), "crash", kind, str(N)], {"RPDT_FILENAME": "c.rpd"},
            expect_rc=-sig)
    con = db("c.rpd")
    integrity(con)
    texts = {r[0] for r in q(con, "SELECT args FROM api")}
    check({"r%d" % i for i in range(N)} <= texts, "%s: %d of %d ranges kept"
          % (kind, len(texts & {"r%d" % i for i in range(N)}), N))
    check("before-crash" in texts, "%s: the last mark before the crash is missing" % kind)


def case_crash_signals():
    """Every signal whose default action ends the process keeps what was
    recorded (SIGPIPE: `traced_app | head`), and so does a stack overflow on
    the main thread (the handler runs on an alternate stack)."""
    for kind, sig in (("overflow", signal.SIGSEGV), ("pipe", signal.SIGPIPE),
                      ("hup", signal.SIGHUP), ("quit", signal.SIGQUIT), ("alrm", signal.SIGALRM),
                      ("usr1", signal.SIGUSR1), ("xfsz", signal.SIGXFSZ), ("trap", signal.SIGTRAP),
                      ("sys", signal.SIGSYS)):
        for f in ("c.rpd", "c.rpd-wal", "c.rpd-shm"):
            if os.path.exists(f):
                os.unlink(f)
        case_crash(kind, sig)


def case_crash_lost():
    """A death whose wait for the writer runs out says how many records it
    leaves behind (NANO_RPD_CRASH_WAIT_MS=0: no wait): 100,000 ranges fill
    many overflow rings, in memory or (NANO_RPD_OVERFLOW_MEMORY=1M) most of
    them in the spill file, and every record not in the trace is counted,
    none twice (the writer moves batches while it is counted); also the start
    of a range the writer took before its last commit and holds open
    (held-term)."""
    for memory, kind in (("256M", "term"), ("1M", "term"), ("256M", "held-term")):
        for f in os.listdir("."):
            if f.startswith("lost.rpd"):
                os.unlink(f)  # a file of an earlier run would be appended to
        p = run([prog("rpd_workload"), "crash", kind, "100000"],
                {"RPDT_FILENAME": "lost.rpd", "NANO_RPD_CRASH_WAIT_MS": "0",
                 "NANO_RPD_OVERFLOW_MEMORY": memory}, expect_rc=-signal.SIGTERM)
        m = re.search(r"nanoprobe rpd: signal %d: the writer did not commit within 0 ms "
                      r"\(NANO_RPD_CRASH_WAIT_MS\): (at least )?(\d+) records of this process \(in its threads' "
                      r"rings, the spill file and the writer's open transaction\) are not in the trace"
                      % signal.SIGTERM, p.stderr)
        check(m, "overflow memory %s: the loss is said: %s" % (memory, p.stderr))
        # a death before the writer made the file leaves none (a new trace appears whole)
        kept = q(db("lost.rpd"), "SELECT count(*) FROM api")[0][0] if os.path.exists("lost.rpd") else 0
        # a record a range (a leaf range's pop folds into its push's slot) and
        # the mark: every range not in the file is one record said (a start
        # the writer holds open too), none twice
        held = kind == "held-term"  # its start is the writer's, its row never written
        said, recorded = int(m.group(2)) if m else 0, 100000 + 1 + held
        if m:
            print("%s, overflow memory %s: %s%d said, %d ranges kept"
                  % (kind, memory, m.group(1) or "", said, kept))
        check((100000 - kept) + held <= said <= recorded,
              "%s, overflow memory %s: %d records said lost, %d of 100000 ranges kept"
              % (kind, memory, said, kept))


def case_exec_direct():
    """An exec in the process that records (one thread, no fork) keeps what was
    recorded before it; a failed exec goes on recording; the new image appends."""
    p = run([prog("rpd_workload"), "exec-direct", prog("roctx_app"), "10"],
            {"LD_PRELOAD": ARGS.lib, "RPDT_FILENAME": "ed.rpd"})
    pid = int(p.stdout.split()[p.stdout.split().index("pid") + 1])
    con = db("ed.rpd")
    integrity(con)
    rows = dict(q(con, "SELECT args, count(*) FROM api WHERE pid=? GROUP BY args", pid))
    check(rows.get("before-exec") == 10, "the ranges before the exec: %s" % rows)
    check(rows.get("after-failed-exec") == 1, "recording goes on after a failed exec: %s" % rows)
    check(sum(v for k, v in rows.items() if k.startswith("roctx-")) == 4,
          "the exec'd image appends: %s" % rows)


def case_setname():
    run([prog("rpd_workload"), "marks", "5"], {"RPDT_FILENAME": "named.rpd"})
    env = {"RPDT_AUTOSTART": "0", "RPDT_FILENAME": "ignored.rpd"}
    p = run([prog("rpd_workload"), "setname", "named.rpd", "1"], env)
    check(p.stdout.strip() == "set 0 -1", p.stdout)
    check(q(db("named.rpd"), "SELECT count(*) FROM api")[0][0] == 6, "append kept the 5 marks")
    run([prog("rpd_workload"), "setname", "named.rpd", "0"], env)
    con = db("named.rpd")
    check([r[8] for r in api_rows(con)] == ["named"], "truncation left old rows")
    check(q(con, "SELECT value FROM rocpd_metadata WHERE tag='session_count'") == [("1",)],
          "a truncated file starts again at session 0")
    check(not os.path.exists("ignored.rpd") and not os.path.exists("elsewhere.rpd"),
          "rpd_set_filename was not honoured")


def case_chain():
    p = run([prog("rpd_workload"), "chain"], {"RPDT_FILENAME": "ch.rpd", "RPDT_AUTOSTART": "0"})
    check(p.stdout.strip() == "handler %d count 0" % signal.SIGINT, p.stdout)
    rows = [r[8] for r in api_rows(db("ch.rpd"))]
    check(rows == ["around-sigint", "after-sigint"], "rows: %s" % rows)


def case_helper_signals():
    # the tracer's threads leave the application's signals to its own threads:
    # a handler run on a helper while the program's thread is suspended in
    # vfork() can lose the signal (dash's trap did, under load)
    p = run([prog("rpd_workload"), "helpers"], {"RPDT_FILENAME": "hs.rpd"})
    lines = p.stdout.splitlines()
    check(len(lines) >= 1, "the tracer's writer thread is listed: %r" % p.stdout)
    check(all(line.endswith("blocks 5 of 5") for line in lines),
          "every helper thread blocks the application's signals:\n" + p.stdout)


def case_writer_nice():
    """The writer thread runs NANO_RPD_WRITER_NICE (default 10) steps below
    the process's priority, so that where the program's threads and the
    writer compete for cores the program goes first (issue 20); 0 leaves it
    at the program's; the sum stops at 19."""
    def nices(env, prefix=()):
        p = run(list(prefix) + [prog("rpd_workload"), "helpers"], dict(env, RPDT_FILENAME="wn.rpd"))
        return [int(line.split()[2]) for line in p.stdout.splitlines()]
    base = os.nice(0)  # the suite may itself run under nice

    def below(n):
        return [min(base + n, 19)]
    check(nices({}) == below(10), "default: the writer 10 below %d: %s" % (base, nices({})))
    check(nices({"NANO_RPD_WRITER_NICE": "0"}) == below(0), "NANO_RPD_WRITER_NICE=0")
    check(nices({"NANO_RPD_WRITER_NICE": "3"}) == below(3), "NANO_RPD_WRITER_NICE=3")
    got = nices({}, ("nice", "-n", "5"))
    check(got == below(15), "a program at nice %d+5: its writer at %s, got %s" % (base, below(15), got))
    got = nices({}, ("nice", "-n", "15"))
    check(got == [19], "a program at nice %d+15: its writer at 19, got %s" % (base, got))


def case_fork(extra_env=None, n=100):
    env = {"RPDT_FILENAME": "f.rpd"}
    env.update(extra_env or {})
    if os.path.exists("f.rpd"):
        os.unlink("f.rpd")
    p = run([prog("rpd_workload"), "fork", str(n)], env)
    lines = dict(l.split() for l in p.stdout.split("\n") if l)
    parent, child = int(lines["parent"]), int(lines["child"])
    con = db("f.rpd")
    integrity(con)
    views_complete(con)
    got = q(con, "SELECT args, pid, tid, count(*) FROM api GROUP BY args, pid, tid ORDER BY args")
    check(got == [("child", child, child, n), ("parent", parent, parent, n)], str(got))
    return p


def case_exec():
    p = run([prog("rpd_workload"), "exec", prog("roctx_app"), "10"],
            {"LD_PRELOAD": ARGS.lib, "RPDT_FILENAME": "e.rpd"})
    words = p.stdout.split()
    parent, child = int(words[words.index("parent") + 1]), int(words[words.index("child") + 1])
    con = db("e.rpd")
    integrity(con)
    check(q(con, "SELECT count(*) FROM api WHERE args='before-exec' AND pid=?", parent)[0][0] == 10,
          "parent rows")
    check(q(con, "SELECT count(*) FROM api WHERE args LIKE 'roctx-%' AND pid=?", child)[0][0] == 4,
          "exec'd child rows")


def case_control(extra_env=None):
    env = {"RPDT_FILENAME": "ctl.rpd"}
    env.update(extra_env or {})
    p = run([prog("rpd_workload"), "control"], env)
    check(p.stdout.strip() == "start=2 stop=1 stop=0 stop=-1 start=1 stop=0", p.stdout)
    check("rpdstop() refused" in p.stderr, "no refusal message: %s" % p.stderr)
    con = db("ctl.rpd")
    rows = {r[8]: r for r in api_rows(con)}
    check("while-stopped" not in rows, "recorded while stopped")
    check(set(rows) == {"open-at-stop", "after-restart"}, str(list(rows)))
    o, a = rows["open-at-stop"], rows["after-restart"]
    check(o[3] < o[4] < a[3], "range open at the stop must end at the stop: %s %s" % (o, a))


def case_clock():
    """Both clocks: ranges nest and agree with CLOCK_MONOTONIC stop times under
    NANO_RPD_CLOCK=monotonic and =tsc; the default (auto) stamps with the TSC
    where it is usable, silently; stamps converted from the TSC match
    CLOCK_MONOTONIC read around them over seconds of periodic flushing."""
    with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
        tsc = f.read().strip() == "tsc"
    p = run([prog("rpd_workload"), "marks", "1"], {"NANO_RPD_CLOCK": "tsc", "RPDT_FILENAME": "probe.rpd"})
    check(("clocksource is not tsc" in p.stderr) == (not tsc), "stderr: %s" % p.stderr)
    p = run([prog("rpd_workload"), "marks", "1"], {"RPDT_FILENAME": "auto.rpd"})
    check("clocksource" not in p.stderr, "auto clock warned: %s" % p.stderr)
    p = run([prog("rpd_workload"), "marks", "1"], {"NANO_RPD_CLOCK": "sundial", "RPDT_FILENAME": "bad.rpd"})
    check("NANO_RPD_CLOCK=sundial" in p.stderr, "no warning for a bad clock: %s" % p.stderr)
    top = os.getcwd()
    for mode in ("monotonic", "tsc"):
        os.makedirs(mode)
        os.chdir(mode)  # case_threads and case_control name their files
        env = {"NANO_RPD_CLOCK": mode}
        case_threads(env)
        case_control(env)
        # 12 marks 250 ms apart, converted by the writer every 50 ms
        # (autoflush) or one by one long after the previous (a flush after
        # each); 20 us of slack
        n, slack = 12, 20000
        for how, extra, env in (("auto", [], {"RPDT_AUTOFLUSH": "20"}), ("each", ["flush"], {})):
            path = "clock-%s-%s.rpd" % (mode, how)
            p = run([prog("rpd_workload"), "clock", str(n), "250"] + extra,
                    dict(env, NANO_RPD_CLOCK=mode, RPDT_FILENAME=path))
            around = [tuple(int(x) for x in line.split()) for line in p.stdout.strip().splitlines()]
            marks = [r[0] for r in q(db(path), "SELECT start FROM rocpd_api ORDER BY start")]
            check(len(marks) == n == len(around), "%s: %d marks, %d lines" % (path, len(marks), len(around)))
            for (before, after), t in zip(around, marks):
                check(before - slack <= t <= after + slack,
                      "%s: a mark at %d, read between %d and %d (off by %d ns)"
                      % (path, t, before, after, min(abs(t - before), abs(t - after))))
        os.chdir(top)


def tsc_usable():
    """The tracer's condition for TSC stamps: an invariant TSC that is the
    kernel's clocksource."""
    with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
        src = f.read().strip()
    with open("/proc/cpuinfo") as f:
        flags = f.read().split()
    return src == "tsc" and "constant_tsc" in flags and "nonstop_tsc" in flags


def case_zone():
    """NANO_ZONE: a literal name (interned once per site, its records written
    inline where the TSC stamps) and a name from a buffer (copied) give the
    rows rpd_rangePush gives, properly nested, on the inline path and on the
    calls (monotonic clock, stack frames)."""
    # a 64-slot ring: the inline path gives way to the calls at every half
    for env, inline in (({}, tsc_usable()), ({"NANO_RPD_BUFFER": "64"}, tsc_usable()),
                        ({"NANO_RPD_CLOCK": "monotonic"}, False), ({"RPDT_STACKFRAMES": "1"}, False)):
        path = "zone-%d.rpd" % len(os.listdir("."))
        check_zone(dict(env, RPDT_FILENAME=path), path, inline)
    disabled = run([prog("zone_disabled")])
    check(disabled.stdout.strip() == "disabled api sum 0", "NANO_DISABLE: %r" % disabled.stdout)
    check(not os.path.exists("trace.rpd"), "NANO_DISABLE program wrote a trace")


def check_zone(env, path, inline):
    n = 300
    p = run([prog("rpd_workload"), "zone", str(n)], env)
    check(p.stdout.split("\n")[0] == "inline %d" % inline, "%s: %r, expected inline %d" % (env, p.stdout, inline))
    con = db(path)
    integrity(con)
    rows = api_rows(con)
    outer = [r for r in rows if r[8] == "zone-outer"]
    inner = [r for r in rows if r[8].startswith("dyn-")]
    check(len(rows) == 2 * n and len(outer) == n and len(inner) == n,
          "%d rows: %d outer, %d inner" % (len(rows), len(outer), len(inner)))
    for k, (o, i) in enumerate(zip(outer, inner)):
        check(o[5] == i[5] == "UserMarker" and o[7] == i[7] == "UserMarker", "zone rows %s %s" % (o, i))
        check(i[8] == "dyn-%d" % (k % 3), "inner %d is %r" % (k, i[8]))
        check(o[3] <= i[3] <= i[4] <= o[4], "nesting broken at %d: %s %s" % (k, o[3:5], i[3:5]))
        if k:
            check(outer[k - 1][4] <= o[3], "zones overlap at %d" % k)


def case_fold():
    """A leaf range (no record between its push and its pop) takes one ring
    slot: its pop folds into the push's slot, on NANO_ZONE's inline path and
    through the calls (rpd_rangePop, the monotonic clock); a range with a
    record inside takes a push, the record and a pop. Every range is in the
    file, with its own start and end, nested as made; a pop after a
    two-slot record (a launch whose extension's bytes look like a push)
    does not fold into it."""
    n = 200
    for env in ({}, {"NANO_RPD_CLOCK": "monotonic"}):
        for f in os.listdir("."):
            os.unlink(f)
        p = run([prog("rpd_workload"), "fold", str(n)], dict(env, RPDT_FILENAME="fold.rpd"))
        lines = p.stdout.split("\n")
        check(lines[1] == "same ring", "%s: the sets stayed in one ring: %r" % (env, p.stdout))
        # leaf: 1, marked: push mark pop, called: 1, outer+inner: push, inner, pop
        check(lines[0] == "slots %d %d %d %d" % (n, 3 * n, n, 3 * n),
              "%s: slots per set %r, expected %d %d %d %d" % (env, lines[0], n, 3 * n, n, 3 * n))
        con = db("fold.rpd")
        integrity(con)
        rows = api_rows(con)
        names = [r[8] for r in rows]
        for name in ("leaf", "marked", "called", "outer", "inner"):
            check(names.count(name) == n, "%s: %d %s rows of %d" % (env, names.count(name), name, n))
        check(names.count("inside") == n, "%s: the marks inside" % env)
        check(all(r[3] <= r[4] for r in rows), "%s: a range ends before it starts" % env)
        for kind, inside in (("marked", "inside"), ("outer", "inner")):
            outer = [r for r in rows if r[8] == kind]
            inner = [r for r in rows if r[8] == inside]
            for o, i in zip(outer, inner):
                check(o[3] <= i[3] <= i[4] <= o[4], "%s: %s %s not inside %s" % (env, inside, i[3:5], o[3:5]))
        around = [r for r in rows if r[8] == "around"]
        grid = q(con, "SELECT gridX, gridY, gridZ, workgroupX FROM rocpd_kernelapi")
        check(len(around) == 1 and grid == [(257, 1, 1, 64)],
              "%s: a range around a launch whose second slot looks like a push: %s %s" % (env, around, grid))
        leaf = [r for r in rows if r[8] in ("leaf", "called")]
        for a, b in zip(leaf, leaf[1:]):
            check(a[4] <= b[3], "%s: leaf ranges overlap: %s %s" % (env, a[3:5], b[3:5]))


def case_autostart():
    # loaded and idle: nothing recorded, no file made
    run([prog("rpd_workload"), "marks", "10"], {"RPDT_AUTOSTART": "0", "RPDT_FILENAME": "idle.rpd"})
    check(not os.path.exists("idle.rpd"), "RPDT_AUTOSTART=0 created a file")
    p = run([prog("rpd_workload"), "idle", "20"],
            {"RPDT_AUTOSTART": "0", "RPDT_FILENAME": "win-%p.rpd"})
    check(p.stdout.split() == ["count=1", "count=0"], p.stdout)
    files = [f for f in os.listdir(".") if f.startswith("win-")]
    check(len(files) == 1 and files[0][4:-4].isdigit(), "%%p not expanded: %s" % files)
    rows = api_rows(db(files[0]))
    check([r[8] for r in rows] == ["window"], str(rows))


def case_settings():
    """A malformed or out-of-range setting gets exactly one line on stderr that
    names the variable and its value; the tracer keeps that setting's default
    (a malformed switch is off) and the program runs and is recorded in full
    (issue 21.11: -1 buffer slots once meant the largest rings, 2^32 turned
    recording off, an unknown clock fell back to monotonic, -1 ms meant an
    unbounded wait in a crash handler). A malformed RPDT_AUTOSTART means no
    recording (issue 16: never the opposite of what was meant)."""
    n = 50
    for i, value in enumerate(("4294967296", "maybe")):
        path = "a%d.rpd" % i
        p = run([prog("rpd_workload"), "marks", str(n)], {"RPDT_AUTOSTART": value,
                                                           "RPDT_FILENAME": path})
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        check(len(lines) == 1 and "RPDT_AUTOSTART=%s:" % value in lines[0]
              and "taken as off" in lines[0], "RPDT_AUTOSTART=%s: %r" % (value, p.stderr))
        check(not os.path.exists(path), "RPDT_AUTOSTART=%s: nothing recorded" % value)
    bad = [("NANO_RPD_BUFFER", "-1"), ("NANO_RPD_BUFFER", "99999999999"),
           ("NANO_RPD_SIGNALS", "garbage"), ("NANO_RPD_CLOCK", "sundial"),
           ("NANO_RPD_CRASH_WAIT_MS", "-1"), ("NANO_RPD_CRASH_WAIT_MS", "1e9"),
           ("RPDT_AUTOFLUSH", "nan"), ("RPDT_AUTOFLUSH", "-5"), ("RPDT_AUTOFLUSH", "1e3"),
           ("NANO_RPD_DROP", "2"), ("NANO_RPD_SYNC", "sometimes"), ("RPDT_STACKFRAMES", "y"),
           ("NANO_RPD_OVERFLOW", "perhaps"), ("NANO_RPD_OVERFLOW_MEMORY", "lots"),
           ("NANO_RPD_OVERFLOW_FILE", "-1"), ("NANO_RPD_WRITER_NICE", "20"),
           ("NANO_RPD_WRITER_NICE", "-1"),
           # an empty value is a value: refused like any bad one, never unset in silence
           ("NANO_RPD_BUFFER", ""), ("RPDT_AUTOFLUSH", ""), ("NANO_RPD_SYNC", ""),
           ("RPDT_STACKFRAMES", ""), ("NANO_RPD_OVERFLOW_MEMORY", "")]
    for i, (var, value) in enumerate(bad):
        path = "s%d.rpd" % i
        p = run([prog("rpd_workload"), "marks", str(n)], {var: value, "RPDT_FILENAME": path})
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        check(len(lines) == 1 and ("%s=%s:" % (var, value)) in lines[0],
              "%s=%s: expected one line naming it, got %r" % (var, value, p.stderr))
        rows = q(db(path), "SELECT count(*) FROM rocpd_api")[0][0]
        check(rows == n, "%s=%s: %d of %d marks recorded" % (var, value, rows, n))
    # an empty RPDT_FILENAME is said once and the default name used
    for f in ("trace.rpd", "trace.rpd-journal"):
        if os.path.exists(f):
            os.unlink(f)
    p = run([prog("rpd_workload"), "marks", str(n)], {"RPDT_FILENAME": ""})
    check(p.stderr.count("RPDT_FILENAME is set but empty: its default is used") == 1
          and len([l for l in p.stderr.splitlines() if l.strip()]) == 1,
          "RPDT_FILENAME='': %r" % p.stderr)
    check(q(db("trace.rpd"), "SELECT count(*) FROM rocpd_api")[0][0] == n, "the default file")
    # a stack depth out of range keeps the default depth (32), not 1 or 255
    p = run([prog("rpd_workload"), "stack"],
            {"RPDT_STACKFRAMES": "1", "NANO_RPD_STACKDEPTH": "0", "RPDT_FILENAME": "depth.rpd"})
    check("NANO_RPD_STACKDEPTH=0:" in p.stderr, p.stderr)
    depth = q(db("depth.rpd"), "SELECT count(*) FROM stackframe S JOIN api A ON A.id = S.id "
                               "WHERE A.args = 'deep'")[0][0]
    check(depth >= 3, "NANO_RPD_STACKDEPTH=0 kept %d frames, not the default depth" % depth)
    # the documented values still work, and say nothing
    for var, value in (("NANO_RPD_CLOCK", "auto"), ("RPDT_AUTOFLUSH", "2.5"),
                       ("NANO_RPD_BUFFER", "100"), ("NANO_RPD_CRASH_WAIT_MS", "0"),
                       ("RPDT_AUTOSTART", "yes"), ("NANO_RPD_SYNC", "normal"),
                       ("NANO_RPD_OVERFLOW_MEMORY", "64M"), ("NANO_RPD_OVERFLOW_FILE", "1G"),
                       ("NANO_RPD_WRITER_NICE", "0")):
        p = run([prog("rpd_workload"), "marks", str(n)], {var: value, "RPDT_FILENAME": "ok.rpd"})
        check(p.stderr.strip() == "", "%s=%s: %s" % (var, value, p.stderr))


def case_exit():
    """A process that ends through _exit, _Exit or quick_exit (no destructors)
    keeps every record, its open range closed at the exit (issue 21.13: 0 of
    10,000 kept). A fork child leaving through _exit keeps its own; a vfork
    child's _exit leaves the parent's recording alone."""
    n = 10000
    for how in ("_exit", "_Exit", "quick_exit"):
        path = "%s.rpd" % how
        p = run([prog("rpd_workload"), "exit", how, str(n)], {"RPDT_FILENAME": path}, expect_rc=3)
        con = db(path)
        integrity(con)
        marks = q(con, "SELECT count(*) FROM api WHERE args = 'm'")[0][0]
        check(marks == n, "%s: %d of %d marks kept" % (how, marks, n))
        open_ = q(con, "SELECT start, end FROM api WHERE args = 'open-at-exit'")
        check(len(open_) == 1 and open_[0][1] >= open_[0][0], "%s: open range %s" % (how, open_))
        check(p.stderr.strip() == "", "%s: %s" % (how, p.stderr))
    run([prog("rpd_workload"), "exit", "fork-exit", str(n)], {"RPDT_FILENAME": "fork.rpd"})
    rows = q(db("fork.rpd"), "SELECT pid, count(*) FROM api WHERE args = 'm' GROUP BY pid")
    check(len(rows) == 1 and rows[0][1] == n, "fork child's marks: %s" % rows)
    run([prog("rpd_workload"), "exit", "vfork", str(n)], {"RPDT_FILENAME": "vfork.rpd"})
    con = db("vfork.rpd")
    check(q(con, "SELECT count(*) FROM api WHERE args = 'm'")[0][0] == n, "vfork: marks lost")
    closed = q(con, "SELECT count(*) FROM api WHERE args = 'open-at-exit'")[0][0]
    check(closed == 1, "vfork: the parent's range after the child's _exit: %d rows" % closed)


def locked_run(n, extra_env):
    """Makes n marks under `extra_env` while another connection holds the
    write lock of locked.rpd (a file with one row before); returns the marks
    kept in the file, those counted as dropped and the program's stderr."""
    if os.path.exists("locked.rpd"):
        os.unlink("locked.rpd")
    run([prog("rpd_workload"), "marks", "1"], {"RPDT_FILENAME": "locked.rpd"})
    holder = sqlite3.connect("locked.rpd", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # the write lock
    n = 100000
    e = dict(os.environ, RPDT_FILENAME="locked.rpd", NANO_RPD_BUFFER="64", **extra_env)
    e.pop("LD_PRELOAD", None)
    p = subprocess.Popen([prog("rpd_workload"), "marks-done", str(n)], env=e,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline().strip()  # while the lock is held
    check(line == "done", "the program's work did not finish under the lock: %r" % line)
    time.sleep(1.5)  # the writer has waited long enough to say so
    check(p.poll() is None, "exited while its writer could not have written")
    holder.execute("ROLLBACK")
    holder.close()
    out, err = p.communicate(timeout=60)
    check(p.returncode == 0, "exit %d: %s" % (p.returncode, err))
    waits = [l for l in err.splitlines() if "waiting for its lock" in l]
    check(len(waits) == 1 and "locked.rpd" in waits[0], "stderr: %s" % err)
    con = db("locked.rpd")
    kept = q(con, "SELECT count(*) FROM rocpd_api")[0][0] - 1
    dropped = q(con, "SELECT coalesce(sum(CAST(value AS INTEGER)), 0) FROM rocpd_metadata "
                     "WHERE tag = 'nano_dropped_records'")[0][0]
    return kept, dropped, err


def case_locked():
    """Another process holds the trace file's write lock: the program does
    not wait for it (its work ends while the lock is still held), the writer
    says once on stderr that it waits and for which file, and once the lock is
    released everything reaches the file (issue 21.7: main() used to wait up
    to 60 s, silently). The records made meanwhile wait in the overflow store
    (issue 20); only when that may hold nothing are they dropped, counted and
    said."""
    n = 100000
    kept, dropped, err = locked_run(n, {})
    check(kept == n and dropped == 0, "kept %d, dropped %d of %d" % (kept, dropped, n))
    kept, dropped, err = locked_run(n, {"NANO_RPD_OVERFLOW_MEMORY": "0",
                                        "NANO_RPD_OVERFLOW_FILE": "0"})
    check(kept + dropped == n and kept > 0 and dropped > 0,
          "no overflow store: kept %d + dropped %d != %d" % (kept, dropped, n))
    check("while the writer waited for another process's lock" in err, "stderr: %s" % err)


def hold_read(path):
    """Another process's read transaction on the trace at path, as an open
    cursor keeps one (rollback journal: a shared lock until it ends)."""
    h = sqlite3.connect(path, isolation_level=None)
    h.execute("BEGIN")
    h.execute("SELECT count(*) FROM rocpd_api").fetchone()
    return h


def side_files(path):
    return sorted(f for f in os.listdir(".") if f.startswith(path + ".pending."))


def traced(args, env, **kw):
    """Starts the workload with env; stdout and stderr piped."""
    e = dict(os.environ, NANO_RPD_QUIET="1", **env)
    e.pop("LD_PRELOAD", None)
    return subprocess.Popen([prog("rpd_workload")] + args, env=e, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def ended(p, what):
    """Waits for p's end; fails when it is still running after 30 s (the
    writer used to hold exit for 60 s behind a reader, then lose the rows)."""
    try:
        out, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("%s: the program did not end while another process read its trace" % what)
    return out, err


def case_read_locked():
    """Another process's read transaction on the trace never holds the
    program (issue 37.3): it ends while the reader still reads, its rows go to
    a side file beside the trace, said; the next connection that may write
    the trace folds them in (an rpd command, the next recording), once; a
    reader that lets go during the run gets no side file at all; a death
    under the lock keeps its rows the same way; a damaged side file is named
    and left alone."""
    path = "rl.rpd"
    api = lambda: q(db(path), "SELECT count(*) FROM rocpd_api")[0][0]
    run([prog("rpd_workload"), "marks", "1"], {"RPDT_FILENAME": path})
    n = 20000

    # the program's exit under the read lock
    h = hold_read(path)
    out, err = ended(traced(["marks", str(n)], {"RPDT_FILENAME": path}), "exit")
    check(h.execute("SELECT count(*) FROM rocpd_api").fetchone()[0] == 1, "the reader's view")
    sides = side_files(path)
    check(len(sides) == 1, "side files: %s\nstderr: %s" % (sides, err))
    said = [l for l in err.splitlines() if sides[0] in l]
    check(len(said) == 1 and "read lock" in said[0], "stderr: %s" % err)
    p = run([ARGS.rpd, "info", path])  # the reader still reads: nothing folded, said
    check("1 side file not folded in" in p.stderr and "locked" in p.stderr, "info: %s" % p.stderr)
    check(side_files(path) == sides, "a side file went while the reader read")
    h.close()
    shutil.copy(sides[0], "saved-side")
    p = run([ARGS.rpd, "info", path])
    check("folded in 1 side file" in p.stderr, "info: %s" % p.stderr)
    check(side_files(path) == [], "left: %s" % side_files(path))
    check(api() == n + 1, "after the fold: %d api rows, expected %d" % (api(), n + 1))
    marks = q(db(path), "SELECT count(*) FROM api WHERE args = 'm'")[0][0]
    check(marks == n + 1, "marks after the fold: %d of %d" % (marks, n + 1))
    integrity(db(path))
    # folding it again adds nothing
    shutil.copy("saved-side", sides[0])
    p = run([ARGS.rpd, "info", path])
    check("rows it had already were kept" in p.stderr, "refold: %s" % p.stderr)
    check(api() == n + 1 and side_files(path) == [], "refold doubled rows: %d" % api())

    # the next recording folds what an earlier one left
    h = hold_read(path)
    ended(traced(["marks", str(n)], {"RPDT_FILENAME": path}), "second exit")
    h.close()
    check(len(side_files(path)) == 1, "second side file: %s" % side_files(path))
    run([prog("rpd_workload"), "marks", "1"], {"RPDT_FILENAME": path})
    check(side_files(path) == [] and api() == 2 * n + 2,
          "next recording: %d api rows, side files %s" % (api(), side_files(path)))

    # a reader that lets go during the run: the writer's own commit, no side file
    h = hold_read(path)
    p = traced(["sleepy", "1000", "4000"], {"RPDT_FILENAME": path, "RPDT_AUTOFLUSH": "20"})
    check(p.stdout.readline().strip() == "ready", "sleepy did not start")
    time.sleep(1.0)  # commits held meanwhile (20 a second)
    check(h.execute("SELECT count(*) FROM rocpd_api").fetchone()[0] == 2 * n + 2, "reader")
    h.close()
    time.sleep(1.0)
    live = api()
    out, err = ended(p, "released")
    check(live == 2 * n + 2 + 1000, "rows once the reader let go, before exit: %d" % live)
    check(side_files(path) == [] and api() == 2 * n + 2 + 1000, "released: %d" % api())
    check(err.count("holds a read lock") == 1 and "side file" not in err.replace(
        "into a side file beside", ""), "released: stderr %s" % err)

    # a death (SIGTERM, default action) under the read lock
    h = hold_read(path)
    out, err = ended(traced(["crash", "term", "500"], {"RPDT_FILENAME": path}), "death")
    h.close()
    check(len(side_files(path)) == 1, "death: side files %s, stderr %s" % (side_files(path), err))
    run([ARGS.rpd, "info", path])
    texts = {r[0] for r in q(db(path), "SELECT args FROM api")}
    kept = texts & {"r%d" % i for i in range(500)}
    check(len(kept) == 500 and "before-crash" in texts and side_files(path) == [],
          "death: %d of 500 ranges" % len(kept))

    # the atomics of a run under the reader come through the side file too: the
    # counts and the samples (every table the writer writes has a key)
    h = hold_read(path)
    e = dict(os.environ, LD_PRELOAD=ARGS.lib, RPDT_FILENAME=path, NANO_RPD_QUIET="1")
    p = subprocess.run([prog("atomics_app")], env=e, capture_output=True, text=True, timeout=30)
    h.close()
    check(p.returncode == 0 and len(side_files(path)) == 1, "atomics: %s %s" % (p.stderr, side_files(path)))
    run([ARGS.rpd, "info", path])
    con = db(path)
    totals = dict(q(con, "SELECT kind, count FROM nano_atomic_totals"))
    last = q(con, "SELECT count FROM nano_atomic_sample WHERE kind = '__atomic_fetch_add' "
                  "ORDER BY start DESC LIMIT 1")
    check(totals.get("__atomic_fetch_add") == 1000 and totals.get("__atomic_store") == 10 and last == [(1000,)],
          "atomics through a side file: totals %s, last sample %s" % (totals, last))

    # a damaged side file: named, left alone, the trace still read
    junk = path + ".pending.1.0"
    with open(junk, "w") as f:
        f.write("not a changeset\n")
    p = run([ARGS.rpd, "info", path])
    check(junk in p.stderr and "not a side file" in p.stderr and os.path.exists(junk),
          "junk: %s" % p.stderr)


def case_autoflush():
    for hz, expect_live in (("20", 100), (None, 0)):
        name = "af%s.rpd" % (hz or "off")
        env = {"RPDT_FILENAME": name}
        if hz:
            env["RPDT_AUTOFLUSH"] = hz
        e = dict(os.environ, **env)
        p = subprocess.Popen([prog("rpd_workload"), "sleepy", "100", "2500"], env=e,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        check(p.stdout.readline().strip() == "ready", "workload did not start")
        time.sleep(1.0)
        live = q(sqlite3.connect(name), "SELECT count(*) FROM rocpd_api")[0][0]
        p.communicate(timeout=30)
        check(live == expect_live, "autoflush %s: %d rows while running, expected %d"
              % (hz, live, expect_live))
        check(q(sqlite3.connect(name), "SELECT count(*) FROM rocpd_api")[0][0] == 100,
              "all rows at exit")


def case_drop():
    N = 200000
    p = run([prog("rpd_workload"), "marks", str(N)],
            {"RPDT_FILENAME": "d.rpd", "NANO_RPD_DROP": "1", "NANO_RPD_BUFFER": "64"})
    con = db("d.rpd")
    rows = q(con, "SELECT count(*) FROM rocpd_api")[0][0]
    meta = q(con, "SELECT value FROM rocpd_metadata WHERE tag='nano_dropped_records'")
    check(len(meta) == 1, "no nano_dropped_records row: %s" % meta)
    dropped = int(meta[0][0])
    check(dropped > 0, "nothing dropped with a 64-record buffer")
    check(rows + dropped == N, "%d rows + %d dropped != %d" % (rows, dropped, N))
    check("%d records dropped" % dropped in p.stderr, "stderr: %s" % p.stderr)
    # without the overflow store producers wait; nothing is lost either way
    for env in ({"NANO_RPD_OVERFLOW": "0"}, {}):
        env.update({"RPDT_FILENAME": "w.rpd", "NANO_RPD_BUFFER": "64"})
        run([prog("rpd_workload"), "marks", "20000"], env)
        con = db("w.rpd")
        check(q(con, "SELECT count(*) FROM rocpd_api")[0][0] == 20000, "%s lost records" % env)
        check(q(con, "SELECT count(*) FROM rocpd_metadata WHERE tag='nano_dropped_records'")[0][0]
              == 0, "%s reports drops" % env)
        con.close()
        os.unlink("w.rpd")


def case_min_duration():
    """Issue 20.3: NANO_RPD_MIN_DURATION. Every range of the threads workload
    is shorter than 1 s: none is a row, each is one call in nano_calls
    (marks stay rows); nested time comes off the outer ranges' self time
    exactly; a malformed bound is said and every range is a row."""
    T, N = 4, 2000
    if os.path.exists("md.rpd"):
        os.unlink("md.rpd")
    run([prog("rpd_workload"), "threads", str(T), str(N)],
        {"RPDT_FILENAME": "md.rpd", "NANO_RPD_MIN_DURATION": "1s"})
    con = db("md.rpd")
    integrity(con)
    rows = api_rows(con)
    check(len(rows) == T * N and all(r[8] == "tick" for r in rows),
          "%d rows, expected the %d marks only" % (len(rows), T * N))
    sums = q(con, "SELECT name, args, calls, total_ns, self_ns, min_duration_ns FROM nano_calls")
    calls = sum(x[2] for x in sums)
    check(calls == 2 * T * N + T, "%d calls summed, expected %d" % (calls, 2 * T * N + T))
    check(all(x[5] == 1000000000 for x in sums), "bound %s" % {x[5] for x in sums})
    outer = [x for x in sums if x[0] == "UserMarker" and x[1] == "outer"]
    inner = [x for x in sums if x[0] == "inner"]
    check(len(outer) == 1 and outer[0][2] == T * N, "outer: %s" % outer)
    check(sum(x[2] for x in inner) == T * N and all(x[3] == x[4] for x in inner),
          "inner ranges have nothing nested: self == total")
    check(outer[0][4] == outer[0][3] - sum(x[3] for x in inner),
          "outer self %d != total %d - inner %d" % (outer[0][4], outer[0][3],
                                                    sum(x[3] for x in inner)))
    # a bound below every range: rows as without one, no summary
    os.unlink("md.rpd")
    run([prog("rpd_workload"), "threads", str(T), str(N)],
        {"RPDT_FILENAME": "md.rpd", "NANO_RPD_MIN_DURATION": "1ns"})
    con = db("md.rpd")
    check(len(api_rows(con)) == 3 * T * N + T, "1ns bound dropped rows")
    p = run([prog("rpd_workload"), "threads", "1", "10"],
            {"RPDT_FILENAME": "mdbad.rpd", "NANO_RPD_MIN_DURATION": "fast"})
    check("NANO_RPD_MIN_DURATION=fast:" in p.stderr, "stderr: %r" % p.stderr)
    check(len(api_rows(db("mdbad.rpd"))) == 31, "a malformed bound summed ranges")


def case_overflow():
    """Issue 20: a producer whose ring is full goes on in a fresh one (the
    overflow store) instead of waiting; past NANO_RPD_OVERFLOW_MEMORY filled
    rings wait in an unlinked file in the trace's folder (or
    NANO_RPD_OVERFLOW_DIR). Rings of 64 records fill at once, so every record
    here goes through it: each must reach the file, in order and nested as
    made, from threads, NANO_ZONE and a fork child, and nothing is left on
    disk."""
    tiny = {"NANO_RPD_BUFFER": "64"}
    spill = {"NANO_RPD_BUFFER": "64", "NANO_RPD_OVERFLOW_MEMORY": "0"}
    case_threads(tiny)
    case_threads(spill)
    case_fork(spill, 20000)
    # NANO_ZONE's inline path follows the thread to its next ring
    check_zone(dict(spill, RPDT_FILENAME="zone.rpd"), "zone.rpd", tsc_usable())
    os.makedirs("sub", exist_ok=True)
    n = 200000
    p = run([prog("rpd_workload"), "marks", str(n)], dict(spill, RPDT_FILENAME="sub/o.rpd"))
    said = [l for l in p.stderr.splitlines() if "temporary file" in l]
    check(len(said) == 1 and said[0].endswith("temporary file in sub"),
          "the spill is not said, or not in the trace's folder: %r" % p.stderr)
    check(q(db("sub/o.rpd"), "SELECT count(*) FROM rocpd_api")[0][0] == n, "spilled marks lost")
    check(sorted(os.listdir("sub")) == ["o.rpd"], "left behind: %s" % os.listdir("sub"))
    # a folder that cannot take the file: said once, producers wait, nothing lost
    p = run([prog("rpd_workload"), "marks", str(n)],
            dict(spill, RPDT_FILENAME="nodir.rpd", NANO_RPD_OVERFLOW_DIR="/nonexistent/dir"))
    said = [l for l in p.stderr.splitlines() if "overflow" in l]
    check(len(said) == 1 and "cannot create the overflow file in /nonexistent/dir" in said[0],
          "stderr: %r" % p.stderr)
    check(q(db("nodir.rpd"), "SELECT count(*) FROM rocpd_api")[0][0] == n, "marks lost")
    # a folder that fills up: the write error said once, producers wait, nothing lost
    full = os.path.abspath("full-mount")
    os.makedirs(full, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", full],
                      capture_output=True).returncode == 0:
        try:
            p = run([prog("rpd_workload"), "marks", str(n)],
                    dict(spill, RPDT_FILENAME="full.rpd", NANO_RPD_OVERFLOW_DIR=full))
            said = [l for l in p.stderr.splitlines() if "cannot write the overflow file" in l]
            check(len(said) == 1 and "No space left on device" in said[0],
                  "stderr: %r" % p.stderr)
            check(q(db("full.rpd"), "SELECT count(*) FROM rocpd_api")[0][0] == n, "marks lost")
        finally:
            subprocess.run(["umount", full], capture_output=True)
    else:
        print("overflow: no tmpfs mount here; the full-folder check did not run")
    # NANO_RPD_OVERFLOW_DIR names where the file goes
    os.makedirs("elsewhere", exist_ok=True)
    p = run([prog("rpd_workload"), "marks", str(n)],
            dict(spill, RPDT_FILENAME="dir.rpd", NANO_RPD_OVERFLOW_DIR="elsewhere"))
    check(p.stderr.rstrip().endswith("temporary file in elsewhere"), "stderr: %r" % p.stderr)
    check(os.listdir("elsewhere") == [], "left behind: %s" % os.listdir("elsewhere"))
    # a flush while a thread records faster than the writer persists returns
    # once what came before it is written, not when that thread stops (it
    # followed the thread's new rings: 20 s and 2 GB for 20M ranges once)
    cap = 4000000
    # (the writer at the recording thread's priority: on a busy machine a lowered
    # one may starve, and the recorder reach the cap first)
    p = run([prog("rpd_workload"), "outpaced", str(cap)],
            {"RPDT_FILENAME": "outpaced.rpd", "NANO_RPD_WRITER_NICE": "0"})
    check("flush 0, returned while recording: yes" in p.stdout,
          "the flush waited for the recording thread: %r" % p.stdout)
    total = int(p.stdout.split("total ")[1].split()[0])
    check(q(db("outpaced.rpd"), "SELECT count(*) FROM rocpd_api")[0][0] == total,
          "ranges lost: %r" % p.stdout)


def case_spill_raw():
    """A spilling thread that cannot get a compressor (no_zstd.so makes
    ZSTD_createCCtx fail) writes its rings to the overflow file as they are:
    every record still reaches the trace, in order, and the exit line gives
    the file's peak as large as the records' (nothing was packed)."""
    spill = {"NANO_RPD_BUFFER": "64", "NANO_RPD_OVERFLOW_MEMORY": "0", "NANO_RPD_QUIET": "0",
             "LD_PRELOAD": prog("no_zstd.so")}
    n = 50000
    p = run([prog("rpd_workload"), "marks", str(n)], dict(spill, RPDT_FILENAME="raw.rpd"))
    said = [l for l in p.stderr.splitlines() if "temporary file" in l]
    m = re.search(r"up to (\d+) MiB of records \((\d+) MiB compressed\)", said[0] if said else "")
    check(m and int(m.group(2)) >= int(m.group(1)) > 0,
          "the raw spill's peak is not the records' size: %r" % p.stderr)
    rows = q(db("raw.rpd"), "SELECT start, args FROM api ORDER BY id")
    check(len(rows) == n and all(r[1] == "m" for r in rows), "%d of %d marks" % (len(rows), n))
    starts = [r[0] for r in rows]
    check(starts == sorted(starts), "marks out of order")


def spill_model_encode(slots):
    """The overflow file's delta code of ring slots, written from the format
    table at the top of runtime/rpd/spill.c (not from its code): each slot,
    eight little-endian 64-bit words, against p, the slot before it, and q,
    the last slot before it whose type (w[0]'s low byte) has the same low 4
    bits (zeros where there is none)."""
    m64 = (1 << 64) - 1
    zeros = (0,) * 8
    out, p, last = bytearray(), zeros, {}
    for w in slots:
        typ = w[0] & 0xff
        q = last.get(typ & 15, zeros)
        last[typ & 15] = w
        step, length = (w[1] - p[1]) & m64, (w[2] - w[1]) & m64
        c1, c2 = [next(c for c in range(4) if v < 1 << (8 << c)) for v in (step, length)]
        mask = (w[0] != q[0]) | sum((w[k] != q[k]) << (k - 2) for k in range(3, 8))
        no_length = w[2] == q[2]
        out.append(c1 | (0 if no_length else c2 << 2) | (0x10 if mask else 0)
                   | (0x20 if typ != p[0] & 0xff else 0) | (0x40 if no_length else 0))
        if typ != p[0] & 0xff:
            out.append(typ)
        if mask:
            out.append(mask)
        out += step.to_bytes(8, "little")[:1 << c1]
        if not no_length:
            out += length.to_bytes(8, "little")[:1 << c2]
        for bit, k in enumerate((0, 3, 4, 5, 6, 7)):
            if mask >> bit & 1:
                out += w[k].to_bytes(8, "little")
        p = w
    return bytes(out)


def case_spill_code():
    """Issue 42 part 2: a spilled ring's slots are delta-coded before they go
    to the overflow file. The code (spill.c's own functions, built into
    spill_code) must be byte for byte the format spill.c's table describes,
    must give back every slot exactly, must cost 3 bytes a NANO_ZONE range
    whose times moved a little and at most 5 a record of nested ranges
    (pushes, pops and folded ranges mixed, as the Python profiler writes
    them), and must refuse code cut short, damaged or followed by more bytes
    instead of making up slots."""
    rnd = random.Random(42)
    m64 = (1 << 64) - 1
    zone = (12 | 1 << 8 | 7 << 32, 0, 0, 0, 0, 1 << 63 | 5, 0, 0)
    slots, t = [], 10 ** 12
    for i in range(3000):  # NANO_ZONE ranges: only the times move
        t += rnd.randrange(60, 250)
        slots.append(zone[:1] + (t, t + rnd.randrange(20, 200)) + zone[3:])
    # every width of a step and of a length, at the edges of each class,
    # and steps back in time (a GPU op's start before the record before it)
    for v in (0xff, 0x100, 0xffff, 0x10000, 0xffffffff, 0x100000000, m64):
        t = (t + v) & m64
        slots.append(zone[:1] + (t, (t + v) & m64) + zone[3:])
    slots.append(zone[:1] + ((t - 5000) & m64, 3) + zone[3:])
    for k in (0, 3, 4, 5, 6, 7):  # each word that differs alone, then all
        w = list(slots[-1])
        w[k] ^= 1 << rnd.randrange(64)
        slots.append(tuple(w))
    # nested ranges: a push's t1 and a pop's words are whatever the slot held
    push = (1 | 1 << 8 | 7 << 32, 0, 0, 0, 1 << 63 | 1, 1 << 63 | 15, 1 << 63 | 16, 0)
    pop = (2 | 1 << 8 | 7 << 32, 0, 0, 0, 0, 0, 0, 0)
    rng = (12 | 1 << 8 | 7 << 32,) + push[1:]
    nested = []
    for i in range(2000):
        t += rnd.randrange(300, 600)
        kind = (push, rng, pop)[rnd.randrange(3)]
        nested.append(kind[:1] + (t, t + rnd.randrange(150, 250) if kind is rng else 0)
                      + kind[3:])
    slots += nested
    cost = len(spill_model_encode(slots[:3000] + nested)) - len(spill_model_encode(slots[:3000]))
    check(cost <= 5 * len(nested), "a record of nested ranges costs %.2f bytes, more than 5"
          % (cost / len(nested)))
    slots += [tuple(rnd.getrandbits(64) for _ in range(8)) for _ in range(500)]
    # kinds that share a predictor (type 0x11 after 0x01)
    slots += [(0x11,) + zone[1:], (0x01,) + zone[1:], (0x11,) + zone[1:]]
    slots.append((0,) * 8)  # a pad
    slots += [zone] * 3
    raw = b"".join(b"".join(x.to_bytes(8, "little") for x in w) for w in slots)
    p = subprocess.run([prog("spill_code"), "encode"], input=raw, capture_output=True, timeout=60)
    check(p.returncode == 0, "encode: %r" % p.stderr)
    code = p.stdout
    model = spill_model_encode(slots)
    first = next((i for i in range(min(len(code), len(model))) if code[i] != model[i]), None)
    check(code == model, "the code is not spill.c's table: %d bytes against the model's %d, "
          "first difference at byte %s" % (len(code), len(model), first))
    # (the first slot is coded against zeros: it names its words)
    zones = len(spill_model_encode(slots[:3000])) - len(spill_model_encode(slots[:1]))
    check(zones == 3 * 2999, "a NANO_ZONE range costs %.2f bytes, not 3" % (zones / 2999))

    def decode(data, n):
        return subprocess.run([prog("spill_code"), "decode", str(n)], input=data,
                              capture_output=True, timeout=60)
    p = decode(code, len(slots))
    check(p.returncode == 0 and p.stdout == raw, "decoded slots differ (rc %d, %r)"
          % (p.returncode, p.stderr))
    for cut in (1, 2, 9, len(code) // 2, len(code) - 1):
        p = decode(code[:cut], len(slots))
        check(p.returncode == 1 and (b"cut short" in p.stderr or b"fewer slots" in p.stderr),
              "code cut at %d bytes: rc %d, %r" % (cut, p.returncode, p.stderr))
    p = decode(code + b"\0", len(slots))
    check(p.returncode == 1 and b"bytes after the last slot" in p.stderr,
          "a byte after the code: rc %d, %r" % (p.returncode, p.stderr))
    p = decode(bytes([0x80]) + code[1:], len(slots))
    check(p.returncode == 1 and b"damaged" in p.stderr, "a head with unknown bits: %r" % p.stderr)
    # the first slot names its type and its w[0]: another type there is damage
    check(code[0] & 0x30 == 0x30 and code[1] == 12, "first slot: %r" % code[:4])
    p = decode(code[:1] + bytes([13]) + code[2:], len(slots))
    check(p.returncode == 1 and b"not the one its code names" in p.stderr,
          "a type that is not w[0]'s: rc %d, %r" % (p.returncode, p.stderr))


def case_stack():
    # the workload as CMake builds it (gcc) and as clang-15 does: clang emits
    # no .debug_aranges, and its frames still get file:line (issue 18.4)
    here = os.path.dirname(os.path.abspath(__file__))
    lib = os.path.dirname(os.path.abspath(ARGS.lib))
    clang_exe = os.path.abspath("rpd_workload_clang")
    run(["clang-15", "-g", "-O1", "-fno-omit-frame-pointer", "-pthread",
         "-I" + os.path.join(here, "..", "..", "runtime", "include"),
         os.path.join(here, "rpd_workload.c"), "-o", clang_exe, "-L" + lib, "-lnano_rpd",
         "-Wl,-rpath," + lib])
    for exe, name in ((prog("rpd_workload"), "s.rpd"), (clang_exe, "s-clang.rpd")):
        run([exe, "stack"], {"RPDT_FILENAME": name, "RPDT_STACKFRAMES": "1"})
        con = db(name)
        frames = q(con, "SELECT S.depth, S.name FROM stackframe S JOIN api A ON A.id = S.id "
                        "WHERE A.args = 'deep' ORDER BY S.depth")
        check(len(frames) >= 3, "%s: too few frames: %s" % (exe, frames))
        check(frames[0][1].startswith("stack_leaf+0x") and "rpd_workload.c:" in frames[0][1],
              "%s: innermost frame: %s" % (exe, frames[0][1]))
        names = " ".join(f[1] for f in frames)
        check("stack_middle+0x" in names and "main+0x" in names, "%s: frames: %s" % (exe, frames))
        check(all("rpd_workload.c:" in f[1] for f in frames if f[1].split("+")[0] in
                  ("stack_leaf", "stack_middle", "main")), "%s: every own frame has its line: %s"
              % (exe, frames))
        # the frame name ids carry the session offset like every other id
        check(q(con, "SELECT count(*) FROM rocpd_stackframe F JOIN rocpd_string S ON S.id = F.name_id")[0][0]
              == q(con, "SELECT count(*) FROM rocpd_stackframe")[0][0], "dangling frame names")


def case_api():
    run([prog("rpd_workload"), "api"], {"RPDT_FILENAME": "api.rpd"})
    con = db("api.rpd")
    integrity(con)
    views_complete(con)
    k = q(con, "SELECT gridX, gridY, gridZ, workgroupX, groupSegmentSize, privateSegmentSize, "
               "kernelName, stream, duration FROM kernel")
    check(k == [(64, 2, 1, 256, 1024, 16, "saxpy", "0x10", 5000)], str(k))
    c = q(con, "SELECT apiName, size, kind, dst, src, dstDevice, srcDevice, sync, pinned FROM copy")
    check(c == [("hipMemcpyAsync", 4096, 1, "0xdd", "0x55", 0, -1, 0, 1)], str(c))
    co = q(con, "SELECT apiName, queueId, duration FROM copyop")
    check(co == [("hipMemcpyAsync", 2, 1000)], str(co))
    top = q(con, "SELECT Name, TotalCalls FROM top ORDER BY Name")
    check(top == [("CopyHostToDevice", 1), ("saxpy", 1)], str(top))
    a = q(con, "SELECT domain, category, apiName, args FROM api WHERE apiName='hipLaunchKernel'")
    check(a == [("hip", "", "hipLaunchKernel", "kernel args")], str(a))
    m = q(con, "SELECT deviceType, deviceId, monitorType, value FROM rocpd_monitor")
    check(m == [("gpu", 0, "sclk", "1500")], str(m))
    check(q(con, "SELECT Busy > 0 FROM busy") == [(1,)], "busy view")


def case_interned():
    N = 1000
    run([prog("rpd_workload"), "interned", str(N)], {"RPDT_FILENAME": "in.rpd"})
    con = db("in.rpd")
    integrity(con)
    rows = q(con, "SELECT domain, apiName, args, count(*) FROM api GROUP BY apiName ORDER BY apiName")
    check(rows == [("python", "mod.even", "prog.py:7", N // 2), ("python", "mod.odd", "prog.py:7", N // 2)],
          str(rows))
    # an interned args text is written once and shared by every row using it
    check(q(con, "SELECT count(*) FROM rocpd_ustring WHERE string='prog.py:7'") == [(1,)],
          "interned args should share one rocpd_ustring row")


def case_atomics():
    p = run([prog("atomics_app")], {"LD_PRELOAD": ARGS.lib, "RPDT_FILENAME": "at.rpd"})
    check("NANO TRACKER" not in p.stderr, "the tracker's exit dump should go to the trace only")
    con = db("at.rpd")
    totals = dict(q(con, "SELECT kind, count FROM nano_atomic_totals"))
    check(totals.get("__atomic_fetch_add") == 1000 and totals.get("__atomic_store") == 10
          and totals.get("__atomic_load") == 1, "totals: %s" % totals)
    sites = q(con, "SELECT kind, memory_order, size, file, line FROM nano_atomic_site ORDER BY line")
    check(len(sites) == 3 and all(s[3].endswith("atomics_app.c") and s[4] > 0 for s in sites),
          "sites: %s" % sites)
    check(("__atomic_fetch_add", "relaxed", 4) in [s[:3] for s in sites], "sites: %s" % sites)
    # the counts reach the trace on every way out, as the ranges do
    for end, rc in (("_exit", 0), ("quick_exit", 0), ("abort", -signal.SIGABRT),
                    ("segv", -signal.SIGSEGV), ("term", -signal.SIGTERM)):
        trace = "at-%s.rpd" % end
        if os.path.exists(trace):
            os.unlink(trace)
        run([prog("atomics_app"), end], {"LD_PRELOAD": ARGS.lib, "RPDT_FILENAME": trace}, expect_rc=rc)
        totals = dict(q(db(trace), "SELECT kind, count FROM nano_atomic_totals"))
        check(totals.get("__atomic_fetch_add") == 1000 and totals.get("__atomic_store") == 10,
              "%s: totals %s" % (end, totals))
    # counts of recording windows only (rpdstart..rpdstop, as rpdremote's start and stop):
    # 3,000 fetch_adds outside them, 120 inside
    run([prog("atomics_app"), "window"],
        {"LD_PRELOAD": ARGS.lib, "RPDT_FILENAME": "at-window.rpd", "RPDT_AUTOSTART": "0"})
    con = db("at-window.rpd")
    totals = dict(q(con, "SELECT kind, count FROM nano_atomic_totals"))
    check(totals.get("__atomic_fetch_add") == 120 and totals.get("__atomic_store") == 10,
          "windows: totals %s (120 fetch_adds and 10 stores were made while recording)" % totals)
    last = q(con, "SELECT count FROM nano_atomic_sample WHERE kind = '__atomic_fetch_add' "
                  "ORDER BY start DESC LIMIT 1")
    check(last == [(120,)], "windows: the last sample %s" % last)


def mode(path):
    """The journal mode a fresh connection finds in the file at path."""
    con = sqlite3.connect(path)
    try:
        return q(con, "PRAGMA journal_mode")[0][0]
    finally:
        con.close()


def case_journal():
    """Traces are written with a rollback journal, not WAL (issue 20: WAL wrote
    every page twice), and a trace closed by its last writer has no side files,
    so that readers without write access open it (issue 18.1). Writers that
    overlap do not wait for each other's close. A file left in WAL mode (by
    another tool, or a writer killed while others had it open) is written
    through WAL while another connection has it open and switched back by the
    last writer."""
    run([prog("rpd_workload"), "marks", "5"], {"RPDT_FILENAME": "j.rpd"})
    check(mode("j.rpd") == "delete", "journal mode after the only writer: %s" % mode("j.rpd"))
    check(not any(os.path.exists("j.rpd" + s) for s in ("-wal", "-shm", "-journal")),
          "side files left")
    e = dict(os.environ, RPDT_FILENAME="j.rpd")
    long_writer = subprocess.Popen([prog("rpd_workload"), "sleepy", "10", "3000"], env=e,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(long_writer.stdout.readline().strip() == "ready", "workload did not start")
    t0 = time.monotonic()
    run([prog("rpd_workload"), "marks", "5"], {"RPDT_FILENAME": "j.rpd"})
    took = time.monotonic() - t0
    check(mode("j.rpd") == "delete", "a second writer: still a rollback journal: %s" % mode("j.rpd"))
    check(took < 2.5, "the short writer waited %.1f s at its close for the other writer" % took)
    long_writer.communicate(timeout=30)
    con = db("j.rpd")
    integrity(con)
    check(q(con, "SELECT count(*) FROM api")[0][0] == 20, "rows of the three writers")
    con.close()
    # a file in WAL mode, held open by another connection while a writer appends
    holder = sqlite3.connect("j.rpd", isolation_level=None)
    check(q(holder, "PRAGMA journal_mode=WAL")[0][0] == "wal", "the holder switched to WAL")
    check(q(holder, "SELECT count(*) FROM rocpd_api")[0][0] == 20, "the holder reads")
    run([prog("rpd_workload"), "marks", "5"], {"RPDT_FILENAME": "j.rpd"})
    check(mode("j.rpd") == "wal", "another connection has the file: it stays in WAL mode")
    holder.close()
    run([prog("rpd_workload"), "marks", "5"], {"RPDT_FILENAME": "j.rpd"})
    check(mode("j.rpd") == "delete", "journal mode after the last writer: %s" % mode("j.rpd"))
    check(not any(os.path.exists("j.rpd" + s) for s in ("-wal", "-shm", "-journal")),
          "side files left after WAL")
    con = db("j.rpd")
    integrity(con)
    check(q(con, "SELECT count(*) FROM api")[0][0] == 30, "rows of the five writers")
    con.close()
    # a reader in the middle of a read transaction does not hold the program
    # (issue 37.3, case read_locked): its rows wait in a side file, folded in
    # by the next command that opens the trace
    reader = sqlite3.connect("j.rpd", isolation_level=None)
    reader.execute("BEGIN")
    check(reader.execute("SELECT count(*) FROM rocpd_api").fetchall()[0][0] == 30, "reader")
    p = subprocess.Popen([prog("rpd_workload"), "marks", "5"], env=dict(e, NANO_RPD_QUIET="1"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, err = ended(p, "journal")
    check(p.returncode == 0, "the program beside the reader: %s" % err)
    reader.execute("COMMIT")
    reader.close()
    run([ARGS.rpd, "info", "j.rpd"])
    check(mode("j.rpd") == "delete" and side_files("j.rpd") == [], "after the fold")
    con = db("j.rpd")
    integrity(con)
    check(q(con, "SELECT count(*) FROM api")[0][0] == 35, "the held writer's rows")
    con.close()
    # a reader on a read-only mount (where this machine lets root bind-mount)
    ro = os.path.abspath("ro-mount")
    os.makedirs(ro, exist_ok=True)
    here = os.path.abspath(".")
    mounted = subprocess.run(["mount", "--bind", here, ro], capture_output=True).returncode == 0
    if mounted:
        try:
            if subprocess.run(["mount", "-o", "remount,ro,bind", ro], capture_output=True).returncode == 0:
                con = sqlite3.connect("file:%s/j.rpd?mode=ro" % ro, uri=True)
                check(q(con, "SELECT count(*) FROM api")[0][0] == 35, "read from a read-only mount")
                con.close()
            else:
                print("journal: no read-only remount here; the mount check did not run")
        finally:
            subprocess.run(["umount", ro], capture_output=True)
    else:
        print("journal: no bind mount here; the read-only mount check did not run")


CASES = {
    "schema": case_schema, "errors": case_errors, "session": case_session,
    "threads": case_threads, "roctx": case_roctx, "nvtx": case_nvtx, "append": case_append,
    "sigkill": case_sigkill, "create_whole": case_create_whole, "diskfull": case_diskfull,
    "crash_segv": lambda: case_crash("segv", signal.SIGSEGV),
    "crash_abort": lambda: case_crash("abort", signal.SIGABRT),
    "crash_term": lambda: case_crash("term", signal.SIGTERM),
    "crash_int": lambda: case_crash("int", signal.SIGINT),
    "crash_signals": case_crash_signals, "crash_lost": case_crash_lost,
    "exec_direct": case_exec_direct,
    "clock": case_clock, "settings": case_settings, "exit": case_exit, "locked": case_locked, "read_locked": case_read_locked, "zone": case_zone, "setname": case_setname, "chain": case_chain, "helper_signals": case_helper_signals, "writer_nice": case_writer_nice, "fork": case_fork, "exec": case_exec, "control": case_control, "autostart": case_autostart,
    "autoflush": case_autoflush, "drop": case_drop, "overflow": case_overflow,
    "spill_code": case_spill_code, "spill_raw": case_spill_raw,
    "min_duration": case_min_duration, "stack": case_stack, "api": case_api,
    "interned": case_interned, "atomics": case_atomics, "journal": case_journal,
    "views": case_views, "fold": case_fold,
}


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--lib", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--nvtx-app", default="")
    ap.add_argument("--rpd", default="")
    ap.add_argument("--work", required=True)
    ARGS = ap.parse_args()
    work = os.path.join(ARGS.work, ARGS.case)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.chdir(work)
    CASES[ARGS.case]()
    print("PASS rpd_%s" % ARGS.case)


if __name__ == "__main__":
    if sys.argv[1:] == ["--list"]:  # for CMake: the cases, one per line
        print("\n".join(CASES))
        sys.exit(0)
    main()
