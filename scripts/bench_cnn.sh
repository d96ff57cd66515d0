#!/usr/bin/env bash
# Speed and accuracy benchmark: the Fashion-MNIST CNN (conv 5x5x32 + 2x2 max pool, conv 3x3x64 +
# 2x2 max pool, fc 128, softmax 10; ReLU; Adam 1e-3; batch 64) trained on the real data
# (/usr/share/datasets/fashion-mnist, Debian's dataset-fashion-mnist) by our engine (CPU
# backend, nn-bench-cnn) and by PyTorch CPU (Debian's python3-torch, scripts/bench_cnn.py), both
# on the same threads. Prints seconds per epoch (wall and CPU) and test accuracy, then the raw
# JSON lines. Run it on an otherwise idle machine for wall times; CPU seconds stay comparable
# on a busy one.
# Usage: scripts/bench_cnn.sh [--epochs N] [--threads N] [--limit N] [--data DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/lib/blas_kernels.sh"  # the same OpenBLAS kernels for nn and its peer
epochs=1
threads=2
limit=0
data=/usr/share/datasets/fashion-mnist
while [ $# -gt 0 ]; do
  case $1 in
    --epochs) epochs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    *) echo "usage: $0 [--epochs N] [--threads N] [--limit N] [--data DIR]" >&2; exit 2 ;;
  esac
done
[ -f "$data/train-images-idx3-ubyte.gz" ] || {
  echo "$0: no Fashion-MNIST in $data (apt-get install dataset-fashion-mnist)" >&2; exit 1; }
bench=${NN_BUILD_DIR:-$root/build}/bench/nn-bench-cnn
[ -x "$bench" ] || bash "$root/scripts/setup.sh" nn-bench-cnn
results=$(mktemp)
trap 'rm -f "$results"' EXIT
args=(--epochs "$epochs" --threads "$threads" --limit "$limit" --data "$data")
"$bench" "${args[@]}" >> "$results"
/usr/bin/python3 "$root/scripts/bench_cnn.py" "${args[@]}" >> "$results"
/usr/bin/python3 - "$results" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
print(f"{'engine':>8} {'threads':>7} {'examples':>8} {'s/epoch (wall)':>15} {'s/epoch (CPU)':>14} "
      f"{'test acc':>8}")
for r in rows:
    wall = sum(r["seconds_per_epoch"]) / len(r["seconds_per_epoch"])
    print(f"{r['engine']:>8} {r['threads']:>7} {r['examples']:>8} {wall:>15.1f} "
          f"{r['cpu_seconds_per_epoch']:>14.1f} {r['test_accuracy']:>8.4f}")
ours = [r for r in rows if r["engine"] == "nn"]
peer = [r for r in rows if r["engine"] != "nn"]
if ours and peer:
    w = lambda r: sum(r["seconds_per_epoch"]) / len(r["seconds_per_epoch"])
    print(f"\nwall-time ratio torch/nn: {w(peer[0]) / w(ours[0]):.2f}x, "
          f"CPU-time ratio: {peer[0]['cpu_seconds_per_epoch'] / ours[0]['cpu_seconds_per_epoch']:.2f}x")
print()
for r in rows: print(json.dumps(r))
PY
