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

# standin_sites KERNELDB OBJECT SOURCE exports FAKE_SITES: the site ids of
# the twins' accesses in OBJECT (a cubin, or an object holding one), in the
# order the stand-in's emulated kernels make them (fake_cudart.c: axpy's
# load of x, load of y, store of y, then other's store), found by their
# source positions in SOURCE (axpy and other written as in app.cu), whose
# lines it leaves in axpy_line and other_line. Fails unless all four are
# found.
standin_sites() {
  local kerneldb=$1 object=$2 source=$3 sites name
  sites=$("$kerneldb" sites "$object" --arch sm_90)
  echo "$sites"
  name=$(basename "$source")
  site() { awk -v at="$name:$1" '$7 ~ at"$" { print $1 }' <<<"$sites"; }
  axpy_line=$(grep -n 'y\[i\] = a \* x\[i\]' "$source" | cut -d: -f1)
  other_line=$(grep -n '^__global__ void other' "$source" | cut -d: -f1)
  FAKE_SITES="$(site "$axpy_line:25") $(site "$axpy_line:32") $(site "$axpy_line:19")"
  FAKE_SITES+=" $(site "$other_line:36")"
  export FAKE_SITES
  [ "$(wc -w <<<"$FAKE_SITES")" = 4 ] || { echo "FAIL: four sites in $object"; return 1; }
}
