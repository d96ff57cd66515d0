#!/usr/bin/env bash
# Streaming nn-predict (docs/large-datasets.md, "Streaming prediction"): dataset files scored a
# segment at a time (--stream, segments of 9 examples rounded up to minibatches of 4) give the
# recommendation lines, metrics and dumps of a whole read, with the input items left out or
# ranked and with a filter; dataset files beyond --memory-limit stream on their own.
# Usage: bash predict_streaming.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
require_netcdf_bin
enter_work_dir
tiny_ratings
tiny_datasets "$tools"
tiny_config
"$tools/nn-train" --backend cpu -c config.json -i input.nc -o output.nc -n net.nc -b 8 -e 3 \
  --seed 3 2>train.log || fail "nn-train: $(tail -3 train.log)"
score() {  # score NAME flags...
  local name=$1
  shift
  "$tools/nn-predict" --backend cpu -n net.nc --data input.nc -o features.idx \
    --sample-index samples.idx -k 5 -b 4 -s "$name.txt" "$@" 2>"$name.log" ||
    fail "nn-predict $*: $(tail -3 "$name.log")"
}
for flags in "" "--target output.nc" "--target output.nc --rank-input-items" "-f input.nc"; do
  # shellcheck disable=SC2086 # a list of flags
  score whole $flags
  # shellcheck disable=SC2086
  score streamed $flags --stream --stream-segment 9
  grep -q '^streaming: segments of up to 12 examples' streamed.log ||
    fail "$flags: not streamed in segments of 12: $(grep stream streamed.log)"
  cmp -s whole.txt streamed.txt || fail "$flags: the lines differ: $(diff whole.txt streamed.txt | head -5)"
  diff <(grep -A6 '^metrics' whole.log) <(grep -A6 '^metrics' streamed.log) ||
    fail "$flags: the metrics differ"
done
score whole --dump whole.nc
score streamed --dump streamed.nc --stream --stream-segment 9
cmp -s <(ncdump whole.nc | tail -n +2) <(ncdump streamed.nc | tail -n +2) || fail "the dumps differ"
# Beyond the budget: streamed without being asked.
score budget --memory-limit 1M
grep -q 'streaming the examples (they do not fit in memory' budget.log && fail "streamed 1.5 KiB"
awk 'BEGIN { for (u = 0; u < 6000; u++) { t = u % 3; line = "u" u "\t";
     for (j = 0; j < 6; j++) if ((u + j) % 4 != 0) line = line "m" (t * 6 + j) ":";
     print substr(line, 1, length(line) - 1) } }' >many.txt
"$tools/nn-generate" -d input -i many.txt -o many.nc -f features.idx -s many.idx 2>/dev/null
"$tools/nn-predict" --backend cpu -n net.nc --data many.nc -o features.idx --sample-index many.idx \
  -k 5 -b 16 -s many_whole.txt 2>many_whole.log || fail "6,000 examples: $(tail -3 many_whole.log)"
"$tools/nn-predict" --backend cpu -n net.nc --data many.nc -o features.idx --sample-index many.idx \
  -k 5 -b 16 -s many_budget.txt --memory-limit 150k 2>many_budget.log ||
  fail "6,000 examples in 150 KiB: $(tail -3 many_budget.log)"
grep -q 'streaming the examples (they do not fit in memory' many_budget.log ||
  fail "6,000 examples beyond 150 KiB did not stream: $(head -3 many_budget.log)"
cmp -s many_whole.txt many_budget.txt || fail "6,000 examples: streamed lines differ"
echo "predict_streaming: ok"
