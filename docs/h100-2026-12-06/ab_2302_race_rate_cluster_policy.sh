#!/usr/bin/env bash
# Race key as mass * rate (rcp.approx of -ln coin, taken while the loads fly) against HEAD c6dc7f1
# (mass / e); plus two experiment-only builds of the same change with the rows kernel's cluster
# scheduling policy preference set (1 spread, 2 load balancing). Sampling cases interleaved three
# times after the new build's GPU tests. Binaries built on the CPU machine for sm_90 (Release).
set -u
C=$(pwd)/build-carry
export LD_LIBRARY_PATH=$C/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
log="$OUT/log.txt"
{
date -u +%FT%TZ
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
/usr/local/cuda/bin/nvcc --version | tail -2
timeout 90 $C/new/test_kernels_gpu > "$OUT/tests_kernels_gpu.log" 2>&1; rc=$?
echo "test_kernels_gpu rc=$rc"; grep -E '^\[  (PASSED|FAILED)|FAILED  \]' "$OUT/tests_kernels_gpu.log"
timeout 60 $C/new/test_programmatic_launch > "$OUT/tests_programmatic_launch.log" 2>&1; rc2=$?
echo "test_programmatic_launch rc=$rc2"; grep -E '^\[  (PASSED|FAILED)|FAILED  \]' "$OUT/tests_programmatic_launch.log"
echo $((rc + rc2)) > /tmp/new_rc
} > "$log" 2>&1
f='^tree_sampling_fp32/B(1xN4|1xN8|2xN4)/cold/iter|^tree_sampling_fp32/B1xN8/cold/probs/iter|^read_once_fp32/tree/B(1xN4|1xN8)/cold/iter|^chain_sampling_fp32/B1xK7/cold/iter|^read_once_fp32/chain/B1xK7/cold/iter|^tree_sampling_fp32/B8xN16/cold/iter|^chain_sampling_fp32/B64xK7/cold/iter'
run() { # name binary
  timeout 40 "$2" --benchmark_filter="$f" 2>/dev/null | grep -E "^[a-z]" | awk -v n="$1" '{printf "%-6s %-60s %8s %s\n", n, $1, $2, $3}'
}
for r in 1 2 3; do
  run base $C/base/bench_kernels
  if [ "$(cat /tmp/new_rc)" = 0 ]; then
    run new $C/new/bench_kernels; run spread $C/spread/bench_kernels; run lb $C/lb/bench_kernels
  fi
done > "$OUT/ab.txt" 2>&1
date -u +%FT%TZ >> "$log"
cat "$log"; sort -k2,2 -k1,1 "$OUT/ab.txt"
