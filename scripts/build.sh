#!/usr/bin/env bash
# Configures and builds nanoprobe into ./build (or $NANO_BUILD_DIR), once.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${NANO_BUILD_DIR:-$root/build}
jobs=${NANO_JOBS:-$(nproc)}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$build" -j "$jobs"
