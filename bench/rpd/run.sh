#!/usr/bin/env bash
# Tracer benchmarks: bench/rpd/run.sh [BUILD_DIR] (default ./build).
# Prints each figure and its ratio to a baseline measured in the same run:
#   hot path: ns per range push+pop pair (target <= 25 ns), next to two reads
#             of the clock the tracer uses
#   persist:  rows/s written by the tracer / rows/s of a bare prepared-statement
#             bulk insert of the same rows (target >= 0.7)
#   slowdown: 10^7 ranges (RPD_BENCH_RANGES) traced / the same program with
#             -DNANO_DISABLE: the loop's own time and the process's wall time,
#             with the overflow store and without (NANO_RPD_OVERFLOW=0); and
#             the overflow store's cost per range beyond the untraced loop
#             against the hot path's in-ring NANO_ZONE pair (target <= 1.5x)
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
echo "== slowdown of a program doing $n ranges (best and median of ${RPD_BENCH_REPEAT:-3} interleaved runs)"
# Two figures: the loop's own time (what the program pays while it runs) and
# the process's wall time (a complete trace written before exit included);
# traced as is (full rings go on in the overflow store) and with
# NANO_RPD_OVERFLOW=0 (producers wait for the writer, as before issue 20).
run() { # NAME ENV... -- PROGRAM
  local name=$1 s e loop; shift
  rm -f ranges.rpd
  s=$(date +%s%N)
  loop=$(env "$@" "$n" 2>&1 >/dev/null | awk '/^loop_us/ {print $2}')
  e=$(date +%s%N)
  echo "$name $loop $(( (e - s) / 1000 ))" >> slowdown.txt
}
for _ in $(seq "${RPD_BENCH_REPEAT:-3}"); do
  run untraced NANO_RPD_QUIET=1 "$bin/bench_ranges10m_off"
  run overflow NANO_RPD_QUIET=1 RPDT_FILENAME=ranges.rpd "$bin/bench_ranges10m"
  # python's sqlite3: the GPU machines have no sqlite3 command
  rows=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from rocpd_api").fetchone()[0])' ranges.rpd)
  [ "$rows" = "$n" ] || { echo "run.sh: $rows rows of $n ranges" >&2; exit 1; }
  run wait NANO_RPD_QUIET=1 NANO_RPD_OVERFLOW=0 RPDT_FILENAME=ranges.rpd "$bin/bench_ranges10m"
done
# the in-ring pair of the same run (clock auto, as the ranges program runs)
pair=$(awk '/^pair_zone_ns/ {print $2}' hot-auto.txt)
awk -v n="$n" -v pair="$pair" '
  { loop[$1] = loop[$1] " " $2; wall[$1] = wall[$1] " " $3 }
  function best(list,   a, k, m) { split(list, a, " "); m = a[1]; for (k in a) if (a[k] + 0 < m + 0) m = a[k]; return m }
  function med(list,   a, k, c, i, j, t) { c = split(list, a, " ")
    for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return a[int((c + 1) / 2)] }
  END {
    lu = best(loop["untraced"]); wu = best(wall["untraced"])
    printf "untraced: loop %.2fs, wall %.2fs\n", lu / 1e6, wu / 1e6
    for (m in loop) if (m != "untraced")
      printf "traced (%s): loop %.2fx best, %.2fx median (%.1f ns per range); wall %.2fx best, %.2fx median\n",
             m, best(loop[m]) / lu, med(loop[m]) / med(loop["untraced"]),
             (best(loop[m]) - lu) / n * 1e3, best(wall[m]) / wu, med(wall[m]) / med(wall["untraced"])
    # issue 42 part 2: a range sustained (overflow store) against the in-ring pair
    b = (best(loop["overflow"]) - lu) / n * 1e3
    d = (med(loop["overflow"]) - med(loop["untraced"])) / n * 1e3
    printf "sustained (overflow) per range / in-ring NANO_ZONE pair (%.1f ns): %.2fx best, %.2fx median; target 1.5x: %s\n",
           pair, b / pair, d / pair, (b / pair <= 1.5 ? "met" : "missed")
  }' slowdown.txt
