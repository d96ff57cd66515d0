#!/usr/bin/env bash
# Every network on the configs/ shelf trains for one epoch on tiny generated data with its own
# train.cdl (only Epochs lowered) and predicts with its own predict.cdl, so none can rot. A new
# folder under configs/ fails this test until a data recipe for it is added to lib/config_data.sh.
# Usage: configs_shelf.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
src=$(realpath "$2")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
source "$(dirname "$(realpath "$0")")/lib/config_data.sh"
enter_work_dir

# ---- what each kind's prediction must look like ----
check_recs() {  # recs: one line per user, 10 "item,score:" entries
  [[ $(wc -l <recs) == 30 ]] || fail "$1: expected 30 recommendation lines, got $(wc -l <recs)"
  head -1 recs | grep -Eq '^u0	(m[0-9]+,[0-9.]+:){10}$' || fail "$1: recs line: $(head -1 recs)"
}
check_classes() {  # predictions: one top class per test image, with the class name
  [[ $(wc -l <predictions) == 8 ]] || fail "$1: expected 8 predictions, got $(wc -l <predictions)"
  head -1 predictions | grep -Eq '^0	[^,]+,[0-9.e-]+:$' || fail "$1: prediction line: $(head -1 predictions)"
}
check_scores() {  # scores: one cosine per pair; the candidate tower owns no weight matrix
  grep -Eq '^ +CandidateTower +Hidden FullyConnected Tanh \(shared weights\) +128 +128 ' train.log ||
    fail "$1: the towers do not share weights: $(grep Tower train.log)"
  [[ $(wc -l <scores) == 32 ]] || fail "$1: expected 32 scores, got $(wc -l <scores)"
  # The score unit is named by the label dataset's one feature, which the network carries.
  head -1 scores | grep -Eq '^p0	[^,]+,-?[0-9.]+:$' || fail "$1: score line: $(head -1 scores)"
}

shelf=("$src"/configs/*/)
[[ ${#shelf[@]} -ge 7 ]] || fail "configs/ holds ${#shelf[@]} networks, expected at least 7"
for dir in "${shelf[@]}"; do
  name=$(basename "$dir")
  for f in network.json train.cdl predict.cdl README.md; do
    [[ -s $dir/$f ]] || fail "configs/$name/$f missing"
  done
  mkdir "$name"
  (
    cd "$name"
    config_data "$name"
    case $name in
      recommender-*) check=check_recs ;;
      two-tower-similarity) check=check_scores ;;
      *) check=check_classes ;;
    esac
    cp "$dir/network.json" "$dir/predict.cdl" .
    sed -E 's/"Epochs": [0-9]+/"Epochs": 1/' "$dir/train.cdl" >train.cdl
    "$tools/nn-train" train.cdl >train.log 2>&1 || fail "configs/$name: nn-train: $(tail -5 train.log)"
    grep -q '^epoch 1/1: loss [0-9]' train.log || fail "configs/$name: no epoch line: $(tail -5 train.log)"
    if grep -q '"WarmStart"' train.cdl; then  # the network it starts from was used
      grep -q '^warm start from ' train.log || fail "configs/$name: no warm start: $(head -5 train.log)"
    fi
    "$tools/nn-predict" predict.cdl >predict.log 2>&1 || fail "configs/$name: nn-predict: $(tail -5 predict.log)"
    $check "configs/$name"
  )
  echo "configs/$name: trained and predicted"
done
