#!/usr/bin/env bash
# End-to-end: text examples -> nn-generate -> nn-train (CDL and flags) -> nn-predict (CDL and
# flags, file and stdout), on tiny data; checks formats, filtering, resume and error handling.
# Usage: pipeline.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$1
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir

# 40 users over 24 items in 3 tastes; each user has most items of one taste.
python3 - <<'PY'
import random
random.seed(5)
with open("ratings.txt", "w") as f:
    for u in range(40):
        t = u % 3
        items = [f"m{t*8+j}" for j in range(8) if random.random() < 0.7] or [f"m{t*8}"]
        f.write(f"u{u}\t" + ":".join(items) + "\n")
PY

"$tools/nn-generate" -d input -i ratings.txt -o input.nc -f features.idx -s samples.idx -c
"$tools/nn-generate" -d output -i ratings.txt -o output.nc -f features.idx -s samples.idx
[ -s input.nc ] && [ -s output.nc ] && [ -s features.idx ] && [ -s samples.idx ] || fail "generate outputs"

cat > config.json <<'JSON'
{ "Name": "tiny", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 8, "Activation": "Sigmoid" },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Sigmoid" } ] }
JSON
cat > train.cdl <<'JSON'
{ "Version": 0.9, "Network": "config.json", "Command": "Train", "RandomSeed": 7,
  "Data": ["input.nc", "output.nc"],
  "TrainingParameters": { "Epochs": 6, "MiniBatch": 8, "Alpha": 0.01, "Optimizer": "Adam",
    "mu": 0.9, "Lambda": 0, "CheckpointName": "ck", "CheckpointInterval": 3, "Results": "net.nc" } }
JSON
"$tools/nn-train" train.cdl > train.out 2> train.log
[[ ! -s train.out ]] || fail "nn-train wrote its log to standard output: $(head -3 train.out)"
grep -q "epoch 6/6" train.log || fail "no epoch report"
[ -s net.nc ] && [ -s ck3.nc ] && [ -s ck6.nc ] || fail "network/checkpoints missing"

# Resume: remove the final result and the last checkpoint, continue from ck3, same network.
cp net.nc net_straight.nc
rm net.nc ck6.nc
"$tools/nn-train" train.cdl --resume 2> resume.log
grep -q "resuming from" resume.log || fail "resume did not resume"
ncdump -v weight0_weights net.nc | sed -n '/data:/,$p' > a.txt
ncdump -v weight0_weights net_straight.nc | sed -n '/data:/,$p' > b.txt
cmp -s a.txt b.txt || fail "resumed weights differ from the uninterrupted run"

# Predict with flags to stdout, excluding seen items.
"$tools/nn-predict" -n net.nc -r ratings.txt -i features.idx -o features.idx -f ratings.txt -k 5 > recs.txt 2> predict.log
[ "$(wc -l < recs.txt)" -eq 40 ] || fail "expected 40 recommendation lines"
head -1 recs.txt | grep -Eq '^u[0-9]+	(m[0-9]+,[0-9.]+:){5}$' || fail "bad recs line: $(head -1 recs.txt)"
python3 - <<'PY' || exit 1
seen = {l.split("\t")[0]: set(l.strip().split("\t")[1].split(":")) for l in open("ratings.txt")}
for line in open("recs.txt"):
    u, rest = line.rstrip("\n").split("\t")
    items = [t.split(",")[0] for t in rest.split(":") if t]
    assert not (set(items) & seen[u]), f"{u} was recommended a seen item"
    scores = [float(t.split(",")[1]) for t in rest.split(":") if t]
    assert scores == sorted(scores, reverse=True), f"{u}: scores not descending"
PY

# Predict with a CDL file into a file, with metrics against the targets.
cat > predict.cdl <<'JSON'
{ "Network": "net.nc", "Command": "Predict", "Data": "input.nc",
  "PredictionParameters": { "K": 3, "Output": "recs_cdl.txt", "OutputIndex": "features.idx",
    "SampleIndex": "samples.idx", "Target": "output.nc" } }
JSON
"$tools/nn-predict" predict.cdl 2> predict_cdl.log
[ "$(wc -l < recs_cdl.txt)" -eq 40 ] || fail "CDL predict lines"
grep -q "^3,0\.[0-9]*,0\.[0-9]*,0\.[0-9]*$" predict_cdl.log || fail "metrics missing: $(cat predict_cdl.log)"

# DSSTNE train flags.
"$tools/nn-train" -c config.json -i input.nc -o output.nc -n flags.nc -b 8 -e 2 -alpha 0.05 -q
[ -s flags.nc ] || fail "flags training wrote nothing"

# Errors: usage (exit 2) and runtime (exit 1) with the tool's prefix, no partial outputs.
set +e
"$tools/nn-train" 2> err.txt; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "^nn-train: error:" err.txt || fail "usage error: rc=$rc $(cat err.txt)"
sed 's/"Activation": "Sigmoid" }/"Activation": "Sigmoidd" }/' config.json > bad.json
sed 's/config.json/bad.json/; s/net.nc/bad.nc/' train.cdl > bad.cdl
set +e
"$tools/nn-train" bad.cdl > /dev/null 2> err.txt; rc=$?
set -e
[ $rc -eq 1 ] && grep -q "^nn-train: error: .*bad.json.*Sigmoidd" err.txt || fail "config error: rc=$rc $(cat err.txt)"
[ ! -e bad.nc ] || fail "partial output after an error"
set +e
"$tools/nn-predict" -n missing.nc -r ratings.txt 2> err.txt; rc=$?
set -e
[ $rc -ne 0 ] && grep -q "^nn-predict: error:" err.txt || fail "missing network: rc=$rc $(cat err.txt)"
echo "pipeline: all checks passed"
