#!/usr/bin/env bash
# Tree sampling 1 x 4 alone and after other cases, with lazy and eager module loading: is the
# 3.1-versus-3.6 us split where the driver put the kernel's code? Build: build-carry/$1.
set -u
C=$(pwd)/build-carry; export LD_LIBRARY_PATH=$C/lib
B=$C/${1:-main}/bench_kernels
t='^tree_sampling_fp32/B1xN4/cold/iter'
run() { # label filter loading
  for r in 1 2 3; do
    CUDA_MODULE_LOADING=$3 $B --benchmark_filter="$2" 2>/dev/null |
      grep -E '^tree_sampling_fp32/B1xN(4|8)/cold/iter|^read_once_fp32/tree/B1xN4/cold/iter|^chain_sampling_fp32/B1xK7/cold/iter|^fused_greedy_bf16/B1xN8/cold/iter' |
      sed 's@/iterations:[0-9]*/manual_time@@' | awk -v l="$1 $3" -v r=$r '{printf "%-14s r%s %-36s %s\n", l, r, $1, $2}'
  done
}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for m in LAZY EAGER; do
  run alone "$t" $m
  run ddt64 "^ddtree_build/B64/budget64/depth16/k64/masks/iter|$t" $m
  run f1x8 "^fused_greedy_bf16/B1xN8/cold/iter|$t" $m
  run t8 "^tree_sampling_fp32/B1xN8/cold/iter|$t" $m
  run chain "^chain_sampling_fp32/B1xK7/cold/iter|$t" $m
done
