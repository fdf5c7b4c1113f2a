#!/usr/bin/env bash
# The GPU benchmarks' script (bench/gpu/run.sh) end to end without a GPU:
# an OUT whose probe succeeds and whose gpubench prints fixed figures (and
# writes a dispatch row like the runtime's), so that the script's own logic
# (env.sh under set -e, the rounds, the ratios, the drained-records figure)
# is checked where CI runs; a GPU session is then not spent on a script bug.
# usage: bench_dryrun.sh WORK
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$1
rm -rf "$work"
mkdir -p "$work/out/lib"
out=$work/out
cp "$here/env.sh" "$out/"
cp "$here/../../bench/gpu/run.sh" "$out/bench.sh"
touch "$out/lib/libnano_rpd.so"
printf '#!/bin/sh\nexit 0\n' >"$out/probe"
cat >"$out/gpubench" <<'SH'
#!/bin/sh
# plain runs take 2 units, others 3; membound writes the runtime's row
case "$NANO_INSTRUMENT$LD_PRELOAD" in "") v=2 ;; *) v=3 ;; esac
echo "$1 $v us"
if [ "$1" = membound ] && [ -n "${RPDT_FILENAME:-}" ]; then
  python3 -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("create table if not exists nano_dispatch(records, dropped, start, \"end\")")
db.execute("insert into nano_dispatch values (2000000, 0, 0, 1000000000)")
db.commit()' "$RPDT_FILENAME"
fi
SH
chmod +x "$out/probe" "$out/gpubench" "$out/bench.sh"
got=$(NANO_BENCH_REPEAT=2 "$out/bench.sh" "$out" "$work/bench")
echo "$got"
fail() { echo "FAIL: $*"; exit 1; }
[ "$(grep -c ': best     1.50x  median     1.50x  (3.000 / 2.000 per unit, medians)' <<<"$got")" = 13 ] ||
  fail "thirteen ratios of 3 units to 2 (tiny: four variants; replay: three; api; launch: traced, hooked; membound: three)"
grep -q "^replay    inst_summed  / plain" <<<"$got" || fail "the graph replay's summed figure"
grep -q "^launch    hooked       / plain" <<<"$got" || fail "the kernel cache hook's launch figure"
grep -qx "membound drained 2.0 M records/s (2000000 records, 0 dropped)" <<<"$got" ||
  fail "the drained-records figure from the dispatch row"
got=$(NANO_BENCH_REPEAT=1 NANO_BENCH_FIGURES=membound NANO_BENCH_MEMBOUND=inst_none \
  "$out/bench.sh" "$out" "$work/bench_long")
echo "$got"
[ "$(grep -c ': best' <<<"$got")" = 1 ] && grep -q "^membound  inst_none" <<<"$got" ||
  fail "NANO_BENCH_FIGURES and NANO_BENCH_MEMBOUND narrow the run to one ratio"
got=$(NANO_BENCH_REPEAT=1 NANO_BENCH_FIGURES=drain "$out/bench.sh" "$out" "$work/bench_drain")
echo "$got"
grep -Eq "^membound2 inst_drain4 +/ inst_none: best +1.00x" <<<"$got" ||
  fail "the drain group: two triads at once, four drain threads over one"
echo "PASS bench/gpu/run.sh dry run"
