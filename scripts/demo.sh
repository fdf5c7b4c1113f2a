#!/usr/bin/env bash
# The README's first command: installs what is missing (scripts/deps.sh),
# builds (scripts/build.sh), then demonstrates host-atomics counting on
# examples/refcount_jobs.c: built with the plugin (nanoprobe cc), run
# untracked, tracked (text), per site (JSON), through the regression gate,
# built with gcc and the prelude instead of the plugin, traced (nanoprobe
# run); then CPU kernels (examples/memory.c) run instrumented with
# MemoryAnalysis. Every command is printed exactly as it runs ($ ...).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${NANO_BUILD_DIR:-$root/build}
"$root/scripts/deps.sh"
NANO_BUILD_DIR=$build "$root/scripts/build.sh"

# The clang of the LLVM the plugin was built against (LLVM_DIR of the build).
llvm_dir=$(sed -n 's/^LLVM_DIR:[A-Z]*=//p' "$build/CMakeCache.txt")
llvm_major=$(basename "${llvm_dir%/lib/cmake/llvm}")
clang=clang-${llvm_major#llvm-}
command -v "$clang" >/dev/null || clang=clang-15
tracker=$build/runtime/tracker/libnano_tracker.so
nanoprobe=$build/tools/nanoprobe/nanoprobe
work=$build/demo
mkdir -p "$work"
cd "$work"
app=./refcount_jobs
src=$root/examples/refcount_jobs.c

step() { printf '\n\033[1m== %s\033[0m\n' "$1"; }
# Prints the command exactly as it runs (arguments with other characters than
# these in single quotes), then runs it.
quote() { [[ $1 =~ ^[A-Za-z0-9_./=:%,+@-]+$ ]] && printf ' %s' "$1" || printf " '%s'" "${1//\'/\'\\\'\'}"; }
show() { { printf '$'; for a in "$@"; do quote "$a"; done; printf '\n'; } >&2; "$@"; }

step "build the example with the plugin that matches $clang (nanoprobe cc picks it)"
show "$nanoprobe" cc -- "$clang" -O2 -g -pthread "$src" -o "$app"

step "run it untracked: no runtime needed, nothing changes"
show "$app"

step "run it under the tracker: counts per kind at exit"
show env LD_PRELOAD="$tracker" "$app" 2>&1

step "per site, as JSON (the five busiest sites)"
show env NANO_TRACKER_FORMAT=json NANO_TRACKER_OUTPUT=counts.json LD_PRELOAD="$tracker" "$app" >/dev/null
python3 - counts.json <<'PY'
import json, os, sys
doc = json.load(open(sys.argv[1]))
print("total atomics: %d" % doc["total"])
for s in sorted(doc["sites"], key=lambda s: -s["count"])[:5]:
    print("  %9d  %-26s %-8s %s:%d:%d (%s)" % (s["count"], s["kind"], s["order"],
          os.path.basename(s["file"]), s["line"], s["column"], s["function"]))
PY

step "record a baseline with the regression gate"
show "$nanoprobe" gate --baseline base.json --update -- "$app" >/dev/null
echo "baseline: $work/base.json"

step "the same program again: the gate passes (exit 0)"
show "$nanoprobe" gate --baseline base.json --tolerance 1% -- "$app" | tail -1

step "a change adds one atomic per job: the gate fails (exit 1) and says where"
show "$nanoprobe" cc -- "$clang" -O2 -g -pthread -DDEMO_EXTRA_ATOMIC "$src" -o "${app}_extra"
set +e
show "$nanoprobe" gate --baseline base.json --tolerance 1% -- "${app}_extra" | grep -v "^refcount_jobs:"
rc=${PIPESTATUS[0]}
set -e
echo "gate exit status: $rc"
[ "$rc" -eq 1 ] || { echo "demo: expected the gate to fail with 1" >&2; exit 1; }

step "without the plugin: gcc and the prelude give the same counts"
show gcc -O2 -g -pthread --include="$root/prelude/prelude.h" "$src" -o "${app}_gcc"
show env LD_PRELOAD="$tracker" "${app}_gcc" 2>&1

step "trace it: one RPD file, then a summary (ranges, atomics per kind and site)"
show "$nanoprobe" run --atomics -f -o jobs.rpd -- "$app" 2>&1

step "CPU kernels: the twins run as 64-lane waves; MemoryAnalysis per source line"
show "$nanoprobe" run -a MemoryAnalysis -f -o kernels.rpd -- "$build/examples/memory" 2>&1
echo "the same results, per source line, in the trace:"
show sqlite3 -header -column kernels.rpd \
  "select kernel, line, kind, lines_needed, lines_used from nano_memory order by dispatch_id, line, kind"

printf '\ndemo: done (files in %s)\n' "$work"
