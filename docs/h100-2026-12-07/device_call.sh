#!/usr/bin/env bash
# One device call: the cluster-launch probe three times, then on an H200 the goal cases
# (goal_cases.sh) and the stall profile of tree sampling 1 x 4 (rows_stalls.sh); on any other card
# the stall profile and three goal-case runs only, labelled with the card.
set -u
d=$(dirname "$0")
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/probe_cluster_launch.txt"
for r in 1 2 3; do timeout 60 build-carry/probe/probe_cluster_launch >> "$OUT/probe_cluster_launch.txt" 2>&1; done
cat "$OUT/probe_cluster_launch.txt"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash "$d/goal_cases.sh"
  bash "$d/rows_stalls.sh"
else
  bash "$d/rows_stalls.sh"
  ANY_GPU=1 RUNS=3 bash "$d/goal_cases.sh"
fi
