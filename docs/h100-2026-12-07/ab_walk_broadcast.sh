#!/usr/bin/env bash
# A/B of the rows kernel with rank 0 alone walking and sending the result to its cluster
# (build-carry/$1, default bcast) against build-carry/main: the GPU tests of $1, then
# ctx_tree_gap.sh over both, then the other sampling cases (three interleaved runs).
set -u
d=$(cd "$(dirname "$0")" && pwd)
C=$(pwd)/build-carry; export LD_LIBRARY_PATH=$C/lib
X=${1:-bcast}
{ timeout 200 $C/$X/test_kernels_gpu; echo "test_kernels_gpu rc=$?"
  timeout 60 $C/$X/test_programmatic_launch; echo "test_programmatic_launch rc=$?"; } > "$OUT/tests_$X.log" 2>&1
grep -E "rc=|^\[  PASSED|^\[  FAILED|FAILED  \]" "$OUT/tests_$X.log"
GAPS=${GAPS:-own 256 4096 16384 65536} bash "$d/ctx_tree_gap.sh" main "$X" | tee "$OUT/gap.txt"
f='^tree_sampling_fp32/B(2xN4|1xN16|1xN8)/cold(/probs|/path)?/iter|^tree_sampling_fp32/B1xN4/cold/pdl|^chain_sampling_fp32/B1xK7/cold/iter'
for r in 1 2 3; do
  for b in main "$X"; do
    $C/$b/bench_kernels --benchmark_filter="$f" 2>/dev/null | grep -E '^[a-z]' |
      sed 's@/iterations:[0-9]*/manual_time@@' | awk -v r=$r -v b=$b '{printf "%-6s r%s %-40s %s\n", b, r, $1, $2}'
  done
done | sort -s -k3,3 -k1,1 | tee "$OUT/other.txt"
