#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: installs what is missing,
# builds once, runs every test in parallel (ctest). Benchmarks are not run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh"
"$root/scripts/build.sh"
build=${NANO_BUILD_DIR:-$root/build}
cd "$build"
export TMPDIR="$build/tmp" # see build.sh
rm -rf "$TMPDIR"
mkdir -p "$TMPDIR"
ctest -j "${NANO_JOBS:-$(nproc)}" --output-on-failure --timeout 900 "$@"
