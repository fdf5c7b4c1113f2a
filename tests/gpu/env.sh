# Sourced by run.sh and bench.sh (bench/gpu/run.sh) with OUT in $out: the
# libraries of OUT/lib first, and libcupti where the runtime's own search
# (the toolkit's /usr/local/cuda folders: runtime/rpd/cupti.c, cupti_dirs)
# would not find it: CUDA 13's (what the suite is built with), not an older
# copy such as Nsight Compute's. NANO_CUPTI_PATH, when set, wins.
export LD_LIBRARY_PATH="$out/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# (safe under set -e and pipefail: bench.sh runs with both)
toolkit_cupti=
for f in /usr/local/cuda/{extras/CUPTI/lib64,lib64,targets/x86_64-linux/lib}/libcupti.so{.13,}; do
  if [ -e "$f" ]; then toolkit_cupti=$f; fi
done
if [ -z "${NANO_CUPTI_PATH:-}" ] && [ -z "$toolkit_cupti" ]; then
  cupti=$(find /usr/local /opt /usr/lib -name 'libcupti.so.13*' 2>/dev/null | sort | head -1 || true)
  if [ -n "$cupti" ]; then export NANO_CUPTI_PATH=$cupti; fi
fi
