#!/usr/bin/env bash
# What the lazy row-sparse update (--sparse-update Lazy: an untouched input row's optimizer state
# is not decayed, and L2 decay reaches touched rows only; docs/wide-outputs.md, "Row-sparse input
# updates") costs in recall against the dense update, trained from the same seed, in one run:
#   movielens  the bundled MovieLens sample (80/20 split of each user's ratings), the networks and
#              settings of configs/recommender-autoencoder (Sigmoid, RMSProp with L2 decay) and
#              configs/recommender-mult-dae (SoftMax, Adam), recall@10 by scripts/movielens_eval.py;
#   ml20m      a planted ML-20M-shaped catalog (27,278 items in 100 clusters, users of 144 items,
#              USERS training users, 2,000 test users showing half of their items;
#              scripts/bench_sampled.py gen), the items as input, 3 x 1,024 Tanh hidden layers,
#              a SoftMax output (as Mult-DAE; Sigmoid layers this deep did not learn in a few
#              epochs: recall@10 0.0089 either way), Adam, minibatch 256, EPOCHS epochs, recall@10
#              of the held-out halves after the last epoch.
# Prints each network's examples/s and recall@10 for Dense and Lazy, and their difference.
# Usage: scripts/bench_lazy_recall.sh [movielens] [ml20m [USERS EPOCHS]]   (default: both,
#        20000 users, 3 epochs); NN_TOOLS (default build/src/tools), NN_BENCH_DIR (default
#        out/bench-lazy-recall).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools=$(realpath "${NN_TOOLS:-$root/build/src/tools}")
work=${NN_BENCH_DIR:-$root/out/bench-lazy-recall}
load() { cut -d' ' -f1 /proc/loadavg; }
rate() {  # mean examples/s of a log's epochs
  sed -n 's/^epoch [0-9]*\/[0-9]*: .*, \([0-9]*\) examples\/s.*/\1/p' "$1" |
    awk '{ s += $1; n++ } END { printf "%.0f", n ? s / n : 0 }'
}
row() { printf '%-34s %-6s %6s %11s %10s\n' "$@"; }

movielens() {
  local dir=$work/movielens
  mkdir -p "$dir" && cd "$dir"
  /usr/bin/python3 "$root/samples/movielens/split_ratings.py" -d . \
    "$root/samples/movielens/ratings.csv" >/dev/null
  rm -f features.idx samples.idx
  "$tools/nn-generate" -q -d input -i train.csv --rows --header -o input.nc -f features.idx \
    -s samples.idx -c
  "$tools/nn-generate" -q -d output -i train.csv --rows --header -o output.nc -f features.idx \
    -s samples.idx
  awk -F, '$1 ~ /^[0-9]+$/ { items[$1] = items[$1] (items[$1] == "" ? "" : ":") $2 }
       END { for (u in items) print u "\t" items[u] }' train.csv >ratings.txt
  echo "== MovieLens sample, 80/20 per user, each network as its configs/ folder trains it"
  row network update load examples/s recall@10
  for config in recommender-autoencoder recommender-mult-dae; do
    cp "$root/configs/$config/network.json" network.json
    local recalls=()
    for update in Dense Lazy; do
      /usr/bin/python3 - "$root/configs/$config/train.cdl" "$update" >train.cdl <<'PY'
import json, sys
cdl = json.load(open(sys.argv[1]))
t = cdl["TrainingParameters"]
t["Results"] = "net.nc"
t["CheckpointInterval"] = 0
t["SparseUpdate"] = sys.argv[2]
print(json.dumps(cdl, indent=1))
PY
      local l0 recall
      l0=$(load)
      "$tools/nn-train" train.cdl 2>train-$config-$update.log
      "$tools/nn-predict" -n net.nc -r ratings.txt -i features.idx -o features.idx -f ratings.txt \
        -k 10 >recs.txt 2>/dev/null
      recall=$(/usr/bin/python3 "$root/scripts/movielens_eval.py" train.csv test.csv "x=recs.txt" |
        awk '$1 == "x" && NF > 3 { print $3 }')
      recalls+=("$recall")
      row "$config" $update "$l0" "$(rate train-$config-$update.log)" "$recall"
    done
    awk -v d="${recalls[0]}" -v l="${recalls[1]}" -v c="$config" \
      'BEGIN { printf "%-34s Lazy - Dense recall@10: %+.4f\n", c, l - d }'
  done
}

ml20m() {
  local users=${1:-20000} epochs=${2:-3}
  local dir=$work/ml20m
  mkdir -p "$dir" && cd "$dir"
  python3 "$root/scripts/bench_sampled.py" gen . 27278 100 144 "$users" 2000 16384 1.0 7
  rm -f *.idx
  "$tools/nn-generate" -q -d output -i all_items.txt -o catalog.nc -f items.idx -s catalog.idx -c --align 1
  "$tools/nn-generate" -q -d output -i train_out.txt -o train_out.nc -f items.idx -s train.idx -m --align 1
  "$tools/nn-generate" -q -d input -i all_items.txt -o catalog.nc -f items.idx -s catalog2.idx -c --align 1
  "$tools/nn-generate" -q -d input -i train_out.txt -o train_in.nc -f items.idx -s train.idx -m --align 1
  rm -f catalog.nc
  cat >net.json <<'JSON'
{ "Name": "ml20m-3x1024", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "H1", "Kind": "Hidden", "N": 1024, "Activation": "Tanh" },
    { "Name": "H2", "Kind": "Hidden", "N": 1024, "Activation": "Tanh" },
    { "Name": "H3", "Kind": "Hidden", "N": 1024, "Activation": "Tanh" },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "SoftMax" } ] }
JSON
  echo "== planted ML-20M-shaped catalog: 27,278 items, $users users of 144 items, 3 x 1,024" \
    "Tanh, SoftMax output, Adam, minibatch 256, $epochs epochs"
  row network update load examples/s recall@10
  local recalls=()
  for update in Dense Lazy; do
    local l0 recall
    l0=$(load)
    "$tools/nn-train" -c net.json -i train_in.nc -o train_out.nc -n net-$update.nc -b 256 \
      -e "$epochs" --optimizer Adam -alpha 0.001 -lambda 0 --seed 5 --checkpoint-interval 0 \
      --sparse-update $update 2>train-$update.log
    "$tools/nn-predict" -n net-$update.nc -r test_filter.txt -i items.idx -o items.idx \
      -f test_filter.txt -k 10 >recs-$update.txt 2>/dev/null
    recall=$(python3 "$root/scripts/bench_sampled.py" recall recs-$update.txt test_heldout.txt 10)
    recalls+=("$recall")
    row "ml20m 3x1024" $update "$l0" "$(rate train-$update.log)" "$recall"
  done
  awk -v d="${recalls[0]}" -v l="${recalls[1]}" \
    'BEGIN { printf "%-34s Lazy - Dense recall@10: %+.4f\n", "ml20m 3x1024", l - d }'
}

what=${1:-all}
case $what in
  movielens) movielens ;;
  ml20m) shift; ml20m "$@" ;;
  all) movielens; ml20m ;;
  *) echo "usage: $0 [movielens | ml20m [USERS EPOCHS]]" >&2; exit 2 ;;
esac
