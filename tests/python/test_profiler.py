"""The profiler: every Python call is one range, properly nested, on every thread."""

import os
import sqlite3
import subprocess
import sys

from conftest import assert_nested, counts, parent_of, ranges, run, write

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import report_tables  # noqa: E402


def test_recursion_one_range_per_call(tmp_path, nanoprobe):
    write(tmp_path, "fib.py", """
        def fib(n):
            return n if n < 2 else fib(n - 1) + fib(n - 2)
        calls = 0
        print(fib(10))
    """)
    r, trace = nanoprobe("fib.py")
    assert r.stdout.strip() == "55"
    rows = ranges(trace)
    c = counts(rows)
    assert c["__main__.fib"] == 177  # calls of fib(10)
    assert c["__main__.<module>"] == 1
    fib = [x for x in rows if x.name == "__main__.fib"]
    assert {x.args for x in fib} == {"fib.py:2"}
    assert_nested(rows)
    # the outermost fib is inside <module>, the others inside a fib
    outer = min(fib, key=lambda x: x.start)
    assert parent_of(rows, outer).name == "__main__.<module>"
    assert all(parent_of(rows, x).name == "__main__.fib" for x in fib if x is not outer)


def test_generators_one_range_per_resume(tmp_path, nanoprobe):
    write(tmp_path, "gen.py", """
        def gen(n):
            for i in range(n):
                yield i
        def gen_finally(n):
            try:
                for i in range(n):
                    yield i
            finally:
                pass
        def consume():
            return sum(gen(5))
        def early_close():
            g = gen_finally(10)
            next(g)
            next(g)
            g.close()
        consume()
        early_close()
    """)
    _, trace = nanoprobe("gen.py")
    rows = ranges(trace)
    c = counts(rows)
    # consume: 5 yields + the final resume that ends it
    assert c["__main__.gen"] == 6
    # early_close: 2 resumes, and close() resumes it once more to run finally
    assert c["__main__.gen_finally"] == 3
    assert_nested(rows)
    for g in (x for x in rows if x.name == "__main__.gen"):
        assert parent_of(rows, g).name == "__main__.consume"
    for g in (x for x in rows if x.name == "__main__.gen_finally"):
        assert parent_of(rows, g).name == "__main__.early_close"


def test_coroutines_one_range_per_resume(tmp_path, nanoprobe):
    write(tmp_path, "aio.py", """
        import asyncio
        async def leaf():
            return 1
        async def sleeper():
            await asyncio.sleep(0)
            return 2
        async def top():
            return await leaf() + await sleeper() + await leaf()
        print(asyncio.run(top()))
    """)
    r, trace = nanoprobe("aio.py")
    assert r.stdout.strip() == "4"
    rows = ranges(trace)
    c = counts(rows)
    assert c["__main__.leaf"] == 2
    assert c["__main__.sleeper"] == 2  # suspended once in sleep(0)
    assert c["__main__.top"] == 2      # resumed after sleeper's suspension
    assert_nested(rows)
    for x in rows:
        if x.name in ("__main__.leaf", "__main__.sleeper"):
            assert parent_of(rows, x).name == "__main__.top"


def test_exceptions_close_every_frame(tmp_path, nanoprobe):
    write(tmp_path, "exc.py", """
        def inner():
            raise KeyError("k")
        def middle():
            inner()
        def outer():
            try:
                middle()
            except KeyError:
                return after()
        def after():
            return 1
        for _ in range(3):
            outer()
    """)
    _, trace = nanoprobe("exc.py")
    rows = ranges(trace)
    c = counts(rows)
    assert (c["__main__.inner"], c["__main__.middle"], c["__main__.outer"], c["__main__.after"]) == (3, 3, 3, 3)
    assert_nested(rows)
    for x in rows:
        if x.name == "__main__.after":
            assert parent_of(rows, x).name == "__main__.outer"
        if x.name == "__main__.inner":
            assert parent_of(rows, x).name == "__main__.middle"


def test_sys_exit_keeps_code_and_closes_ranges(tmp_path, nanoprobe):
    write(tmp_path, "ex.py", """
        import sys
        def deep(n):
            if n == 0:
                sys.exit(7)
            deep(n - 1)
        deep(4)
    """)
    _, trace = nanoprobe("ex.py", expect=7)
    rows = ranges(trace)
    assert counts(rows)["__main__.deep"] == 5
    assert counts(rows)["__main__.<module>"] == 1
    assert_nested(rows)


def test_uncaught_exception_exit_code_and_traceback(tmp_path, nanoprobe):
    write(tmp_path, "boom.py", """
        def boom():
            raise RuntimeError("boom here")
        boom()
    """)
    r, trace = nanoprobe("boom.py", expect=1)
    assert "RuntimeError: boom here" in r.stderr
    assert counts(ranges(trace))["__main__.boom"] == 1


def test_threads_before_and_after_enable(tmp_path, nanoprobe):
    write(tmp_path, "thr.py", """
        import threading
        from nanoprobe import Profiler
        def leaf(i):
            return i
        def work(n):
            return sum(leaf(i) for i in range(n))
        go = threading.Event()
        def early():
            go.wait()
            work(3)
        t0 = threading.Thread(target=early, name="early-bird")
        t0.start()                      # running before the profiler is enabled
        p = Profiler()
        p.enable()
        go.set()
        ts = [threading.Thread(target=work, args=(4,), name="worker-%d" % i) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        t0.join()
        p.disable()
        work(100)                       # after disable: not recorded
    """)
    _, trace = nanoprobe("-p", "thr.py")
    rows = ranges(trace)
    c = counts(rows)
    assert c["__main__.work"] == 5
    assert c["__main__.leaf"] == 4 * 4 + 3
    assert len({x.tid for x in rows if x.name == "__main__.work"}) == 5
    assert_nested(rows)
    # threads carry their threading names; the main thread (the process) its OS name
    con = sqlite3.connect(trace)
    pid = rows[0].pid
    names = dict(con.execute("SELECT tid, name FROM nano_thread WHERE pid = ?", (pid,)))
    tids = {x.tid for x in rows if x.name == "__main__.work"}
    assert sorted(names[t] for t in tids) == ["early-bird"] + ["worker-%d" % i for i in range(4)], names
    assert names[pid].startswith("python"), names


def test_partial_only_between_enable_and_disable(tmp_path, nanoprobe):
    write(tmp_path, "part.py", """
        from nanoprobe import Profiler
        def f():
            return g()
        def g():
            return 1
        f(); f(); f()
        with Profiler():
            f(); f()
        f()
    """)
    _, trace = nanoprobe("-p", "part.py")
    rows = ranges(trace)
    c = counts(rows)
    assert c["__main__.f"] == 2 and c["__main__.g"] == 2
    assert c["__main__.<module>"] == 0
    assert_nested(rows)


def test_line_mode(tmp_path, nanoprobe):
    write(tmp_path, "lines.py", """
        from nanoprobe import Profiler
        def g(y):
            z = y * 2
            return z
        def f(x):
            y = x + 1
            return g(y)
        p = Profiler()
        p.enable()
        a = f(1)
        p.disable()
        f(2)
    """)
    _, trace = nanoprobe("-p", "-l", "lines.py")
    rows = ranges(trace)
    c = counts(rows)
    assert c["__main__.f"] == 1 and c["__main__.g"] == 1
    for line in ("g:4", "g:5", "f:7", "f:8"):
        assert c["__main__." + line] == 1, (line, c)
    # lines of the enabling frame are recorded too, not those after disable
    assert c["__main__.<module>:11"] == 1
    assert c["__main__.<module>:13"] == 0
    assert_nested(rows)
    by_name = {x.name: x for x in rows}
    assert by_name["__main__.g:4"].args == "lines.py:4"
    assert parent_of(rows, by_name["__main__.g:4"]).name == "__main__.g"
    assert parent_of(rows, by_name["__main__.g"]).name == "__main__.f:8"
    assert parent_of(rows, by_name["__main__.f"]).name == "__main__.<module>:11"


def test_c_calls(tmp_path, nanoprobe):
    write(tmp_path, "cc.py", """
        def f(xs):
            return len(xs) + len(sorted(xs))
        for _ in range(3):
            f([3, 1, 2])
    """)
    _, trace = nanoprobe("-c", "cc.py")
    rows = ranges(trace)
    c = counts(rows)
    assert c["builtins.len"] == 6 and c["builtins.sorted"] == 3
    assert_nested(rows)
    assert all(parent_of(rows, x).name == "__main__.f" for x in rows if x.name == "builtins.len")
    # without -c, no C-call ranges
    _, trace = nanoprobe("cc.py")
    assert counts(ranges(trace))["builtins.len"] == 0


def test_no_python_records_only_user_ranges(tmp_path, nanoprobe):
    write(tmp_path, "np.py", """
        from nanoprobe import Tracer
        def f():
            t = Tracer()
            t.range_push("inside f")
            t.range_pop()
        f()
    """)
    _, trace = nanoprobe("--no-python", "np.py")
    assert ranges(trace) == []
    user = ranges(trace, domain="UserMarker")
    assert [x.args for x in user] == ["inside f"]


def test_profiler_nests_inside_the_runner(tmp_path, nanoprobe):
    write(tmp_path, "nest.py", """
        from nanoprobe import Profiler
        def f():
            return 1
        with Profiler():             # already enabled by the runner: nests
            f()
        f()                          # still profiled: the runner's enable holds
        try:
            Profiler(lines=True).enable()
        except RuntimeError as e:
            print("refused:", e)
    """)
    r, trace = nanoprobe("nest.py")
    assert "refused: the nanoprobe profiler is already enabled with lines=False" in r.stdout
    assert counts(ranges(trace))["__main__.f"] == 2


MIN_DURATION_PROGRAM = """
    import time
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)
    def slow():
        time.sleep(0.02)
        return fib(12)
    print(fib(15), slow())
"""


def test_min_duration_sums_short_calls_exactly(tmp_path, nanoprobe):
    """Issue 20.3: with --min-duration, calls shorter than the bound are not
    ranges but summed per function (nano_calls); a call is in exactly one of
    the two, the long ones keep their rows and nesting, and self time is the
    total less the time of the calls nested in them."""
    write(tmp_path, "fib.py", MIN_DURATION_PROGRAM)
    r, trace = nanoprobe("--min-duration", "5ms", "fib.py")
    assert r.stdout.split() == ["610", "144"]
    rows = ranges(trace)
    c = counts(rows)
    assert_nested(rows)
    con = sqlite3.connect(trace)
    sums = {name: (calls, total, self_, bound) for name, calls, total, self_, bound in con.execute(
        "SELECT name, calls, total_ns, self_ns, min_duration_ns FROM nano_calls")}
    assert c["__main__.slow"] == 1 and c["__main__.<module>"] == 1  # long: rows
    assert "__main__.slow" not in sums
    calls, total, self_, bound = sums["__main__.fib"]
    assert bound == 5_000_000
    assert calls + c.get("__main__.fib", 0) == 1973 + 465  # fib(15) and fib(12)
    assert 0 < self_ < total
    assert all(x.end - x.start >= 5_000_000 for x in rows if x.name == "__main__.fib")
    # a bad bound ends the run before it starts
    r, _ = nanoprobe("--min-duration", "fast", "fib.py", expect=2)
    assert "--min-duration 'fast'" in r.stderr


def test_min_duration_report(tmp_path, nanoprobe):
    """`rpd report` shows the summed calls: fib's count, read from its cell."""
    write(tmp_path, "fib.py", MIN_DURATION_PROGRAM)
    _, trace = nanoprobe("--min-duration", "5ms", "fib.py")
    calls = sqlite3.connect(trace).execute(
        "SELECT calls FROM nano_calls WHERE name = '__main__.fib'").fetchone()[0]
    html = tmp_path / "r.html"
    subprocess.run([os.environ["NANO_RPD_TOOL"], "report", trace, "-o", str(html)],
                   capture_output=True, check=True)
    rows = [r for r in report_tables(html.read_text())["short"] if r["function"] == "__main__.fib"]
    assert len(rows) == 1 and rows[0]["calls"] == calls, "report: %s" % rows


def test_empty_settings_are_said(tmp_path):
    """An empty value is a value, never a silent unset (docs/ENVIRONMENT.md):
    an empty switch is said and taken as off, an empty choice is said and
    taken as 'all', an empty trace name is said and the default used."""
    write(tmp_path, "flags.py", """
        from nanoprobe import Profiler
        p = Profiler()
        print("lines", p.lines, "c_calls", p.c_calls)
    """)
    r = run(["flags.py"], cwd=str(tmp_path), env={"NANO_PYTHON_LINES": "", "NANO_PYTHON_C_CALLS": "1"})
    assert r.stdout.strip() == "lines False c_calls True"
    assert r.stderr.count("NANO_PYTHON_LINES=: expected 1/0") == 1, r.stderr
    write(tmp_path, "hello.py", "print('hello')\n")
    r = run(["-m", "nanoprobe", "hello.py"], cwd=str(tmp_path), env={"RPDT_FILENAME": ""})
    assert "RPDT_FILENAME is set but empty: its default (trace.rpd) is used" in r.stderr, r.stderr
    assert counts(ranges(str(tmp_path / "trace.rpd")))["__main__.<module>"] == 1
    # a child of the runner's kind with an empty mode records, as a malformed one does
    write(tmp_path, "child.py", "def f():\n    return 1\nf()\n")
    boot = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    r = run(["-c", "import nanoprobe._runner as r; r.autostart(); exec(open('child.py').read())"],
            cwd=str(tmp_path), env={"NANO_PYTHON_PROFILE": "", "RPDT_FILENAME": str(tmp_path / "c.rpd"),
                                   "PYTHONPATH": os.pathsep.join(boot)})
    assert "NANO_PYTHON_PROFILE='' is not one of" in r.stderr, r.stderr
