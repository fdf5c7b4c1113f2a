#!/usr/bin/env bash
# The HSA tool's interception (issue 38): bench/hsa/run.sh [BUILD_DIR] (default ./build).
# Needs the stand-in ROCr and the code objects the device_hsa_tool test
# builds (ctest -R device_hsa_tool first). Prints the time per dispatch of a
# program that dispatches and waits, N times, without the tool, traced by it,
# and with each kernel replaced from a kernel cache, interleaved, with the
# ratios to the bare run (dispatch_bench.py); then the same with a HIP
# program on Debian's real HIP runtime over the stand-in ROCr.
set -euo pipefail
build=$(cd "${1:-./build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
dir=$build/tests/device/hsa
[ -x "$dir/hsa_app" ] || { echo "run ctest -R device_hsa_tool in $build first" >&2; exit 2; }
# the same on Debian's real HIP runtime over the stand-in (where hipcc is)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
hip_repeat=
if command -v hipcc > /dev/null && hipcc --offload-arch=gfx90a -O2 "$here/hip_repeat.hip" \
  -o "$tmp/hip_repeat" > "$tmp/hipcc.log" 2>&1; then
  hip_repeat=$tmp/hip_repeat
fi
python3 "$here/dispatch_bench.py" "$dir" "$build/runtime/rpd/libnano_rpd.so" "${HSA_BENCH_DISPATCHES:-5000}" \
  "${HSA_BENCH_ROUNDS:-7}" $hip_repeat
