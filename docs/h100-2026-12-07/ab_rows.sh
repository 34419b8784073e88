#!/usr/bin/env bash
# A/B/C of the rows kernel against HEAD (build-carry/head): exp = the prologue change
# (rows_prologue.patch), exp2 = exp plus two warps per segment where a block holds at most 10
# segments. GPU tests of both, three interleaved runs of the sampling cases, the probe twice; with
# PROFILE=1 only, the stall profile and SASS of exp2's rows kernel at 1 x 4. Any GPU. A short call:
# TEST_FILTER='*Sampling*' (the tests of verify_sampling.cu's kernels), RUNS=2, PROBE_RUNS=1.
set -u
C=$(pwd)/build-carry
export LD_LIBRARY_PATH=$C/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ -n "${PROFILE:-}" ]; then
  s=$(mktemp -d)
  timeout 100 scripts/profile_kernel_stalls.sh $C/exp2/bench_kernels '^tree_sampling_fp32/B1xN4/cold/iter' \
    tree_rows "$s/rows" > /dev/null 2>&1; cp "$s/rows/stalls.txt" "$OUT/stalls_rows_exp2.txt"
  /usr/local/cuda/bin/cuobjdump -sass $C/exp2/bench_kernels 2>/dev/null |
    awk '/Function : .*tree_rows/{p=1} /Function : /&&!/tree_rows/{p=0} p' > "$OUT/sass_rows_exp2.txt"
  head -25 "$OUT/stalls_rows_exp2.txt"
  exit 0
fi
{ date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  /usr/local/cuda/bin/nvcc --version | tail -1; } > "$OUT/gpu.txt"
cat "$OUT/gpu.txt"
for b in exp exp2; do
  { timeout 120 $C/$b/test_kernels_gpu --gtest_filter="${TEST_FILTER:-*}"; echo "test_kernels_gpu rc=$?"
    timeout 60 $C/$b/test_programmatic_launch; echo "test_programmatic_launch rc=$?"; } > "$OUT/tests_$b.log" 2>&1
  echo "$b:"; grep -E "rc=|^\[  PASSED|^\[  FAILED|FAILED  \]" "$OUT/tests_$b.log"
done
f='^tree_sampling_fp32/B(1xN4|1xN8|2xN4|1xN16)/cold(/probs)?/iter|^read_once_fp32/tree/B(1xN4|1xN8)/cold/iter|^chain_sampling_fp32/B1xK7/cold/iter|^read_once_fp32/chain/B1xK7/cold/iter'
for r in $(seq 1 "${RUNS:-3}"); do
  for b in head exp exp2; do
    timeout 90 $C/$b/bench_kernels --benchmark_filter="$f" 2>/dev/null | grep -E "^[a-z]" |
      awk -v n="r$r" -v b="$b" '{printf "%-3s %-5s %-62s %8s %s\n", n, b, $1, $2, $3}'
  done
done > "$OUT/ab.txt"
sort -k3,3 -k2,2 -k1,1 "$OUT/ab.txt" | sed 's@/iterations:[0-9]*/manual_time@@'
timeout 60 $C/exp2/bench_kernels --benchmark_filter='^tree_sampling_fp32/B(1xN4|1xN8)/cold/iter' 2>/dev/null | grep -E "^[a-z]" | cut -c1-200
for r in $(seq 1 "${PROBE_RUNS:-2}"); do timeout 60 $C/probe/probe_cluster_launch; done > "$OUT/probe_cluster_launch.txt" 2>&1
cat "$OUT/probe_cluster_launch.txt" | grep -E "segs|149x256|60x352 plain|variant" | head -12
