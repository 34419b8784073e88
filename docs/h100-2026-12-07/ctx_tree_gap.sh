#!/usr/bin/env bash
# Tree sampling with the tree's tokens N bytes after its parents in one allocation
# (SPECBENCH_BENCH_TREE_GAP), for each build named (build-carry/<name>, default main), interleaved,
# RUNS runs (default 2). The read-once reference runs in the same processes. "own": the variable
# unset: before 09:05 UTC on 2026-12-07 parents and tokens then had two allocations, wherever the
# driver put them (the last column says how far apart); since, the bench's default, 512 B apart.
set -u
C=$(pwd)/build-carry; export LD_LIBRARY_PATH=$C/lib
builds=${*:-main}
t='^tree_sampling_fp32/B1xN(4|8)/cold/iter|^read_once_fp32/tree/B1xN(4|8)/cold/iter'
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for gap in ${GAPS:-own 256 1024 4096 8192 16384 65536 1048576}; do
  for r in $(seq 1 "${RUNS:-2}"); do
    for b in $builds; do
      SPECBENCH_BENCH_TREE_GAP=${gap#own} $C/$b/bench_kernels --benchmark_filter="$t" 2>/dev/null |
        grep -E '^tree_sampling|^read_once' | sed 's@/iterations:[0-9]*/manual_time@@' |
        awk -v g="$gap" -v r=$r -v b=$b '{d = ""; for (i = 1; i < NF; ++i) if ($i == "tokens" && $(i + 2) == "B") d = $(i + 1);
          printf "%-8s %-9s r%s %-32s %s %s\n", g, b, r, $1, $2, d}'
    done
  done
done | sort -s -k4,4 -k1,1n
