#!/usr/bin/env bash
# Warp-stall profile of one kernel under Nsight Compute, per SASS instruction, summarised by
# scripts/ncu_stalls.py. Clocks are left as they are (--clock-control none): specbench never
# changes a GPU's settings.
#   scripts/profile_kernel_stalls.sh BENCH_BINARY BENCHMARK_FILTER KERNEL_REGEX [OUT_DIR]
# e.g. scripts/profile_kernel_stalls.sh build/benchmarks/kernels/bench_kernels \
#        'fused_greedy_bf16/B1xN16/cold' fused_greedy prof-out
set -euo pipefail
if (($# < 3)); then
  sed -n '2,7p' "$0" >&2
  exit 2
fi
bin=$1 filter=$2 kernel=$3 out=${4:-stall-profile}
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
if [[ ! -x $ncu ]]; then
  echo "profile_kernel_stalls: Nsight Compute (ncu) not found; it ships with the CUDA toolkit" >&2
  exit 2
fi
mkdir -p "$out"
rm -f "$out/profile.ncu-rep" "$out/source.csv.gz" "$out/stalls.txt" # never summarise a stale run
# Skip the first launches (graph capture, warm-up), then sample every 32 cycles.
"$ncu" --clock-control none -k "regex:$kernel" --launch-skip 40 --launch-count 10 \
  --warp-sampling-interval 0 --section WarpStateStats --section SourceCounters \
  -f -o "$out/profile" "$bin" --benchmark_filter="$filter" >"$out/ncu.log" 2>&1 ||
  { tail -20 "$out/ncu.log" >&2; exit 1; }
if [[ ! -f $out/profile.ncu-rep ]]; then
  echo "profile_kernel_stalls: nothing was profiled: no benchmark matched '$filter' or no launch" \
    "of a kernel matching '$kernel' came after the first 40 (ncu's log: $out/ncu.log)" >&2
  exit 1
fi
"$ncu" -i "$out/profile.ncu-rep" --page source --csv --print-source sass |
  gzip >"$out/source.csv.gz"
python3 "$(dirname "$0")/ncu_stalls.py" "$out/source.csv.gz" --rare 16 | tee "$out/stalls.txt"
