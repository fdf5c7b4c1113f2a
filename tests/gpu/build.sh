#!/usr/bin/env bash
# Builds the GPU suite (README.md) into OUT: every sample of samples/ and
# bench/gpu's gpubench (run as OUT/bench.sh) with clang-22 and the plugin for
# sm_90 (static cudart, as nvcc links by default, but for dynshared's shared
# one; cuBLAS's sample with the shared cuBLAS, subscriber's with libcupti,
# dynpar's with -fgpu-rdc and the device runtime), and OUT/lib with
# libnano_rpd.so, libkerneldb.so and the libraries they need beyond the C
# library, so that OUT runs on a GPU machine that has CUDA but none of
# nanoprobe's build dependencies (run.sh OUT there); OUT/nvcc_strided,
# OUT/nvcc_handbuilt and OUT/cache for the kernel cache of programs not
# built with the plugin.
# usage: build.sh CLANGXX PLUGIN LIBNANO_RPD LIBKERNELDB OUT
set -euo pipefail
clangxx=$1 plugin=$2 rpd=$3 kdb=$4 out=$5
here=$(cd "$(dirname "$0")" && pwd)
cuda=/usr/local/cuda
mkdir -p "$out/lib"
flags=(-x cuda --cuda-gpu-arch=sm_90 --cuda-path="$cuda" -Wno-unknown-cuda-version -O2 -g
  -fpass-plugin="$plugin" -I"$here/samples")
for src in "$here"/samples/*.cu "$here/../../bench/gpu/gpubench.cu"; do
  name=$(basename "$src" .cu)
  libs=(-L"$cuda/lib64" -lcudart_static -ldl -lrt -lpthread)
  # one sample with the shared cudart (clang's --cudart=shared)
  [ "$name" = dynshared ] && libs=(-L"$cuda/lib64" -lcudart -Wl,-rpath,"$cuda/lib64")
  if [ "$name" = cublas ]; then
    if [ ! -e "$cuda/lib64/libcublas.so" ]; then
      echo "build.sh: no cuBLAS in $cuda/lib64: the cublas sample is not built"
      continue
    fi
    libs+=(-lcublas -Wl,-rpath,"$cuda/lib64")
  fi
  [ "$name" = subscriber ] && libs+=(-lcupti -Wl,-rpath,"$cuda/lib64")
  # dynamic parallelism: relocatable device code and the device runtime,
  # for the device link too (clang's offload driver)
  extra=()
  [ "$name" = dynpar ] && extra=(-fgpu-rdc) &&
    libs+=(-lcudadevrt -Xoffload-linker -lcudadevrt -Xoffload-linker -L"$cuda/lib64")
  # shared memory is instrumented on request only (NANO_ADDRSPACES)
  spaces=global,generic
  case $name in bank | dynshared) spaces+=,shared ;; esac
  NANO_ADDRSPACES=$spaces "$clangxx" "${flags[@]}" "${extra[@]}" "$src" -o "$out/$name" "${libs[@]}"
done
# the runtime and what it loads, minus what every machine has (the C and C++
# libraries, zlib: a copy of these could shadow the newer ones CUDA needs)
cp "$rpd" "$kdb" "$(dirname "$rpd")/libnano_cudahook.so" "$out/lib/"
# strided built by nvcc without anything of ours, a kernel cache of its
# kernels built with the plugin (what `nanoprobe cache build` runs), and a
# plain cache of its STRIDED_PLUS_ONE variant: the "cached" case of run.sh
"$cuda/bin/nvcc" -O2 -g -arch=sm_90 -I"$here/samples" "$here/samples/strided.cu" -o "$out/nvcc_strided"
mkdir -p "$out/cache" "$out/plaincache"
"$clangxx" "${flags[@]}" --cuda-device-only -c "$here/samples/strided.cu" -o "$out/cache/strided.o"
# handbuilt the same way (its graph built by hand, through the driver's
# cuGraphAddKernelNode under nvcc's cudart): the "cached_handbuilt" case
"$cuda/bin/nvcc" -O2 -g -arch=sm_90 -I"$here/samples" "$here/samples/handbuilt.cu" \
  -o "$out/nvcc_handbuilt"
"$clangxx" "${flags[@]}" --cuda-device-only -c "$here/samples/handbuilt.cu" \
  -o "$out/cache/handbuilt.o"
"$clangxx" "${flags[@]}" --cuda-device-only -DSTRIDED_PLUS_ONE -c "$here/samples/strided.cu" \
  -o "$out/plaincache/strided.o"
for lib in "$rpd" "$kdb"; do
  ldd "$lib" | awk '$3 ~ /^\// { print $3 }' | while read -r dep; do
    case $(basename "$dep") in
    libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux* | libstdc++* | libgcc_s* | libz.so*) ;;
    *) cp -L "$dep" "$out/lib/" ;;
    esac
  done
done
cp "$here/run.sh" "$here/env.sh" "$here/check.py" "$here/compare_sums.py" "$out/"
cp "$here/../../bench/gpu/run.sh" "$out/bench.sh"
echo "built $(ls "$here"/samples/*.cu | wc -l) samples, gpubench and $(ls "$out/lib" | wc -l) libraries into $out"
