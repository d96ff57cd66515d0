#!/usr/bin/env bash
# Full Fashion-MNIST runs of the shipped samples next to their PyTorch peers: the MLP
# (configs/image-mlp-28x28: network.json + train.cdl) and the CNN (configs/image-cnn-28x28)
# on all 60,000 training images, test accuracy on the 10,000 test images and seconds per epoch,
# then scripts/fashion_mnist_peer.py trains the same networks with the same minibatch, learning-rate
# schedule and epochs. Targets: MLP >= 88%, CNN >= 91% test accuracy.
# Usage: scripts/fashion_mnist_quality.sh [work-dir] [--models mlp,cnn] [--no-peers]
# NN_EPOCHS overrides the epochs of both the engine and the peer runs; NN_TOOLS the tool directory.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$root/out/fashion-mnist-quality
models=mlp,cnn
peers=1
while [ $# -gt 0 ]; do
  case $1 in
    --models) models=$2; shift ;;
    --no-peers) peers=0 ;;
    -*) echo "usage: $0 [work-dir] [--models mlp,cnn] [--no-peers]" >&2; exit 2 ;;
    *) work=$1 ;;
  esac
  shift
done
mkdir -p "$work"
sample=$root/samples/fashion-mnist
data=/usr/share/datasets/fashion-mnist

# A CDL TrainingParameters value (Epochs, MiniBatch, Alpha, ...), or $3 when it is absent.
cdl_value() {
  /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["TrainingParameters"].get(sys.argv[2], sys.argv[3]))' "$1" "$2" "${3:-}"
}

results=$work/results.txt
: > "$results"
for model in ${models//,/ }; do
  cdl=$root/configs/image-mlp-28x28/train.cdl
  [ "$model" = cnn ] && cdl=$root/configs/image-cnn-28x28/train.cdl
  epochs=${NN_EPOCHS:-$(cdl_value "$cdl" Epochs)}
  batch=$(cdl_value "$cdl" MiniBatch)
  alpha=$(cdl_value "$cdl" Alpha)
  interval=$(cdl_value "$cdl" AlphaInterval 0)
  multiplier=$(cdl_value "$cdl" AlphaMultiplier 0.5)
  echo "== nn: $model, $epochs epochs, minibatch $batch, Adam alpha $alpha x $multiplier every $interval epochs"
  NN_EPOCHS=$epochs bash "$sample/run.sh" "$model" "$work/nn" "$data" > "$work/run-$model.log"
  grep -E '^epoch' "$work/nn/train-$model.log" | tail -2
  # Mean seconds per epoch from nn-train's "epoch k/N: ..., E examples/s, X s[, ETA ...]" lines.
  spe=$(grep -E '^epoch [0-9]+/' "$work/nn/train-$model.log" |
        sed -E 's/.* examples\/s, ([0-9.]+) s.*/\1/' | awk '{s += $1; n++} END {if (n) printf "%.2f", s / n}')
  acc=$(awk '/^accuracy/ {print $2}' "$work/nn/accuracy-$model.txt")
  printf '%-4s %-12s %6s %8s %10s\n' "$model" nn "$epochs" "$spe" "$acc" >> "$results"
  if [ $peers = 1 ]; then
    echo "== torch: $model"
    /usr/bin/python3 "$root/scripts/fashion_mnist_peer.py" --models "$model" --data "$data" \
      "--epochs-$model" "$epochs" "--batch-$model" "$batch" --alpha "$alpha" \
      "--alpha-interval-$model" "$interval" --alpha-multiplier "$multiplier" > "$work/peer-$model.json"
    /usr/bin/python3 - "$work/peer-$model.json" >> "$results" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
print(f"{r['model']:<4} {r['framework']:<12} {r['epochs']:>6} {r['seconds_per_epoch']:>8.2f} "
      f"{r['test_accuracy']:>10.4f}")
PY
  fi
done
echo
printf '%-4s %-12s %6s %8s %10s\n' model engine epochs s/epoch accuracy
cat "$results"
