#!/usr/bin/env python3
"""Compares MemoryAnalysis's answers of one program run twice: its records
summed on the host (NANO_AGGREGATE=host) and its twins' own sums
(NANO_AGGREGATE=device), every field of nano_memory per kernel and location,
summed over the run's dispatches (streams may number them otherwise). The
device run must have summed at least one dispatch there.
usage: compare_sums.py NAME HOST.rpd DEVICE.rpd"""
import sqlite3
import sys

name, host_path, device_path = sys.argv[1:4]
COLUMNS = ("kernel, file, line, \"column\", function, kind, space, access_bytes, line_bytes, "
           "sector_bytes")
SUMS = ("executions", "accesses", "bytes", "lines_needed", "lines_used", "sectors_needed",
        "sectors_used", "bank_conflicts")


def answers(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    sums = ", ".join(f"sum({c})" for c in SUMS)
    memory = db.execute(f"select {COLUMNS}, {sums} from nano_memory group by {COLUMNS} "
                        f"order by {COLUMNS}").fetchall()
    where = dict(db.execute("select aggregate, count(*) from nano_dispatch group by aggregate"))
    return memory, where


failures = []
try:
    host, host_where = answers(host_path)
    device, device_where = answers(device_path)
except sqlite3.Error as e:
    print(f"FAIL {name} summed: the traces cannot be read: {e}")
    sys.exit(1)
if set(host_where) != {"host"}:
    failures.append(f"the records' run summed on the device: {host_where}")
if not device_where.get("device"):
    failures.append(f"no dispatch was summed by its twin: {device_where}")
if not host:
    failures.append("MemoryAnalysis reported no location")
hosts = {r[:10]: r[10:] for r in host}
devices = {r[:10]: r[10:] for r in device}
for key in sorted(set(hosts) | set(devices), key=repr):
    a, b = hosts.get(key), devices.get(key)
    if a != b:
        diff = ", ".join(f"{c} {x} vs {y}" for c, x, y in zip(SUMS, a or [None] * 8, b or [None] * 8)
                         if x != y)
        failures.append(f"{key[0]} {key[1]}:{key[2]}:{key[3]} {key[5]}: records vs device: {diff}")
for f in failures[:20]:
    print(f"FAIL {name} summed: {f}")
if not failures:
    print(f"PASS {name} summed: {len(host)} locations, the same from records and from the twins' sums "
          f"({device_where.get('device', 0)} dispatches summed on the device)")
sys.exit(1 if failures else 0)
