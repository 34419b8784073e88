#!/usr/bin/env bash
# EXPERIMENT (not committed as code): fused greedy's lean tail, slots emptied after the barrier's
# arrive, and a wait before the single poll round, against HEAD. Binaries built on the CPU
# machine for sm_90 (Release) and carried in build-carry/ with the Debian libraries they need.
set -u
C=$(pwd)/build-carry
export LD_LIBRARY_PATH=$C/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
log="$OUT/log.txt"
{
date -u +%FT%TZ
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
ldd $C/base/bench_kernels | grep -i "not found"
# HEAD on this GPU: the kernel, launch and preflight GPU tests, and the preflight itself.
timeout 120 $C/base/test_kernels_gpu > "$OUT/head_test_kernels_gpu.log" 2>&1; echo "HEAD test_kernels_gpu rc=$?"
timeout 120 $C/base/test_programmatic_launch > "$OUT/head_test_programmatic_launch.log" 2>&1; echo "HEAD test_programmatic_launch rc=$?"
timeout 120 $C/base/test_gpu_available > "$OUT/head_test_gpu_available.log" 2>&1; echo "HEAD test_gpu_available rc=$?"
timeout 180 $C/base/test_preflight_gpu > "$OUT/head_test_preflight_gpu.log" 2>&1; echo "HEAD test_preflight_gpu rc=$?"
timeout 120 $C/base/bin/specbench preflight --json > "$OUT/head_preflight.json" 2> "$OUT/head_preflight.err"; echo "HEAD specbench preflight rc=$?"
for m in 1 2; do
  SPECBENCH_EXP_POLL_MODE=$m SPECBENCH_EXP_POLL_GAP=300 timeout 120 $C/var/test_kernels_gpu > "$OUT/tests_var_mode$m.log" 2>&1; echo "var mode $m gpu tests rc=$?"
done
} > "$log" 2>&1
f='^fused_greedy_bf16/B(1xN8|1xN16|8xN16)/cold/iter|^fused_greedy_bf16/B1xN16/warm/iter|^read_once_fp32/fused_bytes/B1xN16/cold/iter'
run() { # name binary mode gap
  SPECBENCH_EXP_POLL_MODE=$3 SPECBENCH_EXP_POLL_GAP=$4 timeout 90 "$2" --benchmark_filter="$f" 2>/dev/null | grep -E "^[a-z]" | awk -v n="$1" '{printf "%-10s %-70s %8s %s\n", n, $1, $2, $3}'
}
for r in 1 2 3; do
  run base $C/base/bench_kernels 0 0
  run m0 $C/var/bench_kernels 0 0
  run m1 $C/var/bench_kernels 1 0
  run m2g100 $C/var/bench_kernels 2 100
  run m2g200 $C/var/bench_kernels 2 200
  run m2g400 $C/var/bench_kernels 2 400
done > "$OUT/ab.txt" 2>&1
date -u +%FT%TZ >> "$log"
cat "$log"; cat "$OUT/ab.txt"
