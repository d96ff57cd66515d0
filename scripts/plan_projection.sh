#!/usr/bin/env bash
# The scaling projection of docs/scaling.md ("Projection to H100s"): `nn-train --plan` for
# devices that are not here, on the networks of issue #33: the MovieLens-20M-shaped autoencoder
# (27,278 items, 144 non-zeros per example, batch 256, RMSProp, Sigmoid) with 1x128 and 3x1024
# hidden layers, and a 1,000,000-item output layer (sparse input of 1M items, 100 non-zeros,
# Hidden 128 Tanh, SoftMax output, Adam, batch 256). Each is predicted on 1, 2, 4 and 8 H100s over
# NVLink and on 2 hosts x 8 over InfiniBand NDR (16 ranks in one ring at the IB figures: NCCL's
# hierarchical rings would do better within a host), from the H100's peaks scaled to the one-GPU
# step this project measured on an H100 where there is one (docs/gpu-report.md: 0.80 ms and
# 2.36 ms, FP32) and from its floors alone otherwise. These are predictions, not measurements.
# Usage: scripts/plan_projection.sh [TOOLS_DIR]   (default build/src/tools; ~2 min, 3 GB)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools=$(realpath "${1:-$root/build/src/tools}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

dataset() {  # DIR USERS PER ITEMS: ratings of that shape as input.nc and output.nc in DIR
  mkdir -p "$1"
  USERS=$2 PER=$3 ITEMS=$4 bash "$root/scripts/ml20m_shaped_ratings.sh" "$1/ratings.csv"
  (cd "$1" &&
    "$tools/nn-generate" -q -d input -i ratings.csv --rows --header -o input.nc -f f.idx -s s.idx -c &&
    "$tools/nn-generate" -q -d output -i ratings.csv --rows --header -o output.nc -f f.idx -s s.idx)
}
network() {  # FILE HIDDEN-LAYERS-JSON OUTPUT-ACTIVATION
  cat >"$1" <<JSON
{ "Name": "projection", "Kind": "FeedForward", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    $2
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "$3" } ] }
JSON
}
cdl() {  # FILE DATA-DIR NETWORK OPTIMIZER
  cat >"$1" <<JSON
{ "Version": 0.9, "Network": "$3", "Command": "Train", "Data": ["$2/input.nc", "$2/output.nc"],
  "TrainingParameters": { "Epochs": 1, "MiniBatch": 256, "Optimizer": "$4", "Alpha": 0.001,
    "mu": 0.9, "Results": "unused.nc" } }
JSON
}
hidden() {  # COUNT WIDTH ACTIVATION
  local i
  for ((i = 1; i <= $1; i++)); do
    printf '{ "Name": "Hidden%d", "Kind": "Hidden", "N": %d, "Activation": "%s" },\n' "$i" "$2" "$3"
  done
}

echo "plan_projection: generating the ML-20M-shaped set (138,493 x 144 of 27,278) and the" \
  "million-item set (8,192 x 100 of 1,000,000)" >&2
dataset ml20m 138493 144 27278
dataset million 8192 100 1000000
network ae128.json "$(hidden 1 128 Sigmoid)" Sigmoid
network ae3x1024.json "$(hidden 3 1024 Sigmoid)" Sigmoid
network million.json "$(hidden 1 128 Tanh)" SoftMax
cdl ae128.cdl ml20m ae128.json RMSProp
cdl ae3x1024.cdl ml20m ae3x1024.json RMSProp
cdl million.cdl million million.json Adam

printf '| network | ranks | link | predicted step ms | speed-up | epoch s | modes (Hidden.., Output) | limit |\n'
printf '| --- | ---: | --- | ---: | ---: | ---: | --- | --- |\n'
plan() {  # LABEL CDL STEP-MS RANKS LINK
  local label=$1 cdl=$2 step=$3 ranks=$4 link=$5 extra=()
  [[ $step != - ]] && extra=(--plan-step-ms "$step")
  "$tools/nn-train" "$cdl" --plan "$ranks" --link "$link" --plan-device h100-sxm "${extra[@]}" \
    2>"$label-$ranks-$link.log" || { cat "$label-$ranks-$link.log" >&2; exit 1; }
  awk -v label="$label" -v ranks="$ranks" -v link="$link" '
    /^predicted step:/ { step = $3; speed = $NF }
    /^predicted epoch:/ { epoch = $3 }
    /^limit:/ { sub(/^limit: /, ""); limit = $0 }
    /^  [A-Za-z0-9]+ +(data|model) +[0-9.]/ { modes = modes (modes ? " " : "") $2 }
    END { printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", label, ranks, link, step,
          speed, epoch, modes, limit }' "$label-$ranks-$link.log"
}
for spec in "1x128 ae128.cdl 0.80" "3x1024 ae3x1024.cdl 2.36" "1M-item million.cdl -"; do
  read -r label cdl step <<<"$spec"
  for ranks in 1 2 4 8; do plan "$label" "$cdl" "$step" "$ranks" nvlink-h100; done
  plan "$label" "$cdl" "$step" 16 ib-ndr
done
