#!/usr/bin/env bash
# A/B/C of the tree sampling kernels on any GPU, after ab_pick_count.sh: before (the kernels of
# 874469d), lane31 (874469d + rows_key_lane31.patch: the rows kernel's key from lane 31's own
# scan, nothing else) and landed (a985d2f: that, and the counted pick in the rows kernel only).
# The GPU tests of lane31 and landed, then RUNS (default 4) interleaved runs of the sampling
# cases; on an H200, landed's goal cases too (goal_cases_bin.sh, three runs). Packed into
# all.tar.gz after each step. BUILDS (default "before lane31 landed") and TESTED (default
# "lane31 landed") shorten a call.
set -u
d=$(cd "$(dirname "$0")" && pwd)
C=$(pwd)/build-carry
export LD_LIBRARY_PATH=$C/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
final=$OUT; export OUT=$(mktemp -d)
pack() { tar -C "$OUT" -czf "$final/all.tar.gz" .; }
{ date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  /usr/local/cuda/bin/nvcc --version | tail -1; } > "$OUT/gpu.txt"
cat "$OUT/gpu.txt"
for b in ${TESTED:-lane31 landed}; do
  { timeout 120 $C/$b/test_kernels_gpu; echo "test_kernels_gpu rc=$?"
    timeout 60 $C/$b/test_programmatic_launch; echo "test_programmatic_launch rc=$?"; } > "$OUT/tests_$b.log" 2>&1
  echo "$b:"; grep -E "rc=|^\[  PASSED|^\[  FAILED|FAILED  \]" "$OUT/tests_$b.log"
done
pack
f='^tree_sampling_fp32/B(1xN4|1xN8|2xN4|1xN16)/cold(/path|/tree_4k_apart)?/iter|^read_once_fp32/tree/B(1xN4|1xN8|2xN4)/cold/iter|^chain_sampling_fp32/B1xK7/cold/iter|^read_once_fp32/chain/B1xK7/cold/iter'
for r in $(seq 1 "${RUNS:-4}"); do
  for b in ${BUILDS:-before lane31 landed}; do
    timeout 90 $C/$b/bench_kernels --benchmark_filter="$f" 2>/dev/null | grep -E "^[a-z]" |
      awk -v n="r$r" -v b="$b" '{printf "%-3s %-6s %-62s %8s %s\n", n, b, $1, $2, $3}'
  done
done > "$OUT/ab.txt"
sed 's@/iterations:[0-9]*/manual_time@@' "$OUT/ab.txt" |
  awk '{k = $3 " " $2; v[k] = v[k] " " $4} END {for (k in v) print k, v[k]}' | sort
pack
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  mkdir -p "$OUT/goal"
  OUT=$OUT/goal RUNS=3 bash "$d/goal_cases_bin.sh" landed | tail -45
  pack
fi
