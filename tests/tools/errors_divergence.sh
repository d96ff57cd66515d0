#!/usr/bin/env bash
# Divergence: a learning rate far too large makes the loss NaN/infinite in epoch 2; nn-train must
# stop with exit status 1 and ONE stderr line naming the epoch and the batch, write no result
# file, and keep the checkpoint of epoch 1 intact (same content as a run that stopped there,
# and still usable by nn-predict and for --resume).
# Usage: errors_divergence.sh <tool-dir> <source-dir>
set -euo pipefail
here=$(dirname "$(realpath "$0")")
tools=$(realpath "$1")
source "$here/lib/common.sh"
enter_work_dir

# 40 users, 3 tastes of 8 items (5 minibatches of 8).
awk 'BEGIN { for (u = 0; u < 40; u++) { t = u % 3; line = "u" u "\t";
       for (j = 0; j < 8; j++) if ((u * 7 + j * 3) % 10 < 7) line = line "m" (t * 8 + j) ":";
       print substr(line, 1, length(line) - 1) } }' >ratings.txt
tiny_datasets "$tools"

# Linear layers with L2: with Alpha 1 the error is multiplied at every update.
cat >config.json <<'JSON'
{ "Name": "diverge", "ErrorFunction": "L2",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 8, "Activation": "Linear" },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Linear" } ] }
JSON
write_cdl() {  # write_cdl EPOCHS FILE
  cat >"$2" <<JSON
{ "Network": "config.json", "Command": "Train", "RandomSeed": 7, "Data": ["input.nc", "output.nc"],
  "TrainingParameters": { "Epochs": $1, "MiniBatch": 8, "Alpha": 1.0, "Lambda": 0,
    "Optimizer": "SGD", "CheckpointName": "ck", "CheckpointInterval": 1, "Results": "net.nc" } }
JSON
}

# Reference: the same run stopped after epoch 1.
write_cdl 1 one.cdl
"$tools/nn-train" one.cdl 2>one.log || fail "epoch 1 alone should train: $(cat one.log)"
[[ -s ck1.nc && -s net.nc ]] || fail "epoch 1 alone wrote no checkpoint/network"
ncdump ck1.nc >ck1_reference.txt
rm ck1.nc net.nc

write_cdl 30 long.cdl
set +e
"$tools/nn-train" long.cdl >long.out 2>long.log
rc=$?
set -e
[[ ! -s long.out ]] || fail "nn-train wrote to standard output: $(cat long.out)"
grep '^nn-train: error:' long.log >err.txt || true
[[ $rc == 1 ]] || fail "divergence should exit 1, got $rc: $(cat long.log)"
[[ $(wc -l <err.txt) == 1 ]] || fail "expected one error line: $(cat long.log)"
[[ $(tail -1 long.log) == "$(cat err.txt)" ]] || fail "the error should be the last line: $(cat long.log)"
grep -Eq '^nn-train: error: training diverged: loss is (NaN|infinite) at epoch 2, batch [1-5] of 5; .*ck1\.nc' err.txt ||
  fail "divergence message: $(cat err.txt)"
grep -q 'epoch 1/30' long.log || fail "epoch 1 should have been reported: $(cat long.log)"
if grep -q 'epoch 2/30' long.log; then fail "epoch 2 must not be reported as finished"; fi

# No result, no later checkpoint, no temporary file; ck1.nc is the complete epoch-1 checkpoint.
[[ ! -e net.nc ]] || fail "a result file was written after divergence"
[[ ! -e ck2.nc ]] || fail "a checkpoint was written for the diverged epoch"
if compgen -G '*.tmp*' >/dev/null; then fail "temporary file left: $(ls ./*.tmp*)"; fi
ncdump ck1.nc >ck1_after.txt
cmp -s ck1_reference.txt ck1_after.txt || fail "ck1.nc differs from the epoch-1 checkpoint"
"$tools/nn-predict" -n ck1.nc -r ratings.txt -i features.idx -o features.idx -k 3 -s recs.txt \
  2>/dev/null || fail "the last checkpoint does not load"
[[ $(wc -l <recs.txt) == 40 ]] || fail "predicting with the kept checkpoint"

# Divergence in the very first epoch: there is no checkpoint, and the message says so.
rm -f ck*.nc
sed 's/"Alpha": 1.0/"Alpha": 10.0/' long.cdl >fast.cdl
set +e
"$tools/nn-train" fast.cdl 2>fast.log
rc=$?
set -e
grep '^nn-train: error:' fast.log >err.txt || true
[[ $rc == 1 && $(wc -l <err.txt) == 1 ]] || fail "first-epoch divergence: rc=$rc $(cat err.txt)"
grep -Eq '^nn-train: error: training diverged: .* at epoch 1, batch [1-5] of 5; .*No checkpoint was written' err.txt ||
  fail "first-epoch divergence message: $(cat err.txt)"
if compgen -G 'ck*.nc' >/dev/null || [[ -e net.nc ]]; then fail "files written after divergence"; fi

echo "errors_divergence: all checks passed"
