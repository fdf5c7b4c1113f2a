"""Tracer control, signposts, child processes and the `python -m nanoprobe` runner."""

import os
import sqlite3
import subprocess

import pytest

from conftest import PYTHON, assert_nested, child_env, counts, ranges, run, write


def test_tracer_control(tmp_path):
    write(tmp_path, "ctl.py", """
        import os, sys
        from nanoprobe import Tracer, signpost
        Tracer.set_filename("ctl.rpd", append=False)
        t = Tracer()
        try:
            Tracer.set_filename("other.rpd")
        except RuntimeError as e:
            print("late set_filename refused")
        try:
            t.stop()
        except RuntimeError:
            print("stop at zero refused")
        t.range_push("not recorded")     # recording is off
        t.range_pop()
        with Tracer():                   # count 1
            assert t.start() == 2
            t.range_push("outer", "outer args")
            t.range_push("inner")
            t.range_pop()
            t.range_pop()
            t.mark("a mark")
            signpost("Run number 5", "after 5 warm-up runs")
            signpost("header only")
            assert t.stop() == 1
        t.flush()
        t.range_push("after stop")
        t.range_pop()
        print(os.environ["RPDT_FILENAME"])
    """)
    r = run(["ctl.py"], cwd=str(tmp_path))
    out = r.stdout.splitlines()
    assert out[:2] == ["late set_filename refused", "stop at zero refused"]
    assert out[2] == str(tmp_path / "ctl.rpd")     # exported to children
    assert not os.path.exists(tmp_path / "other.rpd")
    trace = str(tmp_path / "ctl.rpd")
    user = ranges(trace, "UserMarker")
    assert sorted((x.name, x.args) for x in user) == [
        ("UserMarker", "a mark"), ("UserMarker", "inner"), ("outer", "outer args")]
    inner = next(x for x in user if x.args == "inner")
    outer = next(x for x in user if x.name == "outer")
    assert outer.start <= inner.start and inner.end <= outer.end
    signs = ranges(trace, "signpost")
    assert sorted((x.name, x.args) for x in signs) == [
        ("UserMarker", "Run number 5: after 5 warm-up runs"), ("UserMarker", "header only")]
    assert all(x.start == x.end for x in signs)


def test_append_and_truncate(tmp_path):
    write(tmp_path, "one.py", """
        import sys
        from nanoprobe import Tracer
        Tracer.set_filename("a.rpd", append=sys.argv[1] == "append")
        with Tracer() as t:
            t.mark(sys.argv[2])
    """)
    run(["one.py", "new", "first"], cwd=str(tmp_path))
    run(["one.py", "append", "second"], cwd=str(tmp_path))
    assert sorted(x.args for x in ranges(str(tmp_path / "a.rpd"), "UserMarker")) == ["first", "second"]
    run(["one.py", "new", "third"], cwd=str(tmp_path))
    assert [x.args for x in ranges(str(tmp_path / "a.rpd"), "UserMarker")] == ["third"]


def test_import_does_not_start_recording(tmp_path):
    write(tmp_path, "imp.py", """
        import nanoprobe
        nanoprobe.Tracer().range_push("x")
        nanoprobe.Tracer().range_pop()
    """)
    run(["imp.py"], cwd=str(tmp_path))
    assert not os.path.exists(tmp_path / "trace.rpd")


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_multiprocessing_children_in_same_file(tmp_path, nanoprobe, method):
    write(tmp_path, "mp.py", """
        import multiprocessing as mp, os, sys
        def leaf(i):
            return i * i
        def work(n):
            return sum(leaf(i) for i in range(n))
        if __name__ == "__main__":
            ctx = mp.get_context(sys.argv[1])
            ps = [ctx.Process(target=work, args=(5,)) for _ in range(2)]
            for p in ps:
                p.start()
            for p in ps:
                p.join()
            assert all(p.exitcode == 0 for p in ps)
            work(1)
            print(os.getpid())
    """)
    r, trace = nanoprobe("mp.py", method)
    parent = int(r.stdout.strip())
    rows = ranges(trace)
    child_work = [x for x in rows if x.pid != parent and x.name.endswith(".work")]
    assert len(child_work) == 2
    assert len({x.pid for x in child_work}) == 2
    assert sum(1 for x in rows if x.pid != parent and x.name.endswith(".leaf")) == 10
    assert counts(x for x in rows if x.pid == parent)["__main__.work"] == 1
    assert_nested(rows)


def test_subprocess_child_and_per_process_files(tmp_path):
    write(tmp_path, "child.py", """
        def hello():
            return 1
        hello()
    """)
    write(tmp_path, "parent.py", """
        import subprocess, sys
        def spawn():
            subprocess.run([sys.executable, "child.py"], check=True)
        spawn()
    """)
    run(["-m", "nanoprobe", "-o", "one.rpd", "parent.py"], cwd=str(tmp_path))
    rows = ranges(str(tmp_path / "one.rpd"))
    assert counts(rows)["__main__.hello"] == 1 and counts(rows)["__main__.spawn"] == 1
    assert len({x.pid for x in rows}) == 2
    run(["-m", "nanoprobe", "-o", "per-%p.rpd", "parent.py"], cwd=str(tmp_path))
    files = sorted(f for f in os.listdir(tmp_path) if f.startswith("per-") and f.endswith(".rpd"))
    assert len(files) == 2
    names = [set(counts(ranges(str(tmp_path / f)))) for f in files]
    assert any("__main__.hello" in n for n in names) and any("__main__.spawn" in n for n in names)


def test_child_on_a_python_without_sitecustomize(tmp_path):
    """Debian's Python has a sitecustomize; pyenv's and python.org's have none.
    There a child's start-up under the boot shim printed "Error in
    sitecustomize; KeyError: 'sitecustomize'" (issue 21.12). The child here
    starts as such a Python would: site runs with no other sitecustomize to
    find; it must start silently and be recorded."""
    write(tmp_path, "child.py", """
        def hello():
            return 1
        hello()
    """)
    write(tmp_path, "bare_site.py", """
        import importlib.machinery, runpy, sys
        boot = next(p for p in sys.path if p.rstrip("/").endswith("_boot"))
        class OnlyTheBootShim:
            \"\"\"sitecustomize exists only in the boot directory.\"\"\"
            def find_spec(self, name, path=None, target=None):
                if name != "sitecustomize":
                    return None
                spec = importlib.machinery.PathFinder.find_spec(name, [boot])
                if spec and boot in sys.path:
                    return spec
                raise ModuleNotFoundError("No module named 'sitecustomize'", name=name)
        sys.meta_path.insert(0, OnlyTheBootShim())
        import site
        site.main()
        runpy.run_path(sys.argv[1], run_name="__main__")
    """)
    write(tmp_path, "parent.py", """
        import subprocess, sys
        r = subprocess.run([sys.executable, "-S", "bare_site.py", "child.py"],
                           capture_output=True, text=True)
        sys.stderr.write(r.stderr)
        sys.exit(r.returncode)
    """)
    r = run(["-m", "nanoprobe", "-o", "t.rpd", "parent.py"], cwd=str(tmp_path))
    assert r.stderr.strip() == "", r.stderr
    assert counts(ranges(str(tmp_path / "t.rpd"))).get("__main__.hello") == 1


def test_os_exit_keeps_the_records(tmp_path):
    """os._exit skips atexit; the runner stops the session first (issue 21.13)."""
    write(tmp_path, "quit.py", """
        import os
        def work():
            return sum(range(10))
        for _ in range(1000):
            work()
        os._exit(4)
    """)
    run(["-m", "nanoprobe", "-o", "t.rpd", "quit.py"], cwd=str(tmp_path), expect=4)
    assert counts(ranges(str(tmp_path / "t.rpd"))).get("__main__.work") == 1000


def test_os_exit_after_the_script_keeps_the_records(tmp_path):
    """The runner stops without waiting for the file when the script ends
    (the interpreter's shutdown overlaps the last commits); an os._exit
    after that (here from an atexit handler, with the writer still behind)
    waits for them, as the C library's exit would have."""
    write(tmp_path, "late.py", """
        import atexit, os
        def work():
            return 1
        atexit.register(os._exit, 5)
        for _ in range(200_000):
            work()
    """)
    run(["-m", "nanoprobe", "-o", "t.rpd", "late.py"], cwd=str(tmp_path), expect=5)
    assert counts(ranges(str(tmp_path / "t.rpd"))).get("__main__.work") == 200_000


def test_truncation_frees_the_old_trace_while_the_program_runs(tmp_path):
    """A run over an existing trace removes it when recording starts, and a
    thread of the tracer's frees its blocks while the program runs (not at
    its exit). A child forked at once appends its session to the new file
    (it used to remove that file too when the fork came before the parent's
    writer had opened it, and one of the two lost its rows), and never holds
    the removed file. On one core (the program's main thread first, the
    tracer's threads at lower priority) the fork comes before that close and
    before the writer's open."""
    write(tmp_path, "calls.py", """
        def f():
            pass
        for _ in range(50_000):
            f()
    """)
    run(["-m", "nanoprobe", "-o", "t.rpd", "calls.py"], cwd=str(tmp_path))
    write(tmp_path, "again.py", """
        import os, time
        def removed_held():
            n = 0
            for fd in os.listdir("/proc/self/fd"):
                try:
                    target = os.readlink("/proc/self/fd/" + fd)
                except OSError:
                    continue
                n += target.endswith("/t.rpd (deleted)")
            return n
        pid = os.fork()
        if pid == 0:
            os._exit(10 + removed_held())
        deadline = time.monotonic() + 20
        while removed_held() and time.monotonic() < deadline:
            time.sleep(0.01)
        print("parent", removed_held())
        print("child", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) - 10)
    """)
    cpu = min(os.sched_getaffinity(0))
    for _ in range(3):  # each run truncates the last one's trace; the race was lost 1 in 2
        r = subprocess.run([PYTHON, "-m", "nanoprobe", "-o", "t.rpd", "again.py"],
                           cwd=str(tmp_path), env=child_env(), capture_output=True, text=True,
                           timeout=60, preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == ["parent", "0", "child", "0"], r.stdout + r.stderr
        assert r.stderr == "", r.stderr
        assert sorted(os.listdir(str(tmp_path))) == ["again.py", "calls.py", "t.rpd"]
        trace = str(tmp_path / "t.rpd")
        assert counts(ranges(trace)).get("__main__.f") is None
        con = sqlite3.connect(trace)
        try:
            sessions = con.execute(
                "SELECT value FROM rocpd_metadata WHERE tag = 'session_count'").fetchall()
            pids = con.execute("SELECT count(DISTINCT pid) FROM rocpd_api").fetchall()
        finally:
            con.close()
        assert sessions == [("2",)] and pids == [(2,)], (sessions, pids)


def test_fifo_as_trace_file_is_refused_without_waiting(tmp_path):
    """A FIFO where the trace should go: the program runs to its end (the
    truncating start probes the path on the program's thread, and used to
    wait there for a writer to open the FIFO) and the tracer says why it
    records nothing."""
    write(tmp_path, "prog.py", "print('ran')\n")
    os.mkfifo(str(tmp_path / "t.rpd"))
    r = run(["-m", "nanoprobe", "-o", "t.rpd", "prog.py"], cwd=str(tmp_path), timeout=30)
    assert r.stdout == "ran\n"
    assert "t.rpd: is not a regular file, not an RPD file" in r.stderr, r.stderr


def test_runner_argv_main_and_module(tmp_path, nanoprobe):
    write(tmp_path, "args.py", """
        import sys
        print(__name__, sys.argv[1:], sys.argv[0])
    """)
    os.makedirs(tmp_path / "pkg")
    write(tmp_path / "pkg", "__init__.py", "")
    write(tmp_path / "pkg", "tool.py", """
        import sys
        def main():
            print(__name__, sys.argv[1:])
            return 3
        if __name__ == "__main__":
            sys.exit(main())
    """)
    r, trace = nanoprobe("args.py", "--epochs", "1")
    assert r.stdout.split("\n")[0] == "__main__ ['--epochs', '1'] args.py"
    r, trace = nanoprobe("-m", "pkg.tool", "-x", expect=3)
    assert r.stdout.strip() == "__main__ ['-x']"
    assert counts(ranges(trace))["__main__.main"] == 1


def test_pytest_exit_code_preserved(tmp_path, nanoprobe):
    write(tmp_path, "test_small.py", """
        import os
        def helper(x):
            return x + 1
        def test_ok():
            assert helper(1) == 2
        def test_maybe():
            assert os.environ.get("SMALL_FAIL") != "1"
    """)
    _, trace = nanoprobe("-m", "pytest", "-q", "-p", "no:cacheprovider", "test_small.py")
    assert counts(ranges(trace))["test_small.helper"] == 1
    _, trace = nanoprobe("-m", "pytest", "-q", "-p", "no:cacheprovider", "test_small.py",
                         expect=1, env={"SMALL_FAIL": "1"})
    assert counts(ranges(trace))["test_small.test_maybe"] == 1
    _, trace = nanoprobe("-p", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_small.py")
    assert counts(ranges(trace))["test_small.helper"] == 0


def test_help_and_errors(tmp_path):
    r = run(["-m", "nanoprobe", "--help"], cwd=str(tmp_path))
    for option in ("-o", "--append", "-p", "-l", "-c", "--no-python", "-m"):
        assert option in r.stdout
    r = run(["-m", "nanoprobe", "missing.py"], cwd=str(tmp_path), expect=2)
    assert "missing.py" in r.stderr
    r = run(["-m", "nanoprobe"], cwd=str(tmp_path), expect=2)
    assert "no script or module" in r.stderr
    # an unwritable trace is one line and exit 2 before the script runs
    write(tmp_path, "hello.py", "print('ran')\n")
    for out, why in (("no/such/dir/t.rpd", "no folder"), (".", "it is a folder")):
        r = run(["-m", "nanoprobe", "-o", out, "hello.py"], cwd=str(tmp_path), expect=2)
        assert r.stdout == "" and "Traceback" not in r.stderr, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and out in lines[0] and why in lines[0], r.stderr


def test_command_line_forms(tmp_path):
    """The runner reads its options as python and argparse do: combined short
    flags, a value attached (-oFILE, --output=FILE), a unique prefix of a long
    option, `--` before the program; anything else is exit 2 before the
    program runs, naming the option."""
    write(tmp_path, "hello.py", "import sys; print('ran', sys.argv[1:])\n")
    for argv, trace in ((["-pl", "-oa.rpd", "hello.py", "-x"], "a.rpd"),
                        (["--out=b.rpd", "--", "hello.py", "-x"], "b.rpd"),
                        (["--min-dur", "1us", "-o", "c.rpd", "hello.py", "-x"], "c.rpd")):
        r = run(["-m", "nanoprobe"] + argv, cwd=str(tmp_path))
        assert "ran ['-x']" in r.stdout, (argv, r.stdout, r.stderr)
        assert os.path.getsize(str(tmp_path / trace)) > 0, argv
    for argv, message in ((["-x", "hello.py"], "unrecognized arguments: -x"),
                          (["--colour", "hello.py"], "unrecognized arguments: --colour"),
                          (["--append=yes", "hello.py"], "--append: ignored explicit argument"),
                          (["hello.py", "-o"], None),
                          (["-o"], "-o/--output: expected one argument")):
        r = run(["-m", "nanoprobe"] + argv, cwd=str(tmp_path), expect=0 if message is None else 2)
        if message is None:  # options after the program are the program's
            assert "ran ['-o']" in r.stdout, r.stderr
            continue
        assert "ran" not in r.stdout and message in r.stderr, (argv, r.stderr)
        assert r.stderr.startswith("usage: python -m nanoprobe"), r.stderr


def test_rpd_tool_shows_signposts(tmp_path):
    rpd = os.environ["NANO_RPD_TOOL"]
    write(tmp_path, "sp.py", """
        from nanoprobe import Tracer, signpost
        with Tracer():
            signpost("Run number 5", "after 5 warm-up runs")
    """)
    run(["sp.py"], cwd=str(tmp_path))
    out = subprocess.run([rpd, "export", str(tmp_path / "trace.rpd"), "-o", "-"],
                         capture_output=True, text=True, check=True).stdout
    assert "Run number 5: after 5 warm-up runs" in out
    subprocess.run([rpd, "report", str(tmp_path / "trace.rpd"), "-o", str(tmp_path / "r.html")],
                   capture_output=True, check=True)
    with open(tmp_path / "r.html") as f:
        assert "Run number 5: after 5 warm-up runs" in f.read()
    con = sqlite3.connect(str(tmp_path / "trace.rpd"))
    assert con.execute("SELECT count(*) FROM api WHERE domain = 'signpost'").fetchone()[0] == 1
    con.close()
