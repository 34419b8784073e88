#!/usr/bin/env bash
# One device call: the rows A/B/C (ab_rows.sh: HEAD, the prologue patch, the prologue and pairs
# patches), then on an H200 the goal cases (goal_cases_bin.sh) on the build named by GOAL_BIN
# (default exp2), then the stall profile. Every file goes into one archive, packed again after
# each step so that a call cut short keeps what it measured ($OUT keeps few files). SHORT=1: the
# A/B/C alone, with the sampling tests only and fewer runs.
set -u
d=$(cd "$(dirname "$0")" && pwd)
final=$OUT
export OUT=$(mktemp -d)
pack() { tar -C "$OUT" -czf "$final/all.tar.gz" .; }
if [ -n "${SHORT:-}" ]; then # little device time left: the A/B/C alone, fewer runs
  TEST_FILTER='*Sampling*' RUNS=2 PROBE_RUNS=1 bash "$d/ab_rows.sh" 2>&1 | tee "$OUT/ab_stdout.txt"
  pack
  exit 0
fi
bash "$d/ab_rows.sh" 2>&1 | tee "$OUT/ab_stdout.txt" | head -120
pack
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  mkdir -p "$OUT/goal"
  OUT=$OUT/goal bash "$d/goal_cases_bin.sh" "${GOAL_BIN:-exp2}" | tail -60
  pack
fi
PROFILE=1 bash "$d/ab_rows.sh" 2>&1 | tee "$OUT/profile_stdout.txt"
pack
