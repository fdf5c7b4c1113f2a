"""PEP 517 build backend of the nanoprobe Python package (standard library only).

`python3 -m pip install ./python` calls build_wheel() here. It compiles the
extension nanoprobe._nanoprobe with the C compiler Python was built with
($CC overrides), linking the tracer libnano_rpd.so, which goes into the wheel
next to the extension with the nanoprobe libraries it needs, all found
through $ORIGIN rpaths (set with CMake's file(RPATH_SET)). The `rpd` tool goes
in as nanoprobe/bin/rpd (`python -m nanoprobe.rpd info trace.rpd`). Library
and tool are taken from, in order:

  $NANO_RPD_LIBRARY, $NANO_RPD_TOOL   a libnano_rpd.so, an rpd, used as they are
  $NANO_BUILD_DIR     a built nanoprobe build tree (<dir>/runtime/rpd/libnano_rpd.so,
                      <dir>/tools/rpd/rpd); relative: to the folder pip was started in
  otherwise           the nano_rpd and rpd targets of this source tree, configured
                      and built with CMake in python/build/cmake-nano_rpd

Only wheels are built (no sdist): the package needs the source tree's runtime.
"""

import base64
import glob
import hashlib
import os
import shlex
import shutil
import subprocess
import re
import sys
import sysconfig
import tempfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/
ROOT = os.path.dirname(HERE)
NAME = "nanoprobe"


def _project_version():
    """The version, from the one place that sets it: project() in CMakeLists.txt."""
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        m = re.search(r"project\(nanoprobe VERSION ([0-9.]+)", f.read())
    if not m:
        raise RuntimeError("no 'project(nanoprobe VERSION x.y.z' in %s/CMakeLists.txt" % ROOT)
    return m.group(1)


VERSION = _project_version()
SUMMARY = ("Record Python programs into an RPD trace: tracer control, a C profiler, "
           "signposts, atomics counts")
RPD_NAME = "libnano_rpd.so"
TOOL_NAME = "rpd"


class BuildError(Exception):
    pass


def _run(cmd):
    print("nanoprobe build: " + " ".join(shlex.quote(c) for c in cmd), file=sys.stderr)
    try:
        subprocess.run(cmd, check=True, stdout=sys.stderr)
    except (OSError, subprocess.CalledProcessError) as e:
        raise BuildError("%s failed: %s" % (cmd[0], e)) from None


def _build_dir(build):
    """NANO_BUILD_DIR as the user meant it: pip runs this backend in the
    package's folder, so a relative path is taken from the folder pip was
    started in ($PWD, which the shell set and pip kept), else from the source
    tree's top (`NANO_BUILD_DIR=build pip install ./python` there)."""
    if not build or os.path.isabs(build):
        return build
    for base in (os.environ.get("PWD"), ROOT, os.getcwd()):
        if base and os.path.isdir(os.path.join(base, build)):
            return os.path.join(base, build)
    return build


def _built_parts():
    """The paths of libnano_rpd.so (to link and ship) and of the rpd tool."""
    lib = os.environ.get("NANO_RPD_LIBRARY")
    tool = os.environ.get("NANO_RPD_TOOL")
    build = _build_dir(os.environ.get("NANO_BUILD_DIR"))
    if (not lib or not tool) and not build:
        if not os.path.isfile(os.path.join(ROOT, "runtime", "include", "rpd.h")):
            raise BuildError("%s is not a nanoprobe source tree (no runtime/include/rpd.h); set "
                             "NANO_BUILD_DIR, or NANO_RPD_LIBRARY and NANO_RPD_TOOL" % ROOT)
        build = os.path.join(HERE, "build", "cmake-nano_rpd")
        _run(["cmake", "-S", ROOT, "-B", build, "-DNANO_TESTS=OFF",
              "-DCMAKE_BUILD_TYPE=RelWithDebInfo"])
        _run(["cmake", "--build", build, "--target", "nano_rpd", TOOL_NAME, "-j",
              os.environ.get("NANO_JOBS", "2")])
    lib = lib or os.path.join(build, "runtime", "rpd", RPD_NAME)
    tool = tool or os.path.join(build, "tools", "rpd", TOOL_NAME)
    if not os.path.isfile(lib):
        raise BuildError("no tracer library at %s (build the nano_rpd target first)" % lib)
    if not os.path.isfile(tool):
        raise BuildError("no rpd tool at %s (build the rpd target first)" % tool)
    return os.path.realpath(lib), os.path.realpath(tool)


def _nano_libraries(rpd, out_dir):
    """Copies libnano_rpd.so and the nanoprobe libraries it needs (ldd:
    libnano_*.so) into out_dir, rpaths set to $ORIGIN, so that the
    installed package does not depend on the build tree. Returns the names."""
    try:
        ldd = subprocess.run(["ldd", rpd], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise BuildError("ldd %s failed: %s" % (rpd, e)) from None
    libs = [rpd]
    for line in ldd.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0].startswith("libnano_") and parts[1] == "=>":
            if parts[2] == "not":
                raise BuildError("%s needs %s, which is not found" % (rpd, parts[0]))
            libs.append(parts[2])
    names = []
    for lib in libs:
        name = os.path.basename(lib) if lib != rpd else RPD_NAME
        dest = os.path.join(out_dir, name)
        shutil.copy2(lib, dest)
        os.chmod(dest, 0o755)
        script = os.path.join(out_dir, ".rpath.cmake")
        with open(script, "w") as f:
            # Only a library that has an rpath (into the build tree) gets one.
            f.write('file(READ_ELF "%s" RUNPATH runpath RPATH rpath)\n'
                    'if(runpath OR rpath)\n'
                    '  file(RPATH_SET FILE "%s" NEW_RPATH "$ORIGIN")\n'
                    'endif()\n' % (dest, dest))
        _run(["cmake", "-P", script])
        os.unlink(script)
        names.append(name)
    return names


def _compile_extension(out_dir, rpd):
    """Compiles nanoprobe._nanoprobe into out_dir; returns its file name."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    include = sysconfig.get_paths()["include"]
    if not os.path.isfile(os.path.join(include, "Python.h")):
        raise BuildError("no Python.h in %s: install this Python's development headers" % include)
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    libdir = os.path.join(out_dir, ".lib")
    os.makedirs(libdir, exist_ok=True)
    shutil.copy2(rpd, os.path.join(libdir, RPD_NAME))
    target = "_nanoprobe" + suffix
    sources = sorted(glob.glob(os.path.join(HERE, "src", "*.c")))
    _run(cc + ["-std=c11", "-O2", "-g", "-Wall", "-Wextra", "-fPIC", "-shared",
               "-fvisibility=hidden", "-I" + include, '-DNANO_VERSION="%s"' % VERSION,
               "-I" + os.path.join(ROOT, "runtime", "include")] + sources +
         ["-o", os.path.join(out_dir, target), "-L" + libdir, "-lnano_rpd", "-ldl",
          "-lpthread", "-Wl,-rpath,$ORIGIN"])
    shutil.rmtree(libdir)
    return target


def _tag():
    impl = "cp%d%d" % sys.version_info[:2]
    abi = "cp%d%d%s" % (sys.version_info[0], sys.version_info[1], getattr(sys, "abiflags", ""))
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "%s-%s-%s" % (impl, abi, plat)


def _metadata():
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\n"
            "Requires-Python: >=3.11\n" % (NAME, VERSION, SUMMARY))


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (arcname, digest, len(data))


# ---- PEP 517 hooks ----------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = "%s-%s.dist-info" % (NAME, VERSION)
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    with open(os.path.join(metadata_directory, info, "METADATA"), "w") as f:
        f.write(_metadata())
    return info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    try:
        rpd, tool = _built_parts()
        with tempfile.TemporaryDirectory() as tmp:
            ext = _compile_extension(tmp, rpd)
            libs = _nano_libraries(rpd, tmp)
            files = []  # (arcname, source path)
            pkg = os.path.join(HERE, NAME)
            for dirpath, dirnames, filenames in os.walk(pkg):
                dirnames[:] = [d for d in dirnames if d != "__pycache__"]
                for fn in sorted(filenames):
                    if fn.endswith(".py"):
                        full = os.path.join(dirpath, fn)
                        files.append((os.path.relpath(full, HERE).replace(os.sep, "/"), full))
            files.append(("%s/%s" % (NAME, ext), os.path.join(tmp, ext)))
            for lib in libs:
                files.append(("%s/%s" % (NAME, lib), os.path.join(tmp, lib)))
            files.append(("%s/bin/%s" % (NAME, TOOL_NAME), tool))
            tag = _tag()
            info = "%s-%s.dist-info" % (NAME, VERSION)
            wheel_name = "%s-%s-%s.whl" % (NAME, VERSION, tag)
            meta = {
                info + "/METADATA": _metadata().encode(),
                info + "/WHEEL": ("Wheel-Version: 1.0\nGenerator: nanoprobe_build\n"
                                  "Root-Is-Purelib: false\nTag: %s\n" % tag).encode(),
                info + "/top_level.txt": (NAME + "\n").encode(),
            }
            record = []
            with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w",
                                 zipfile.ZIP_DEFLATED) as z:
                for arcname, path in files:
                    with open(path, "rb") as f:
                        data = f.read()
                    zi = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
                    zi.external_attr = (os.stat(path).st_mode & 0o777 | 0o100000) << 16
                    zi.compress_type = zipfile.ZIP_DEFLATED
                    z.writestr(zi, data)
                    record.append(_record_line(arcname, data))
                for arcname, data in meta.items():
                    z.writestr(arcname, data)
                    record.append(_record_line(arcname, data))
                record.append(info + "/RECORD,,")
                z.writestr(info + "/RECORD", "\n".join(record) + "\n")
            return wheel_name
    except BuildError as e:
        sys.stderr.write("nanoprobe build: error: %s\n" % e)
        raise SystemExit(1)
