#!/usr/bin/env bash
# Recommendation quality on held-out users, one command and one table (docs/quality.md): the
# protocol of Liang et al. 2018 on a MovieLens ratings CSV (default: the bundled ml-latest-small),
# popularity, EASE, the PyTorch Mult-DAE and Mult-VAE, and this suite's shipped recommender
# networks trained with nn-train and scored with nn-predict, every row by the same code.
# Usage: scripts/bench_quality.sh [ratings.csv] [bench_quality.py options...]
#   e.g. scripts/bench_quality.sh ml-20m/ratings.csv (one fold of 10,000 test users, as the paper)
#        scripts/bench_quality.sh --methods popularity,ease
# NN_TOOLS overrides the tool directory (default build/src/tools, built by scripts/setup.sh when
# missing). The table goes to stdout, the progress (per fold, per method) to stderr.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools=${NN_TOOLS:-$root/build/src/tools}
if [ ! -x "$tools/nn-train" ] || [ ! -x "$tools/nn-predict" ] || [ ! -x "$tools/nn-generate" ]; then
  bash "$root/scripts/setup.sh" >&2
fi
export NN_TOOLS=$tools
args=()
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  args+=("$(realpath "$1")")
  shift
fi
exec /usr/bin/python3 "$root/scripts/bench_quality.py" "${args[@]}" "$@"
