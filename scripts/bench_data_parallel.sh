#!/usr/bin/env bash
# Multi-process benchmark: the MovieLens-20M-shaped sparse autoencoder of bench_autoencoder.sh
# (27,278 items, ~144 non-zeros per example with Zipf popularity, batch 256, RMSProp, Sigmoid
# hidden layers) trained by nn-train as one process and under `mpirun -np 2`: data parallel on
# every layer ("Parallel": "Data") with the gradient all-reduce overlapped with the backward pass
# and without (NN_GRADIENT_OVERLAP=0), and with the per-layer rule (which splits these layers:
# model parallel).
# Prints seconds per epoch (the last epoch's, from nn-train's own report) and the time the
# data-parallel runs spent waiting for the all-reduce after backward. Every run uses the default
# threads: one process gets all the CPUs it may use, each of two ranks half of them.
# Usage: scripts/bench_data_parallel.sh [--examples N] [--epochs E] [--hidden "128 1024x3"]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools=${NN_BUILD_DIR:-$root/build}/src/tools
examples=1024
epochs=2
hidden="128 1024x3"
while [ $# -gt 0 ]; do
  case $1 in
    --examples) examples=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --hidden) hidden=$2; shift 2 ;;
    *) echo "usage: $0 [--examples N] [--epochs E] [--hidden \"128 1024x3\"]" >&2; exit 2 ;;
  esac
done
[ -x "$tools/nn-train" ] || bash "$root/scripts/setup.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
/usr/bin/python3 - "$examples" <<'PY'
import bisect, random, sys
items, nnz, n = 27278, 144, int(sys.argv[1])
acc, cdf = 0.0, []
for i in range(items):
    acc += 1.0 / (i + 1)
    cdf.append(acc)
cdf = [c / acc for c in cdf]
rng = random.Random(7)
with open("examples.txt", "w") as f:
    for e in range(n):
        want = max(1, int(nnz * (0.5 + rng.random())))
        row = set()
        while len(row) < want:
            row.add(min(items - 1, bisect.bisect_left(cdf, rng.random())))
        f.write(f"u{e}\t" + ":".join(f"i{j}" for j in sorted(row)) + "\n")
    # every item appears once so the datasets are 27,278 wide
with open("features.txt", "w") as f:
    f.write(f"all\t" + ":".join(f"i{j}" for j in range(items)) + "\n")
PY
cat features.txt examples.txt >all.txt
"$tools/nn-generate" -d input -i all.txt -o input.nc -f features.idx -s samples.idx -c >/dev/null 2>&1
"$tools/nn-generate" -d output -i all.txt -o output.nc -f features.idx -s samples.idx >/dev/null 2>&1
printf '%-8s %-22s %12s %14s %22s\n' hidden run "s/epoch" "examples/s" "all-reduce wait s/epoch"
for h in $hidden; do
  /usr/bin/python3 - "$h" <<'PY'
import json, sys
h = sys.argv[1]
def write(name, mode):
    for l in layers:
        if l["Kind"] != "Input" and mode:
            l["Parallel"] = mode
    json.dump({"Name": "bench", "ErrorFunction": "CrossEntropy", "Layers": layers}, open(name, "w"))
width, _, count = h.partition("x")
layers = [{"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": True}]
for i in range(int(count or 1)):
    layers.append({"Name": f"Hidden{i}", "Kind": "Hidden", "N": int(width), "Activation": "Sigmoid"})
layers.append({"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Sigmoid"})
write("config.json", None)
write("data.json", "Data")
PY
  cat >train.cdl <<JSON
{ "Network": "config.json", "Command": "Train", "RandomSeed": 1, "Data": ["input.nc", "output.nc"],
  "TrainingParameters": { "Epochs": $epochs, "MiniBatch": 256, "Optimizer": "RMSProp", "Alpha": 0.001,
    "mu": 0.9, "Lambda": 0, "Results": "net.nc" } }
JSON
  sed 's/config.json/data.json/' train.cdl >data.cdl
  for run in "1 process" "2 ranks, data, overlapped" "2 ranks, data, after bwd" "2 ranks, rule (model)"; do
    case $run in
      "1 process") "$tools/nn-train" train.cdl 2>log.txt ;;
      "2 ranks, data, overlapped") mpirun -np 2 "$tools/nn-train" data.cdl 2>log.txt ;;
      "2 ranks, data, after bwd")
        NN_GRADIENT_OVERLAP=0 mpirun -np 2 -x NN_GRADIENT_OVERLAP "$tools/nn-train" data.cdl 2>log.txt ;;
      *) mpirun -np 2 "$tools/nn-train" train.cdl 2>log.txt ;;
    esac
    last=$(grep -E "^epoch $epochs/$epochs:" log.txt)
    secs=$(echo "$last" | grep -oE '[0-9.]+ s$' | cut -d' ' -f1)
    rate=$(echo "$last" | grep -oE '[0-9]+ examples/s' | cut -d' ' -f1)
    wait=$(grep -oE "^data parallel: [0-9.]+ s of epoch $epochs" log.txt | awk '{print $3}' || true)
    printf '%-8s %-22s %12s %14s %22s\n' "$h" "$run" "$secs" "$rate" "${wait:--}"
  done
done
