#!/usr/bin/env bash
# Runs the GPU suite that build.sh built into OUT (README.md): each sample
# plain, then instrumented and traced (LD_PRELOAD of libnano_rpd.so,
# NANO_INSTRUMENT=1, MemoryAnalysis as JSON, CUDA through CUPTI), and checks
# what it printed, reported and recorded (check.py). Logs and traces go to
# WORK (default: a new temporary folder).
# Exit: 0 every sample passed; 1 one failed; 77 no CUDA device here (nothing
# ran, and that is said). A run that takes longer than NANO_GPU_SAMPLE_TIMEOUT
# seconds (default 120) is killed and fails, so one hang does not eat a
# device session.
# usage: run.sh OUT [WORK [SAMPLE...]]
set -uo pipefail
out=$(cd "$1" && pwd)
work=${2:-$(mktemp -d)}
shift $(($# < 2 ? $# : 2))
samples=${*:-vecadd strided bank atomics devfunc streams graph graph_relaxed conditional handbuilt cublas dynshared inject subscriber launchable clusterex dynpar cached cached_handbuilt timeline graph_timeline}
mkdir -p "$work"
if ! "$out/probe" >"$work/probe.out" 2>&1; then
  echo "no CUDA device here ($(cat "$work/probe.out")): the GPU suite did not run;" \
    "run tests/gpu/run.sh on a GPU machine (tests/gpu/README.md)"
  exit 77
fi
# OUT/lib and CUPTI (env.sh), and cuBLAS where this machine keeps it
. "$out/env.sh"
cublas=$(find /usr/local /opt /usr/lib -name 'libcublas.so.1[0-9]*' 2>/dev/null | sort | head -1)
[ -n "$cublas" ] && LD_LIBRARY_PATH+=":$(dirname "$cublas")"
echo "GPU suite: $(nvidia-smi -L 2>/dev/null | head -1); CUPTI ${NANO_CUPTI_PATH:-from the toolkit, found by the runtime}"
limit=${NANO_GPU_SAMPLE_TIMEOUT:-120}
bounded() { timeout --kill-after=5 "$limit" "$@"; } # 124/137: it hung
# instrumented NAME [env...]: the sample $prog instrumented and traced into
# WORK/NAME.*; timeout outside env: the preloaded tracer is the sample's alone
instrumented() {
  local name=$1
  shift
  bounded env RPDT_FILENAME="$work/$name.rpd" NANO_INSTRUMENT=1 NANO_ANALYZERS=MemoryAnalysis \
    NANO_ANALYZER_FORMAT=json NANO_ANALYZER_OUTPUT="$work/$name.json" "$@" "$out/$prog" \
    >"$work/$name.out" 2>"$work/$name.err"
}
failed=0
for s in $samples; do
  prog=$s
  [ "$s" = inject ] && prog=cublas # the cuBLAS program, traced another way
  [ "$s" = cached ] && prog=nvcc_strided # nvcc's, no plugin: twins from OUT/cache
  [ "$s" = cached_handbuilt ] && prog=nvcc_handbuilt # the same, its graph built by hand
  [ "$s" = timeline ] && prog=vecadd # KernelTimeline: the twin times its blocks
  [ "$s" = graph_timeline ] && prog=graph # replays summed and timed by their twins
  if [ ! -x "$out/$prog" ]; then
    echo "FAIL $s: $prog not built (build.sh said why)"
    failed=1
    continue
  fi
  if [ "$s" = cached ] || [ "$s" = cached_handbuilt ]; then
    # the preloads `nanoprobe run -i -c OUT/cache -a MemoryAnalysis` makes
    instrumented "$s" NANO_AGGREGATE=host NANO_KERNEL_CACHE="$out/cache" \
      LD_PRELOAD="$out/lib/libnano_cudahook.so:$out/lib/libnano_rpd.so"
  elif [ "$s" = timeline ]; then
    instrumented "$s" NANO_ANALYZERS=KernelTimeline LD_PRELOAD="$out/lib/libnano_rpd.so"
  elif [ "$s" = graph_timeline ]; then
    instrumented "$s" NANO_ANALYZERS=KernelTimeline,MemoryAnalysis NANO_AGGREGATE=device \
      LD_PRELOAD="$out/lib/libnano_rpd.so"
  elif [ "$s" = inject ]; then
    # neither built with the plugin nor preloaded: CUDA loads the tracer
    # (CUDA_INJECTION64_PATH), as for any CUDA program
    bounded env RPDT_FILENAME="$work/$s.rpd" CUDA_INJECTION64_PATH="$out/lib/libnano_rpd.so" \
      "$out/$prog" >"$work/$s.out" 2>"$work/$s.err"
  else
    if ! bounded "$out/$s" >"$work/$s.plain" 2>&1; then
      echo "FAIL $s: the plain run failed (124 or 137: killed after ${limit} s): $(tail -3 "$work/$s.plain")"
      failed=1
      continue
    fi
    # the records' answers (what check.py checks); NANO_AGGREGATE=device below
    instrumented "$s" NANO_AGGREGATE=host LD_PRELOAD="$out/lib/libnano_rpd.so"
  fi
  echo "rc $?" >>"$work/$s.out" # 124 or 137: killed after $limit s
  python3 "$out/check.py" "$s" "$work" || failed=1
  if [ "$s" = cached ]; then
    # plain mode (`nanoprobe run -c` without -i): the cache's kernel of the
    # same name replaces the program's; the STRIDED_PLUS_ONE variant's
    # results say which ran
    bounded env RPDT_FILENAME="$work/cached.plain.rpd" NANO_KERNEL_CACHE="$out/plaincache" \
      LD_PRELOAD="$out/lib/libnano_cudahook.so:$out/lib/libnano_rpd.so" "$out/$prog" \
      >"$work/cached.plain.out" 2>&1
    grep -qx "strided plus one" "$work/cached.plain.out" || {
      echo "FAIL cached plain: the plain cache's kernel did not replace the program's: $(tail -3 "$work/cached.plain.out")"
      failed=1
    }
  fi
  # the same run with the twins summing their own accesses (issue 39): the
  # same MemoryAnalysis answers, field by field
  case $s in inject | subscriber | cublas | timeline | graph_timeline) continue ;; esac
  how=(LD_PRELOAD="$out/lib/libnano_rpd.so")
  [ "${s#cached}" != "$s" ] && how=(NANO_KERNEL_CACHE="$out/cache" LD_PRELOAD="$out/lib/libnano_cudahook.so:$out/lib/libnano_rpd.so")
  instrumented "$s.summed" NANO_AGGREGATE=device "${how[@]}"
  rc=$?
  if [ "$rc" != 0 ]; then
    echo "FAIL $s summed: the run failed (rc $rc; 124 or 137: killed after ${limit} s): $(tail -3 "$work/$s.summed.err")"
    failed=1
  else
    python3 "$out/compare_sums.py" "$s" "$work/$s.rpd" "$work/$s.summed.rpd" || failed=1
  fi
done
exit $failed
