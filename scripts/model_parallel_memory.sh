#!/usr/bin/env bash
# Model-parallel memory: per-rank resident memory while training a network whose output layer
# has 1,000,000 units (synthetic sparse data, Hidden 64, SGD), under one process and under
# `mpirun -np 2` with the output layer split ("Parallel": "Model"). Each rank should hold
# about half of that layer (its weights, gradients and activations). The resident set of every
# nn-train process is sampled while the epochs run (before the result file is gathered and
# written: rank 0 then holds the whole network for the file).
# Usage: scripts/model_parallel_memory.sh [UNITS] [EPOCHS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools=${NN_BUILD_DIR:-$root/build}/src/tools
units=${1:-1000000}
epochs=${2:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
python3 - <<'PY'
import random
random.seed(3)
with open("ratings.txt", "w") as f:
    for u in range(256):
        items = sorted(random.sample(range(5000), 20))
        f.write(f"u{u}\t" + ":".join(f"i{i}" for i in items) + "\n")
PY
"$tools/nn-generate" -d input -i ratings.txt -o input.nc -f features.idx -s samples.idx -c 2>/dev/null
"$tools/nn-generate" -d output -i ratings.txt -o output.nc -f features.idx -s samples.idx 2>/dev/null
cat >net.json <<JSON
{ "Name": "wide", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 64, "Activation": "Sigmoid", "Parallel": "Data" },
    { "Name": "Output", "Kind": "Output", "N": $units, "DataSet": "output",
      "Activation": "Sigmoid", "Parallel": "Model" } ] }
JSON
cat >train.cdl <<JSON
{ "Version": 0.9, "Network": "net.json", "Command": "Train", "RandomSeed": 1,
  "Data": ["input.nc", "output.nc"],
  "TrainingParameters": { "Epochs": $epochs, "MiniBatch": 32, "Alpha": 0.01,
    "Optimizer": "SGD", "Results": "net.nc" } }
JSON
# measure NP: resident set (MiB) of each nn-train process, sampled every 0.2 s: the median
# (the epochs dominate the run) and the peak (rank 0 gathers the whole network for the file).
measure() {
  local np=$1 launcher=()
  [[ $np -gt 1 ]] && launcher=(mpirun -np "$np" --oversubscribe)
  "${launcher[@]}" "$tools/nn-train" train.cdl >train.log 2>&1 &
  local job=$!
  rm -f rss.*
  while kill -0 $job 2>/dev/null; do
    local i=0
    for pid in $(pgrep -f "$tools/nn-train train.cdl" | sort -n); do
      [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == *nn-train ]] || continue
      awk '/VmRSS/ {print $2}' "/proc/$pid/status" >>rss.$i 2>/dev/null || true
      i=$((i + 1))
    done
    sleep 0.2
  done
  wait $job
  python3 - "$np" "$(grep -o 'epoch 1/[0-9]*: .*' train.log | sed 's/.*examples\/s, //')" rss.* <<'PY'
import statistics, sys
np, epoch, files = sys.argv[1], sys.argv[2], sys.argv[3:]
parts = []
for r, f in enumerate(sorted(files)):
    kb = [int(x) for x in open(f) if x.strip()]
    parts.append(f"rank {r} median {statistics.median(kb) / 1024:.0f} MiB, peak {max(kb) / 1024:.0f} MiB")
print(f"np {np}: " + "; ".join(parts) + f" (epoch 1: {epoch})")
PY
}
echo "output layer of $units units over Hidden 64: weights $(((65 * units * 4) >> 20)) MiB," \
  "activations of a minibatch of 32 $(((32 * units * 4) >> 20)) MiB"
measure 1
measure 2
