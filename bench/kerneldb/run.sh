#!/usr/bin/env bash
# kerneldb benchmark: $1 = build directory (default ./build).
#  1. listing + fully disassembling a large code object (a template kernel
#     instantiated 400 times, hipcc -g, gfx90a) with kdb_bench, as a ratio
#     to llvm-objdump-15 -d on the same file in the same run (target <= 1),
#     best of 5, as CPU time (user+sys, robust on a shared machine) and wall time;
#  2. opening and listing a shared library of 10,000 kernels (target < 1 s);
#  3. listing a section of many compressed bundles (bundles.py: N and 2N
#     bundles of 8 MiB, librocsparse's shape): the time should double, not
#     quadruple (issue 19.1), shown next to reading the file once (cat);
#  4. peak memory of `kerneldb isa` over one kernel and over every kernel of
#     big.co (the CLI frees each kernel's ISA once printed): the same peak
#     whatever the number of kernels (issue 19.2), with CPU and peak memory
#     as ratios to llvm-objdump-15 -d in the same run;
#  5. a real library, Debian's librocsparse (when librocsparse0 is installed):
#     every gfx908 kernel disassembled against llvm-objdump-15 -d of the same
#     code objects: CPU, wall and peak memory (issue 42 part 3).
# Inputs are generated once into $build/bench/kerneldb/data.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-./build}" && pwd)
bench=$build/bench/kerneldb/kdb_bench
[ -x "$bench" ] || { echo "run.sh: build kdb_bench first ($bench)" >&2; exit 2; }
data=$build/bench/kerneldb/data
mkdir -p "$data"
hip() { hipcc "$@" 2> >(grep -v -e rocm_agent_enumerator -e Traceback -e '^  ' -e '^[A-Za-z]*Error' >&2); }
if [ ! -s "$data/big.co" ]; then
  python3 "$here/gen.py" big 400 "$data/big.hip"
  hip -g -O2 -nogpulib --offload-arch=gfx90a --cuda-device-only --no-gpu-bundle-output \
    -c "$data/big.hip" -o "$data/big.co"
fi
if [ ! -s "$data/many.so" ]; then
  python3 "$here/gen.py" many 10000 "$data/many.hip"
  hip -O1 -fPIC -shared -nogpulib --offload-arch=gfx90a "$data/many.hip" -o "$data/many.so"
fi
t_obj=$(python3 "$here/timeit.py" 5 llvm-objdump-15 -d "$data/big.co")
t_kdb=$(python3 "$here/timeit.py" 5 "$bench" "$data/big.co" all)
info=$("$bench" "$data/big.co" all)
echo "big.co: $(stat -c %s "$data/big.co") bytes; kerneldb: $info"
echo "llvm-objdump-15 -d big.co: $t_obj"
echo "kerneldb list + isa of every kernel: $t_kdb"
python3 - "$t_obj" "$t_kdb" <<'PY'
import sys
o = dict(kv.split("=") for kv in sys.argv[1].split())
k = dict(kv.split("=") for kv in sys.argv[2].split())
print("ratio kerneldb/objdump (list + full disassembly + lines + classification): "
      "cpu %.2fx, wall %.2fx (best of 5)" % (float(k["cpu"]) / float(o["cpu"]), float(k["wall"]) / float(o["wall"])))
PY
list=$("$bench" "$data/many.so" list)
echo "many.so: $list"
python3 -c "
import re; s=float(re.search(r'open_list_s=([0-9.]+)', '''$list''').group(1))
print('open+list of %s kernels: %.3fs (target < 1s): %s' % (re.search(r'kernels=(\d+)', '''$list''').group(1), s, 'ok' if s < 1 else 'SLOW'))"

# 3. many bundles: linear in the section's size
if [ ! -s "$data/small.co" ]; then
  python3 "$here/gen.py" many 10 "$data/small.hip"
  hip -O1 -nogpulib --offload-arch=gfx90a --cuda-device-only --no-gpu-bundle-output \
    -c "$data/small.hip" -o "$data/small.co"
fi
n=${KDB_BENCH_BUNDLES:-60}
for k in "$n" $((2 * n)); do
  [ -s "$data/bundles$k.bin" ] || python3 "$here/bundles.py" "$data/small.co" "$k" 8 "$data/bundles$k.bin"
done
line() { # FILE: "bytes cat_wall list_cpu list_wall"
  local cat_t list_t
  cat_t=$(python3 "$here/timeit.py" 3 cat "$1")
  list_t=$(python3 "$here/timeit.py" 3 "$build/tools/kerneldb/kerneldb" list "$1")
  wall() { sed 's/.*wall=\([^ ]*\).*/\1/' <<<"$1"; }
  echo "$(stat -c %s "$1") $(wall "$cat_t") ${list_t%% *} $(wall "$list_t")"
}
a=$(line "$data/bundles$n.bin"); b=$(line "$data/bundles$((2 * n)).bin")
python3 - "$n" "$a" "$b" <<'PY'
import sys
n = int(sys.argv[1])
rows = [[float(x.split("=")[-1]) for x in a.split()] for a in sys.argv[2:]]
for k, (size, cat, cpu, wall) in zip((n, 2 * n), rows):
    print("bundles x%d (%.0f MB): list %.2fs wall, %.2fs cpu; cat %.2fs; list/cat %.1fx"
          % (k, size / 1e6, wall, cpu, cat, wall / cat))
print("twice the bundles: list takes %.2fx the time (linear: 2, quadratic: 4)" % (rows[1][3] / rows[0][3]))
PY

# 4. bounded memory
kdb=$build/tools/kerneldb/kerneldb
first=$("$kdb" list "$data/big.co" --json | python3 -c "import json,sys; print(json.load(sys.stdin)['kernels'][0]['name'])")
one=$(python3 "$here/timeit.py" 3 "$kdb" isa "$data/big.co" "$first")
all=$(python3 "$here/timeit.py" 3 "$kdb" isa "$data/big.co" --kernels .)
obj=$(python3 "$here/timeit.py" 3 llvm-objdump-15 -d "$data/big.co")
python3 - "$one" "$all" "$obj" <<'PY'
import sys
one, all_, obj = (dict(kv.split("=") for kv in a.split()) for a in sys.argv[1:])
print("kerneldb isa, one kernel: %s KiB peak; every kernel: %s KiB peak (%.2fx one kernel's)"
      % (one["rss"], all_["rss"], float(all_["rss"]) / float(one["rss"])))
print("kerneldb isa --kernels . vs llvm-objdump-15 -d: cpu %.2fx, peak memory %.2fx (best of 3)"
      % (float(all_["cpu"]) / float(obj["cpu"]), float(all_["rss"]) / float(obj["rss"])))
PY

# 5. a real library: Debian's librocsparse (package librocsparse0, 1.3 GB,
#    seven targets; not installed by scripts/deps.sh), gfx908's 111 code
#    objects and 12,591 kernels: `kerneldb isa --kernels . --arch gfx908` on
#    the library against llvm-objdump-15 -d of the same code objects
#    (extracted once by kdb_bench), rounds interleaved (KDB_BENCH_ROUNDS,
#    default 3), best and median of CPU, wall and peak memory (objdump's: its
#    largest code object's run).
lib=/usr/lib/x86_64-linux-gnu/librocsparse.so.0.1
if [ ! -e "$lib" ]; then
  echo "librocsparse: not installed (apt-get install librocsparse0): the real-library figures did not run"
  exit 0
fi
ext=$data/rocsparse_gfx908
if [ ! -s "$ext/done" ]; then
  rm -rf "$ext" && mkdir -p "$ext"
  "$bench" "$lib" extract "$ext" gfx908 >"$ext/done"
fi
objdump_all() { for f in "$1"/co*.o; do llvm-objdump-15 -d "$f"; done; }
export -f objdump_all
rows=""
for ((r = 0; r < ${KDB_BENCH_ROUNDS:-3}; r++)); do
  o=$(python3 "$here/timeit.py" 1 bash -c 'objdump_all "$0"' "$ext")
  k=$(python3 "$here/timeit.py" 1 "$kdb" isa --kernels . --arch gfx908 "$lib")
  rows+="$o|$k;"
done
python3 - "$rows" "$(cat "$ext/done")" <<'PY'
import statistics, sys
rounds = [tuple(dict(kv.split("=") for kv in side.split()) for side in r.split("|"))
          for r in sys.argv[1].split(";") if r]
print("librocsparse gfx908 (%s), %d rounds: kerneldb isa --kernels . vs llvm-objdump-15 -d of each"
      % (sys.argv[2].strip(), len(rounds)))
for key, what in (("cpu", "CPU"), ("wall", "wall"), ("rss", "peak memory")):
    o = [float(a[key]) for a, _ in rounds]
    k = [float(b[key]) for _, b in rounds]
    ratio = [y / x for x, y in zip(o, k)]
    unit = "MiB" if key == "rss" else "s"
    scale = 1 / 1024 if key == "rss" else 1
    print("  %-12s kerneldb %.1f %s, objdump %.1f %s (medians): %.2fx best, %.2fx median"
          % (what, statistics.median(k) * scale, unit, statistics.median(o) * scale, unit,
             min(ratio), statistics.median(ratio)))
PY
