#!/usr/bin/env bash
# Closed-form training through the tools (docs/quality.md, "Closed-form training"): a CDL with
# "Solver": "LeastSquares" and no Epochs trains in one solve and writes a network nn-predict
# scores, and the taste structure of the data shows in its recommendations; --solver does the same
# from flags; validation runs once, after the solve; a network it cannot solve and a CDL with an
# unknown solver are refused with the reason.
# Usage: bash train_least_squares.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
require_netcdf_bin
enter_work_dir

# 30 users with 3 tastes of 6 items, each user missing some of their taste's items.
tiny_ratings
tiny_datasets "$tools"
cat >network.json <<'JSON'
{ "Name": "dlae", "ErrorFunction": "L2", "Denoising": { "p": 0.4 },
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Linear" } ] }
JSON
cat >train.cdl <<'JSON'
{ "Version": 0.9, "Network": "network.json", "Command": "Train", "Data": ["input.nc", "output.nc"],
  "TrainingParameters": { "Solver": "LeastSquares", "FitBias": false, "Lambda": 0.05,
                          "Results": "network.nc" } }
JSON
"$tools/nn-train" train.cdl 2>train.log || fail "closed-form training: $(tail -3 train.log)"
grep -q '^solved in closed form: 30 examples, 128 inputs (biases held at 0) -> 128 outputs (the targets are the inputs), denoising p 0.4' train.log ||
  fail "expected the solve's line: $(grep -m1 solved train.log)"
grep -q '^epoch 1/1: loss [0-9.]*' train.log || fail "expected one epoch line: $(cat train.log)"
[[ -s network.nc ]] || fail "no network.nc"
cat >predict.cdl <<'JSON'
{ "Version": 0.9, "Network": "network.nc", "Command": "Predict", "Data": "input.nc",
  "PredictionParameters": { "K": 2, "Output": "recs", "Filter": "ratings.txt",
                            "OutputIndex": "features.idx", "SampleIndex": "samples.idx" } }
JSON
"$tools/nn-predict" predict.cdl 2>predict.log || fail "nn-predict: $(tail -3 predict.log)"
# Every user's first recommendation is an unseen item of their own taste (user u has taste u % 3,
# items m(6t)..m(6t+5), and misses one or two of them; the second may have nothing left to be).
awk -F'\t' '{ u = substr($1, 2); t = u % 3; split($2, recs, ":"); split(recs[1], iv, ",");
     m = substr(iv[1], 2) + 0;
     if (m < 6 * t || m >= 6 * t + 6 || iv[2] <= 0) { print "user " $1 " got " recs[1]; bad = 1 } }
     END { exit bad }' recs >wrong.txt || fail "recommendations outside the user's taste: $(head -3 wrong.txt)"
[[ $(wc -l <recs) == 30 ]] || fail "expected 30 users in recs: $(wc -l <recs)"

# The same from flags; validation once, after the solve.
"$tools/nn-train" -c network.json -i input.nc -o output.nc -n flags.nc --solver LeastSquares \
  --lambda 0.05 --validation input.nc --validation output.nc 2>flags.log ||
  fail "--solver: $(tail -3 flags.log)"
grep -q '^solved in closed form: 30 examples, 128 inputs + bias' flags.log ||
  fail "--solver: $(grep -m1 solved flags.log)"
[[ $(grep -c '^validation after epoch 1 ' flags.log) == 1 ]] || fail "validation: $(cat flags.log)"

# Refused with the reason: another network, another solver name.
sed 's/"Linear"/"Sigmoid"/' network.json >sigmoid.json
if "$tools/nn-train" -c sigmoid.json -i input.nc -o output.nc -n s.nc --solver LeastSquares \
  2>sigmoid.log; then
  fail "a Sigmoid output was solved"
fi
grep -q 'nn-train: error: .*closed-form training (Solver LeastSquares) needs the Output layer .Output. to have "Activation": "Linear"' sigmoid.log ||
  fail "Sigmoid: $(cat sigmoid.log)"
sed 's/"LeastSquares"/"Newton"/' train.cdl >newton.cdl
if "$tools/nn-train" newton.cdl 2>newton.log; then fail "an unknown solver trained"; fi
grep -q 'TrainingParameters.Solver: expected "Gradient" or "LeastSquares", got "Newton"' newton.log ||
  fail "unknown solver: $(cat newton.log)"
echo "train_least_squares: ok"
