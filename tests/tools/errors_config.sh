#!/usr/bin/env bash
# Bad configuration files stop nn-train / nn-predict with exit status 1 and ONE line on stderr
# naming the file, the JSON path, what was found and what was expected; no output file
# (network, checkpoint, recommendations or temporary file) is left behind.
# Usage: errors_config.sh <tool-dir> <source-dir>
set -euo pipefail
here=$(dirname "$(realpath "$0")")
tools=$(realpath "$1")
source "$here/lib/common.sh"
source "$here/lib/error_checks.sh"
enter_work_dir

tiny_ratings
tiny_datasets "$tools"
tiny_config
cat >train.cdl <<'JSON'
{ "Version": 0.9, "Network": "bad.json", "Command": "Train", "RandomSeed": 7,
  "Data": ["input.nc", "output.nc"],
  "TrainingParameters": { "Epochs": 2, "MiniBatch": 8, "CheckpointName": "ck",
                          "CheckpointInterval": 1, "Results": "net.nc" } }
JSON
outputs=(net.nc ck1.nc ck2.nc)

# The good config trains (so the failures below are caused by the edits alone).
cp config.json bad.json
"$tools/nn-train" -q train.cdl || fail "the unedited config should train"
[[ -s net.nc && -s ck2.nc ]] || fail "the unedited config wrote no network"
rm -f net.nc ck1.nc ck2.nc

# ---- network JSON ----
sed 's/"Activation": "Sigmoid" }/"Activtion": "Sigmoid" }/' config.json >bad.json
expect_error 1 '^nn-train: error: .*bad\.json: Layers\[1\]\.Activtion: unknown key; expected one of .*\(did you mean Activation\?\)$' \
  "$tools/nn-train" train.cdl
no_outputs "${outputs[@]}"

sed 's/"Name": "tiny",/"Name": "tiny", "Bogus": 1,/' config.json >bad.json
expect_error 1 '^nn-train: error: .*bad\.json: Bogus: unknown key' "$tools/nn-train" train.cdl
no_outputs "${outputs[@]}"

sed 's/"N": 8/"N": "eight"/' config.json >bad.json
expect_error 1 '^nn-train: error: .*bad\.json: Layers\[1\]\.N: expected an integer.*, got "eight"$' \
  "$tools/nn-train" train.cdl
no_outputs "${outputs[@]}"

sed 's/"Activation": "Sigmoid" }/"Activation": 3 }/' config.json >bad.json
expect_error 1 '^nn-train: error: .*bad\.json: Layers\[1\]\.Activation: .*3' "$tools/nn-train" train.cdl
no_outputs "${outputs[@]}"

sed 's/"N": 8,/"N": 8, "Source": "Nope",/' config.json >bad.json
expect_error 1 '^nn-train: error: .*bad\.json: Layers\[1\]\.Source: .*unknown source layer "Nope"; layers are Input, Hidden, Output$' \
  "$tools/nn-train" train.cdl
no_outputs "${outputs[@]}"

head -c 120 config.json >bad.json
expect_error 1 '^nn-train: error: .*bad\.json: line [0-9]+, column [0-9]+: invalid JSON' \
  "$tools/nn-train" train.cdl
no_outputs "${outputs[@]}"

# The same through DSSTNE's flags.
sed 's/"N": 8,/"N": 8, "Source": "Nope",/' config.json >bad.json
expect_error 1 '^nn-train: error: bad\.json: Layers\[1\]\.Source: .*"Nope"' \
  "$tools/nn-train" -c bad.json -i input.nc -o output.nc -n net.nc -e 1
no_outputs "${outputs[@]}"

# ---- CDL command files ----
cp config.json bad.json
sed 's/"Epochs": 2/"Epocs": 2/' train.cdl >bad.cdl
expect_error 1 '^nn-train: error: .*bad\.cdl: TrainingParameters\.Epocs: unknown key.*\(did you mean Epochs\?\)$' \
  "$tools/nn-train" bad.cdl
no_outputs "${outputs[@]}"

sed 's/"Epochs": 2/"Epochs": "ten"/' train.cdl >bad.cdl
expect_error 1 '^nn-train: error: .*bad\.cdl: TrainingParameters\.Epochs: expected .*"ten"' \
  "$tools/nn-train" bad.cdl
no_outputs "${outputs[@]}"

sed 's/"Version": 0.9,/"Version": 0.9, "Comand": "Train",/' train.cdl >bad.cdl
expect_error 1 '^nn-train: error: .*bad\.cdl: Comand: unknown key.*Command' "$tools/nn-train" bad.cdl
no_outputs "${outputs[@]}"

sed 's/"bad.json"/"missing.json"/' train.cdl >bad.cdl
expect_error 1 '^nn-train: error: .*missing\.json' "$tools/nn-train" bad.cdl
no_outputs "${outputs[@]}"

# nn-predict's CDL: an unknown PredictionParameters key, a wrong type.
"$tools/nn-train" -q -c config.json -i input.nc -o output.nc -n good.nc -e 1 -b 8 \
  --checkpoint-interval 0
cat >predict.cdl <<'JSON'
{ "Network": "good.nc", "Command": "Predict", "Data": "input.nc",
  "PredictionParameters": { "Kk": 3, "Output": "recs.txt" } }
JSON
expect_error 1 '^nn-predict: error: .*predict\.cdl: PredictionParameters\.Kk: unknown key.*K' \
  "$tools/nn-predict" predict.cdl
no_outputs recs.txt
sed 's/"Kk": 3/"K": "three"/' predict.cdl >bad_predict.cdl
expect_error 1 '^nn-predict: error: .*bad_predict\.cdl: PredictionParameters\.K: expected .*"three"' \
  "$tools/nn-predict" bad_predict.cdl
no_outputs recs.txt
sed 's/"Kk": 3/"K": 3, "Layer": "Hiden"/' predict.cdl >bad_predict.cdl
expect_error 1 "^nn-predict: error: .*good\.nc: layer 'Hiden' \(-l\) not found; layers are: Input, Hidden, Output \(did you mean 'Hidden'\?\)$" \
  "$tools/nn-predict" bad_predict.cdl
no_outputs recs.txt

echo "errors_config: all checks passed"
