#!/usr/bin/env bash
# EXPERIMENT (not committed as code): fused greedy for one request of at most 16 bf16 rows in wider
# blocks (288, 320 or 352 threads of four loads: 9,216, 10,240 or 11,264 values per block, 17, 15
# or 14 splits per row), so that fewer SMs hold a third block, against HEAD's 256 threads (8,192
# values, 19 splits). Binaries built on the CPU machine for sm_90 (Release), in build-carry/.
set -u
C=$(pwd)/build-carry
export LD_LIBRARY_PATH=$C/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
log="$OUT/log.txt"
ok=""
{
date -u +%FT%TZ
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
for v in var320 var352; do
  timeout 60 $C/$v/test_kernels_gpu --gtest_filter='*Fused*' > "$OUT/tests_$v.log" 2>&1; rc=$?
  echo "$v fused GPU tests rc=$rc"; grep -E '^\[  (PASSED|FAILED)' "$OUT/tests_$v.log"
  [ $rc = 0 ] && echo $v >> /tmp/ok_vars
done
} > "$log" 2>&1
f='^fused_greedy_bf16/B(1xN8|1xN16|8xN16)/cold/iter|^fused_greedy_bf16/B1xN16/warm/iter|^read_once_fp32/fused_bytes/B1xN16/cold/iter'
run() { # name binary
  timeout 40 "$2" --benchmark_filter="$f" 2>/dev/null | grep -E "^[a-z]" | awk -v n="$1" '{printf "%-7s %-60s %8s %s\n", n, $1, $2, $3}'
}
for r in 1 2 3 4; do
  run base $C/base/bench_kernels
  run var288 $C/var288/bench_kernels
  for v in $(cat /tmp/ok_vars 2>/dev/null); do run $v $C/$v/bench_kernels; done
done > "$OUT/ab.txt" 2>&1
date -u +%FT%TZ >> "$log"
cat "$log"; sort -k2,2 -k1,1 "$OUT/ab.txt"
