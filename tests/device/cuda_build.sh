#!/usr/bin/env bash
# Builds every sample kernel as CUDA with clang and the plugin (device side
# only) into PTX for one arch: OUT/<sample>.ptx.
# usage: cuda_build.sh CLANG PLUGIN CUDA_PATH SAMPLES_DIR OUT_DIR ARCH
set -euo pipefail
clang=$1 plugin=$2 cuda=$3 samples=$4 out=$5 arch=$6
mkdir -p "$out"
for src in "$samples"/*.hip; do
  name=$(basename "$src" .hip)
  "$clang" -x cuda --cuda-path="$cuda" --cuda-gpu-arch="$arch" --cuda-device-only -O2 -g -S \
    -Wno-unknown-cuda-version -fpass-plugin="$plugin" "$src" -o "$out/$name.ptx"
  echo "built $name.ptx for $arch"
done
