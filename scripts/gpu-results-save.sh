#!/usr/bin/env bash
# Keeps a GPU check's results as data in the repository (docs/gpu-results/README.md): copies
# results.tsv and bench.jsonl from the check's output folder (the device tool's files, or
# NN_CHECK_OUT) to docs/gpu-results/<date>-<card>-results.tsv and <date>-<card>-bench.jsonl, the
# date being the check's (UTC) and the card the short name the check wrote ("h200"). A second run
# on the same day and card gets a suffix (-2, -3, ...) instead of overwriting the first.
#
# Usage: scripts/gpu-results-save.sh CHECK_OUT_DIR     (prints the paths written)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=${1:?usage: gpu-results-save.sh CHECK_OUT_DIR}
die() { echo "gpu-results-save: error: $*" >&2; exit 1; }
[ -f "$src/results.tsv" ] || die "$src/results.tsv: no such file (not a GPU check's output folder?)"
card=$(cat "$src/card" 2> /dev/null || echo unknown)
[[ $card =~ ^[a-z0-9-]+$ ]] || die "$src/card: '$card' is not a short card name"
# The check's date: the report's title line, "# GPU check (2026-11-28 14:02 UTC)".
date=$(sed -n '1s/^# GPU check (\([0-9-]*\) .*/\1/p' "$src/report.md" 2> /dev/null)
date=${date:-$(date -u +%F)}
dest=$root/docs/gpu-results
mkdir -p "$dest"
base=$date-$card
n=1
while [ -e "$dest/$base-results.tsv" ]; do
  n=$((n + 1))
  base=$date-$card-$n
done
cp "$src/results.tsv" "$dest/$base-results.tsv"
echo "$dest/$base-results.tsv"
if [ -s "$src/bench.jsonl" ]; then
  cp "$src/bench.jsonl" "$dest/$base-bench.jsonl"
  echo "$dest/$base-bench.jsonl"
fi
