#!/usr/bin/env bash
# Does where the tree lies move fused greedy 1 x 8 and 1 x 16 as it moved e3521f2's sampling
# kernel? build-carry/main (the bench before place_tree: parents and tokens in two allocations)
# against build-carry/fusedgap (place_tree: tokens SPECBENCH_BENCH_TREE_GAP bytes after parents,
# 512 by default), alone and after the deployed path's 1 x 8 case, two interleaved runs.
set -u
C=$(pwd)/build-carry; export LD_LIBRARY_PATH=$C/lib
t='^fused_greedy_bf16/B1xN(8|16)/cold/iter|^read_once_fp32/fused_bytes/B1xN(8|16)/cold/iter'
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for gap in default 4096 8192 65536; do
  for r in 1 2; do
    for b in main fusedgap; do
      [ $b = main ] && [ $gap != default ] && continue
      SPECBENCH_BENCH_TREE_GAP=${gap#default} $C/$b/bench_kernels --benchmark_filter="$t" 2>/dev/null |
        grep -E '^fused|^read_once' | sed 's@/iterations:[0-9]*/manual_time@@' |
        awk -v g=$gap -v r=$r -v b=$b '{printf "%-8s %-9s r%s %-40s %s\n", g, b, r, $1, $2}'
    done
  done
done | sort -s -k4,4 -k1,1
for r in 1 2; do
  for b in main fusedgap; do
    $C/$b/bench_kernels --benchmark_filter='^deployed_greedy/B1xN8/cold|^fused_greedy_bf16/B1xN16/cold/iter' 2>/dev/null |
      grep -E '^fused' | sed 's@/iterations:[0-9]*/manual_time@@' |
      awk -v r=$r -v b=$b '{printf "after_deployed %-9s r%s %-40s %s\n", b, r, $1, $2}'
  done
done
