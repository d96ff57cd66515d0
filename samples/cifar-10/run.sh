#!/usr/bin/env bash
# CIFAR-10 end to end: binary batches -> nn-encode -> nn-train (the convolutional network of
# config.json, as train.cdl says) -> nn-predict on the 10,000 test images -> top-1 accuracy.
# Usage: samples/cifar-10/run.sh [data-dir] [output-dir]
#   data-dir    the unpacked cifar-10-batches-bin directory (default:
#               samples/cifar-10/data/cifar-10-batches-bin, where download.sh puts it)
#   output-dir  where every intermediate and result file goes (default: samples/cifar-10/work)
# NN_TOOLS overrides the directory holding the nn-* tools (default: build/src/tools, built by
# scripts/setup.sh when missing). NN_EPOCHS overrides the number of epochs in train.cdl.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
data=$(realpath "${1:-$here/data/cifar-10-batches-bin}")
out=${2:-$here/work}
tools=${NN_TOOLS:-$root/build/src/tools}
batches=("$data"/data_batch_{1,2,3,4,5}.bin)
for f in "${batches[@]}" "$data/test_batch.bin"; do
  [ -f "$f" ] || { echo "run.sh: $f missing; run samples/cifar-10/download.sh first" >&2; exit 1; }
done
for t in nn-encode nn-train nn-predict; do
  [ -x "$tools/$t" ] || { bash "$root/scripts/setup.sh"; break; }
done
mkdir -p "$out"
out=$(realpath "$out")
cd "$out"

echo "== encoding $data"
"$tools/nn-encode" cifar10 -i "${batches[@]}" -o train.nc
"$tools/nn-encode" cifar10 -i "$data/test_batch.bin" -o test.nc
cp "$here/config.json" "$here/predict.cdl" .
if [ -n "${NN_EPOCHS:-}" ]; then
  sed -E "s/\"Epochs\": [0-9]+/\"Epochs\": $NN_EPOCHS/" "$here/train.cdl" > train.cdl
else
  cp "$here/train.cdl" .
fi

echo "== training"
rm -f network.nc checkpoint*.nc
"$tools/nn-train" train.cdl | tee train.log | grep -E '^(training|epoch)'

echo "== predicting the test images"
"$tools/nn-predict" predict.cdl 2> predict.log
python3 "$root/scripts/image_accuracy.py" predictions classes.idx test.nc --per-class | tee accuracy.txt
