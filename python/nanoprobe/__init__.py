"""nanoprobe: record Python programs into an RPD trace.

    from nanoprobe import Tracer, Profiler, signpost, atomics

    Tracer.set_filename("trace.rpd", append=False)  # before the first Tracer()
    with Tracer():                                  # recorded section
        model(x)
    signpost("Run number 5", "after 5 warm-up runs")

Tracer controls the tracer of libnano_rpd.so (reference-counted start/stop,
flush, user ranges, marks), like rocmProfileData's rpdTracerControl.
Profiler records every Python call (optionally every line, every C call) as
a range in domain "python". `python -m nanoprobe` runs a script under both.
"""

import os
import sys
import threading

# Loading the extension loads libnano_rpd.so, which reads its settings then:
# it would start recording at load unless $RPDT_AUTOSTART is 0, and say at exit
# where its rows went unless $NANO_RPD_QUIET is 1. Importing nanoprobe must not
# start recording (Tracer().start() and `python -m nanoprobe` do), and the
# Python front end names its file itself, so the import holds both when the
# user did not choose, without passing that choice on to children.
_held = {name: value for name, value in (("RPDT_AUTOSTART", "0"), ("NANO_RPD_QUIET", "1"))
         if name not in os.environ}
os.environ.update(_held)
try:
    from . import _nanoprobe
finally:
    for _name in _held:
        del os.environ[_name]
del _held

from . import atomics  # noqa: E402

__all__ = ["Tracer", "Profiler", "signpost", "atomics", "name_thread"]

# Frames of this package are never recorded by the profiler.
__version__ = _nanoprobe.__version__  # the project's, from CMakeLists.txt
_nanoprobe._set_internal_prefix(os.path.dirname(os.path.abspath(__file__)) + os.sep)


class Tracer:
    """Control of the trace recorder (one per process, reference counted).

    The file is chosen once per process, before the first Tracer is created:
    Tracer.set_filename(path, append), else $RPDT_FILENAME, else ./trace.rpd.
    Child processes (subprocess, multiprocessing fork and spawn) inherit the
    file through $RPDT_FILENAME and append to it as their own session; put
    "%p" in the name for one file per process instead.
    """

    _filename = None
    _append = False
    _initialised = False

    @classmethod
    def set_filename(cls, path, append=False):
        """Sets the trace file (and whether to append to an existing one).

        Must come before the first Tracer() of the process: RuntimeError after.
        """
        if cls._initialised:
            raise RuntimeError(
                "Tracer.set_filename(%r) after the first Tracer(): the trace file "
                "is already chosen" % (path,))
        cls._filename = os.path.abspath(os.fspath(path))
        cls._append = bool(append)

    @classmethod
    def _initialise(cls):
        if cls._initialised:
            return
        if cls._filename is not None:
            _nanoprobe.set_filename(cls._filename, cls._append)
            # Children append to the same file (their own session in it).
            os.environ["RPDT_FILENAME"] = cls._filename
        cls._initialised = True

    def __init__(self):
        Tracer._initialise()

    def start(self):
        """One more reference to recording; returns the new count."""
        return _nanoprobe.start()

    def stop(self, wait=True):
        """One reference less; returns the new count. RuntimeError when not
        started, or when a stop to 0 could not write the file. A stop to 0
        returns once the rows are in the file; with wait=False at once (they
        get there by the next flush or the process's exit, which waits)."""
        return _nanoprobe.stop(wait=wait)

    def flush(self):
        """Returns when everything recorded so far is in the file."""
        _nanoprobe.flush()

    def range_push(self, name, args=None, domain=None):
        """Opens a range on this thread (domain "UserMarker" by default)."""
        _nanoprobe.range_push(name, args, domain)

    def range_pop(self):
        """Closes this thread's innermost range."""
        _nanoprobe.range_pop()

    def mark(self, name, args=None, domain=None):
        """A zero-duration mark."""
        _nanoprobe.mark(name, args, domain)

    # rocmProfileData's spelling, for scripts written against rpdTracerControl.
    rangePush = range_push
    rangePop = range_pop

    @classmethod
    def setFilename(cls, name, append=False):
        cls.set_filename(name, append)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.stop()
        return False


def _env_flag(name):
    """The boolean value of $name ("1", "true", "yes", "on" or the opposite,
    in any case; unset: False); anything else, an empty value too, gets one
    warning on stderr and False, as in the C runtime (nano/settings.h,
    docs/ENVIRONMENT.md: an empty value is a value, never a silent unset)."""
    value = os.environ.get(name)
    if value is None:
        return False
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    sys.stderr.write("nanoprobe: %s=%s: expected 1/0, on/off, true/false or yes/no; "
                     "taken as off\n" % (name, value))
    return False


def name_thread(name, native_id=0):
    """Names an OS thread in the trace (0: the calling thread; else a
    Thread.native_id), in place of its OS name: rpd export shows it."""
    _nanoprobe.name_thread(name, native_id)


def _name_threads():
    """Names the live threads after their threading.Thread names (threads
    started while the profiler is on name themselves as they start, on 3.11).
    The process's main thread keeps the OS name: its row names the process."""
    pid = os.getpid()
    for t in threading.enumerate():
        if t.native_id and t.native_id != pid:
            _nanoprobe.name_thread(t.name, t.native_id)


class Profiler:
    """Records Python calls as ranges (domain "python") while enabled.

    Profiler(lines=None, c_calls=None): `lines` adds a range per executed
    line inside profiled functions; `c_calls` adds a range per call of a C
    function from Python. None takes the setting of `python -m nanoprobe`
    (-l, -c; $NANO_PYTHON_LINES, $NANO_PYTHON_C_CALLS), off by default. Every thread is profiled, also threads started
    later. enable() holds one reference to recording (Tracer().start()) and
    disable() gives it back. Usable as a context manager.
    """

    def __init__(self, lines=None, c_calls=None):
        self.lines = _env_flag("NANO_PYTHON_LINES") if lines is None else bool(lines)
        self.c_calls = _env_flag("NANO_PYTHON_C_CALLS") if c_calls is None else bool(c_calls)

    _tracer_held = False

    def enable(self):
        """Starts profiling. Enables nest (a program profiled by `python -m
        nanoprobe` may enable its own Profiler); RuntimeError when already
        enabled with other settings."""
        Tracer._initialise()
        _nanoprobe.start()
        try:
            _nanoprobe.profiler_enable(self.lines, self.c_calls)
        except BaseException:
            _nanoprobe.stop()
            raise
        self._tracer_held = True
        _name_threads()

    def disable(self):
        """Stops profiling; closes the ranges this thread still has open."""
        _name_threads()
        _nanoprobe.profiler_disable()
        if self._tracer_held:
            self._tracer_held = False
            _nanoprobe.stop()

    def __enter__(self):
        self.enable()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.disable()
        return False


# signpost(header, message=None): a mark "header: message" in domain "signpost",
# shown by rpd export and rpd report like every user mark.
signpost = _nanoprobe.signpost
