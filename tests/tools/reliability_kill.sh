#!/usr/bin/env bash
# kill -9 during training, at random moments and mid-checkpoint (while a checkpoint is being
# written: its temporary file has no name, so it shows only as an open "(deleted)" file of the
# directory): the newest checkpoint always loads, --resume completes, the final network is
# byte-identical to an uninterrupted run's, and no temporary file is left, not even right after
# the kill. A few seconds.
# Usage: reliability_kill.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$1
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir
tiny_ratings
tiny_datasets "$tools"
tiny_config 1500  # ~1.5 MB checkpoints (weights + momentum), so writing one takes a moment
epochs=16
train=("$tools/nn-train" -c ../config.json -i ../input.nc -o ../output.nc -n net.nc -e "$epochs"
       -b 8 --checkpoint-name ck --checkpoint-interval 1 --seed 7 --threads 1 -q)

mkdir ref killed
(cd ref && "${train[@]}") || fail "uninterrupted run failed"

temps() { compgen -G '.*.tmp.*' || true; }
# True while process $1 has an unnamed (O_TMPFILE) file of this directory open: an output being
# written.
writing() { ls -l "/proc/$1/fd" 2>/dev/null | grep -q "$PWD/#.*(deleted)"; }
newest_checkpoint() { compgen -G 'ck*.nc' | sed 's/^ck\([0-9]*\)\.nc$/\1 &/' | sort -n | tail -1 | cut -d' ' -f2 || true; }

cd killed
mid_checkpoint=0 clean=0
for round in 1 2 3 4 5 6; do
  [[ -e net.nc ]] && break
  "${train[@]}" --resume &
  pid=$!
  deadline=$((SECONDS + 60))
  if ((round % 2)); then
    # Mid-checkpoint: wait until a checkpoint is being written, then kill at once.
    while ! writing "$pid" && [[ -z $(temps) ]] && kill -0 "$pid" 2>/dev/null &&
      ((SECONDS < deadline)); do :; done
  else
    # At a random moment once training is under way (a checkpoint exists).
    while [[ -z $(newest_checkpoint) ]] && kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
      sleep 0.01
    done
    sleep "0.$((RANDOM % 20))"
  fi
  { writing "$pid" || [[ -n $(temps) ]]; } && mid_checkpoint=$((mid_checkpoint + 1))
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  # Nothing named was being written (a name exists only for the instant of the rename).
  [[ -z $(temps) ]] && clean=$((clean + 1))
  ck=$(newest_checkpoint)
  if [[ -n $ck ]]; then
    # The newest checkpoint is whole: it loads and predicts.
    "$tools/nn-predict" -n "$ck" --data ../input.nc -k 3 -s recs.txt -q 2>err.txt ||
      fail "round $round: newest checkpoint $ck does not load: $(cat err.txt)"
  fi
done
[[ -e net.nc || -n $(newest_checkpoint) ]] || fail "no checkpoint written before the kills"
"${train[@]}" --resume || fail "--resume after the kills failed"
[[ -z $(temps) ]] || fail "temporary files left after --resume: $(temps)"
[[ -e net.nc ]] || fail "no final network"
cmp -s net.nc ../ref/net.nc || fail "resumed network differs from the uninterrupted run"
echo "reliability_kill: ok ($mid_checkpoint of 6 kills hit a checkpoint being written; $clean left no temporary file at all)"
