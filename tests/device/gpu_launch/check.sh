#!/usr/bin/env bash
# Launch routing of CUDA and HIP kernels, run without a GPU (issue 15.1): the
# host side of app.cu (clang with CUDA's headers) or app.hip (hipcc) is built
# with the plugin against a stand-in runtime (fake_cudart.c, both APIs) that
# prints what is registered and launched.
#   - without the runtime's __nano_gpu_launch: the kernels launch as before;
#     the twins are registered too, each right after its kernel;
#   - with a stand-in runtime entry (route.c) preloaded: each launch reaches
#     it with the api and the kernel's argument count (axpy 4, CUDA's other 1)
#     and it launches the twin with grid, block, shared bytes and stream
#     unchanged and one more argument.
# usage: check.sh cuda|hip COMPILER PLUGIN CC RUNTIME_INCLUDE OUT_DIR
set -euo pipefail
api=$1 compiler=$2 plugin=$3 cc=$4 inc=$5 out=$6
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
cd "$out"
echo fatbin > gpubinary # the host object embeds it; the stand-in ignores it
embed=(-O2 -c -Xclang -fcuda-include-gpubinary -Xclang gpubinary -fpass-plugin="$plugin")
if [ "$api" = cuda ]; then
  "$compiler" -x cuda --cuda-host-only --cuda-gpu-arch=sm_90 --cuda-path=/usr/local/cuda \
    -Wno-unknown-cuda-version "${embed[@]}" "$here/app.cu" -o app.o
  id=1 kernels="_Z4axpyfPKfPfi _Z5otherPi" done_line="done 0"
else
  "$compiler" --offload-arch=gfx90a --cuda-host-only "${embed[@]}" "$here/app.hip" -o app.o \
    2> >(grep -v -e rocm_agent_enumerator -e 'linker. input unused' >&2)
  id=2 kernels="_Z4axpyfPKfPfi" done_line="done"
fi
"$cc" -shared -fPIC "$here/fake_cudart.c" -o libfakecudart.so
"$cc" -shared -fPIC -I"$inc" "$here/route.c" -o libroute.so -L. -lfakecudart
"$cc" app.o -o app -L. -lfakecudart -Wl,-rpath,"$out"
fail() { echo "FAIL: $*"; exit 1; }
plain=$(./app)
echo "$plain"
want=$(for k in $kernels; do printf 'register %s\nregister %s\n' "$k" "__nano_twin_${k}Pv"; done)
[ "$(grep '^register' <<<"$plain")" = "$want" ] || fail "registrations: each kernel, then its twin"
grep -q '^launch _Z4axpyfPKfPfi grid 3 2 1 block 256 1 1 shared 16 stream 0x3000 ' <<<"$plain" ||
  fail "without the runtime, axpy launches as before"
grep -qx "$done_line" <<<"$plain" || fail "the program ends normally"
routed=$(LD_PRELOAD=./libroute.so ./app)
echo "$routed"
desc=$(sed -n "s/^route api $id nargs 4 desc \\(0x[0-9a-f]*\\)\$/\\1/p" <<<"$routed")
[ -n "$desc" ] || fail "axpy's launch reaches the runtime: api $id, 4 arguments"
grep -q '^launch __nano_twin__Z4axpyfPKfPfiPv grid 3 2 1 block 256 1 1 shared 16 stream 0x3000 ' \
  <<<"$routed" || fail "the runtime launches axpy's twin with the launch's configuration"
n=$(wc -w <<<"$kernels")
[ "$(grep -c "^twin's last argument $desc$" <<<"$routed")" = "$n" ] ||
  fail "every twin gets the descriptor"
if [ "$api" = cuda ]; then
  grep -q '^launch _Z5otherPi grid 1 1 1 block 32 1 1 shared 0 stream 0x3000 ' <<<"$plain" ||
    fail "without the runtime, cudaLaunchKernel(other) launches as before"
  grep -q '^route api 1 nargs 1 desc ' <<<"$routed" || fail "other's launch reaches the runtime"
  grep -q '^launch __nano_twin__Z5otherPiPv grid 1 1 1 block 32 1 1 shared 0 stream 0x3000 ' \
    <<<"$routed" || fail "the runtime launches other's twin"
fi
! grep -q '^launch _Z' <<<"$routed" || fail "no original launched when the runtime takes the twin"
echo "PASS $api launch routing"
