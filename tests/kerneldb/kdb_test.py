#!/usr/bin/env python3
"""kerneldb tests: compares the kerneldb CLI with llvm-readelf/llvm-objdump
(LLVM 15) and readelf on code objects built by make_inputs.sh.

usage: kdb_test.py TEST KERNELDB INPUTS_DIR     (one ctest test per TEST)
       kdb_test.py pass-twins KERNELDB PLUGIN WORK_DIR
       kdb_test.py host-sites KERNELDB EXAMPLE EXAMPLE_SOURCE
       kdb_test.py make-zlib BUNDLE OUT         (writes a zlib CCOB v2)
"""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import time
import zlib

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import check, fail  # noqa: E402 (tests/testlib.py)

READELF = "llvm-readelf-15"
OBJDUMP = "llvm-objdump-15"
SYMBOLIZER = "llvm-symbolizer-15"
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "src", "kdb_test.hip")


def run(cmd, expect_rc=0):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if expect_rc is not None and p.returncode != expect_rc:
        fail("%s: exit %d (want %d)\nstdout: %s\nstderr: %s" %
             (" ".join(cmd), p.returncode, expect_rc, p.stdout[-2000:], p.stderr[-2000:]))
    return p


def kdb_json(kdb, *args, expect_rc=0):
    return json.loads(run([kdb] + list(args) + ["--json"], expect_rc).stdout)


# ---- reference parsers -------------------------------------------------------
def readelf_notes(path):
    """The AMDGPU metadata of path as llvm-readelf --notes prints it."""
    out = run([READELF, "--notes", path]).stdout
    m = re.search(r"AMDGPU Metadata:\n(.*?)\n\.\.\.", out, re.S)
    check(m, "no AMDGPU metadata in llvm-readelf output for " + path)
    return yaml.safe_load(re.sub(r"^\s*---\s*\n", "", m.group(1)))


def func_ranges(path):
    """{function symbol: (address, size)} from llvm-readelf -s."""
    out = run([READELF, "-s", "--wide", path]).stdout
    return {w[7]: (int(w[1], 16), int(w[2], 0)) for w in (l.split() for l in out.splitlines())
            if len(w) >= 8 and w[3] == "FUNC"}


def objdump_insns(path):
    """{symbol: [(addr, mnemonic, operands)]} from llvm-objdump -d, each
    function's instructions within its symbol's size (objdump shows a
    function up to the next symbol, the padding after its end included)."""
    out = run([OBJDUMP, "-d", path]).stdout
    ranges = func_ranges(path)
    syms, cur, lim = {}, None, None
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.*)>:$", line)
        if m:
            cur = syms.setdefault(m.group(2), [])
            start, size = ranges.get(m.group(2), (0, 0))
            lim = start + size if size else None
            continue
        m = re.match(r"^\t(.*?)\s*// ([0-9A-F]+):", line)
        if m and cur is not None:
            addr = int(m.group(2), 16)
            if lim is not None and addr >= lim:
                continue
            text = m.group(1).strip()
            mn, _, ops = text.partition(" ")
            cur.append((addr, mn, ops.strip()))
    return syms


def marker_lines(path=None):
    """{tag: line number} of the KDB:<tag> markers in the test source (or path)."""
    tags = {}
    with open(path or SRC) as f:
        for i, line in enumerate(f, 1):
            m = re.search(r"KDB:(\w+)", line)
            if m:
                tags[m.group(1)] = i
    return tags


# ---- tests -------------------------------------------------------------------
def test_notes(kdb, inputs, arch):
    """Kernels, arguments and resources equal what llvm-readelf --notes says."""
    co = os.path.join(inputs, "t_%s.co" % arch)
    meta = readelf_notes(co)
    ref = {k[".name"]: k for k in meta["amdhsa.kernels"]}
    listing = kdb_json(kdb, "list", co)
    check(len(listing["code_objects"]) == 1, "one code object")
    c = listing["code_objects"][0]
    check(c["arch"] == arch, "arch %s != %s" % (c["arch"], arch))
    check(meta["amdhsa.target"].endswith(c["target_id"]), "target id %s vs %s" %
          (c["target_id"], meta["amdhsa.target"]))
    check(c["code_object_version"] == meta["amdhsa.version"][1] + 3,
          "code object version %d vs amdhsa.version %s" % (c["code_object_version"], meta["amdhsa.version"]))
    check(sorted(k["name"] for k in listing["kernels"]) == sorted(ref), "kernel names differ: %s vs %s" %
          (sorted(k["name"] for k in listing["kernels"]), sorted(ref)))
    shown = kdb_json(kdb, "show", co)
    check(len(shown) == len(ref), "show lists every kernel")
    fields = {"kernarg_segment_size": ".kernarg_segment_size", "kernarg_segment_align": ".kernarg_segment_align",
              "group_segment_size": ".group_segment_fixed_size",
              "private_segment_size": ".private_segment_fixed_size", "sgpr_count": ".sgpr_count",
              "vgpr_count": ".vgpr_count", "sgpr_spill_count": ".sgpr_spill_count",
              "vgpr_spill_count": ".vgpr_spill_count", "wavefront_size": ".wavefront_size",
              "max_flat_workgroup_size": ".max_flat_workgroup_size"}
    hidden_seen = False
    for k in shown:
        r = ref[k["name"]]
        check(k["symbol"] == r[".symbol"], "symbol of " + k["name"])
        for mine, theirs in fields.items():
            check(k[mine] == r.get(theirs, 0), "%s %s: %s vs %s" % (k["name"], mine, k[mine], r.get(theirs)))
        rargs = r.get(".args", [])
        check(len(k["args"]) == len(rargs), "%s: %d args vs %d" % (k["name"], len(k["args"]), len(rargs)))
        for a, ra in zip(k["args"], rargs):
            # a name or type the note lacks may come from DWARF (test_dwarf_args)
            check(a["offset"] == ra[".offset"] and a["size"] == ra[".size"] and
                  a["value_kind"] == ra[".value_kind"] and a["address_space"] == ra.get(".address_space") and
                  a["name"] == ra.get(".name", a["name"]) and
                  a["type_name"] == ra.get(".type_name", a["type_name"]),
                  "%s: argument %s vs %s" % (k["name"], a, ra))
            check(a["hidden"] == ra[".value_kind"].startswith("hidden_"), "hidden flag")
            check(a["offset"] % a["align"] == 0, "alignment divides offset")
            hidden_seen |= a["hidden"]
        check(k["descriptor"]["kernarg_size"] == k["kernarg_segment_size"],
              "descriptor kernarg size of " + k["name"])
        check(k["descriptor"]["addr"] + k["descriptor"]["kernel_code_entry_byte_offset"] == k["code_addr"],
              "descriptor entry of " + k["name"])
    check(hidden_seen, "hidden arguments present (hidden_user)")
    wave = 64 if arch == "gfx90a" else 32
    check(all(k["wavefront_size"] == wave for k in shown), "wavefront size %d" % wave)


# The explicit arguments of the test kernels as their sources declare them
# (src/kdb_test.hip, src/kdb_test.cu): what DWARF says.
SOURCE_ARGS = {
    "_Z4axpyfPKfPfi": [("a", "float"), ("x", "const float *"), ("y", "float *"), ("n", "int")],
    "_Z5scaleIdEvPT_S0_": [("p", "double *"), ("s", "double")],
    "_Z5scaleIsEvPT_S0_": [("p", "short *"), ("s", "short")],
    "lds_kernel": [("out", "int *")],
    "chain": [("out", "int *"), ("in", "const int *")],
    "_Z6noargsv": [],
    "_Z11hidden_userPj": [("out", "unsigned int *")],
    "__nano_twin__Z4axpyfPKfPfiPv": [("a", "float"), ("x", "const float *"), ("y", "float *"),
                                     ("n", "int"), ("buf", "void *")],
    "__nano_twin__Z6noargsPv": [("buf", "void *")],
    "__nano_twin_lds_kernel": [("out", "int *"), ("buf", "void *")],
    "saxpy": [("a", "float"), ("x", "const float *"), ("y", "float *"), ("n", "int")],
    "_Z5mixed4PairsPx": [("p", "Pair"), ("h", "short"), ("out", "long long *")],
}


def explicit_args(kernel):
    return [(a["name"], a["type_name"]) for a in kernel["args"] if not a["hidden"]]


def test_dwarf_args(kdb, inputs):
    """Argument names and types the metadata lacks come from DWARF (issue
    19.4): hipcc -g (the note has neither), hipcc -g -fhip-kernel-arg-name
    (names, no types), nvcc -G (.nv.info has neither); without -g they stay
    empty."""
    for f in ("t_gfx90a.co", "t_gfx1100.co", "libt.so", "t_argname.co", "c_G.cubin"):
        path = os.path.join(inputs, f)
        if f.startswith("c_") and not os.path.exists(path):
            print("dwarf-args: no nvcc here; %s was not built, the CUDA part did not run" % f)
            continue
        for k in kdb_json(kdb, "show", path):
            check(k["name"] in SOURCE_ARGS, "%s: unexpected kernel %s" % (f, k["name"]))
            got = explicit_args(k)
            check(got == SOURCE_ARGS.get(k["name"]), "%s %s: %s, want %s" % (f, k["name"], got,
                                                                          SOURCE_ARGS.get(k["name"])))
    # the -fhip-kernel-arg-name build's names are the note's own
    # (its YAML has a !str tag that yaml cannot load: read the lines)
    notes = run([READELF, "--notes", os.path.join(inputs, "t_argname.co")]).stdout
    check(all(re.search(r"^\s+(- )?\.name:\s+(!str )?%s$" % n, notes, re.M) for n in ("a", "x", "y", "n")) and
          ".type_name" not in notes, "t_argname.co: the note names, no types")
    bare = os.path.join(inputs, "c.cubin")
    if os.path.exists(bare):
        k = [k for k in kdb_json(kdb, "show", bare) if k["name"] == "saxpy"][0]
        check(explicit_args(k) == [(None, None)] * 4, "no DWARF, no names: %s" % explicit_args(k))
    text = run([kdb, "show", os.path.join(inputs, "t_gfx90a.co"), "_Z4axpyfPKfPfi"]).stdout
    check("x: const float *" in text, "show prints name: type: " + text)


def test_objdump(kdb, inputs, arch):
    """Instruction counts, addresses and text equal llvm-objdump -d."""
    co = os.path.join(inputs, "t_%s.co" % arch)
    ref = objdump_insns(co)
    names = [k["name"] for k in kdb_json(kdb, "list", co)["kernels"]]
    check(names, "kernels listed")
    total = 0
    for name in names:
        isa = kdb_json(kdb, "isa", co, name)
        check(len(isa) == 1, "one code object for " + name)
        mine = [(i["addr"], i["mnemonic"], i["operands"]) for i in isa[0]["insns"]]
        theirs = ref.get(name)
        check(theirs is not None, "objdump has no symbol " + name)
        check(len(mine) == len(theirs), "%s: %d instructions vs objdump %d" % (name, len(mine), len(theirs)))
        # the code ends at the symbol's size: its last instruction ends the kernel (issue 19.7)
        check(mine and mine[-1][1] in ("s_endpgm", "s_setpc_b64", "s_branch"),
              "%s ends with %s" % (name, mine[-1] if mine else None))
        for a, b in zip(mine, theirs):
            # objdump appends the branch target symbol to the operands.
            ops_b = re.sub(r"\s*<.*>$", "", b[2])
            check(a[0] == b[0] and a[1] == b[1] and a[2] == ops_b, "%s: %s vs %s" % (name, a, b))
        total += len(mine)
    check(total > 50, "a meaningful number of instructions (%d)" % total)


def first_insns(isa, line, pred):
    return [i for i in isa["insns"] if i.get("line") == line and pred(i)]


def test_lines(kdb, inputs, arch):
    """Source lines of memory instructions match the markers in the source."""
    co = os.path.join(inputs, "t_%s.co" % arch)
    tags = marker_lines()
    isa = kdb_json(kdb, "isa", co, "axpy(float, float const*, float*, int)")[0]
    check(isa["has_lines"], "DWARF lines present")
    glob = lambda op: (lambda i: i.get("mem", {}).get("space") == "global" and i["mem"]["op"] == op)
    loads_x = first_insns(isa, tags["load_x"], glob("load"))
    stores = first_insns(isa, tags["store_y"], glob("store"))
    check(len(loads_x) == 1 and loads_x[0]["mem"]["width"] == 4, "one 4-byte global load on load_x line")
    check(len(stores) == 1 and stores[0]["mem"]["width"] == 4, "one 4-byte global store on store_y line")
    check(all(i["file"].endswith("kdb_test.hip") for i in loads_x + stores), "file name")
    # Every global memory instruction of axpy lies on one of the two lines.
    lines = {i["line"] for i in isa["insns"] if i.get("mem", {}).get("space") == "global"}
    check(lines <= {tags["load_x"], tags["store_y"]}, "global ops only on marked lines: %s" % lines)
    # The inverse query: kerneldb lines groups by line.
    by_line = kdb_json(kdb, "lines", co, "axpy")[0]["lines"]
    grp = [g for g in by_line if g["line"] == tags["store_y"]]
    check(len(grp) == 1 and any(i.get("mem", {}).get("op") == "store" for i in grp[0]["insns"]),
          "lines groups the store under its line")
    lds = kdb_json(kdb, "isa", co, "lds_kernel")[0]
    st = first_insns(lds, tags["lds_store"], lambda i: i.get("mem", {}).get("space") == "lds")
    ld = first_insns(lds, tags["lds_load"], lambda i: i.get("mem", {}).get("space") == "lds")
    check(st and all(i["mem"]["op"] == "store" for i in st), "LDS store on lds_store line")
    check(ld and all(i["mem"]["op"] == "load" for i in ld), "LDS load on lds_load line")
    at = [i for i in lds["insns"] if i.get("mem", {}).get("op") == "atomic" and i["mem"]["space"] == "global"]
    check(at, "global atomic in lds_kernel")
    check(all(i["line"] == tags["inlined_atomic"] for i in at), "atomic on its line in the inlined function")
    check(all(i.get("inlined", {}).get("line") == tags["call_bump"] for i in at),
          "atomic inlined at the call_bump line: %s" % at)
    sc = kdb_json(kdb, "isa", co, "void scale<double>(double*, double)")[0]
    g = [i for i in sc["insns"] if i.get("mem", {}).get("space") == "global"]
    check(g and all(i["mem"]["width"] == 8 and i["line"] == tags["scale"] for i in g),
          "8-byte global ops of scale<double> on the scale line")
    text = run([kdb, "isa", co, "axpy", "--source"]).stdout
    check("y[i] = a * xv + y[i];" in text, "--source prints the source text")


def test_inlining(kdb, inputs, arch):
    """Whole inlining chains, innermost first, and the frame in the user's
    files (issue 19.5): chain's atomics are in bump, inlined in bump_twice,
    inlined in chain; the load written in kdb_lib.h (a library when
    --library-files says so) is reported at the user's line with --attribute
    user, and every instruction at the kernel's own line with outermost."""
    co = os.path.join(inputs, "t_%s.co" % arch)
    tags = dict(marker_lines(), **marker_lines(os.path.join(os.path.dirname(SRC), "kdb_lib.h")))
    isa = kdb_json(kdb, "isa", co, "chain")[0]
    pos = lambda f: (f["function"], os.path.basename(f["file"]), f["line"])
    # every chain equals llvm-symbolizer's (file, line, column per frame; its
    # names are demangled linkage names, kerneldb's DWARF names)
    framed = [i for i in isa["insns"] if i.get("frames")]
    out = subprocess.run([SYMBOLIZER, "--obj=" + co, "--inlining"], capture_output=True, text=True,
                         input="".join("0x%x\n" % i["addr"] for i in framed)).stdout
    blocks = [b.splitlines() for b in out.strip().split("\n\n")]
    check(len(blocks) == len(framed), "one symbolizer answer per instruction")
    for i, b in zip(framed, blocks):
        sym = [(b[k], b[k + 1]) for k in range(0, len(b), 2)]
        ours = [(f["function"], "%s:%d:%d" % (f["file"], f["line"], f["column"])) for f in i["frames"]]
        check(len(sym) == len(ours) and all(s[1] == o[1] and s[0].startswith(o[0]) for s, o in zip(sym, ours)),
              "0x%x: frames %s, llvm-symbolizer %s" % (i["addr"], ours, sym))
    at = [i for i in isa["insns"] if i.get("mem", {}).get("op") == "atomic"]
    check(len(at) == 2 and all([pos(f) for f in i["frames"]][0] == ("bump", "kdb_test.hip", tags["inlined_atomic"])
                               and pos(i["frames"][1])[:2] == ("bump_twice", "kdb_test.hip")
                               and pos(i["frames"][2]) == ("chain", "kdb_test.hip", tags["call_outer"])
                               for i in at), "atomics: bump in bump_twice in chain: %s" % at)
    check(all(i["user_frame"] == 0 and i["line"] == tags["inlined_atomic"] and
              i["inlined"]["line"] in (tags["call_inner"], tags["call_inner2"]) for i in at),
          "atomics: user frame innermost (all in the user's file), src and inlined as before: %s" % at)
    load = [i for i in isa["insns"] if i.get("mem", {}).get("space") == "global" and i["mem"]["op"] == "load"]
    check(len(load) == 1 and [pos(f) for f in load[0]["frames"]] ==
          [("kdb_lib_load", "kdb_lib.h", tags["lib_load"]), ("chain", "kdb_test.hip", tags["call_outer"])]
          and load[0]["user_frame"] == 0, "the header's load, not library by default: %s" % load)
    lib = kdb_json(kdb, "isa", co, "chain", "--library-files", r"kdb_lib\.h$")[0]
    load = [i for i in lib["insns"] if i.get("mem", {}).get("space") == "global" and i["mem"]["op"] == "load"]
    check(len(load) == 1 and load[0]["user_frame"] == 1, "with kdb_lib.h a library: user frame 1: %s" % load)
    # lines grouped by each attribution
    def groups(*opts):
        return {(os.path.basename(g["file"]) if g["file"] else None, g["line"]):
                sorted(i["mem"]["op"] for i in g["insns"] if "mem" in i and i["mem"]["space"] == "global")
                for g in kdb_json(kdb, "lines", co, "chain", *opts)[0]["lines"]}
    inner = groups()
    check(inner.get(("kdb_lib.h", tags["lib_load"])) == ["load"] and
          inner.get(("kdb_test.hip", tags["inlined_atomic"])) == ["atomic", "atomic"], "innermost: %s" % inner)
    user = groups("--attribute", "user", "--library-files", r"kdb_lib\.h$")
    check(user.get(("kdb_test.hip", tags["call_outer"])) == ["load"] and
          not any(f == "kdb_lib.h" for f, _ in user) and
          user.get(("kdb_test.hip", tags["inlined_atomic"])) == ["atomic", "atomic"], "user: %s" % user)
    outer = groups("--attribute", "outermost")
    check(outer.get(("kdb_test.hip", tags["call_outer"])) == ["atomic", "atomic", "load"],
          "outermost: everything at the kernel's line: %s" % outer)
    text = run([kdb, "isa", co, "chain", "--source"]).stdout
    check("[inlined: bump <- bump_twice at " in text and " <- chain at " in text, "chain in --source: " + text)
    p = run([kdb, "lines", co, "chain", "--attribute", "middle"], expect_rc=2)
    check("--attribute middle: expected innermost, user or outermost" in p.stderr, p.stderr)
    p = run([kdb, "lines", co, "chain", "--library-files", "("], expect_rc=2)
    check("--library-files" in p.stderr and "library files '('" in p.stderr, p.stderr)


def test_containers(kdb, inputs):
    """Bundles (plain, zstd, zlib) and a shared library list the same kernels."""
    ref = {}
    for arch in ("gfx90a", "gfx1100"):
        ref[arch] = sorted(k["name"] for k in kdb_json(kdb, "list", os.path.join(inputs, "t_%s.co" % arch))["kernels"])
    for f, compressed in (("t.bundle", False), ("t_zstd.ccob", True), ("t_zlib.ccob", True), ("libt.so", False)):
        l = kdb_json(kdb, "list", os.path.join(inputs, f))
        archs = sorted(c["arch"] for c in l["code_objects"])
        check(archs == ["gfx1100", "gfx90a"], "%s: archs %s" % (f, archs))
        check(all(c["compressed"] == compressed for c in l["code_objects"]), f + ": compressed flag")
        for c in l["code_objects"]:
            names = sorted(k["name"] for k in l["kernels"] if k["code_object"] == c["index"])
            check(names == ref[c["arch"]], "%s %s: kernels differ" % (f, c["arch"]))
        only = kdb_json(kdb, "list", os.path.join(inputs, f), "--arch", "gfx1100")
        check([c["arch"] for c in only["code_objects"]] == ["gfx1100"], f + ": --arch filters")
        # the other target is not read, yet the numbering is the full read's
        full = [c for c in l["code_objects"] if c["arch"] == "gfx1100"]
        check(only["code_objects"] == full and only["kernels"] ==
              [k for k in l["kernels"] if k["code_object"] == full[0]["index"]],
              "%s: --arch gives the full read's code object and kernels: %s" % (f, only))
    # --arch takes targets as list prints them: features in any order, a bare
    # arch for every setting, an unknown feature an error (issue 19.3).
    feat = os.path.join(inputs, "libfeat.so")
    targets = [c["target_id"] for c in kdb_json(kdb, "list", feat)["code_objects"]]
    check(sorted(targets) == ["gfx90a:sramecc-:xnack-", "gfx90a:xnack+"], "target ids: %s" % targets)
    for want, got in (("gfx90a:xnack+", ["gfx90a:xnack+"]), ("gfx90a:xnack-", ["gfx90a:sramecc-:xnack-"]),
                      ("gfx90a:xnack-:sramecc-", ["gfx90a:sramecc-:xnack-"]),
                      ("gfx90a:sramecc-:xnack-", ["gfx90a:sramecc-:xnack-"]),
                      ("gfx90a", ["gfx90a:sramecc-:xnack-", "gfx90a:xnack+"])):
        l = kdb_json(kdb, "list", feat, "--arch", want)
        check(sorted(c["target_id"] for c in l["code_objects"]) == got, "--arch %s: %s" % (want, l["code_objects"]))
        check(len({k["code_object"] for k in l["kernels"]}) == len(got), "--arch %s: kernels" % want)
    isa = kdb_json(kdb, "isa", feat, "axpy", "--arch", "gfx90a:xnack+")
    check(len(isa) == 1 and isa[0]["insns"], "isa --arch with a feature")
    run([kdb, "list", feat, "--arch", "gfx90a:sramecc+"], 1)
    p = run([kdb, "list", feat, "--arch", "gfx90a:bogus+"], 2)
    check("unknown feature 'bogus+'" in p.stderr, p.stderr)
    # Disassembly out of a compressed bundle equals the bare code object's.
    a = kdb_json(kdb, "isa", os.path.join(inputs, "t_zstd.ccob"), "axpy", "--arch", "gfx1100")[0]["insns"]
    b = kdb_json(kdb, "isa", os.path.join(inputs, "t_gfx1100.co"), "axpy")[0]["insns"]
    check([(i["addr"], i["bytes"]) for i in a] == [(i["addr"], i["bytes"]) for i in b], "ccob isa")
    regex = kdb_json(kdb, "list", os.path.join(inputs, "libt.so"), "--kernels", "^_Z5scale")
    check(sorted({k["name"] for k in regex["kernels"]}) == ["_Z5scaleIdEvPT_S0_", "_Z5scaleIsEvPT_S0_"],
          "--kernels regex")
    isa = kdb_json(kdb, "isa", os.path.join(inputs, "libt.so"), "--kernels", "scale<", "--arch", "gfx90a")
    check(sorted(k["name"] for k in isa) == ["_Z5scaleIdEvPT_S0_", "_Z5scaleIsEvPT_S0_"] and
          all(k["arch"] == "gfx90a" and k["insns"] for k in isa), "isa --kernels on demangled names")
    run([kdb, "lines", os.path.join(inputs, "libt.so"), "--kernels", "nomatch_xyz"], 1)
    # clang-22: code object v6 in a compressed .hip_fatbin of a host object.
    l = kdb_json(kdb, "list", os.path.join(inputs, "cov6.o"))
    check(sorted((c["arch"], c["code_object_version"], c["compressed"]) for c in l["code_objects"]) ==
          [("gfx1100", 6, True), ("gfx90a", 6, True)], "cov6.o code objects: %s" % l["code_objects"])
    check([k["name"] for k in l["kernels"]] == ["cov6_store", "cov6_store"], "cov6.o kernels")
    for arch in ("gfx90a", "gfx1100"):
        isa = kdb_json(kdb, "isa", os.path.join(inputs, "cov6.o"), "cov6_store", "--arch", arch)[0]["insns"]
        st = [i for i in isa if i.get("mem") == {"space": "global", "op": "store", "width": 4}]
        check(len(st) == 1, "cov6.o %s: one 4-byte global store" % arch)


def test_many_bundles(kdb, inputs, work):
    """Issue 19.1: a section of many bundles, as a linker concatenates them
    (compressed ones, and plain ones between, each aligned to 4 KiB): every
    code object is found, with the kernels of its own file. The reader used
    to search the rest of the section for each magic once per bundle
    (quadratic in size x bundles; bench/kerneldb times it)."""
    n = 40
    parts = []
    for name in ("t_zlib.ccob", "t_zstd.ccob", "t.bundle"):
        with open(os.path.join(inputs, name), "rb") as f:
            b = f.read()
        parts.append(b + bytes(-len(b) % 4096))
    path = os.path.join(work, "many.bundles")
    with open(path, "wb") as f:
        for i in range(n):
            f.write(parts[i % 3])
    ref = {arch: sorted(k["name"] for k in kdb_json(kdb, "list", os.path.join(inputs, "t_%s.co" % arch))["kernels"])
           for arch in ("gfx90a", "gfx1100")}
    l = kdb_json(kdb, "list", path)
    check(len(l["code_objects"]) == 2 * n, "%d code objects, want %d" % (len(l["code_objects"]), 2 * n))
    compressed = [c["compressed"] for c in l["code_objects"]]
    check(compressed.count(False) == 2 * len(range(2, n, 3)), "plain bundles between compressed ones")
    for c in l["code_objects"]:
        names = sorted(k["name"] for k in l["kernels"] if k["code_object"] == c["index"])
        check(names == ref[c["arch"]], "code object %d (%s): kernels differ" % (c["index"], c["arch"]))


def test_rocrand(kdb):
    """Issue 19.8: a real library, Debian's librocrand (scripts/deps.sh
    installs librocrand1): its targets and each target's kernels are those
    clang-offload-bundler-15 and llvm-readelf-15 find."""
    lib = "/usr/lib/x86_64-linux-gnu/librocrand.so.1"
    if not os.path.exists(lib):
        fail("%s is missing: scripts/deps.sh installs librocrand1" % lib)
    l = kdb_json(kdb, "list", lib)
    got = {c["target_id"]: sorted(k["name"] for k in l["kernels"] if k["code_object"] == c["index"])
           for c in l["code_objects"]}
    check(len(got) == len(l["code_objects"]), "a target twice: %s" % [c["target_id"] for c in l["code_objects"]])
    with tempfile.TemporaryDirectory() as d:
        fat = os.path.join(d, "fat.bin")
        run(["objcopy", "-O", "binary", "--only-section=.hip_fatbin", lib, fat])
        triples = [t for t in run(["clang-offload-bundler-15", "--list", "--type=o", "--input=" + fat])
                   .stdout.split() if "amdgcn" in t]
        want = {}
        for i, t in enumerate(triples):
            co = os.path.join(d, "%d.co" % i)
            run(["clang-offload-bundler-15", "--unbundle", "--type=o", "--input=" + fat, "--targets=" + t,
                 "--output=" + co])
            syms = run([READELF, "-s", "--wide", co]).stdout.split("\n")
            want[t.split("--", 1)[1]] = sorted({w[-1][:-3] for w in (x.split() for x in syms)
                                                if len(w) >= 8 and w[-1].endswith(".kd")})
    check(sorted(got) == sorted(want), "targets: kerneldb %s, bundler %s" % (sorted(got), sorted(want)))
    for t in want:
        check(got[t] == want[t] and len(want[t]) > 0,
              "%s: %d kernels, llvm-readelf %d" % (t, len(got[t]), len(want[t])))
        # --arch reads that target's bundle entries alone: the same kernels,
        # the same code object numbers
        only = kdb_json(kdb, "list", lib, "--arch", t)
        check(only["code_objects"] == [c for c in l["code_objects"] if c["target_id"] == t] and
              sorted(k["name"] for k in only["kernels"]) == want[t],
              "%s: --arch lists what the full read lists" % t)


def test_twins(kdb, inputs):
    """Kernels pair with their twins by the __nano_twin_ naming rule."""
    for arch in ("gfx90a", "gfx1100"):
        co = os.path.join(inputs, "t_%s.co" % arch)
        shown = {k["name"]: k for k in kdb_json(kdb, "show", co)}
        want = {"_Z4axpyfPKfPfi": "__nano_twin__Z4axpyfPKfPfiPv", "_Z6noargsv": "__nano_twin__Z6noargsPv",
                "lds_kernel": "__nano_twin_lds_kernel"}
        for orig, twin in want.items():
            check(shown[orig].get("twin") == twin, "%s twin %s" % (orig, shown[orig].get("twin")))
            t = shown[twin]
            check(t["twin_of"] == orig, "twin_of of " + twin)
            extra = t["args"][t["twin_arg_index"]]
            check(t["twin_arg_index"] == shown[orig]["explicit_arg_count"], "twin arg index")
            check(extra["size"] == 8 and extra["value_kind"] == "global_buffer", "twin extra arg " + str(extra))
            check(t["explicit_arg_count"] == shown[orig]["explicit_arg_count"] + 1, "one more explicit arg")
        check("twin" not in shown["_Z11hidden_userPj"], "no twin for hidden_user")
        check(shown["__nano_twin__Z4axpyfPKfPfiPv"]["demangled"] ==
              "__nano_twin_axpy(float, float const*, float*, int, void*)", "twin demangles")


def test_cli(kdb, inputs):
    """Exit codes 0/1/2, names, prefixes, messages naming the file."""
    co = os.path.join(inputs, "t_gfx90a.co")
    run([kdb, "show", co, "_Z4axpyfPKfPfi"], 0)
    run([kdb, "show", co, "axpy(float, float const*, float*, int)"], 0)
    run([kdb, "show", co, "hidden_u"], 0)   # unique prefix
    run([kdb, "show", co, "void scale<double>"], 0)
    p = run([kdb, "show", co, "sca"], 1)    # two scale<> instantiations
    check("names 2 kernels" in p.stderr, "ambiguity message: " + p.stderr)
    p = run([kdb, "isa", co, "no_such_kernel"], 1)
    check(co in p.stderr and "no_such_kernel" in p.stderr, "message names file and kernel")
    # a substring names a kernel too; a typo gets suggestions (issue 19.7)
    p = run([kdb, "show", co, "caleIs"], 0)
    check("scale<short>" in p.stdout, "substring lookup: " + p.stdout[:200])
    p = run([kdb, "show", co, "scale<dobule>"], 1)
    check("did you mean void scale<double>(double*, double)" in p.stderr, "suggestion: " + p.stderr)
    p = run([kdb, "show", co, "axyp"], 1)
    check(p.stderr.count("did you mean") == 1 and "did you mean axpy(" in p.stderr, "suggestion: " + p.stderr)
    p = run([kdb, "show", co, "zzzzzzzzzzzz"], 1)
    check("did you mean" not in p.stderr, "no far-fetched suggestion: " + p.stderr)
    p = run([kdb, "list", os.path.join(inputs, "does-not-exist")], 2)
    check("does-not-exist" in p.stderr and "No such file" in p.stderr, "missing file message: " + p.stderr)
    p = run([kdb, "list", SRC], 2)
    check(SRC in p.stderr and "not a GPU code object" in p.stderr, "garbage message: " + p.stderr)
    p = run([kdb, "list", co, "--arch", "gfx942"], 1)
    check("no kernel matches" in p.stderr and co in p.stderr, "list with filters matching nothing")
    p = run([kdb, "frobnicate", co], 2)
    p = run([kdb, "list", co, "--kernels", "("], 2)
    check("regex" in p.stderr, "bad regex message")
    # standard output that cannot be written: said, exit 2 (issue 37.4)
    with open("/dev/full", "w") as full:
        p = subprocess.run([kdb, "list", co], stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    check(p.returncode == 2 and "kerneldb: cannot write standard output: No space left on device" in p.stderr,
          "a full stdout: exit %d, %r" % (p.returncode, p.stderr))
    # a FIFO: read once its writer comes; one nobody writes to is refused,
    # not waited on forever (issue 37.4)
    with tempfile.TemporaryDirectory() as d:
        fifo = os.path.join(d, "co.fifo")
        os.mkfifo(fifo)
        writer = subprocess.Popen(["sh", "-c", 'sleep 1; cat "$1" > "$2"', "sh", co, fifo])
        p = run([kdb, "list", fifo], 0)
        writer.wait(30)
        check("axpy" in p.stdout, "a FIFO's code object is read: " + p.stdout[:200])
        t0 = time.monotonic()
        p = run([kdb, "list", fifo], 2)
        check("is a FIFO nothing was written to in 10 s" in p.stderr and time.monotonic() - t0 < 30,
              "a FIFO without a writer: " + p.stderr)


def test_bad_input(kdb, inputs):
    """Damaged inputs: exit 2 with a message naming the file, never a crash."""
    # names with escape sequences (here OSC "set title" in place of "axpy") reach
    # the terminal as \x1b text, in listings and in messages (issue 19.7)
    with tempfile.TemporaryDirectory() as d:
        esc = os.path.join(d, "esc.co")
        with open(os.path.join(inputs, "t_gfx90a.co"), "rb") as f:
            data = f.read()
        with open(esc, "wb") as f:
            f.write(data.replace(b"axpy", b"\x1b]0;"))
        for args, rc in ((["list", esc], 0), (["show", esc], 0), (["show", esc, "_Z4\x1b"], 0),
                         (["show", esc, "\x1b[2Jnone"], 1)):
            p = subprocess.run([kdb] + args, capture_output=True)
            out = p.stdout + p.stderr
            check(p.returncode == rc and b"\x1b" not in out and b"\\x1b" in out,
                  "%s: escapes shown as text: %r" % (args, out[-300:]))
        j = subprocess.run([kdb, "list", esc, "--json"], capture_output=True)
        names = [k["name"] for k in json.loads(j.stdout)["kernels"]]
        check("_Z4\x1b]0;fPKfPfi" in names, "JSON keeps the name exactly: %s" % names)
    # devices are refused at once, not read without end (issue 19.7)
    for dev in ("/dev/zero", "/dev/urandom", "/dev/null"):
        p = run([kdb, "list", dev], 2)
        check("%s: is a device, not a file" % dev in p.stderr, p.stderr)
    with open(os.path.join(inputs, "t_gfx90a.co"), "rb") as f:
        co = bytearray(f.read())
    with open(os.path.join(inputs, "t.bundle"), "rb") as f:
        bundle = bytearray(f.read())
    with open(os.path.join(inputs, "t_zstd.ccob"), "rb") as f:
        ccob = bytearray(f.read())
    cases = {}
    cases["truncated-elf"] = co[:100]
    cases["truncated-half"] = co[:len(co) // 2]
    shoff = struct.unpack_from("<Q", co, 0x28)[0]
    bad = bytearray(co)
    struct.pack_into("<Q", bad, 0x28, len(co) + 4096)  # section headers outside the file
    cases["shoff-outside"] = bad
    # First NOTE section: point it outside the file / give it a bogus size.
    shentsize, shnum = struct.unpack_from("<HH", co, 0x3a)
    for i in range(shnum):
        off = shoff + i * shentsize
        if struct.unpack_from("<I", co, off + 4)[0] == 7:  # SHT_NOTE
            b = bytearray(co)
            struct.pack_into("<Q", b, off + 0x18, 1 << 40)
            cases["note-offset-outside"] = b
            b = bytearray(co)
            struct.pack_into("<Q", b, off + 0x20, 1 << 40)
            cases["note-size-huge"] = b
            # Corrupt the msgpack payload: a map claiming 2^32-1 entries.
            noff = struct.unpack_from("<Q", co, off + 0x18)[0]
            b = bytearray(co)
            namesz, descsz = struct.unpack_from("<II", co, noff)
            d = noff + 12 + ((namesz + 3) & ~3)
            b[d:d + 5] = b"\xdf\xff\xff\xff\xff"
            cases["msgpack-huge-map"] = b
            b = bytearray(co)
            b[d:d + descsz] = b"\xc1" * descsz
            cases["msgpack-garbage"] = b
            break
    b = bytearray(bundle)
    struct.pack_into("<Q", b, 24, 1 << 60)
    cases["bundle-huge-count"] = b
    b = bytearray(bundle)
    struct.pack_into("<Q", b, 32, len(bundle) * 2)  # first entry offset outside
    cases["bundle-entry-outside"] = b
    cases["bundle-truncated"] = bundle[:len(bundle) // 3]
    b = bytearray(ccob)
    struct.pack_into("<Q", b, 16, 1 << 50)  # claims a petabyte uncompressed
    cases["ccob-huge-claim"] = b
    b = bytearray(ccob)
    struct.pack_into("<Q", b, 16, struct.unpack_from("<Q", ccob, 16)[0] // 2)
    cases["ccob-short-claim"] = b
    cases["ccob-truncated"] = ccob[:len(ccob) // 2]
    b = bytearray(ccob)
    struct.pack_into("<H", b, 6, 7)
    cases["ccob-bad-method"] = b
    cases["empty"] = b""
    with tempfile.TemporaryDirectory() as td:
        for name, data in cases.items():
            path = os.path.join(td, name)
            with open(path, "wb") as f:
                f.write(data)
            # Bounded memory: 4 GB of address space is far below any claim
            # above (KDB_ULIMIT_V=0: no bound, for ASan, whose shadow needs more).
            limit = os.environ.get("KDB_ULIMIT_V", "4000000")
            p = subprocess.run(["sh", "-c", 'test "$0" = 0 || ulimit -v "$0"; exec "$@"', limit,
                                kdb, "list", path], capture_output=True, text=True)
            check(p.returncode == 2, "%s: exit %d, stderr %s" % (name, p.returncode, p.stderr))
            check(path in p.stderr and len(p.stderr.strip()) > len(path) + 5,
                  "%s: message names the file: %s" % (name, p.stderr))
            # a cut file says so, not "no GPU code" or "code object v2" (issue 19.7)
            if name in ("truncated-half", "shoff-outside"):
                check("truncated or damaged ELF: the section header table" in p.stderr,
                      "%s: %s" % (name, p.stderr))
        # one damaged code object of two: the other is read, the damage said,
        # exit 2 (issue 19.7: one bad entry failed the whole file)
        b = bytearray(bundle)
        count, pos = struct.unpack_from("<Q", b, 24)[0], 32
        for i in range(count):
            off, size, tl = struct.unpack_from("<QQQ", b, pos)
            triple = b[pos + 24:pos + 24 + tl].decode()
            pos += 24 + tl
            if "gfx90a" in triple:
                struct.pack_into("<H", b, off + 0x3a, 0xffff)  # e_shentsize: headers past the end
                bad_entry = i
        one_bad = os.path.join(td, "one-bad.bundle")
        with open(one_bad, "wb") as f:
            f.write(b)
        p = run([kdb, "list", one_bad], 2)
        check("bundle 0 entry %d: truncated or damaged ELF" % bad_entry in p.stderr and "skipped" in p.stderr,
              "damage said: %s" % p.stderr)
        j = kdb_json(kdb, "list", one_bad, expect_rc=2)
        ref = sorted(k["name"] for k in kdb_json(kdb, "list", os.path.join(inputs, "t_gfx1100.co"))["kernels"])
        check([c["arch"] for c in j["code_objects"]] == ["gfx1100"] and len(j["damaged"]) == 1 and
              sorted(k["name"] for k in j["kernels"]) == ref, "the good code object read: %s" % j["code_objects"])
        check(kdb_json(kdb, "list", os.path.join(inputs, "t.bundle"))["damaged"] == [], "no damage: []")
        lib = os.path.join(td, "libcut.so")
        with open(os.path.join(inputs, "libt.so"), "rb") as f:
            data = f.read()
        with open(lib, "wb") as f:
            f.write(data[:len(data) // 2])
        p = run([kdb, "list", lib], 2)
        check("file: truncated or damaged ELF: the section header table" in p.stderr and
              "no GPU code" not in p.stderr, "truncated library: %s" % p.stderr)


def test_cuda(kdb, inputs):
    """Cubin kernels and parameter layout: known source and readelf sections."""
    cubin = os.path.join(inputs, "c.cubin")
    check(os.path.exists(cubin), "c.cubin built (nvcc)")
    out = run(["readelf", "-SW", cubin]).stdout
    infos = sorted(re.findall(r"\.nv\.info\.(\S+)", out))
    shown = {k["name"]: k for k in kdb_json(kdb, "show", cubin)}
    check(sorted(shown) == infos, "kernels = .nv.info.<kernel> sections: %s vs %s" % (sorted(shown), infos))
    want = {"saxpy": [(0, 4), (8, 8), (16, 8), (24, 4)], "_Z5mixed4PairsPx": [(0, 16), (16, 2), (24, 8)]}
    for name, layout in want.items():
        k = shown[name]
        check([(a["offset"], a["size"]) for a in k["args"]] == layout, "%s params %s" % (name, k["args"]))
        check(k["kernarg_segment_size"] == layout[-1][0] + layout[-1][1], name + " param block size")
    m = re.search(r"\.nv\.shared\._Z5mixed4PairsPx\s+NOBITS\s+\S+\s+\S+\s+(\S+)", out)
    check(m and shown["_Z5mixed4PairsPx"]["group_segment_size"] == int(m.group(1), 16) >= 1024,
          "shared memory of mixed = size of .nv.shared._Z5mixed4PairsPx")
    check(shown["_Z5mixed4PairsPx"]["demangled"] == "mixed(Pair, short, long long*)", "demangled cubin name")
    check(all(0 < k["vgpr_count"] <= 255 for k in shown.values()), "registers per thread from .nv.info")
    l = kdb_json(kdb, "list", cubin)
    check(l["code_objects"][0]["arch"] == "sm_90", "sm_90")
    # nvcc and clang embed fat binaries; clang -fgpu-rdc an LLVM offload binary
    for host in ("c_fat.o", "c_clang.o", "c_rdc.o"):
        fat = {k["name"]: k for k in kdb_json(kdb, "show", os.path.join(inputs, host))}
        check(sorted(fat) == sorted(shown), host + ": fat binary has the same kernels")
        for name, layout in want.items():
            check([(a["offset"], a["size"]) for a in fat[name]["args"]] == layout, host + ": params of " + name)
    p = run([kdb, "isa", cubin, "saxpy"], 2)
    check("no disassembler" in p.stderr, "isa on a cubin says why it cannot")
    # registers and stack frames as ptxas reports them, -G builds included
    # (issue 19.6: their NVAL records were misread, and -G showed 0 registers)
    for name in ("c.cubin", "c_G.cubin"):
        path = os.path.join(inputs, name)
        with open(path + ".usage") as f:
            usage = f.read()
        want = {}
        for fn, body in re.findall(r"Compiling entry function '(\S+)'(.*?)Compile time", usage, re.S):
            regs = re.search(r"Used (\d+) registers", body)
            frame = re.search(r"(\d+) bytes stack frame", body)
            want[fn] = (int(regs.group(1)), int(frame.group(1)))
        got = {k["name"]: (k["vgpr_count"], k["private_segment_size"]) for k in kdb_json(kdb, "show", path)}
        check(got == want and len(want) == len(infos), "%s: kerneldb %s, ptxas %s" % (name, got, want))
    # CUDA 13 compresses fat binaries by default: refused with the way out,
    # which then reads as the cubin does
    p = run([kdb, "list", os.path.join(inputs, "c_G_fat.o")], 2)
    check("only compressed cubins" in p.stderr and "nvcc -no-compress" in p.stderr
          and "-Xcuda-fatbinary -compress-mode=none" in p.stderr, p.stderr)
    plain = {k["name"]: k["vgpr_count"] for k in kdb_json(kdb, "show", os.path.join(inputs, "c_G_plain.o"))}
    check(plain == {k["name"]: k["vgpr_count"] for k in kdb_json(kdb, "show", os.path.join(inputs, "c_G.cubin"))},
          "-no-compress object: %s" % plain)
    # what a cubin does not say is shown as not known, not as 0
    check(all(k["max_flat_workgroup_size"] is None for k in shown.values()), "max flat workgroup size: null")
    check("max flat workgroup size unknown" in run([kdb, "show", cubin, "saxpy"]).stdout, "show: unknown")
    # an offload binary of bitcode only (-foffload-lto) says so; a damaged
    # one names what is wrong
    p = run([kdb, "list", os.path.join(inputs, "c_rdc_lto.o")], 2)
    check(".llvm.offloading holds no machine code, only 1 LLVM bitcode or PTX image" in p.stderr,
          p.stderr)
    rdc = os.path.join(inputs, "c_rdc.o")
    m = re.search(r"\[\s*\d+\] \.llvm\.offloading\s+\S+\s+\S+\s+(\S+)\s+(\S+)",
                  run(["readelf", "-SW", rdc]).stdout)
    off, size = int(m.group(1), 16), int(m.group(2), 16)
    with open(rdc, "rb") as f:
        img = bytearray(f.read())
    check(img[off:off + 4] == b"\x10\xff\x10\xad", "the section starts with an offload binary")
    for what, at, value, said in (
            ("version", off + 4, 9, ".llvm.offloading: offload binary 0 has version 9"),
            ("size", off + 8, 0xFF, "offload binary 0 claims %d bytes" % (size + 0xFF - (size & 0xFF))),
            ("image offset", None, None, "image 0 (offset")):
        bad_img = bytearray(img)
        if at is None:  # the first entry's image offset, past the binary
            entries = off + int.from_bytes(img[off + 16:off + 24], "little")
            bad_img[entries + 24:entries + 32] = (size + 8).to_bytes(8, "little")
        else:
            bad_img[at] = value
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.o")
            with open(bad, "wb") as f:
                f.write(bad_img)
            p = run([kdb, "list", bad], 2)
            check(said in p.stderr, "damaged %s: %s" % (what, p.stderr))
    # a damaged .nv.info is an error naming the section and the record
    with open(os.path.join(inputs, "c_G.cubin"), "rb") as f:
        img = bytearray(f.read())
    m = re.search(r"\[\s*\d+\] \.nv\.info\s+\S+\s+\S+\s+(\S+)", run(["readelf", "-SW", os.path.join(inputs, "c_G.cubin")]).stdout)
    off = int(m.group(1), 16)
    img[off] = 0x07  # the first record's format
    with tempfile.TemporaryDirectory() as d:
        bad = os.path.join(d, "bad.cubin")
        with open(bad, "wb") as f:
            f.write(img)
        p = run([kdb, "list", bad], 2)
        check("section .nv.info: record at offset 0 has unknown format 7" in p.stderr, p.stderr)


def test_pass_twins(kdb, plugin, work):
    """Twins made by the nanoprobe plugin pair with their kernels."""
    src = os.path.join(os.path.dirname(SRC), "kdb_pass.hip")
    os.makedirs(work, exist_ok=True)
    co = os.path.join(work, "pass_gfx90a.co")
    p = subprocess.run(["hipcc", "-g", "-O2", "-nogpulib", "--offload-arch=gfx90a", "--cuda-device-only",
                        "--no-gpu-bundle-output", "-fpass-plugin=" + plugin, "-c", src, "-o", co],
                       capture_output=True, text=True)
    check(p.returncode == 0, "hipcc with the plugin: " + p.stderr[-2000:])
    shown = {k["name"]: k for k in kdb_json(kdb, "show", co)}
    originals = [n for n in shown if not n.startswith("__nano_twin_")]
    check(sorted(originals) == sorted(["_Z4axpyfPKfPfi", "_Z4fillIdEvPT_S0_", "plain_c", "_Z6noargsv"]),
          "kernels: %s" % sorted(shown))
    for n in originals:
        t = shown[n].get("twin")
        check(t in shown, "%s has a twin (%s); kernels: %s" % (n, t, sorted(shown)))
        tw = shown[t]
        check(tw["twin_of"] == n, "twin_of of " + t)
        extra = tw["args"][tw["twin_arg_index"]]
        check(tw["explicit_arg_count"] == shown[n]["explicit_arg_count"] + 1 and extra["size"] == 8 and
              extra["value_kind"] == "global_buffer", "%s: extra argument %s" % (t, extra))
        check(tw["demangled"].replace("__nano_twin_", "", 1).startswith(
            shown[n]["demangled"].rstrip(")").replace("()", "(")), "twin demangles to the signature + void*")


def test_host_sites(kdb, exe, src):
    """The site table of a host program with CPU kernels (examples/memory):
    every access of the source's kernels, at its line and column, in host
    code (no GPU ISA to map it to)."""
    sites = kdb_json(kdb, "sites", exe, "--isa")
    lines = open(src).read().splitlines()
    want = set()
    for fn in ("scale_coalesced", "scale_strided"):
        body = next(i for i, t in enumerate(lines, 1) if "NANO_KERNEL void " + fn in t) + 2
        text = lines[body - 1]
        # clang puts a store at its "=", a load at its array
        want |= {(fn, body, text.index(" = ") + 2, "store"), (fn, body, text.index("x[") + 1, "load")}
    got = {(s["function"], s["line"], s["column"], s["kind"]) for s in sites}
    check(got == want, "sites %s, the source has %s" % (sorted(got), sorted(want)))
    for s in sites:
        check(s["arch"] == "host" and s["code_object"] is None and s["size"] == 4,
              "host site %s" % s)
        check(s["isa"] == "unknown" and "host code" in s.get("isa_error", ""),
              "host site without ISA says why: %s" % s)
        check(os.path.samefile(s["file"], src), "absolute source path: " + s["file"])
    listed = kdb_json(kdb, "list", exe)
    check(listed["code_objects"] == [] and listed["sites"] == len(sites), "list: %s" % listed)
    p = run([kdb, "sites", exe, "--arch", "gfx90a"], 1)
    check("no site --arch gfx90a" in p.stderr, "a filter matching nothing: " + p.stderr)
    p = run([kdb, "sites", "/bin/true"], 2)
    check("/bin/true" in p.stderr and "no nanoprobe site table" in p.stderr,
          "a host program without sites: " + p.stderr)


def make_zlib(src, dst):
    """Writes src (an offload bundle) as a compressed bundle v2, zlib method."""
    with open(src, "rb") as f:
        raw = f.read()
    comp = zlib.compress(raw, 6)
    hdr_len = 24
    total = hdr_len + len(comp)
    hdr = b"CCOB" + struct.pack("<HHII", 2, 0, total, len(raw)) + struct.pack("<Q", 0)
    with open(dst, "wb") as f:
        f.write(hdr + comp)


def run_in_tempdir(fn):
    with tempfile.TemporaryDirectory() as d:
        fn(d)


def input_cases(kdb, inputs):
    """The cases that read the inputs make_inputs.sh builds, by name."""
    cases = {"containers": lambda: test_containers(kdb, inputs),
             "dwarf-args": lambda: test_dwarf_args(kdb, inputs),
             "many-bundles": lambda: run_in_tempdir(lambda d: test_many_bundles(kdb, inputs, d)),
             "twins": lambda: test_twins(kdb, inputs),
             "cli": lambda: test_cli(kdb, inputs),
             "bad-input": lambda: test_bad_input(kdb, inputs),
             "cuda": lambda: test_cuda(kdb, inputs)}
    for arch in ("gfx90a", "gfx1100"):
        for name, fn in (("notes", test_notes), ("objdump", test_objdump), ("lines", test_lines),
                         ("inlining", test_inlining)):
            cases["%s-%s" % (name, arch)] = (lambda fn, arch: lambda: fn(kdb, inputs, arch))(fn, arch)
    return cases


def main():
    if sys.argv[1:] == ["--list"]:  # for CMake: the cases over the inputs, one per line
        print("\n".join(sorted(input_cases(None, None))))
        return
    if sys.argv[1] == "make-zlib":
        make_zlib(sys.argv[2], sys.argv[3])
        return
    if sys.argv[1] == "pass-twins":
        test_pass_twins(sys.argv[2], sys.argv[3], sys.argv[4])
        print("PASS pass-twins")
        return
    if sys.argv[1] == "host-sites":
        test_host_sites(sys.argv[2], sys.argv[3], sys.argv[4])
        print("PASS host-sites")
        return
    test, kdb, inputs = sys.argv[1], sys.argv[2], sys.argv[3]
    tests = dict(input_cases(kdb, inputs), rocrand=lambda: test_rocrand(kdb))
    tests[test]()
    print("PASS " + test)


if __name__ == "__main__":
    main()
