#!/usr/bin/env python3
"""Checks an AMDGPU code object built with the plugin: every kernel has its
twin (naming rule), the twin has exactly one more explicit argument (8 bytes,
global buffer) with the hidden arguments after it, the same launch bounds and
wavefront size; the site table section decodes and names the kernels.

With KERNELDB given, `kerneldb list --json` must pair every kernel with the
same twin, and `kerneldb sites --json --isa` must list the table's sites,
map every site of a kernel to the twin's instructions and give a verdict on
the original's width that agrees with the sample's `// ISA: KIND VERDICT
[WIDTH]` annotations (on the access's line); sites of device functions kept out of line
get an error naming them.

usage: check_amdgpu.py CODE_OBJECT WAVE_SIZE READELF CXXFILT SITES_DUMP [KERNELDB]
"""
import json
import os
import re
import subprocess
import sys

import yaml

from twin_names import PREFIX, check_pairs

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import fail  # noqa: E402 (tests/testlib.py)


def main():
    co, wave, readelf, cxxfilt, sites_dump = sys.argv[1:6]
    kerneldb = sys.argv[6] if len(sys.argv) > 6 else None
    notes = subprocess.run([readelf, "--notes", co], capture_output=True, text=True,
                           check=True).stdout
    start = notes.index("---")
    end = notes.index("...", start)
    md = yaml.safe_load(notes[start:end])
    kernels = {k[".name"]: k for k in md["amdhsa.kernels"]}
    originals = [k for k in kernels if not k.startswith(PREFIX)]
    if not originals:
        fail("%s: no kernels" % co)
    pairs, errors = check_pairs(set(kernels), cxxfilt)
    if errors:
        fail("%s: %s" % (co, "; ".join(errors)))
    for orig, twin in pairs.items():
        o, t = kernels[orig], kernels[twin]
        oargs, targs = o.get(".args", []), t.get(".args", [])
        oexp = [a for a in oargs if not a[".value_kind"].startswith("hidden")]
        texp = [a for a in targs if not a[".value_kind"].startswith("hidden")]
        if len(texp) != len(oexp) + 1:
            fail("%s: %d explicit args, original %d" % (twin, len(texp), len(oexp)))
        for a, b in zip(oexp, texp):
            if (a[".size"], a[".value_kind"], a[".offset"]) != (b[".size"], b[".value_kind"], b[".offset"]):
                fail("%s: argument %r differs from the original's %r" % (twin, b, a))
        ohid = [a[".value_kind"] for a in oargs if a[".value_kind"].startswith("hidden")]
        thid = [a[".value_kind"] for a in targs if a[".value_kind"].startswith("hidden")]
        if ohid != thid:
            fail("%s: hidden arguments %s, original %s" % (twin, thid, ohid))
        desc = texp[-1]
        if desc[".size"] != 8 or desc[".value_kind"] != "global_buffer":
            fail("%s: trailing argument %r is not an 8-byte global buffer" % (twin, desc))
        last_explicit = max(i for i, a in enumerate(targs) if a is desc)
        for i, a in enumerate(targs):
            if a[".value_kind"].startswith("hidden") and (i < last_explicit or a[".offset"] < desc[".offset"] + 8):
                fail("%s: hidden argument %r before the descriptor" % (twin, a))
        for key in (".max_flat_workgroup_size", ".wavefront_size", ".reqd_workgroup_size"):
            if o.get(key) != t.get(key):
                fail("%s: %s %r, original %r" % (twin, key, t.get(key), o.get(key)))
        if t.get(".uses_dynamic_stack") and not o.get(".uses_dynamic_stack"):
            fail("%s: uses a dynamic stack (%s bytes), the original does not" % (
                twin, t.get(".private_segment_fixed_size")))
        if str(t[".wavefront_size"]) != wave:
            fail("%s: wavefront size %s, expected %s" % (twin, t[".wavefront_size"], wave))
        print("ok %s -> %s: %d+1 args, %d hidden after them, flat wg %s, wave %s" % (
            orig, twin, len(oexp), len(thid), t[".max_flat_workgroup_size"], t[".wavefront_size"]))
    if kerneldb:
        out = subprocess.run([kerneldb, "list", co, "--json"], capture_output=True, text=True)
        if out.returncode != 0:
            fail("kerneldb list %s: %s" % (co, out.stderr))
        kdb = {k["name"]: k for k in json.loads(out.stdout)["kernels"]}
        for orig, twin in pairs.items():
            if kdb.get(orig, {}).get("twin") != twin or kdb.get(twin, {}).get("twin_of") != orig:
                fail("kerneldb pairs %s with %r, expected %s" % (orig, kdb.get(orig), twin))
        print("ok kerneldb pairs %d kernels with their twins" % len(pairs))
    sites = subprocess.run([sites_dump, co], capture_output=True, text=True)
    if sites.returncode != 0:
        fail("%s: sites: %s" % (co, sites.stdout + sites.stderr))
    rows = [line.split("\t") for line in sites.stdout.splitlines() if line]
    site_kernels = {r[1] for r in rows}
    print("ok %d sites in functions %s" % (len(rows), sorted(site_kernels)))
    if kerneldb:
        check_site_isa(co, kerneldb, rows, set(pairs))


def annotations(path):
    """{(line, kind): (verdict, width or None)} from `// ISA:` comments."""
    out = {}
    for number, text in enumerate(open(path), 1):
        m = re.search(r"//\s*ISA:\s*(\w+)\s+(\w+)(?:\s+(\d+))?", text)
        if m:
            out[(number, m.group(1))] = (m.group(2), m.group(3) and int(m.group(3)))
    return out


def check_site_isa(co, kerneldb, rows, originals):
    out = subprocess.run([kerneldb, "sites", co, "--json", "--isa"], capture_output=True, text=True)
    if out.returncode != 0:
        fail("kerneldb sites %s: %s" % (co, out.stderr))
    sites = json.loads(out.stdout)
    if sorted(s["id"] for s in sites) != sorted(r[0] for r in rows):
        fail("kerneldb sites %s: ids %s, the table holds %s" % (
            co, [s["id"] for s in sites], [r[0] for r in rows]))
    verdicts = {}
    for s in sites:
        where = "%s %s:%d:%d %s" % (s["id"], os.path.basename(s["file"]), s["line"], s["column"],
                                      s["kind"])
        if s["function"] not in originals:
            if "device function" not in s.get("isa_error", ""):
                fail("%s in %s (no kernel): isa_error %r" % (where, s["function"], s.get("isa_error")))
            continue
        if "isa_error" in s:
            fail("%s: %s" % (where, s["isa_error"]))
        twin = [i for i in s["insns"] if i["twin"]]
        orig = [i for i in s["insns"] if not i["twin"]]
        if not twin:
            fail("%s: no instruction of the twin at the site's position" % where)
        for i in s["insns"]:
            mem = i["insn"].get("mem", {})
            if mem.get("op") != s["kind"]:
                fail("%s: instruction %s is a %r" % (where, i["insn"]["mnemonic"], mem.get("op")))
        if s["isa"] == "wider" and (s["isa_width"] <= s["size"] or s["isa_width"] % s["size"]):
            fail("%s: widened to %d bytes from %d" % (where, s["isa_width"], s["size"]))
        if s["isa"] in ("same", "wider") and not orig:
            fail("%s: verdict %s without an instruction of the original" % (where, s["isa"]))
        verdicts[(s["line"], s["kind"])] = (s["isa"], s["isa_width"])
    for key, (verdict, width) in annotations(sites[0]["file"]).items() if sites else []:
        got = verdicts.get(key)
        if not got or got[0] != verdict or (width is not None and got[1] != width):
            fail("%s: line %d %s: %r, the sample says %s %s" % (co, key[0], key[1], got, verdict,
                                                                width or ""))
    print("ok kerneldb maps %d sites to instructions: %s" % (
        len(sites), sorted(set(v for v, _ in verdicts.values()))))


main()
