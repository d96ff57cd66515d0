#!/usr/bin/env bash
# Streaming training benchmark (docs/large-datasets.md, "Streaming training"): a synthetic
# dataset of EXAMPLES lines x ITEMS_PER items over ITEMS (written by streaming nn-generate through
# scripts/bench_generate.sh) with a 10-class target (by sample number), trained for one epoch with
# --memory-limit LIMIT (so it streams), against the same model trained in memory on the first
# SUBSET examples, interleaved (in memory, streamed, in memory) so that the load of the machine
# hits both alike. Reports examples per second, the reader thread's share of the epoch, the time
# minibatches waited for it, and peak resident memory (of the whole process: about 200 MiB of it
# is the program and its libraries, see `--help` below). The issue's target is the default:
# 20 million x 50 over 100,000 (a 4.2 GB file, 7.5 GB of text; check `df -h` first).
# Usage: scripts/bench_stream.sh [WORK_DIR]
#   EXAMPLES=20000000 ITEMS_PER=50 ITEMS=100000 SUBSET=2000000 LIMIT=1G BATCH=1024 HIDDEN=32
#   NN_BUILD=build KEEP=0 (1 keeps the NetCDF files and the text)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/nn-bench-stream}
examples=${EXAMPLES:-20000000}
items_per=${ITEMS_PER:-50}
items=${ITEMS:-100000}
subset=${SUBSET:-2000000}
limit=${LIMIT:-1G}
batch=${BATCH:-1024}
hidden=${HIDDEN:-32}
tools=$here/${NN_BUILD:-build}/src/tools
[[ -x $tools/nn-train ]] || { echo "bench_stream: build the tools first ($tools)" >&2; exit 1; }
mkdir -p "$work"
work=$(cd "$work" && pwd)

# The input dataset (and its text, features.idx, samples.idx) from the generate benchmark.
if [[ ! -s $work/input.nc ]]; then
  EXAMPLES=$examples ITEMS_PER=$items_per ITEMS=$items NN_BUILD=${NN_BUILD:-build} KEEP=1 \
    bash "$here/scripts/bench_generate.sh" "$work"
  mv "$work/out.nc" "$work/input.nc"
fi
cd "$work"
text=examples_${examples}x${items_per}of${items}.txt
q() { "$@" -q 2>/dev/null || "$@"; }
if [[ ! -s target.nc ]]; then
  # The target: one of 10 classes by sample number (throughput only: nothing to learn; written
  # directly, since reading the 7.5 GB of text again would take minutes).
  awk -v n="$examples" 'BEGIN { for (i = 0; i < n; i++) print "u" i "\tc" (i % 10) }' >target.txt
  "$tools/nn-generate" -d output -i target.txt -o target.nc -f classes.idx -s samples.idx -c
fi
if [[ ! -s subset_input.nc ]]; then
  head -n "$subset" "$text" >subset.txt
  head -n "$subset" target.txt >subset_target.txt
  "$tools/nn-generate" -d input -i subset.txt -o subset_input.nc -f features.idx -s subset.idx -c
  "$tools/nn-generate" -d output -i subset_target.txt -o subset_target.nc -f classes.idx \
    -s subset.idx
fi
cat >bench.json <<JSON
{ "Name": "bench", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": $hidden, "Activation": "Relu" },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "SoftMax" } ] }
JSON
ls -l input.nc target.nc subset_input.nc subset_target.nc
# run NAME flags...: one epoch; prints examples/s, reader share and peak resident memory.
run() {
  local name=$1
  shift
  echo "bench_stream: $name: load before $(cut -d' ' -f1-3 /proc/loadavg)"
  /usr/bin/time -f "%M" -o "$name.rss" "$tools/nn-train" --backend cpu -c bench.json -n "$name.nc" \
    -b "$batch" -e 1 --checkpoint-interval 0 "$@" 2>"$name.log" ||
    { tail -5 "$name.log"; exit 1; }
  grep -E '^(streaming|epoch 1/1|training:)' "$name.log" | sed "s/^/bench_stream: $name: /"
  echo "bench_stream: $name: peak resident $(($(cat "$name.rss") / 1024)) MiB"
}
/usr/bin/time -f "%M" -o help.rss "$tools/nn-train" --help >/dev/null
echo "bench_stream: nn-train --help: peak resident $(($(cat help.rss) / 1024)) MiB"
run memory1 -i subset_input.nc -o subset_target.nc --no-stream
run streamed -i input.nc -o target.nc --memory-limit "$limit"
run memory2 -i subset_input.nc -o subset_target.nc --no-stream
run streamed_subset -i subset_input.nc -o subset_target.nc --stream --memory-limit "$limit"
python3 - <<'PY'
import re
def rate(name):
    m = re.search(r"epoch 1/1: .*?, (\d+) examples/s", open(name + ".log").read())
    return float(m.group(1))
mem = (rate("memory1") + rate("memory2")) / 2
for name in ("streamed", "streamed_subset"):
    print("bench_stream: %s: %.0f examples/s = %.1f%% of in memory (%.0f, mean of the runs "
          "before and after)" % (name, rate(name), 100 * rate(name) / mem, mem))
PY
if [[ ${KEEP:-0} != 1 ]]; then rm -f ./*.nc ./*.txt; fi
