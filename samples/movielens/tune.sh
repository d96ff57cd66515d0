#!/usr/bin/env bash
# Tunes the recommender configs with nn-tune on validation users carved from the ratings, trains
# the winner on every rating and writes <output-dir>/recs in run.sh's format (tune.py says how;
# docs/tuning.md). samples/movielens/run.sh stays the fast first result.
# Usage: samples/movielens/tune.sh [ratings.csv] [output-dir]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tools=${NN_TOOLS:-$root/build/src/tools}
if [ ! -x "$tools/nn-tune" ] || [ ! -x "$tools/nn-train" ]; then
  bash "$root/scripts/setup.sh"
fi
NN_TOOLS=$tools exec python3 "$here/tune.py" "$@"
