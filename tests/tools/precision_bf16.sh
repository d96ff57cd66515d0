#!/usr/bin/env bash
# BF16 arithmetic through the tools (docs/wide-outputs.md, "BF16 arithmetic"): nn-train and
# nn-predict --precision, the network JSON's and the CDL's "Precision" key, the refusal where the
# CPU's BF16 kernels are unavailable (forced here with ONEDNN_MAX_CPU_ISA), and BF16 training and
# scores close to FP32's. On a CPU without AVX512-BF16 only the refusal and the parsing are
# checked, and the script then exits 77 (Skipped). Where BF16 runs, the measured fall-back to FP32
# is checked too (--force-precision elsewhere, so that BF16 runs even on a CPU where it is slower).
# Usage: precision_bf16.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir

tiny_ratings
tiny_datasets "$tools"
# Two hidden layers, so there are dense products in every direction (forward, weight gradient,
# dE/dx into the layer below) besides the sparse input product.
cat >config.json <<'JSON'
{ "Name": "tiny", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "H1", "Kind": "Hidden", "N": 32, "Activation": "Sigmoid" },
    { "Name": "H2", "Kind": "Hidden", "N": 24, "Activation": "Sigmoid" },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Sigmoid" } ] }
JSON
train=("$tools/nn-train" -c config.json -i input.nc -o output.nc -b 8 -e 20 --seed 5 --backend cpu)

# ---- parsing: bad names are refused before anything runs ----
tool=$tools/nn-train
expect_status 2 -c config.json -i input.nc -o output.nc -n x.nc --precision fp16
grep -q -- '--precision: fp16 not in {fp32,bf16}' err.txt || fail "flag check: $(cat err.txt)"
sed 's/"Name": "tiny",/"Name": "tiny", "Precision": "FP16",/' config.json >bad.json
expect_status 1 -c bad.json -i input.nc -o output.nc -n x.nc --backend cpu
grep -q 'Precision.*unknown "FP16"; expected one of FP32, BF16' err.txt || fail "JSON key: $(cat err.txt)"

# ---- the refusal: a clear error naming what is missing, nothing written ----
ONEDNN_MAX_CPU_ISA=AVX2 expect_status 1 -c config.json -i input.nc -o output.nc -n x.nc \
  --backend cpu --precision bf16
grep -q '^nn-train: error: cpu backend: BF16 arithmetic needs ' err.txt || fail "refusal: $(cat err.txt)"
[[ ! -e x.nc ]] || fail "a refused run wrote its network"

if ! "$tools/nn-train" -c config.json -i input.nc -o output.nc -b 8 -e 1 --backend cpu -n probe.nc \
  --precision bf16 2>probe.log; then
  grep -q 'BF16 arithmetic needs' probe.log || fail "bf16 failed otherwise: $(cat probe.log)"
  echo "SKIP: BF16 is refused on this machine: $(grep error: probe.log)"
  exit 77
fi

# ---- training: --precision bf16 and the JSON key give the same run, close to FP32's ----
"${train[@]}" -n fp32.nc 2>fp32.log
# --force-precision: BF16 even where it measures slower than FP32 (on a CPU without AMX).
"${train[@]}" -n bf16.nc --precision bf16 --force-precision 2>bf16.log
grep -q '^precision: BF16 products with FP32 accumulation' bf16.log || fail "bf16 not logged"
grep -q '^precision:' fp32.log && fail "FP32 is the default and says nothing"
sed 's/"Name": "tiny",/"Name": "tiny", "Precision": "BF16",/' config.json >bf16.json
"$tools/nn-train" -c bf16.json -i input.nc -o output.nc -b 8 -e 20 --seed 5 --backend cpu \
  -n key.nc --force-precision 2>key.log
grep -q '^precision: BF16' key.log || fail "the JSON key did not select BF16"
# The flag overrides the key.
"$tools/nn-train" -c bf16.json -i input.nc -o output.nc -b 8 -e 20 --seed 5 --backend cpu \
  -n flag.nc --precision fp32 2>flag.log
grep -q '^precision:' flag.log && fail "--precision fp32 should override the JSON key"
loss() { sed -n 's/^epoch 20\/20: loss \([0-9.]*\) .*/\1/p' "$1"; }
[[ $(loss bf16.log) == "$(loss key.log)" ]] || fail "key and flag runs differ: $(loss bf16.log) vs $(loss key.log)"
[[ $(loss flag.log) == "$(loss fp32.log)" ]] || fail "--precision fp32 run differs from the default"
# BF16 changes the arithmetic (the losses differ) but not the outcome (within 2%).
python3 - "$(loss fp32.log)" "$(loss bf16.log)" <<'PY' || fail "final losses too far apart"
import sys
a, b = map(float, sys.argv[1:])
print(f"final loss fp32 {a} bf16 {b}")
sys.exit(0 if a != b and abs(a - b) <= 0.02 * a else 1)
PY

# Unforced, BF16 is measured against FP32 on the network's widest dense product first: kept
# where it is the faster, else the run says so with both rates and computes in FP32.
"${train[@]}" -n measured.nc --precision bf16 2>measured.log
if grep -q '^warning: BF16 was asked for, but its products are slower than FP32' measured.log; then
  grep -q 'GFLOP/s against FP32.s .* so this run computes in FP32; --force-precision keeps BF16' \
    measured.log || fail "the fallback does not give the rates: $(cat measured.log)"
  [[ $(loss measured.log) == "$(loss fp32.log)" ]] || fail "the fallback did not compute in FP32"
else
  grep -q '^precision: BF16 products .*(BF16 .* GFLOP/s against FP32.s ' measured.log ||
    fail "BF16 kept without its measured rates: $(cat measured.log)"
  [[ $(loss measured.log) == "$(loss bf16.log)" ]] || fail "BF16 kept but computed otherwise"
fi

# ---- prediction: --precision and the CDL key; scores close to FP32's ----
predict=("$tools/nn-predict" -n fp32.nc -r ratings.txt -i features.idx -o features.idx -k 5 -p "%.6f"
  --backend cpu)
"${predict[@]}" -s fp32.txt 2>/dev/null
"${predict[@]}" -s bf16.txt --precision bf16 --force-precision 2>pbf16.log
grep -q '^precision: BF16' pbf16.log || fail "nn-predict bf16 not logged"
cmp -s fp32.txt bf16.txt && fail "BF16 scores should not be bit-identical to FP32's"
python3 - fp32.txt bf16.txt <<'PY' || fail "BF16 scores too far from FP32's"
import sys
def scores(path):
    out = {}
    for line in open(path):
        user, rest = line.rstrip("\n").split("\t")
        out[user] = {i.split(",")[0]: float(i.split(",")[1]) for i in rest.split(":") if i}
    return out
a, b = scores(sys.argv[1]), scores(sys.argv[2])
assert a.keys() == b.keys()
worst = 0.0
for u in a:
    for item in a[u].keys() & b[u].keys():
        worst = max(worst, abs(a[u][item] - b[u][item]))
print(f"largest score difference {worst:.6f}")
sys.exit(0 if worst <= 0.02 else 1)
PY
cat >predict.cdl <<'CDL'
{ "Version": 0.8, "Network": "fp32.nc", "Command": "Predict", "Data": ["input.nc"],
  "Backend": "cpu", "Precision": "BF16", "ForcePrecision": true,
  "PredictionParameters": { "K": 5, "Output": "cdl.txt", "ScoreFormat": "%.6f" } }
CDL
"$tools/nn-predict" predict.cdl 2>cdl.log  # ForcePrecision: the CDL's --force-precision
grep -q '^precision: BF16' cdl.log || fail "the CDL key did not select BF16: $(cat cdl.log)"
"$tools/nn-predict" predict.cdl --precision fp32 2>cdl32.log
grep -q 'overrides predict.cdl.s Precision BF16' cdl32.log || fail "override not described: $(cat cdl32.log)"
grep -q '^precision:' cdl32.log && fail "--precision fp32 should override the CDL key"
echo "OK"
