#!/usr/bin/env bash
# Rows-kernel builds at fixed distances between the tree's parents and tokens
# (SPECBENCH_BENCH_TREE_GAP) and after another case (DDTree B 64), interleaved, two runs:
# build-carry/main against the builds named (default prefix: main with kernels/verify_sampling.cu
# of e3521f2~1, before the prologue change). With TESTS=name, that build's GPU tests first.
set -u
d=$(cd "$(dirname "$0")" && pwd)
C=$(pwd)/build-carry; export LD_LIBRARY_PATH=$C/lib
builds="main ${*:-prefix}"
if [ -n "${TESTS:-}" ]; then
  { timeout 200 $C/$TESTS/test_kernels_gpu; echo "test_kernels_gpu rc=$?"
    timeout 60 $C/$TESTS/test_programmatic_launch; echo "test_programmatic_launch rc=$?"; } > "$OUT/tests_$TESTS.log" 2>&1
  grep -E "rc=|^\[  PASSED|^\[  FAILED|FAILED  \]" "$OUT/tests_$TESTS.log"
fi
GAPS=${GAPS:-own 4096 65536} bash "$d/ctx_tree_gap.sh" $builds
t='^tree_sampling_fp32/B(1xN4|1xN8|2xN4)/cold(/probs)?/iter|^tree_sampling_fp32/B1xN16/cold/iter|^chain_sampling_fp32/B1xK7/cold/iter'
for r in 1 2; do
  for b in $builds; do
    $C/$b/bench_kernels --benchmark_filter="^ddtree_build/B64/budget64/depth16/k64/masks/iter|$t" 2>/dev/null |
      grep -E '^tree|^chain' | sed 's@/iterations:[0-9]*/manual_time@@' |
      awk -v r=$r -v b=$b '{printf "after_ddtree %-9s r%s %-36s %s\n", b, r, $1, $2}'
  done
done | sort -s -k4,4
