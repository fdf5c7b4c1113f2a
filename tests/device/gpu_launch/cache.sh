#!/usr/bin/env bash
# The kernel cache for CUDA programs not built with the plugin (issue 38
# part 4), run without a GPU on the stand-in CUDA (fake_cudart.c: its driver
# loads cubins, names their kernels and parameters from the ELF, and
# launches them by name). drv_app.c, built by gcc on the real cuda.h with
# nothing of ours, reaches the driver as a static cudart does (dlsym of
# cuGetProcAddress_v2) and as Triton does (dlsym of cuLaunchKernel); its
# kernels are a cubin built without the plugin. The cache is made by
# `nanoprobe cache build` from the same source with the plugin, where `lone`
# has one more parameter. Checked:
#   - without the tool: the program's kernels run, results right;
#   - bump's replacement (twin or plain) computes with the program's module
#     variables and leaves its writes there: it reads the __constant__ bias
#     the program set and bumps the __device__ counter the program reads
#     (done line "r 7 c 1"; the cache module's own copies would give 0 0);
#   - a cache whose variable has another size than the program's: no
#     replacement from it, said once;
#   - without -i (plain mode): axpy's and other's launches run the cache's
#     kernels of the same name (the stand-in names each launched function's
#     module: the program's cubin is module 1, the cache's the next), with
#     the launch's own arguments, `extra` too; lone's differs (parameter
#     lists), said once, lone runs as built; results right; with -i, a
#     cache built without the plugin has no twin: said once per kernel, the
#     program's kernels run;
#   - `nanoprobe run -i -c cache -a MemoryAnalysis`: axpy's three launches
#     (cuLaunchKernel, its per-thread variant on the program's stream,
#     cuLaunchKernelEx) and other's (through dlsym) run the cache's twins
#     with the launch's shape and stream, every access recorded (3000 per
#     axpy, 1 for other: the kernels' own arithmetic) into nano_dispatch
#     rows, MemoryAnalysis rows at drv_kernels.cu's lines; lone's twin is
#     refused (parameter lists differ), said once, lone runs; results right;
#   - kernel nodes added to a graph by hand (cuGraphAddKernelNode, v1 and
#     _v2), by the generic calls (cuGraphAddNode, cuGraphNodeSetParams,
#     cuGraphExecNodeSetParams), given new parameters
#     (cuGraphKernelNodeSetParams, cuGraphExecKernelNodeSetParams) or read
#     back (cuGraphKernelNodeGetParams), the graph launched: plain mode
#     gives them the cache's kernels where the cache's module has no
#     variables, else a child graph node of the variables' copies around
#     the cache's kernel; with -i each is its twin's nodes in a child graph
#     node (the set calls and a priority attribute on the twin's node
#     inside), every replay a dispatch with every access, the program's
#     module variables copied in and out; results right;
#   - a launch through cuLaunchKernel's symbol (a program linked against
#     libcuda) runs the twin too;
#   - dlsym(RTLD_NEXT) through the hook: the tracer's exec wrapper works;
#   - a junk file, a second folder with the same kernels, a cache for
#     another arch: each said once, the rest used.
# usage: cache.sh CLANG SOURCE_ROOT KERNELDB RPD_TOOL NANOPROBE OUT_DIR
set -euo pipefail
clang=$1 root=$2 kerneldb=$3 rpdtool=$4 nanoprobe=$5 out=$6
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
cd "$out"
rm -rf cache cache2 cache80 notwins novars widevar ./*.rpd ./*.rpd-*
. "$here/standin.sh"
standin_build "$clang" "$root" "$out"
export LD_LIBRARY_PATH="$out${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NANO_CUPTI=0 # the stand-in's CUPTI reports runtime calls only
fail() { echo "FAIL: $*"; exit 1; }
cuda=(-x cuda --cuda-path=/usr/local/cuda -Wno-unknown-cuda-version -O2)
"$clang" "${cuda[@]}" --cuda-gpu-arch=sm_90 --cuda-device-only -c "$here/drv_kernels.cu" -o prog.cubin
"$nanoprobe" cache build -o cache -- "$clang" "${cuda[@]}" --cuda-gpu-arch=sm_90 -g \
  -DLONE_TAKES_TWO "$here/drv_kernels.cu" >/dev/null
gcc -std=c11 -O2 -Wall -Werror -I/usr/local/cuda/include "$here/drv_app.c" -o drv_app \
  -L. -l:libcuda.so.1 -Wl,-rpath,"$out" -ldl
"$nanoprobe" cache list cache

"$nanoprobe" cache build -o novars -- "$clang" "${cuda[@]}" --cuda-gpu-arch=sm_90 -g \
  -DLONE_TAKES_TWO -DNO_MODULE_VARIABLES "$here/drv_kernels.cu" >/dev/null
"$nanoprobe" cache build -o widevar -- "$clang" "${cuda[@]}" --cuda-gpu-arch=sm_90 -g \
  -DLONE_TAKES_TWO -DWIDE_BIAS "$here/drv_kernels.cu" >/dev/null
standin_sites "$kerneldb" cache/drv_kernels.cu.o "$here/drv_kernels.cu"

query() { python3 -c 'import sqlite3,sys
for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2]): print(*r)' "$@"; }
done_line="done y right p 1 q 1 r 7 c 1"
plain=$(./drv_app prog.cubin)
echo "$plain"
grep -qx "$done_line" <<<"$plain" || fail "the program runs on the stand-in"
for how in cuLaunchKernel cuLaunchKernel_ptsz cuLaunchKernelEx; do
  grep -qx "$how of _Z4axpyfPKfPfi (4 parameters)" <<<"$plain" || fail "axpy through $how"
done

# the cache without -i (plain mode): the cache's kernels of the same name
# replace the program's, with the launch's own arguments
for mode in params extra; do
  out1=$("$nanoprobe" run -c cache -o "plain_$mode.rpd" -- ./drv_app prog.cubin "$mode" 2>&1)
  echo "$out1"
  ! grep -q '__nano_twin' <<<"$out1" || fail "plain $mode: no twin without -i"
  grep -qx "$done_line" <<<"$out1" || fail "plain $mode: right results"
  [ "$(grep -c "^function _Z4axpyfPKfPfi of module 2$" <<<"$out1")" = 3 ] &&
    [ "$(grep -c "^function _Z5otherPi of module 2$" <<<"$out1")" = 1 ] &&
    [ "$(grep -c "^function _Z4bumpPi of module 2$" <<<"$out1")" = 1 ] ||
    fail "plain $mode: axpy's three launches, other's and bump's run the cache's kernels (module 2)"
  grep -qx "function lone of module 1" <<<"$out1" || fail "plain $mode: lone runs the program's"
  [ "$(grep -c "lone: the kernel cache's kernel .* is not used: it has 1 parameters, the cache's 2; it runs as built" <<<"$out1")" = 1 ] ||
    fail "plain $mode: lone's refusal said once"
done
grep -q "^cuLaunchKernel_ptsz of _Z4axpyfPKfPfi (4 parameters, extra)$" <<<"$out1" ||
  fail "plain extra: the cache's axpy gets the launch's extra as it was"
# kernel nodes added to a graph by hand, the graph launched once (drv_app's
# graph mode: other's node twice, bump's, axpy's; the program reads other's
# node back and sets and reads a priority on it). A cache of kernels
# without module variables: plain mode gives other's (_v2) and axpy's (v1)
# nodes the cache's kernels (bump is not in it), and the program reads its
# own kernel back. The full cache pairs its module's variables with every
# kernel of it (which kernel reads which is not in a cubin): a lone node
# cannot have them copied around it, so plain mode makes each node a child
# graph node of the copies and the cache's kernel (bump reads the bias
# copied in, r = 7, and its counter is copied back, c = 2). With -i every
# node is the twin's nodes as one child graph node (captured as a launch:
# the variables' copies come with it), and every replay is a dispatch.
graph_line="done y right p 1 q 1 r 7 c 2"
graph=$("$nanoprobe" run -c novars -o graph.rpd -- ./drv_app prog.cubin graph 2>&1)
grep -qx "$graph_line" <<<"$graph" || fail "graph nodes: right results ($graph)"
[ "$(grep -c "^graph kernel node: function _Z5otherPi of module 2$" <<<"$graph")" = 2 ] &&
  grep -qx "graph kernel node: function _Z4axpyfPKfPfi of module 2" <<<"$graph" &&
  grep -qx "graph kernel node: function _Z4bumpPi of module 1" <<<"$graph" &&
  [ "$(grep -c "^graph kernel node set: function _Z5otherPi of module 2$" <<<"$graph")" = 4 ] ||
  fail "graph nodes, plain: other's (added and set, by the kernel node calls and the generic ones) and axpy's get the cache's kernels, bump's its own ($graph)"
graph_v=$("$nanoprobe" run -c cache -o graph_v.rpd -- ./drv_app prog.cubin graph 2>&1)
grep -qx "$graph_line" <<<"$graph_v" || fail "graph nodes, plain, module variables: right results ($graph_v)"
! grep "^graph kernel node: " <<<"$graph_v" | grep -qv "function lone of module 1$" &&
  [ "$(grep -c "^child graph node: 4 nodes$" <<<"$graph_v")" = 4 ] &&
  ! grep -v "^nanoprobe: lone: " <<<"$graph_v" | grep -q "runs as built" ||
  fail "graph nodes, plain, module variables: four child graph nodes of the variables' three copies and the cache's kernel ($graph_v)"
[ "$(grep -c "^graph kernel node set: function _Z5otherPi of module 2$" <<<"$graph_v")" = 4 ] &&
  [ "$(grep -c "^graph exec child graph node set$" <<<"$graph_v")" = 2 ] &&
  grep -qx "graph kernel node attribute 8 3 on _Z5otherPi" <<<"$graph_v" ||
  fail "graph nodes, plain, module variables: other's set and attribute calls on the cache's kernel's node inside"
graph_i=$("$nanoprobe" run -i -c cache -a MemoryAnalysis -o graph_i.rpd -- ./drv_app prog.cubin graph 2>&1)
echo "$graph_i"
grep -qx "$graph_line" <<<"$graph_i" || fail "graph nodes, -i: right results"
! grep "^graph kernel node: " <<<"$graph_i" | grep -qv "function lone of module 1$" &&
  [ "$(grep -c "^child graph node: " <<<"$graph_i")" = 4 ] ||
  fail "graph nodes, -i: four child graph nodes, none of the program's kernel nodes"
! grep -v "^nanoprobe: lone: " <<<"$graph_i" | grep -q "runs uninstrumented\|runs as built" ||
  fail "graph nodes, -i: no node runs the program's kernel (lone's refusal aside)"
[ "$(grep -c "^graph kernel node set: function __nano_twin__Z5otherPiPv of module 2$" <<<"$graph_i")" = 4 ] &&
  [ "$(grep -c "^graph exec child graph node set$" <<<"$graph_i")" = 2 ] ||
  fail "graph nodes, -i: other's set calls set its twin's node (the executable's through a child graph's copy)"
grep -qx "graph kernel node attribute 8 3 on __nano_twin__Z5otherPiPv" <<<"$graph_i" ||
  fail "graph nodes, -i: the priority set on other's twin's node"
# the graph destroyed, lone's node in a new graph (drv_app reads it back as
# lone's, or fails): its set reaches lone's node, whatever address it got
grep -qx "graph kernel node set: function lone of module 1" <<<"$graph_i" &&
  ! grep -q "was given another kernel" <<<"$graph_i" ||
  fail "graph nodes, -i: lone's node in a new graph is lone's, not a destroyed node's twin"
rows=$(query graph_i.rpd "select kernel from nano_dispatch where id > 5 order by id")
[ "$rows" = "_Z5otherPi
_Z5otherPi
_Z4bumpPi
_Z4axpyfPKfPfi" ] || fail "graph nodes, -i: the replay's four dispatches ($rows)"
[ "$(query graph_i.rpd "select sum(accesses) from nano_memory where kernel like '%axpy%'")" = $((4 * 3 * 1000)) ] ||
  fail "graph nodes, -i: axpy's four dispatches, every access summed"
graph_h=$(NANO_AGGREGATE=host "$nanoprobe" run -i -c cache -o graph_h.rpd -- ./drv_app prog.cubin graph 2>&1)
grep -qx "$graph_line" <<<"$graph_h" || fail "graph nodes, -i, records: right results"
[ "$(query graph_h.rpd "select records from nano_dispatch where id > 5 order by id" | tr '\n' ' ')" = "1 1 0 3000 " ] ||
  fail "graph nodes, -i, records: every access of the replay recorded"
# a cache whose module variable has another size than the program's: no
# kernel of it replaces the program's (each shares the variables), said once
wide=$("$nanoprobe" run -c widevar -o wide.rpd -- ./drv_app prog.cubin 2>&1)
grep -qx "$done_line" <<<"$wide" || fail "a variable of another size: right results ($wide)"
[ "$(grep -c "^function .* of module 1$" <<<"$wide")" = 6 ] ||
  fail "a variable of another size: the program's kernels run"
[ "$(grep -c "_Z4bumpPi: its module variable bias is 4 bytes in the program and 8 in the kernel cache's .*: it runs as built" <<<"$wide")" = 1 ] ||
  fail "a variable of another size: said once for bump"
# -i with a cache built without the plugin: no twin to run, said once per kernel
mkdir -p notwins && cp prog.cubin notwins/
out2=$("$nanoprobe" run -i -c notwins -o notwins.rpd -- ./drv_app prog.cubin 2>&1)
grep -qx "$done_line" <<<"$out2" || fail "-i, no twins: right results"
[ "$(grep -c "^function .* of module 1$" <<<"$out2")" = 6 ] || fail "-i, no twins: the program's kernels run"
[ "$(grep -c "_Z4axpyfPKfPfi: the kernel cache's .*prog.cubin has no twin of it (built without the plugin): it runs uninstrumented" <<<"$out2")" = 1 ] ||
  fail "-i, no twins: said once for axpy"

# instrumented from the cache
run=$("$nanoprobe" run -i -c cache -a MemoryAnalysis -o inst.rpd -- ./drv_app prog.cubin 2>&1)
echo "$run"
grep -qx "$done_line" <<<"$run" || fail "instrumented: right results"
twin=__nano_twin__Z4axpyfPKfPfiPv
[ "$(grep -c "^launch $twin grid 4 1 1 block 256 1 1 shared 0 stream " <<<"$run")" = 3 ] ||
  fail "axpy's three launches run its twin with their shape"
for how in cuLaunchKernel cuLaunchKernel_ptsz cuLaunchKernelEx; do
  grep -qx "$how of $twin (5 parameters)" <<<"$run" || fail "the twin through $how"
done
stream=$(grep "^cuLaunchKernel_ptsz of $twin" -A1 <<<"$run" | sed -n 's/.* stream \(0x[0-9a-f]*\)$/\1/p')
[ -n "$stream" ] && [ "$stream" != 0x2 ] || fail "the per-thread launch keeps the program's stream"
grep -qx "cuLaunchKernel of __nano_twin__Z5otherPiPv (2 parameters)" <<<"$run" ||
  fail "other's twin through Triton's dlsym(cuLaunchKernel)"
grep -qx "cuLaunchKernel of lone (1 parameters)" <<<"$run" || fail "lone runs as the program's"
[ "$(grep -c "lone: the kernel cache's twin .* is not used: it has 1 parameters, the cache's 2" <<<"$run")" = 1 ] ||
  fail "lone's twin refused, said once"
# the twins sum their accesses where they run (NANO_AGGREGATE=auto): no record
[ "$(grep -c "^twin .*: recorded nothing$" <<<"$run")" = 5 ] || fail "each twin summed, no record"
# the model: axpy reads x[i], y[i] and writes y[i] for each of its 1000 elements
summed_rows=$(query inst.rpd "select kernel, backend, arch, aggregate, records from nano_dispatch order by id")
[ "$summed_rows" = "_Z4axpyfPKfPfi cuda sm_90 device 0
_Z4axpyfPKfPfi cuda sm_90 device 0
_Z4axpyfPKfPfi cuda sm_90 device 0
_Z5otherPi cuda sm_90 device 0
_Z4bumpPi cuda sm_90 device 0" ] || fail "one nano_dispatch row per twin launch, summed on the device ($summed_rows)"
[ "$(query inst.rpd "select sum(accesses) from nano_memory where kernel like '%axpy%'")" = $((3 * 3 * 1000)) ] ||
  fail "the device's sums count every access of axpy"
# the same from records
host=$(NANO_AGGREGATE=host "$nanoprobe" run -i -c cache -a MemoryAnalysis -o host.rpd -- ./drv_app prog.cubin 2>&1)
grep -qx "$done_line" <<<"$host" || fail "instrumented, records: right results"
[ "$(grep -c "^twin .*: recorded$" <<<"$host")" = 4 ] || fail "each twin recorded"
rows=$(query host.rpd "select kernel, backend, arch, records from nano_dispatch order by id")
echo "$rows"
want="_Z4axpyfPKfPfi cuda sm_90 $((3 * 1000))
_Z4axpyfPKfPfi cuda sm_90 $((3 * 1000))
_Z4axpyfPKfPfi cuda sm_90 $((3 * 1000))
_Z5otherPi cuda sm_90 1
_Z4bumpPi cuda sm_90 0"
[ "$rows" = "$want" ] || fail "one nano_dispatch row per twin launch, every access"
columns="kernel, file, line, \"column\", function, kind, space, access_bytes, executions, accesses, bytes, line_bytes, lines_needed, lines_used, sector_bytes, sectors_needed, sectors_used, bank_conflicts"
[ "$(query inst.rpd "select $columns from nano_memory order by dispatch_id, line, \"column\"")" = \
  "$(query host.rpd "select $columns from nano_memory order by dispatch_id, line, \"column\"")" ] ||
  fail "MemoryAnalysis summed on the device differs from the records' answer"
lines=$(query inst.rpd "select distinct line from nano_memory where file like '%drv_kernels.cu' order by line")
[ "$lines" = "$(printf '%s\n%s' "$axpy_line" "$other_line")" ] ||
  fail "MemoryAnalysis at drv_kernels.cu's lines ($lines)"

# a program that calls cuLaunchKernel by its symbol (linked against libcuda)
direct=$("$nanoprobe" run -i -c cache -o direct.rpd -- ./drv_app prog.cubin direct 2>&1)
grep -qx "$done_line" <<<"$direct" || fail "direct: right results"
[ "$(grep -c "^launch $twin" <<<"$direct")" = 3 ] || fail "direct: the symbol's launch runs the twin"

# arguments in cuLaunchKernel's extra (one buffer): the twin gets them as
# kernelParams into that buffer
extra=$("$nanoprobe" run -i -c cache -a MemoryAnalysis -o extra.rpd -- ./drv_app prog.cubin extra 2>&1)
grep -qx "$done_line" <<<"$extra" || fail "extra: right results ($extra)"
grep -qx "cuLaunchKernel_ptsz of $twin (5 parameters)" <<<"$extra" ||
  fail "extra: the twin launches with kernelParams made from the buffer"
! grep -q "in cuLaunchKernel's extra" <<<"$extra" || fail "extra: refused ($extra)"
[ "$(query extra.rpd "select count(*), sum(records) from nano_dispatch where kernel like '%axpy%'")" = "3 0" ] &&
  [ "$(query extra.rpd "select sum(accesses) from nano_memory where kernel like '%axpy%'")" = $((3 * 3 * 1000)) ] ||
  fail "extra: three axpy dispatches, every access"

# cuLaunchCooperativeKernel (through cuGetProcAddress): the twin launched
# cooperatively, with the launch's shape
coop=$("$nanoprobe" run -i -c cache -a MemoryAnalysis -o coop.rpd -- ./drv_app prog.cubin coop 2>&1)
grep -qx "$done_line" <<<"$coop" || fail "coop: right results ($coop)"
grep -qx "cuLaunchCooperativeKernel of $twin (5 parameters)" <<<"$coop" ||
  fail "coop: the twin through cuLaunchCooperativeKernel"
[ "$(query coop.rpd "select count(*) from nano_dispatch where kernel like '%axpy%'")" = 3 ] ||
  fail "coop: three axpy dispatches"

# dlsym(RTLD_NEXT) for the tracer's exec wrapper, with dlsym interposed
ex=$("$nanoprobe" run -c cache -o exec.rpd -- ./drv_app prog.cubin exec 2>&1) ||
  fail "exec through the preloaded tracer ($ex)"
grep -qx "exec-ok" <<<"$ex" || fail "the exec'd program ran"
"$rpdtool" info exec.rpd >/dev/null || fail "the exec's trace is readable"

# a junk file and the same kernels in a first folder; another arch's cache
mkdir cache2 cache80
cp cache/* cache2/
echo junk >cache2/junk.o
bad=$("$nanoprobe" run -i -c cache2:cache -o bad.rpd -- ./drv_app prog.cubin 2>&1)
echo "$bad"
grep -qx "$done_line" <<<"$bad" || fail "with junk: right results"
[ "$(grep -c "junk.o is not a code object kerneldb reads" <<<"$bad")" = 1 ] || fail "junk said once"
[ "$(grep -c "_Z4axpyfPKfPfi (sm_90) is in $out/cache2/drv_kernels.cu.o and $out/cache/drv_kernels.cu.o: the first is used" <<<"$bad")" = 1 ] ||
  fail "a kernel in two folders: said once"
[ "$(grep -c "^launch $twin" <<<"$bad")" = 3 ] || fail "with junk: the twins still run"
"$nanoprobe" cache build -o cache80 -- "$clang" "${cuda[@]}" --cuda-gpu-arch=sm_80 \
  "$here/drv_kernels.cu" >/dev/null
arch=$("$nanoprobe" run -i -c cache80 -o arch.rpd -- ./drv_app prog.cubin 2>&1)
echo "$arch"
grep -qx "$done_line" <<<"$arch" || fail "another arch's cache: right results"
! grep -q '^launch __nano_twin' <<<"$arch" || fail "no twin of another arch"
[ "$(grep -c "_Z4axpyfPKfPfi: the kernel cache has it for sm_80 only, the device is sm_90" <<<"$arch")" = 1 ] ||
  fail "another arch said once"
echo PASS
