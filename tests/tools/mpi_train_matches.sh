#!/usr/bin/env bash
# Data-parallel training under mpirun (CTest label mpi) matches one process with dropout and
# denoising on: loss per epoch, final weights and top-10 lists, for 2 ranks and for 3 ranks with
# uneven splits (batches of 7) and a last batch of one row (batches of 13: two ranks idle that
# step). Only rank 0 prints.
# Usage: mpi_train_matches.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$1
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
enter_work_dir
require_netcdf_bin
source "$here/lib/mpi.sh"
# Data parallel on every layer (the rule would split these small layers: fewer bytes move).
pin_parallel Data config.json dp.json
mv dp.json config.json

for batch in 7 13; do
  train_cdl $batch
  run_np 1 "$tools/nn-train" train.cdl 2>one.log
  mv net.nc one.nc
  losses one.log >one.loss
  predict 1 one.nc one.recs
  [[ $(wc -l <one.recs) == 40 ]] || fail "single process: expected 40 lines"
  nps="2 3"
  [[ $batch == 13 ]] && nps=3
  for np in $nps; do
    rm -f net.nc ck*.nc
    run_np $np "$tools/nn-train" train.cdl 2>dp.log || fail "np $np: $(tail -5 dp.log)"
    grep -q "data parallel: $np ranks" dp.log || fail "np $np (batch $batch): not data parallel"
    # Rank 0 says where every rank runs and which communicator carries its backend's buffers.
    for ((r = 0; r < np; r++)); do
      grep -q "^rank $r on .*: backend cpu, backend buffers over mpi, host collectives over mpi" dp.log ||
        fail "np $np: no placement line for rank $r"
    done
    grep -q "gradient communicator: backend cpu keeps its arrays in host memory" dp.log ||
      fail "np $np: the gradient communicator's reason is missing"
    [[ $(grep -c 'epoch 1/6:' dp.log) == 1 ]] || fail "np $np: more than one rank printed"
    losses dp.log >dp.loss
    close dp.loss one.loss 1e-5 || fail "np $np (batch $batch): losses differ: $(paste dp.loss one.loss)"
    weights net.nc >a.txt
    weights one.nc >b.txt
    close a.txt b.txt 1e-3 || fail "np $np (batch $batch): final weights differ"
    predict 1 net.nc dp.recs
    cmp -s dp.recs one.recs || fail "np $np (batch $batch): top-10 lists differ"
  done
done
# Batch normalisation: statistics over the global batch (all-reduced), also in the step where
# two of three ranks have no rows. (Its bias is driven by rounding noise under Adam, since the
# normalisation cancels it, so only the losses and the normalisation arrays are compared.)
sed 's/"Activation": "Sigmoid", "pDropout": 0.1/"Activation": "Relu", "BatchNormalization": true/' \
  config.json >bn.json
sed 's/config.json/bn.json/' train.cdl >bn.cdl
run_np 1 "$tools/nn-train" bn.cdl 2>one.log
ncdump -v layer1_scaleBN,layer1_runningVarianceBN net.nc | sed -n '/data:/,$p' >b.txt
run_np 3 "$tools/nn-train" bn.cdl 2>dp.log
ncdump -v layer1_scaleBN,layer1_runningVarianceBN net.nc | sed -n '/data:/,$p' >a.txt
losses one.log >one.loss
losses dp.log >dp.loss
close dp.loss one.loss 1e-5 || fail "batch norm, 3 ranks: losses differ: $(paste dp.loss one.loss)"
close a.txt b.txt 1e-4 || fail "batch norm, 3 ranks: scale or running variance differ"
echo "mpi_train_matches: ok"
