"""Shared helpers of the nanoprobe Python tests.

ctest runs these with PYTHONPATH pointing at <build>/python (see
CMakeLists.txt here); every program under test runs in a child process
(`python -m nanoprobe ...` or a plain script), and the trace is read back
with sqlite3.
"""

import collections
import os
import sqlite3
import subprocess
import sys
import textwrap

import pytest


def child_env(extra=None):
    """The environment of a child: this one (PYTHONPATH included), without
    inherited tracer settings."""
    env = dict(os.environ)
    for name in ("RPDT_FILENAME", "RPDT_AUTOSTART", "NANO_PYTHON_PROFILE",
                 "NANO_PYTHON_LINES", "NANO_PYTHON_C_CALLS", "LD_PRELOAD"):
        env.pop(name, None)
    env.update(extra or {})
    return env


# The interpreter of the programs under test: $NANO_TEST_PYTHON (to check
# another Python version against a package built for it), else this one.
PYTHON = os.environ.get("NANO_TEST_PYTHON") or sys.executable


def run(args, cwd, env=None, expect=0, timeout=60):
    """Runs `python args...` in cwd; asserts the exit code; returns the result."""
    r = subprocess.run([PYTHON] + list(args), cwd=cwd, env=child_env(env),
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == expect, (
        "python %s: exit %d, expected %d\nstdout:\n%s\nstderr:\n%s"
        % (" ".join(args), r.returncode, expect, r.stdout, r.stderr))
    return r


def write(directory, name, source):
    path = os.path.join(str(directory), name)
    with open(path, "w") as f:
        f.write(textwrap.dedent(source))
    return path


Range = collections.namedtuple("Range", "pid tid start end name args")


def ranges(db, domain="python"):
    """Every api row of `domain` in the trace `db`."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT pid, tid, start, end, apiName, args FROM api "
                           "WHERE domain = ? ORDER BY start", (domain,)).fetchall()
    finally:
        con.close()
    return [Range(*r) for r in rows]


def counts(rows):
    return collections.Counter(r.name for r in rows)


def assert_nested(rows):
    """Ranges of one thread are properly nested: any two are disjoint or one
    contains the other."""
    by_thread = collections.defaultdict(list)
    for r in rows:
        assert r.start <= r.end, r
        by_thread[(r.pid, r.tid)].append(r)
    for thread, rs in by_thread.items():
        rs.sort(key=lambda r: (r.start, -r.end))
        stack = []
        for r in rs:
            # Drop the ranges that ended before r starts (unless they contain
            # r: zero-length ranges at their parent's last nanosecond).
            while stack and stack[-1].end <= r.start and r.end > stack[-1].end:
                stack.pop()
            if stack:
                assert r.end <= stack[-1].end, "thread %s: %s overlaps %s" % (thread, r, stack[-1])
            stack.append(r)


def parent_of(rows, child):
    """The innermost range of the same thread that contains `child`."""
    best = None
    for r in rows:
        if r is child or (r.pid, r.tid) != (child.pid, child.tid):
            continue
        if r.start <= child.start and child.end <= r.end and (r.start, r.end) != (child.start, child.end):
            if best is None or r.end - r.start < best.end - best.start:
                best = r
    return best


@pytest.fixture
def nanoprobe(tmp_path):
    """Runs `python -m nanoprobe [options] script` in tmp_path; returns
    (result, trace path)."""
    def go(*args, expect=0, env=None):
        trace = str(tmp_path / "trace.rpd")
        r = run(["-m", "nanoprobe", "-o", trace] + list(args), cwd=str(tmp_path), env=env,
                expect=expect)
        assert os.path.exists(trace), "no trace written\n" + r.stderr
        return r, trace
    return go
