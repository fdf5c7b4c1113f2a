#!/usr/bin/env bash
# Everything a session with a lent GPU machine runs, in one call (README.md):
# each part's output goes to RESULTS as it runs, so a call cut short still
# brings back what ran. In order of what matters most:
#   env.txt       the machine: GPU, driver, toolkit, Nsight Compute
#   userobjects.txt what CUDA does with user object references through
#                 clones, child graphs and executables (a design question)
#   suite.txt     tests/gpu/run.sh (every sample with twins also run with the
#                 twins' own sums and compared, FAIL <sample> summed; the
#                 KernelTimeline sample `timeline`); work.tar.gz: its logs,
#                 reports and traces
#   suite_hostfn.txt five samples again with NANO_GPU_END=hostfn
#   ncu.txt       Nsight Compute's L1 and L2 sector and bank-conflict counts of
#                 the samples whose MemoryAnalysis figures the suite checks
#   rpd.txt       bench/rpd/run.sh (the tracer's hot path: the 25 ns check)
#   gpubench.txt  bench/gpu/run.sh (inst_summed: MemoryAnalysis summed by the
#                 twins, issue 39's <= 2x and <= 3x; replay: a tiny kernel's
#                 graph replays); gpubench_drain.txt: NANO_DRAIN_THREADS=4
#                 over 1; gpubench_long.txt: the >= 100 ms memory-bound kernel
# Runs over a build folder made here (here: ctest -R gpu_suite_build, and
# bench/rpd built); the device tool carries BUILD/gpu-suite and BUILD/bench/rpd.
# usage: tests/gpu/session.sh BUILD RESULTS
set -uo pipefail
build=$(cd "$1" && pwd)
results=$2
suite=$build/gpu-suite
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
mkdir -p "$results"
export NANO_GPU_SAMPLE_TIMEOUT=${NANO_GPU_SAMPLE_TIMEOUT:-60}

{
  nvidia-smi -L
  nvidia-smi --query-gpu=driver_version,clocks.max.sm,memory.total --format=csv,noheader
  ls -d /usr/local/cuda*
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
  echo "ncu: ${ncu:-none}"
  nproc
  python3 --version
} >"$results/env.txt" 2>&1
# CUDA's user object references through clones, child graphs and
# executables (samples/userobjects.cu): may graph nodes' buffers be freed?
LD_LIBRARY_PATH="$suite/lib" timeout 30 "$suite/userobjects" >"$results/userobjects.txt" 2>&1

"$here/run.sh" "$suite" "$work/suite" 2>&1 | tee "$results/suite.txt"
# the same with the end of twins learnt from host functions (NANO_GPU_END=hostfn,
# not the default): the samples that launch outside and inside graphs
NANO_GPU_END=hostfn "$here/run.sh" "$suite" "$work/suite_hostfn" vecadd streams graph dynshared subscriber 2>&1 |
  tee "$results/suite_hostfn.txt"
tar -czf "$results/work.tar.gz" -C "$work" suite suite_hostfn

if [ -n "$ncu" ]; then
  # global load/store sectors and requests at L1, sectors at L2 (from L1),
  # shared bank conflicts: the counts MemoryAnalysis estimates from addresses
  metrics=l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum
  metrics+=,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum
  metrics+=,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum
  metrics+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
  metrics+=,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum
  for s in vecadd strided bank atomics devfunc; do
    echo "== $s"
    LD_LIBRARY_PATH="$suite/lib" timeout 90 "$ncu" --csv --metrics "$metrics" "$suite/$s" 2>&1
  done >"$results/ncu.txt"
fi

LD_LIBRARY_PATH="$suite/lib" RPD_BENCH_RANGES=${RPD_BENCH_RANGES:-2000000} \
  timeout 120 "$here/../../bench/rpd/run.sh" "$build" 2>&1 | tee "$results/rpd.txt"

NANO_BENCH_REPEAT=${NANO_BENCH_REPEAT:-3} "$suite/bench.sh" "$suite" "$work/bench" 2>&1 | tee "$results/gpubench.txt"
# two dispatches drained at once: 4 drain threads over 1 (NANO_DRAIN_THREADS's default)
NANO_BENCH_REPEAT=1 NANO_BENCH_FIGURES=drain "$suite/bench.sh" "$suite" "$work/bench_drain" 2>&1 |
  tee "$results/gpubench_drain.txt"
# the issue's memory-bound kernel of >= 100 ms (420 passes: 102 ms plain on an
# H200, 127 on an H100), once, without and with MemoryAnalysis: instrumented
# runs of a minute or two
NANO_BENCH_REPEAT=1 NANO_BENCH_FIGURES=membound NANO_BENCH_PASSES=420 \
  NANO_GPU_SAMPLE_TIMEOUT=200 "$suite/bench.sh" "$suite" "$work/bench_long" 2>&1 |
  tee "$results/gpubench_long.txt"
rm -rf "$work"
