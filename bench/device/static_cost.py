#!/usr/bin/env python3
"""Static cost of device instrumentation: machine instructions added per
instrumented access, from code objects built with the plugin.

  static_cost.py amdgpu OBJDUMP SITES_DUMP CO...   (AMDGPU code objects)
  static_cost.py ptx PTXAS ARCH READELF PTX...     (PTX; SASS sizes from ptxas)

For each file: instructions of all originals (kernels and device functions
they call) and of all twin-side code (twins and their cloned callees); the
difference divided by the number of sites is the inline cost per access
(argument setup and the call). The device runtime's body
(__nano_dh_access), shared by all sites, is reported separately.
AMDGPU instructions are counted from llvm-objdump; sm_90 SASS instructions
are the .text section sizes of the cubin divided by 16 (one SASS instruction
is 16 bytes on sm_70 and later); PTX instructions are counted too.
"""
import os
import re
import subprocess
import sys
import tempfile

PREFIX = "__nano_twin_"
RUNTIME = "__nano_dh_access"


def side(name):
    if name.startswith(RUNTIME):
        return "runtime"
    if name.startswith(PREFIX) or name.endswith(".nano_twin") or name.endswith("_$_nano_twin"):
        return "twin"
    return "orig"


def amdgpu(objdump, sites_dump, files):
    rows = []
    for co in files:
        syms = subprocess.run([objdump, "-t", co], capture_output=True, text=True,
                              check=True).stdout
        funcs = []  # (start, end, name): symbol sizes exclude alignment padding
        for line in syms.splitlines():
            m = re.match(r"^([0-9a-f]+)\s.*\sF\s+\.text\s+([0-9a-f]+)\s+(?:\.\w+\s+)?(\S+)$", line)
            if m:
                a = int(m.group(1), 16)
                funcs.append((a, a + int(m.group(2), 16), m.group(3)))
        dis = subprocess.run([objdump, "-d", "--no-show-raw-insn", co], capture_output=True,
                             text=True, check=True).stdout
        counts = {name: 0 for _, _, name in funcs}
        for line in dis.splitlines():
            m = re.search(r"//\s*([0-9A-Fa-f]+):", line)
            if not m or not line.startswith("\t"):
                continue
            a = int(m.group(1), 16)
            for lo, hi, name in funcs:
                if lo <= a < hi:
                    counts[name] += 1
        sites = subprocess.run([sites_dump, co], capture_output=True, text=True)
        nsites = len(sites.stdout.splitlines()) if sites.returncode == 0 else 0
        rows.append((co, counts, nsites))
    return rows


def ptx(ptxas, arch, readelf, files):
    rows = []
    for f in files:
        text = open(f).read()
        counts, cur = {}, None
        for line in text.splitlines():
            m = re.match(r"^(?:\.visible\s+|\.weak\s+)?\.(?:entry|func)\s+(?:\(.*?\)\s*)?([\w$.]+)", line)
            if m:
                cur = "ptx:" + m.group(1)
                counts[cur] = 0
            elif line.startswith("}"):
                cur = None
            elif cur:
                l = line.strip()
                if l.endswith(";") and not l.startswith((".", "//", "{", "}")):
                    counts[cur] += 1
        nsites = len(re.findall(r"call(?:\.uni)?\s*\n?\s*" + RUNTIME, text)) or text.count(RUNTIME + ",")
        with tempfile.TemporaryDirectory() as d:
            cubin = os.path.join(d, "k.cubin")
            subprocess.run([ptxas, "-arch=" + arch, f, "-o", cubin], check=True)
            sec = subprocess.run([readelf, "-SW", cubin], capture_output=True, text=True,
                                 check=True).stdout
            for m in re.finditer(r"\]\s+\.text\.(\S+)\s+\S+\s+\S+\s+\S+\s+([0-9a-f]+)", sec):
                counts["sass:" + m.group(1)] = int(m.group(2), 16) // 16
        rows.append((f, counts, nsites))
    return rows


def report(rows, kinds):
    tot = {k: [0, 0, 0, 0] for k in kinds}  # orig, twin, runtime, sites
    for f, counts, nsites in rows:
        for kind in kinds:
            pre = kind + ":" if kind else ""
            c = {n[len(pre):]: v for n, v in counts.items() if n.startswith(pre)}
            o = sum(v for n, v in c.items() if side(n) == "orig")
            t = sum(v for n, v in c.items() if side(n) == "twin")
            r = max([v for n, v in c.items() if side(n) == "runtime"] or [0])
            tot[kind][0] += o
            tot[kind][1] += t
            tot[kind][2] = max(tot[kind][2], r)
            tot[kind][3] += nsites
            per = (t - o) / nsites if nsites else 0.0
            print("  %-28s %-5s sites %3d  original %5d  twin %5d  added/site %6.1f  runtime %d"
                  % (os.path.basename(f), kind or "isa", nsites, o, t, per, r))
    for kind, (o, t, r, n) in tot.items():
        print("  TOTAL %-5s sites %d: added instructions per access %.1f (twin/original %.2fx); "
              "runtime body %d instructions"
              % (kind or "isa", n, (t - o) / n if n else 0.0, t / o if o else 0.0, r))


def main():
    mode = sys.argv[1]
    if mode == "amdgpu":
        report(amdgpu(sys.argv[2], sys.argv[3], sys.argv[4:]), [""])
    elif mode == "ptx":
        report(ptx(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]), ["ptx", "sass"])
    else:
        sys.exit("usage: static_cost.py amdgpu|ptx ...")


main()
