#!/usr/bin/env bash
# The short version of scripts/flip_sweep.sh: one damaged byte at a time in a network file, a
# checkpoint and a dataset written by the tools, 3 positions of each class (header, metadata,
# data, checksum trailer) per kind. Every run must end with a clear error (exit status 1, no
# result file) or, where the byte is not used, with the intact file's result: never a signal,
# a hang or a result computed from damaged data. Some seconds. The 10-minute runs are in
# docs/reliability.md.
# Usage: reliability_flip_sweep.sh <tool-dir> <source-dir>
set -euo pipefail
exec python3 "$2/scripts/flip_sweep.py" --tools "$1" --positions 12 --seed "${NN_FLIP_SEED:-$RANDOM}"
