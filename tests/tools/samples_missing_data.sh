#!/usr/bin/env bash
# Samples whose data is not on the machine stop at once with exit status 1 and say exactly
# where the data must go and how to get it (no build, no partial output).
# Usage: samples_missing_data.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
src=$(realpath "$2")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir

status=0
NN_TOOLS=$tools bash "$src/samples/cifar-10/run.sh" "$work/nowhere/cifar-10-batches-bin" out \
  >out.txt 2>err.txt || status=$?
[[ $status == 1 ]] || fail "cifar-10 without data exited $status: $(cat err.txt)"
grep -q "^run.sh: CIFAR-10 not found: $work/nowhere/cifar-10-batches-bin/data_batch_1.bin is missing.$" err.txt ||
  fail "cifar-10 message: $(cat err.txt)"
grep -q 'bash samples/cifar-10/download.sh$' err.txt || fail "cifar-10: how to download"
grep -q "$src/samples/cifar-10/data/cifar-10-batches-bin/$" err.txt || fail "cifar-10: where it goes"
grep -q 'https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz' err.txt || fail "cifar-10: the URL"
[[ ! -e out ]] || fail "cifar-10: output written without data"

status=0
NN_TOOLS=$tools bash "$src/samples/fashion-mnist/run.sh" mlp out "$work/nowhere" >out.txt 2>err.txt ||
  status=$?
[[ $status == 1 ]] || fail "fashion-mnist without data exited $status: $(cat err.txt)"
grep -q "^run.sh: Fashion-MNIST not found: $work/nowhere/train-images-idx3-ubyte.gz is missing.$" err.txt ||
  fail "fashion-mnist message: $(cat err.txt)"
grep -q 'apt-get install dataset-fashion-mnist' err.txt || fail "fashion-mnist: how to get it"
[[ ! -e out ]] || fail "fashion-mnist: output written without data"
echo "samples_missing_data: ok"
