"""A pure-Python sys.setprofile recorder, the way tt-metal's `python -m tracy`
profiles: a Python callback per call and return that records a zone
(name, file:line, timestamps) into a list, on every thread.

    python pyrecorder.py script.py [args]
"""
import os
import sys
import threading
import time

events = []


def _profile(frame, event, arg):
    if event == "call":
        code = frame.f_code
        events.append((time.perf_counter_ns(), 0, frame.f_globals.get("__name__", "?") + "." +
                       code.co_qualname, "%s:%d" % (code.co_filename, code.co_firstlineno)))
    elif event == "return":
        events.append((time.perf_counter_ns(), 1, None, None))


def main():
    script = sys.argv[1]
    sys.argv[:] = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    with open(script, "rb") as f:
        code = compile(f.read(), script, "exec")
    threading.setprofile(_profile)
    sys.setprofile(_profile)
    try:
        exec(code, {"__name__": "__main__", "__file__": script})
    finally:
        sys.setprofile(None)
        threading.setprofile(None)


if __name__ == "__main__":
    main()
