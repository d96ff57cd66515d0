#!/usr/bin/env bash
# One metric, one meaning: for the same network and held-out users, nn-train's validation and
# nn-predict --target report the same recall, precision and NDCG at K, both leaving each user's
# input items out of the ranking by default (and saying so), and both ranking them when asked.
# A filter given as a dataset file works with --data (no sample or output index needed).
# Usage: metrics_agree.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir

# 90 users over 48 items in 4 tastes; every tenth user is held out: 2 of 3 items are its input,
# the third what the network should find (at least two items per held-out user, so the target is
# ranked, not taken for one class per example).
python3 - <<'PY'
import random
random.seed(11)
train, vin, vout = open("train.txt", "w"), open("val_in.txt", "w"), open("val_out.txt", "w")
for u in range(90):
    t = u % 4
    items = [f"m{t*12+j}" for j in range(12) if random.random() < 0.6] + [f"m{random.randrange(48)}"]
    items = list(dict.fromkeys(items))
    while len(items) < 6:
        items.append(f"m{t*12+len(items)}")
    items = list(dict.fromkeys(items))
    if u % 10:
        train.write(f"u{u}\t" + ":".join(items) + "\n")
    else:
        vin.write(f"u{u}\t" + ":".join(i for n, i in enumerate(items) if n % 3 != 2) + "\n")
        vout.write(f"u{u}\t" + ":".join(i for n, i in enumerate(items) if n % 3 == 2) + "\n")
PY
gen() { "$tools/nn-generate" -q "$@"; }
gen -d input -i train.txt -o input.nc -f features.idx -s samples.idx -c
gen -d output -i train.txt -o output.nc -f features.idx -s samples.idx
gen -d input -i val_in.txt -o val_input.nc -f features.idx -s val_samples.idx
gen -d output -i val_out.txt -o val_output.nc -f features.idx -s val_samples.idx
tiny_config 16

# train LOG [flags]: 6 epochs, validated after each; the last epoch's network is written.
train() {
  local log=$1
  shift
  "$tools/nn-train" -c config.json -i input.nc -o output.nc -n net.nc -e 6 -b 16 --alpha 0.05 \
    --optimizer Adam --seed 3 --validation val_input.nc --validation val_output.nc \
    --no-keep-best "$@" 2>"$log"
}
# The last validation line's recall@10, precision@10 and ndcg@10.
validation_metrics() {
  grep '^validation after epoch 6 ' "$1" |
    sed -E 's/.*recall@10 ([0-9.]+), ndcg@10 ([0-9.]+), precision@10 ([0-9.]+).*/\1 \3 \2/'
}
# nn-predict's line for K = 10: recall, precision, ndcg.
predict_metrics() { grep -E '^10,' "$1" | awk -F, '{ printf "%.4f %.4f %.4f\n", $3, $2, $4 }'; }

train train.log
grep -q "validation: recall@10 .*; each example's input items (dataset 'input') are left out of its ranking" \
  train.log || fail "nn-train does not say which items its ranking leaves out: $(grep validation: train.log)"
"$tools/nn-predict" -n net.nc --data val_input.nc --target val_output.nc -k 10 -s /dev/null \
  2>predict.log || fail "nn-predict: $(cat predict.log)"
grep -q "^ranking for the metrics: each example's input items (dataset 'input') are left out of its ranking (--rank-input-items ranks them)$" \
  predict.log || fail "nn-predict does not say which items its ranking leaves out: $(cat predict.log)"
a=$(validation_metrics train.log)
b=$(predict_metrics predict.log)
[[ -n $a && $a == "$b" ]] || fail "recall/precision/ndcg@10 differ: nn-train '$a', nn-predict '$b'"

# Ranking the input items too, when asked, in both tools: equal again, and lower (the held-out
# item competes with the items the user already has).
train train_all.log --validation-rank-input-items
grep -q "each example's input items are ranked too (as asked)" train_all.log ||
  fail "nn-train --validation-rank-input-items: $(grep validation: train_all.log)"
"$tools/nn-predict" -n net.nc --data val_input.nc --target val_output.nc -k 10 -s /dev/null \
  --rank-input-items 2>predict_all.log
a_all=$(validation_metrics train_all.log)
b_all=$(predict_metrics predict_all.log)
[[ -n $a_all && $a_all == "$b_all" ]] || fail "with input items ranked: nn-train '$a_all', nn-predict '$b_all'"
python3 -c "import sys; sys.exit(not float('${a_all%% *}') < float('${a%% *}'))" ||
  fail "ranking the input items should lower recall@10: $a_all vs $a"

# -f with --data: a dataset file filters row by row; leaving out the inputs that way equals the
# default rule.
"$tools/nn-predict" -n net.nc --data val_input.nc --target val_output.nc -k 10 -s /dev/null \
  --rank-input-items -f val_input.nc 2>filtered.log || fail "-f FILE.nc with --data: $(cat filtered.log)"
grep -q "^filter val_input.nc: [0-9]* examples, matched row by row$" filtered.log ||
  fail "no filter line: $(cat filtered.log)"
[[ $(predict_metrics filtered.log) == "$b" ]] || fail "-f val_input.nc: $(predict_metrics filtered.log) vs $b"
# A text filter names samples and items: the message says what it needs, and the alternative.
got=0
"$tools/nn-predict" -n net.nc --data val_input.nc --target val_output.nc -f val_in.txt \
  -s /dev/null 2>err.txt || got=$?
[[ $got == 1 ]] && grep -q "needs the sample index (--sample-index) and the output index (-o); a filter given as a dataset file (-f FILE.nc" err.txt ||
  fail "text filter without indices: exit $got: $(cat err.txt)"
# ... and with them it works, and equals the row-matched filter.
"$tools/nn-predict" -n net.nc --data val_input.nc --target val_output.nc -k 10 -s /dev/null \
  --rank-input-items -f val_in.txt --sample-index val_samples.idx -o features.idx 2>text.log ||
  fail "text filter with indices: $(cat text.log)"
[[ $(predict_metrics text.log) == "$b" ]] || fail "-f val_in.txt: $(predict_metrics text.log) vs $b"
echo "metrics_agree: ok (recall precision ndcg @10: $a; input items ranked: $a_all)"
