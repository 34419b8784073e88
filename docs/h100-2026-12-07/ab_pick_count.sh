#!/usr/bin/env bash
# A/B of the sampling kernels on any GPU: main (HEAD's kernels) against exp (pick_count.patch:
# the in-segment pick counts the prefixes at or under the target as a tree instead of a chain
# of 32 selects; the rows kernel takes its key from lane 31's own scan). The GPU tests of exp,
# then RUNS (default 4) interleaved runs of the sampling cases and their read-once references,
# then the SASS of both builds' rows kernels; on an H200 with FULL=1, the whole suite of exp
# once. Packed into all.tar.gz after each step.
set -u
C=$(pwd)/build-carry
export LD_LIBRARY_PATH=$C/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
final=$OUT; export OUT=$(mktemp -d)
pack() { tar -C "$OUT" -czf "$final/all.tar.gz" .; }
{ date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  /usr/local/cuda/bin/nvcc --version | tail -1; } > "$OUT/gpu.txt"
cat "$OUT/gpu.txt"
{ timeout 120 $C/exp/test_kernels_gpu; echo "test_kernels_gpu rc=$?"
  timeout 60 $C/exp/test_programmatic_launch; echo "test_programmatic_launch rc=$?"; } > "$OUT/tests_exp.log" 2>&1
grep -E "rc=|^\[  PASSED|^\[  FAILED|FAILED  \]" "$OUT/tests_exp.log"
pack
f='^tree_sampling_fp32/B(1xN4|1xN8|2xN4|1xN16|8xN16|64xN64)/cold(/path|/tree_4k_apart)?/iter|^read_once_fp32/tree/B(1xN4|1xN8|2xN4)/cold/iter|^chain_sampling_fp32/B(1xK7|8xK15)/cold/iter|^read_once_fp32/chain/B1xK7/cold/iter'
for r in $(seq 1 "${RUNS:-4}"); do
  for b in main exp; do
    timeout 90 $C/$b/bench_kernels --benchmark_filter="$f" 2>/dev/null | grep -E "^[a-z]" |
      awk -v n="r$r" -v b="$b" '{printf "%-3s %-5s %-62s %8s %s\n", n, b, $1, $2, $3}'
  done
done > "$OUT/ab.txt"
sort -s -k3,3 -k2,2 -k1,1 "$OUT/ab.txt" | sed 's@/iterations:[0-9]*/manual_time@@'
pack
for b in main exp; do
  /usr/local/cuda/bin/cuobjdump -sass $C/$b/bench_kernels 2>/dev/null |
    awk '/Function : .*tree_rows/{p=1} /Function : /&&!/tree_rows/{p=0} p' > "$OUT/sass_rows_$b.txt"
done
wc -l "$OUT"/sass_rows_*.txt
pack
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && [ -n "${FULL:-}" ]; then
  timeout 240 $C/exp/bench_kernels --benchmark_out="$OUT/bench_full_exp.json" --benchmark_out_format=json > "$OUT/bench_full_exp.txt" 2>&1
  echo "full suite rc=$?"
  pack
fi
