#!/usr/bin/env bash
# Streaming under mpirun (CTest label mpi; docs/scaling.md, "Data"): each rank reads only the
# examples its rows of the global minibatches take (rank 0's count of examples read is checked:
# 17 of the 40 per epoch with minibatches of 7 over 2 ranks), and -np 2 trains the model -np 1
# trains, with small windows and with one window holding the file (then it is the in-memory
# model too); without --stream the data are sharded the same way by default.
# Usage: mpi_train_streaming.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
enter_work_dir
require_netcdf_bin
source "$here/lib/mpi.sh"
pin_parallel Data config.json dp.json
mv dp.json config.json
train_cdl 7

run_np 1 "$tools/nn-train" train.cdl --backend cpu 2>mem.log || fail "in memory: $(tail -3 mem.log)"
weights net.nc >mem.txt
for window in "" "--stream-chunk 5 --stream-window 3"; do
  # shellcheck disable=SC2086 # $window is a list of flags
  run_np 1 "$tools/nn-train" train.cdl --backend cpu --stream $window 2>one.log ||
    fail "np 1 $window: $(tail -3 one.log)"
  weights net.nc >one.txt
  grep -q 'streaming: epoch 1 read 40 examples' one.log || fail "np 1 $window: $(grep read one.log)"
  # shellcheck disable=SC2086
  run_np 2 "$tools/nn-train" train.cdl --backend cpu --stream $window 2>two.log ||
    fail "np 2 $window: $(tail -3 two.log)"
  weights net.nc >two.txt
  grep -q "data parallel: 2 ranks" two.log || fail "np 2: not data parallel"
  # Rank 0 takes rows [0, 3) of each minibatch of 7 and [0, 2) of the last one of 5.
  [[ $(grep -c 'streaming: epoch [0-9] read 17 examples' two.log) == 6 ]] ||
    fail "np 2 $window: rank 0 should read 17 examples per epoch: $(grep read two.log)"
  close <(losses two.log) <(losses one.log) 1e-5 ||
    fail "np 2 $window: losses differ from np 1: $(paste <(losses two.log) <(losses one.log))"
  close two.txt one.txt 1e-3 || fail "np 2 $window: weights differ from np 1"
  if [[ -z $window ]]; then
    [[ $(losses one.log) == "$(losses mem.log)" ]] || fail "one window: not the in-memory losses"
    cmp -s one.txt mem.txt || fail "one window: not the in-memory weights"
  fi
done
# Without --stream the data are sharded by default under mpirun: one window holding the file,
# rank 0 reading only its 17 examples an epoch, the in-memory model; --no-stream reads them whole.
run_np 2 "$tools/nn-train" train.cdl --backend cpu 2>auto.log || fail "np 2 default: $(tail -3 auto.log)"
weights net.nc >auto.txt
grep -q '^data sharded over the ranks' auto.log || fail "np 2 default: not sharded: $(head -20 auto.log)"
[[ $(grep -c 'streaming: epoch [0-9] read 17 examples' auto.log) == 6 ]] ||
  fail "np 2 default: rank 0 should read 17 examples per epoch: $(grep read auto.log)"
close <(losses auto.log) <(losses mem.log) 1e-5 ||
  fail "np 2 default: losses differ from np 1 in memory: $(paste <(losses auto.log) <(losses mem.log))"
close auto.txt mem.txt 1e-3 || fail "np 2 default: weights differ from np 1 in memory"
run_np 2 "$tools/nn-train" train.cdl --backend cpu --no-stream 2>whole.log ||
  fail "np 2 --no-stream: $(tail -3 whole.log)"
if grep -q 'data sharded\|streaming' whole.log; then fail "np 2 --no-stream streamed"; fi
echo "mpi_train_streaming: ok"
