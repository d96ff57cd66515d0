#!/usr/bin/env bash
# Sampled output training (docs/wide-outputs.md, "Sampled outputs") data parallel under mpirun
# (CTest label mpi): 2 and 3 ranks, the last batch of one row leaving two ranks idle, match one
# process (losses per epoch and final weights), data parallel and with the Output and Hidden
# layers split over the ranks (model parallel).
# Usage: mpi_train_sampled.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$1
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
enter_work_dir
require_netcdf_bin
source "$here/lib/mpi.sh"
sed 's/"Activation": "Sigmoid" }/"Activation": "SoftMax", "Sampling": {"Negatives": 5, "Distribution": "Popularity"} }/' \
  config.json >sampled.json
grep -q Sampling sampled.json || fail "no Sampling in sampled.json"
pin_parallel Data sampled.json config.json

train_cdl 13
run_np 1 "$tools/nn-train" train.cdl 2>one.log
grep -q "^sampled output: layer 'Output'" one.log || fail "not sampled: $(cat one.log)"
mv net.nc one.nc
losses one.log >one.loss
# matches_one LOG WHAT: the run's losses per epoch and final weights are one process's.
matches_one() {
  losses "$1" >run.loss
  close run.loss one.loss 1e-5 || fail "$2: losses differ: $(paste run.loss one.loss)"
  weights net.nc >a.txt
  weights one.nc >b.txt
  close a.txt b.txt 1e-3 || fail "$2: final weights differ"
}
for np in 2 3; do
  rm -f net.nc ck*.nc
  run_np $np "$tools/nn-train" train.cdl 2>dp.log || fail "np $np: $(tail -5 dp.log)"
  grep -q "data parallel: $np ranks" dp.log || fail "np $np: not data parallel"
  matches_one dp.log "np $np"
done

# Split (model-parallel) layers: the sampled Output layer and the Hidden layer split over 2 and
# 3 ranks match one process too.
pin_parallel Model sampled.json model.json
sed 's/config.json/model.json/' train.cdl >model.cdl
for np in 2 3; do
  rm -f net.nc ck*.nc
  run_np $np "$tools/nn-train" model.cdl 2>mp.log || fail "model parallel, np $np: $(tail -5 mp.log)"
  grep -q "^sampled output: layer 'Output'.*split over $np ranks" mp.log ||
    fail "model parallel, np $np: not split: $(cat mp.log)"
  matches_one mp.log "model parallel, np $np"
done
echo "mpi_train_sampled: ok"
