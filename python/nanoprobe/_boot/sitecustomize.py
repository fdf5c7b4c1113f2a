"""Start-up hook of child processes of `python -m nanoprobe`.

`python -m nanoprobe` puts this directory first on $PYTHONPATH, so every
Python child imports this module at start-up. It records the child like its
parent (nanoprobe._runner.autostart) and then imports the sitecustomize that
this one shadows, if there is one.
"""

import os
import sys


def _nanoprobe_boot():
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    this = sys.modules.pop("sitecustomize")
    try:
        import sitecustomize  # noqa: F401  the shadowed one, if any
    except ImportError as e:
        if e.name != "sitecustomize":
            raise
        # None to shadow: the import machinery finishing this module's import
        # expects an entry under its name (else "KeyError: 'sitecustomize'")
        sys.modules["sitecustomize"] = this
    try:
        from nanoprobe import _runner
    except ImportError as e:
        sys.stderr.write("nanoprobe: cannot record pid %d: %s\n" % (os.getpid(), e))
        return
    _runner.autostart()


_nanoprobe_boot()
