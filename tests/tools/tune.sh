#!/usr/bin/env bash
# nn-tune (docs/tuning.md): a random search with successive halving over a tiny autoencoder runs
# every trial for the first rung, keeps the best third for the next rung, resumes them from their
# checkpoints (not from scratch), writes one results row per finished rung, each trial's
# TensorBoard run (hparams and metrics) and the winner's files; run again it does nothing and
# names the same winner; a killed rung is finished by the next run, as is a tune stopped by
# SIGTERM (exit 143, its trials checkpointed and ended, the same winner in the end); a time
# budget starts no trial once spent and names the best of what finished; a grid covers every
# combination, its trials spread over the --devices given; a failing trial is recorded and the
# search goes on; bad tune files and device lists are refused with the key named.
# Usage: tune.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
source "$here/lib/tune.sh"
enter_work_dir
tune_setup "$tools"
cat >tune.json <<'JSON'
{ "Config": "config", "Data": ["input.nc", "output.nc"],
  "ValidationData": ["val_input.nc", "val_output.nc"], "Metric": "ndcg@5",
  "Space": { "TrainingParameters.Alpha": {"LogUniform": [0.001, 0.05]},
             "Network.Layers.Hidden.N": [4, 8, 16],
             "TrainingParameters.mu": {"Uniform": [0.8, 0.95]} },
  "Trials": 6, "Seed": 2, "Epochs": {"Min": 1, "Max": 9, "Eta": 3}, "Output": "out" }
JSON
"$tools/nn-tune" tune.json >out.txt 2>err.txt || fail "tune: $(cat err.txt)"
rows() { awk -F'\t' -v r="$1" 'NR > 1 && $2 == r && NF >= 8' out/results.tsv | wc -l; }
[[ $(rows 0) == 6 && $(rows 1) == 2 && $(rows 2) == 1 ]] ||
  fail "expected 6, 2 and 1 rows for the rungs of 1, 3 and 9 epochs: $(cat out/results.tsv)"
grep -q "^nn-tune: rung 2 of 3: 2 trials to 3 epochs" err.txt || fail "rung 2: $(cat err.txt)"
# The survivors of a rung are its best by the metric (ties either way).
python3 - out/results.tsv <<'PY' || fail "rung 2 did not run the best of rung 1: $(cat out/results.tsv)"
import sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()[1:]]
first = {r[0]: float(r[3]) for r in rows if r[1] == "0"}
promoted = {r[0] for r in rows if r[1] == "1"}
assert len(promoted) == 2
assert min(first[t] for t in promoted) >= max(v for t, v in first.items() if t not in promoted)
PY
winner=$(awk -F'\t' 'NR > 1 && $2 == 2 { print $1 }' out/results.tsv)
trial=$(printf 'out/trial-%03d' "$winner")
grep -q "resuming from checkpoint3.nc" "$trial/train.log" ||
  fail "the last rung did not resume its checkpoint: $(cat "$trial/train.log")"
# Every trial is a run of out/tensorboard for the hparams dashboard; the winner's run holds each
# of its 9 epochs' validation metric once, across its three rungs.
for n in 000 001 002 003 004 005; do
  events=out/tensorboard/trial-$n/events.out.tfevents.nn-train
  grep -aq "_hparams_/session_start_info" "$events" || fail "no hparams in $events"
done
events=out/tensorboard/trial-$(printf '%03d' "$winner")/events.out.tfevents.nn-train
[[ $(grep -ao "validation/ndcg@5" "$events" | wc -l) == 9 ]] ||
  fail "the winner's TensorBoard run: $(grep -ao "validation/ndcg@5" "$events" | wc -l) epochs"
for f in network.json train.cdl network.nc settings.json; do
  [[ -s out/best/$f ]] || fail "out/best/$f missing"
done
# The trials that could neither go on nor win lost their checkpoints and networks; the
# winner's trial keeps them.
[[ $(ls out/trial-*/network.nc) == "$trial/network.nc" ]] ||
  fail "networks left: $(ls out/trial-*/network.nc)"
[[ -z $(ls out/trial-*/checkpoint*.nc | grep -v "^$trial/") ]] ||
  fail "checkpoints left: $(ls out/trial-*/checkpoint*.nc)"
grep -q "^best: trial $winner, ndcg@5 " out.txt || fail "winner line: $(cat out.txt)"
"$tools/nn-predict" -n out/best/network.nc --data input.nc -k 3 -s recs.txt -q ||
  fail "the winner's network does not load"
python3 - out/best/settings.json "$trial/network.json" <<'PY' || fail "settings not applied"
import json, sys
s = json.load(open(sys.argv[1]))["settings"]
net = json.load(open(sys.argv[2]))
assert [l for l in net["Layers"] if l["Name"] == "Hidden"][0]["N"] == s["Network.Layers.Hidden.N"]
PY
# Again: nothing to run, the same winner.
cp out/results.tsv before.tsv
"$tools/nn-tune" tune.json >again.txt 2>&1 || fail "second run: $(cat again.txt)"
cmp -s before.tsv out/results.tsv || fail "a finished tune ran trials again"
grep -q "^best: trial $winner," again.txt || fail "another winner: $(cat again.txt)"
# A tune killed during the last rung: that row missing, the next run runs it (and only it).
head -n -1 out/results.tsv >cut.tsv && mv cut.tsv out/results.tsv
"$tools/nn-tune" tune.json >resumed.txt 2>&1 || fail "resumed run: $(cat resumed.txt)"
[[ $(grep -c "^nn-tune: trial" resumed.txt) == 1 ]] || fail "resumed: $(cat resumed.txt)"
[[ $(rows 2) == 1 ]] || fail "resumed: rows $(cat out/results.tsv)"
# A row cut short by a kill (no line end) does not parse: that rung runs again, on a line of its own.
head -n -1 out/results.tsv >cut.tsv && mv cut.tsv out/results.tsv
printf '%s\t2\t9\t0.3' "$winner" >>out/results.tsv
"$tools/nn-tune" tune.json >cut.txt 2>&1 || fail "after a cut row: $(cat cut.txt)"
[[ $(rows 2) == 1 ]] && grep -q "^best: trial $winner," cut.txt || fail "cut row: $(cat out/results.tsv)"
# A changed tune file is refused for the same output folder.
sed 's/"Seed": 2/"Seed": 3/' tune.json >changed.json
tool=$tools/nn-tune
expect_status 2 --devices 0,x tune.json
grep -q -- '--devices: "x" is not a device index' err.txt || fail "device list: $(cat err.txt)"
expect_status 1 changed.json
grep -q "search (its space, sampler, trials or seed) changed since this tune started" err.txt ||
  fail "changed: $(cat err.txt)"
# A grid: every combination; a failing trial (an optimizer nn-train refuses) is a row, not a stop.
cat >grid.json <<'JSON'
{ "Config": "config", "Data": ["input.nc", "output.nc"],
  "ValidationData": ["val_input.nc", "val_output.nc"],
  "Space": { "TrainingParameters.Optimizer": ["Adam", "NoSuchOptimizer"],
             "Network.Layers.Hidden.N": [4, 8] },
  "Sampler": "Grid", "Epochs": {"Max": 2}, "Output": "grid" }
JSON
# Spread over two devices (--devices; without a GPU the trials' CPU backend ignores them): the
# first two trials start together, one on each, and every trial's log begins with its command.
devices=(--devices 0,1)  # refused on a host with exactly one GPU, where device 1 does not exist
[[ $("$tools/nn-train" --devices 2>/dev/null | grep -c '^cuda:[0-9]') == 1 ]] && devices=()
"$tools/nn-tune" --parallel 2 "${devices[@]}" grid.json >grid.txt 2>&1 || fail "grid: $(cat grid.txt)"
if ((${#devices[@]})); then
  used=$(grep -ho -- '^nn-tune: trial command: nn-train train.cdl .* --device [0-9]*' grid/trial-*/train.log |
    sed 's/.*--device //' | sort -u | tr '\n' ' ')
  [[ $used == "0 1 " ]] || fail "trials not spread over devices 0 and 1: $used"
fi
[[ $(awk -F'\t' 'NR > 1' grid/results.tsv | wc -l) == 4 ]] || fail "grid rows: $(cat grid/results.tsv)"
[[ $(grep -c "failed:exit" grid/results.tsv) == 2 ]] || fail "failures: $(cat grid/results.tsv)"
grep -q '"TrainingParameters.Optimizer":"Adam"' grid/best/settings.json 2>/dev/null ||
  grep -q '"Adam"' grid/best/settings.json || fail "grid winner: $(cat grid/best/settings.json)"
# Stopped with SIGTERM while trials run: exit 143, the finished rungs kept, and the same command
# ends with the winner of an uninterrupted search.
sed 's/"Min": 1, "Max": 9/"Min": 40, "Max": 40/; s/"Output": "out"/"Output": "stop"/' tune.json >stop.json
sed 's/"Output": "stop"/"Output": "whole"/' stop.json >whole.json
"$tools/nn-tune" -q whole.json >whole.txt 2>&1 || fail "whole: $(cat whole.txt)"
"$tools/nn-tune" stop.json >stop.txt 2>&1 &
sigterm_after_first_row $! stop
[[ $status == 143 ]] || fail "stopped tune: status $status: $(cat stop.txt)"
grep -q "stopped by SIGTERM" stop.txt && grep -q "passing it on to the running trials" stop.txt ||
  fail "no stop messages: $(cat stop.txt)"
rows=$(awk 'NR > 1' stop/results.tsv | wc -l)
((rows >= 1 && rows < 6)) || fail "stopped tune: $rows rows"
! pgrep -f "nn-train train.cdl -e 40" >/dev/null || fail "a trial outlived its tune"
"$tools/nn-tune" -q stop.json >stop2.txt 2>&1 || fail "after the stop: $(cat stop2.txt)"
[[ $(awk 'NR > 1' stop/results.tsv | wc -l) == 6 ]] || fail "after the stop: $(cat stop/results.tsv)"
[[ $(grep '^best:' stop2.txt) == $(grep '^best:' whole.txt) ]] ||
  fail "another winner after the stop: $(grep '^best:' stop2.txt whole.txt)"
# A time budget: no trial starts once it is spent, the winner is the best of what finished, and
# the same command without the budget finishes the search with the uninterrupted winner.
sed 's/"Output": "stop"/"Output": "budget"/' stop.json >budget.json
"$tools/nn-tune" --seconds 0.5 budget.json >budget.txt 2>&1 || fail "budget: $(cat budget.txt)"
finished=$(awk 'NR > 1' budget/results.tsv | wc -l)
((finished >= 1 && finished < 6)) || fail "budget rows: $(cat budget/results.tsv)"
grep -q "the time budget of 0.5 s ran out in rung 1: $finished of 6 trials finished it" budget.txt ||
  fail "budget message: $(cat budget.txt)"
best=$(awk -F'\t' 'NR > 1 { print $4, $1 }' budget/results.tsv | sort -gr | head -1 | cut -d' ' -f2)
grep -q "^best: trial $best," budget.txt && [[ -s budget/best/network.nc ]] ||
  fail "budget winner (trial $best expected): $(cat budget.txt)"
"$tools/nn-tune" -q budget.json >budget2.txt 2>&1 || fail "after the budget: $(cat budget2.txt)"
[[ $(awk 'NR > 1' budget/results.tsv | wc -l) == 6 ]] || fail "after the budget: $(cat budget/results.tsv)"
[[ $(grep '^best:' budget2.txt) == $(grep '^best:' whole.txt) ]] ||
  fail "another winner after the budget: $(grep '^best:' budget2.txt whole.txt)"
# Bad tune files name the key.
echo '{"Config": "config", "Data": "input.nc", "ValidationData": "input.nc", "Epochs": {"Max": 2},
  "Space": {"Layers.N": [1]}}' >bad1.json
expect_status 1 bad1.json
grep -q "bad1.json: Space.Layers.N: a path starts with Network." err.txt || fail "$(cat err.txt)"
echo '{"Config": "config", "Data": "input.nc", "ValidationData": "input.nc", "Epochs": {"Max": 2},
  "Space": {"Network.Layers.Nope.N": [1]}, "Output": "bad2"}' >bad2.json
expect_status 1 bad2.json
grep -q "search path Network.Layers.Nope.N: no element 'Nope'" err.txt || fail "$(cat err.txt)"
echo '{"Config": "config", "Data": "input.nc", "ValidationData": "input.nc", "Epochs": {"Max": 2},
  "Space": {"Network.Denoising.p": {"Uniform": [0.5, 0.1]}}}' >bad3.json
expect_status 1 bad3.json
grep -q "Space.Network.Denoising.p.Uniform: expected low < high" err.txt || fail "$(cat err.txt)"
sed 's/"Output": "stop"/"Seconds": 0, "Output": "bad4"/' stop.json >bad4.json
expect_status 1 bad4.json
grep -q "bad4.json: Seconds: expected a positive number of seconds" err.txt || fail "$(cat err.txt)"
echo "tune: ok"
