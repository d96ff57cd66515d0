#!/usr/bin/env bash
# Model-parallel training and prediction under mpirun (CTest label mpi) match one process:
# layers split by units over 2 and 3 ranks (uneven: 7 hidden units, 131 output units), with
# dropout, denoising and uneven row splits (batches of 7): loss per epoch, final weights and
# top-10 lists (nn-predict with the layers split too); a SoftMax output normalised over the whole
# layer; a last batch of one row (ranks without rows); a data-parallel hidden layer feeding a
# split output; a checkpoint written by 2 ranks resumed under 3 and under 1. Only rank 0 prints,
# and the per-layer choice is printed once.
# Usage: mpi_model_parallel.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$1
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
enter_work_dir
require_netcdf_bin
source "$here/lib/mpi.sh"
sed -e 's/"N": 8,/"N": 7,/' -e 's/"Kind": "Output", "N": "auto"/"Kind": "Output", "N": 131/' \
  config.json >base.json
pin_parallel Model base.json config.json
train_cdl 7
# compare LABEL NP: trains train.cdl under NP ranks and compares with one.* (single process).
compare() {
  local label=$1 np=$2
  rm -f net.nc ck*.nc
  run_np "$np" "$tools/nn-train" train.cdl 2>mp.log || fail "$label: $(tail -5 mp.log)"
  grep -q "model parallel: $np ranks" mp.log || fail "$label: not model parallel: $(cat mp.log)"
  [[ $(grep -c 'epoch 1/6:' mp.log) == 1 ]] || fail "$label: more than one rank printed"
  [[ $(grep -c 'parallel plan for' mp.log) == 1 ]] || fail "$label: plan not printed once"
  losses mp.log >mp.loss
  close mp.loss one.loss 1e-5 || fail "$label: losses differ: $(paste mp.loss one.loss)"
  weights net.nc >a.txt
  close a.txt b.txt 1e-3 || fail "$label: final weights differ"
  predict 1 net.nc mp.recs
  cmp -s mp.recs one.recs || fail "$label: top-10 lists differ"
}
single() {  # the single-process reference of the current train.cdl
  run_np 1 "$tools/nn-train" train.cdl 2>one.log
  losses one.log >one.loss
  weights net.nc >b.txt
  mv net.nc one.nc
  predict 1 one.nc one.recs
  [[ $(wc -l <one.recs) == 40 ]] || fail "single process: expected 40 lines"
}
single
for np in 2 3; do
  compare "np $np" $np
  grep -q "layer 'Output': model parallel" mp.log || fail "np $np: Output not split"
  # Prediction with the layers split (the choice is stored in the file): rank 0 merges the
  # ranks' top-k candidates.
  predict $np net.nc split.recs
  cmp -s split.recs one.recs || fail "nn-predict with $np ranks (split layers): output differs"
  grep -q "layer 'Output': model parallel" predict.log || fail "nn-predict np $np: not split"
done

# Resume: 2 ranks write ck3, 3 ranks (and 1 process) continue to epoch 6 like one process.
run_np 2 "$tools/nn-train" train.cdl >/dev/null
rm -f net.nc ck6.nc
run_np 3 "$tools/nn-train" train.cdl --resume 2>resume.log
grep -q "resuming from ck3.nc" resume.log || fail "3 ranks did not resume from ck3.nc"
weights net.nc >a.txt
close a.txt b.txt 1e-3 || fail "checkpoint of 2 ranks resumed under 3: weights differ"
rm -f net.nc ck6.nc
run_np 1 "$tools/nn-train" train.cdl --resume 2>resume.log
weights net.nc >a.txt
close a.txt b.txt 1e-3 || fail "checkpoint of 2 ranks resumed by one process: weights differ"

# A data-parallel hidden layer feeding the split output (all-gathered inputs, reduce-scattered
# dE/dx), 3 ranks.
sed 's/"Kind": "Hidden", "Parallel": "Model"/"Kind": "Hidden", "Parallel": "Data"/' config.json \
  >mixed.json
mv mixed.json config.json
compare "data-parallel hidden, split output" 3
grep -q "layer 'Hidden': data parallel" mp.log || fail "mixed: Hidden not data parallel"

# SoftMax output, CrossEntropy: normalised over the whole layer, not per slice.
sed 's/"DataSet": "output", "Activation": "Sigmoid"/"DataSet": "output", "Activation": "SoftMax"/' \
  config.json >softmax.json
grep -q SoftMax softmax.json || fail "softmax config not made"
mv softmax.json config.json
single
compare "SoftMax output" 3

# A last batch of one row (batches of 13): two of three ranks hold no rows of it but still
# compute the split layers for that row.
train_cdl 13
single
compare "batches of 13" 3
echo "mpi_model_parallel: ok"
