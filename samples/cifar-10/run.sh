#!/usr/bin/env bash
# CIFAR-10 end to end: binary batches -> nn-encode -> nn-train (the convolutional network of
# configs/image-cnn-cifar10, as its train.cdl says) -> nn-predict on the 10,000 test images -> top-1 accuracy.
# Usage: samples/cifar-10/run.sh [data-dir] [output-dir]
#   data-dir    the unpacked cifar-10-batches-bin directory (default:
#               samples/cifar-10/data/cifar-10-batches-bin, where download.sh puts it)
#   output-dir  where every intermediate and result file goes (default: samples/cifar-10/work)
# NN_TOOLS overrides the directory holding the nn-* tools (default: build/src/tools, built by
# scripts/setup.sh when missing). NN_EPOCHS overrides the number of epochs in train.cdl.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
data=$(realpath -m "${1:-$here/data/cifar-10-batches-bin}")
out=${2:-$here/work}
tools=${NN_TOOLS:-$root/build/src/tools}
batches=("$data"/data_batch_{1,2,3,4,5}.bin)
for f in "${batches[@]}" "$data/test_batch.bin"; do
  [ -f "$f" ] || {
    cat >&2 <<EOF
run.sh: CIFAR-10 not found: $f is missing.
  Download it (about 162 MB, needs internet access):
    bash samples/cifar-10/download.sh
  which checks the archive's MD5 and unpacks it into
    $here/data/cifar-10-batches-bin/
  (data_batch_1.bin ... data_batch_5.bin, test_batch.bin), where run.sh looks by default.
  Or fetch https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz yourself, unpack it
  (tar xzf cifar-10-binary.tar.gz) and pass the folder:
    samples/cifar-10/run.sh /path/to/cifar-10-batches-bin [output-dir]
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
"$tools/nn-encode" cifar10 -i "${batches[@]}" -o train.nc
"$tools/nn-encode" cifar10 -i "$data/test_batch.bin" -o test.nc
# The network and its commands come from the shelf of ready configs.
config=$root/configs/image-cnn-cifar10
cp "$config/network.json" "$config/predict.cdl" .
if [ -n "${NN_EPOCHS:-}" ]; then
  sed -E "s/\"Epochs\": [0-9]+/\"Epochs\": $NN_EPOCHS/" "$config/train.cdl" > train.cdl
else
  cp "$config/train.cdl" .
fi

echo "== training configs/image-cnn-cifar10 (live progress; full log in train.log)"
rm -f network.nc checkpoint*.nc
"$tools/nn-train" train.cdl 2>&1 | tee train.log |
  grep --line-buffered -E '^(model|training|epoch|validation|wrote)'

echo "== predicting the test images"
"$tools/nn-predict" predict.cdl 2> predict.log
python3 "$root/scripts/image_accuracy.py" predictions classes.idx test.nc --per-class | tee accuracy.txt
