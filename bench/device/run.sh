#!/usr/bin/env bash
# Device instrumentation benchmark. usage: bench/device/run.sh [BUILD_DIR]
#  1. CPU kernels: run time of twins (every access recorded) over originals.
#  2. Static cost: machine instructions added per instrumented access in the
#     sample kernels (tests/device/samples), gfx90a and gfx1030 (hipcc,
#     llvm-objdump) and sm_90 (clang-22, PTX and ptxas SASS sizes).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "== CPU kernels (best of 5, thread CPU time): runtime called"
"$build/bench/device/device_cpu_bench" $((1 << 18)) 5
echo "== CPU kernels: runtime inlined (NANO_DEVICE_INLINE=1)"
"$build/bench/device/device_cpu_bench_inline" $((1 << 18)) 5
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
