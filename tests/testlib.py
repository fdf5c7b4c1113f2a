"""Helpers shared by the suite's Python test scripts (run as scripts, not by pytest).

A script imports them with its parent folder on sys.path:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from testlib import check, fail
"""
import sys


def fail(msg):
    """Prints FAIL: msg and ends the test with exit status 1."""
    print("FAIL: " + msg)
    sys.exit(1)


def check(cond, msg):
    """fail(msg) unless cond."""
    if not cond:
        fail(msg)
