#!/usr/bin/env bash
# CI-sized Fashion-MNIST run on the real data of Debian's dataset-fashion-mnist package:
# nn-encode the first 3000 training and 2000 test images, train the sample's MLP
# (configs/image-mlp-28x28/network.json) for one epoch, predict the top class of every test image
# and require an accuracy far above chance (10%). Accuracy is computed here from nn-predict's
# top-1 output and the package's label file, independently of nn-predict's own metrics.
# Usage: bash fashion_mnist_small.sh <tool-dir> <source-dir>
# NN_FASHION_MNIST_DIR overrides /usr/share/datasets/fashion-mnist.
set -euo pipefail

tools=$(realpath "$1")
src=$(realpath "$2")
data=${NN_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
floor=0.65
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir

for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz \
  t10k-labels-idx1-ubyte.gz; do
  [[ -f "$data/$f" ]] || fail "$data/$f missing: install Debian's dataset-fashion-mnist (scripts/setup.sh)"
done

SECONDS=0
"$tools/nn-encode" idx -i "$data/train-images-idx3-ubyte.gz" -l "$data/train-labels-idx1-ubyte.gz" \
  -o train.nc --limit 3000 --class-names fashion-mnist 2>encode.log || fail "encode train: $(cat encode.log)"
"$tools/nn-encode" idx -i "$data/t10k-images-idx3-ubyte.gz" -l "$data/t10k-labels-idx1-ubyte.gz" \
  -o test.nc --limit 2000 --class-names fashion-mnist 2>>encode.log || fail "encode test: $(cat encode.log)"
grep -q 'wrote train.nc: 3000 images 28x28x1, 10 classes' encode.log || fail "encode: $(cat encode.log)"

"$tools/nn-train" -c "$src/configs/image-mlp-28x28/network.json" -i train.nc -o train.nc -n net.nc \
  -b 32 -e 1 --optimizer Adam --alpha 0.001 --mu 0.9 --mu1 0.999 --lambda 0 --seed 1 \
  --checkpoint-interval 0 >train.log 2>&1 || fail "train: $(cat train.log)"
grep -q 'epoch 1/1' train.log || fail "no epoch report: $(cat train.log)"

"$tools/nn-predict" -n net.nc --data test.nc -o classes.idx -k 1 -s top1.txt >predict.log 2>&1 ||
  fail "predict: $(cat predict.log)"
[[ $(wc -l <top1.txt) == 2000 ]] || fail "expected 2000 prediction lines, got $(wc -l <top1.txt)"

python3 - "$data/t10k-labels-idx1-ubyte.gz" "$floor" <<'PY' || fail "accuracy below the floor"
import gzip, struct, sys
names = [l.split("\t")[0] for l in open("classes.idx").read().splitlines()]
raw = gzip.open(sys.argv[1]).read()
magic, n = struct.unpack(">II", raw[:8])
assert magic == 0x801, hex(magic)
truth = raw[8:8 + 2000]
hits = seen = 0
for line in open("top1.txt"):
    example, rest = line.rstrip("\n").split("\t")
    label, score = rest.rstrip(":").rsplit(",", 1)
    assert label in names, f"unknown class {label!r}"
    hits += names.index(label) == truth[int(example)]
    seen += 1
acc = hits / seen
print(f"fashion_mnist_small: top-1 accuracy {acc:.4f} on {seen} test images "
      f"(3000 training images, 1 epoch)")
sys.exit(0 if acc >= float(sys.argv[2]) else 1)
PY
echo "fashion_mnist_small: passed in ${SECONDS} s"
