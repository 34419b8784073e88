#!/usr/bin/env bash
# EXPERIMENT (not committed as code): tree sampling's "rows" kernel racing in one step (every
# warp its segment's key and pick, the block's best entry sent), against HEAD. Binaries built on the CPU machine for sm_90 (Release), carried in build-carry/.
set -u
C=$(pwd)/build-carry
export LD_LIBRARY_PATH=$C/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
log="$OUT/log.txt"
{
date -u +%FT%TZ
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 60 $C/var/test_kernels_gpu --gtest_filter='*Sampling*' > "$OUT/tests_var.log" 2>&1; rc=$?; echo "var sampling tests rc=$rc"; echo $rc > /tmp/var_rc
grep -E 'OK|FAILED' "$OUT/tests_var.log" | head -20
} > "$log" 2>&1
f='^tree_sampling_fp32/B(1xN4|1xN8|2xN4)/cold/iter|^tree_sampling_fp32/B1xN8/cold/probs/iter|^read_once_fp32/tree/B(1xN4|1xN8)/cold/iter'
run() { # name binary
  timeout 40 "$2" --benchmark_filter="$f" 2>/dev/null | grep -E "^[a-z]" | awk -v n="$1" '{printf "%-6s %-60s %8s %s\n", n, $1, $2, $3}'
}
for r in 1 2 3 4; do
  run base $C/base/bench_kernels
  [ "$(cat /tmp/var_rc)" = 0 ] && run var $C/var/bench_kernels
done > "$OUT/ab.txt" 2>&1
date -u +%FT%TZ >> "$log"
cat "$log"; sort -k2,2 -k1,1 "$OUT/ab.txt"
