"""Counts of the atomics tracker, read while the program runs.

The tracker is libnano_tracker.so; it counts the atomic operations of code
built with the nanoprobe plugin (-fpass-plugin=libNanoPass.so) or prelude.h.
It must be loaded into the process, normally with
LD_PRELOAD=<build>/runtime/tracker/libnano_tracker.so; every function here
raises TrackerNotLoaded otherwise.

    from nanoprobe import atomics
    atomics.reset(); work(); print(atomics.counts())
"""

from . import _nanoprobe

__all__ = ["TrackerNotLoaded", "loaded", "reset", "count", "counts", "sites", "dump"]


class TrackerNotLoaded(RuntimeError):
    """libnano_tracker.so is not loaded in this process."""


def _call(fn, *args):
    try:
        return fn(*args)
    except RuntimeError as e:
        if not _nanoprobe.atomics_loaded():
            raise TrackerNotLoaded(str(e)) from None
        raise


def loaded():
    """Whether libnano_tracker.so is loaded in this process."""
    return _nanoprobe.atomics_loaded()


def reset():
    """Zeroes every count (every site, every thread)."""
    _call(_nanoprobe.atomics_reset)


def _kind_name(kind):
    return kind if kind.startswith("__atomic_") else "__atomic_" + kind


def count(kind):
    """Total count of one kind: "__atomic_fetch_add" or just "fetch_add"."""
    name = _kind_name(kind)
    if name not in _call(_nanoprobe.atomics_kinds):
        raise ValueError("unknown atomic kind %r" % (kind,))
    return _call(_nanoprobe.atomics_count, name)


def counts():
    """{kind name: total count} for every kind counted at least once."""
    result = {}
    for name in _call(_nanoprobe.atomics_kinds):
        n = _nanoprobe.atomics_count(name)
        if n:
            result[name] = n
    return result


def sites():
    """One dict per registered site: id, kind, order, size, file, line,
    column, function, module and count."""
    return _call(_nanoprobe.atomics_sites)


def dump(path=None, format="text"):
    """The tracker's dump ("text" or "json"): returned as a str, or written
    to `path` ("stdout" and "stderr" name the streams)."""
    if path is None:
        return _call(_nanoprobe.atomics_dump, format)
    _call(_nanoprobe.atomics_dump_path, str(path), format)
    return None
