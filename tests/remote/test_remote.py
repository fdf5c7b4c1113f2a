#!/usr/bin/env python3
"""Remote start/stop of the tracer in a running process (rpdremote +
libnano_remote.so + libnano_rpd.so).

usage: test_remote.py RPDREMOTE TARGET LIBNANO_REMOTE CASE WORKDIR
"""
import os
import shutil
import sqlite3
import signal
import socket
import subprocess
import sys
import time

RR, TARGET, LIB, CASE, WORK = sys.argv[1:6] if sys.argv[1:] != ["--list"] else (None,) * 5
OTHER_UID, THIRD_UID = 12345, 23456


def setpriv(uid):
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]


def rr(*args, code=0, uid=None):
    """Runs rpdremote; asserts the exit code; returns stdout + stderr."""
    cmd = (setpriv(uid) if uid is not None else []) + [RR, *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert p.returncode == code, (args, p.returncode, p.stdout, p.stderr)
    return p.stdout + p.stderr


class Target:
    """The test program with the tracer and libnano_remote.so loaded."""

    def __init__(self, name, autostart="0", extra=(), uid=None, env=None):
        self.stop = os.path.join(WORK, name + ".stop")
        self.trace = os.path.join(WORK, name + ".rpd")
        for p in (self.stop, self.trace):
            if os.path.exists(p):
                os.unlink(p)
        e = dict(os.environ, RPDT_FILENAME=self.trace, RPDT_AUTOSTART=autostart)
        e.pop("NANO_REMOTE_DIR", None)
        e.pop("LD_PRELOAD", None)
        e.update(env or {})
        # The preload goes below setpriv: a tool that changes credentials per
        # thread (setpriv's capset, then setresuid) aborts in glibc when the
        # process has any other thread.
        cmd = (setpriv(uid) if uid is not None else []) + ["env", "LD_PRELOAD=" + LIB, TARGET,
                                                           self.stop, *extra]
        self.proc = subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, text=True)
        RUNNING.append(self)
        self.pids = {}
        for _ in range(2 if "fork" in extra else 1):
            word, pid = self.proc.stdout.readline().split()
            self.pids[word] = pid
        self.pid = self.pids["ready"]
        time.sleep(0.05)

    def finish(self):
        open(self.stop, "w").close()
        assert self.proc.wait(timeout=30) == 0
        RUNNING.remove(self)


RUNNING = []  # targets to end when a check fails


def rows(trace, pid=None):
    """(start, end, text) of the recorded user ranges."""
    db = sqlite3.connect(trace)
    q = "SELECT start, end, args, pid FROM api WHERE domain='UserMarker'"
    r = [x for x in db.execute(q) if pid is None or x[3] == int(pid)]
    db.close()
    return r


def case_toggle():
    t = Target("toggle")
    out = rr("status", t.pid)
    # With RPDT_AUTOSTART=0 the tracer chooses the file at the first start.
    assert f"process {t.pid}: recording off, start count 0, file " in out, out
    time.sleep(0.1)
    t1 = time.monotonic_ns()
    out = rr("start", t.pid)
    assert out.strip() == f"process {t.pid}: recording on (start count 1)", out
    time.sleep(0.25)
    out = rr("status", t.pid)
    assert f"recording on, start count 1, file {t.trace}" in out, out
    out = rr("flush", t.pid)
    assert out.strip() == f"process {t.pid}: flushed", out
    flushed = len(rows(t.trace))
    assert flushed > 10, flushed  # visible while the process runs
    time.sleep(0.1)
    out = rr("stop", t.pid)
    t2 = time.monotonic_ns()
    assert out.strip() == f"process {t.pid}: recording off (start count 0), flushed", out
    at_stop = rows(t.trace)
    assert len(at_stop) > flushed, (len(at_stop), flushed)
    time.sleep(0.2)
    out = rr("stop", t.pid, code=1)
    assert f"process {t.pid}: stop refused, the start count is already 0" in out, out
    t.finish()
    final = rows(t.trace)
    # Rows only from the started window, none after the stop.
    assert len(final) == len(at_stop), (len(final), len(at_stop))
    assert all(t1 <= s <= e <= t2 for s, e, _, _ in final), [(s - t1, e - t2) for s, e, _, _ in final
                                                             if not t1 <= s <= e <= t2][:5]
    ticks = sorted(int(a.split()[1]) for _, _, a, _ in final)
    assert ticks == list(range(ticks[0], ticks[0] + len(ticks))), "ticks of the window are contiguous"
    assert ticks[0] > 0, "nothing before the start"
    # a second window appends
    t = Target("toggle")
    rr("start", t.pid)
    time.sleep(0.1)
    rr("stop", t.pid)
    t.finish()


def case_autostart():
    t = Target("auto", autostart="1")
    assert "recording on, start count 1" in rr("status", t.pid)
    assert "recording off (start count 0), flushed" in rr("stop", t.pid)  # drops autostart's reference
    n = len(rows(t.trace))
    assert n > 0
    time.sleep(0.1)
    assert "recording on (start count 1)" in rr("start", t.pid)
    time.sleep(0.2)  # a window with ticks in it
    assert "recording on (start count 2)" in rr("start", t.pid)
    assert "recording still on (start count 1), flushed" in rr("stop", t.pid)
    assert "recording off (start count 0), flushed" in rr("stop", t.pid)
    assert "stop refused" in rr("stop", t.pid, code=1)
    t.finish()
    assert len(rows(t.trace)) > n


def wait_stopped(pid):
    """Waits (up to 10 s) until process pid is stopped, as /proc/PID/stat
    says, after a SIGSTOP."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "T":
                return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} not stopped 10 s after SIGSTOP")


def case_errors():
    # a pid that does not exist
    p = subprocess.Popen(["true"])
    p.wait()
    out = rr("status", str(p.pid), code=3)
    assert f"process {p.pid}: no such process" in out, out
    # a live process without nanoprobe
    s = subprocess.Popen(["sleep", "10"])
    try:
        out = rr("start", str(s.pid), code=4)
        assert f"process {s.pid} is not nanoprobe-enabled" in out, out
    finally:
        s.kill()
        s.wait()
    # a stopped process cannot answer: said at once, not waited on
    t = Target("stopped")
    os.kill(int(t.pid), signal.SIGSTOP)
    wait_stopped(int(t.pid))  # the signal is delivered when the kernel gets to it
    try:
        start = time.monotonic()
        out = rr("status", t.pid, code=1)
        assert f"process {t.pid} is stopped (by a signal)" in out and time.monotonic() - start < 10, out
    finally:
        os.kill(int(t.pid), signal.SIGCONT)
    rr("status", t.pid)  # running again: it answers (exit 0)
    t.finish()
    # stopped after rpdremote looked and sent its request (a socket of the
    # test's that never answers stands in for the process's): said within a
    # second, not after the 120 s bound
    s = subprocess.Popen(["sleep", "30"])
    sock = os.path.join(WORK, "silent.sock")
    if os.path.exists(sock):
        os.unlink(sock)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock)
    listener.listen(1)
    try:
        start = time.monotonic()
        rp = subprocess.Popen([RR, "status", "--socket", sock, str(s.pid)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        conn, _ = listener.accept()  # rpdremote has looked at the process and connected
        os.kill(s.pid, signal.SIGSTOP)
        out = rp.communicate(timeout=60)[0]
        assert rp.returncode == 1 and f"process {s.pid} is stopped (by a signal)" in out \
            and time.monotonic() - start < 10, (rp.returncode, out, time.monotonic() - start)
        conn.close()
    finally:
        listener.close()
        s.kill()
        s.wait()
    # loaded but told not to listen
    t = Target("inert", env={"NANO_REMOTE": "0"})
    assert "not nanoprobe-enabled" in rr("status", t.pid, code=4)
    t.finish()
    # bad usage
    for args in [(), ("start",), ("start", "abc"), ("jump", "1"), ("start", "1", "2"), ("--bogus",),
                 ("status", "-5")]:
        rr(*args, code=2)
    assert "usage: rpdremote" in rr("--help")
    # the socket is removed at exit; a stale one of a dead process is cleaned
    t = Target("clean")
    d = f"/tmp/nanoprobe-{os.geteuid()}" if not os.path.isdir(f"/run/user/{os.geteuid()}") \
        else f"/run/user/{os.geteuid()}/nanoprobe"
    sock = os.path.join(d, t.pid + ".sock")
    assert os.path.exists(sock)
    stale = os.path.join(d, f"{p.pid}.sock")
    open(stale, "w").close()
    t.finish()
    assert not os.path.exists(sock)
    t = Target("clean")
    assert not os.path.exists(stale), "a new process removes the sockets of dead ones"
    assert f"{t.pid}\n" in rr("list")
    t.finish()


def case_fork():
    t = Target("fork", extra=("fork",))
    child = t.pids["child"]
    assert "recording off, start count 0" in rr("status", child)
    rr("start", child)
    time.sleep(0.2)
    rr("stop", child)
    t.finish()
    r = rows(t.trace)
    assert r and all(x[3] == int(child) for x in r), "only the child recorded"


def case_preload():
    """A program that knows nothing of nanoprobe: preloading libnano_remote.so
    alone brings the tracer, and rpdremote controls it."""
    trace = os.path.join(WORK, "preload.rpd")
    e = dict(os.environ, RPDT_FILENAME=trace, RPDT_AUTOSTART="0")
    e.pop("NANO_REMOTE_DIR", None)
    p = subprocess.Popen(["env", "LD_PRELOAD=" + LIB, "sleep", "20"], env=e)
    try:
        pid = str(p.pid)
        for _ in range(100):  # until the control socket is up
            if subprocess.run([RR, "status", pid], capture_output=True).returncode == 0:
                break
            time.sleep(0.02)
        assert "recording off, start count 0" in rr("status", pid)
        assert "recording on (start count 1)" in rr("start", pid)
        assert f"file {trace}" in rr("status", pid)
        assert "recording off (start count 0), flushed" in rr("stop", pid)
        db = sqlite3.connect(trace)
        meta = dict(db.execute("SELECT tag, value FROM rocpd_metadata WHERE tag='schema_version'"))
        db.close()
        assert meta == {"schema_version": "3"}, meta
    finally:
        p.kill()
        p.wait()


def case_users():
    if os.geteuid() != 0:
        print("remote users: needs root to run processes as other users")
        sys.exit(77)
    os.chmod(WORK, 0o777)
    t = Target("users", uid=OTHER_UID)
    # another user cannot reach the socket at all
    out = rr("status", t.pid, uid=THIRD_UID, code=5)
    assert f"process {t.pid}: permission denied" in out, out
    # the owner and root can
    assert "recording off, start count 0" in rr("status", t.pid, uid=OTHER_UID)
    assert "recording on (start count 1)" in rr("start", t.pid)
    # the peer check itself: a link to the socket with open permissions lets
    # the other user connect; the process still refuses by SO_PEERCRED
    pub = os.path.join(WORK, "pub")
    shutil.rmtree(pub, ignore_errors=True)
    os.mkdir(pub)
    os.chmod(pub, 0o755)
    link = os.path.join(pub, "x.sock")
    os.link(f"/tmp/nanoprobe-{OTHER_UID}/{t.pid}.sock", link)
    os.chmod(link, 0o666)
    out = rr("--socket", link, "stop", t.pid, uid=THIRD_UID, code=5)
    assert f"permission denied: uid {THIRD_UID} may not control process {t.pid}" in out, out
    assert "recording on, start count 1" in rr("status", t.pid), "the refused stop did nothing"
    assert "recording off" in rr("--socket", link, "stop", t.pid, uid=OTHER_UID)
    os.unlink(link)
    t.finish()
    # a socket directory that is not private is refused
    bad = os.path.join(WORK, "open")
    shutil.rmtree(bad, ignore_errors=True)
    os.mkdir(bad)
    os.chmod(bad, 0o777)
    t = Target("opendir", env={"NANO_REMOTE_DIR": bad})
    t.finish()
    assert os.listdir(bad) == [], "no socket in a directory others can write"


def socket_dir():
    uid = os.geteuid()
    return f"/run/user/{uid}/nanoprobe" if os.path.isdir(f"/run/user/{uid}") \
        else f"/tmp/nanoprobe-{uid}"


def case_contention():
    """Ten idle connections do not hold back another client: the control
    thread serves clients side by side (it used to serve them one by one, each
    idle one holding the rest for its 2 s request timeout). A client that
    never sends its request is answered and closed after its own timeout."""
    t = Target("busy")
    path = os.path.join(socket_dir(), t.pid + ".sock")
    idle = []
    for _ in range(10):
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(path)
        idle.append(c)
    p = subprocess.run([RR, "status", t.pid], capture_output=True, text=True, timeout=5)
    assert p.returncode == 0 and "recording off" in p.stdout, (p.returncode, p.stdout, p.stderr)
    idle[0].settimeout(10)
    assert idle[0].recv(200).startswith(b"BADREQ no request line received in time")
    for c in idle:
        c.close()
    t.finish()


def case_hostile():
    """A process that answers with escape sequences, another pid or a status
    word of its own (as any user's process may, when root controls it):
    rpdremote prints only printable ASCII and refuses replies that do not name
    the process."""
    os.makedirs(socket_dir(), mode=0o700, exist_ok=True)
    me = str(os.getpid())
    path = os.path.join(socket_dir(), me + ".sock")
    replies = [b"OK process " + me.encode() + b": recording on\x1b]0;pwned\x07\x1b[2J\xc2\x9b\n",
               b"OK process 1: recording off, start count 0, file x\n",
               b"HACKED process " + me.encode() + b": \x1b[31m\n"]
    results = []
    for reply in replies:
        if os.path.exists(path):
            os.unlink(path)
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        srv.listen(1)
        p = subprocess.Popen([RR, "status", me], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        conn, _ = srv.accept()
        conn.recv(100)
        conn.sendall(reply)
        conn.close()
        out, err = p.communicate(timeout=10)
        results.append((p.returncode, out, err))
        srv.close()
    os.unlink(path)
    for code, out, err in results:
        assert b"\x1b" not in out + err and b"\x07" not in out + err and b"\xc2" not in out + err, \
            (out, err)
    assert results[0][0] == 0 and results[0][1] == \
        (b"process " + me.encode() + b": recording on\\x1b]0;pwned\\x07\\x1b[2J\\xc2\\x9b\n"), \
        results[0]
    assert results[1][0] == 1 and b"malformed reply (it does not name the process)" in results[1][2]
    assert results[2][0] == 1 and b"malformed reply (status 'HACKED')" in results[2][2]


CASES = {"contention": case_contention, "hostile": case_hostile, "toggle": case_toggle, "autostart": case_autostart, "errors": case_errors,
         "fork": case_fork, "preload": case_preload, "users": case_users}

if __name__ == "__main__":
    if sys.argv[1:] == ["--list"]:  # for CMake: the cases, one per line
        print("\n".join(CASES))
        sys.exit(0)
    WORK = os.path.join(WORK, CASE)
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    try:
        CASES[CASE]()
    finally:
        for t in RUNNING:
            open(t.stop, "w").close()
            try:
                t.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                t.proc.kill()
    print(f"remote {CASE}: ok")
