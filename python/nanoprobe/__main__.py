"""python -m nanoprobe: run a Python script or module with every call recorded.

Like `python -m cProfile`: the program sees its own sys.argv, runs as
__main__, and its exit code is the runner's exit code.
"""

import argparse
import os
import re
import sys
import types

from . import Tracer, __version__, _runner

USAGE = "python -m nanoprobe [options] (script.py | -m module) [args ...]"
DESCRIPTION = """\
Runs a Python program with recording on: every Python function call becomes a
range (domain "python", name module.qualname, args file:line) in an RPD trace
file, on every thread and in every Python child process (subprocess,
multiprocessing fork and spawn), which append to the same file."""
EPILOG = """\
examples:
  python -m nanoprobe train.py --epochs 1
  python -m nanoprobe -o run.rpd -m pytest tests/
  python -m nanoprobe -p -l script.py     # lines, only inside Profiler().enable()/disable()

The exit code is the program's. Read the trace with `rpd report trace.rpd` or
`rpd export trace.rpd`."""


# NANO_RPD_MIN_DURATION's form (nano/settings.h, nano_parse_duration), checked
# here so that a typo ends the run before it starts; the tracer checks the
# range (at most an hour).
_DURATION = re.compile(r"^(\d+\.?\d*|\.\d+)(ns|us|ms|s)?$")


def _parser():
    p = argparse.ArgumentParser(prog="python -m nanoprobe", usage=USAGE, description=DESCRIPTION,
                                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version="nanoprobe (Python) " + __version__)
    p.add_argument("-o", "--output", metavar="FILE",
                   help="trace file (default: $RPDT_FILENAME, else ./trace.rpd); "
                        "%%p in the name is replaced by the process id")
    p.add_argument("-a", "--append", action="store_true",
                   help="append to an existing trace file instead of replacing it")
    p.add_argument("-p", "--partial", action="store_true",
                   help="profile only between Profiler().enable() and disable() in the program")
    p.add_argument("-l", "--lines", action="store_true",
                   help="line level: also a range per executed line inside profiled functions")
    p.add_argument("-c", "--c-calls", action="store_true",
                   help="also a range per call of a C function (builtins, extensions) from Python")
    p.add_argument("--min-duration", metavar="DURATION",
                   help="calls shorter than DURATION (500ns, 10us, 0.5ms, 1s) are not stored "
                        "as ranges but summed per function (calls, total, self) in the trace's "
                        "nano_calls; `rpd report` shows them")
    p.add_argument("--no-python", action="store_true",
                   help="no Python profiler: record only C-level ranges, marks and the "
                        "program's own Tracer ranges")
    p.add_argument("-m", dest="module", action="store_true",
                   help="run a library module as a script (like python -m)")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="script.py | module",
                   help="the program and its arguments")
    return p


def _main_module(name, spec, origin):
    """A fresh module to run the program in, installed as sys.modules['__main__']
    (multiprocessing's spawn and pickle look functions up there)."""
    main = types.ModuleType(name)
    main.__dict__.update({"__file__": origin, "__spec__": spec, "__cached__": None,
                          "__loader__": spec.loader if spec else None,
                          "__package__": spec.parent if spec else None,
                          "__builtins__": __builtins__})
    sys.modules["__main__"] = main
    return main


def _load(options, parser):
    """Compiles the program; returns (code, namespace) with sys.argv and
    sys.path set as python itself would."""
    target = options.args[0]
    if options.module:
        import runpy
        try:
            _, spec, code = runpy._get_module_details(target)
        except ImportError as e:
            parser.error("-m %s: %s" % (target, e))
        sys.argv[:] = [spec.origin] + options.args[1:]
        sys.path[0] = os.getcwd()
        return code, _main_module("__main__", spec, spec.origin).__dict__
    try:
        with open(target, "rb") as f:
            source = f.read()
    except OSError as e:
        parser.error("cannot read the script %s: %s" % (target, e.strerror))
    sys.argv[:] = options.args
    sys.path[0] = os.path.dirname(os.path.abspath(target))
    code = compile(source, target, "exec")
    return code, _main_module("__main__", None, target).__dict__


def _writable_output(path):
    """Why the trace file `path` cannot be written, or None when it can."""
    path = os.path.abspath(path)
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        return "no folder %s" % folder
    if os.path.isdir(path):
        return "it is a folder"
    if os.path.exists(path):
        return None if os.access(path, os.W_OK) else "the file is not writable"
    return None if os.access(folder, os.W_OK | os.X_OK) else "the folder %s is not writable" % folder


def main(argv=None):
    parser = _parser()
    options = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if not options.args:
        parser.error("no script or module to run")
    if options.no_python and (options.partial or options.lines or options.c_calls):
        parser.error("--no-python excludes -p, -l and -c")
    if options.output:
        # "%p" (the process id) is expanded by the tracer: check the folder only
        why = _writable_output(options.output.replace("%p", "0"))
        if why:
            parser.exit(2, "python -m nanoprobe: cannot write the trace -o %s: %s\n"
                        % (options.output, why))
        Tracer.set_filename(options.output, append=options.append)
    elif not os.environ.get("RPDT_FILENAME"):
        Tracer.set_filename("trace.rpd", append=options.append)
    if options.min_duration is not None:
        if not _DURATION.match(options.min_duration):
            parser.exit(2, "python -m nanoprobe: --min-duration %r: expected a duration such as "
                        "500ns, 10us, 0.5ms or 1s\n" % options.min_duration)
        # read by the tracer at the start of recording, here and in children
        os.environ["NANO_RPD_MIN_DURATION"] = options.min_duration
    mode = "off" if options.no_python else "partial" if options.partial else "all"
    _runner.export_environment(mode, options.lines, options.c_calls)
    code, namespace = _load(options, parser)
    session = _runner.Session(mode)
    session.start()
    try:
        exec(code, namespace)
    finally:
        # the interpreter's shutdown runs while the writer commits the last rows
        session.stop(wait=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
