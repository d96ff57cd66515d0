#!/usr/bin/env bash
# Fashion-MNIST end to end: IDX files -> nn-encode -> nn-train (MLP or CNN) -> nn-predict on the
# 10,000 test images -> top-1 accuracy. Prints the training log's last epochs and the accuracy.
# Usage: samples/fashion-mnist/run.sh [mlp|cnn] [output-dir] [data-dir]
#   mlp|cnn     which network: config.json + train.cdl (default) or config-cnn.json + train-cnn.cdl
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
data=$(realpath "${3:-/usr/share/datasets/fashion-mnist}")
tools=${NN_TOOLS:-$root/build/src/tools}
case $model in
  mlp) config=config.json train=train.cdl ;;
  cnn) config=config-cnn.json train=train-cnn.cdl ;;
  *) echo "usage: $0 [mlp|cnn] [output-dir] [data-dir]" >&2; exit 2 ;;
esac
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
cp "$here/$config" "$here/predict.cdl" .
if [ -n "${NN_EPOCHS:-}" ]; then
  sed -E "s/\"Epochs\": [0-9]+/\"Epochs\": $NN_EPOCHS/" "$here/$train" > "$train"
else
  cp "$here/$train" .
fi

echo "== training $config ($train)"
rm -f network.nc
"$tools/nn-train" "$train" | tee "train-$model.log" | grep -E '^(training|epoch)' | tail -4

echo "== predicting the test images"
"$tools/nn-predict" predict.cdl 2> "predict-$model.log"
python3 "$root/scripts/image_accuracy.py" predictions classes.idx test.nc --per-class \
  | tee "accuracy-$model.txt"
