#!/usr/bin/env bash
# Benchmark of `rpd callstack`: writes a trace of 10^6 calls on 8 threads
# through the tracer, then prints the time of `rpd callstack` as a ratio to
# one ordered read of the same rows and to the floor (the calls and their
# op durations read in the tables' order, plus the insert of the rows
# callstack writes), interleaved rounds, best and median (analysis_bench.c).
# usage: bench/analysis/run.sh [BUILD_DIR] (default ./build)
# BENCH_CALLS / BENCH_THREADS change the size, BENCH_REPEATS the rounds (5).
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
calls=${BENCH_CALLS:-1000000}
threads=${BENCH_THREADS:-8}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gen=$build/bench/analysis/analysis_bench_gen
bench=$build/bench/analysis/analysis_bench
rpd=$build/tools/rpd/rpd
for f in "$gen" "$bench" "$rpd"; do
  [ -x "$f" ] || { echo "run.sh: $f is not built (cmake --build $build)" >&2; exit 1; }
done
t0=$(date +%s.%N)
RPDT_AUTOSTART=0 "$gen" "$work/bench.rpd" "$calls" "$threads"
t1=$(date +%s.%N)
echo "trace of $calls calls on $threads threads written in $(echo "$t1 - $t0" | bc) s ($(du -h "$work/bench.rpd" | cut -f1))"
"$bench" "$rpd" "$work/bench.rpd" "${BENCH_REPEATS:-5}"
