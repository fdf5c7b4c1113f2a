#!/usr/bin/env python3
"""The front door: `nanoprobe run`, `nanoprobe cc`/`cflags`, the plugin's
check of the compiler's LLVM, --version everywhere, boolean settings, and an
installed prefix used by another project.

usage: test_frontdoor.py BUILD_DIR SOURCE_DIR CASE WORKDIR
       test_frontdoor.py --list
"""
import os
import re
import shutil
import signal
import stat
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import check, fail  # noqa: E402

BUILD, SRC, CASE, WORK = sys.argv[1:5] if sys.argv[1:] != ["--list"] else (None,) * 4
if BUILD:
    NANOPROBE = os.path.join(BUILD, "tools/nanoprobe/nanoprobe")
    RPD = os.path.join(BUILD, "tools/rpd/rpd")
    LIBRPD = os.path.join(BUILD, "runtime/rpd/libnano_rpd.so")
    MEMORY = os.path.join(BUILD, "examples/memory")
    PLUGIN15 = os.path.join(BUILD, "llvm-pass/libNanoPass.so")
    PLUGIN22 = os.path.join(BUILD, "llvm-22/llvm-pass/libNanoPass.so")
    VERSION = re.search(r"project\(nanoprobe VERSION ([0-9.]+)",
                        open(os.path.join(SRC, "CMakeLists.txt")).read()).group(1)

ATOMICS_C = r"""
#include <stdio.h>
static long n;
int main(int argc, char **argv) {
  (void)argv;
  for (int i = 0; i < 100 * argc; i++) __atomic_fetch_add(&n, 1, __ATOMIC_SEQ_CST);
  printf("n=%ld\n", n);
  return 0;
}
"""


def run(cmd, code=0, env=None, cwd=None, timeout=120, **kw):
    """Runs cmd; checks the exit status; returns the CompletedProcess."""
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd or WORK,
                       timeout=timeout, **kw)
    check(p.returncode == code, "%s: exit %d, expected %d\nstdout:\n%s\nstderr:\n%s"
          % (" ".join(cmd), p.returncode, code, p.stdout, p.stderr))
    return p


def clean_env(**extra):
    """The environment without the suite's nanoprobe settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NANO_", "RPDT_")) and k not in ("LD_PRELOAD", "PYTHONPATH")}
    env.update(extra)
    return env


def query(trace, sql):
    db = sqlite3.connect(trace)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def build_atomics(compiler="clang-15"):
    """An instrumented program with atomics, built with `nanoprobe cc`."""
    src = os.path.join(WORK, "atomics.c")
    with open(src, "w") as f:
        f.write(ATOMICS_C)
    exe = os.path.join(WORK, "atomics-" + compiler)
    run([NANOPROBE, "cc", "--", compiler, "-O2", "-g", src, "-o", exe])
    return exe


def case_run_default():
    # a new file per run, the application's streams and exit status kept
    for n in (1, 2):
        p = run([NANOPROBE, "run", "--", MEMORY], env=clean_env())
        trace = os.path.join(WORK, "nanoprobe-%d.rpd" % n)
        check(os.path.exists(trace), "run %d: no %s" % (n, trace))
        check(p.stdout == "memory: 4096 threads scaled twice, results checked\n",
              "the application's stdout is its own: %r" % p.stdout)
        check("nanoprobe: trace written to %s" % trace in p.stderr, p.stderr)
        check("ranges and API calls" in p.stderr and "nanoLaunchKernel" in p.stderr,
              "summary: %s" % p.stderr)
        rows = query(trace, "SELECT count(*) FROM api WHERE apiName='nanoLaunchKernel'")
        check(rows == [(2,)], "run %d: 2 launches recorded, got %s" % (n, rows))
        check("rows written by pid" not in p.stderr, "no tracer exit line under run: " + p.stderr)
        check("losses:" not in p.stderr, "nothing lost, no losses line: " + p.stderr)
    # the summary sums each session's losses (rocpd_metadata rows per session)
    db = sqlite3.connect(trace)
    db.executemany("INSERT INTO rocpd_metadata(tag, value) VALUES (?, ?)",
                   [("nano_dropped_records", "5"), ("nano_dropped_records", "2"),
                    ("nano_lost_records", "3")])
    db.commit()
    db.close()
    out = run([RPD, "summary", trace]).stdout
    check("losses: 7 records dropped, 3 lost to write failures, 0 kernel records dropped" in out,
          "losses summed: " + out)
    p = run([NANOPROBE, "run", "-q", "--", "sh", "-c", "echo out; echo err >&2; exit 3"], code=3,
            env=clean_env())
    check(p.stdout == "out\n" and "err\n" in p.stderr, (p.stdout, p.stderr))
    check("trace written to" in p.stderr and "ranges and API calls" not in p.stderr,
          "-q: only the trace's path: " + p.stderr)


def case_run_output():
    trace = os.path.join(WORK, "out.rpd")
    env = clean_env()
    run([NANOPROBE, "run", "-q", "-o", trace, "--", MEMORY], env=env)
    p = run([NANOPROBE, "run", "-o", trace, "--", "sh", "-c", "touch started"], code=2, env=env)
    check("out.rpd exists; --append adds to it, --force replaces it" in p.stderr, p.stderr)
    check(not os.path.exists(os.path.join(WORK, "started")), "refused: the program did not start")
    run([NANOPROBE, "run", "-q", "--append", "-o", trace, "--", MEMORY], env=env)
    check(query(trace, "SELECT count(DISTINCT pid) FROM rocpd_api") == [(2,)], "--append adds")
    run([NANOPROBE, "run", "-q", "--force", "-o", trace, "--", MEMORY], env=env)
    check(query(trace, "SELECT count(DISTINCT pid) FROM rocpd_api") == [(1,)], "--force replaces")
    # --force replaces a regular trace only: never a device, a FIFO or a link
    victim = os.path.join(WORK, "victim")
    with open(victim, "w") as f:
        f.write("precious\n")
    fifo, dev, link, devlink = (os.path.join(WORK, n) for n in ("fifo", "dev", "link", "devlink"))
    os.mkfifo(fifo)
    os.symlink(victim, link)
    os.symlink("/dev/null", devlink)
    refusals = [(fifo, "is a device or FIFO"), (link, "is a symbolic link"),
                (devlink, "is a device or FIFO")]
    try:  # a device of our own where mknod is allowed (root), never /dev/null itself
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        refusals.append((dev, "is a device or FIFO"))
    except PermissionError:
        pass
    for out, why in refusals:
        for mode in ("--force", "--append"):
            p = run([NANOPROBE, "run", mode, "-o", out, "--", "sh", "-c", "touch started"], code=2,
                    env=env)
            check("%s %s" % (out, why) in p.stderr, p.stderr)
            check(not os.path.exists(os.path.join(WORK, "started")), "refused: nothing started")
    check(stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.readlink(link) == victim
          and os.readlink(devlink) == "/dev/null", "the FIFO and the links are kept")
    check(not os.path.exists(dev) or stat.S_ISCHR(os.lstat(dev).st_mode), "the device is kept")
    check(open(victim).read() == "precious\n", "a link's target is never written")
    locked = os.path.join(WORK, "ro")
    os.makedirs(locked, exist_ok=True)
    os.chmod(locked, 0o500)
    try:
        if os.access(locked, os.W_OK):  # root writes anywhere: use a path that cannot exist
            bad = "/proc/nanoprobe-no/such.rpd"
        else:
            bad = os.path.join(locked, "t.rpd")
        p = run([NANOPROBE, "run", "-o", bad, "--", "sh", "-c", "touch started"], code=2, env=env)
        check("cannot write the trace file %s" % bad in p.stderr, p.stderr)
        check(not os.path.exists(os.path.join(WORK, "started")), "unwritable: nothing started")
    finally:
        os.chmod(locked, 0o700)


def case_run_pid_template():
    """-o with %p: each process records into its own file named after its pid
    (the tracer expands it); the summary names the program's own file, and no
    file named with a literal %p is left (issue 37.5)."""
    p = run([NANOPROBE, "run", "-o", os.path.join(WORK, "t-%p.rpd"), "--", MEMORY], env=clean_env())
    made = sorted(f for f in os.listdir(WORK) if f.startswith("t-"))
    check(len(made) == 1 and re.fullmatch(r"t-\d+\.rpd", made[0]), "one file per pid: %s" % made)
    trace = os.path.join(WORK, made[0])
    check("nanoprobe: trace written to %s" % trace in p.stderr and "nothing recorded" not in p.stderr,
          "the summary names %s: %s" % (trace, p.stderr))
    pid = int(re.search(r"t-(\d+)", made[0]).group(1))
    check(query(trace, "SELECT DISTINCT pid FROM rocpd_api") == [(pid,)], "the file of pid %d" % pid)
    p = run([NANOPROBE, "run", "-o", "/nonexistent/dir/t-%p.rpd", "--", "sh", "-c", "touch started"],
            code=2, env=clean_env())
    check("its folder does not exist" in p.stderr and not os.path.exists(os.path.join(WORK, "started")),
          p.stderr)


def case_run_missing():
    p = run([NANOPROBE, "run", "--", "./no-such-app"], code=127, env=clean_env())
    check("./no-such-app: no such program" in p.stderr, p.stderr)
    p = run([NANOPROBE, "run", "--", "no-such-app-on-path"], code=127, env=clean_env())
    check("no-such-app-on-path: no such program" in p.stderr, p.stderr)
    text = os.path.join(WORK, "not-exec")
    with open(text, "w") as f:
        f.write("#!/bin/sh\n")
    os.chmod(text, 0o644)
    p = run([NANOPROBE, "run", "--", text], code=127, env=clean_env())
    check("not-exec: not executable" in p.stderr, p.stderr)
    check(not [f for f in os.listdir(WORK) if f.startswith("nanoprobe-")],
          "no trace file for a program that does not exist")
    for args, what in ((["-d", "sometimes"], "--dispatches 'sometimes'"),
                       (["-t", "csv"], "--format 'csv': expected text or json"),
                       (["-c", "/nonexistent-cache"], "--cache-location /nonexistent-cache: No such file"),
                       (["--append"], "--append needs -o FILE"),
                       (["--bogus"], "unknown option '--bogus'"),
                       ([], "no program to run")):
        p = run([NANOPROBE, "run", *args] + (["--", "true"] if args else []), code=2,
                env=clean_env())
        check(what in p.stderr, "%s: %s" % (args, p.stderr))


def case_run_signals():
    # the application's death by a signal is ours too
    p = subprocess.run([NANOPROBE, "run", "-q", "--", "sh", "-c", "kill -SEGV $$"],
                       capture_output=True, text=True, env=clean_env(), cwd=WORK, timeout=60)
    check(p.returncode == -signal.SIGSEGV, "died of SIGSEGV: %d %s" % (p.returncode, p.stderr))
    check("died of signal %d" % signal.SIGSEGV in p.stderr, p.stderr)
    # SIGTERM sent to nanoprobe reaches the application, which can handle it
    script = "trap 'echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.05; done"
    proc = subprocess.Popen([NANOPROBE, "run", "-q", "--", "sh", "-c", script], cwd=WORK,
                            env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    check(proc.stdout.readline() == "ready\n", "the application started")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    check(proc.returncode == 7 and "got-term" in out, "SIGTERM passed on: %d %r %r"
          % (proc.returncode, out, err))


def case_run_fork_exec():
    trace = os.path.join(WORK, "fork.rpd")
    p = run([NANOPROBE, "run", "-o", trace, "--", "sh", "-c",
             "cd / && %s >/dev/null && %s >/dev/null" % (MEMORY, MEMORY)], env=clean_env())
    pids = query(trace, "SELECT count(DISTINCT pid) FROM api WHERE apiName='nanoLaunchKernel'")
    check(pids == [(2,)], "both exec'ed programs (in another folder) append: %s" % pids)
    check(re.search(r"\d+ processes", p.stderr), p.stderr)


def case_run_nvtx():
    # NVTX 3 ranges of a program never linked with nanoprobe
    app = os.path.join(BUILD, "tests/rpd/nvtx_app")
    check(os.path.exists(app), "nvtx_app was not built (no nvtx3 headers)")
    trace = os.path.join(WORK, "nvtx.rpd")
    p = run([NANOPROBE, "run", "-o", trace, "--", app], env=clean_env())
    rows = query(trace, "SELECT count(*) FROM api WHERE args IN ('nvtx-outer', 'nvtx-mark')")
    check(rows == [(2,)], "NVTX range and mark recorded: %s\n%s" % (rows, p.stderr))
    check("nvtx-outer" in p.stderr, "the summary names the NVTX range: " + p.stderr)


def case_run_instrumented():
    trace = os.path.join(WORK, "mem.rpd")
    p = run([NANOPROBE, "run", "-o", trace, "-e", "-k", "scale_strided", "-d", "first",
             "-a", "MemoryAnalysis", "-t", "json", "-l", os.path.join(WORK, "reports.json"),
             "--no-cupti", "--", MEMORY], env=clean_env())
    for var in ("NANO_INSTRUMENT=1", "NANO_KERNELS=scale_strided", "NANO_DISPATCHES=first",
                "NANO_ANALYZERS=MemoryAnalysis", "NANO_ANALYZER_FORMAT=json", "NANO_CUPTI=0"):
        check("nanoprobe: " + var in p.stderr, "-e shows %s: %s" % (var, p.stderr))
    kernels = query(trace, "SELECT kernel_name FROM nano_dispatch")
    check(kernels == [("scale_strided",)], "only the selected kernel: %s" % kernels)
    check(re.search(r"scale_strided\s+\S+memory\.c:34\s+load\s+1024\s+256\s+4\.00", p.stderr),
          "the summary names the strided load: " + p.stderr)
    reports = open(os.path.join(WORK, "reports.json")).read()
    check('"analyzer"' in reports or '"MemoryAnalysis"' in reports, "-l -t json: " + reports[:200])
    check("no kernel was instrumented" not in p.stderr, "no hint when kernels ran instrumented")
    # never a silent no-op: bad -a and -k stop the run before the program starts
    for opt, why in ((["-a", "NoSuchAnalyzer"], "--analyzers: unknown analyzer 'NoSuchAnalyzer'"),
                     (["-a", "/nonexistent/libmine.so"], "analyzer plugin /nonexistent/libmine.so does not load"),
                     (["-k", "("], "--kernels '(': not a regular expression")):
        p = run([NANOPROBE, "run", "-f", "-o", trace] + opt + ["--", "sh", "-c", "touch started"],
                code=2, env=clean_env())
        check(why in p.stderr, "%s: %s" % (opt, p.stderr))
        check(not os.path.exists(os.path.join(WORK, "started")), "%s: the program did not start" % opt)
    # a program whose launching file was built without the plugin: said
    plain = os.path.join(BUILD, "tests/dispatch/app_plain")
    p = run([NANOPROBE, "run", "-f", "-o", trace, "-a", "MemoryAnalysis", "--", plain, "copy"],
            env=clean_env())
    check("no kernel was instrumented: a kernel runs instrumented only where the file that "
          "launches it was built with the plugin" in p.stderr, "uninstrumented run said: " + p.stderr)
    # NANO_ANALYZERS without NANO_INSTRUMENT: said by the runtime at the first launch
    p = run([MEMORY], env=clean_env(NANO_ANALYZERS="MemoryAnalysis", LD_PRELOAD=LIBRPD,
                                    RPDT_FILENAME=os.path.join(WORK, "noinst.rpd")))
    check("NANO_ANALYZERS is set but NANO_INSTRUMENT is not: kernels run uninstrumented" in p.stderr,
          "analyzers without instrumentation said: " + p.stderr)


def case_run_atomics():
    exe = build_atomics()
    p = run([NANOPROBE, "run", "--atomics", "--", exe], env=clean_env())
    check(re.search(r"__atomic_fetch_add\s+100\b", p.stderr), "atomics per kind: " + p.stderr)
    check(": 1 process, " in p.stderr, "a process with only atomics counts: " + p.stderr)
    check("busiest atomic sites" in p.stderr and "atomics.c:6" in p.stderr, p.stderr)
    info = run([RPD, "info", os.path.join(WORK, "nanoprobe-1.rpd")]).stdout
    check(re.search(r"host atomics per kind:\n.*\n.*\n__atomic_fetch_add\s+100\n", info),
          "rpd info shows the totals per kind: " + info)
    p = run([NANOPROBE, "run", "--atomics", "--", MEMORY], env=clean_env())
    check("atomics: none counted" in p.stderr, p.stderr)


def case_run_python():
    script = os.path.join(WORK, "prog.py")
    with open(script, "w") as f:
        f.write("def leaf(n):\n    return n + 1\n\nfor i in range(50):\n    leaf(i)\n")
    trace = os.path.join(WORK, "py.rpd")
    python = shutil.which("python3")
    p = run([NANOPROBE, "run", "--python", "-o", trace, "--", python, script], env=clean_env())
    rows = query(trace, "SELECT count(*) FROM api WHERE domain='python' AND apiName LIKE '%leaf'")
    check(rows == [(50,)], "every Python call recorded: %s\n%s" % (rows, p.stderr))


def case_merge_nano():
    """`rpd merge` and `rpd trim` keep nanoprobe's own tables (host atomics,
    short-call sums, instrumented dispatches and analyses): they used to
    drop them. Each input's sessions are shifted past the output's, so ids
    stay apart, and pids get the node stride like the calls'."""
    exe = build_atomics()
    a, b, c = (os.path.join(WORK, n) for n in ("m_atomics.rpd", "m_mem.rpd", "m_py.rpd"))
    run([NANOPROBE, "run", "-q", "--atomics", "-o", a, "--", exe], env=clean_env())
    run([NANOPROBE, "run", "-q", "-k", "scale_strided", "-d", "first", "-a", "MemoryAnalysis",
         "-o", b, "--", MEMORY], env=clean_env())
    script = os.path.join(WORK, "short.py")
    with open(script, "w") as f:
        f.write("def leaf(n):\n    return n + 1\n\nfor i in range(300):\n    leaf(i)\n")
    run([NANOPROBE, "run", "-q", "--python", "--min-duration", "1ms", "-o", c, "--",
         shutil.which("python3"), script], env=clean_env())
    out = os.path.join(WORK, "m_all.rpd")
    run([RPD, "merge", out, a, b, c, a])
    stride = int(query(out, "SELECT value FROM rocpd_metadata WHERE tag='pid_stride'")[0][0])
    sites = query(a, "SELECT S.pid, S.kind, S.file, S.line, C.count FROM nano_atomic_site S "
                     "JOIN nano_atomic_count C ON C.site_id = S.id ORDER BY S.id")
    merged = query(out, "SELECT S.pid, S.kind, S.file, S.line, C.count FROM nano_atomic_site S "
                        "JOIN nano_atomic_count C ON C.site_id = S.id ORDER BY S.id")
    check(sites and merged == sites + [(p + 3 * stride,) + r[1:] for (p, *_), r in zip(sites, sites)],
          "atomic sites of inputs 0 and 3, pids of node 3 shifted:\n%s\n%s" % (sites, merged))
    check(query(out, "SELECT count FROM nano_atomic_totals") == [(200,)], "totals add up")
    check(len(query(out, "SELECT DISTINCT session FROM nano_atomic_site")) == 2, "two sessions")
    samples = query(a, "SELECT count(*) FROM nano_atomic_sample")[0][0]
    check(samples > 0 and query(out, "SELECT count(*) FROM nano_atomic_sample")[0][0] == 2 * samples,
          "samples of both copies")
    disp = query(b, "SELECT pid, kernel_name, records FROM nano_dispatch")
    check(disp and query(out, "SELECT pid, kernel_name, records FROM nano_dispatch") ==
          [(p + stride, k, r) for p, k, r in disp], "dispatches of node 1: %s" % disp)
    check(query(out, "SELECT kernel, line, lines_used, lines_needed FROM nano_memory") ==
          query(b, "SELECT kernel, line, lines_used, lines_needed FROM nano_memory"), "analyses")
    launch = query(out, "SELECT A.apiName FROM nano_dispatch D JOIN api A ON A.id = D.api_id")
    check(len(launch) == len(disp), "each dispatch still points at its launch call: %s" % launch)
    calls = query(c, "SELECT name, calls, total_ns FROM nano_calls WHERE name LIKE '%leaf'")
    check(calls and calls[0][1] == 300 and
          query(out, "SELECT name, calls, total_ns FROM nano_calls WHERE name LIKE '%leaf'") == calls,
          "short-call sums with their names: %s" % calls)
    summary = run([RPD, "summary", out]).stdout
    check("atomics per kind" in summary and "instrumented kernels" in summary, summary)
    # trim: the window's dispatches, the atomics totals of the whole run
    # (the launch call starts before its dispatch, whose time is its blocks')
    (launch, start), = query(b, "SELECT A.start, D.start FROM nano_dispatch D JOIN api A ON "
                                "A.id = D.api_id")
    t = os.path.join(WORK, "m_trim.rpd")
    run([RPD, "trim", b, "--start", str(launch), "--end", str(start), "-o", t])
    check(query(t, "SELECT D.kernel_name, A.apiName FROM nano_dispatch D JOIN api A ON A.id = "
                   "D.api_id") == query(b, "SELECT D.kernel_name, A.apiName FROM nano_dispatch D "
                                           "JOIN api A ON A.id = D.api_id") and
          query(t, "SELECT count(*) FROM nano_memory")[0][0] > 0,
          "trim keeps the window's dispatch and its launch")
    t2 = os.path.join(WORK, "m_trim2.rpd")
    run([RPD, "trim", b, "--start", str(launch - 2), "--end", str(launch - 1), "-o", t2])
    check(query(t2, "SELECT count(*) FROM nano_dispatch") == [(0,)], "nor one outside it")
    t3 = os.path.join(WORK, "m_trim3.rpd")
    run([RPD, "trim", out, "--start", "0%", "--end", "100%", "-o", t3])
    check(query(t3, "SELECT count FROM nano_atomic_totals") == [(200,)], "trim keeps the totals")
    # a recording appended to a merged trace keeps all its rows (its session's
    # ids used to clash with the copied rows': UNIQUE constraint failures)
    appended = os.path.join(WORK, "m_appended.rpd")
    shutil.copy(out, appended)
    before = query(appended, "SELECT count(*) FROM nano_dispatch")[0][0]
    for _ in range(2):
        p = run([NANOPROBE, "run", "-q", "--append", "-k", "scale_strided", "-d", "first", "-a",
                 "MemoryAnalysis", "-o", appended, "--", MEMORY], env=clean_env())
        check("UNIQUE" not in p.stderr and "not written" not in p.stderr,
              "appending to a merged trace: %s" % p.stderr)
    check(query(appended, "SELECT count(*) FROM nano_dispatch")[0][0] == before + 2,
          "both appended dispatches are there")
    # an input whose recording dropped and lost records and whose GPU
    # kernels ran uninstrumented: merged and trimmed traces still say so
    # (the tools sum these counts; rpd info names the reason)
    lossy = os.path.join(WORK, "m_lossy.rpd")
    shutil.copy(b, lossy)
    why = "the CUDA driver lacks cuInit (a driver older than CUDA 11.1?); CUDA kernels run uninstrumented"
    with sqlite3.connect(lossy) as db:
        db.execute("INSERT INTO rocpd_metadata(tag, value) VALUES ('nano_dropped_records', '7'), "
                   "('nano_lost_records', '3'), ('nano_gpu_unavailable', ?)", (why,))
    for merged_or_trimmed, argv in (("m_lossy_merged.rpd", [RPD, "merge", None, lossy, c, lossy]),
                                    ("m_lossy_trim.rpd", [RPD, "trim", lossy, "-o", None])):
        path = os.path.join(WORK, merged_or_trimmed)
        run([path if x is None else x for x in argv])
        copies = 2 if "merge" in argv else 1
        counts = query(path, "SELECT tag, sum(CAST(value AS integer)) FROM rocpd_metadata WHERE tag "
                             "IN ('nano_dropped_records', 'nano_lost_records') GROUP BY tag ORDER BY tag")
        check(counts == [("nano_dropped_records", 7 * copies), ("nano_lost_records", 3 * copies)],
              "%s carries the inputs' lost records: %s" % (merged_or_trimmed, counts))
        info = run([RPD, "info", path]).stdout.splitlines()
        check(info.count("GPU back end:    " + why) == 1,
              "%s: rpd info names why GPU kernels ran uninstrumented, once: %s" % (merged_or_trimmed, info))


def case_plugin_mismatch():
    src = os.path.join(WORK, "empty.c")
    open(src, "w").write("int main(void) { return 0; }\n")
    for compiler, plugin, other, match in (("clang-14", PLUGIN15, 14, None),
                                           ("clang-22", PLUGIN15, 22, PLUGIN22),
                                           ("clang-15", PLUGIN22, 15, PLUGIN15)):
        if not shutil.which(compiler) or not os.path.exists(plugin):
            fail("%s or %s missing" % (compiler, plugin))
        p = run([compiler, "-O2", "-fpass-plugin=" + plugin, "-c", src, "-o", src + ".o"],
                code=1)
        mine = 15 if plugin == PLUGIN15 else 22
        want = "is built for LLVM %d, but this compiler is LLVM %d" % (mine, other)
        check(want in p.stderr, "%s: %s" % (compiler, p.stderr))
        check("Stack dump" not in p.stderr and "Segmentation" not in p.stderr, p.stderr)
        if match:
            check("use " + os.path.realpath(match) in p.stderr or "use " + match in p.stderr,
                  "names the matching plugin: " + p.stderr)
    run(["clang-22", "-O2", "-fpass-plugin=" + PLUGIN22, "-c", src, "-o", src + ".o"])


def case_cc():
    for compiler in ("clang-15", "clang-22"):
        exe = build_atomics(compiler)
        out = os.path.join(WORK, compiler + ".json")
        run([exe], env=clean_env(LD_PRELOAD=os.path.join(BUILD, "runtime/tracker/libnano_tracker.so"),
                                 NANO_TRACKER_FORMAT="json", NANO_TRACKER_OUTPUT=out))
        text = open(out).read()
        check(re.search(r'"__atomic_fetch_add":\s*100\b', text),
              "%s: built with the plugin, atomics counted: %s" % (compiler, text))
        p = run([NANOPROBE, "cflags", "--compiler", compiler])
        plugin = PLUGIN15 if compiler == "clang-15" else PLUGIN22
        check(p.stdout.startswith("-fpass-plugin=" + os.path.realpath(plugin)), p.stdout)
        check(" -I" in p.stdout, "cflags has the header folders: " + p.stdout)
    p = run([NANOPROBE, "cc", "--", "gcc", "-c", "x.c"], code=2)
    check("'gcc' is not a clang" in p.stderr and "prelude" in p.stderr, p.stderr)
    p = run([NANOPROBE, "cc", "--", "clang-14", "-c", "x.c"], code=2)
    check("'clang-14' is LLVM 14; nanoprobe has plugins for LLVM 15, 22 only" in p.stderr,
          p.stderr)
    p = run([NANOPROBE, "cc", "--", "no-such-cc", "-c", "x.c"], code=127)
    check("compiler 'no-such-cc' not found" in p.stderr, p.stderr)


def case_version():
    for tool, name in ((NANOPROBE, "nanoprobe"), (RPD, "rpd"),
                       (os.path.join(BUILD, "tools/kerneldb/kerneldb"), "kerneldb"),
                       (os.path.join(BUILD, "tools/rpdremote/rpdremote"), "rpdremote")):
        p = run([tool, "--version"])
        check(p.stdout.strip() in ("%s %s" % (name, VERSION), "%s (nanoprobe) %s" % (name, VERSION)),
              "%s --version: %r" % (name, p.stdout))
    p = run([sys.executable, "-m", "nanoprobe", "--version"],
            env=dict(clean_env(), PYTHONPATH=os.path.join(BUILD, "python")))
    check(p.stdout.strip() == "nanoprobe (Python) %s" % VERSION, "python: %r" % p.stdout)


def case_settings_bool():
    env = clean_env(LD_PRELOAD=LIBRPD)
    for value, recorded in (("YES", True), ("On", True), ("bogus", False), ("0", False)):
        trace = os.path.join(WORK, "b-%s.rpd" % value)
        p = run([MEMORY], env=dict(env, RPDT_FILENAME=trace, RPDT_AUTOSTART=value))
        made = os.path.exists(trace) and query(trace, "SELECT count(*) FROM rocpd_api")[0][0] > 0
        check(made == recorded, "RPDT_AUTOSTART=%s: recorded %s\n%s" % (value, made, p.stderr))
        if value == "bogus":
            check("RPDT_AUTOSTART=bogus: expected 1/0, on/off, true/false or yes/no; taken as off"
                  in p.stderr, p.stderr)
    # the tracer alone says where its rows went, once per process
    trace = os.path.join(WORK, "alone.rpd")
    p = run([MEMORY], env=dict(env, RPDT_FILENAME=trace))
    lines = [l for l in p.stderr.splitlines() if "rows written by pid" in l]
    check(len(lines) == 1 and trace in lines[0], "one exit line naming the file: " + p.stderr)


def case_install():
    prefix = os.path.join(WORK, "prefix")
    shutil.rmtree(prefix, ignore_errors=True)
    run(["cmake", "--install", BUILD, "--prefix", prefix])
    # nothing of the build tree in the environment
    path = ":".join(d for d in os.environ.get("PATH", "").split(":") if BUILD not in d)
    env = clean_env(PATH=path)
    env.pop("LD_LIBRARY_PATH", None)
    for tool in ("nanoprobe", "rpd", "kerneldb", "rpdremote"):
        run([os.path.join(prefix, "bin", tool), "--version"], env=env)
    outside = os.path.join(SRC, "tests/frontdoor/outside")
    pc_env = dict(env, PKG_CONFIG_PATH=os.path.join(prefix, "lib/pkgconfig"))

    def pkg(*args):
        return run(["pkg-config", *args], env=pc_env).stdout.split()

    plugin = pkg("--variable=plugin_llvm22", "nanoprobe-rpd")[0]
    check(os.path.exists(plugin) and plugin.startswith(prefix), "pkg-config's plugin: " + plugin)
    exe_pc = os.path.join(WORK, "app-pc")
    # pkg-config's Libs carry the rpath: the program starts without LD_LIBRARY_PATH
    run(["clang-22", "-O2", "-g", "-fpass-plugin=" + plugin, *pkg("--cflags", "nanoprobe-rpd"),
         os.path.join(outside, "app.c"), "-o", exe_pc, *pkg("--libs", "nanoprobe-rpd")], env=pc_env)
    check(os.path.exists(os.path.join(prefix, "share/doc/nanoprobe/prelude.md")),
          "prelude/README.md, which messages name, is installed")
    cm_build = os.path.join(WORK, "cmake-build")
    shutil.rmtree(cm_build, ignore_errors=True)
    run(["cmake", "-S", outside, "-B", cm_build, "-DCMAKE_C_COMPILER=clang-15",
         "-DCMAKE_PREFIX_PATH=" + prefix], env=env)
    run(["cmake", "--build", cm_build], env=env)
    for exe in (exe_pc, os.path.join(cm_build, "app")):
        check(run([exe], env=env).stdout == "outside: 1000 adds, 256 threads\n", exe)
        trace = exe + ".rpd"
        p = run([os.path.join(prefix, "bin/nanoprobe"), "run", "-a", "MemoryAnalysis", "-o",
                 trace, "--", exe], env=env)
        check(query(trace, "SELECT count(*) FROM api WHERE args='add'") == [(1000,)],
              "%s: the zones: %s" % (exe, p.stderr))
        check(query(trace, "SELECT count FROM nano_atomic_totals") == [(1000,)],
              "%s: the atomics" % exe)
        check(query(trace, "SELECT kernel_name FROM nano_dispatch") == [("twice",)],
              "%s: the instrumented kernel" % exe)
        # the preloaded library of the prefix loads on its own
        run([exe], env=dict(env, LD_PRELOAD=os.path.join(prefix, "lib/libnano_rpd.so"),
                            RPDT_FILENAME=exe + ".2.rpd"))
    p = run([os.path.join(prefix, "bin/nanoprobe"), "cflags", "--compiler", "clang-15"], env=env)
    check(p.stdout.startswith("-fpass-plugin=" + os.path.join(prefix, "lib/nanoprobe/llvm-15/")),
          "cflags from the prefix: " + p.stdout)
    script = os.path.join(WORK, "prog.py")
    with open(script, "w") as f:
        f.write("def leaf():\n    pass\n\nleaf()\n")
    trace = os.path.join(WORK, "py-installed.rpd")
    run([os.path.join(prefix, "bin/nanoprobe"), "run", "-q", "--python", "-o", trace, "--",
         sys.executable, script], env=env)
    check(query(trace, "SELECT count(*) FROM api WHERE apiName LIKE '%leaf'") == [(1,)],
          "--python from the prefix")


def case_readme_tour():
    """The README's tour, run as written (from a folder that looks like the
    repository root: build/ and examples/), so it cannot drift."""
    text = open(os.path.join(SRC, "README.md")).read()
    m = re.search(r"## A five-minute tour\n.*?```sh\n(.*?)```", text, re.S)
    check(m, "README.md has a tour with a sh block")
    os.symlink(BUILD, os.path.join(WORK, "build"))
    os.symlink(os.path.join(SRC, "examples"), os.path.join(WORK, "examples"))
    p = run(["bash", "-euo", "pipefail", "-c", m.group(1)], env=clean_env(), timeout=300)
    out = p.stdout + p.stderr
    check("NANO TRACKER {" in out, "step 2 counts atomics: " + out[-2000:])
    check(re.search(r"__atomic_compare_exchange\s+\d+", out), "step 3 sums atomics up")
    check(re.search(r"scale_strided\s+\S+memory\.c:34\s+load\s+1024\s+256\s+4\.00", out),
          "steps 4/5 name the strided load")
    for f in ("jobs.json", "kernels.html", "fib.rpd"):
        check(os.path.getsize(os.path.join(WORK, f)) > 0, f + " written")
    calls = query(os.path.join(WORK, "fib.rpd"), "SELECT count(*) FROM api WHERE apiName LIKE '%fib'")
    check(calls == [(1973,)], "step 6: fib(15) makes 1973 calls, got %s" % calls)


CASES = {"merge_nano": case_merge_nano, "readme_tour": case_readme_tour, "run_default": case_run_default, "run_output": case_run_output,
         "run_missing": case_run_missing, "run_pid_template": case_run_pid_template, "run_signals": case_run_signals,
         "run_fork_exec": case_run_fork_exec, "run_nvtx": case_run_nvtx, "run_instrumented": case_run_instrumented,
         "run_atomics": case_run_atomics, "run_python": case_run_python,
         "plugin_mismatch": case_plugin_mismatch, "cc": case_cc, "version": case_version,
         "settings_bool": case_settings_bool, "install": case_install}

if __name__ == "__main__":
    if sys.argv[1:] == ["--list"]:
        print("\n".join(CASES))
        sys.exit(0)
    WORK = os.path.join(WORK, CASE)
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    CASES[CASE]()
    print("PASS " + CASE)
