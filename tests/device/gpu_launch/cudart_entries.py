#!/usr/bin/env python3
"""How nvcc's static cudart reaches the driver, and what libnano_cudahook.so
hands it (issue 38 part 4), checked without a GPU.

The kernel cache reaches CUDA programs not built with the plugin only if the
runtime takes its launch and kernel-node entry points through the driver's
cuGetProcAddress, which the hook stands in front of. A program built by the
toolkit's nvcc (cudart_app.cu, static cudart) is run over a driver that
records every request (proc_recorder.c) and fails every call, as the
toolkit's stub driver does: the runtime loads its whole table first, then
stops. Checked:
  - the runtime asks cuGetProcAddress for every entry point the hook stands
    in front of (a runtime that reached one another way would bypass the
    cache: the test names it);
  - with the hook preloaded as `nanoprobe run -c` preloads it, the runtime
    makes the same requests, every one through the hook's cuGetProcAddress;
  - each of those requests, and each hooked entry point at every version
    cudaTypedefs.h gives it with and without the per-thread flag, replayed
    through the hook over the stand-in driver (fake_cudart.c, whose
    cuGetProcAddress hands out the ABI of the version asked for), is
    answered with the hook's function of that ABI (NAME, NAME_v2,
    NAME_ptsz: the one cudaTypedefs.h's PFN_NAME_v<version> types), and
    every other request with the driver's own function.
usage: cudart_entries.py CLANG SOURCE_ROOT HOOK_LIB RPD_LIB OUT_DIR
"""
import os
import re
import shutil
import subprocess
import sys

CUDA = "/usr/local/cuda"
# The entry points the hook stands in front of (runtime/dispatch/cuda_hook.c).
HOOKED = ["cuGetProcAddress", "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel",
          "cuGraphAddKernelNode", "cuGraphKernelNodeGetParams", "cuGraphKernelNodeSetParams",
          "cuGraphExecKernelNodeSetParams", "cuGraphAddNode", "cuGraphNodeSetParams",
          "cuGraphExecNodeSetParams", "cuGraphKernelNodeSetAttribute",
          "cuGraphKernelNodeGetAttribute", "cuGraphKernelNodeCopyAttributes"]
PER_THREAD = 2  # CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

clang, root, hook, rpd, out = sys.argv[1:6]
here = os.path.dirname(os.path.abspath(__file__))


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def sh(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        fail("%s: exit %d\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    return r


def abis():
    """cudaTypedefs.h's ABIs of each entry point: name -> (the versions of
    its PFN types in order, the version of its per-thread (_ptsz) type or
    None)."""
    versions, ptsz = {}, {}
    with open(os.path.join(CUDA, "include", "cudaTypedefs.h")) as f:
        for m in re.finditer(r"\*PFN_(cu\w+?)_v(\d+)(_ptsz)?\)", f.read()):
            if m.group(3):
                ptsz.setdefault(m.group(1), int(m.group(2)))
            else:
                versions.setdefault(m.group(1), set()).add(int(m.group(2)))
    return {n: (sorted(v), ptsz.get(n)) for n, v in versions.items()}


def expected(types, name, version, flags):
    """The hook's function a request must get: the ABI cudaTypedefs.h gives
    that version (the first NAME, the next NAME_v2), or NAME_ptsz."""
    versions, ptsz = types[name]
    if flags & PER_THREAD and ptsz is not None and ptsz <= version:
        return name + "_ptsz"
    index = max(i for i, v in enumerate(versions) if v <= version)
    return name + ("_v%d" % (index + 1) if index else "")


def versions_asked(types, name):
    """Each version of name's ABIs with flags 0, and the per-thread flag at
    each version from its per-thread type's on (or, without one, at each:
    the driver hands out the one function whatever the flag)."""
    versions, ptsz = types[name]
    asks = [(name, v, 0) for v in versions]
    asks += [(name, v, PER_THREAD) for v in sorted(set(versions) | {ptsz or 0}) if v >= (ptsz or 1)]
    return asks


def requests(log):
    """A recorder log's requests: (name, version, flags, caller) each."""
    with open(log) as f:
        rows = [line.split(" ", 3) for line in f.read().splitlines()]
    return [(n, int(v), int(fl), c) for n, v, fl, c in rows]


def run_app(env_extra, log):
    if os.path.exists(log):
        os.unlink(log)
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(out, "recorder"), PROC_RECORDER_LOG=log,
               NANO_CUPTI="0", RPDT_FILENAME=os.path.join(out, "t.rpd"), **env_extra)
    r = sh([os.path.join(out, "cudart_app")], env=env)
    # the runtime stops at the recorder's first stub: no device, a clean error
    if "cudart_app: cudaErrorStubLibrary" not in r.stdout:
        fail("cudart_app over the recorder: %s%s" % (r.stdout, r.stderr))
    if not os.path.exists(log):
        fail("the runtime asked cuGetProcAddress for nothing")
    return requests(log)


def main():
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "recorder"))
    os.makedirs(os.path.join(out, "standin"))
    sh(["cc", "-std=c11", "-O1", "-shared", "-fPIC", "-Wall", "-Werror", here + "/proc_recorder.c",
        "-o", os.path.join(out, "recorder", "libcuda.so.1"), "-ldl"])
    sh(["cc", "-std=c11", "-O1", "-Wall", "-Werror", here + "/proc_replay.c", "-o",
        os.path.join(out, "proc_replay"), "-ldl"])
    sh([os.path.join(CUDA, "bin", "nvcc"), "-O2", "-arch=sm_90", here + "/cudart_app.cu", "-o",
        os.path.join(out, "cudart_app")])
    sh(["bash", "-c", '. "$1/standin.sh" && standin_build "$2" "$3" "$4"', "standin", here, clang,
        root, os.path.join(out, "standin")])
    types = abis()
    for name in HOOKED:
        if name not in types:
            fail("cudaTypedefs.h has no PFN type of %s" % name)
    version = sh([os.path.join(CUDA, "bin", "nvcc"), "--version"]).stdout.split("release ")[-1]
    version = version.split(",")[0]

    app = os.path.realpath(os.path.join(out, "cudart_app"))
    plain = run_app({}, os.path.join(out, "plain.log"))
    asked = {n for n, _, _, _ in plain}
    missing = [n for n in HOOKED if n not in asked]
    if missing:
        fail("nvcc %s's static cudart does not ask cuGetProcAddress for %s: the hook cannot stand "
             "in front of them" % (version, ", ".join(missing)))
    strangers = {c for _, _, _, c in plain if os.path.realpath(c) != app}
    if strangers:
        fail("requests made by %s, not the program's runtime" % ", ".join(sorted(strangers)))

    hooked = run_app({"LD_PRELOAD": hook + ":" + rpd}, os.path.join(out, "hooked.log"))
    if [r[:3] for r in hooked] != [r[:3] for r in plain]:
        fail("the runtime's requests differ with the hook preloaded")
    bypass = sorted({"%s %d" % (n, v) for n, v, _, c in hooked
                     if os.path.realpath(c) != os.path.realpath(hook)})
    if bypass:
        fail("requests that did not go through the hook: %s" % ", ".join(bypass))

    # the runtime's requests (but its first, for the empty name: a probe)
    # and every hooked entry point's versions, replayed
    asks = sorted({r[:3] for r in plain if r[0]})
    asks = sorted(set(asks + [a for n in HOOKED for a in versions_asked(types, n)]))
    feed = "".join("%s %d %d\n" % a for a in asks)
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(out, "standin"),
               LD_PRELOAD=hook + ":" + rpd, NANO_CUPTI="0", RPDT_FILENAME=os.path.join(out, "r.rpd"))
    got = sh([os.path.join(out, "proc_replay")], input=feed, env=env).stdout.splitlines()
    if len(got) != len(asks):
        fail("proc_replay answered %d of %d requests" % (len(got), len(asks)))
    driver = os.path.realpath(os.path.join(out, "standin", "libcuda.so.1"))
    wrong = []
    for (name, v, fl), line in zip(asks, got):
        symbol, obj = line.split(" -> ")[1].split(" ", 1)
        if name in HOOKED:
            want = expected(types, name, v, fl)
            if symbol != want or os.path.realpath(obj) != os.path.realpath(hook):
                wrong.append("%s %d flags %d: %s of %s, not the hook's %s" % (name, v, fl, symbol,
                                                                              obj, want))
        elif symbol != "none" and os.path.realpath(obj) != driver:
            wrong.append("%s %d flags %d: %s of %s, not the driver's" % (name, v, fl, symbol, obj))
    if wrong:
        fail("the hook's answers:\n  " + "\n  ".join(wrong))
    print("PASS nvcc %s's static cudart: %d requests to cuGetProcAddress, all through the hook; "
          "%d replayed, the %d hooked entry points at %d versions answered with the hook's "
          "function of their ABI" % (version, len(plain), len(asks), len(HOOKED),
                                     sum(len(types[n][0]) for n in HOOKED)))


main()
