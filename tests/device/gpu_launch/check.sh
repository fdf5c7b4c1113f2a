#!/usr/bin/env bash
# Launch routing and the runtime's GPU back end, run without a GPU (issue 15):
# the host side of app.cu (clang with CUDA's headers) or app.hip (hipcc) is
# built with the plugin and linked against a stand-in CUDA (fake_cudart.c:
# runtime and driver, a device that runs only while the program
# synchronizes, twins emulated through the device runtime's CPU build).
#   - without libnano_rpd.so: the kernels launch as before; the twins are
#     registered too, each right after its kernel;
#   - with it, not instrumenting: the originals launch, each launch is an API
#     row of the trace;
#   - with NANO_INSTRUMENT=1 (CUDA): the twins launch with the launch's grid,
#     block, shared bytes and stream and the descriptor; nothing waits for
#     the program's streams; every access reaches the analyzer and the trace
#     (nano_dispatch: backend, arch, shape, records) at its source line, read
#     from the site table of the cubin in the program's fat binary; a launch
#     captured into a graph becomes the twin between host functions and
#     copies, so that each of the graph's three replays is a dispatch of its
#     own, and replays not picked (NANO_DISPATCHES) record nothing; a twin that
#     never launched outside a graph is captured as the original; a small ring
#     still accounts for every record (drained or dropped); a twin on one
#     stream ends and is reported while one on another is held (held.cu);
#     cudaLaunchKernelEx (ex.cu) launches the twin with the program's
#     configuration, its cluster attribute included; CUDA 12's multi-device
#     launch (multi.cu) runs each launch's twin; a program built with
#     -fgpu-rdc and the new offload driver (rdc_main.cu, rdc_kernels.cu:
#     registration made by clang-linker-wrapper from the offload entries)
#     runs the twins, from the kernels' file and from a file without kernels;
#   - CUDA traced through CUPTI (the stand-in's, fake_cupti.c, loaded by the
#     stand-in driver from CUDA_INJECTION64_PATH, which the preloaded tracer
#     sets): runtime calls as API rows (not the driver calls inside them),
#     kernels and the copy as ops linked to their calls, with launch and
#     copy arguments; nanoprobe's own CUDA calls are neither; with CUPTI
#     held by another client, that is said and the rest is traced;
#   - HIP (host side only: no site table): the HIP runtime's placement, the
#     device's arch and wave size from its properties, every access recorded,
#     a graph's replays each a dispatch; hipExtLaunchKernelGGL (ext.hip) runs
#     the twin through the program's call, its events around the twin;
#     hipLaunchKernelExC (exc.hip, HIP 6) with the program's configuration;
#     the two multi-device calls (multi.hip) run each launch's twin, all
#     through one call of the program's, or the program's list where the
#     twins cannot launch.
# CUDA's device side is compiled for real (ptxas, fatbinary: the toolkit's);
# HIP's host side alone.
# usage: check.sh cuda|hip COMPILER PLUGIN CLANG SOURCE_ROOT LIBNANO_RPD KERNELDB RPD_TOOL OUT_DIR
#        NANOPROBE
set -euo pipefail
api=$1 compiler=$2 plugin=$3 clang=$4 root=$5 rpd=$6 kerneldb=$7 rpdtool=$8 out=$9 nanoprobe=${10}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
cd "$out"
. "$here/standin.sh"
rm -f ./*.rpd ./*.rpd-*
if [ "$api" = cuda ]; then
  "$compiler" -x cuda --cuda-gpu-arch=sm_90 --cuda-path=/usr/local/cuda -Wno-unknown-cuda-version \
    -O2 -g -c -fpass-plugin="$plugin" "$here/app.cu" -o app.o
  kernels="_Z4axpyfPKfPfi _Z5otherPi" done_line="done 0 0 y right p 1 q 1"
  standin_sites "$kerneldb" app.o "$here/app.cu"
else
  echo fatbin > gpubinary # the host object embeds it; the stand-in ignores it
  "$compiler" --offload-arch=gfx90a --cuda-host-only -O2 -c -Xclang -fcuda-include-gpubinary \
    -Xclang gpubinary -fpass-plugin="$plugin" "$here/app.hip" -o app.o \
    2> >(grep -v -e rocm_agent_enumerator -e 'linker. input unused' >&2)
  kernels="_Z4axpyfPKfPfi" done_line="done 0 y right"
fi
standin_build "$clang" "$root" "$out"
export LD_LIBRARY_PATH="$out${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NANO_CUPTI_PATH="$out/libcuda.so.1" # the stand-in's CUPTI
"$clang" app.o -o app -L. -l:libcuda.so.1 -Wl,-rpath,"$out" -lstdc++ # a C++ program
fail() { echo "FAIL: $*"; exit 1; }
# check_unavailable NAME WHY: after `nanoprobe run -o NAME.rpd` with stderr in
# NAME.err, the GPU back end's reason WHY was said once, named by nanoprobe
# run's hint, recorded in the trace (nano_gpu_unavailable) and shown by rpd info
check_unavailable() {
  [ "$(grep -cx "nanoprobe: $2" "$1.err")" = 1 ] &&
    grep -qx "nanoprobe: no kernel was instrumented: $2" "$1.err" ||
    fail "$1: said once, and named by nanoprobe run's hint ($(cat "$1.err"))"
  [ "$(query "$1.rpd" "select value from rocpd_metadata where tag = 'nano_gpu_unavailable'")" = "$2" ] &&
    "$rpdtool" info "$1.rpd" | grep -qx "GPU back end:    $2" ||
    fail "$1: recorded in the trace, shown by rpd info ($("$rpdtool" info "$1.rpd"))"
}
axpy_cfg='grid 4 1 1 block 256 1 1 shared 16 stream 0x3000'

plain=$(./app)
echo "$plain"
want=$(for k in $kernels; do printf 'register %s\nregister %s\n' "$k" "__nano_twin_${k}Pv"; done)
[ "$(grep '^register' <<<"$plain")" = "$want" ] || fail "registrations: each kernel, then its twin"
grep -qx "launch _Z4axpyfPKfPfi $axpy_cfg" <<<"$plain" || fail "without the runtime, axpy launches as before"
grep -qx "$done_line" <<<"$plain" || fail "the program ends normally with the right results"
graph_nodes=1 # CUDA's graph: the kernel, then a copy
[ "$api" = cuda ] && graph_nodes=2
grep -qx "capture ends: $graph_nodes nodes" <<<"$plain" || fail "the graph holds the program's nodes"

# the runtime present, not instrumenting: originals, API rows
# FAKE_DRIVER_CALLS: cudaMemcpy makes 40 driver calls before its copy's (the
# copy is still linked to it)
traced=$(RPDT_FILENAME=traced.rpd FAKE_DRIVER_CALLS=40 LD_PRELOAD="$rpd" ./app)
echo "$traced"
grep -qx "launch _Z4axpyfPKfPfi $axpy_cfg" <<<"$traced" || fail "axpy's original launches"
! grep -q '^launch __nano_twin' <<<"$traced" || fail "no twin without NANO_INSTRUMENT"
grep -qx "$done_line" <<<"$traced" || fail "traced: right results"
! grep -q "primary context" <<<"$traced" || fail "not instrumenting: CUDA is not touched"
query() { python3 -c 'import sqlite3,sys
for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2]): print(*r)' "$@"; }
nano_launches() { # FILE: nanoLaunchKernel rows, and how many carry rocpd_kernelapi rows
  query "$1" "select count(*), count(k.api_ptr_id) from rocpd_api a join rocpd_string s on s.id = a.apiName_id left join rocpd_kernelapi k on k.api_ptr_id = a.id where s.string = 'nanoLaunchKernel'"
}
n=$(grep -c '^launch ' <<<"$traced")
# with CUPTI recording CUDA's calls, the arguments are on its cudaLaunchKernel rows alone
[ "$(nano_launches traced.rpd)" = "$n $([ "$api" = cuda ] && echo 0 || echo "$n")" ] ||
  fail "one API row per launch, the arguments once ($(nano_launches traced.rpd))"

# CUDA through CUPTI: calls, and ops linked to them (the view api_ops joins them)
cuda_rows() { # FILE: each CUDA API row, then its op (type, description), in time order
  query "$1" "select s.string, coalesce(t.string, '-'), coalesce(nullif(d.string, ''), '-'), coalesce(o.start >= a.start and o.start <= o.\"end\", '-') from rocpd_api a join rocpd_string s on s.id = a.apiName_id join rocpd_string m on m.id = a.domain_id left join rocpd_api_ops x on x.api_id = a.id left join rocpd_op o on o.id = x.op_id left join rocpd_string t on t.id = o.opType_id left join rocpd_string d on d.id = o.description_id where m.string = 'cuda' order by a.start, o.start"
}
if [ "$api" = cuda ]; then
  rows=$(cuda_rows traced.rpd)
  echo "$rows"
  [ "$rows" = "cudaLaunchKernel ConcurrentKernel axpy(float, float const*, float*, int) 1
cudaLaunchKernel ConcurrentKernel other(int*) 1
cudaStreamBeginCapture - - -
cudaLaunchKernel - - -
cudaMemcpyAsync - - -
cudaStreamEndCapture - - -
cudaGraphInstantiate - - -
cudaGraphLaunch ConcurrentKernel other(int*) 1
cudaGraphLaunch Memcpy - 1
cudaGraphLaunch ConcurrentKernel other(int*) 1
cudaGraphLaunch Memcpy - 1
cudaGraphLaunch ConcurrentKernel other(int*) 1
cudaGraphLaunch Memcpy - 1
cudaDeviceSynchronize - - -
cudaMemcpy Memcpy - 1" ] || fail "CUPTI: runtime calls, kernels and copies (a graph's replays' too) linked to them, a copy after 40 driver calls too; cudaGetDevice and the driver call inside it left out"
  # rpd graph on it: the capture's graph, its executable, its one kernel, three launches
  "$rpdtool" graph traced.rpd >/dev/null || fail "rpd graph on a CUDA trace"
  graphs=$(query traced.rpd "select count(*), count(distinct graphExec) from ext_graph")
  kernels=$(query traced.rpd "select sequence, kernelName, gridX, workgroupX from graphKernel")
  launches=$(query traced.rpd "select count(*), sum(gpuTime_usec >= 0) from graphLaunch")
  [ "$kernels" = "1 other(int*) 1 32" ] && [ "$launches" = "3 3" ] && [ "$graphs" = "1 1" ] ||
    fail "rpd graph: one captured graph with other(int*), launched three times ($graphs; $kernels; $launches)"
  args=$(query traced.rpd "select k.gridX, k.gridY, k.workgroupX, k.groupSegmentSize, k.stream, n.string from rocpd_kernelapi k join rocpd_api a on a.id = k.api_ptr_id join rocpd_string s on s.id = a.apiName_id join rocpd_string n on n.id = k.kernelName_id where s.string = 'cudaLaunchKernel' order by a.start limit 1")
  [ "$args" = "4 1 256 16 0x3000 axpy(float, float const*, float*, int)" ] ||
    fail "CUPTI: launch arguments, the kernel demangled ($args)"
  copy=$(query traced.rpd "select c.size, c.kind, c.sync from rocpd_copyapi c join rocpd_api a on a.id = c.api_ptr_id order by a.start")
  [ "$copy" = "4 2 0
4000 2 1" ] || fail "CUPTI: copy arguments, the captured one's and cudaMemcpy's ($copy)"
  # rpd's tools on it: kernels with GPU times; a track per GPU stream, arrows from the calls
  "$rpdtool" top traced.rpd | grep -q '^axpy(float, float const\*, float\*, int)  *1 ' ||
    fail "rpd top lists the kernel"
  "$rpdtool" export traced.rpd -o traced.json
  python3 - traced.json <<'PY' || fail "rpd export: stream tracks and flow arrows"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
tracks = {e["args"]["name"] for e in ev if e.get("name") == "thread_name" and e["pid"] >= 10**9}
flows = [e for e in ev if e.get("cat") == "flow"]
# the copy's, stream 0x3000's, the graph's (a stream the stand-in allocated)
assert {"queue 0", "queue 3"} < tracks and len(tracks) == 3, tracks
assert len(flows) == 18, len(flows)  # 9 ops (6 of them the graph's replays), an arrow each
PY
fi


run_instrumented() { # NAME [env...]: app's stdout in NAME.out, stderr in NAME.err
  local name=$1
  shift
  # records by default (the checks below count them); the twins' own sums:
  # the "summed" case
  env RPDT_FILENAME="$name.rpd" NANO_INSTRUMENT=1 NANO_ANALYZERS=MemoryAnalysis NANO_AGGREGATE=host \
    NANO_ANALYZER_FORMAT=json NANO_ANALYZER_OUTPUT="$name.json" "$@" LD_PRELOAD="$rpd" ./app \
    >"$name.out" 2>"$name.err" || fail "$name: the program failed: $(cat "$name.err")"
  cat "$name.out" "$name.err"
}
run_instrumented inst
grep -qx "launch __nano_twin__Z4axpyfPKfPfiPv $axpy_cfg" inst.out ||
  fail "axpy's twin launches with the launch's configuration"
[ "$(grep -B1 "^launch __nano_twin__Z4axpyfPKfPfiPv" inst.out | head -1)" = "stream 0x3000 waits for an event" ] ||
  fail "the twin's stream waits for the descriptor's copy (an event), the launching thread does not"
! grep -q SERIALIZED inst.out || fail "the runtime waited for the program's stream"
grep -qx "$done_line" inst.out || fail "instrumented: right results"
if [ "$api" = hip ]; then
  # the HIP runtime's placement: the device's arch and wave from its properties
  rows=$(query inst.rpd "select kernel, backend, arch, wave_size, grid_x, block_x, shared_bytes, records, dropped from nano_dispatch")
  row="_Z4axpyfPKfPfi hip gfx90a 64 4 256 16 3000 0"
  [ "$rows" = "$row
$row
$row
$row" ] || fail "HIP: the twin's dispatch and the graph's three replays, every access recorded ($rows)"
  grep -qx "capture ends: 5 nodes" inst.out || fail "HIP: the twin is captured with its nodes"
  run_instrumented small NANO_BUFFER_SIZE=4096 NANO_BUFFER_SPINS=1000000
  grep -qx "$done_line" small.out || fail "HIP, small ring: right results"
  [ "$(query small.rpd "select count(*), min(records + dropped), max(records + dropped) from nano_dispatch")" = "4 3000 3000" ] ||
    fail "HIP, small ring: every record drained or dropped"
  # hip_program NAME [VAR=VALUE...]: NAME.hip built with the plugin against
  # the stand-in, run plain (NAME_plain.out) and instrumented (NAME.out,
  # NAME.err, NAME.rpd), with the variables given
  hip_program() {
    name=$1
    shift
    "$compiler" --offload-arch=gfx90a --cuda-host-only -O2 -c -Xclang -fcuda-include-gpubinary \
      -Xclang gpubinary -fpass-plugin="$plugin" "$here/$name.hip" -o "$name.o" \
      2> >(grep -v -e rocm_agent_enumerator -e 'linker. input unused' >&2)
    "$clang" "$name.o" -o "$name" -L. -l:libcuda.so.1 -Wl,-rpath,"$out" -lstdc++
    rm -f "$name.rpd"
    env "$@" "./$name" >"${name}_plain.out" || fail "$name: the program failed"
    env RPDT_FILENAME="$name.rpd" NANO_INSTRUMENT=1 NANO_ANALYZERS=none "$@" LD_PRELOAD="$rpd" \
      "./$name" >"$name.out" 2>"$name.err" || fail "$name: $(cat "$name.err")"
  }
  # hipExtLaunchKernelGGL: the twin through the program's call, its events
  # around the twin
  hip_program ext
  grep -qx "ext 0 y right timed 1" ext_plain.out && grep -q "^launch _Z4axpyfPKfPfi " ext_plain.out ||
    fail "ext without the runtime: $(cat ext_plain.out)"
  grep -qx "ext 0 y right timed 1" ext.out || fail "ext instrumented: $(cat ext.out)"
  grep -qx "ext launch: events start stop flags 0" ext.out &&
    grep -q "^launch __nano_twin__Z4axpyfPKfPfiPv grid 4 1 1 block 256 1 1 shared 0 stream " ext.out &&
    ! grep -q "^launch _Z4axpyfPKfPfi " ext.out ||
    fail "ext: the twin alone, through the program's call with its events ($(cat ext.out))"
  [ "$(query ext.rpd "select kernel, records from nano_dispatch")" = "_Z4axpyfPKfPfi 3000" ] ||
    fail "ext: one dispatch, the three accesses of each of the 1000 threads ($(query ext.rpd "select kernel, records from nano_dispatch"))"
  # hipLaunchKernelExC (HIP 6): the twin through the program's call with its
  # configuration, the attribute included
  hip_program exc
  grep -qx "exc 0 y right" exc_plain.out &&
    grep -qx "configured launch of _Z4axpyfPKfPfi: 1 attributes" exc_plain.out ||
    fail "exc without the runtime: $(cat exc_plain.out)"
  grep -qx "exc 0 y right" exc.out &&
    grep -qx "configured launch of __nano_twin__Z4axpyfPKfPfiPv: 1 attributes" exc.out &&
    ! grep -q "^configured launch of _Z4axpyfPKfPfi" exc.out ||
    fail "exc: the twin alone, through the program's configured call ($(cat exc.out))"
  [ "$(query exc.rpd "select kernel, records from nano_dispatch")" = "_Z4axpyfPKfPfi 3000" ] ||
    fail "exc: one dispatch, every access ($(query exc.rpd "select kernel, records from nano_dispatch"))"
  # multi-device launches: each launch of the list runs its twin, a dispatch
  # of its own, all through one call of the program's; where the twins
  # cannot launch, the program's list as it was, said once (no dispatch
  # ended: no dispatch table)
  hip_program multi
  twin_line="^launch __nano_twin__Z4axpyfPKfPfiPv grid 2 1 1 block 256 1 1 shared 0 stream "
  grep -qx "multi 0 y right" multi_plain.out && [ "$(grep -c '^launch _Z4axpyfPKfPfi ' multi_plain.out)" = 4 ] ||
    fail "multi without the runtime: $(cat multi_plain.out)"
  grep -qx "multi 0 y right" multi.out && [ "$(grep -c "$twin_line" multi.out)" = 4 ] &&
    ! grep -q "^launch _Z4axpyfPKfPfi " multi.out && grep -qx "cooperative multi-device launch of 2" multi.out &&
    grep -qx "multi-device launch of 2" multi.out ||
    fail "multi: the twins alone, through the program's two calls ($(cat multi.out))"
  [ "$(query multi.rpd "select group_concat(kernel || ' ' || grid_x || ' ' || records, ',') from (select * from nano_dispatch order by id)")" = \
    "_Z4axpyfPKfPfi 2 1500,_Z4axpyfPKfPfi 2 1500,_Z4axpyfPKfPfi 2 1500,_Z4axpyfPKfPfi 2 1500" ] ||
    fail "multi: a dispatch per launch, each half's accesses ($(query multi.rpd "select id, kernel, grid_x, records from nano_dispatch"))"
  [ "$(query multi.rpd "select count(*) || ' ' || count(distinct k.stream) from api a join rocpd_kernelapi k on k.api_ptr_id = a.id where a.apiName = 'nanoLaunchKernel'")" = "4 2" ] ||
    fail "multi: a launch row per launch, on its stream ($(query multi.rpd "select a.apiName, k.stream from api a join rocpd_kernelapi k on k.api_ptr_id = a.id"))"
  rm -f multi_nt.rpd
  env RPDT_FILENAME=multi_nt.rpd NANO_INSTRUMENT=1 NANO_ANALYZERS=none FAKE_NO_TWINS=1 LD_PRELOAD="$rpd" \
    ./multi >multi_nt.out 2>multi_nt.err || fail "multi, no twins: $(cat multi_nt.err)"
  grep -qx "multi 0 y right" multi_nt.out && [ "$(grep -c '^launch _Z4axpyfPKfPfi ' multi_nt.out)" = 4 ] &&
    [ "$(grep -c "_Z4axpyfPKfPfi: its twin did not launch (hipErrorInvalidDeviceFunction, error 98)" multi_nt.err)" = 1 ] &&
    [ "$(query multi_nt.rpd "select count(*) from sqlite_master where name = 'nano_dispatch'")" = 0 ] &&
    [ "$(query multi_nt.rpd "select count(*) from api where apiName = 'nanoLaunchKernel'")" = 4 ] ||
    fail "multi, no twins: the program's list, said once ($(cat multi_nt.out multi_nt.err))"
  # kernel nodes added to a graph by hand: child graph nodes with the twins'
  # nodes, every replay a dispatch (handbuilt.cu's checks)
  hip_program handbuilt
  hand_done="handbuilt rc 0 got right y right p 1"
  grep -qx "$hand_done" handbuilt_plain.out && ! grep -q "child graph node" handbuilt_plain.out ||
    fail "HIP handbuilt without the runtime: $(cat handbuilt_plain.out)"
  grep -qx "$hand_done" handbuilt.out && [ "$(grep -c '^child graph node: 5 nodes$' handbuilt.out)" = 2 ] &&
    grep -qx "graph exec child graph node set" handbuilt.out ||
    fail "HIP handbuilt: child graph nodes of five, the executable's set through its child graph ($(cat handbuilt.out))"
  [ "$(query handbuilt.rpd "select group_concat(kernel || ' ' || backend || ' ' || grid_x || ' ' || records, ',') from (select * from nano_dispatch order by id)")" = \
    "_Z4axpyfPKfPfi hip 2 192,_Z5otherPi hip 1 32,_Z4axpyfPKfPfi hip 2 192,_Z5otherPi hip 1 32,_Z4axpyfPKfPfi hip 1 96,_Z5otherPi hip 1 32" ] ||
    fail "HIP handbuilt: one dispatch per replay ($(query handbuilt.rpd "select id, kernel, grid_x, records from nano_dispatch"))"
  # a node added by hand has no stream: its launch row names none (not nanoprobe's capture stream)
  [ "$(query handbuilt.rpd "select count(*) || ' ' || sum(k.stream = '') from api a join rocpd_kernelapi k on k.api_ptr_id = a.id where a.apiName = 'nanoLaunchKernel'")" = "2 2" ] ||
    fail "HIP handbuilt: the nodes' launch rows name no stream ($(query handbuilt.rpd "select a.apiName, k.stream from api a join rocpd_kernelapi k on k.api_ptr_id = a.id"))"
  # (the host side alone has no site tables, said)
  ! grep -v -e '^nanoprobe: dispatch ' -e 'rows written' -e 'site tables of /proc/self/exe' \
    handbuilt.err | grep -q . || fail "HIP handbuilt: nothing else to say ($(cat handbuilt.err))"
  # the same on a HIP that numbers node types as CUDA does (ROCm 5.3 on):
  # the twin's kernel node is found inside the child graph node either way
  rm -f handbuilt6.rpd
  env RPDT_FILENAME=handbuilt6.rpd NANO_INSTRUMENT=1 NANO_ANALYZERS=none FAKE_HIP_VERSION=60200000 \
    LD_PRELOAD="$rpd" ./handbuilt >handbuilt6.out 2>handbuilt6.err || fail "handbuilt, HIP 6.2: $(cat handbuilt6.err)"
  grep -qx "$hand_done" handbuilt6.out && grep -qx "graph exec child graph node set" handbuilt6.out &&
    [ "$(query handbuilt6.rpd "select count(*) from nano_dispatch")" = 6 ] ||
    fail "HIP handbuilt, HIP 6.2's node types: ($(cat handbuilt6.out handbuilt6.err))"
  # HIP 6.2's generic node calls: hipGraphAddNode's kernel node goes in as
  # its twin's nodes, the generic set calls act on the twin's node
  hip_program generic FAKE_HIP_VERSION=60200000
  grep -qx "generic rc 0 y right" generic_plain.out ||
    fail "HIP generic without the runtime: $(cat generic_plain.out)"
  grep -qx "generic rc 0 y right" generic.out && grep -qx "child graph node: 5 nodes" generic.out &&
    grep -qx "graph exec child graph node set" generic.out ||
    fail "HIP generic: a child graph node of five, the executable's set through its child graph ($(cat generic.out))"
  [ "$(query generic.rpd "select group_concat(kernel || ' ' || grid_x || ' ' || records, ',') from (select * from nano_dispatch order by id)")" = \
    "_Z4axpyfPKfPfi 2 192,_Z4axpyfPKfPfi 2 192,_Z4axpyfPKfPfi 2 192" ] ||
    fail "HIP generic: one dispatch per replay ($(query generic.rpd "select id, kernel, grid_x, records from nano_dispatch"))"
  # a HIP runtime the back end cannot use (one that lacks its calls, first
  # on the library path): said once, recorded in the trace, named by
  # nanoprobe run's hint and rpd info; the program runs as without the tool
  mkdir -p nohip
  echo 'int nothing;' | "$clang" -x c - -shared -fPIC -o nohip/libamdhip64.so.6
  rm -f nohip.rpd
  LD_LIBRARY_PATH="$out/nohip:$LD_LIBRARY_PATH" "$nanoprobe" run -q -o nohip.rpd -i -- ./ext \
    >nohip.out 2>nohip.err || fail "no usable HIP: $(cat nohip.err)"
  grep -qx "ext 0 y right timed 1" nohip.out && grep -q "^launch _Z4axpyfPKfPfi " nohip.out ||
    fail "no usable HIP: the program's kernel, as without the tool ($(cat nohip.out))"
  check_unavailable nohip \
    "the HIP runtime lacks hipGetDevice (older than ROCm 5?); HIP kernels run uninstrumented"
  echo "PASS hip launch routing and GPU back end"
  exit 0
fi
grep -qx "launch __nano_twin__Z5otherPiPv grid 1 2 1 block 32 1 1 shared 0 stream 0x3000" inst.out ||
  fail "other's twin launches (2-D grid)"
grep -q "^launch __nano_twin__Z5otherPiPv grid 1 1 1 block 32 1 1 shared 0 stream 0x" inst.out ||
  fail "the twin is captured into the graph"
grep -qx "capture ends: 6 nodes" inst.out ||
  fail "the graph: begin, the descriptor's copy, the twin, the counters' copy, end, the program's copy"
grep -qx "primary context retained, device 0" inst.out || fail "no context current: device 0's primary one"
rows=$(query inst.rpd "select kernel, backend, arch, wave_size, grid_x, grid_y, grid_z, block_x, shared_bytes, records, dropped, decode_errors, lost_bytes, d.start <= d.\"end\", s.string from nano_dispatch d join rocpd_api a on a.id = d.api_id join rocpd_string s on s.id = a.apiName_id order by kernel")
echo "$rows"
graph_row="_Z5otherPi cuda sm_90 32 1 1 1 32 0 32 0 0 0 1 nanoLaunchKernel"
[ "$rows" = "_Z4axpyfPKfPfi cuda sm_90 32 4 1 1 256 16 3000 0 0 0 1 nanoLaunchKernel
_Z5otherPi cuda sm_90 32 1 2 1 32 0 64 0 0 0 1 nanoLaunchKernel
$graph_row
$graph_row
$graph_row" ] ||
  fail "nano_dispatch: one row per twin and per graph replay, every access recorded, linked to its launch"

# NANO_AGGREGATE=device: the twins sum their accesses into the dispatch's
# table (placed and read back on the copy stream) and make no record; a
# graph replay's table is placed at capture (no API call may run in its host
# functions) and zeroed and copied back by two more nodes of the graph, so
# replays sum too. MemoryAnalysis says the same, field by field.
# a graph node's buffer: a ring of NANO_GRAPH_BUFFER_SIZE (1 MiB by default,
# 64 KiB asked), the launches' rings of NANO_BUFFER_SIZE (16 MiB); the
# replays record every access in the smaller ring; a size that is no power
# of two is said
run_instrumented rings FAKE_ALLOC_LOG=1
run_instrumented rings64k FAKE_ALLOC_LOG=1 NANO_GRAPH_BUFFER_SIZE=64K
[ "$(grep -c '^host alloc 1048576$' rings.out)" = 1 ] && grep -qx 'host alloc 16777216' rings.out &&
  [ "$(grep -c '^host alloc 65536$' rings64k.out)" = 1 ] && ! grep -q '^host alloc 1048576$' rings64k.out ||
  fail "the graph node's ring is NANO_GRAPH_BUFFER_SIZE's, the launches' NANO_BUFFER_SIZE's ($(grep '^host alloc' rings.out rings64k.out))"
[ "$(query rings64k.rpd "select group_concat(records) from (select records from nano_dispatch order by id)")" = "3000,64,32,32,32" ] ||
  fail "a graph node's 64 KiB ring: every replay's records ($(query rings64k.rpd "select id, records from nano_dispatch"))"
env NANO_INSTRUMENT=1 NANO_GRAPH_BUFFER_SIZE=3000 LD_PRELOAD="$rpd" ./app >/dev/null 2>rings_bad.err ||
  fail "a bad NANO_GRAPH_BUFFER_SIZE: the program failed"
grep -q "NANO_GRAPH_BUFFER_SIZE=3000: the size must be a power of two" rings_bad.err ||
  fail "a bad NANO_GRAPH_BUFFER_SIZE is said ($(cat rings_bad.err))"
run_instrumented summed NANO_AGGREGATE=device
grep -qx "$done_line" summed.out || fail "summed on the device: right results"
! grep -q SERIALIZED summed.out || fail "summed on the device: the runtime waited for the program's stream"
[ "$(query summed.rpd "select kernel, grid_y, aggregate, records from nano_dispatch order by id")" = "_Z4axpyfPKfPfi 1 device 0
_Z5otherPi 2 device 0
_Z5otherPi 1 device 0
_Z5otherPi 1 device 0
_Z5otherPi 1 device 0" ] || fail "summed on the device: launches and graph replays summed by their twins, no record"
[ "$(grep -c "^twin __nano_twin__Z4axpyfPKfPfiPv: recorded nothing$" summed.out)" = 1 ] &&
  [ "$(grep -c "^twin __nano_twin__Z5otherPiPv: recorded nothing$" summed.out)" = 4 ] ||
  fail "summed on the device: no twin wrote a record, the replays' included"
grep -qx "capture ends: 8 nodes" summed.out ||
  fail "summed on the device: the graph holds the twin's nodes, the table's memset and copy among them"
[ "$(query summed.rpd "select count(*) from rocpd_op o join rocpd_string t on t.id = o.opType_id where t.string = 'Memset'")" = 0 ] ||
  fail "summed on the device: the table's memset nodes are not traced as the program's"
grep -q '"aggregate":"device","wave_accesses":3000,"records":0' summed.json ||
  fail "summed on the device: the dispatch's report says where and how many"
columns="kernel, file, line, \"column\", function, kind, space, access_bytes, executions, accesses, bytes, line_bytes, lines_needed, lines_used, sector_bytes, sectors_needed, sectors_used, bank_conflicts"
[ "$(query summed.rpd "select $columns from nano_memory order by dispatch_id, line, \"column\"")" = \
  "$(query inst.rpd "select $columns from nano_memory order by dispatch_id, line, \"column\"")" ] ||
  fail "summed on the device: MemoryAnalysis differs from the records' answer"
python3 "$here/../../gpu/compare_sums.py" app inst.rpd summed.rpd ||
  fail "the GPU suite's comparison of both paths (tests/gpu/compare_sums.py) disagrees"
# a kernel launched again and again, summed on the device (issue 39 part 5):
# a buffer whose last dispatch was the same kernel's and left no record
# holds its descriptor and a zeroed table already, so such a launch makes
# no copy to the device and its stream waits for nothing. One buffer
# (NANO_BUFFER_POOL=1): axpy's dispatch takes it, then every twin launch of
# other's 20 more (each waited for; a launch that finds the buffer still in
# use runs plain) but the first waits for nothing; two descriptor copies in
# all (the buffer's first, axpy's: other's finds the same descriptor, its
# sums table placed); every dispatch of other's sums the same (its table
# zeroed between them) as the records' answer for other's launch (inst).
run_instrumented repeat NANO_AGGREGATE=device NANO_BUFFER_POOL=1 APP_REPEAT=20 FAKE_COPY_LOG=1
grep -qx "$done_line" repeat.out || fail "other launched again and again: right results"
launches=$(grep -c "^launch __nano_twin__Z5otherPiPv grid 1 2 1 " repeat.out)
waits=$(grep -B1 "^launch __nano_twin__Z5otherPiPv grid 1 2 1 " repeat.out | grep -c "waits for an event")
desc_bytes=$(awk '$2 == "NANO_DH_DESC_SIZE" { print $3 }' "$root/dh_comms/include/nano/dh_format.h")
copies=$(grep -c "^copy to device: $desc_bytes bytes " repeat.out)
[ "$launches" -ge 2 ] && [ "$waits" = 1 ] && [ "$copies" = 2 ] ||
  fail "other launched again and again: $launches twin launches (at least 2), $waits waits (1), $copies descriptor copies (2)"
[ "$(query repeat.rpd "select count(*), sum(records) from nano_dispatch where kernel = '_Z5otherPi' and grid_y = 2 and aggregate = 'device'")" = "$launches 0" ] ||
  fail "other launched again and again: each twin launch a dispatch summed on the device"
sums="select distinct $columns from nano_memory where dispatch_id in (select id from nano_dispatch where kernel = '_Z5otherPi' and grid_y = 2)"
[ "$(query repeat.rpd "$sums")" = "$(query inst.rpd "$sums")" ] &&
  [ "$(query repeat.rpd "$sums" | wc -l)" = 1 ] ||
  fail "other launched again and again: every dispatch's MemoryAnalysis the same, summed on the device as from records ($(query repeat.rpd "$sums"))"

# NANO_GPU_END=hostfn: a host function after each twin, not a waiter thread
# (the default, event), learns its end (graph replays have theirs either way):
# the same dispatches, nothing waits, more host functions
run_instrumented hostfn NANO_GPU_END=hostfn
grep -qx "$done_line" hostfn.out || fail "NANO_GPU_END=hostfn: right results"
! grep -q SERIALIZED hostfn.out || fail "NANO_GPU_END=hostfn: the runtime waited for the program's stream"
[ "$(query hostfn.rpd "select kernel, backend, arch, wave_size, grid_x, grid_y, grid_z, block_x, shared_bytes, records, dropped, decode_errors, lost_bytes, d.start <= d.\"end\", s.string from nano_dispatch d join rocpd_api a on a.id = d.api_id join rocpd_string s on s.id = a.apiName_id order by kernel")" = "$rows" ] ||
  fail "NANO_GPU_END=hostfn: the same dispatches as with waiter threads"
[ "$(grep -c "^host function" inst.out)" -lt "$(grep -c "^host function" hostfn.out)" ] ||
  fail "by default no host function after twins on the program's streams (NANO_GPU_END=event)"
# KernelTimeline on a back end that does not time blocks: said once, and per dispatch
# KernelTimeline: each twin stamps its blocks' start and end on the device's
# clock (the stand-in stamps them as dh_device.c's GPU build does); a graph
# replay too, in a table placed at capture
run_instrumented timeline NANO_ANALYZERS=KernelTimeline,MemoryAnalysis
! grep -q "KernelTimeline: a cuda dispatch that cannot time its blocks" timeline.err &&
  ! grep -q '"timed":false' timeline.json ||
  fail "KernelTimeline: every dispatch timed, the graph replays included"
blocks="select d.kernel, b.block_x, b.block_y, b.block_z, b.unit, b.start >= d.start, b.\"end\" >= b.start from nano_block b join nano_dispatch d on d.id = b.dispatch_id order by d.id, b.block_z, b.block_y, b.block_x"
# the model: axpy's grid 4x1x1 and other's 1x2x1, unit = linear block id mod 4
# and its 1x1x1 grid in each of the three replays
want="_Z4axpyfPKfPfi 0 0 0 0 1 1
_Z4axpyfPKfPfi 1 0 0 1 1 1
_Z4axpyfPKfPfi 2 0 0 2 1 1
_Z4axpyfPKfPfi 3 0 0 3 1 1
_Z5otherPi 0 0 0 0 1 1
_Z5otherPi 0 1 0 1 1 1
_Z5otherPi 0 0 0 0 1 1
_Z5otherPi 0 0 0 0 1 1
_Z5otherPi 0 0 0 0 1 1"
[ "$(query timeline.rpd "$blocks")" = "$want" ] ||
  fail "KernelTimeline: one nano_block row per block of each twin, with its unit, inside its dispatch ($(query timeline.rpd "$blocks"))"
[ "$(query timeline.rpd "select count(*) from nano_dispatch d where d.start = (select min(start) from nano_block b where b.dispatch_id = d.id)")" = 5 ] ||
  fail "KernelTimeline: the first block starts with its dispatch"
# alone, KernelTimeline needs no access: the twins record none (a graph
# replay's too), and time blocks
run_instrumented timeline_alone NANO_ANALYZERS=KernelTimeline NANO_AGGREGATE=auto
grep -qx "$done_line" timeline_alone.out || fail "KernelTimeline alone: right results"
[ "$(grep -c "^twin .*: recorded nothing$" timeline_alone.out)" = 5 ] ||
  fail "KernelTimeline alone: no twin records an access, the graph's three replays included"
[ "$(query timeline_alone.rpd "$blocks")" = "$want" ] || fail "KernelTimeline alone: every block timed"
[ "$(query timeline_alone.rpd "select count(*), sum(records), sum(grid_y = 1 and kernel = '_Z5otherPi') from nano_dispatch")" = "5 0 3" ] ||
  fail "KernelTimeline alone: no dispatch records an access, the graph's three replays included ($(query timeline_alone.rpd "select kernel, grid_y, records from nano_dispatch"))"
run_instrumented bad_end NANO_GPU_END=sometimes
grep -q "NANO_GPU_END=sometimes: expected one of event, hostfn" bad_end.err ||
  fail "a bad NANO_GPU_END is named"
[ "$(query inst.rpd "select count(distinct id), count(distinct api_id) from nano_dispatch where grid_y = 1 and kernel = '_Z5otherPi'")" = "3 1" ] ||
  fail "three replays, three dispatches, all linked to the capture's launch"
memory=$(query inst.rpd "select kernel, replace(file, '$here/', ''), line, \"column\", kind, sum(accesses), sum(bytes) from nano_memory group by kernel, file, line, \"column\", kind order by kernel, line, \"column\"")
echo "$memory"
[ "$memory" = "axpy(float, float const*, float*, int) app.cu $axpy_line 19 store 1000 4000
axpy(float, float const*, float*, int) app.cu $axpy_line 25 load 1000 4000
axpy(float, float const*, float*, int) app.cu $axpy_line 32 load 1000 4000
other(int*) app.cu $other_line 36 store 160 640" ] ||
  fail "MemoryAnalysis: every access at its source line (the cubin's site table)"
[ "$(wc -l <inst.json)" -ge 2 ] || fail "a JSON report per dispatch"
rows=$(cuda_rows inst.rpd)
[ "$rows" = "cudaLaunchKernel ConcurrentKernel axpy(float, float const*, float*, int) [instrumented] 1
cudaLaunchKernel ConcurrentKernel other(int*) [instrumented] 1
cudaStreamBeginCapture - - -
cudaLaunchKernel - - -
cudaMemcpyAsync - - -
cudaStreamEndCapture - - -
cudaGraphInstantiate - - -
cudaGraphLaunch ConcurrentKernel other(int*) [instrumented] 1
cudaGraphLaunch Memcpy - 1
cudaGraphLaunch ConcurrentKernel other(int*) [instrumented] 1
cudaGraphLaunch Memcpy - 1
cudaGraphLaunch ConcurrentKernel other(int*) [instrumented] 1
cudaGraphLaunch Memcpy - 1
cudaDeviceSynchronize - - -
cudaMemcpy Memcpy - 1" ] || fail "CUPTI while instrumenting: the twins' launches, named as the kernels the program launched, marked; nanoprobe's own calls and copies not traced, its copies in the graph neither ($rows)"

# replays not picked record nothing; the capture's buffer stays usable
run_instrumented first NANO_DISPATCHES=first
grep -qx "$done_line" first.out || fail "NANO_DISPATCHES=first: right results"
[ "$(query first.rpd "select kernel, grid_y, records from nano_dispatch order by kernel")" = "_Z4axpyfPKfPfi 1 3000
_Z5otherPi 2 64" ] || fail "NANO_DISPATCHES=first: the first dispatch of each kernel, no replay"
[ "$(grep -c "^twin __nano_twin__Z5otherPiPv: recorded nothing$" first.out)" = 3 ] ||
  fail "NANO_DISPATCHES=first: the replays' twins record nothing"
[ "$(grep -c "^twin __nano_twin__Z5otherPiPv: recorded$" inst.out)" = 4 ] ||
  fail "every twin of other records when every dispatch is picked"

# the graph's nodes cannot be captured: said, the original is captured
run_instrumented nohostfn FAKE_NO_GRAPH_HOSTFN=1
grep -qx "$done_line" nohostfn.out || fail "no host function in graphs: right results"
grep -q "capturing its buffer's nodes into the graph failed" nohostfn.err ||
  fail "a failed capture of the nodes is said"
grep -qx "capture ends: 2 nodes" nohostfn.out || fail "the original alone is captured"
[ "$(query nohostfn.rpd "select count(*) from nano_dispatch")" = 2 ] ||
  fail "no host function in graphs: the two launches outside the graph are dispatches"

# the process's first launch is captured: nothing of the runtime's (a new
# device's stream, memory) may spoil the program's capture; the original is
# captured and that is said
run_instrumented first_capture APP_ORDER=capture-first
grep -qx "done 0 0 y wrong p 0 q 1" first_capture.out || fail "capture first: the graph's result"
grep -qx "capture ends: 2 nodes" first_capture.out || fail "capture first: the original is captured"
grep -q "captured into a graph before its twin ever launched outside one" first_capture.err ||
  fail "capture first: said"

# launches on another stream while the program's capture (global mode) is
# open: the runtime's allocations and copies there (the device's first) do
# not spoil it, and the captured launch is instrumented
run_instrumented during_capture APP_ORDER=during-capture
grep -qx "$done_line" during_capture.out || fail "launches during a capture: right results"
grep -qx "capture ends: 6 nodes" during_capture.out ||
  fail "launches during a capture: the capture holds the twin's nodes, unspoiled"
[ "$(query during_capture.rpd "select count(*) from nano_dispatch")" = 5 ] ||
  fail "launches during a capture: axpy, other and the three replays"

# one buffer in the pool: other's launch, queued behind axpy's, finds none
run_instrumented pool NANO_BUFFER_POOL=1
grep -qx "$done_line" pool.out || fail "pool exhausted: right results"
grep -q "1 dispatches ran uninstrumented: every buffer of the pool was in use" pool.err ||
  fail "an exhausted pool is counted and said"
grep -qx "launch _Z5otherPi grid 1 2 1 block 32 1 1 shared 0 stream 0x3000" pool.out ||
  fail "pool exhausted: the original runs, nothing waits"
grep -q "captured into a graph before its twin ever launched outside one" pool.err ||
  fail "a twin never launched is not captured, and that is said"
grep -qx "capture ends: 2 nodes" pool.out || fail "pool exhausted: the original is captured"

# the module lacks the twins: said, the originals run, the program's results stand
run_instrumented notwin FAKE_NO_TWINS=1
grep -qx "$done_line" notwin.out || fail "no twins in the module: right results"
grep -q "its twin did not launch (cudaErrorInvalidDeviceFunction, error 98): it runs uninstrumented" notwin.err ||
  fail "a twin that does not launch is said"
[ "$(query notwin.rpd "select count(*) from sqlite_master where name = 'nano_dispatch'")" = 0 ] ||
  fail "no twin ran: no dispatch reported"

# NAME.cu built with the plugin into ./NAME, a threaded program on the stand-in
cuda_program() {
  "$compiler" -x cuda --cuda-gpu-arch=sm_90 --cuda-path=/usr/local/cuda -Wno-unknown-cuda-version \
    -O2 -g -c -fpass-plugin="$plugin" "$here/$1.cu" -o "$1.o"
  "$clang" "$1.o" -o "$1" -L. -l:libcuda.so.1 -Wl,-rpath,"$out" -lstdc++ -lpthread
}

# cudaSetDevice(1), lazy as before CUDA 12, then a launch on the default
# stream: the twin runs in device 1's primary context, as the program's
# calls do, and device 0 is not touched
cuda_program lazydev
env RPDT_FILENAME=lazydev.rpd NANO_INSTRUMENT=1 NANO_ANALYZERS=none LD_PRELOAD="$rpd" ./lazydev \
  >lazydev.out 2>lazydev.err || fail "lazydev: $(cat lazydev.err)"
grep -qx "lazydev set 0 launch 0 device 1 p 1" lazydev.out || fail "lazydev: $(cat lazydev.out)"
grep -qx "primary context retained, device 1" lazydev.out && ! grep -q "device 0" lazydev.out ||
  fail "lazydev: device 1's primary context, not device 0's ($(cat lazydev.out))"
[ "$(query lazydev.rpd "select kernel, device, records from nano_dispatch")" = "_Z5otherPi 1 32" ] ||
  fail "lazydev: the dispatch on device 1 ($(query lazydev.rpd "select kernel, device, records from nano_dispatch"))"

# CUDA 12's multi-device launch: each launch of the list its twin and
# dispatch, through one call of the program's
cuda_program multi
./multi >multi_plain.out && grep -qx "multi 0 y right" multi_plain.out ||
  fail "CUDA multi without the runtime: $(cat multi_plain.out)"
rm -f multi.rpd
env RPDT_FILENAME=multi.rpd NANO_INSTRUMENT=1 NANO_ANALYZERS=none LD_PRELOAD="$rpd" ./multi \
  >multi.out 2>multi.err || fail "CUDA multi: $(cat multi.err)"
grep -qx "multi 0 y right" multi.out && grep -qx "cooperative multi-device launch of 2" multi.out &&
  [ "$(grep -c '^launch __nano_twin__Z4axpyfPKfPfiPv grid 2 1 1 block 256 1 1 ' multi.out)" = 2 ] &&
  ! grep -q "^launch _Z4axpyfPKfPfi " multi.out ||
  fail "CUDA multi: the twins alone, through the program's call ($(cat multi.out))"
[ "$(query multi.rpd "select group_concat(kernel || ' ' || records, ',') from (select * from nano_dispatch order by id)")" = \
  "_Z4axpyfPKfPfi 1500,_Z4axpyfPKfPfi 1500" ] ||
  fail "CUDA multi: a dispatch per launch ($(query multi.rpd "select id, kernel, records from nano_dispatch"))"

# a machine with the driver and no GPU (FAKE_NO_DEVICE=1: cuInit and every
# launch fail with CUDA_ERROR_NO_DEVICE): said once, recorded in the trace,
# named by nanoprobe run's hint and rpd info; the program gets its own error,
# as without the tool
FAKE_NO_DEVICE=1 ./lazydev >nodev_plain.out
grep -qx "lazydev set 0 launch 100 device 1 p 0" nodev_plain.out ||
  fail "no device, without the tool: $(cat nodev_plain.out)"
rm -f nodev.rpd
FAKE_NO_DEVICE=1 "$nanoprobe" run -q -o nodev.rpd -i -- ./lazydev >nodev.out 2>nodev.err ||
  fail "no device: $(cat nodev.err)"
cmp -s nodev_plain.out nodev.out || fail "no device: the program's output changed ($(cat nodev.out))"
check_unavailable nodev "cuda: no device to launch on (CUDA_ERROR_NO_DEVICE); CUDA kernels run uninstrumented"

# cudaLaunchKernelEx with a cluster attribute: routed (its template's
# cudaLaunchKernelExC), the twin launched with the program's configuration
cuda_program ex
./ex >ex_plain.out || fail "ex: the program failed"
grep -qx "ex launch 0 p 1" ex_plain.out || fail "ex without the runtime: $(cat ex_plain.out)"
grep -qx "configured launch of _Z5otherPi: 1 attributes, cluster 2 1 1" ex_plain.out ||
  fail "ex: the program's configured launch ($(cat ex_plain.out))"
env RPDT_FILENAME=ex.rpd NANO_INSTRUMENT=1 NANO_ANALYZERS=none LD_PRELOAD="$rpd" ./ex \
  >ex.out 2>ex.err || fail "ex: $(cat ex.err)"
grep -qx "ex launch 0 p 1" ex.out || fail "ex instrumented: $(cat ex.out)"
grep -qx "configured launch of __nano_twin__Z5otherPiPv: 1 attributes, cluster 2 1 1" ex.out ||
  fail "ex: the twin launched with the program's configuration ($(cat ex.out))"
grep -qx "launch __nano_twin__Z5otherPiPv grid 4 1 1 block 32 1 1 shared 0 stream (nil)" ex.out &&
  ! grep -q "launch _Z5otherPi " ex.out || fail "ex: the twin alone, with the launch's shape ($(cat ex.out))"
# the emulated kernel: one record per thread, 4 blocks of 32
[ "$(query ex.rpd "select kernel, records from nano_dispatch")" = "_Z5otherPi $((4 * 32))" ] ||
  fail "ex: one dispatch, every thread's store ($(query ex.rpd "select kernel, records from nano_dispatch"))"

# -fgpu-rdc with the new offload driver (clang-22's default there):
# registration is made at link time by clang-linker-wrapper from the offload
# entries, the twins' entries included; the <<<>>> launch in the kernels'
# file and a launch through a handle in a file without kernels both run the
# twin, each access at its line in rdc_kernels.cu
for f in rdc_kernels rdc_main; do
  "$compiler" -x cuda --cuda-gpu-arch=sm_90 --cuda-path=/usr/local/cuda -Wno-unknown-cuda-version \
    -O2 -g -fgpu-rdc -c -fpass-plugin="$plugin" "$here/$f.cu" -o "$f.o"
done
"$compiler" -fgpu-rdc --offload-link --cuda-path=/usr/local/cuda rdc_main.o rdc_kernels.o -o rdc \
  -L. -l:libcuda.so.1 -Wl,-rpath,"$out"
./rdc >rdc_plain.out || fail "rdc: the program failed"
[ "$(grep '^register' rdc_plain.out)" = "$(printf 'register _Z5otherPi\nregister __nano_twin__Z5otherPiPv')" ] ||
  fail "rdc: the linker's registration has other and its twin ($(cat rdc_plain.out))"
grep -qx "rdc launch 0 sync 0 p 1 q 1" rdc_plain.out && ! grep -q "^launch __nano_twin" rdc_plain.out ||
  fail "rdc without the runtime: the originals, right results ($(cat rdc_plain.out))"
rdc_line=$(grep -n '^__global__ void other' "$here/rdc_kernels.cu" | cut -d: -f1)
rdc_sites=$("$kerneldb" sites rdc --arch sm_90)
rdc_site=$(awk -v at="rdc_kernels.cu:$rdc_line:36" '$7 ~ at"$" { print $1 }' <<<"$rdc_sites")
[ -n "$rdc_site" ] || fail "rdc: other's store in the program's site table ($rdc_sites)"
[ "$("$kerneldb" sites rdc_kernels.o --arch sm_90)" = "$rdc_sites" ] ||
  fail "rdc: the object's offload binary has the same site table ($("$kerneldb" sites rdc_kernels.o 2>&1))"
env RPDT_FILENAME=rdc.rpd NANO_INSTRUMENT=1 NANO_ANALYZERS=MemoryAnalysis NANO_AGGREGATE=host \
  FAKE_SITES="0 0 0 $rdc_site" LD_PRELOAD="$rpd" ./rdc >rdc.out 2>rdc.err || fail "rdc: $(cat rdc.err)"
grep -qx "rdc launch 0 sync 0 p 1 q 1" rdc.out || fail "rdc instrumented: $(cat rdc.out)"
grep -qx "launch __nano_twin__Z5otherPiPv grid 4 1 1 block 32 1 1 shared 0 stream (nil)" rdc.out &&
  grep -qx "launch __nano_twin__Z5otherPiPv grid 2 1 1 block 32 1 1 shared 0 stream (nil)" rdc.out &&
  ! grep -q "^launch _Z5otherPi " rdc.out || fail "rdc: both launches run the twin ($(cat rdc.out))"
[ "$(query rdc.rpd "select group_concat(records) from (select records from nano_dispatch order by id)")" = "128,64" ] ||
  fail "rdc: two dispatches, every thread's store ($(query rdc.rpd "select id, records from nano_dispatch"))"
[ "$(query rdc.rpd "select replace(file, '$here/', ''), line, sum(accesses) from nano_memory group by file, line")" = \
  "rdc_kernels.cu $rdc_line 192" ] ||
  fail "rdc: the store at its line, one access per record (the stand-in's lanes) ($(query rdc.rpd "select * from nano_memory"))"

# a launch captured into a conditional node's body: the original is
# captured there (no host function allowed in a body), said once; the
# replay runs it
cuda_program conditional
./conditional >conditional_plain.out || fail "conditional: the program failed"
grep -qx "conditional rc 0 p 1 q 1" conditional_plain.out ||
  fail "conditional without the runtime: $(cat conditional_plain.out)"
env RPDT_FILENAME=conditional.rpd NANO_INSTRUMENT=1 NANO_ANALYZERS=none LD_PRELOAD="$rpd" \
  ./conditional >conditional.out 2>conditional.err || fail "conditional: $(cat conditional.err)"
grep -qx "conditional rc 0 p 1 q 1" conditional.out && ! grep -q "refused" conditional.out ||
  fail "conditional instrumented: the body's capture holds ($(cat conditional.out))"
grep -q "^launch __nano_twin__Z5otherPiPv grid 1 1 1 block 32 1 1 shared 0 stream 0x" conditional.out ||
  fail "conditional: the first launch, outside a graph, runs the twin ($(cat conditional.out))"
grep -q "^launch _Z5otherPi grid 1 1 1 block 32 1 1 shared 0 stream 0x" conditional.out &&
  grep -qx "capture ends: 1 nodes" conditional.out ||
  fail "conditional: the original captured alone into the body ($(cat conditional.out))"
[ "$(grep -c "_Z5otherPi: captured into a conditional node's body graph, which may hold no host function (CUDA's rule) as a twin's dispatch needs: it runs uninstrumented there" conditional.err)" = 1 ] ||
  fail "conditional: said once ($(cat conditional.err))"

# kernel nodes added to a graph by hand: each becomes one child graph node
# holding the twin's nodes (begin, the descriptor's copy, the twin, the
# counters' copy, end), so that every replay of every executable is a
# dispatch; the program reads its node back as its kernel with its
# arguments; a new factor for one executable and a new factor and grid for
# the graph reach the twin (results), and the dispatches' shapes follow
cuda_program handbuilt
hand_done="handbuilt rc 0 got right y right p 1 priority 3"
./handbuilt >handbuilt_plain.out || fail "handbuilt: the program failed"
grep -qx "$hand_done" handbuilt_plain.out && ! grep -q "child graph node" handbuilt_plain.out ||
  fail "handbuilt without the runtime: the program's kernel nodes ($(cat handbuilt_plain.out))"
env RPDT_FILENAME=handbuilt_off.rpd LD_PRELOAD="$rpd" ./handbuilt >handbuilt_off.out 2>&1 ||
  fail "handbuilt, not instrumenting: $(cat handbuilt_off.out)"
grep -qx "$hand_done" handbuilt_off.out && ! grep -q "child graph node" handbuilt_off.out ||
  fail "handbuilt, not instrumenting: the program's kernel nodes ($(cat handbuilt_off.out))"
env RPDT_FILENAME=handbuilt.rpd NANO_INSTRUMENT=1 NANO_ANALYZERS=none LD_PRELOAD="$rpd" \
  ./handbuilt >handbuilt.out 2>handbuilt.err || fail "handbuilt: $(cat handbuilt.err)"
grep -qx "$hand_done" handbuilt.out || fail "handbuilt instrumented: $(cat handbuilt.out)"
[ "$(grep -c '^child graph node: 5 nodes$' handbuilt.out)" = 4 ] &&
  [ "$(grep -c '^graph kernel node _Z' handbuilt.out)" = 1 ] &&
  grep -q "_Z5otherPi: a kernel node added with edges other than full dependencies (a child graph node, which a twin's nodes need, takes none): it runs uninstrumented in the graph" handbuilt.err ||
  fail "handbuilt: four nodes (two by the kernel node call, two by the generic one, one with edge data all full dependencies) are child graph nodes of five; the node with a programmatic edge is the original, said ($(cat handbuilt.out handbuilt.err))"
[ "$(grep -c '^graph exec child graph node set$' handbuilt.out)" = 2 ] &&
  [ "$(grep -c '^graph kernel node set __nano_twin__Z5otherPiPv grid 1 1 1 block 32 1 1 shared 0$' handbuilt.out)" = 2 ] &&
  grep -qx "graph kernel node set __nano_twin__Z4axpyfPKfPfiPv grid 1 1 1 block 32 1 1 shared 0" handbuilt.out ||
  fail "handbuilt: the parameters set on the twin's node, the executable's through its child graph ($(cat handbuilt.out))"
grep -qx "graph kernel node attribute 8 3 on __nano_twin__Z5otherPiPv" handbuilt.out &&
  grep -qx "graph kernel node attributes of __nano_twin__Z5otherPiPv copied to __nano_twin__Z4axpyfPKfPfiPv" handbuilt.out ||
  fail "handbuilt: the attribute calls act on the twins' nodes ($(cat handbuilt.out))"
[ "$(grep -c '^twin __nano_twin_.*: recorded$' handbuilt.out)" = 12 ] ||
  fail "handbuilt: three replays of each twin, each recording ($(cat handbuilt.out))"
[ "$(query handbuilt.rpd "select group_concat(kernel || ' ' || grid_x || ' ' || records, ',') from (select * from nano_dispatch order by id)")" = \
  "$(printf '_Z4axpyfPKfPfi %s,_Z5otherPi 1 32,_Z5otherPi 1 32,_Z5otherPi 1 32,' '2 192' '2 192' '1 96' | sed 's/,$//')" ] ||
  fail "handbuilt: one dispatch per replay, every access, the last axpy one block ($(query handbuilt.rpd "select id, kernel, grid_x, records from nano_dispatch"))"
[ "$(query handbuilt.rpd "select group_concat(s.string, ',') from (select * from rocpd_op order by id) o join rocpd_string s on s.id = o.description_id")" = \
  "$(printf 'axpy(float, float const*, float*, int) [instrumented],other(int*) [instrumented],other(int*) [instrumented],other(int*) [instrumented],other(int*),%.0s' 1 2 3 | sed 's/,$//')" ] ||
  fail "handbuilt: CUPTI's ops are the replayed twins, shown as their kernels, and the original of the node with a programmatic edge; nanoprobe's copies in the child graphs not traced ($(query handbuilt.rpd "select * from rocpd_op"))"
! grep -v -e '^nanoprobe: dispatch ' -e 'rows written' -e 'edges other than full dependencies' \
  handbuilt.err | grep -q . || fail "handbuilt: nothing else to say ($(cat handbuilt.err))"
# twins that cannot launch: the program's own kernel nodes, said once each,
# and no error left for the program
env RPDT_FILENAME=handbuilt_notwin.rpd NANO_INSTRUMENT=1 NANO_ANALYZERS=none FAKE_NO_TWINS=1 \
  LD_PRELOAD="$rpd" ./handbuilt >handbuilt_notwin.out 2>handbuilt_notwin.err ||
  fail "handbuilt without twins: $(cat handbuilt_notwin.err)"
grep -qx "$hand_done" handbuilt_notwin.out && ! grep -q "child graph node" handbuilt_notwin.out &&
  grep -qx "graph kernel node _Z4axpyfPKfPfi grid 2 1 1 block 32 1 1 shared 0" handbuilt_notwin.out ||
  fail "handbuilt without twins: the program's kernel nodes ($(cat handbuilt_notwin.out))"
[ "$(grep -c "its twin was not captured (cudaErrorInvalidDeviceFunction, error 98): it runs uninstrumented in the graph" handbuilt_notwin.err)" = 2 ] &&
  [ "$(grep -c '^graph kernel node _Z5otherPi grid 1 1 1 block 32 1 1 shared 0$' handbuilt_notwin.out)" = 4 ] ||
  fail "handbuilt without twins: said once per kernel ($(cat handbuilt_notwin.err))"

# a twin whose end cannot be confirmed: its buffer is held until the device
# is done with it, never handed to the next launch while the twin may write it
cuda_program unconfirmed
env RPDT_FILENAME=unconfirmed.rpd NANO_INSTRUMENT=1 NANO_ANALYZERS=none NANO_BUFFER_POOL=1 \
  FAKE_FAIL_WAIT=1 LD_PRELOAD="$rpd" ./unconfirmed >unconfirmed.out 2>unconfirmed.err ||
  fail "unconfirmed: $(cat unconfirmed.err)"
grep -qx "unconfirmed p 1 q 1 r 1" unconfirmed.out || fail "unconfirmed: $(cat unconfirmed.out)"
grep -q "a twin's end could not be confirmed: its buffer stays out of use until the device is done with it" unconfirmed.err &&
  grep -q "1 dispatches ran uninstrumented: every buffer of the pool was in use" unconfirmed.err ||
  fail "unconfirmed: the held buffer is said, and the second launch found none ($(cat unconfirmed.err))"
[ "$(query unconfirmed.rpd "select count(*), max(records) from nano_dispatch")" = "2 32" ] ||
  fail "unconfirmed: two dispatches, the third with its own 32 records ($(query unconfirmed.rpd "select id, records from nano_dispatch"))"

# four host threads launching at once, each dispatch whole
cuda_program threads
env RPDT_FILENAME=threads.rpd NANO_INSTRUMENT=1 NANO_ANALYZERS=none NANO_BUFFER_POOL=64 \
  LD_PRELOAD="$rpd" ./threads >threads.out 2>threads.err || fail "threads: $(cat threads.err)"
grep -qx "threads right" threads.out || fail "threads: right results"
! grep -q SERIALIZED threads.out || fail "threads: the runtime waited for a program's stream"
[ "$(query threads.rpd "select count(*), min(records), max(records), sum(decode_errors) from nano_dispatch")" = "40 3000 3000 0" ] ||
  fail "threads: 40 dispatches of 3,000 records each"
# (and three drain threads, each buffer drained by one at a time)
env RPDT_FILENAME=threads_hostfn.rpd NANO_INSTRUMENT=1 NANO_ANALYZERS=none NANO_BUFFER_POOL=64 \
  NANO_GPU_END=hostfn NANO_DRAIN_THREADS=3 LD_PRELOAD="$rpd" ./threads >threads_hostfn.out \
  2>threads_hostfn.err || fail "threads, NANO_GPU_END=hostfn: $(cat threads_hostfn.err)"
[ "$(query threads_hostfn.rpd "select count(*), min(records), max(records), sum(decode_errors) from nano_dispatch")" = "40 3000 3000 0" ] ||
  fail "threads, NANO_GPU_END=hostfn, three drain threads: 40 dispatches of 3,000 records each"
env RPDT_FILENAME=bad_drain.rpd NANO_INSTRUMENT=1 NANO_DRAIN_THREADS=0 LD_PRELOAD="$rpd" ./threads \
  >bad_drain.out 2>bad_drain.err || fail "threads, NANO_DRAIN_THREADS=0: $(cat bad_drain.err)"
grep -qx "threads right" bad_drain.out && grep -q "NANO_DRAIN_THREADS=0" bad_drain.err ||
  fail "a bad NANO_DRAIN_THREADS is named and the program runs ($(cat bad_drain.err))"
# two buffers used again and again (a launch that finds both busy runs
# uninstrumented): each dispatch starts where the last left its buffer
env RPDT_FILENAME=reuse.rpd NANO_INSTRUMENT=1 NANO_ANALYZERS=none NANO_BUFFER_POOL=2 THREADS_SYNC=1 \
  LD_PRELOAD="$rpd" ./threads >reuse.out 2>reuse.err || fail "reuse: $(cat reuse.err)"
grep -qx "threads right" reuse.out || fail "reuse: right results"
reuse=$(query reuse.rpd "select count(*) > 2, min(records), max(records), sum(dropped), sum(decode_errors) from nano_dispatch")
[ "$reuse" = "1 3000 3000 0 0" ] ||
  fail "reuse: more dispatches than buffers, each of 3,000 records, none dropped ($reuse)"

# a twin held on its stream (FAKE_HOLD_STREAM) and one on another stream that
# runs: the second is reported while the first waits (each stream's twins are
# waited for apart), and with host functions as well
cuda_program held
for end in event hostfn; do
  env RPDT_FILENAME="held_$end.rpd" NANO_INSTRUMENT=1 NANO_ANALYZERS=none NANO_ANALYZER_FORMAT=json \
    NANO_ANALYZER_OUTPUT="held_$end.json" NANO_GPU_END=$end FAKE_HOLD_STREAM=0x10000 \
    LD_PRELOAD="$rpd" ./held >"held_$end.out" 2>"held_$end.err" || fail "held, $end: $(cat "held_$end.err")"
  grep -qx "held right" "held_$end.out" || fail "held, $end: right results"
  grep -qx "other reported while axpy is held: yes" "held_$end.out" ||
    fail "held, NANO_GPU_END=$end: a twin's end waited for a held one on another stream"
done

# kernel configuration (cudaFuncSetAttribute: 64 KiB of dynamic shared memory)
# reaches the twin, which launches with it, also cooperatively
# (cudaLaunchCooperativeKernel is routed); a launch that fails fails as it
# would without the tool, its twin's failure said once with the API's name of
# the error; a twin that fails where the original does not (no twins in the
# module) leaves no error for the program to read
cuda_program shmem
shmem_line="shmem set 0 big 0 small 1 grid 9 after 0 coop 0 p 1 q 0"
./shmem >shmem_plain.out || fail "shmem: the program failed"
grep -qx "$shmem_line" shmem_plain.out || fail "shmem without the runtime: $(cat shmem_plain.out)"
grep -qx "launch _Z5smallPi refused: 65536 bytes of dynamic shared memory, 49152 allowed" shmem_plain.out ||
  fail "shmem: the stand-in refuses 64 KiB without the attribute"
for mode in inst notwins; do
  env RPDT_FILENAME="shmem_$mode.rpd" NANO_INSTRUMENT=1 NANO_ANALYZERS=none \
    $([ $mode = notwins ] && echo FAKE_NO_TWINS=1) LD_PRELOAD="$rpd" ./shmem \
    >"shmem_$mode.out" 2>"shmem_$mode.err" || fail "shmem, $mode: $(cat "shmem_$mode.err")"
  grep -qx "$shmem_line" "shmem_$mode.out" ||
    fail "shmem, $mode: the program sees what it sees without the tool: $(cat "shmem_$mode.out")"
done
grep -qx "attribute __nano_twin__Z3bigPiPv max dynamic shared 65536" shmem_inst.out ||
  fail "shmem: cudaFuncSetAttribute mirrored to the twin"
grep -qx "launch __nano_twin__Z3bigPiPv grid 1 1 1 block 32 1 1 shared 65536 stream 0x3000" shmem_inst.out ||
  fail "shmem: the twin launches with 64 KiB of dynamic shared memory"
grep -A1 -x "cooperative launch of __nano_twin__Z3bigPiPv" shmem_inst.out |
  grep -qx "launch __nano_twin__Z3bigPiPv grid 2 1 1 block 32 1 1 shared 65536 stream 0x3000" ||
  fail "shmem: a cooperative launch is routed, its twin launched cooperatively"
grep -qx "nanoprobe: _Z5smallPi: the launch fails with and without instrumentation (cudaErrorInvalidValue, error 1): the program's own launch error (a grid, block or shared memory size over what the kernel or device allows?), not nanoprobe's" shmem_inst.err ||
  fail "shmem: a launch that fails without the tool too is blamed on the launch, not its twin, with the error's name ($(cat shmem_inst.err))"
grep -qx "nanoprobe: _Z3bigPi: the launch fails with and without instrumentation (cudaErrorInvalidConfiguration, error 9): the program's own launch error (a grid, block or shared memory size over what the kernel or device allows?), not nanoprobe's" shmem_inst.err ||
  fail "shmem: a grid over CUDA's limits is the launch's error, not its twin's ($(cat shmem_inst.err))"
[ "$(grep -c "its twin did not launch" shmem_notwins.err)" = 2 ] ||
  fail "shmem: each kernel's failed twin said once ($(cat shmem_notwins.err))"

# another tool's library holds CUDA's injection: said, and the rest is traced
other_err=$(CUDA_INJECTION64_PATH=/nonexistent/libother-tool.so RPDT_FILENAME=other.rpd \
  LD_PRELOAD="$rpd" ./app 2>&1 >other.out)
grep -q "CUDA_INJECTION64_PATH=/nonexistent/libother-tool.so names another tool's library" <<<"$other_err" ||
  fail "another tool's CUDA injection is said ($other_err)"
grep -qx "$done_line" other.out || fail "another tool's injection: right results"
[ "$(nano_launches other.rpd | cut -d' ' -f1)" = 3 ] ||
  fail "another tool's injection: the rest of the trace is recorded"

# a libcupti of a later release of the same major: said, kernels still traced;
# of another major: said, calls traced, kernels not
later_err=$(FAKE_CUPTI_VERSION=130200 RPDT_FILENAME=later.rpd LD_PRELOAD="$rpd" ./app 2>&1 >/dev/null)
grep -q "libcupti's API version 130200 is newer than the 1300.. nanoprobe was built with" <<<"$later_err" &&
  [ "$(query later.rpd "select count(*) from rocpd_op")" -gt 0 ] ||
  fail "a later libcupti is said, its records still read ($later_err)"
major_err=$(FAKE_CUPTI_VERSION=140000 RPDT_FILENAME=major.rpd LD_PRELOAD="$rpd" ./app 2>&1 >/dev/null)
grep -q "libcupti's API version 140000 is not the 1300.. nanoprobe was built with" <<<"$major_err" &&
  [ "$(query major.rpd "select count(*) from rocpd_op")" = 0 ] ||
  fail "a libcupti of another major is said, no ops read ($major_err)"

# another CUPTI client holds CUPTI: said, and the rest is traced
busy_err=$(FAKE_CUPTI_BUSY="CUPTI for other tool" RPDT_FILENAME=busy.rpd LD_PRELOAD="$rpd" ./app 2>&1 >busy.out)
grep -q "another CUPTI client (CUPTI for other tool) is active" <<<"$busy_err" ||
  fail "a refused CUPTI subscription is said, naming the client CUPTI names ($busy_err)"
grep -qx "$done_line" busy.out || fail "CUPTI refused: right results"
[ "$(nano_launches busy.rpd)" = "3 3" ] ||
  fail "CUPTI refused: the rest of the trace is recorded, the launches' arguments on nanoprobe's rows"

# a ring far smaller than the records: drained while the twin runs, or dropped
run_instrumented small NANO_BUFFER_SIZE=4096 NANO_BUFFER_SPINS=1000000
grep -qx "$done_line" small.out || fail "small ring: right results"
sum=$(query small.rpd "select records + dropped, records > 0 from nano_dispatch where kernel = '_Z4axpyfPKfPfi'")
[ "$sum" = "3000 1" ] || fail "small ring: every record drained or dropped ($sum)"
echo "PASS $api launch routing and GPU back end"
