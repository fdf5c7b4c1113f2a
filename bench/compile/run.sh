#!/usr/bin/env bash
# Compile-time cost of kernel twins (issue 40.6): a generated CUDA file of
# kernel-heavy code (KERNELS kernels, default 24, each an unrolled loop over
# 32 accumulators) built with clang-22 for sm_90, in the same run and
# interleaved (ROUNDS rounds, default 5), as CPU time (user+sys of clang and
# the ptxas it runs) of:
#   plain      no plugin
#   plugin     -fpass-plugin=libNanoPass.so: every kernel gets a twin
#   selected   the plugin with NANO_KERNELS naming one kernel (the remedy the
#              README gives: twins only for the kernels being looked at)
# each for the device half to PTX (the LLVM part: -S --cuda-device-only) and
# the whole compile (-c: host and device, ptxas, fatbinary). Prints each
# figure's best and median, and ratios to plain (best over best, median over
# median).
# usage: bench/compile/run.sh [BUILD_DIR] (default ./build)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
plugin=$build/llvm-22/llvm-pass/libNanoPass.so
[ -f "$plugin" ] || { echo "run.sh: no LLVM 22 plugin at $plugin" >&2; exit 2; }
exec python3 "$here/compile_bench.py" "$plugin" "${KERNELS:-24}" "${ROUNDS:-5}"
