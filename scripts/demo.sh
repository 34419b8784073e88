#!/usr/bin/env bash
# The main job: build specbench, show the demo sweep's plan, run it end to end on the simulated
# server (synthetic model, any machine, no GPU needed) and end with its report.
# Results go to results/demo/ (report files in results/demo/report/). Running it again resumes:
# finished cells are kept; `build/bin/specbench run configs/demo.yaml --fresh` measures anew.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh "$@"
bin=${SPECBENCH_BUILD_DIR:-build}/bin/specbench
"$bin" plan configs/demo.yaml
echo
"$bin" run configs/demo.yaml
