#!/usr/bin/env bash
# Launch routing of CUDA kernels, run without a GPU (issue 15.1): the host
# side of app.cu is built with clang and the plugin against a stand-in CUDA
# runtime (fake_cudart.c) that prints what is registered and launched.
#   - without the runtime's __nano_gpu_launch: the kernels launch as before;
#     the twins are registered too, next to them;
#   - with a stand-in runtime (route.c) preloaded: each launch reaches it with
#     the CUDA api, the kernel's 4 (axpy) or 1 (other) arguments, and it
#     launches the twin with grid, block, shared bytes and stream unchanged
#     and one more argument.
# usage: check.sh CLANG PLUGIN CC RUNTIME_INCLUDE OUT_DIR
set -euo pipefail
clang=$1 plugin=$2 cc=$3 inc=$4 out=$5
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
cd "$out"
echo fatbin > gpubinary # the host object embeds it; the stand-in ignores it
"$clang" -x cuda --cuda-host-only --cuda-gpu-arch=sm_90 --cuda-path=/usr/local/cuda \
  -Wno-unknown-cuda-version -O2 -c -Xclang -fcuda-include-gpubinary -Xclang gpubinary \
  -fpass-plugin="$plugin" "$here/app.cu" -o app.o
"$cc" -shared -fPIC "$here/fake_cudart.c" -o libfakecudart.so
"$cc" -shared -fPIC -I"$inc" "$here/route.c" -o libroute.so -L. -lfakecudart
"$clang" app.o -o app -L. -lfakecudart -Wl,-rpath,"$out"
fail() { echo "FAIL: $*"; exit 1; }
plain=$(./app)
echo "$plain"
want="register _Z4axpyfPKfPfi
register __nano_twin__Z4axpyfPKfPfiPv
register _Z5otherPi
register __nano_twin__Z5otherPiPv"
[ "$(grep '^register' <<<"$plain")" = "$want" ] || fail "registrations: kernel, then its twin"
grep -q '^launch _Z4axpyfPKfPfi grid 3 2 1 block 256 1 1 shared 16 stream 0x3000 ' <<<"$plain" ||
  fail "without the runtime, axpy launches as before"
grep -q '^launch _Z5otherPi grid 1 1 1 block 32 1 1 shared 0 stream 0x3000 ' <<<"$plain" ||
  fail "without the runtime, cudaLaunchKernel(other) launches as before"
grep -q '^done 0$' <<<"$plain" || fail "the program ends normally"
routed=$(LD_PRELOAD=./libroute.so ./app)
echo "$routed"
desc=$(sed -n 's/^route api 1 nargs 4 desc \(0x[0-9a-f]*\)$/\1/p' <<<"$routed")
[ -n "$desc" ] || fail "axpy's launch reaches the runtime: CUDA, 4 arguments"
grep -q '^route api 1 nargs 1 desc ' <<<"$routed" || fail "other's launch reaches the runtime: 1 argument"
[ "$(grep -c "^twin's last argument $desc$" <<<"$routed")" = 2 ] || fail "the twins get the descriptor"
grep -q '^launch __nano_twin__Z4axpyfPKfPfiPv grid 3 2 1 block 256 1 1 shared 16 stream 0x3000 ' \
  <<<"$routed" || fail "the runtime launches axpy's twin with the launch's configuration"
grep -q '^launch __nano_twin__Z5otherPiPv grid 1 1 1 block 32 1 1 shared 0 stream 0x3000 ' \
  <<<"$routed" || fail "the runtime launches other's twin"
! grep -q '^launch _Z' <<<"$routed" || fail "no original launched when the runtime takes the twin"
echo "PASS gpu launch routing"
