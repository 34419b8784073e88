#!/usr/bin/env bash
# Where the warps of tree sampling 1 x 4 (the "rows" kernel) wait: an Nsight Compute warp-state
# profile per SASS instruction of HEAD's bench_kernels (build-carry/head), and the same for the
# read-once kernel of the same bytes; also the rows kernel's SASS. Any GPU (the card is recorded).
set -u
C=$(pwd)/build-carry
export LD_LIBRARY_PATH=$C/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/gpu_stalls.txt"
timeout 200 scripts/profile_kernel_stalls.sh $C/head/bench_kernels \
  '^tree_sampling_fp32/B1xN4/cold/iter' tree_rows "$OUT/stalls_rows_1x4" > /dev/null 2>&1
echo "rows profile rc=$?" >> "$OUT/gpu_stalls.txt"
timeout 200 scripts/profile_kernel_stalls.sh $C/head/bench_kernels \
  '^read_once_fp32/tree/B1xN4/cold/iter' read_once "$OUT/stalls_read_once_1x4" > /dev/null 2>&1
echo "read-once profile rc=$?" >> "$OUT/gpu_stalls.txt"
rm -f "$OUT"/stalls_*/profile.ncu-rep
cuobjdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
$cuobjdump -sass $C/head/bench_kernels 2>/dev/null | awk '/Function : .*tree_rows/{p=1} /Function : /&&!/tree_rows/{p=0} p' \
  | gzip > "$OUT/sass_tree_rows.txt.gz"
cat "$OUT/gpu_stalls.txt"; head -60 "$OUT/stalls_rows_1x4/stalls.txt" 2>/dev/null
