#!/usr/bin/env bash
# Sampled versus full output training (docs/wide-outputs.md, "Sampled outputs"), in one run:
# examples per second of nn-train with the full output layer and with "Sampling", and the
# recall@10 of each trained network (scored by nn-predict on the full layer) after the same
# number of epochs.
#
#   scripts/bench_sampled.sh synthetic ITEMS [CLUSTERS TRAIN_USERS EPOCHS NEGATIVES FULL_EPOCHS
#                                             DISTRIBUTION]
#     A catalog of ITEMS items with planted structure (scripts/bench_sampled.py gen: users of
#     clusters of items, Zipf popularity), input Denoising (NN_BENCH_DENOISING, default 0.5; 0 =
#     none), hidden 128, SoftMax output (NN_BENCH_ACTIVATION=Sigmoid: independent outputs);
#     2,000 test and 2,000 validation users with half of their items held out. Both networks are checkpointed every epoch and each epoch's network
#     is scored on both user sets: the summary gives each variant's best epoch on the validation
#     users, its test recall and the training seconds up to it. FULL_EPOCHS (default EPOCHS)
#     trains the full layer on fewer epochs when it is too slow to train as long.
#     DISTRIBUTION: Uniform (default) or Popularity. NN_BENCH_VARIANTS="sampled" skips the full
#     layer (e.g. to try other negatives on a catalog whose full run is known).
#     NN_BENCH_INPUT=items feeds the network the items themselves (an autoencoder whose input
#     layer spans the whole catalog) instead of 16,384 hashed buckets; NN_BENCH_UPDATE (Exact,
#     Dense or Lazy; default Exact) is its --sparse-update (docs/wide-outputs.md, "Row-sparse
#     input updates"). The summary gives each run's peak resident memory.
#   scripts/bench_sampled.sh movielens [NEGATIVES DISTRIBUTION]
#     The bundled MovieLens sample (samples/movielens), 80/20 split of each user's ratings, the
#     Mult-DAE network of configs/recommender-mult-dae (SoftMax) and the autoencoder of
#     configs/recommender-autoencoder (Sigmoid), each full and sampled.
#
# NN_TOOLS: the tools (default build/src/tools); NN_BENCH_DIR: work directory (default
# out/bench-sampled); NN_BENCH_BACKEND: nn-train's and nn-predict's --backend (default cpu; the
# GPU check runs the synthetic case with cuda). Every line of results carries the load average
# at its start.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools=${NN_TOOLS:-$root/build/src/tools}
work=${NN_BENCH_DIR:-$root/out/bench-sampled}
py=$root/scripts/bench_sampled.py
mode=${1:-synthetic}
backend=(--backend "${NN_BENCH_BACKEND:-cpu}")
load() { cut -d' ' -f1 /proc/loadavg; }
# rate LOG: the mean of the epochs' examples/s.
rate() {
  sed -n 's/^epoch [0-9]*\/[0-9]*: .*, \([0-9]*\) examples\/s.*/\1/p' "$1" |
    awk '{ s += $1; n++ } END { printf "%.0f", n ? s / n : 0 }'
}

synthetic() {
  local items=$1 clusters=${2:-100} users=${3:-20000} epochs=${4:-4} negatives=${5:-2048}
  local full_epochs=${6:-$4} distribution=${7:-Uniform}
  local denoising=${NN_BENCH_DENOISING:-0.5} activation=${NN_BENCH_ACTIVATION:-SoftMax}
  local input=${NN_BENCH_INPUT:-buckets} update=${NN_BENCH_UPDATE:-Exact}
  local dir=$work/synthetic-$items
  mkdir -p "$dir"
  cd "$dir"
  python3 "$py" gen . "$items" "$clusters" 10 "$users" 2000 16384 1.0 7
  rm -f *.idx
  "$tools/nn-generate" -q -d output -i all_items.txt -o catalog.nc -f items.idx -s catalog.idx -c --align 1
  "$tools/nn-generate" -q -d output -i train_out.txt -o train_out.nc -f items.idx -s train.idx -m --align 1
  # Inputs: the hashed buckets, or (an autoencoder) the items, indexed over the whole catalog.
  local in_index=buckets.idx in_all=all_buckets.txt in_train=train_in.txt in_suffix=in
  if [ "$input" = items ]; then
    in_index=items.idx in_all=all_items.txt in_train=train_out.txt in_suffix=filter
  fi
  "$tools/nn-generate" -q -d input -i $in_all -o catalog.nc -f $in_index -s catalog2.idx -c --align 1
  "$tools/nn-generate" -q -d input -i $in_train -o train_in.nc -f $in_index -s train.idx -m --align 1
  rm -f catalog.nc
  local noise=""
  [ "$denoising" != 0 ] && noise="\"Denoising\": { \"p\": $denoising }, "
  for variant in full sampled; do
    local sampling=""
    [ $variant = sampled ] &&
      sampling=", \"Sampling\": {\"Negatives\": $negatives, \"Distribution\": \"$distribution\"}"
    cat >$variant.json <<JSON
{ "Name": "catalog-$variant", ${noise}"ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 128, "Activation": "Tanh" },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "$activation"$sampling } ] }
JSON
  done
  echo "== synthetic catalog: $items items in $clusters clusters, $users training users, input $input" \
    "(--sparse-update $update), hidden 128, input Denoising $denoising, $activation output, $epochs epochs (full: $full_epochs), $negatives $distribution negatives"
  echo "   recall@10 of the 2,000 test users after every epoch; 'best' = the epoch whose network ranks the 2,000 validation users best"
  printf '%-8s %6s %6s %11s %10s %10s %9s\n' variant epoch load examples/s val-recall recall@10 seconds
  local summary=""
  for variant in ${NN_BENCH_VARIANTS:-full sampled}; do
    local e=$epochs
    [ $variant = full ] && e=$full_epochs
    local l0
    l0=$(load)
    rm -f $variant-e*.nc
    # Peak resident memory of the training process (getrusage of the child: GNU time is not
    # always installed).
    python3 -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:], stderr=open(sys.argv[1], "w"))
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
sys.exit(rc)' $variant.log "$tools/nn-train" -c $variant.json -i train_in.nc -o train_out.nc -n $variant.nc \
      -b 128 -e "$e" --optimizer Adam -alpha 0.003 -lambda 0 --seed 5 --checkpoint-interval 1 \
      --checkpoints-kept 0 --checkpoint-name $variant-e --sparse-update "$update" "${backend[@]}" >$variant.peak
    local best=0 best_val=-1 best_test="" secs=0 best_secs=0
    for ((k = 1; k <= e; k++)); do
      local line rate_k secs_k val test
      line=$(grep "^epoch $k/$e: " $variant.log)
      rate_k=$(sed -n 's/.*, \([0-9]*\) examples\/s.*/\1/p' <<<"$line")
      secs_k=$(sed -n 's/.* examples\/s, \([0-9.]*\) s.*/\1/p' <<<"$line")
      secs=$(awk -v a="$secs" -v b="$secs_k" 'BEGIN { printf "%.1f", a + b }')
      for set in val test; do
        "$tools/nn-predict" "${backend[@]}" -n $variant-e$k.nc -r ${set}_${in_suffix}.txt -i $in_index -o items.idx \
          -f ${set}_filter.txt -k 10 >$variant-$set.recs 2>$variant.predict.log
      done
      val=$(python3 "$py" recall $variant-val.recs val_heldout.txt 10)
      test=$(python3 "$py" recall $variant-test.recs test_heldout.txt 10)
      printf '%-8s %6s %6s %11s %10s %10s %9s\n' $variant $k "$l0" "$rate_k" "$val" "$test" "$secs"
      if awk -v a="$val" -v b="$best_val" 'BEGIN { exit !(a > b) }'; then
        best=$k best_val=$val best_test=$test best_secs=$secs
      fi
      rm -f $variant-e$k.nc
    done
    summary+=$(printf '%-8s best epoch %s of %s: recall@10 %s after %s s of training, %s examples/s (mean of the epochs), peak %s MB' \
      $variant $best "$e" "$best_test" "$best_secs" "$(rate $variant.log)" "$(cat $variant.peak)")$'\n'
  done
  printf '%s' "$summary"
}

movielens() {
  local negatives=${1:-500} distribution=${2:-Uniform}
  local dir=$work/movielens
  mkdir -p "$dir"
  cd "$dir"
  /usr/bin/python3 "$root/samples/movielens/split_ratings.py" -d . "$root/samples/movielens/ratings.csv" >/dev/null
  rm -f features.idx samples.idx
  "$tools/nn-generate" -q -d input -i train.csv --rows --header -o input.nc -f features.idx -s samples.idx -c
  "$tools/nn-generate" -q -d output -i train.csv --rows --header -o output.nc -f features.idx -s samples.idx
  awk -F, '$1 ~ /^[0-9]+$/ { items[$1] = items[$1] (items[$1] == "" ? "" : ":") $2 }
       END { for (u in items) print u "\t" items[u] }' train.csv >ratings.txt
  echo "== MovieLens sample (bundled ratings, 80/20 per user), $negatives $distribution negatives"
  printf '%-26s %9s %14s %10s\n' network load examples/s recall@10
  for config in recommender-mult-dae recommender-autoencoder; do
    cp "$root/configs/$config/network.json" "$config.json"
    for variant in full sampled; do
      python3 - "$root/configs/$config/train.cdl" "$config.json" $variant "$negatives" \
        "$distribution" >$config-$variant.cdl <<'PY'
import json, sys
cdl = json.load(open(sys.argv[1]))
cdl["Network"] = sys.argv[2]
t = cdl["TrainingParameters"]
t["Results"] = sys.argv[2].replace(".json", "-" + sys.argv[3] + ".nc")
t["CheckpointInterval"] = 0
if sys.argv[3] == "sampled":
    t["Sampling"] = {"Negatives": int(sys.argv[4]), "Distribution": sys.argv[5]}
print(json.dumps(cdl, indent=1))
PY
      local l0
      l0=$(load)
      "$tools/nn-train" "${backend[@]}" $config-$variant.cdl 2>$config-$variant.log
      "$tools/nn-predict" "${backend[@]}" -n $config-$variant.nc -r ratings.txt -i features.idx -o features.idx \
        -f ratings.txt -k 10 >$config-$variant.recs 2>/dev/null
      local recall
      recall=$(/usr/bin/python3 "$root/scripts/movielens_eval.py" train.csv test.csv \
        "x=$config-$variant.recs" | awk '$1 == "x" && NF > 3 { print $3 }')
      printf '%-26s %9s %14s %10s\n' "$config $variant" "$l0" "$(rate $config-$variant.log)" "$recall"
    done
  done
}

case $mode in
  synthetic) shift; synthetic "$@" ;;
  movielens) shift; movielens "$@" ;;
  *) echo "usage: $0 synthetic ITEMS [...] | movielens [NEGATIVES]" >&2; exit 2 ;;
esac
