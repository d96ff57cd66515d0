#!/usr/bin/env bash
# nn-train --sparse-update (docs/wide-outputs.md, "Row-sparse input updates") at tool level: the
# log says how the sparse input's matrix is updated; with SGD the row-sparse network equals the
# dense one's (the same recommendations, score for score); the CDL key and its override line;
# a bad value is refused naming the choices.
# Usage: train_sparse_update.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir

tiny_ratings
tiny_datasets "$tools"
tiny_config
train=("$tools/nn-train" -c config.json -i input.nc -o output.nc -e 2 -b 8 --seed 5 --backend cpu
  --threads 1 --lambda 0)

"${train[@]}" -n dense.nc --optimizer SGD --sparse-update dense 2>dense.log || fail "dense run: $(tail -3 dense.log)"
! grep -q 'row-sparse' dense.log || fail "a row-sparse line with --sparse-update dense"
"${train[@]}" -n rows.nc --optimizer SGD 2>rows.log || fail "default run: $(tail -3 rows.log)"
grep -q '^row-sparse update of Hidden<-Input:weights (Exact: equal to the dense update)$' rows.log ||
  fail "no row-sparse line: $(head -5 rows.log)"
for net in dense rows; do
  "$tools/nn-predict" -n $net.nc -r ratings.txt -i features.idx -o features.idx -k 5 >$net.recs \
    2>$net.predict.log ||
    fail "predict $net: $(tail -2 $net.predict.log)"
done
cmp -s dense.recs rows.recs || fail "SGD row-sparse recommendations differ from the dense ones"

# Adam keeps the dense update in Exact mode and says why; Lazy takes the rows.
"${train[@]}" -n adam.nc --optimizer Adam 2>adam.log || fail "adam run"
grep -q "^dense update of Hidden<-Input:weights: Adam's skipped steps have no closed form" adam.log ||
  fail "no reason for Adam's dense update: $(head -5 adam.log)"
"${train[@]}" -n lazy.nc --optimizer Adam --sparse-update LAZY 2>lazy.log || fail "lazy run"
grep -q "^row-sparse update of Hidden<-Input:weights (Lazy: " lazy.log || fail "lazy line"

# The CDL key, and the flag's override of it.
cat >train.cdl <<'CDL'
{ "Version": 0.9, "Network": "config.json", "Command": "Train", "Data": ["input.nc", "output.nc"],
  "RandomSeed": 5, "Backend": "cpu",
  "TrainingParameters": { "Epochs": 1, "MiniBatch": 8, "Optimizer": "Adam", "LazyUpdate": true,
                          "Results": "cdl.nc", "CheckpointInterval": 0 } }
CDL
"$tools/nn-train" train.cdl 2>cdl.log || fail "cdl run: $(tail -3 cdl.log)"
grep -q "(Lazy: " cdl.log || fail "LazyUpdate true did not choose Lazy"
"$tools/nn-train" train.cdl --sparse-update Dense 2>over.log || fail "override run"
grep -q "^--sparse-update Dense overrides train.cdl's SparseUpdate Lazy$" over.log ||
  fail "override line: $(head -3 over.log)"
! grep -q 'row-sparse' over.log || fail "the override did not apply"

# A bad value.
if "${train[@]}" -n bad.nc --optimizer SGD --sparse-update sometimes 2>bad.log; then fail "a bad value was taken"; fi
grep -q "sparse-update" bad.log && grep -q "Exact" bad.log || fail "bad value message: $(cat bad.log)"
echo PASS
