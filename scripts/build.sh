#!/usr/bin/env bash
# Configures and builds nanoprobe into ./build (or $NANO_BUILD_DIR), once.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${NANO_BUILD_DIR:-$root/build}
jobs=${NANO_JOBS:-$(nproc)}
# clang (15 and 22) leaves an empty <source>-XXXXXX directory in $TMPDIR for
# every HIP or CUDA compile for several architectures; keep those in the build
# tree (test.sh does the same for the suite's compiles).
export TMPDIR="$build/tmp"
mkdir -p "$TMPDIR"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$build" -j "$jobs"
