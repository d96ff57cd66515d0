#!/usr/bin/env bash
# docs/tutorial.md's commands, run as written (every ```sh block in order, the first one's
# set-up replaced by this scratch directory) on the first 3000 rows of the bundled MovieLens
# ratings, so the tutorial cannot drift from the tools. Checks the files each step promises.
# Usage: tutorial_commands.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
src=$(realpath "$2")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir

ln -s "$src/configs" configs
ln -s "$src/samples" samples
mkdir work && cd work
head -3000 "$src/samples/movielens/ratings.csv" >ratings.csv
awk '/^ *```sh$/ { block++; inside = 1; next } /^ *```$/ { inside = 0; next }
     inside && block > 1 { sub(/^  /, ""); print }' "$src/docs/tutorial.md" >tutorial.sh
[[ $(grep -c '^nn-train' tutorial.sh) -ge 2 && $(grep -c '^nn-predict' tutorial.sh) -ge 2 ]] ||
  fail "tutorial blocks not found: $(cat tutorial.sh)"
PATH=$tools:$PATH bash -euo pipefail tutorial.sh >tutorial.log 2>&1 || fail "tutorial: $(tail -20 tutorial.log)"
for f in all.txt ratings.txt val_in.txt val_out.txt input.nc output.nc val_input.nc val_output.nc \
  features.idx samples.idx network.nc network.epochs.jsonl recs ratings.nc net.nc; do
  [[ -s $f ]] || fail "tutorial: $f not written"
done
grep -q '^validation after epoch 80 ' tutorial.log || fail "tutorial: no validation lines"
[[ $(wc -l <recs) == $(wc -l <ratings.txt) ]] || fail "tutorial: one recs line per training user"
echo "tutorial_commands: ok ($(wc -l <all.txt) users)"
