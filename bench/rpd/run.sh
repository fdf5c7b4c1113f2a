#!/usr/bin/env bash
# Tracer benchmarks: bench/rpd/run.sh [BUILD_DIR] (default ./build).
# Prints each figure and its ratio to a baseline measured in the same run:
#   hot path: ns per range push+pop pair (target <= 25 ns), next to two reads
#             of the clock the tracer uses
#   persist:  rows/s written by the tracer / rows/s of a bare prepared-statement
#             bulk insert of the same rows (target >= 0.7)
#   slowdown: wall time of 10^7 ranges (RPD_BENCH_RANGES) traced / the same
#             program with -DNANO_DISABLE
set -euo pipefail
build=$(cd "${1:-./build}" && pwd)
bin=$build/bench/rpd
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# The tracer stamps with the TSC where it is usable (auto) and with
# CLOCK_MONOTONIC otherwise; a pair reads its clock twice, so the figures are
# also given beyond two bare reads of that clock, measured in the same run.
hot() { # CLOCK_MODE
  echo "== hot path, NANO_RPD_CLOCK=$1 (200k pairs in ring-resident batches)"
  NANO_RPD_CLOCK=$1 RPDT_FILENAME=hot-$1.rpd "$bin/bench_rpd" hotpath 200000 | tee hot-$1.txt
  awk -v mode="$1" '/^pair_zone_ns/ {z=$2} /^pair_string_ns/ {s=$2} /^pair_interned_ns/ {i=$2}
       /^two_tsc_reads_ns/ {t=$2} /^two_monotonic_reads_ns/ {m=$2}
       END {c = (mode == "monotonic" ? m : t)
            printf "hot path (%s): NANO_ZONE %.1f ns/pair, string %.1f, interned %.1f; two clock reads %.1f ns (%.2fx of a zone pair); beyond them: zone %.1f ns, string %.1f ns; target 25 ns/pair: %s\n",
                   mode, z, s, i, c, c / z, z - c, s - c, (z <= 25 ? "met" : "missed")}' hot-$1.txt
}
hot auto
hot monotonic

echo "== rows persisted per second (1M ranges)"
RPDT_FILENAME=persist.rpd "$bin/bench_rpd" persist 1000000 bare.rpd | tee persist.txt
awk '/^persist_ratio / {printf "persist ratio (tracer / bare one-row-statement insert): %.2f; target 0.7: %s\n", $2, ($2 >= 0.7 ? "met" : "missed")}
     /^persist_ratio_multirow/ {printf "persist ratio (tracer / bare 32-row-statement insert): %.2f; target 0.7: %s\n", $2, ($2 >= 0.7 ? "met" : "missed")}' persist.txt

n=${RPD_BENCH_RANGES:-10000000}
echo "== slowdown of a program doing $n ranges"
t() { local s e; s=$(date +%s%N); "$@" >/dev/null; e=$(date +%s%N); echo $(( (e - s) / 1000 )); }
off=$(t "$bin/bench_ranges10m_off" "$n")
on=$(RPDT_FILENAME=ranges.rpd t "$bin/bench_ranges10m" "$n")
rows=$(sqlite3 ranges.rpd "select count(*) from rocpd_api")
echo "$on $off $rows $n" | awk '{printf "untraced %.2fs, traced %.2fs (incl. writing %d rows before exit)\nslowdown: %.2fx, %.1f ns per range\n", $2/1e6, $1/1e6, $3, $1/$2, ($1-$2)/$4*1e3}'
