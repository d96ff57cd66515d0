#!/usr/bin/env bash
# A lost rank ends an nn-predict job too (docs/reliability.md, "Lost ranks"): the heartbeats and
# the watchdog live in the process runtime every tool shares. Rank 1, then rank 0, is stopped
# with SIGSTOP as soon as its heartbeats start (NN_TEST_STOP_RANK, a test hook of the
# runtime) before the two ranks score; the other rank names it within NN_MPI_RANK_TIMEOUT, the job
# ends, and no recommendations file (whole or partial) is left where the job would write it.
# Usage: mpi_lost_rank_predict.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$1
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
enter_work_dir
source "$here/lib/mpi.sh"
train_cdl 8
run_np 1 "$tools/nn-train" train.cdl -q 2>train.err || fail "training: $(tail -3 train.err)"
predict=("$tools/nn-predict" -n net.nc --data input.nc --sample-index samples.idx -f input.nc -k 5
         -s recs.txt -q)
run_np 2 "${predict[@]}" 2>whole.err || fail "uninterrupted prediction: $(tail -3 whole.err)"
[[ $(wc -l <recs.txt) == 40 ]] || fail "expected 40 users' recommendations"
mv recs.txt whole.txt

for rank in 1 0; do
  status=0
  start=$(date +%s)
  NN_TEST_STOP_RANK=$rank NN_MPI_RANK_TIMEOUT=3 \
    run_np 2 "${predict[@]}" 2>lost.err || status=$?
  seconds=$(($(date +%s) - start))
  [[ $status != 0 && $status != 124 ]] ||
    fail "rank $rank stopped: status $status (0: not stopped, 124: hung): $(tail -5 lost.err)"
  watcher=$((1 - rank))
  grep -q "rank $watcher: error: rank $rank (on [^)]*) has not been heard from for [0-9]* s (NN_MPI_RANK_TIMEOUT=3)" lost.err ||
    fail "rank $rank stopped: no message naming it: $(cat lost.err)"
  grep -q "no checkpoint was written" lost.err || fail "rank $rank stopped: $(cat lost.err)"
  [[ ! -e recs.txt ]] || fail "rank $rank stopped: a recommendations file was left"
  leftovers=$(ls -A | grep -v -x -E 'ratings.txt|input.nc|output.nc|features.idx|samples.idx|config.json|train.cdl|train.err|net.nc|ck[0-9]+.nc|net.epochs.jsonl|net.png|net.curve.png|whole.txt|whole.err|lost.err' || true)
  [[ -z $leftovers ]] || fail "rank $rank stopped: files left: $leftovers"
  ((seconds < 30)) || fail "rank $rank stopped: the job took $seconds s to end"
  echo "rank $rank stopped: the job ended after ${seconds} s, rank $watcher named it"
done
# The hook touches nothing when no rank is named: the same command still gives the same file.
run_np 2 "${predict[@]}" 2>again.err || fail "prediction after: $(tail -3 again.err)"
cmp -s recs.txt whole.txt || fail "the prediction changed"
echo "mpi_lost_rank_predict: ok"
