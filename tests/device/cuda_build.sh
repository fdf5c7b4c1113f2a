#!/usr/bin/env bash
# Builds every sample kernel as CUDA with clang and the plugin (device side
# only) into PTX for one arch: OUT/<sample>.ptx. With HEADER, CUDA's headers
# are not read (-nocudainc) and HEADER stands in for them: clang 15 cannot
# read CUDA 13's.
# usage: cuda_build.sh CLANG PLUGIN CUDA_PATH SAMPLES_DIR OUT_DIR ARCH [HEADER]
set -euo pipefail
clang=$1 plugin=$2 cuda=$3 samples=$4 out=$5 arch=$6
headers=()
[ -n "${7:-}" ] && headers=(-nocudainc -nocudalib -include "$7")
mkdir -p "$out"
for src in "$samples"/*.hip; do
  name=$(basename "$src" .hip)
  "$clang" -x cuda --cuda-path="$cuda" --cuda-gpu-arch="$arch" --cuda-device-only -O2 -g -S \
    -Wno-unknown-cuda-version "${headers[@]}" -fpass-plugin="$plugin" "$src" -o "$out/$name.ptx"
  echo "built $name.ptx for $arch"
done
