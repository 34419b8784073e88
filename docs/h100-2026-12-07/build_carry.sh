#!/usr/bin/env bash
# Builds what ab_rows.sh and call_rows_ab.sh carry to the GPU machine, on the CPU machine: sm_90
# Release binaries of the kernels before the prologue change (build-carry/head; BASE, default
# e3521f2~1, the run of 07:44 UTC), of BASE with rows_prologue.patch (exp: the kernels of
# e3521f2) and with rows_pairs.patch on top (exp2), probe_cluster_launch (probe) and Google
# Benchmark's shared library (lib; the GPU machine's image has another version). About 3 minutes
# on 2 cores.
set -eu
root=$(git rev-parse --show-toplevel)
base=${BASE:-e3521f2~1}
d=$root/docs/h100-2026-12-07
tmp=$(mktemp -d)
wt=$tmp/src b=$tmp/build C=$root/build-carry
git -C "$root" worktree add -q --detach "$wt" "$base"
trap 'git -C "$root" worktree remove --force "$wt"; rm -rf "$tmp"' EXIT
cmake -S "$wt" -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DSPECBENCH_BUILD_EXAMPLES=OFF > "$tmp/configure.log"
mkdir -p "$C"/{head,exp,exp2,probe,lib}
take() {
  ninja -C "$b" bench_kernels test_kernels_gpu test_programmatic_launch > "$tmp/build_$1.log"
  cp "$b/benchmarks/kernels/bench_kernels" "$b/tests/kernels/test_kernels_gpu" \
    "$b/tests/kernels/test_programmatic_launch" "$C/$1/"
}
ninja -C "$b" probe_cluster_launch > "$tmp/build_probe.log"
cp "$b/benchmarks/kernels/probe_cluster_launch" "$C/probe/"
take head
git -C "$wt" apply "$d/rows_prologue.patch"
take exp
git -C "$wt" apply "$d/rows_pairs.patch"
take exp2
cp -L /lib/x86_64-linux-gnu/libbenchmark.so.1debian "$C/lib/"
du -sh "$C"
