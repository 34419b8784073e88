#!/usr/bin/env bash
# A/B of the rows kernel's prologue (SamplingArgs' first 48 bytes, loads before the cluster
# set-up and the seed) against HEAD, both sm_90 Release binaries built on the CPU machine and
# carried in build-carry/{head,exp}: the GPU tests on exp, three interleaved runs of the sampling
# cases, then probe_cluster_launch twice (with the rows kernel's own load pattern), then the warp-stall profile of exp's rows kernel and of read-once at 1 x 4. Any GPU.
set -u
C=$(pwd)/build-carry
export LD_LIBRARY_PATH=$C/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{ date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  /usr/local/cuda/bin/nvcc --version | tail -1; } > "$OUT/gpu.txt"
{ timeout 120 $C/exp/test_kernels_gpu; echo "test_kernels_gpu rc=$?"
  timeout 60 $C/exp/test_programmatic_launch; echo "test_programmatic_launch rc=$?"; } > "$OUT/tests_exp.log" 2>&1
grep -E "rc=|PASSED|FAILED" "$OUT/tests_exp.log"
f='^tree_sampling_fp32/B(1xN4|1xN8|2xN4|1xN16)/cold(/probs)?/iter|^read_once_fp32/tree/B(1xN4|1xN8)/cold/iter|^chain_sampling_fp32/B1xK7/cold/iter|^read_once_fp32/chain/B1xK7/cold/iter'
for r in 1 2 3; do
  for b in head exp; do
    timeout 90 $C/$b/bench_kernels --benchmark_filter="$f" 2>/dev/null | grep -E "^[a-z]" |
      awk -v n="r$r" -v b="$b" '{printf "%-3s %-5s %-62s %8s %s\n", n, b, $1, $2, $3}'
  done
done > "$OUT/ab.txt"
sort -k3,3 -k2,2 -k1,1 "$OUT/ab.txt" | sed 's@/iterations:[0-9]*/manual_time@@'
for r in 1 2; do timeout 60 $C/probe/probe_cluster_launch; done > "$OUT/probe_cluster_launch.txt" 2>&1
s=$(mktemp -d)
timeout 150 scripts/profile_kernel_stalls.sh $C/exp/bench_kernels '^tree_sampling_fp32/B1xN4/cold/iter' \
  tree_rows "$s/rows" > /dev/null 2>&1; cp "$s/rows/stalls.txt" "$OUT/stalls_rows_exp.txt"
/usr/local/cuda/bin/cuobjdump -sass $C/exp/bench_kernels 2>/dev/null |
  awk '/Function : .*tree_rows/{p=1} /Function : /&&!/tree_rows/{p=0} p' | head -400 > "$OUT/sass_rows_exp.txt"
timeout 150 scripts/profile_kernel_stalls.sh $C/exp/bench_kernels '^read_once_fp32/tree/B1xN4/cold/iter' \
  read_once "$s/ro" > /dev/null 2>&1; cp "$s/ro/stalls.txt" "$OUT/stalls_read_once.txt"
head -30 "$OUT/stalls_rows_exp.txt"; head -30 "$OUT/stalls_read_once.txt"
