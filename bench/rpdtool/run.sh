#!/usr/bin/env bash
# Benchmark of `rpd export` on a synthetic trace (default 10^6 API calls on 8
# threads, 2*10^5 GPU ops with flows): wall time, events per second, peak
# memory, and the ratio to a baseline measured in the same run: the sqlite3
# shell writing the same API and op rows (strings joined) as JSON.
# usage: bench/rpdtool/run.sh [BUILD_DIR] (default ./build); N=<api rows>
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
rpd=$build/tools/rpd/rpd
n=${N:-1000000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$rpd" create "$work/big.rpd"
python3 - "$work/big.rpd" "$n" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); n = int(sys.argv[2]); T = 10**12
db.execute("INSERT INTO rocpd_string(string) VALUES (''),('hip'),('hipLaunchKernel'),('kern'),('KernelExecution')")
db.execute("INSERT INTO rocpd_ustring(string) VALUES ('')")
db.executemany("INSERT INTO rocpd_api(pid,tid,start,end,apiName_id,category_id,domain_id,args_id) "
               "VALUES (1,?,?,?,3,1,2,1)", ((1 + i % 8, T + i * 1000, T + i * 1000 + 500) for i in range(n)))
db.executemany("INSERT INTO rocpd_op(gpuId,queueId,sequenceId,start,end,description_id,opType_id) "
               "VALUES (?,0,?,?,?,4,5)", ((i % 4, i, T + i * 5000 + 600, T + i * 5000 + 4000) for i in range(n // 5)))
db.executemany("INSERT INTO rocpd_api_ops(api_id,op_id) VALUES (?,?)", ((i * 5 + 1, i + 1) for i in range(n // 5)))
db.commit()
PY
secs() { python3 -c 'import sys,time; print(f"{time.monotonic():.6f}")'; }
t0=$(secs)
/usr/bin/time -f "%M" -o "$work/rss" "$rpd" export "$work/big.rpd" -o "$work/out.json"
t1=$(secs)
sqlite3 -json "$work/big.rpd" "SELECT * FROM api ORDER BY pid, tid, start; SELECT * FROM op;" > "$work/base.json"
t2=$(secs)
python3 - "$t0" "$t1" "$t2" "$n" "$(cat "$work/rss")" "$work/out.json" "$work/base.json" <<'PY'
import os, sys
t0, t1, t2 = map(float, sys.argv[1:4]); n = int(sys.argv[4]); rss = int(sys.argv[5])
events = n + n // 5 + 2 * (n // 5)
exp, base = t1 - t0, t2 - t1
print(f"rpd export: {n} calls, {n // 5} ops, {n // 5} flows -> {events} events, "
      f"{os.path.getsize(sys.argv[6]) / 1e6:.0f} MB JSON in {exp:.2f} s ({events / exp / 1e3:.0f} k events/s)")
print(f"peak RSS of rpd export: {rss / 1024:.1f} MiB")
print(f"baseline sqlite3 -json of the same rows: {base:.2f} s ({os.path.getsize(sys.argv[7]) / 1e6:.0f} MB)")
print(f"ratio export/baseline: {exp / base:.2f}")
PY
