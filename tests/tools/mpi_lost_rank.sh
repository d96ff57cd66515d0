#!/usr/bin/env bash
# A lost rank ends the whole job promptly, named (docs/reliability.md, "Lost ranks"): a rank
# stopped with SIGSTOP (rank 1, then rank 0) is named by the rank that listens for its heartbeats
# once NN_MPI_RANK_TIMEOUT has passed, with the last checkpoint; a rank killed with SIGKILL ends
# the job through mpirun, which names it. Each time the checkpoint on disk loads and --resume
# ends with the uninterrupted run's network, byte for byte. The failures are injected at an exact
# update with NN_TEST_FAIL_MODE=sigstop|sigkill (src/tools/nn-train/failure_injection.h).
# Usage: mpi_lost_rank.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$1
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
enter_work_dir
require_netcdf_bin
source "$here/lib/mpi.sh"
train_cdl 7  # 6 steps an epoch, a checkpoint every 3 epochs (ck3.nc after update 18)

run_np 2 "$tools/nn-train" train.cdl -q 2>whole.err || fail "uninterrupted run: $(tail -3 whole.err)"
mv net.nc whole.nc
rm -f ck*.nc

for case in sigstop:1 sigstop:0 sigkill:1; do
  mode=${case%:*} rank=${case#*:}
  rm -f ck*.nc net.nc
  status=0
  start=$(date +%s)
  NN_TEST_FAIL_RANK=$rank NN_TEST_FAIL_STEP=25 NN_TEST_FAIL_MODE=$mode NN_MPI_RANK_TIMEOUT=5 \
    run_np 2 "$tools/nn-train" train.cdl -q >/dev/null 2>lost.err || status=$?
  seconds=$(($(date +%s) - start))
  [[ $status != 0 && $status != 124 ]] ||
    fail "$case: status $status (0: not stopped, 124: hung): $(tail -5 lost.err)"
  [[ ! -e net.nc ]] || fail "$case: a network was written"
  case $mode in
    sigstop)
      watcher=$((1 - rank))
      grep -q "rank $watcher: error: rank $rank (on [^)]*) has not been heard from for [0-9]* s (NN_MPI_RANK_TIMEOUT=5)" lost.err ||
        fail "$case: no message naming rank $rank: $(cat lost.err)"
      grep -q "the last checkpoint is ck3.nc, from which the same command with --resume continues" lost.err ||
        fail "$case: the message does not name the last checkpoint: $(cat lost.err)"
      ;;
    sigkill)
      grep -qi "rank $rank .*signal 9\|rank $rank .*killed" lost.err ||
        fail "$case: mpirun did not name rank $rank: $(cat lost.err)"
      ;;
  esac
  [[ -s ck3.nc ]] || fail "$case: no checkpoint ck3.nc: $(ls)"
  run_np 1 "$tools/nn-predict" -n ck3.nc --data input.nc -k 3 -s recs.txt -q ||
    fail "$case: ck3.nc does not load"
  run_np 2 "$tools/nn-train" train.cdl --resume -q 2>resume.err ||
    fail "$case: --resume failed: $(tail -3 resume.err)"
  cmp -s net.nc whole.nc || fail "$case: the resumed run's network differs from the uninterrupted run's"
  echo "$case: ended after ${seconds} s, resumed"
done
echo "mpi_lost_rank: ok"
