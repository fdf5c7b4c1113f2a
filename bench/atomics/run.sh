#!/usr/bin/env bash
# bench/atomics/run.sh [BUILD_DIR]: time per atomic of a relaxed fetch_add
# loop, 1 and 2 threads, as ratios to the untracked build measured in the same
# run: built with the plugin (loop counter promotion on, the default) and no
# runtime; with libnano_tracker.so; then built with NANO_ATOMICS_PROMOTE=0,
# every event counted by itself: inline in the program (the default) with
# libnano_tracker.so; and with NANO_ATOMICS_INLINE=0 too, one hook call per
# event: with libnano_tracker.so, with hooks that return at once (the cost of
# the call alone), and with the baseline tracker built like the original
# PyTorch tool's. Each figure is
# the best of $NANO_BENCH_REPS (5) runs of $NANO_BENCH_ITERS (20000000) ops.
set -euo pipefail
build=$(cd "${1:-./build}" && pwd)
b=$build/bench/atomics
tracker=$build/runtime/tracker/libnano_tracker.so
baseline=$b/libnano_bench_baseline_tracker.so
empty=$b/libnano_bench_empty_hook.so
iters=${NANO_BENCH_ITERS:-20000000}
reps=${NANO_BENCH_REPS:-5}
for f in "$b/fetch_add_plain" "$b/fetch_add_plugin" "$b/fetch_add_plugin_eager" "$b/fetch_add_plugin_call" \
  "$tracker" "$baseline" "$empty"; do
  [ -e "$f" ] || { echo "run.sh: $f is missing; build first (scripts/build.sh)" >&2; exit 2; }
done

# best PRELOAD BINARY THREADS N: the lowest ns/op of $reps runs.
best() {
  local preload=$1 bin=$2 threads=$3 n=$4 min="" t
  for _ in $(seq "$reps"); do
    t=$(LD_PRELOAD=$preload NANO_TRACKER_OUTPUT=/dev/null "$bin" "$threads" "$n" 2>/dev/null)
    if [ -z "$min" ] || awk -v a="$t" -v b="$min" 'BEGIN { exit !(a < b) }'; then min=$t; fi
  done
  echo "$min"
}

printf '%-34s %8s %12s %8s\n' configuration threads ns/op ratio
for threads in 1 2; do
  plain=$(best "" "$b/fetch_add_plain" "$threads" "$iters")
  plugin=$(best "" "$b/fetch_add_plugin" "$threads" "$iters")
  tracked=$(best "$tracker" "$b/fetch_add_plugin" "$threads" "$iters")
  eager=$(best "$tracker" "$b/fetch_add_plugin_eager" "$threads" "$iters")
  call=$(best "$tracker" "$b/fetch_add_plugin_call" "$threads" "$iters")
  floor=$(best "$empty" "$b/fetch_add_plugin_call" "$threads" "$iters")
  # The baseline is slow: a tenth of the operations.
  base=$(best "$baseline" "$b/fetch_add_plugin_call" "$threads" $((iters / 10)))
  for row in "untracked|$plain" "plugin, no runtime|$plugin" "plugin + libnano_tracker.so|$tracked" \
             "per-event + libnano_tracker.so|$eager" \
             "per-event call + libnano_tracker.so|$call" \
             "per-event call + empty hook (floor)|$floor" \
             "per-event call + PyTorch-style|$base"; do
    name=${row%|*} v=${row#*|}
    printf '%-34s %8d %12.3f %7.2fx\n' "$name" "$threads" "$v" "$(awk -v a="$v" -v b="$plain" 'BEGIN { print a / b }')"
  done
done
