#!/usr/bin/env bash
# One device call on any GPU (2026-12-07, afternoon): the goal cases of build-carry/main
# (goal_cases_bin.sh, three runs; on an H200 that is the goal reading), then the cases that moved
# to place_tree last (the greedy walk from target tokens and the fused greedy call after the LM
# head's GEMM), build-carry/before (their two allocations, fbbaca7) against build-carry/main
# (one allocation, tokens 512 B after parents, or SPECBENCH_BENCH_TREE_GAP bytes), interleaved,
# two runs each. Everything is packed into all.tar.gz after each step.
set -u
d=$(cd "$(dirname "$0")" && pwd)
final=$OUT
export OUT=$(mktemp -d)
pack() { tar -C "$OUT" -czf "$final/all.tar.gz" .; }
mkdir -p "$OUT/goal"
OUT=$OUT/goal ANY_GPU=1 RUNS=${RUNS:-3} bash "$d/goal_cases_bin.sh" main | tail -40
pack
C=$(pwd)/build-carry; export LD_LIBRARY_PATH=$C/lib
t='^walk_ours/|^after_lm_head/(fused_greedy_bf16|read_once_fp32/fused_bytes)/B1xN(8|16)/iter'
for gap in ${GAPS:-own 4096 65536}; do
  for r in 1 2; do
    for b in before main; do
      [ "$b" = before ] && [ "$gap" != own ] && continue # before has no placement to vary
      SPECBENCH_BENCH_TREE_GAP=${gap#own} timeout 120 $C/$b/bench_kernels --benchmark_filter="$t" 2>/dev/null |
        grep -E '^(walk|after)' | sed 's@/iterations:[0-9]*/manual_time@@' |
        awk -v g="$gap" -v r=$r -v b=$b '{printf "%-6s %-7s r%s %-52s %s %s\n", g, b, r, $1, $2, $3}'
    done
  done
done | sort -s -k4,4 -k1,1 > "$OUT/placement.txt"
cat "$OUT/placement.txt"
pack
