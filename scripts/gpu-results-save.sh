#!/usr/bin/env bash
# Keeps a GPU check's results as data in the repository (docs/gpu-results/README.md): copies
# results.tsv and bench.jsonl from a call's output folder (the device tool's files, or
# NN_CHECK_OUT) to docs/gpu-results/<date>-<card>-call<N>-results.tsv and -bench.jsonl, the date
# being the check's (UTC), the card the short name the check wrote ("h200") and N the call, all
# read from its meta.json (older folders: the files card and report.md). A second run on the same
# day, card and call gets a suffix (-2, -3, ...) instead of overwriting the first.
#
# Usage: scripts/gpu-results-save.sh CHECK_OUT_DIR     (prints the paths written)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=${1:?usage: gpu-results-save.sh CHECK_OUT_DIR}
die() { echo "gpu-results-save: error: $*" >&2; exit 1; }
[ -f "$src/results.tsv" ] || die "$src/results.tsv: no such file (not a GPU check's output folder?)"
meta() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], ""))' "$src/meta.json" "$1" 2> /dev/null || true; }
card=$(meta card)
[ -n "$card" ] || card=$(cat "$src/card" 2> /dev/null || echo unknown)
call=$(meta call)
[[ $card =~ ^[a-z0-9-]+$ ]] || die "'$card' is not a short card name"
# The check's date: the report's title line, "# GPU check, call 1: correctness (2026-12-08 14:02 UTC)".
date=$(sed -n '1s/^# GPU check.*(\([0-9-]*\) .*/\1/p' "$src/report.md" 2> /dev/null)
date=${date:-$(date -u +%F)}
dest=$root/docs/gpu-results
mkdir -p "$dest"
base=$date-$card${call:+-call$call}
stem=$base
n=1
while [ -e "$dest/$stem-results.tsv" ]; do
  n=$((n + 1))
  stem=$base-$n
done
cp "$src/results.tsv" "$dest/$stem-results.tsv"
echo "$dest/$stem-results.tsv"
if [ -s "$src/bench.jsonl" ]; then
  cp "$src/bench.jsonl" "$dest/$stem-bench.jsonl"
  echo "$dest/$stem-bench.jsonl"
fi
