#!/usr/bin/env bash
# One device call for the landed kernels (build-carry/landed = a985d2f's, build-carry/before =
# 874469d's) on an H200 only; on any other GPU it runs nothing (exit 3), so that a call that
# gets an H100 costs only its start. On an H200: ab_pick_split.sh (GPU tests of landed, three
# interleaved runs of the sampling cases against before, the goal cases three times through
# goal_cases_bin.sh, which with FULL=1 in the environment also runs the whole suite once), all
# in $OUT/all.tar.gz.
set -u
d=$(cd "$(dirname "$0")" && pwd)
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "not an H200: nothing run"
  exit 3
fi
RUNS=3 BUILDS="before landed" TESTED=landed bash "$d/../h100-2026-12-07/ab_pick_split.sh"
