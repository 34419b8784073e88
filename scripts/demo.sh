#!/usr/bin/env bash
# The main job: build specbench and plan the demo sweep.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh "$@"
build/bin/specbench plan configs/demo.yaml
