#!/usr/bin/env bash
# Every network on the configs/ shelf trains for one epoch on tiny generated data with its own
# train.cdl (only Epochs lowered) and predicts with its own predict.cdl, so none can rot. A new
# folder under configs/ fails this test until a data recipe for it is added below.
# Usage: configs_shelf.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
src=$(realpath "$2")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir

# ---- tiny data, one recipe per kind of network ----
recommender_data() {
  tiny_ratings
  tiny_datasets "$tools"
}
idx_images() {  # 28x28 grey images, 24 for training and 8 for testing, IDX format
  python3 - <<'PY'
import random, struct
random.seed(3)
def write(prefix, n):
    labels = [random.randrange(10) for _ in range(n)]
    with open(prefix + "-images-idx3-ubyte", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28))
        for k in labels:
            f.write(bytes(min(255, 25 * k + random.randrange(30)) for _ in range(784)))
    with open(prefix + "-labels-idx1-ubyte", "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + bytes(labels))
write("train", 24)
write("t10k", 8)
PY
  "$tools/nn-encode" idx -i train-images-idx3-ubyte -l train-labels-idx1-ubyte -o train.nc 2>/dev/null
  "$tools/nn-encode" idx -i t10k-images-idx3-ubyte -l t10k-labels-idx1-ubyte -o test.nc 2>/dev/null
}
cifar_images() {  # 32x32x3 CIFAR-10 binary records, 16 for training and 8 for testing
  python3 - <<'PY'
import random
random.seed(4)
def write(name, n):
    with open(name, "wb") as f:
        for _ in range(n):
            k = random.randrange(10)
            f.write(bytes([k]) + bytes(min(255, 20 * k + random.randrange(40)) for _ in range(3072)))
write("train.bin", 16)
write("test.bin", 8)
PY
  "$tools/nn-encode" cifar10 -i train.bin -o train.nc 2>/dev/null
  "$tools/nn-encode" cifar10 -i test.bin -o test.nc 2>/dev/null
}
pair_data() {  # query/candidate word sets and a similarity of 1 (same topic) or 0
  awk 'BEGIN { for (p = 0; p < 32; p++) { t = p % 4; s = (p % 3 != 0) ? t : (t + 1) % 4;
         print "p" p "\tw" t*4 ":w" t*4+1 ":w" t*4+2 >"query.txt";
         print "p" p "\tw" s*4+1 ":w" s*4+2 ":w" s*4+3 >"candidate.txt";
         print "p" p "\ts," (s == t ? 1 : 0) >"similarity.txt" }
         for (w = 0; w < 16; w++) printf "%s", (w ? ":" : "vocab\t") "w" w >"vocab.txt"; print "" >"vocab.txt" }'
  "$tools/nn-generate" -d vocab -i vocab.txt -o vocab.nc -f words.idx -s vocab.idx -c 2>/dev/null
  "$tools/nn-generate" -d query -i query.txt -o query.nc -f words.idx -s pairs.idx 2>/dev/null
  "$tools/nn-generate" -d candidate -i candidate.txt -o candidate.nc -f words.idx -s pairs.idx 2>/dev/null
  "$tools/nn-generate" -d similarity -t analog --align 1 -i similarity.txt -o similarity.nc \
    -f similarity.idx -s pairs.idx -c 2>/dev/null
}

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
  head -1 scores | grep -Eq '^p0	0,-?[0-9.]+:$' || fail "$1: score line: $(head -1 scores)"
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
    case $name in
      recommender-*) recommender_data; check=check_recs ;;
      image-*-28x28) idx_images; check=check_classes ;;
      image-cnn-cifar10) cifar_images; check=check_classes ;;
      two-tower-similarity) pair_data; check=check_scores ;;
      *) fail "configs/$name: no tiny-data recipe in configs_shelf.sh" ;;
    esac
    cp "$dir/network.json" "$dir/predict.cdl" .
    sed -E 's/"Epochs": [0-9]+/"Epochs": 1/' "$dir/train.cdl" >train.cdl
    "$tools/nn-train" train.cdl >train.log 2>&1 || fail "configs/$name: nn-train: $(tail -5 train.log)"
    grep -q '^epoch 1/1: loss [0-9]' train.log || fail "configs/$name: no epoch line: $(tail -5 train.log)"
    "$tools/nn-predict" predict.cdl >predict.log 2>&1 || fail "configs/$name: nn-predict: $(tail -5 predict.log)"
    $check "configs/$name"
  )
  echo "configs/$name: trained and predicted"
done
