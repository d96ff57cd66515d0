#!/usr/bin/env bash
# The million-item autoencoder matrix (docs/wide-outputs.md, "Row-sparse input updates"): a
# planted catalog indexed over all its items (scripts/bench_sampled.py gen), the items themselves
# as the input, 128 Tanh units, SoftMax output, Adam, minibatch 128, input Denoising 0.5, the
# same epochs for every network, in one run (scripts/bench_sampled.sh does each row):
#   full / Dense       the all-dense network: full output layer, every input row updated
#   full / Lazy        full output, the input matrix updated row by row (Adam: LazyAdam rules)
#   sampled / Dense    sampled output (NEGATIVES Popularity negatives), dense input update
#   sampled / Lazy     sampled output and row-sparse input: the configuration the issue aims at
#   sampled / hashed   sampled output, the input hashed to 16,384 buckets (the cheap baseline)
# Each row gives the mean examples/s of its epochs, recall@10 of 2,000 test users at the epoch
# that ranks 2,000 validation users best, and the peak resident memory; the load average at
# each row's start is in the per-run tables above the summary.
# Usage: scripts/bench_million.sh [ITEMS USERS EPOCHS NEGATIVES]
#        (default 1000000 8192 3 2048); NN_TOOLS, NN_BENCH_DIR as for bench_sampled.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
items=${1:-1000000} users=${2:-8192} epochs=${3:-3} negatives=${4:-2048}
bench=("$root/scripts/bench_sampled.sh" synthetic "$items" 100 "$users" "$epochs" "$negatives"
       "$epochs" Popularity)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
row() {  # label, then the summary lines of one bench_sampled.sh run on stdin
  awk -v label="$1" '{
    for (i = 1; i <= NF; i++) {
      if ($i == "recall@10") recall = $(i + 1)
      if ($i == "after") secs = $(i + 1)
      if ($i == "examples/s") rate = $(i - 1)
      if ($i == "peak") peak = $(i + 1)
    }
    printf "%-16s %12s %10s %9s %9s\n", $1 " / " label, rate, recall, secs, peak
  }'
}
run() {  # label, env..., -- : one bench_sampled.sh run, its tables to stderr
  local label=$1
  shift
  # (tee >(...) rather than tee /dev/stderr: reopening a redirected stderr truncates its file)
  env "$@" "${bench[@]}" | tee >(cat >&2) | grep -E '^(full|sampled) +best epoch' |
    row "$label" >>"$out"
}
run Dense NN_BENCH_INPUT=items NN_BENCH_UPDATE=Dense
run Lazy NN_BENCH_INPUT=items NN_BENCH_UPDATE=Lazy
run hashed NN_BENCH_INPUT=buckets NN_BENCH_VARIANTS=sampled
echo "== $items items, $users training users, $epochs epochs, $negatives Popularity negatives"
printf '%-16s %12s %10s %9s %9s\n' network examples/s recall@10 seconds "peak MB"
cat "$out"
