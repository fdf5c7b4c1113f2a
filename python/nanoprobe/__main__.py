"""python -m nanoprobe: run a Python script or module with every call recorded.

Like `python -m cProfile`: the program sees its own sys.argv, runs as
__main__, and its exit code is the runner's exit code.
"""

import os
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

# The options, one row each: short name, long name, the value's name (None:
# a flag), the attribute of the parsed options, help (lines of at most 54
# characters). The command line is read here rather than by argparse: its
# imports (re, gettext, shutil, bz2, lzma ...) cost about 9 ms per run on
# the development VM, a third of the runner's own start-up, paid by every
# profiled program before its first line.
_OPTIONS = (
    ("-h", "--help", None, "help", "show this help message and exit"),
    (None, "--version", None, "version", "show nanoprobe's version and exit"),
    ("-o", "--output", "FILE", "output",
     "trace file (default: $RPDT_FILENAME, else\n./trace.rpd); %p in the name is replaced by the\n"
     "process id"),
    ("-a", "--append", None, "append",
     "append to an existing trace file instead of\nreplacing it"),
    ("-p", "--partial", None, "partial",
     "profile only between Profiler().enable() and\ndisable() in the program"),
    ("-l", "--lines", None, "lines",
     "line level: also a range per executed line inside\nprofiled functions"),
    ("-c", "--c-calls", None, "c_calls",
     "also a range per call of a C function (builtins,\nextensions) from Python"),
    (None, "--min-duration", "DURATION", "min_duration",
     "calls shorter than DURATION (500ns, 10us, 0.5ms,\n1s) are not stored as ranges but summed per\n"
     "function (calls, total, self) in the trace's\nnano_calls; `rpd report` shows them"),
    (None, "--no-python", None, "no_python",
     "no Python profiler: record only C-level ranges,\nmarks and the program's own Tracer ranges"),
    ("-m", None, None, "module", "run a library module as a script (like python -m)"),
)
_HELP_COLUMN = 24  # where the help of an option starts


class _Options:
    """The parsed command line: one attribute per option, `args` the program
    and its arguments."""

    def __init__(self):
        for _, _, value, attr, _ in _OPTIONS:
            setattr(self, attr, None if value else False)
        self.args = []


def _help():
    lines = ["usage: " + USAGE, "", DESCRIPTION, "", "positional arguments:",
             "  script.py | module".ljust(_HELP_COLUMN) + "the program and its arguments", "",
             "options:"]
    for short, long, value, _, text in _OPTIONS:
        names = ", ".join(n + (" " + value if value else "") for n in (short, long) if n)
        head = "  " + names
        text = text.split("\n")
        if len(head) >= _HELP_COLUMN:
            lines.append(head)
            head = ""
        lines.append(head.ljust(_HELP_COLUMN) + text[0])
        lines.extend(" " * _HELP_COLUMN + t for t in text[1:])
    return "\n".join(lines + ["", EPILOG, ""])


def _error(message):
    """Ends the run as a command-line error: usage and message, exit 2."""
    sys.stderr.write("usage: %s\npython -m nanoprobe: error: %s\n" % (USAGE, message))
    sys.exit(2)


def _long_option(name):
    """The row of a long option, given whole or as an unambiguous prefix."""
    rows = [o for o in _OPTIONS if o[1] and o[1].startswith(name)]
    exact = [o for o in rows if o[1] == name]
    if exact or len(rows) == 1:
        return (exact or rows)[0]
    if rows:
        _error("ambiguous option: %s could match %s" % (name, ", ".join(o[1] for o in rows)))
    _error("unrecognized arguments: %s" % name)


def _parse(argv):
    """Options up to the first argument that is not one (or `--`); the rest is
    the program and its arguments, as python reads its own command line.
    Short options combine (-pl, -ofile)."""
    options = _Options()
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "--":
            break
        if not arg.startswith("-") or arg == "-":
            i -= 1
            break
        if arg.startswith("--"):
            name, has_value, value = arg.partition("=")
            row = _long_option(name)
            if not row[2] and has_value:
                _error("argument %s: ignored explicit argument %r" % (row[1], value))
            found = [(row, value if has_value else None)]
        else:
            found = []
            for k in range(1, len(arg)):
                row = next((o for o in _OPTIONS if o[0] == "-" + arg[k]), None)
                if row is None:
                    _error("unrecognized arguments: %s" % arg)
                if row[2]:
                    found.append((row, arg[k + 1:] or None))
                    break
                found.append((row, None))
        for row, value in found:
            if row[2] and value is None:
                if i == len(argv):
                    _error("argument %s: expected one argument" % "/".join(n for n in row[:2] if n))
                value = argv[i]
                i += 1
            setattr(options, row[3], value if row[2] else True)
    options.args = argv[i:]
    return options


def _duration_valid(text):
    """Whether text has NANO_RPD_MIN_DURATION's form (nano/settings.h,
    nano_parse_duration: digits with at most one point, then ns, us, ms, s or
    nothing), checked here so that a typo ends the run before it starts; the
    tracer checks the range (at most an hour)."""
    number = text
    for unit in ("ns", "us", "ms", "s"):
        if text.endswith(unit):
            number = text[:-len(unit)]
            break
    digits = number.replace(".", "", 1)
    return bool(digits) and digits.isdigit() and digits.isascii()


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


def _load(options):
    """Compiles the program; returns (code, namespace) with sys.argv and
    sys.path set as python itself would."""
    target = options.args[0]
    if options.module:
        import runpy
        try:
            _, spec, code = runpy._get_module_details(target)
        except ImportError as e:
            _error("-m %s: %s" % (target, e))
        sys.argv[:] = [spec.origin] + options.args[1:]
        sys.path[0] = os.getcwd()
        return code, _main_module("__main__", spec, spec.origin).__dict__
    try:
        with open(target, "rb") as f:
            source = f.read()
    except OSError as e:
        _error("cannot read the script %s: %s" % (target, e.strerror))
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
    options = _parse(sys.argv[1:] if argv is None else argv)
    if options.help:
        sys.stdout.write(_help())
        return 0
    if options.version:
        print("nanoprobe (Python) " + __version__)
        return 0
    if not options.args:
        _error("no script or module to run")
    if options.no_python and (options.partial or options.lines or options.c_calls):
        _error("--no-python excludes -p, -l and -c")
    if options.output:
        # "%p" (the process id) is expanded by the tracer: check the folder only
        why = _writable_output(options.output.replace("%p", "0"))
        if why:
            sys.stderr.write("python -m nanoprobe: cannot write the trace -o %s: %s\n"
                             % (options.output, why))
            return 2
        Tracer.set_filename(options.output, append=options.append)
    elif not os.environ.get("RPDT_FILENAME"):
        if "RPDT_FILENAME" in os.environ:  # an empty value is said, never silent
            sys.stderr.write("python -m nanoprobe: RPDT_FILENAME is set but empty: its default "
                             "(trace.rpd) is used\n")
        Tracer.set_filename("trace.rpd", append=options.append)
    if options.min_duration is not None:
        if not _duration_valid(options.min_duration):
            sys.stderr.write("python -m nanoprobe: --min-duration %r: expected a duration such as "
                             "500ns, 10us, 0.5ms or 1s\n" % options.min_duration)
            return 2
        # read by the tracer at the start of recording, here and in children
        os.environ["NANO_RPD_MIN_DURATION"] = options.min_duration
    mode = "off" if options.no_python else "partial" if options.partial else "all"
    _runner.export_environment(mode, options.lines, options.c_calls)
    code, namespace = _load(options)
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
