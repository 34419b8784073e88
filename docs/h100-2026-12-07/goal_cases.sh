#!/usr/bin/env bash
# HEAD's kernels (build-carry/head) on an H200 only (ANY_GPU=1: any GPU, for relative readings):
# GPU tests, then the goal cases five times (RUNS=N), the whole suite once with FULL=1. The run
# of 03:41 UTC used this script's first form; goal_cases_bin.sh is the same steps for any build.
exec bash "$(dirname "$0")/goal_cases_bin.sh" head
