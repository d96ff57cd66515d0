#!/usr/bin/env bash
# nn-train's feedback on long work: the model summary at the start, examples/s and an ETA on the
# epoch lines, a held-out validation set (flag and CDL keys) with the metric that fits the
# network, early stopping that keeps the best network, the per-epoch JSON-lines log beside the
# results, and the loss-curve PNG (or one note when no plotter is installed; never a failure).
# Usage: train_feedback.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir

tiny_ratings
tiny_datasets "$tools"
tiny_config
# Validation users: their first items as input, their last item held out as the target.
awk -F'\t' 'NR <= 12 { n = split($2, a, ":"); line = $1 "\t";
  for (i = 1; i < n; i++) line = line a[i] (i < n - 1 ? ":" : ""); print line > "vin.txt";
  print $1 "\t" a[n] > "vout.txt" }' ratings.txt
"$tools/nn-generate" -d input -i vin.txt -o vin.nc -f features.idx -s v.idx 2>/dev/null
"$tools/nn-generate" -d output -i vout.txt -o vout.nc -f features.idx -s v.idx 2>/dev/null

# ---- flags: validation every epoch with recall@3; summary; ETA; JSON lines; picture ----
"$tools/nn-train" -c config.json -i input.nc -o output.nc -n net.nc -e 4 -b 8 --alpha 0.5 \
  --validation vin.nc --validation vout.nc --validation-k 3 >flags.log 2>&1
grep -q "^model 'tiny':" flags.log || fail "no model summary: $(head flags.log)"
grep -Eq '^ +Hidden +Hidden FullyConnected Sigmoid +8 +1032 ' flags.log ||
  fail "summary row of Hidden (128x8 weights + 8 biases): $(grep Hidden flags.log)"
grep -Eq '^ +total +2184 ' flags.log || fail "summary total: $(grep total flags.log)"
grep -Eq '^epoch 1/4: loss .*, [0-9]+ examples/s, [0-9.]+ s, ETA [0-9]' flags.log ||
  fail "epoch line without examples/s and ETA: $(grep '^epoch 1/' flags.log)"
grep -q '^validation: recall@3 every 1 epoch' flags.log || fail "validation set-up line"
[[ $(grep -c '^validation after epoch [1-4] (12 examples): recall@3 [0-9.]*, ndcg@3 ' flags.log) == 4 ]] ||
  fail "one validation line per epoch: $(grep validation flags.log)"
[[ -s net.nc && -s net.epochs.jsonl ]] || fail "results and per-epoch log beside them"
[[ $(wc -l <net.epochs.jsonl) == 4 ]] || fail "4 records: $(cat net.epochs.jsonl)"
python3 - net.epochs.jsonl <<'PY' || fail "per-epoch log fields: $(head -1 net.epochs.jsonl)"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for i, r in enumerate(rows):
    assert r["epoch"] == i + 1, r
    for k in ("loss", "examples_per_second", "seconds", "alpha"):
        assert isinstance(r[k], float) or isinstance(r[k], int), (k, r)
    assert r["alpha"] == 0.5, r
    v = r["validation"]
    assert list(v)[:2] == ["recall@3", "ndcg@3"] and 0 <= v["recall@3"] <= 1, v
PY
if command -v gnuplot >/dev/null || python3 -c 'import matplotlib' 2>/dev/null; then
  [[ $(head -c 4 net.curve.png | od -An -c | tr -d ' ') == '211PNG' ]] || fail "net.curve.png is not a PNG"
  grep -q '^wrote the loss curve net.curve.png$' flags.log || fail "curve line"
fi
# Without a plotter on PATH: one note, exit 0, the network still written.
rm -f net.nc net.curve.png
PATH=/nonexistent "$tools/nn-train" -c config.json -i input.nc -o output.nc -n net.nc -e 1 -b 8 \
  >noplot.log 2>&1 || fail "no plotter must not fail the run"
[[ -s net.nc && ! -e net.curve.png ]] || fail "network written, no picture"
[[ $(grep -c 'loss curve not drawn: neither gnuplot nor python3 with matplotlib is installed' noplot.log) == 1 ]] ||
  fail "one-line note: $(cat noplot.log)"

# ---- CDL keys: patience stops early and the best network is kept ----
cat >train.cdl <<'JSON'
{ "Network": "config.json", "Command": "Train", "RandomSeed": 3, "Data": ["input.nc", "output.nc"],
  "TrainingParameters": { "Epochs": 60, "MiniBatch": 8, "Alpha": 2.0, "Optimizer": "SGD",
    "CheckpointInterval": 0, "Results": "cdl.nc", "ValidationData": ["vin.nc", "vout.nc"],
    "ValidationInterval": 2, "ValidationK": 2, "Patience": 2, "KeepBest": true } }
JSON
"$tools/nn-train" train.cdl >cdl.log 2>&1
grep -q '^validation: recall@2 every 2 epoch(s), early stopping after 2 evaluations' cdl.log ||
  fail "CDL validation keys: $(grep '^validation:' cdl.log)"
grep -q '^validation after epoch 1 ' cdl.log && fail "ValidationInterval 2 evaluates even epochs only"
grep -Eq '^early stopping after epoch [0-9]+: recall@2 did not improve in 2 evaluations' cdl.log ||
  fail "no early stop in 60 epochs at alpha 2: $(grep -E 'validation after|stopping' cdl.log | tail -4)"
stopped=$(sed -n 's/^early stopping after epoch \([0-9]*\):.*/\1/p' cdl.log)
best=$(sed -n 's/.*(best [0-9.]* after epoch \([0-9]*\)).*/\1/p' cdl.log | tail -1)
grep -q "^kept the network of epoch $best (best recall@2 " cdl.log || fail "best epoch $best kept: $(tail -3 cdl.log)"
[[ $(wc -l <cdl.epochs.jsonl) == "$stopped" ]] || fail "one record per epoch run (stopped at $stopped)"

# ---- usage errors ----
"$tools/nn-train" -c config.json -i input.nc -o output.nc -n x.nc --patience 2 2>err.txt && fail "--patience without a validation set"
grep -q 'needs a validation set' err.txt || fail "patience message: $(cat err.txt)"
echo "train_feedback: ok"
