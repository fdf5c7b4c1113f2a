"""`pip install ./python` from the source tree gives a working, self-contained package."""

import os
import re
import shutil
import sqlite3
import subprocess

from conftest import run, write

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")


def source_copy(tmp_path):
    """A copy of what `pip install ./python` reads (pip builds in the source
    tree's directory)."""
    src = tmp_path / "src" / "python"
    shutil.copytree(SOURCE, src, ignore=shutil.ignore_patterns("build", "__pycache__"))
    shutil.copytree(os.path.join(SOURCE, "..", "runtime", "include"),
                    tmp_path / "src" / "runtime" / "include")
    # the version comes from the one place that sets it, project() in CMakeLists.txt
    shutil.copy(os.path.join(SOURCE, "..", "CMakeLists.txt"), tmp_path / "src")
    return src


def test_pip_install_from_source_tree(tmp_path):
    src = source_copy(tmp_path)
    target = tmp_path / "site"
    env = {"NANO_BUILD_DIR": os.environ["NANO_BUILD_DIR"], "PIP_NO_INDEX": "1",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONPATH": ""}
    run(["-m", "pip", "install", "--quiet", "--target", str(target), str(src)], cwd=str(tmp_path),
        env=env, timeout=300)
    pkg = target / "nanoprobe"
    assert (pkg / "libnano_rpd.so").exists()
    with open(os.path.join(SOURCE, "..", "CMakeLists.txt")) as f:
        version = re.search(r"project\(nanoprobe VERSION ([0-9.]+)", f.read()).group(1)
    assert (target / ("nanoprobe-%s.dist-info" % version)).is_dir(), os.listdir(target)
    write(tmp_path, "prog.py", """
        import nanoprobe
        def f():
            return 1
        f()
        print(nanoprobe.__file__)
    """)
    r = run(["-m", "nanoprobe", "-o", "t.rpd", "prog.py"], cwd=str(tmp_path),
            env={"PYTHONPATH": str(target)})
    assert r.stdout.strip() == str(pkg / "__init__.py")
    con = sqlite3.connect(str(tmp_path / "t.rpd"))
    assert con.execute("SELECT count(*) FROM api WHERE apiName = '__main__.f'").fetchone()[0] == 1
    con.close()
    # the package reads its traces too: the rpd tool ships as nanoprobe/bin/rpd
    assert os.access(pkg / "bin" / "rpd", os.X_OK)
    r = run(["-m", "nanoprobe.rpd", "summary", "t.rpd"], cwd=str(tmp_path),
            env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"})
    assert "__main__.f" in r.stdout and "1 process" in r.stdout, r.stdout


def test_pip_install_into_a_venv_with_a_relative_build_dir(tmp_path):
    # Debian's own python3 refuses pip installs (externally managed): the README's
    # route is a venv. NANO_BUILD_DIR relative to where pip was started, not to the
    # package folder pip runs the build backend in.
    venv = tmp_path / "venv"
    run(["-m", "venv", str(venv)], cwd=str(tmp_path), timeout=120)
    os.symlink(os.environ["NANO_BUILD_DIR"], str(tmp_path / "bld"))
    env = dict(os.environ, NANO_BUILD_DIR="bld", PWD=str(tmp_path), PIP_NO_INDEX="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONPATH="")
    src = source_copy(tmp_path)
    r = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(src)],
                       cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(venv / "bin" / "python"), "-m", "nanoprobe", "--version"],
                       cwd=str(tmp_path), env=dict(env, PYTHONPATH=""), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("nanoprobe (Python) "), r.stdout + r.stderr
