# standin.sh (sourced): standin_build CLANG SOURCE_ROOT OUT builds the
# stand-in CUDA (runtime, driver, CUPTI) and HIP runtime as OUT/libcuda.so.1,
# with libamdhip64.so.5 beside it (the runtime opens HIP by that name).
standin_build() {
  local clang=$1 root=$2 out=$3 here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  "$clang" -std=c11 -O2 -shared -fPIC -Wall -Werror -I"$root/dh_comms/include" \
    -I"$root/tests/common" -I/usr/local/cuda/include "$here/fake_cudart.c" "$here/fake_cupti.c" \
    "$here/fake_hip.c" "$root/dh_comms/device/dh_device.c" -Wl,-soname,libcuda.so.1 \
    -o "$out/libcuda.so.1" -lpthread -ldl
  ln -sf libcuda.so.1 "$out/libamdhip64.so.5"
}
