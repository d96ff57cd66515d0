#!/usr/bin/env bash
# Fashion-MNIST end to end: IDX files -> nn-encode -> nn-train (MLP or CNN) -> nn-predict on the
# 10,000 test images -> top-1 accuracy. Shows training progress as it happens, then the accuracy.
# Usage: samples/fashion-mnist/run.sh [mlp|cnn] [output-dir] [data-dir]
#   mlp|cnn     which network: configs/image-mlp-28x28 (default) or configs/image-cnn-28x28
#   output-dir  where every intermediate and result file goes (default: samples/fashion-mnist/work)
#   data-dir    the four IDX .gz files (default: /usr/share/datasets/fashion-mnist, installed by
#               Debian's dataset-fashion-mnist package; scripts/setup.sh installs it)
# NN_TOOLS overrides the directory holding the nn-* tools (default: build/src/tools, built by
# scripts/setup.sh when missing). NN_EPOCHS overrides the number of epochs in the .cdl.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
model=${1:-mlp}
out=${2:-$here/work}
data=$(realpath -m "${3:-/usr/share/datasets/fashion-mnist}")
tools=${NN_TOOLS:-$root/build/src/tools}
case $model in
  mlp) config=$root/configs/image-mlp-28x28 ;;
  cnn) config=$root/configs/image-cnn-28x28 ;;
  *) echo "usage: $0 [mlp|cnn] [output-dir] [data-dir]" >&2; exit 2 ;;
esac
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz \
  t10k-labels-idx1-ubyte.gz; do
  [ -f "$data/$f" ] || [ -f "$data/${f%.gz}" ] || {
    cat >&2 <<EOF
run.sh: Fashion-MNIST not found: $data/$f is missing.
  On Debian: sudo apt-get install dataset-fashion-mnist (scripts/setup.sh does it), which puts
  the four files in /usr/share/datasets/fashion-mnist; or download them from
  https://github.com/zalandoresearch/fashion-mnist (data/fashion) into a folder and pass it:
  samples/fashion-mnist/run.sh $model [output-dir] /path/to/that/folder
EOF
    exit 1
  }
done
for t in nn-encode nn-train nn-predict; do
  [ -x "$tools/$t" ] || { bash "$root/scripts/setup.sh"; break; }
done
mkdir -p "$out"
out=$(realpath "$out")
cd "$out"

echo "== encoding $data"
"$tools/nn-encode" idx -i "$data/train-images-idx3-ubyte.gz" \
  -l "$data/train-labels-idx1-ubyte.gz" -o train.nc --class-names fashion-mnist
"$tools/nn-encode" idx -i "$data/t10k-images-idx3-ubyte.gz" \
  -l "$data/t10k-labels-idx1-ubyte.gz" -o test.nc --class-names fashion-mnist
# The network and its commands come from the shelf of ready configs.
cp "$config/network.json" "$config/predict.cdl" .
if [ -n "${NN_EPOCHS:-}" ]; then
  sed -E "s/\"Epochs\": [0-9]+/\"Epochs\": $NN_EPOCHS/" "$config/train.cdl" > train.cdl
else
  cp "$config/train.cdl" .
fi

echo "== training configs/$(basename "$config") (live progress; full log in train-$model.log)"
rm -f network.nc
"$tools/nn-train" train.cdl 2>&1 | tee "train-$model.log" |
  grep --line-buffered -E '^(model|training|epoch|validation|wrote)'

echo "== predicting the test images"
"$tools/nn-predict" predict.cdl 2> "predict-$model.log"
python3 "$root/scripts/image_accuracy.py" predictions classes.idx test.nc --per-class \
  | tee "accuracy-$model.txt"
