#!/usr/bin/env bash
# Builds every sample kernel with hipcc and the plugin, once for both AMDGPU
# targets (one hipcc call per sample), and unbundles one code object per
# target: OUT/<sample>.<arch>.co.
# usage: hip_build.sh PLUGIN SAMPLES_DIR OUT_DIR BUNDLER ARCH...
set -euo pipefail
plugin=$1 samples=$2 out=$3 bundler=$4
shift 4
archs=("$@")
mkdir -p "$out"
offload=() targets=() outputs=()
for a in "${archs[@]}"; do
  offload+=(--offload-arch="$a")
done
for src in "$samples"/*.hip; do
  name=$(basename "$src" .hip)
  bundle="$out/$name.bundle"
  hipcc "${offload[@]}" -O2 -g --cuda-device-only -c -fpass-plugin="$plugin" "$src" -o "$bundle" \
    2> "$out/$name.log" || { cat "$out/$name.log"; exit 1; }
  targets=() outputs=()
  for a in "${archs[@]}"; do
    targets+=("hipv4-amdgcn-amd-amdhsa--$a")
    outputs+=(--output="$out/$name.$a.co")
  done
  "$bundler" --type=o --targets="$(IFS=,; echo "${targets[*]}")" --input="$bundle" \
    "${outputs[@]}" --unbundle
  echo "built $name for ${archs[*]}"
done
