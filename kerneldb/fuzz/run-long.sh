#!/usr/bin/env bash
# Runs the kerneldb libFuzzer targets, one after the other.
#
#   run-long.sh [--smoke] FUZZ_DIR INPUTS_DIR WORK_DIR [SECONDS_PER_TARGET]
#
# FUZZ_DIR:   build/kerneldb/fuzz (holds kdb_fuzz_<format>)
# INPUTS_DIR: code objects to seed from (the test fixture's
#             build/tests/kerneldb/inputs, made by tests/kerneldb/make_inputs.sh)
# WORK_DIR:   corpora (kept between runs: corpus-<format>/) and crash
#             artifacts (artifacts/)
# --smoke:    10 seconds per target (the ctest smoke run); otherwise
#             SECONDS_PER_TARGET, default 600.
# A crash stops the run with exit 1 and names the artifact; fix it and copy
# the artifact to tests/kerneldb/regressions/ (replayed by ctest).
set -euo pipefail
secs=600
if [ "${1:-}" = "--smoke" ]; then secs=10; shift; fi
[ $# -ge 3 ] || { sed -n '2,16p' "$0"; exit 2; }
fuzz=$1 inputs=$2 work=$3
[ $# -ge 4 ] && secs=$4
mkdir -p "$work/artifacts"
seed() { # format, files...
  local dir=$work/corpus-$1; shift
  mkdir -p "$dir"
  for f in "$@"; do [ -f "$f" ] && cp -f "$f" "$dir/"; done
  return 0
}
seed codeobject "$inputs"/t_gfx90a.co "$inputs"/t_gfx1100.co
seed bundle "$inputs"/t.bundle
seed ccob "$inputs"/t_zstd.ccob "$inputs"/t_zlib.ccob
seed zstdwrap "$inputs"/t.bundle
seed hostelf "$inputs"/libt.so "$inputs"/c_fat.o "$inputs"/c_clang.o "$inputs"/cov6.o
seed cubin "$inputs"/c.cubin
status=0
for fmt in codeobject bundle ccob zstdwrap hostelf cubin; do
  bin=$fuzz/kdb_fuzz_$fmt
  [ -x "$bin" ] || { echo "run-long: no $bin" >&2; exit 2; }
  log=$work/fuzz-$fmt.log
  if "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 \
      -artifact_prefix="$work/artifacts/$fmt-" "$work/corpus-$fmt" > "$log" 2>&1; then
    echo "kdb_fuzz_$fmt: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') runs, no crash"
  else
    echo "kdb_fuzz_$fmt: CRASH, see $log and $work/artifacts/$fmt-*" >&2
    tail -30 "$log" >&2
    status=1
  fi
done
exit $status
