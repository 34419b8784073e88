#!/usr/bin/env bash
# EXPERIMENT (not committed): pipelined slot polls in fused greedy's lean tail, against HEAD.
set -u
exec > >(tee "$OUT/log.txt") 2>&1
date -u +%FT%TZ
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
root=$(pwd)
if [ ! -d /tmp/var ]; then mkdir -p /tmp/var
git ls-files -z | xargs -0 cp --parents -t /tmp/var
cp exp_poll.patch /tmp/var/ && (cd /tmp/var && patch -p1 < exp_poll.patch) || exit 1; fi
conf() { cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >"$OUT/conf_$3.log" 2>&1 && cmake --build "$2" -j 8 --target bench_kernels test_kernels_gpu >"$OUT/build_$3.log" 2>&1; echo "build $3 rc=$?"; }
t0=$(date +%s)
if [ ! -x /tmp/b-var/benchmarks/kernels/bench_kernels ]; then conf "$root" /tmp/b-base base & p1=$!; conf /tmp/var /tmp/b-var var & p2=$!; wait $p1 $p2; fi
echo "builds took $(( $(date +%s) - t0 )) s"
SPECBENCH_EXP_POLL_GAP=200 timeout 120 /tmp/b-var/tests/kernels/test_kernels_gpu > "$OUT/tests_var_gap200.log" 2>&1; echo "var gap200 gpu tests rc=$?"
SPECBENCH_EXP_POLL_GAP=60 timeout 60 /tmp/b-var/tests/kernels/test_kernels_gpu --gtest_filter='*Fused*' > "$OUT/tests_var_gap60.log" 2>&1; echo "var gap60 fused tests rc=$?"
f='^fused_greedy_bf16/B(1xN8|1xN16|8xN16)/(cold|warm)/iter|^read_once_fp32/fused_bytes/B1xN16/cold/iter'
run() { # name binary gap
  SPECBENCH_EXP_POLL_GAP=$3 timeout 90 "$2" --benchmark_filter="$f" 2>/dev/null | grep -E "^[a-z]" | awk -v n="$1" '{printf "%-10s %-70s %8s %s\n", n, $1, $2, $3}'
}
for r in 1 2 3; do
  run base /tmp/b-base/benchmarks/kernels/bench_kernels 0
  run var0 /tmp/b-var/benchmarks/kernels/bench_kernels 0
  run var100 /tmp/b-var/benchmarks/kernels/bench_kernels 100
  run var200 /tmp/b-var/benchmarks/kernels/bench_kernels 200
  run var400 /tmp/b-var/benchmarks/kernels/bench_kernels 400
done | tee "$OUT/ab.txt"
date -u +%FT%TZ
