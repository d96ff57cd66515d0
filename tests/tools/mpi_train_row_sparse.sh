#!/usr/bin/env bash
# Row-sparse input updates under mpirun (CTest label mpi; docs/wide-outputs.md, "Row-sparse input
# updates"): the ranks agree on the union of their slices' rows every step and sum the compact
# gradients as those rows, so 2 and 3 data-parallel ranks train what one process trains, with
# the data sharded over the ranks (the default) and read whole (--no-stream): losses per epoch
# (within 1e-5) and top-10 lists, for SGD (equal to the dense update), RMSProp (skipped steps
# caught up) and Adam's lazy mode, in batches of 7 (uneven splits) and 13 (a last batch of one
# row: two of three ranks have none, and still catch the rows up). Then the layers split over the
# ranks (model parallel): every rank updates the whole minibatch's rows in its slice of the
# units, and 2 and 3 ranks again train what one process trains.
# Usage: mpi_train_row_sparse.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$1
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
enter_work_dir
require_netcdf_bin
source "$here/lib/mpi.sh"
cp config.json base.json
pin_parallel Data base.json config.json

for setting in "SGD Exact" "RMSProp Exact" "Adam Lazy"; do
  read -r optimizer mode <<<"$setting"
  for batch in 7 13; do
    train_cdl $batch
    # No L2 decay (with it the exact mode keeps the dense update); the optimizer and the mode.
    sed -i "s/\"Optimizer\": \"Adam\"/\"Optimizer\": \"$optimizer\", \"SparseUpdate\": \"$mode\"/; s/\"Lambda\": 0.001/\"Lambda\": 0/" train.cdl
    rm -f net.nc ck*.nc
    run_np 1 "$tools/nn-train" train.cdl 2>one.log || fail "$setting: one process: $(tail -3 one.log)"
    grep -q "^row-sparse update of Hidden<-Input:weights ($mode" one.log ||
      fail "$setting: one process: no row-sparse line: $(grep -i 'update of' one.log)"
    mv net.nc one.nc
    losses one.log >one.loss
    predict 1 one.nc one.recs
    nps="2 3 2-whole"
    [[ $batch == 13 ]] && nps="3 3-whole"
    for run in $nps; do
      np=${run%%-*}
      rm -f net.nc ck*.nc
      extra=()
      [[ $run == *-whole ]] && extra=(--no-stream)
      run_np $np "$tools/nn-train" train.cdl "${extra[@]}" 2>dp.log ||
        fail "$setting np $np: $(tail -5 dp.log)"
      grep -q "data parallel: $np ranks" dp.log || fail "$setting np $np: not data parallel"
      grep -q "^row-sparse update of Hidden<-Input:weights ($mode" dp.log &&
        ! grep -q "^dense update of Hidden<-Input" dp.log ||
        fail "$setting np $np: the ranks did not update by rows: $(grep -i 'update of' dp.log)"
      losses dp.log >dp.loss
      close dp.loss one.loss 1e-5 ||
        fail "$setting np $np (batch $batch): losses differ: $(paste dp.loss one.loss | tr '\n' ' ')"
      predict 1 net.nc dp.recs
      cmp -s dp.recs one.recs || fail "$setting np $np (batch $batch): top-10 lists differ"
    done
  done
done

# Model parallel: Hidden (fed by the sparse input) and Output split over the ranks.
pin_parallel Model base.json config.json
for setting in "SGD Exact" "RMSProp Exact" "Adam Lazy"; do
  read -r optimizer mode <<<"$setting"
  train_cdl 7
  sed -i "s/\"Optimizer\": \"Adam\"/\"Optimizer\": \"$optimizer\", \"SparseUpdate\": \"$mode\"/; s/\"Lambda\": 0.001/\"Lambda\": 0/" train.cdl
  rm -f net.nc ck*.nc
  run_np 1 "$tools/nn-train" train.cdl 2>one.log || fail "$setting: one process: $(tail -3 one.log)"
  mv net.nc one.nc
  losses one.log >one.loss
  predict 1 one.nc one.recs
  for np in 2 3; do
    rm -f net.nc ck*.nc
    run_np $np "$tools/nn-train" train.cdl 2>mp.log || fail "$setting model np $np: $(tail -5 mp.log)"
    grep -q "model parallel: $np ranks" mp.log || fail "$setting np $np: not model parallel"
    grep -q "^row-sparse update of Hidden<-Input:weights ($mode" mp.log &&
      ! grep -q "^dense update of Hidden<-Input" mp.log ||
      fail "$setting model np $np: the split layer did not update by rows: $(grep -i 'update of' mp.log)"
    losses mp.log >mp.loss
    close mp.loss one.loss 1e-5 ||
      fail "$setting model np $np: losses differ: $(paste mp.loss one.loss | tr '\n' ' ')"
    predict 1 net.nc mp.recs
    cmp -s mp.recs one.recs || fail "$setting model np $np: top-10 lists differ"
  done
done
echo "mpi_train_row_sparse: ok"
