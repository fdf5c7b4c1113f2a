#!/usr/bin/env bash
# GPU benchmarks (issue 15.6), on a GPU machine, over what tests/gpu/build.sh
# built (OUT: gpubench and lib/). Each figure is a ratio to a baseline
# measured in the same round; rounds interleave the variants; best and median
# of ROUNDS (NANO_BENCH_REPEAT, default 5).
#   launch cost      tiny kernel, each launch waited for: instrumented (no
#                    analyzer; the same with NANO_GPU_END=hostfn; MemoryAnalysis
#                    from records, NANO_AGGREGATE=host; MemoryAnalysis summed by
#                    the twin, NANO_AGGREGATE=device) over plain. NVBit's
#                    memtrace: 6.9-7.3x on a tiny vector add.
#   replay cost      the tiny kernel in a CUDA graph, each replay waited for
#                    (PyTorch's CUDA graphs): instrumented (no analyzer;
#                    MemoryAnalysis from records; MemoryAnalysis summed by the
#                    twin, its tables placed at capture) over plain.
#   per-access cost  memory-bound triad (R passes: 10 ms plain at the default
#                    R=35 on an H100, 106 ms at R=350 (85 ms on an H200), where
#                    one instrumented run takes minutes): instrumented (none;
#                    MemoryAnalysis from records; MemoryAnalysis summed by the
#                    twin) over plain, and records drained per second (nano_dispatch).
#   tracing          cudaStreamQuery and empty launches: traced (CUPTI) over plain;
#                    empty launches through the kernel cache's driver hook
#                    (libnano_cudahook.so, not instrumenting: what every launch
#                    of `nanoprobe run -c` pays) over plain.
#   drain threads    (group "drain", not run by default) two triads at once
#                    on two streams, instrumented: NANO_DRAIN_THREADS=4 over 1.
# usage: bench/gpu/run.sh OUT [WORK]
# env: NANO_BENCH_REPEAT; NANO_BENCH_PASSES; NANO_BENCH_FIGURES, the groups to
# run (default "tiny replay api launch membound"; "drain" too on request); NANO_BENCH_MEMBOUND, membound's
# instrumented variants (default "inst_none inst_memory inst_summed").
set -euo pipefail
out=$(cd "$1" && pwd)
work=${2:-$(mktemp -d)}
mkdir -p "$work"
rounds=${NANO_BENCH_REPEAT:-5} passes=${NANO_BENCH_PASSES:-35}
figures=" ${NANO_BENCH_FIGURES:-tiny replay api launch membound} "
membound=${NANO_BENCH_MEMBOUND:-inst_none inst_memory inst_summed}
"$out/probe" >/dev/null 2>&1 || { echo "no CUDA device here: the GPU benchmarks did not run"; exit 77; }
. "$out/env.sh" # OUT/lib and CUPTI (tests/gpu/env.sh)
rpd=$out/lib/libnano_rpd.so
echo "GPU benchmarks: $(nvidia-smi -L 2>/dev/null | head -1); $rounds rounds"
# variant NAME: the environment of a run (plain has none)
variant() {
  case $1 in
  plain) echo "NANO_CUPTI=0" ;;
  traced) echo "LD_PRELOAD=$rpd RPDT_FILENAME=$work/traced.rpd" ;;
  hooked) echo "LD_PRELOAD=$out/lib/libnano_cudahook.so:$rpd NANO_CUPTI=0 NANO_KERNEL_CACHE=$out/cache RPDT_FILENAME=$work/hooked.rpd" ;;
  inst_none) echo "LD_PRELOAD=$rpd NANO_CUPTI=0 RPDT_FILENAME=$work/inst.rpd NANO_INSTRUMENT=1 NANO_ANALYZERS=none" ;;
  inst_hostfn) echo "LD_PRELOAD=$rpd NANO_CUPTI=0 RPDT_FILENAME=$work/inst.rpd NANO_INSTRUMENT=1 NANO_ANALYZERS=none NANO_GPU_END=hostfn" ;;
  inst_memory) echo "LD_PRELOAD=$rpd NANO_CUPTI=0 RPDT_FILENAME=$work/inst.rpd NANO_INSTRUMENT=1 NANO_ANALYZERS=MemoryAnalysis NANO_ANALYZER_OUTPUT=/dev/null NANO_AGGREGATE=host" ;;
  inst_summed) echo "LD_PRELOAD=$rpd NANO_CUPTI=0 RPDT_FILENAME=$work/inst.rpd NANO_INSTRUMENT=1 NANO_ANALYZERS=MemoryAnalysis NANO_ANALYZER_OUTPUT=/dev/null NANO_AGGREGATE=device" ;;
  inst_drain4) echo "LD_PRELOAD=$rpd NANO_CUPTI=0 RPDT_FILENAME=$work/inst.rpd NANO_INSTRUMENT=1 NANO_ANALYZERS=none NANO_DRAIN_THREADS=4" ;;
  esac
}
# figure MODE N VARIANT: the number gpubench prints
figure() {
  rm -f "$work"/*.rpd*
  # a hung run is killed (NANO_GPU_SAMPLE_TIMEOUT s, default 120) and stops the
  # benchmark instead of eating the device session
  local limit=${NANO_GPU_SAMPLE_TIMEOUT:-120} line rc=0
  line=$(timeout --kill-after=5 "$limit" env $(variant "$3") "$out/gpubench" "$1" "$2" \
    2>>"$work/stderr") || rc=$?
  if [ "$rc" != 0 ]; then
    echo "FAIL gpubench $1 $2 ($3): exit $rc (124 or 137: killed after $limit s); see $work/stderr" >&2
    exit 1
  fi
  awk '{ print $2 }' <<<"$line"
}
# ratios MODE N BASE VARIANT...: best and median of VARIANT/BASE over the rounds
ratios() {
  local mode=$1 n=$2 base=$3
  shift 3
  declare -A r a
  local bs=""
  for ((i = 0; i < rounds; i++)); do
    # a failed run stops the benchmark (figure said which)
    b=$(figure "$mode" "$n" "$base") || exit 1
    bs+="$b "
    for v in "$@"; do
      x=$(figure "$mode" "$n" "$v") || exit 1
      r[$v]+="$(python3 -c "print($x / $b)") "
      a[$v]+="$x "
    done
  done
  # ratios, and the medians themselves (gpubench's unit: us, ms or ns)
  for v in "$@"; do
    python3 - "$mode" "$v" "$base" "$bs" "${a[$v]}" ${r[$v]} <<'PY'
import statistics, sys
mode, v, base, bs, vs = sys.argv[1:6]
xs = [float(x) for x in sys.argv[6:]]
med = lambda s: statistics.median(float(x) for x in s.split())
print(f"{mode:9} {v:12} / {base:6}: best {min(xs):8.2f}x  median {statistics.median(xs):8.2f}x"
      f"  ({med(vs):.3f} / {med(bs):.3f} per unit, medians)")
PY
  done
}
wanted() { [[ $figures == *" $1 "* ]]; }
# the long one last, so that a session cut short has the others
if wanted tiny; then ratios tiny 2000 plain inst_none inst_hostfn inst_memory inst_summed; fi
if wanted replay; then ratios replay 2000 plain inst_none inst_memory inst_summed; fi
if wanted api; then ratios api 200000 plain traced; fi
if wanted launch; then ratios launch 100000 plain traced hooked; fi
if wanted drain; then ratios membound2 "$passes" inst_none inst_drain4; fi
wanted membound || exit 0
# shellcheck disable=SC2086 # a list of variants
ratios membound "$passes" plain $membound
# the drained-records figure is inst_none's: its last run, or one more
[[ $membound == *inst_none ]] || figure membound "$passes" inst_none >/dev/null
python3 - "$work/inst.rpd" <<'PY'
import sqlite3, sys
r = sqlite3.connect(sys.argv[1]).execute('select records, dropped, "end" - start from nano_dispatch').fetchone()
print(f"membound drained {r[0] / (r[2] / 1e9) / 1e6:.1f} M records/s ({r[0]} records, {r[1]} dropped)")
PY
