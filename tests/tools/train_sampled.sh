#!/usr/bin/env bash
# Sampled output training through the tools (docs/wide-outputs.md, "Sampled outputs"): nn-train
# with an Output layer's "Sampling" key and with a CDL's TrainingParameters.Sampling logs the
# sampled layer, learns, stores the key in the network file, and nn-predict scores the full layer
# of the result; Sampling where it cannot run is refused with the path or layer named.
# Usage: train_sampled.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir
command -v ncdump >/dev/null || fail "needs ncdump (netcdf-bin)"

# 120 users in 4 clusters of 25 items; each user rates 6 items of their cluster.
awk 'BEGIN { srand(7); for (u = 0; u < 120; u++) { c = u % 4; line = "u" u "\t";
       for (j = 0; j < 6; j++) line = line "m" (c * 25 + int(rand() * 25)) ":";
       print substr(line, 1, length(line) - 1) } }' >ratings.txt
tiny_datasets "$tools"
network() {  # network ACTIVATION SAMPLING_KEY
  cat <<JSON
{ "Name": "sampled", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 16, "Activation": "Relu" },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "$1" $2 } ] }
JSON
}

network SoftMax ', "Sampling": {"Negatives": 10, "Distribution": "Popularity"}' >softmax.json
"$tools/nn-train" -c softmax.json -i input.nc -o output.nc -n net.nc -b 16 -e 8 --optimizer Adam \
  -alpha 0.01 2>softmax.log
grep -q "^sampled output: layer 'Output' computes each minibatch's targets and 10 Popularity negatives of its 128 units (log-Q corrected SoftMax" softmax.log ||
  fail "no sampled output line: $(cat softmax.log)"
first=$(sed -n 's/^epoch 1\/8: loss \([0-9.]*\).*/\1/p' softmax.log)
last=$(sed -n 's/^epoch 8\/8: loss \([0-9.]*\).*/\1/p' softmax.log)
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' || fail "loss $first -> $last"
ncdump -h net.nc >net.cdl
grep -q 'layer2_nn_samplingNegatives = 10U' net.cdl || fail "Sampling not stored"
"$tools/nn-predict" -n net.nc -r ratings.txt -i features.idx -o features.idx -k 5 >recs.txt 2>predict.log ||
  fail "nn-predict: $(cat predict.log)"
[[ $(wc -l <recs.txt) -eq 120 ]] || fail "nn-predict wrote $(wc -l <recs.txt) lines"

# Validation during sampled training scores the full layer (recall@10 over every unit), and the
# training goes on sampled after it.
"$tools/nn-train" -c softmax.json -i input.nc -o output.nc -n val.nc -b 16 -e 3 --optimizer Adam \
  -alpha 0.01 --validation input.nc output.nc 2>val.log || fail "validation run: $(cat val.log)"
[[ $(grep -c '^validation after epoch [123] (120 examples): recall@10 ' val.log) -eq 3 ]] ||
  fail "validation: $(grep validation val.log)"

# The CDL's TrainingParameters.Sampling applies to the Output layer (Sigmoid here).
network Sigmoid '' >sigmoid.json
cat >train.cdl <<JSON
{ "Version": 0.8, "Network": "sigmoid.json", "Command": "Train", "Data": ["input.nc", "output.nc"],
  "RandomSeed": 3,
  "TrainingParameters": { "Epochs": 3, "MiniBatch": 16, "Alpha": 0.05, "Results": "cdl.nc",
                          "CheckpointInterval": 0, "Sampling": { "Negatives": 7 } } }
JSON
"$tools/nn-train" train.cdl 2>cdl.log || fail "CDL run: $(cat cdl.log)"
grep -q "^sampled output: layer 'Output' computes each minibatch's targets and 7 Uniform negatives .*weighted Sigmoid negatives" cdl.log ||
  fail "CDL Sampling not applied: $(cat cdl.log)"
ncdump -h cdl.nc >cdl.cdl
grep -q 'layer2_nn_samplingNegatives = 7U' cdl.cdl || fail "CDL Sampling not stored"

# Streamed training data (docs/large-datasets.md): one window holds these files, so a streamed
# Uniform-sampled run trains the in-memory run's model, loss for loss. Popularity counts need the
# targets in memory and are refused when they are streamed.
network Sigmoid ', "Sampling": {"Negatives": 7}' >uniform.json
for mode in memory stream; do
  flag=()
  [[ $mode == stream ]] && flag=(--stream)
  "$tools/nn-train" -c uniform.json -i input.nc -o output.nc -n $mode.nc -b 16 -e 3 --seed 5 \
    "${flag[@]}" 2>$mode.log || fail "$mode run: $(cat $mode.log)"
done
grep -q '^streaming the training data' stream.log || fail "not streamed: $(cat stream.log)"
diff <(grep -o '^epoch [0-9]*/3: loss [0-9.]*' memory.log) \
  <(grep -o '^epoch [0-9]*/3: loss [0-9.]*' stream.log) >/dev/null ||
  fail "streamed sampled losses differ: $(grep '^epoch' memory.log stream.log)"
if "$tools/nn-train" -c softmax.json -i input.nc -o output.nc -n x.nc -e 1 --stream 2>err.txt; then
  fail "Popularity sampling of streamed targets was accepted"
fi
grep -q 'Popularity.*streamed' err.txt || fail "popularity streamed: $(cat err.txt)"

# Refusals: on a Hidden layer (the JSON path), with a bad distribution, on a dense target.
sed 's/"Activation": "Relu"/"Activation": "Relu", "Sampling": {"Negatives": 3}/' sigmoid.json >hidden.json
if "$tools/nn-train" -c hidden.json -i input.nc -o output.nc -n x.nc -e 1 2>err.txt; then
  fail "Sampling on a Hidden layer was accepted"
fi
grep -q 'Layers\[1\].Sampling: not valid on a Hidden layer' err.txt || fail "hidden: $(cat err.txt)"
network Sigmoid ', "Sampling": {"Negatives": 3, "Distribution": "Zipf"}' >zipf.json
if "$tools/nn-train" -c zipf.json -i input.nc -o output.nc -n x.nc -e 1 2>err.txt; then
  fail "Distribution Zipf was accepted"
fi
grep -q 'Layers\[2\].Sampling.Distribution: expected "Uniform" or "Popularity", not "Zipf"' err.txt ||
  fail "zipf: $(cat err.txt)"
echo "train_sampled: all checks passed"
