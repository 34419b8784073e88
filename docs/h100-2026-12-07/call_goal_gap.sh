#!/usr/bin/env bash
# One device call on any GPU: the goal cases of build-carry/main (goal_cases_bin.sh, three runs),
# the parents-to-tokens distance sweep (ctx_tree_gap.sh) and the phase stamps of tree sampling
# 1 x 4 with the tree 256 B and 4 KiB apart (build-carry/stamps), all packed into all.tar.gz
# after each step.
set -u
d=$(cd "$(dirname "$0")" && pwd)
final=$OUT
export OUT=$(mktemp -d)
pack() { tar -C "$OUT" -czf "$final/all.tar.gz" .; }
mkdir -p "$OUT/goal"
OUT=$OUT/goal ANY_GPU=1 RUNS=${RUNS:-3} bash "$d/goal_cases_bin.sh" main | tail -40
pack
GAPS="own 256 4096 16384 65536" bash "$d/ctx_tree_gap.sh" main > "$OUT/gap.txt" 2>&1
grep -v read_once "$OUT/gap.txt"
pack
export LD_LIBRARY_PATH=$(pwd)/build-carry/lib
timeout 120 build-carry/stamps/probe_phase_stamps > "$OUT/stamps.txt" 2>&1
awk '/^== tree sampling fp32 1 x 4/{p=1; print; next} /^== /{p=0} p && /stamp 2|in p50|last: end|span/' "$OUT/stamps.txt"
pack
