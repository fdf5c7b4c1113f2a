#!/usr/bin/env bash
# The README's first command: installs what is missing (scripts/deps.sh),
# builds (scripts/build.sh), then demonstrates host-atomics counting on
# examples/refcount_jobs.c: built with the plugin, run untracked, tracked
# (text), per site (JSON), through the regression gate, and built with gcc and
# the prelude instead of the plugin; then CPU kernels (examples/memory.c) run
# instrumented with MemoryAnalysis.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${NANO_BUILD_DIR:-$root/build}
"$root/scripts/deps.sh"
NANO_BUILD_DIR=$build "$root/scripts/build.sh"

# The clang of the LLVM the plugin was built against (LLVM_DIR of the build).
llvm_dir=$(sed -n 's/^LLVM_DIR:[A-Z]*=//p' "$build/CMakeCache.txt")
clang=${llvm_dir%/lib/cmake/llvm}/bin/clang
[ -x "$clang" ] || clang=clang-15
plugin=$build/llvm-pass/libNanoPass.so
tracker=$build/runtime/tracker/libnano_tracker.so
nanoprobe=$build/tools/nanoprobe/nanoprobe
work=$build/demo
mkdir -p "$work"
app=$work/refcount_jobs
src=$root/examples/refcount_jobs.c

step() { printf '\n\033[1m== %s\033[0m\n$ %s\n' "$1" "$2"; }

step "build the example with the plugin" \
     "$(basename "$clang") -O2 -g -fpass-plugin=libNanoPass.so examples/refcount_jobs.c -o refcount_jobs"
"$clang" -O2 -g -pthread -fpass-plugin="$plugin" "$src" -o "$app"

step "run it untracked: no runtime needed, nothing changes" "./refcount_jobs"
"$app"

step "run it under the tracker: counts per kind at exit" "LD_PRELOAD=libnano_tracker.so ./refcount_jobs"
LD_PRELOAD=$tracker "$app" 2>&1

step "per site, as JSON (the five busiest sites)" \
     "NANO_TRACKER_FORMAT=json NANO_TRACKER_OUTPUT=counts.json LD_PRELOAD=libnano_tracker.so ./refcount_jobs"
NANO_TRACKER_FORMAT=json NANO_TRACKER_OUTPUT=$work/counts.json LD_PRELOAD=$tracker "$app" >/dev/null
python3 - "$work/counts.json" <<'PY'
import json, os, sys
doc = json.load(open(sys.argv[1]))
print("total atomics: %d" % doc["total"])
for s in sorted(doc["sites"], key=lambda s: -s["count"])[:5]:
    print("  %9d  %-26s %-8s %s:%d:%d (%s)" % (s["count"], s["kind"], s["order"],
          os.path.basename(s["file"]), s["line"], s["column"], s["function"]))
PY

step "record a baseline with the regression gate" \
     "nanoprobe gate --baseline base.json --update -- ./refcount_jobs"
"$nanoprobe" gate --baseline "$work/base.json" --update -- "$app" >/dev/null
echo "baseline: $work/base.json"

step "the same program again: the gate passes (exit 0)" \
     "nanoprobe gate --baseline base.json --tolerance 1% -- ./refcount_jobs"
"$nanoprobe" gate --baseline "$work/base.json" --tolerance 1% -- "$app" | tail -1

step "a change adds one atomic per job: the gate fails (exit 1) and says where" \
     "nanoprobe gate --baseline base.json --tolerance 1% -- ./refcount_jobs_extra"
"$clang" -O2 -g -pthread -DDEMO_EXTRA_ATOMIC -fpass-plugin="$plugin" "$src" -o "${app}_extra"
set +e
"$nanoprobe" gate --baseline "$work/base.json" --tolerance 1% -- "${app}_extra" | grep -v "^refcount_jobs:"
rc=${PIPESTATUS[0]}
set -e
echo "gate exit status: $rc"
[ "$rc" -eq 1 ] || { echo "demo: expected the gate to fail with 1" >&2; exit 1; }

step "without the plugin: gcc and the prelude give the same counts" \
     "gcc -O2 --include=prelude/prelude.h examples/refcount_jobs.c -o refcount_jobs_gcc"
gcc -O2 -g -pthread --include="$root/prelude/prelude.h" "$src" -o "${app}_gcc"
LD_PRELOAD=$tracker "${app}_gcc" 2>&1

step "CPU kernels: the twins run as 64-lane waves; MemoryAnalysis per source line" \
     "NANO_INSTRUMENT=1 NANO_ANALYZERS=MemoryAnalysis LD_PRELOAD=libnano_rpd.so examples/memory"
(cd "$work" && NANO_INSTRUMENT=1 NANO_ANALYZERS=MemoryAnalysis RPDT_FILENAME="$work/kernels.rpd" \
   LD_PRELOAD="$build/runtime/rpd/libnano_rpd.so" "$build/examples/memory" 2>&1)
echo "the same results, per source line, in the trace:"
sqlite3 -header -column "$work/kernels.rpd" \
  "select kernel, line, kind, lines_needed, lines_used from nano_memory order by dispatch_id, line, kind"

printf '\ndemo: done (files in %s)\n' "$work"
