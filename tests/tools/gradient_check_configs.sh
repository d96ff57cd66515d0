#!/usr/bin/env bash
# The gradient check (CDL Command Validate, nn-train --validate) passes on every network on the
# configs/ shelf, each with its own network.json and MiniBatch lowered, on the tiny data of
# lib/config_data.sh, and on the man page's example (nn-train --validate ... -b 16) with the
# tutorial's recommender: the check must not cry wolf on a correct network whose float32 loss
# is large (tests/unit/train/gradient_check_test.cpp checks that it still flags a wrong one).
# Usage: gradient_check_configs.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
src=$(realpath "$2")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
source "$(dirname "$(realpath "$0")")/lib/config_data.sh"
enter_work_dir

for dir in "$src"/configs/*/; do
  name=$(basename "$dir")
  mkdir "$name"
  (
    cd "$name"
    config_data "$name"
    cp "$dir/network.json" .
    # The training command file as a Validate one, on 8 examples (the time goes into two
    # forward passes per checked entry).
    sed -E 's/"Command": "Train"/"Command": "Validate"/; s/"MiniBatch": [0-9]+/"MiniBatch": 8/' \
      "$dir/train.cdl" >validate.cdl
    "$tools/nn-train" validate.cdl --check-entries 60 >check.log 2>&1 ||
      fail "configs/$name: gradient check failed: $(grep -E 'FAIL|error' check.log)"
    grep -q '^gradient check passed: ' check.log || fail "configs/$name: $(tail -3 check.log)"
  )
  echo "configs/$name: gradient check passed"
done

# The man page's example on the tutorial's network and data (all 610 MovieLens users, as the
# tutorial has them): a loss of about 6700 per example, where fixed steps and tolerances failed.
mkdir movielens && cd movielens
awk -F, 'NR > 1 { items[$1] = items[$1] (items[$1] == "" ? "" : ":") $2 }
     END { for (u in items) print u "\t" items[u] }' "$src/samples/movielens/ratings.csv" |
  sort -n >ratings.txt
"$tools/nn-generate" -q -d input -i ratings.txt -o input.nc -f features.idx -s samples.idx -c
"$tools/nn-generate" -q -d output -i ratings.txt -o output.nc -f features.idx -s samples.idx
cp "$src/configs/recommender-autoencoder/network.json" config.json
"$tools/nn-train" --validate -c config.json -i input.nc -o output.nc -b 16 --check-entries 200 \
  >check.log 2>&1 || fail "man page example: $(grep -E 'FAIL|error' check.log)"
echo "nn-train --validate -c config.json -i input.nc -o output.nc -b 16: passed"
