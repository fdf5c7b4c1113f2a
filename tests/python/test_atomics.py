"""nanoprobe.atomics: the tracker's counts of a C extension built with the plugin."""

import json
import os
import subprocess
import sys
import pytest

from conftest import PYTHON, run, write

EXTENSION = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static long counter;
static int flag;

/* bump(n): n atomic increments and one atomic load. */
static PyObject *bump(PyObject *self, PyObject *arg)
{
  long n = PyLong_AsLong(arg);
  (void)self;
  if (n == -1 && PyErr_Occurred())
    return NULL;
  for (long i = 0; i < n; i++)
    __atomic_fetch_add(&counter, 1, __ATOMIC_SEQ_CST);
  return PyLong_FromLong(__atomic_load_n(&counter, __ATOMIC_ACQUIRE));
}

/* swap(): one atomic exchange. */
static PyObject *swap(PyObject *self, PyObject *unused)
{
  (void)self, (void)unused;
  return PyLong_FromLong(__atomic_exchange_n(&flag, 1, __ATOMIC_ACQ_REL));
}

static PyMethodDef methods[] = {
    {"bump", bump, METH_O, NULL}, {"swap", swap, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "atomx", NULL, -1, methods};
PyMODINIT_FUNC PyInit_atomx(void) { return PyModule_Create(&def); }
"""


@pytest.fixture(scope="module")
def extension(tmp_path_factory):
    """atomx, built with clang and the nanoprobe plugin; returns its directory."""
    d = tmp_path_factory.mktemp("atomx")
    src = write(d, "atomx.c", EXTENSION)
    include, suffix = subprocess.run(
        [PYTHON, "-c", "import sysconfig; print(sysconfig.get_paths()['include']); "
                       "print(sysconfig.get_config_var('EXT_SUFFIX'))"],
        capture_output=True, text=True, check=True).stdout.split()
    out = os.path.join(str(d), "atomx" + suffix)
    cmd = [os.environ["NANO_CLANG"], "-fpass-plugin=" + os.environ["NANO_PASS_PLUGIN"],
           "-O1", "-g", "-shared", "-fPIC", "-I" + include, src, "-o", out]
    subprocess.run(cmd, check=True)
    return str(d)


SCRIPT = """
    import json, sys
    from nanoprobe import atomics
    import atomx
    assert atomics.loaded()
    atomx.bump(10)
    atomics.reset()
    assert atomics.counts() == {}, atomics.counts()
    atomx.bump(1000)
    atomx.swap()
    c = atomics.counts()
    assert c == {"__atomic_load": 1, "__atomic_exchange": 1, "__atomic_fetch_add": 1000}, c
    assert atomics.count("fetch_add") == 1000
    assert atomics.count("__atomic_compare_exchange") == 0
    sites = {(s["kind"], s["function"]): s for s in atomics.sites() if s["file"].endswith("atomx.c")}
    add = sites[("__atomic_fetch_add", "bump")]
    assert add["count"] == 1000 and add["order"] == "seq_cst" and add["size"] == 8, add
    assert add["line"] == int(sys.argv[2]), add
    assert sites[("__atomic_exchange", "swap")]["count"] == 1
    assert "__atomic_fetch_add" in atomics.dump()
    json.loads(atomics.dump(format="json"))
    atomics.dump(sys.argv[1], format="json")
    try:
        atomics.count("no_such_kind")
    except ValueError:
        pass
    else:
        raise AssertionError("unknown kind accepted")
    atomics.reset()
    assert atomics.counts() == {}
    print("ok")
"""


def test_atomics_of_plugin_built_extension(tmp_path, extension):
    write(tmp_path, "use.py", SCRIPT)
    env = {"LD_PRELOAD": os.environ["NANO_TRACKER_LIB"],
           "PYTHONPATH": os.pathsep.join([extension, os.environ["PYTHONPATH"]])}
    line = EXTENSION.split("\n").index("    __atomic_fetch_add(&counter, 1, __ATOMIC_SEQ_CST);") + 1
    r = run(["use.py", str(tmp_path / "dump.json"), str(line)], cwd=str(tmp_path), env=env)
    assert r.stdout.strip().endswith("ok")
    with open(tmp_path / "dump.json") as f:
        dump = json.load(f)
    assert "atomx.c" in json.dumps(dump)


def test_atomics_without_tracker_is_a_clear_error(tmp_path, extension):
    write(tmp_path, "plain.py", """
        from nanoprobe import atomics
        import atomx
        assert not atomics.loaded()
        assert atomx.bump(5) == 5            # the instrumented code runs unchanged
        try:
            atomics.counts()
        except atomics.TrackerNotLoaded as e:
            print(e)
    """)
    env = {"PYTHONPATH": os.pathsep.join([extension, os.environ["PYTHONPATH"]])}
    r = run(["plain.py"], cwd=str(tmp_path), env=env)
    assert "libnano_tracker.so" in r.stdout and "LD_PRELOAD" in r.stdout
