#!/usr/bin/env bash
# Builds the code objects the kerneldb tests share (ctest fixture
# kerneldb_inputs): $1 = output directory.
#   t_gfx90a.co, t_gfx1100.co  bare code objects (hipcc -g; wave64, wave32)
#   libt.so                    shared library with a .hip_fatbin for both
#   t_argname.co               gfx90a with -fhip-kernel-arg-name (names in the note)
#   t.bundle                   uncompressed offload bundle (clang-offload-bundler-15)
#   t_zstd.ccob                compressed bundle (clang-offload-bundler-22 --compress)
#   t_zlib.ccob                compressed bundle, zlib method (written by kdb_test.py)
#   cov6.o                     clang-22 host object, compressed .hip_fatbin, code object v6
#   c.cubin, c_fat.o           nvcc -cubin / host object with .nv_fatbin (sm_90)
#   c_G.cubin                  nvcc -G -cubin (NVAL records in .nv.info); *.usage:
#   c_G_fat.o, c_G_plain.o     nvcc -G -c: compressed fat binary (the default), -no-compress
#                              ptxas's registers and stack frames (--resource-usage)
#   c_clang.o                  clang-22 CUDA host object with .nv_fatbin (sm_90)
#   c_rdc.o, c_rdc_lto.o       clang-22 -fgpu-rdc: .llvm.offloading with a cubin / bitcode
# gfx1100 needs -nogpulib (Debian's ROCm 5.2 device libraries have no
# gfx1100), so the gfx1100 builds (and libt.so, which holds both) use
# -nogpulib and the kernels avoid the libraries; t_gfx90a.co links them.
set -euo pipefail
out=$1
src=$(cd "$(dirname "$0")" && pwd)/src
mkdir -p "$out"
cd "$out"
hip() { hipcc "$@" 2> >(grep -v -e rocm_agent_enumerator -e Traceback -e '^  ' -e '^[A-Za-z]*Error' >&2); }
hip -g -O2 --offload-arch=gfx90a --cuda-device-only --no-gpu-bundle-output \
  -c "$src/kdb_test.hip" -o t_gfx90a.co
hip -g -O2 -nogpulib --offload-arch=gfx1100 --cuda-device-only --no-gpu-bundle-output \
  -c "$src/kdb_test.hip" -o t_gfx1100.co
hip -g -O2 -fPIC -shared -nogpulib --offload-arch=gfx90a --offload-arch=gfx1100 \
  "$src/kdb_test.hip" -o libt.so
# argument names in the metadata note (and still no types)
hip -g -O2 -fhip-kernel-arg-name --offload-arch=gfx90a --cuda-device-only --no-gpu-bundle-output \
  -c "$src/kdb_test.hip" -o t_argname.co
# target features: one code object per setting (list prints gfx90a:xnack+, ...)
hip -O2 -fPIC -shared -nogpulib --offload-arch=gfx90a:xnack+ \
  --offload-arch=gfx90a:sramecc-:xnack- "$src/kdb_test.hip" -o libfeat.so
: > empty.host
targets=host-x86_64-unknown-linux-gnu,hipv4-amdgcn-amd-amdhsa--gfx90a,hipv4-amdgcn-amd-amdhsa--gfx1100
clang-offload-bundler-15 --type=o --targets=$targets --input=empty.host --input=t_gfx90a.co \
  --input=t_gfx1100.co --output=t.bundle
/usr/lib/llvm-22/bin/clang-offload-bundler --type=o --targets=$targets --input=empty.host \
  --input=t_gfx90a.co --input=t_gfx1100.co --output=t_zstd.ccob --compress
python3 "$src/../kdb_test.py" make-zlib t.bundle t_zlib.ccob
clang-22 -x hip --offload-arch=gfx90a --offload-arch=gfx1100 -nogpulib -nogpuinc --offload-compress \
  -O2 -c "$src/kdb_cov6.hip" -o cov6.o
if [ -x /usr/local/cuda/bin/nvcc ]; then
  # ptxas's own account of registers and stack frames is the reference
  /usr/local/cuda/bin/nvcc -cubin -arch=sm_90 --resource-usage "$src/kdb_test.cu" -o c.cubin \
    2> c.cubin.usage
  /usr/local/cuda/bin/nvcc -G -cubin -arch=sm_90 --resource-usage "$src/kdb_test.cu" -o c_G.cubin \
    2> c_G.cubin.usage
  /usr/local/cuda/bin/nvcc -c -arch=sm_90 "$src/kdb_test.cu" -o c_fat.o
  /usr/local/cuda/bin/nvcc -G -c -arch=sm_90 "$src/kdb_test.cu" -o c_G_fat.o  # compressed
  /usr/local/cuda/bin/nvcc -G -c -arch=sm_90 -no-compress "$src/kdb_test.cu" -o c_G_plain.o
  clang-22 -x cuda --cuda-path=/usr/local/cuda --offload-arch=sm_90 -O2 -Wno-unknown-cuda-version \
    -c "$src/kdb_test.cu" -o c_clang.o
  # -fgpu-rdc, the new offload driver: the cubin in .llvm.offloading; with
  # -foffload-lto, bitcode only
  clang-22 -x cuda --cuda-path=/usr/local/cuda --offload-arch=sm_90 -O2 -Wno-unknown-cuda-version \
    -fgpu-rdc -c "$src/kdb_test.cu" -o c_rdc.o
  clang-22 -x cuda --cuda-path=/usr/local/cuda --offload-arch=sm_90 -O2 -Wno-unknown-cuda-version \
    -fgpu-rdc -foffload-lto -c "$src/kdb_test.cu" -o c_rdc_lto.o
fi
