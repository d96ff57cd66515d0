#!/usr/bin/env bash
# Recommendation quality of the shipped MovieLens sample config: 80/20 per-user holdout of the
# bundled ratings (fixed seed), train + recommend with samples/movielens/run.sh on the 80%, then
# recall/precision/NDCG@10 on the 20% next to the popularity baseline, and (unless --no-peers)
# the PyTorch peers (EASE, autoencoders) on the same split.
# Usage: scripts/movielens_quality.sh [ratings.csv] [work-dir] [--no-peers]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ratings=${1:-$root/samples/movielens/ratings.csv}
work=${2:-$root/out/movielens-quality}
peers=1
[ "${3:-}" = "--no-peers" ] && peers=0
mkdir -p "$work"
/usr/bin/python3 "$root/samples/movielens/split_ratings.py" -d "$work" "$ratings"
bash "$root/samples/movielens/run.sh" "$work/train.csv" "$work/nn" > "$work/run.log"
grep -E "^epoch [0-9]+/" "$work/run.log" | tail -3
/usr/bin/python3 "$root/scripts/movielens_eval.py" "$work/train.csv" "$work/test.csv" "nn=$work/nn/recs"
if [ $peers = 1 ]; then
  /usr/bin/python3 "$root/scripts/movielens_peer.py" "$work/train.csv" "$work/test.csv"
fi
