#!/usr/bin/env bash
# bench/atomics/run.sh [BUILD_DIR]: time per atomic of a relaxed fetch_add
# loop, 1 and 2 threads, as ratios to the untracked build measured in the same
# run: built with the plugin (loop counter promotion on, the default) and no
# runtime; with libnano_tracker.so; then built with NANO_ATOMICS_PROMOTE=0,
# every event counted by itself: inline in the program (the default) with
# libnano_tracker.so; and with NANO_ATOMICS_INLINE=0 too, one hook call per
# event: with libnano_tracker.so, with hooks that return at once (the cost of
# the call alone), and with the baseline tracker built like the original
# PyTorch tool's. Each figure is the best and the median of $NANO_BENCH_REPS
# (5) rounds of $NANO_BENCH_ITERS (20000000) ops, the configurations
# interleaved round by round; ratios are best to best and median to median.
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

# once PRELOAD BINARY THREADS N: ns/op of one run.
once() {
  LD_PRELOAD=$1 NANO_TRACKER_OUTPUT=/dev/null "$2" "$3" "$4" 2>/dev/null
}

# The configurations: name|preload|binary|operations (the PyTorch-style
# baseline is slow: a tenth of them). Rounds interleave them (one run of
# each per round), so that a slow spell of the shared machine hits all alike.
configs=(
  "untracked||$b/fetch_add_plain|$iters"
  "plugin, no runtime||$b/fetch_add_plugin|$iters"
  "plugin + libnano_tracker.so|$tracker|$b/fetch_add_plugin|$iters"
  "per-event + libnano_tracker.so|$tracker|$b/fetch_add_plugin_eager|$iters"
  "per-event call + libnano_tracker.so|$tracker|$b/fetch_add_plugin_call|$iters"
  "per-event call + empty hook (floor)|$empty|$b/fetch_add_plugin_call|$iters"
  "per-event call + PyTorch-style|$baseline|$b/fetch_add_plugin_call|$((iters / 10))"
)
printf '%-36s %7s %15s %15s\n' configuration threads "ns/op best/med" "ratio best/med"
for threads in 1 2; do
  results=$(for _ in $(seq "$reps"); do
    for c in "${configs[@]}"; do
      IFS='|' read -r name preload bin n <<< "$c"
      printf '%s|%s\n' "$name" "$(once "$preload" "$bin" "$threads" "$n")"
    done
  done)
  for c in "${configs[@]}"; do
    name=${c%%|*}
    printf '%s\n' "$results" | awk -F'|' -v name="$name" -v threads="$threads" '
      $1 == "untracked" { u[++nu] = $2 } $1 == name { v[++nv] = $2 }
      function sort(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
                                           if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t } }
      function med(a, n) { return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
      END { sort(u, nu); sort(v, nv)
            printf "%-36s %7d %15s %15s\n", name, threads, sprintf("%.3f/%.3f", v[1], med(v, nv)),
                   sprintf("%.2fx/%.2fx", v[1] / u[1], med(v, nv) / med(u, nu)) }'
  done
done
