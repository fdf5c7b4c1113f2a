#!/usr/bin/env python3
"""Checks one sample of the GPU suite (run.sh): what it printed, what
MemoryAnalysis reported and what the trace holds. usage: check.py SAMPLE WORK"""
import json
import sqlite3
import sys

sample, work = sys.argv[1], sys.argv[2]
out = open(f"{work}/{sample}.out").read()
err = open(f"{work}/{sample}.err").read()
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def rows(sql, *args):
    return db.execute(sql, args).fetchall()


# cached, cached_handbuilt: strided and handbuilt built by nvcc without the
# plugin, their twins from a kernel cache
program = {"inject": "cublas", "cached": "strided", "cached_handbuilt": "handbuilt",
           "timeline": "vecadd", "graph_timeline": "graph"}.get(sample, sample)
expect(f"{program} ok" in out and "rc 0" in out, f"the program's result under the runtime: {out.strip()!r} {err[-300:]!r}")
try:  # read-only: a run that wrote no trace must not get an empty one here
    db = sqlite3.connect(f"file:{work}/{sample}.rpd?mode=ro", uri=True)
    db.execute("select 1 from rocpd_op limit 1")
except sqlite3.Error as e:
    for f in failures + [f"the trace {work}/{sample}.rpd: {e}; stderr: {err[-600:]!r}"]:
        print(f"FAIL {sample}: {f}")
    sys.exit(1)
db.row_factory = sqlite3.Row
# the dispatch tables exist once a dispatch was instrumented
instrumented = rows("select 1 from sqlite_master where name = 'nano_dispatch'")
dispatches = rows("select * from nano_dispatch") if instrumented else []
for d in dispatches:
    expect(d["backend"] == "cuda" and d["arch"].startswith("sm_"), f"dispatch {d['kernel']}: backend {d['backend']} arch {d['arch']}")
    expect(d["dropped"] == 0 and d["decode_errors"] == 0 and d["lost_bytes"] == 0,
           f"dispatch {d['kernel']}: dropped {d['dropped']} decode errors {d['decode_errors']} lost {d['lost_bytes']}")
    if sample not in ("timeline", "graph_timeline"):  # no access recorded: block times, sums
        expect(d["records"] > 0, f"dispatch {d['kernel']}: no records")
memory = rows("select * from nano_memory") if instrumented else []
ops = rows("select o.start, o.\"end\", o.queueId, d.string as name, t.string as type, x.api_id "
           "from rocpd_op o join rocpd_string d on d.id = o.description_id "
           "join rocpd_string t on t.id = o.opType_id left join rocpd_api_ops x on x.op_id = o.id")
kernels = [o for o in ops if o["type"] == "ConcurrentKernel"]
if sample == "subscriber":  # CUPTI is the program's: nanoprobe records no CUDA ops
    expect(not kernels, f"CUPTI is the program's, yet {len(kernels)} kernel ops are in the trace")
else:
    expect(kernels, "CUPTI: no kernel ops in the trace")
    # a kernel launched on the device has no host call to link to
    expect(all(o["api_id"] for o in kernels if not (sample == "dynpar" and "twice" in o["name"])),
           "CUPTI: a kernel op not linked to its call")


def replayed_ops():
    """The types of the ops linked to the graph launches, in order."""
    return [r["type"] for r in rows(
        "select t.string as type from rocpd_op o join rocpd_string t on t.id = o.opType_id "
        "join rocpd_api_ops x on x.op_id = o.id join rocpd_api a on a.id = x.api_id "
        "join rocpd_string s on s.id = a.apiName_id where s.string like 'cudaGraphLaunch%'")]


def at(kind, **where):
    return [m for m in memory if m["kind"] == kind and all(m[k] == v for k, v in where.items())]


if sample == "vecadd":
    n = 1 << 20
    expect(len(dispatches) == 1, f"one instrumented dispatch, got {len(dispatches)}")
    expect(len(memory) == 4, f"4 locations (a, g_scale, b, c), got {len(memory)}")
    for m in memory:
        expect(m["accesses"] == n, f"{m['line']}:{m['column']} {m['kind']}: {m['accesses']} accesses, not {n}")
        expect(m["sectors_used"] == m["sectors_needed"], f"{m['line']}:{m['column']}: coalesced, yet {m['sectors_used']} sectors used for {m['sectors_needed']}")
elif sample == "dynpar":
    # launcher's one dispatch holds its child's accesses: the device-side
    # launch started the child's twin with launcher's buffer
    n = 4096
    expect(len(dispatches) == 1 and "launcher" in dispatches[0]["kernel"],
           f"one instrumented dispatch, launcher's, got {[d['kernel'] for d in dispatches]}")
    child = [m for m in memory if "twice" in m["function"]]
    expect(len(child) == 2 and all(m["accesses"] == n and m["sectors_used"] == m["sectors_needed"] for m in child),
           f"the child's coalesced load and store of {n} elements, in launcher's dispatch: {[dict(m) for m in child]}")
    mark = [m for m in memory if "launcher" in m["function"] and m["accesses"] == 32]
    expect(len(mark) == 1, f"launcher's store of 32 lanes: {[dict(m) for m in memory]}")
elif sample == "graph_timeline":
    # graph with KernelTimeline and MemoryAnalysis summed on the device: the
    # tables of the replays are placed at capture, zeroed and copied back by
    # nodes of the graph (which the trace leaves out): every dispatch, the
    # three replays included, summed by its twin, no record, its one block
    # timed at the dispatch's start, and the answers of `graph`'s records
    expect(len(dispatches) == 4, f"the warm-up and each of the 3 replays are dispatches, got {len(dispatches)}")
    expect(all(d["aggregate"] == "device" and d["records"] == 0 for d in dispatches),
           f"every dispatch summed by its twin, no record: {[(d['aggregate'], d['records']) for d in dispatches]}")
    expect(len(memory) == 8 and all(m["accesses"] == 32 and m["sectors_used"] == m["sectors_needed"] for m in memory),
           f"each dispatch: a coalesced load and store of 32 lanes, got {[(m['kind'], m['accesses']) for m in memory]}")
    blocks = rows("select b.*, d.start as d_start, d.\"end\" as d_end from nano_block b "
                  "join nano_dispatch d on d.id = b.dispatch_id")
    expect(sorted(b["dispatch_id"] for b in blocks) == sorted(d["id"] for d in dispatches)
           and all(b["start"] == b["d_start"] <= b["end"] for b in blocks),
           f"one block per dispatch, timed from its dispatch's start: {[dict(b) for b in blocks]}")
    replayed = replayed_ops()
    expect(replayed == ["ConcurrentKernel"] * 3,
           f"each replay's one op is its kernel: the tables' memsets and copies are not the program's, got {replayed}")
elif sample == "timeline":
    # vecadd's 4,096 blocks of 256 threads, each timed by the twin on the
    # device's clock with the SM it ran on; no access recorded
    blocks = rows("select b.*, d.start as d_start, d.\"end\" as d_end from nano_block b "
                  "join nano_dispatch d on d.id = b.dispatch_id")
    expect(len(dispatches) == 1 and dispatches[0]["records"] == 0,
           f"one dispatch, no records: {[dict(d) for d in dispatches]}")
    expect(len(blocks) == 4096, f"4096 blocks timed, got {len(blocks)}")
    expect(len({(b["block_x"], b["block_y"], b["block_z"]) for b in blocks}) == len(blocks)
           and all(b["block_x"] < 4096 and b["block_y"] == 0 and b["block_z"] == 0 for b in blocks),
           "each block of the grid once")
    expect(all(b["d_start"] <= b["start"] <= b["end"] for b in blocks), "every block starts in its dispatch, ends after it starts")
    expect(min((b["start"] for b in blocks), default=0) == (blocks[0]["d_start"] if blocks else 1),
           "the first block starts with the dispatch")
    units = {b["unit"] for b in blocks}
    expect(len(units) > 1 and max(units) < 1024, f"blocks spread over SMs: {sorted(units)[:8]}")
elif sample in ("strided", "cached"):
    n = 1 << 16
    (load,) = at("load") or [None]
    (store,) = at("store") or [None]
    expect(load and load["accesses"] == n, "strided load: n accesses")
    expect(load and load["sectors_used"] == 8 * load["sectors_needed"], "strided load: 8 times the sectors needed")
    expect(load and load["lines_used"] == 8 * load["lines_needed"], "strided load: 8 times the lines needed")
    expect(store and store["sectors_used"] == store["sectors_needed"], "strided store: coalesced")
elif sample == "bank":
    shared = [m for m in memory if m["space"] == "shared"]
    expect(len(shared) == 2, f"a shared store and load, got {len(shared)}")
    for m in shared:
        expect(m["executions"] == 64 and m["bank_conflicts"] == 64, f"{m['kind']}: {m['executions']} warp accesses, {m['bank_conflicts']} conflicts (64 and 64 expected)")
elif sample == "atomics":
    atomic = at("atomic")
    expect(len(atomic) == 1 and atomic[0]["accesses"] == 1 << 16, "one atomic location, 65536 accesses")
elif sample == "clusterex":
    atomic = at("atomic")
    expect(len(dispatches) == 1, f"one instrumented dispatch (the twin of a cluster launch), got {len(dispatches)}")
    expect(len(atomic) == 1 and atomic[0]["accesses"] == 8 * 64, "one atomic location, one access per thread (512)")
elif sample == "devfunc":
    fetch = [m for m in memory if m["function"] == "_Z5fetchPKfi" and m["kind"] == "load"]
    expect(len(fetch) == 1 and fetch[0]["accesses"] == 1 << 16, "the load in fetch(), at its own line, 65536 accesses")
elif sample == "streams":
    spins = [o for o in kernels if "spin" in o["name"]]
    expect(len(spins) == 2, f"two spin kernels, got {len(spins)}")
    if len(spins) == 2:
        a, b = spins
        expect(a["queueId"] != b["queueId"], "on two streams")
        expect(max(a["start"], b["start"]) < min(a["end"], b["end"]), "instrumented and traced, the two kernels still overlap in time")
    # the reports, in the order dispatches ended: the short second one first
    ended = [r["dispatch"] for r in map(json.loads, open(f"{work}/{sample}.json")) if r["analyzer"] == "dispatch"]
    expect(ended == [2, 1], f"the short twin on stream 2 ends before the long one launched before it on stream 1, got {ended}")
elif sample in ("graph", "graph_relaxed", "handbuilt", "cached_handbuilt"):
    expect(len(dispatches) == 4, f"the warm-up and each of the 3 replays are dispatches, got {len(dispatches)}")
    expect(all(d["records"] == 2 for d in dispatches), "each dispatch: one warp's load and store records")
    expect(len(memory) == 8 and all(m["accesses"] == 32 for m in memory),
           f"each dispatch: a load and a store of 32 lanes, got {[(m['kind'], m['accesses']) for m in memory]}")
    expect(len({d["id"] for d in dispatches}) == 4, "four dispatches, four ids")
    expect(len([o for o in kernels if "inc" in o["name"] or "3incPi" in o["name"]]) == 4, "the warm-up's and each replay's kernel are ops")
    replayed = replayed_ops()
    expect(replayed == ["ConcurrentKernel"] * 3,
           f"each replay's one op is its kernel: the copies nanoprobe adds to the graph are not the program's, got {replayed}")
    said = [l for l in err.splitlines() if "uninstrumented" in l]
    expect(not said, f"every replay instrumented, nothing said: {said}")
if sample in ("graph", "graph_relaxed"):
    # what rpd graph joins: the capture's graph, instantiated, launched three times
    args = {}
    for name, a in rows("select s.string, g.string from rocpd_api a join rocpd_string s on s.id = a.apiName_id "
                        "join rocpd_ustring g on g.id = a.args_id where s.string like 'cuda%Graph%' "
                        "or s.string like 'cudaStream%Capture%' order by a.start"):
        args.setdefault(name, []).append(dict(kv.split(" = ") for kv in a.split(" | ")) if a else {})
    ended = args.get("cudaStreamEndCapture", [{}])[0]
    made = args.get("cudaGraphInstantiate", [{}])[0]
    launched = args.get("cudaGraphLaunch", [])
    expect(ended.get("graph") and made.get("graph") == ended["graph"] and made.get("graphExec")
           and len(launched) == 3 and all(l.get("graphExec") == made["graphExec"] for l in launched),
           f"graph calls carry the graph and the executable (rpd graph): {args}")
elif sample == "conditional":
    expect(len(dispatches) == 1 and dispatches[0]["records"] == 2,
           f"the warm-up alone is a dispatch (the body holds the original), got {len(dispatches)}")
    said = [l for l in err.splitlines() if "captured into a conditional node's body graph" in l]
    expect(len(said) == 1 and "3incPi" in said[0], f"said once, naming the kernel: {err[-400:]!r}")
    expect(len([o for o in kernels if "inc" in o["name"] or "3incPi" in o["name"]]) == 4,
           "the warm-up's kernel and each replay's body kernel are ops")
elif sample in ("cublas", "inject"):
    expect(not dispatches, "a library kernel without a twin is not instrumented")
    expect(any("gemm" in o["name"].lower() for o in kernels), "cuBLAS's GEMM kernel is traced")
    calls = {r[0] for r in rows("select s.string from rocpd_api a join rocpd_string s on s.id = a.apiName_id "
                                "join rocpd_string d on d.id = a.domain_id where d.string = 'cuda'")}
    expect({"cudaMalloc", "cudaMemcpy"} <= calls, f"the program's CUDA calls are traced, got {sorted(calls)[:8]}")
    copies = [o for o in ops if o["type"] == "Memcpy"]
    expect(len(copies) >= 3 and all(o["api_id"] for o in copies), "its three copies are ops linked to their calls")
elif sample == "subscriber":
    said = [l for l in err.splitlines() if "another CUPTI client" in l]
    expect(said and "subscriber sample" in said[0], f"the tracer says who holds CUPTI: {err[-400:]!r}")
    seen = [int(l.rsplit(" ", 1)[1]) for l in out.splitlines() if l.startswith("runtime calls seen")]
    expect(seen and seen[0] > 0, f"the program's own subscriber sees its calls: {out.strip()!r}")
    expect(len(dispatches) == 1, f"the rest works: one instrumented dispatch, got {len(dispatches)}")
    expect(len(memory) == 2 and all(m["accesses"] == 1 << 16 and m["sectors_used"] == m["sectors_needed"] for m in memory),
           f"the rest works: a coalesced load and store of 65536 lanes, got {[dict(m) for m in memory]}")
elif sample == "dynshared":
    expect(len(dispatches) == 1 and dispatches[0]["shared_bytes"] == 1024, "one dispatch with 1024 dynamic shared bytes")
    glob = [m for m in memory if m["space"] == "global"]
    shared = [m for m in memory if m["space"] == "shared"]
    expect(len(glob) == 2 and all(m["accesses"] == 1 << 14 and m["sectors_used"] == m["sectors_needed"] for m in glob),
           "a coalesced global load and store of 16384 lanes")
    expect(len(shared) == 2 and all(m["executions"] == 512 and m["bank_conflicts"] == 0 for m in shared),
           f"a shared store and load, 512 warp accesses each, no bank conflict: {[dict(m) for m in shared]}")
elif sample == "launchable":
    expect("did not launch" not in err, f"both twins launch: {err[-400:]!r}")
    shape = sorted((d["kernel"], d["block_x"], d["shared_bytes"]) for d in dispatches)
    expect(len(dispatches) == 2 and shape[0][0].startswith("bigshared") and shape[0][1:] == (1024, 65536)
           and shape[1][0].startswith("hungry") and shape[1][1] == 1024,
           f"two instrumented dispatches: bigshared with 64 KiB of dynamic shared memory and hungry, "
           f"1024 threads each, got {shape}")

for f in failures:
    print(f"FAIL {sample}: {f}")
if not failures:
    print(f"PASS {sample}: {len(dispatches)} instrumented dispatches, {len(memory)} locations, {len(kernels)} kernel ops")
sys.exit(1 if failures else 0)
