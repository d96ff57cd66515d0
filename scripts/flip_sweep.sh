#!/usr/bin/env bash
# Byte-flip sweep over the files the tools write (docs/reliability.md, "Damaged files"): for each
# kind of file (a network file read by nn-predict, a checkpoint read by nn-train --resume, a
# dataset read by nn-train), damage one byte at a time and check that every run ends with a
# clear error or with the intact file's result, never a signal, a hang or a silent use of the
# damaged data. Runs beside scripts/fuzz.sh, on the Release tools in build/.
#   scripts/flip_sweep.sh [SECONDS] [KIND...]     (default 600 s each; kinds network,
#                                                  checkpoint, dataset)
# Environment: NN_BUILD_DIR (default build), NN_FLIP_SEED (default 1), NN_FLIP_JSON (a file for
# the counts as JSON). Prints the counts per kind and class; exit status 1 on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
kinds=$(IFS=,; echo "${*:-network,checkpoint,dataset}")
build=${NN_BUILD_DIR:-build}
[ -x "$build/src/tools/nn-train" ] || { echo "flip_sweep.sh: build the tools first (scripts/setup.sh)" >&2; exit 2; }
args=(--tools "$build/src/tools" --seconds "$seconds" --kinds "$kinds" --seed "${NN_FLIP_SEED:-1}")
[ -n "${NN_FLIP_JSON:-}" ] && args+=(--json "$NN_FLIP_JSON")
exec python3 scripts/flip_sweep.py "${args[@]}"
