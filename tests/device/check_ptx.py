#!/usr/bin/env python3
"""Checks a PTX file built with the plugin: ptxas accepts it for the given
arch, every .entry has its twin as an .entry with exactly one more parameter
(a 64-bit pointer), and the launch bounds directives match.

usage: check_ptx.py PTX PTXAS ARCH CXXFILT
"""
import re
import os
import subprocess
import sys

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


def main():
    ptxf, ptxas, arch, cxxfilt = sys.argv[1:5]
    r = subprocess.run([ptxas, "-arch=" + arch, ptxf, "-o", "/dev/null"], capture_output=True, text=True)
    if r.returncode != 0:
        fail("ptxas -arch=%s %s: %s" % (arch, ptxf, r.stderr))
    ptx = open(ptxf).read()
    ents = entries(ptx)
    pairs, errors = check_pairs(set(ents), cxxfilt)
    if errors or not pairs:
        fail("%s: %s" % (ptxf, "; ".join(errors) or "no kernels"))
    for orig, twin in pairs.items():
        (op, ob), (tp, tb) = ents[orig], ents[twin]
        if tp[:-1] != op or tp[-1] != "u64":
            fail("%s: params %s, original %s + u64" % (twin, tp, op))
        if tb != ob:
            fail("%s: launch bounds %s, original %s" % (twin, tb, ob))
        print("ok %s -> %s: %d+1 params, bounds %s" % (orig, twin, len(op), tb))


main()
