"""Session handling shared by `python -m nanoprobe` and its child processes.

The runner starts recording and the profiler in its own process and passes
the same settings to every Python child through the environment:
$RPDT_FILENAME (the trace file; children append to it), $NANO_PYTHON_PROFILE
("all", "partial" or "off"), $NANO_PYTHON_LINES and $NANO_PYTHON_C_CALLS,
and $PYTHONPATH, to which it prepends the directory of a sitecustomize module
that calls autostart() in each child. Children forked by multiprocessing
leave through os._exit; a multiprocessing after-fork hook closes their ranges
and flushes before that.
"""

import atexit
import os
import sys

from . import Profiler, Tracer

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOOT_DIR = os.path.join(PACKAGE_PARENT, "nanoprobe", "_boot")
PROFILE_MODES = ("all", "partial", "off")


class Session:
    """Recording (one tracer reference) plus, in mode "all", the profiler."""

    def __init__(self, mode):
        if mode not in PROFILE_MODES:
            raise ValueError("profile mode %r: expected one of %s" % (mode, ", ".join(PROFILE_MODES)))
        self.mode = mode
        self.tracer = None
        self.profiler = None
        self.unflushed = None  # the tracer, when stopped without waiting for the file

    def start(self):
        self.tracer = Tracer()
        self.tracer.start()
        _register_fork_hook(self)
        _stop_at_os_exit(self)
        if self.mode == "all":
            self.profiler = Profiler()
            self.profiler.enable()

    def stop(self, wait=True):
        """Idempotent: disables the profiler, stops recording and, with wait,
        returns once the rows are in the file. wait=False leaves the last rows
        to the C library's exit (which waits for them), so that the
        interpreter's shutdown overlaps the writer's last commits; a later
        stop() waits for them (os._exit, which skips that exit)."""
        if self.profiler is not None:
            self.profiler.disable()
            self.profiler = None
        if self.tracer is not None:
            tracer, self.tracer = self.tracer, None
            try:
                tracer.stop(wait=False)
            except RuntimeError:
                return  # not started: the tracer has said so on stderr
            self.unflushed = tracer
        if wait and self.unflushed is not None:
            tracer, self.unflushed = self.unflushed, None
            try:
                tracer.flush()
            except RuntimeError:
                # the file could not be written; the tracer has said so on
                # stderr, and the program must end as it would have
                pass


def export_environment(mode, lines, c_calls):
    """Puts the settings children need into os.environ."""
    os.environ["NANO_PYTHON_PROFILE"] = mode
    os.environ["NANO_PYTHON_LINES"] = "1" if lines else "0"
    os.environ["NANO_PYTHON_C_CALLS"] = "1" if c_calls else "0"
    path = os.environ.get("PYTHONPATH", "")
    entries = path.split(os.pathsep) if path else []
    wanted = [d for d in (BOOT_DIR, PACKAGE_PARENT) if d not in entries]
    if wanted:
        os.environ["PYTHONPATH"] = os.pathsep.join(wanted + entries)


_exit_sessions = []  # sessions to stop before os._exit ends the process


def _stop_at_os_exit(session):
    """os._exit skips atexit: the sessions are stopped (ranges closed, rows
    flushed) before it ends the process. The C library keeps what a C _exit
    would lose only where it comes before libc in symbol lookup, which a
    dlopen'ed extension does not."""
    _exit_sessions.append(session)
    if getattr(os._exit, "_nanoprobe", False):
        return
    real_exit = os._exit

    def _exit(code):
        for s in _exit_sessions:
            try:
                s.stop()
            except Exception:  # the process must end as asked
                pass
        real_exit(code)

    _exit._nanoprobe = True
    _exit.__doc__ = real_exit.__doc__
    os._exit = _exit


def _fork_child_exit(session):
    session.stop()


# multiprocessing keeps after-fork hooks in a weak-value registry: the
# sessions must stay referenced here.
_fork_hook_sessions = []
_fork_hook_registered = 0  # how many of them (the first ones) multiprocessing has


def _after_fork_in_child(session):
    # multiprocessing clears its finalizers in a forked child before running
    # the after-fork hooks, so the finalizer registered here is the child's.
    import multiprocessing.util as mputil
    mputil.Finalize(session, _fork_child_exit, args=(session,), exitpriority=-1000)


def _before_fork():
    """os.fork's before-hook: registers the sessions with multiprocessing once
    it is loaded (its forked children run the registered after-fork hooks)."""
    global _fork_hook_registered
    mputil = sys.modules.get("multiprocessing.util")
    if mputil is None:
        return
    for session in _fork_hook_sessions[_fork_hook_registered:]:
        mputil.register_after_fork(session, _after_fork_in_child)
    _fork_hook_registered = len(_fork_hook_sessions)


def _register_fork_hook(session):
    """Makes children forked by multiprocessing close their ranges and flush
    before they leave through os._exit. multiprocessing is not imported here
    (that costs every run about 25 ms); the sessions are registered with it
    at the first fork after the program loaded it."""
    if not _fork_hook_sessions:
        os.register_at_fork(before=_before_fork)
    _fork_hook_sessions.append(session)


def autostart():
    """Called at start-up of a child process of `python -m nanoprobe`
    (through the sitecustomize of BOOT_DIR): records it like its parent."""
    mode = os.environ.get("NANO_PYTHON_PROFILE")
    if mode is None:
        return
    if mode not in PROFILE_MODES:  # an empty value too (docs/ENVIRONMENT.md)
        sys.stderr.write("nanoprobe: NANO_PYTHON_PROFILE=%r is not one of %s; using 'all'\n"
                         % (mode, ", ".join(PROFILE_MODES)))
        mode = "all"
    session = Session(mode)
    try:
        session.start()
    except Exception as e:  # a child must run even when recording cannot start
        sys.stderr.write("nanoprobe: recording not started in pid %d: %s\n" % (os.getpid(), e))
        return
    atexit.register(session.stop, wait=False)

