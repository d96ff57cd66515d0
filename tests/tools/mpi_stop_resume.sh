#!/usr/bin/env bash
# Polite stops under mpirun (CTest label mpi; docs/reliability.md, "Stopping"): SIGTERM to one
# rank stops every rank after the same minibatch, rank 0 saves that state and prints one line,
# and --resume ends with the uninterrupted 2-rank run's network, byte for byte; data parallel
# and model parallel layers alike. SIGTERM to mpirun itself (which forwards it to every rank)
# stops the job the same way when mpirun gives the ranks time (odls_base_sigkill_timeout).
# Usage: mpi_stop_resume.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
enter_work_dir
require_netcdf_bin
source "$here/lib/mpi.sh"
temps() { (ls -A | grep -E '\.tmp\.') || true; }

# 40 examples in minibatches of 7: 6 per epoch; update 16 is minibatch 4 of epoch 3.
train_cdl 7
for mode in Data Model; do
  pin_parallel $mode config.json $mode.json
  mkdir "$mode"
  sed "s/config.json/..\/$mode.json/; s/\"input.nc\", \"output.nc\"/\"..\/input.nc\", \"..\/output.nc\"/" \
    train.cdl >"$mode/train.cdl"
  cd "$mode"
  mkdir ref
  sed 's/\.\.\//..\/..\//g' train.cdl >ref/train.cdl
  (cd ref && run_np 2 "$tools/nn-train" train.cdl -q) || fail "$mode: uninterrupted run failed"
  status=0
  NN_TEST_FAIL_RANK=1 NN_TEST_FAIL_STEP=16 NN_TEST_FAIL_MODE=sigterm \
    run_np 2 "$tools/nn-train" train.cdl 2>stop.err || status=$?
  [[ $status == 143 ]] || fail "$mode: SIGTERM to rank 1: status $status: $(cat stop.err)"
  [[ $(grep -c '^nn-train: stopped by' stop.err) == 1 ]] &&
    grep -q '^nn-train: stopped by SIGTERM in epoch 3 after minibatch 4 of 6 (update 16); the training state is in ck2_4.nc; to continue, run the same command with --resume$' \
      stop.err || fail "$mode: not one stop line on rank 0: $(grep -v '^  ' stop.err)"
  [[ -s ck2_4.nc && ! -e net.nc && -z $(temps) ]] || fail "$mode: files after the stop: $(ls -A)"
  run_np 2 "$tools/nn-train" train.cdl --resume 2>resume.err || fail "$mode: --resume: $(cat resume.err)"
  grep -q '^resuming in epoch 3 after minibatch 4 (16 updates done)$' resume.err ||
    fail "$mode: $(grep resum resume.err)"
  cmp -s net.nc ref/net.nc || fail "$mode: the resumed network differs from the uninterrupted run's"
  [[ ! -e ck2_4.nc && -z $(temps) ]] || fail "$mode: files after --resume: $(ls -A)"
  cd ..
done

# SIGTERM to mpirun: Open MPI 4.1's mpirun stops relaying the ranks' output, sends them SIGCONT,
# waits odls_base_sigkill_timeout seconds (default 1), sends SIGTERM, waits as long again and
# sends SIGKILL. 5 s here give the ranks time to finish on a busy machine; -q keeps rank 0 from
# filling the pipe mpirun no longer reads (docs/reliability.md). The run is too long to end first.
mkdir forwarded
sed 's/"Epochs": 6/"Epochs": 100000/; s/"CheckpointInterval": 3/"CheckpointInterval": 20/; s/config.json/..\/config.json/; s/"input.nc", "output.nc"/"..\/input.nc", "..\/output.nc"/' \
  train.cdl >forwarded/train.cdl
cd forwarded
OMPI_MCA_odls_base_sigkill_timeout=5 timeout -s KILL 300 mpirun -np 2 --oversubscribe \
  "$tools/nn-train" train.cdl -q 2>stop.err &
pid=$!
while [[ ! -e ck20.nc ]] && kill -0 $pid 2>/dev/null; do sleep 0.05; done
kill -TERM "$(pgrep -P $pid)"  # mpirun, the child of timeout
wait $pid || true
saved=$(sed -n 's/^nn-train: stopped by SIGTERM .*; the training state is in \([^;]*\);.*/\1/p' stop.err)
[[ -n $saved && -s $saved ]] || fail "SIGTERM to mpirun: no stop line naming a checkpoint: $(tail -n 5 stop.err)"
[[ ! -e net.nc && -z $(temps) ]] || fail "SIGTERM to mpirun: files after the stop: $(ls -A)"
run_np 1 "$tools/nn-predict" -n "$saved" --data ../input.nc -k 3 -s recs.txt -q ||
  fail "SIGTERM to mpirun: $saved does not load"
echo "mpi_stop_resume: ok (SIGTERM to mpirun stopped the job at $saved)"
