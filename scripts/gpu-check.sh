#!/usr/bin/env bash
# The GPU check: scripts/gpu_check/main.py (Python: the plan, the steps and their verdicts).
# Kept under this name because every doc and report cites it; `--help` says everything.
#   scripts/gpu-check.sh --bundle out/gpu-bundle/nn-gpu-bundle.tar.xz --call 1   (correctness)
#   scripts/gpu-check.sh --bundle out/gpu-bundle/nn-gpu-bundle.tar.xz --call 2   (speed)
exec python3 "$(dirname "$(readlink -f "$0")")/gpu_check/main.py" "$@"
