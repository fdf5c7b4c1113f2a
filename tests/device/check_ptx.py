#!/usr/bin/env python3
"""Checks a PTX file built with the plugin: ptxas accepts it for the given
arch, every .entry has its twin as an .entry with exactly one more parameter
(a 64-bit pointer), and the launch bounds directives match (a twin whose
kernel has no block-size bound has .maxntid 1024 besides).

With SITES_DUMP and KERNELDB given, the cubin ptxas makes keeps the site
table (a global, as PTX has no sections) and `kerneldb sites --json` lists
the same sites as dh_comms' reader, attributed to the cubin's code object.

usage: check_ptx.py PTX PTXAS ARCH CXXFILT [SITES_DUMP KERNELDB]
"""
import json
import os
import re
import subprocess
import sys
import tempfile

from twin_names import check_pairs

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import fail  # noqa: E402 (tests/testlib.py)


def entries(ptx):
    out = {}
    for m in re.finditer(r"\.entry\s+([\w$.]+)\s*\((.*?)\)\s*([^{]*)\{", ptx, re.S):
        params = re.findall(r"\.param\s+\.(\w+)", m.group(2))
        bounds = sorted((k, re.sub(r"\s+", "", v)) for k, v in
                        re.findall(r"\.(maxntid|minnctapersm|reqntid|maxnreg)\s+([\d, ]+)", m.group(3)))
        out[m.group(1)] = (params, bounds)
    return out


def check_cubin_sites(cubin, arch, sites_dump, kerneldb):
    dump = subprocess.run([sites_dump, cubin], capture_output=True, text=True)
    if dump.returncode != 0:
        fail("%s: sites: %s" % (cubin, dump.stdout + dump.stderr))
    ids = sorted(line.split("\t")[0] for line in dump.stdout.splitlines() if line)
    if not ids:
        fail("%s: no site table in the cubin" % cubin)
    out = subprocess.run([kerneldb, "sites", cubin, "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        fail("kerneldb sites %s: %s" % (cubin, out.stderr))
    sites = json.loads(out.stdout)
    if sorted(s["id"] for s in sites) != ids:
        fail("kerneldb sites: %s, the table holds %s" % ([s["id"] for s in sites], ids))
    for s in sites:
        if s["arch"] != arch or s["code_object"] is None:
            fail("site %s: arch %r, code object %r" % (s["id"], s["arch"], s["code_object"]))
    print("ok kerneldb reads %d sites from the %s cubin" % (len(sites), arch))


def main():
    ptxf, ptxas, arch, cxxfilt = sys.argv[1:5]
    sites_dump, kerneldb = (sys.argv[5:7] + [None, None])[:2]
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "sample.cubin")
        r = subprocess.run([ptxas, "-arch=" + arch, ptxf, "-o", cubin], capture_output=True, text=True)
        if r.returncode != 0:
            fail("ptxas -arch=%s %s: %s" % (arch, ptxf, r.stderr))
        if kerneldb:
            check_cubin_sites(cubin, arch, sites_dump, kerneldb)
    ptx = open(ptxf).read()
    ents = entries(ptx)
    pairs, errors = check_pairs(set(ents), cxxfilt)
    if errors or not pairs:
        fail("%s: %s" % (ptxf, "; ".join(errors) or "no kernels"))
    for orig, twin in pairs.items():
        (op, ob), (tp, tb) = ents[orig], ents[twin]
        if tp[:-1] != op or tp[-1] != "u64":
            fail("%s: params %s, original %s + u64" % (twin, tp, op))
        # a kernel without a block-size bound: its twin gets .maxntid 1024
        # (1024 threads at most, so ptxas caps the twin's registers)
        # (LLVM 15 writes it ".maxntid 1024, 1, 1", LLVM 22 ".maxntid 1024")
        want = ob
        if not any(k in ("maxntid", "reqntid") for k, _ in ob):
            bound = [b for b in tb if b in (("maxntid", "1024"), ("maxntid", "1024,1,1"))]
            want = sorted(ob + (bound[:1] or [("maxntid", "1024")]))
        if tb != want:
            fail("%s: launch bounds %s, original %s: want %s" % (twin, tb, ob, want))
        print("ok %s -> %s: %d+1 params, bounds %s" % (orig, twin, len(op), tb))


main()
