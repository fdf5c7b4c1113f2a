#!/usr/bin/env bash
# Device instrumentation benchmark. usage: bench/device/run.sh [BUILD_DIR]
#  1. dh_comms host side (dh_bench): bytes per record by pattern against
#     dh_comms' 832, drain throughput against memcpy, idle drain-thread CPU.
#  2. CPU kernels through the runtime (kernel_bench.py): instrumented over
#     original, with and without analyzers, interleaved rounds, best/median.
#  3. Static cost: machine instructions added per instrumented access in the
#     sample kernels (tests/device/samples), gfx90a and gfx1030 (hipcc,
#     llvm-objdump) and sm_90 (clang-22, PTX and ptxas SASS sizes).
# NANO_BENCH_REPEAT: runs per figure (default 7 for dh_bench, 5 rounds for
# kernel_bench).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/bench/device/device_dh_bench" "${NANO_BENCH_REPEAT:-7}"
python3 "$root/bench/device/kernel_bench.py" "$build/bench/device/device_cpu_bench" \
  "$build/bench/device/device_cpu_bench_inline" "$build/runtime/rpd/libnano_rpd.so" "${NANO_BENCH_REPEAT:-5}"
sites_dump=$build/tests/device/device_sites_dump
echo "== AMDGPU static cost (hipcc, plugin $build/llvm-pass/libNanoPass.so)"
"$root/tests/device/hip_build.sh" "$build/llvm-pass/libNanoPass.so" "$root/tests/device/samples" \
  "$tmp/hip" /usr/lib/llvm-15/bin/clang-offload-bundler gfx90a gfx1030 > /dev/null
for arch in gfx90a gfx1030; do
  echo " $arch:"
  python3 "$root/bench/device/static_cost.py" amdgpu /usr/lib/llvm-15/bin/llvm-objdump \
    "$sites_dump" "$tmp/hip"/*."$arch".co
done
echo "== AMDGPU gfx90a, runtime inlined (NANO_DEVICE_INLINE=1)"
NANO_DEVICE_INLINE=1 "$root/tests/device/hip_build.sh" "$build/llvm-pass/libNanoPass.so" \
  "$root/tests/device/samples" "$tmp/hipinl" /usr/lib/llvm-15/bin/clang-offload-bundler gfx90a > /dev/null
python3 "$root/bench/device/static_cost.py" amdgpu /usr/lib/llvm-15/bin/llvm-objdump \
  "$sites_dump" "$tmp/hipinl"/*.gfx90a.co | tail -1
if [ -x "$build/llvm-22/llvm-pass/libNanoPass.so" ] || [ -f "$build/llvm-22/llvm-pass/libNanoPass.so" ]; then
  echo "== NVPTX static cost (clang-22, sm_90)"
  "$root/tests/device/cuda_build.sh" /usr/lib/llvm-22/bin/clang "$build/llvm-22/llvm-pass/libNanoPass.so" \
    /usr/local/cuda "$root/tests/device/samples" "$tmp/cuda" sm_90 > /dev/null
  python3 "$root/bench/device/static_cost.py" ptx /usr/local/cuda/bin/ptxas sm_90 \
    /usr/lib/llvm-22/bin/llvm-readelf "$tmp/cuda"/*.ptx
fi
