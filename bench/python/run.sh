#!/usr/bin/env bash
# Slowdown of Python programs (call-heavy: recursive fib(25), a loop of 300k
# method calls; and 100k calls of a function with a short loop) under
# `python -m nanoprobe`, as ratios to the unprofiled run, next to cProfile and
# a pure-Python sys.setprofile recorder, all measured in this run (see
# bench.py for the four figures).
#   bench/python/run.sh [BUILD_DIR]     (default ./build; NANO_BENCH_REPEAT=5)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-./build}" && pwd)
if [ ! -d "$build/python/nanoprobe" ]; then
  echo "run.sh: no nanoprobe package in $build/python (build the tree first)" >&2
  exit 1
fi
python=$(cat "$build/bench/python/python.txt" 2>/dev/null || command -v python3)
# The interpreter itself, not a wrapper script (pyenv shims cost 0.3 s a start).
python=$("$python" -c 'import sys; print(sys.executable)')
PYTHONPATH="$build/python" exec "$python" "$here/bench.py" "$python" "${NANO_BENCH_REPEAT:-5}"
