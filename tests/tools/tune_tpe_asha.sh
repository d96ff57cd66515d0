#!/usr/bin/env bash
# nn-tune's model-based sampler and asynchronous schedule (docs/tuning.md): a TPE search under
# ASHA with two trials at a time draws its first trials at random and the rest from the results
# (one trials.jsonl line each, as drawn), promotes a trial before the first rung is complete,
# ends with successive halving's counts and a winner whose files work; a run cut short by a time
# budget keeps its draws and the same command finishes it; a changed sampler for the same Output
# is refused; a constant liar counts the running trial at the draws made beside it (with the
# multivariate density); StartupTrials, ConstantLiar or Multivariate without TPE and an unknown
# schedule are refused with the key named.
# Usage: tune_tpe_asha.sh <tool-dir> <source-dir>
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
  "Space": { "TrainingParameters.Alpha": {"LogUniform": [0.0005, 0.1]},
             "Network.Layers.Hidden.N": [2, 4, 8, 16] },
  "Sampler": "TPE", "StartupTrials": 3, "Trials": 9, "Seed": 4, "Schedule": "ASHA",
  "Epochs": {"Min": 1, "Max": 9, "Eta": 3}, "Output": "out" }
JSON
"$tools/nn-tune" --parallel 2 --keep-files tune.json >out.txt 2>err.txt || fail "tune: $(cat err.txt)"
# --keep-files: every trial's network stays.
[[ $(ls out/trial-*/network.nc | wc -l) == 9 ]] || fail "--keep-files: $(ls out/trial-*/network.nc)"
[[ $(wc -l <out/trials.jsonl) == 9 ]] || fail "trials.jsonl: $(cat out/trials.jsonl)"
[[ $(grep -c "drawn by TPE from" err.txt) == 6 ]] || fail "TPE draws: $(cat err.txt)"
grep -q "nn-tune: 9 trials (TPE, ASHA)" err.txt || fail "header: $(cat err.txt)"
rows() { awk -F'\t' -v r="$1" 'NR > 1 && $2 == r && NF >= 8' out/results.tsv | wc -l; }
((rows0 = $(rows 0), rows1 = $(rows 1), rows2 = $(rows 2))) || true
[[ $rows0 == 9 ]] && ((rows1 >= 3 && rows2 >= 1)) ||
  fail "rows per rung: $rows0 $rows1 $rows2: $(cat out/results.tsv)"
# Asynchronous: a second-rung row before the last first-rung row.
python3 - out/results.tsv <<'PY' || fail "no promotion before rung 1 ended: $(cat out/results.tsv)"
import sys
rungs = [l.split("\t")[1] for l in open(sys.argv[1]).read().splitlines()[1:]]
last0 = max(i for i, r in enumerate(rungs) if r == "0")
assert any(r == "1" for r in rungs[:last0]), rungs
PY
# Every promotion was among the best floor(m/3) of the m results its rung had when it was
# decided (those written before its own row, a prefix of them), or among the best ceil(n/3) of
# the rung's final n (the rung once final). Ties: the lower trial first, as nn-tune ranks them.
python3 - out/results.tsv <<'PY' || fail "a promotion outside the best third: $(cat out/results.tsv)"
import sys, math
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()[1:]]
def metric(r):
    return float(r[3]) if r[3] != "-" else -math.inf
def best(results, n):
    ranked = sorted(results, key=lambda r: (-metric(r), int(r[0])))
    return {r[0] for r in ranked[:n]}
for i, r in enumerate(rows):
    rung = int(r[1])
    if rung == 0:
        continue
    below = [x for x in rows if int(x[1]) == rung - 1]
    before = [x for x in rows[:i] if int(x[1]) == rung - 1]
    ok = r[0] in best(below, math.ceil(len(below) / 3))
    ok = ok or any(r[0] in best(before[:m], m // 3) for m in range(3, len(before) + 1))
    assert ok, (r[0], rung)
PY
winner=$(awk '/^best: trial/ { sub(",", "", $3); print $3 }' out.txt)
[[ -n $winner && $(awk -F'\t' -v w="$winner" 'NR > 1 && $1 == w && $2 == 2' out/results.tsv |
  wc -l) == 1 ]] || fail "the winner is not from the last rung: $(cat out.txt out/results.tsv)"
"$tools/nn-predict" -n out/best/network.nc --data input.nc -k 3 -s recs.txt -q ||
  fail "the winner's network does not load"
# Again: nothing runs, the same winner, the same draws.
cp out/trials.jsonl trials-before.jsonl
cp out/results.tsv results-before.tsv
"$tools/nn-tune" tune.json >again.txt 2>&1 || fail "again: $(cat again.txt)"
cmp -s trials-before.jsonl out/trials.jsonl && cmp -s results-before.tsv out/results.tsv ||
  fail "a finished tune drew or ran again"
[[ $(grep '^best:' again.txt) == $(grep '^best:' out.txt) ]] || fail "another winner: $(cat again.txt)"
# A time budget cuts the search short; the same command finishes it on the draws it made.
sed 's/"Output": "out"/"Output": "budget"/; s/"Schedule": "ASHA"/"Schedule": "Halving"/' tune.json \
  >budget.json
"$tools/nn-tune" --seconds 0.3 budget.json >budget.txt 2>&1 || fail "budget: $(cat budget.txt)"
grep -q "the time budget of 0.3 s ran out" budget.txt || fail "budget: $(cat budget.txt)"
drawn=$(wc -l <budget/trials.jsonl)
((drawn >= 1 && drawn <= 9)) || fail "budget draws: $drawn"
head -n "$drawn" budget/trials.jsonl >drawn-before.jsonl
"$tools/nn-tune" budget.json >budget2.txt 2>&1 || fail "after the budget: $(cat budget2.txt)"
[[ $(wc -l <budget/trials.jsonl) == 9 ]] && cmp -s drawn-before.jsonl <(head -n "$drawn" budget/trials.jsonl) ||
  fail "the draws before the budget were not kept: $(cat budget/trials.jsonl)"
grep -q "rung 2 of 3:" budget2.txt || fail "halving after the budget: $(cat budget2.txt)"
[[ $(awk -F'\t' 'NR > 1 && $2 == 0' budget/results.tsv | wc -l) == 9 ]] ||
  fail "rung 0 after the budget: $(cat budget/results.tsv)"
# A constant liar (with the joint density): with two trials at a time, the TPE draws made
# while the other trial runs count it as the worst result, and say so.
sed 's/"Seed": 4,/"Seed": 4, "ConstantLiar": true, "Multivariate": true,/; s/"Output": "out"/"Output": "liar"/' \
  tune.json >liar.json
"$tools/nn-tune" --parallel 2 liar.json >liar.txt 2>&1 || fail "liar: $(cat liar.txt)"
[[ $(grep -c "drawn by TPE from" liar.txt) == 6 ]] || fail "liar's TPE draws: $(cat liar.txt)"
grep -q "drawn by TPE from [0-9]* results and 1 trials without one (as the worst)" liar.txt ||
  fail "no draw counted a running trial: $(cat liar.txt)"
# A changed sampler for the same Output is refused.
tool=$tools/nn-tune
sed 's/"Sampler": "TPE", "StartupTrials": 3,/"Sampler": "Random",/' tune.json >random.json
expect_status 1 random.json
grep -q "changed since this tune started; give another Output" err.txt || fail "$(cat err.txt)"
sed 's/"Sampler": "TPE", /"Sampler": "Random", /; s/"Output": "out"/"Output": "bad1"/' tune.json >bad1.json
expect_status 1 bad1.json
grep -q 'bad1.json: StartupTrials: only for "Sampler": "TPE"' err.txt || fail "$(cat err.txt)"
sed 's/"Sampler": "TPE", "StartupTrials": 3,/"Sampler": "Random", "ConstantLiar": true,/; s/"Output": "out"/"Output": "bad3"/' \
  tune.json >bad3.json
expect_status 1 bad3.json
grep -q 'bad3.json: ConstantLiar: only for "Sampler": "TPE"' err.txt || fail "$(cat err.txt)"
sed 's/"Sampler": "TPE", "StartupTrials": 3,/"Sampler": "Random", "Multivariate": true,/; s/"Output": "out"/"Output": "bad4"/' \
  tune.json >bad4.json
expect_status 1 bad4.json
grep -q 'bad4.json: Multivariate: only for "Sampler": "TPE"' err.txt || fail "$(cat err.txt)"
sed 's/"Schedule": "ASHA"/"Schedule": "Hyperband"/' tune.json >bad2.json
expect_status 1 bad2.json
grep -q "bad2.json: Schedule: expected Halving (rung by rung) or ASHA" err.txt || fail "$(cat err.txt)"
echo "tune_tpe_asha: ok"
