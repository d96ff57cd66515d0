#!/usr/bin/env bash
# Polite stops (docs/reliability.md, "Stopping"): SIGTERM or SIGINT makes nn-train finish the
# minibatch in flight, save a checkpoint of that exact state (mid-epoch included), print one line
# saying where it stopped and how to resume, and exit with 128 + signal; --resume then ends with
# the uninterrupted run's network, byte for byte. A second signal ends it at once without a
# partial file. nn-generate and nn-predict stop without writing anything. No temporary file is
# left in the directory or in TMPDIR, whatever ended the run. A few seconds.
# Usage: reliability_stop.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir
export TMPDIR=$work/tmp
mkdir "$TMPDIR"
tiny_ratings
tiny_datasets "$tools"
tiny_config 1500  # ~1.5 MB checkpoints, so writing one takes a moment
# 30 examples in minibatches of 4: 8 per epoch.
base=("$tools/nn-train" -c ../config.json -i ../input.nc -o ../output.nc -n net.nc -b 4 --seed 7
      --threads 1)
train=("${base[@]}" -e 6 --checkpoint-interval 2)

temps() { (ls -A . "$TMPDIR" | grep -E '\.tmp\.|nn-train-plot-') || true; }
losses() { grep -o '"loss":[^,]*' "$1"; }
mkdir ref
(cd ref && "${train[@]}" -q) || fail "uninterrupted run failed"

# stop_then_resume DIR SIGNAL STEP EXIT LINE: the signal at the start of update STEP (the test
# hook of failure_injection.h), then --resume.
stop_then_resume() {
  local dir=$1 signal=$2 step=$3 want=$4 line=$5 got=0
  mkdir "$dir"
  cd "$dir"
  NN_TEST_FAIL_RANK=0 NN_TEST_FAIL_STEP=$step NN_TEST_FAIL_MODE=$signal "${train[@]}" 2>err.txt ||
    got=$?
  [[ $got == "$want" ]] || fail "$signal at update $step: exit $got, expected $want: $(cat err.txt)"
  [[ $(tail -n 1 err.txt) == "nn-train: $line" ]] ||
    fail "$signal at update $step: last line: $(tail -n 1 err.txt)"
  grep -q "^nn-train: ${signal^^}: stopping after the current minibatch and saving a checkpoint" \
    err.txt || fail "$signal: no notice when the signal came: $(cat err.txt)"
  [[ ! -e net.nc ]] || fail "$signal: a stopped run wrote the result"
  [[ -z $(temps) ]] || fail "$signal: temporary files left: $(temps)"
  "${train[@]}" --resume 2>resume.txt || fail "$signal: --resume failed: $(cat resume.txt)"
  cmp -s net.nc ../ref/net.nc || fail "$signal: the resumed network differs from the uninterrupted run's"
  [[ $(losses net.epochs.jsonl) == "$(losses ../ref/net.epochs.jsonl)" ]] ||
    fail "$signal: the per-epoch losses differ: $(diff <(losses net.epochs.jsonl) <(losses ../ref/net.epochs.jsonl))"
  [[ -z $(temps) ]] || fail "$signal: temporary files left after --resume: $(temps)"
  cd ..
}
# Update 21 is minibatch 5 of epoch 3: saved as net2_5.nc (2 epochs and 5 minibatches done).
stop_then_resume term sigterm 21 143 "stopped by SIGTERM in epoch 3 after minibatch 5 of 8 (update 21); the training state is in net2_5.nc; to continue, run the same command with --resume"
[[ ! -e term/net2_5.nc ]] || fail "the stopped run's checkpoint outlived the finished run"
# SIGINT (Ctrl-C) in the last minibatch of epoch 3: the epoch ends, then the run stops.
stop_then_resume int sigint 24 130 "stopped by SIGINT after epoch 3 (update 24); the training state is in net3.nc; to continue, run the same command with --resume"

# A real signal from outside while training runs, then --resume.
mkdir async
cd async
"${base[@]}" -e 400 --checkpoint-interval 2 2>err.txt &
pid=$!
while [[ ! -e net2.nc ]] && kill -0 $pid 2>/dev/null; do sleep 0.01; done
kill -TERM $pid
got=0
wait $pid || got=$?
[[ $got == 143 ]] || fail "kill -TERM: exit $got: $(tail -n 3 err.txt)"
saved=$(tail -n 1 err.txt | sed -n 's/.*; the training state is in \([^;]*\);.*/\1/p')
[[ -n $saved && -s $saved ]] || fail "kill -TERM: no checkpoint named: $(tail -n 1 err.txt)"
[[ -z $(temps) ]] || fail "kill -TERM: temporary files left: $(temps)"
"$tools/nn-predict" -n "$saved" --data ../input.nc -k 3 -s recs.txt -q ||
  fail "kill -TERM: the saved state $saved does not load"
cd ..

# A second signal ends the run at once: wait until the stop's checkpoint is being written (an
# unnamed file of this directory is open), then signal again. Nothing partial, every file whole.
mkdir twice
cd twice
hits=0
for round in 1 2 3; do
  "${base[@]}" -e 400 --checkpoint-interval 0 -q 2>err.txt &
  pid=$!
  while [[ ! -s net.epochs.jsonl ]] && kill -0 $pid 2>/dev/null; do sleep 0.01; done
  kill -TERM $pid
  deadline=$((SECONDS + 30))
  while kill -0 $pid 2>/dev/null && ((SECONDS < deadline)); do
    if ls -l /proc/$pid/fd 2>/dev/null | grep -q "$PWD/#.*(deleted)"; then
      hits=$((hits + 1))
      break
    fi
  done
  kill -TERM $pid 2>/dev/null || true
  got=0
  wait $pid || got=$?
  [[ $got == 143 ]] || fail "second signal: exit $got: $(cat err.txt)"
  [[ -z $(temps) ]] || fail "second signal: temporary files left: $(temps)"
  for f in net*.nc; do
    [[ -e $f ]] || continue
    "$tools/nn-predict" -n "$f" --data ../input.nc -k 3 -s recs.txt -q || fail "$f does not load"
  done
  rm -f net*.nc net.epochs.jsonl recs.txt
done
cd ..

# nn-generate and nn-predict: the signal while they read standard input, then the rest of it.
# (A FIFO holds them in read(); the read goes on after the signal, the run stops before writing.)
# wait_for_handler PID: until the tool catches SIGTERM (bit 15 of SigCgt in /proc/PID/status):
# a signal before that, while the process still starts (MPI, libraries), would kill it instead.
wait_for_handler() {
  local mask
  for _ in $(seq 600); do
    mask=$(awk '/^SigCgt:/ { print $2 }' "/proc/$1/status" 2>/dev/null || true)
    [[ -n $mask ]] && (((16#$mask >> 14) & 1)) && return 0
    sleep 0.05
  done
  fail "process $1 did not install its SIGTERM handler within 30 s"
}
mkfifo feed
"$tools/nn-generate" -d input -i - -o gen.nc -f gen.idx -s gen_samples.idx -c <feed 2>gen.txt &
pid=$!
exec 3>feed
head -n 10 ratings.txt >&3
wait_for_handler $pid
kill -TERM $pid
tail -n +11 ratings.txt >&3
exec 3>&-
got=0
wait $pid || got=$?
[[ $got == 143 ]] || fail "nn-generate: exit $got: $(cat gen.txt)"
[[ $(tail -n 1 gen.txt) == "nn-generate: stopped by SIGTERM before writing gen.nc; nothing was written" ]] ||
  fail "nn-generate: $(cat gen.txt)"
[[ ! -e gen.nc && ! -e gen.idx && ! -e gen_samples.idx && -z $(temps) ]] || fail "nn-generate wrote files"

"$tools/nn-predict" -n ref/net.nc -r - -i features.idx -o features.idx -k 3 -s recs.txt <feed \
  2>predict.txt &
pid=$!
exec 3>feed
head -n 10 ratings.txt >&3
wait_for_handler $pid
kill -TERM $pid
tail -n +11 ratings.txt >&3
exec 3>&-
got=0
wait $pid || got=$?
[[ $got == 143 ]] || fail "nn-predict: exit $got: $(cat predict.txt)"
grep -q '^nn-predict: stopped by SIGTERM .*; nothing was written$' predict.txt ||
  fail "nn-predict: $(cat predict.txt)"
[[ ! -e recs.txt && -z $(temps) ]] || fail "nn-predict wrote files"
echo "reliability_stop: ok ($hits of 3 second signals came while an output file was being written)"
