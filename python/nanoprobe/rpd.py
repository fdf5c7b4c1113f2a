"""`python -m nanoprobe.rpd COMMAND ...`: the `rpd` tool that reads traces
(info, summary, top, watch, export, report, ...), for a nanoprobe installed
with pip, which ships it as nanoprobe/bin/rpd.

The tool is looked up, in order: next to this package (the wheel's
bin/rpd), in a nanoprobe build tree (<build>/python/nanoprobe ->
<build>/tools/rpd/rpd), in an installed prefix (<prefix>/lib/nanoprobe/
python/nanoprobe -> <prefix>/bin/rpd), then on PATH.
"""

import os
import shutil
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_CANDIDATES = (
    os.path.join(_HERE, "bin", "rpd"),
    os.path.join(_HERE, "..", "..", "tools", "rpd", "rpd"),
    os.path.join(_HERE, "..", "..", "..", "..", "bin", "rpd"),
)


def tool_path():
    """The path of the rpd tool, or None when there is none."""
    for path in _CANDIDATES:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.realpath(path)
    return shutil.which("rpd")


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    path = tool_path()
    if path is None:
        sys.stderr.write("python -m nanoprobe.rpd: no rpd tool next to the package (%s/bin), "
                         "in a build tree or on PATH\n" % _HERE)
        return 2
    sys.stdout.flush()
    os.execv(path, ["rpd"] + list(args))
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
