#!/usr/bin/env bash
# Wide-output prediction: nn-predict's top 10 of a 1,000,000-unit output layer for 10,000
# users, scored whole (--score-block full: every minibatch's [batch x 1,000,000] scores held at
# once, as before blocked scoring) and in column blocks (--score-block auto: blocks of 8192,
# docs/wide-outputs.md). Reports each run's wall time and peak resident memory (/usr/bin/time
# -v) and checks that both wrote the same recommendations, byte for byte.
#
# Synthetic data made here: 10,000 users with 20 items each out of 5,000; an autoencoder
# Input -> Hidden 128 (Sigmoid) -> Output 1,000,000 (Sigmoid) trained for one epoch of 8
# minibatches on 256 of the users (enough to give every weight a value; the scores only need
# to exist), then every user scored.
# With NN_BEFORE_TOOLS set to the tools folder of a build from before blocked scoring (one
# without --score-block), that build's nn-predict is timed too ("before") and its
# recommendations compared with the others'.
# NN_BENCH_REPEAT=N runs the modes N times, interleaved (default 1), so that the load of a
# shared machine can be told from the code: compare the fastest of each, and the CPU time
# (user + system), which the load moves less than the wall time.
# Usage: scripts/bench_wide_predict.sh [UNITS] [USERS] [MINIBATCH]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools=${NN_BUILD_DIR:-$root/build}/src/tools
units=${1:-1000000}
users=${2:-10000}
batch=${3:-1024}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
python3 - "$users" <<'PY'
import random, sys
users = int(sys.argv[1])
random.seed(5)
with open("users.txt", "w") as f, open("train.txt", "w") as t:
    for u in range(users):
        line = f"u{u}\t" + ":".join(f"i{i}" for i in sorted(random.sample(range(5000), 20))) + "\n"
        f.write(line)
        if u < 256:
            t.write(line)
PY
"$tools/nn-generate" -q -d input -i users.txt -o users.nc -f features.idx -s users.idx -c
"$tools/nn-generate" -q -d input -i train.txt -o train_in.nc -f features.idx -s train.idx
"$tools/nn-generate" -q -d output -i train.txt -o train_out.nc -f features.idx -s train.idx
cat >net.json <<JSON
{ "Name": "wide", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 128, "Activation": "Sigmoid" },
    { "Name": "Output", "Kind": "Output", "N": $units, "DataSet": "output",
      "Activation": "Sigmoid" } ] }
JSON
cat >train.cdl <<JSON
{ "Version": 0.9, "Network": "net.json", "Command": "Train", "RandomSeed": 1,
  "Data": ["train_in.nc", "train_out.nc"],
  "TrainingParameters": { "Epochs": 1, "MiniBatch": 32, "Alpha": 0.01,
    "Optimizer": "SGD", "Results": "net.nc" } }
JSON
"$tools/nn-train" -q train.cdl
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "scores of one minibatch of $batch rows: $(((batch * units * 4) >> 20)) MiB"
# run MODE: nn-predict's top 10 for every user with --score-block MODE (MODE "before": the
# nn-predict of NN_BEFORE_TOOLS, without the flag); prints wall time and peak resident memory.
run() {
  local mode=$1 cmd
  if [[ $mode == before ]]; then
    cmd=("$NN_BEFORE_TOOLS/nn-predict")
  else
    cmd=("$tools/nn-predict" --score-block "$mode")
  fi
  /usr/bin/time -v "${cmd[@]}" -n net.nc --data users.nc -k 10 -b "$batch" -s "recs.$mode" \
    2>"log.$mode" >/dev/null
  local wall rss cpu
  wall=$(grep 'Elapsed (wall clock)' "log.$mode" | sed 's/.*: //')
  rss=$(grep 'Maximum resident set size' "log.$mode" | sed 's/.*: //')
  cpu=$(awk -F': ' '/User time|System time/ { t += $2 } END { printf "%.1f", t }' "log.$mode")
  printf '%-6s wall %s, CPU %s s, peak RSS %d MiB (load %s)\n' "$mode" "$wall" "$cpu" \
    $((rss / 1024)) "$(cut -d' ' -f1 /proc/loadavg)"
  grep -h 'scoring layer' "log.$mode" || true
}
modes=(full auto)
[[ -n ${NN_BEFORE_TOOLS:-} ]] && modes=(before full auto)
for ((rep = 0; rep < ${NN_BENCH_REPEAT:-1}; rep++)); do
  for mode in "${modes[@]}"; do run "$mode"; done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
if ! cmp -s recs.full recs.auto; then
  echo "recommendations of full and auto DIFFER" >&2
  exit 1
fi
echo "recommendations of full and auto identical ($(wc -l <recs.auto) lines)"
# The build from before sums its products in other pieces (by thread, not in fixed tiles), so
# a score may differ in its last bits and, rarely, in a printed digit or the order of a tie.
if [[ -n ${NN_BEFORE_TOOLS:-} ]]; then
  echo "lines of before differing from auto: $(diff recs.before recs.auto | grep -c '^>' || true)"
fi
