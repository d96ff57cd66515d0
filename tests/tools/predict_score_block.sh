#!/usr/bin/env bash
# nn-predict --score-block (docs/wide-outputs.md): the output layer scored in column blocks
# writes the same recommendation lines, byte for byte, as the layer scored whole, with and
# without a filter (excluding, or multiplying with --filter-multiply), for blocks that split the
# layer (600 units: 1,024 on the CPU backend, 2 blocks of its 2,000) and auto (whole here: a
# minibatch's scores are far below 64 MiB); the log says which; a dump needs every score, so the
# layer is then scored whole, with a note; bad values are usage errors (exit 2).
# Usage: predict_score_block.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir

# 40 users, 150 items in 3 tastes; the output layer has 2,000 units (only the first 150 named).
awk 'BEGIN { for (u = 0; u < 40; u++) { t = u % 3; line = "u" u "\t";
       for (j = 0; j < 50; j++) if ((u * 7 + j * 3) % 10 < 4) line = line "m" (t * 50 + j) ":";
       print substr(line, 1, length(line) - 1) } }' >ratings.txt
"$tools/nn-generate" -q -d input -i ratings.txt -o input.nc -f features.idx -s samples.idx -c
"$tools/nn-generate" -q -d output -i ratings.txt -o output.nc -f features.idx -s samples.idx
cat >config.json <<'JSON'
{ "Name": "wide", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 24, "Activation": "Tanh" },
    { "Name": "Output", "Kind": "Output", "N": 2000, "DataSet": "output",
      "Activation": "Sigmoid" } ] }
JSON
"$tools/nn-train" -q -c config.json -i input.nc -o output.nc -n net.nc -b 8 -e 2 -alpha 0.5 \
  --checkpoint-interval 0
# Unit numbers (no -o), so every one of the 2,000 units is ranked; 30 results per user.
base=("$tools/nn-predict" -n net.nc --data input.nc -k 30 -b 16)

for filter in none exclude multiply; do
  args=()
  [[ $filter != none ]] && args=(-f ratings.txt -o features.idx --sample-index samples.idx)
  [[ $filter == multiply ]] && args+=(--filter-multiply)
  "${base[@]}" "${args[@]}" --score-block full -s full.txt 2>full.log
  "${base[@]}" "${args[@]}" --score-block 600 -s blocks.txt 2>blocks.log
  "${base[@]}" "${args[@]}" -s auto.txt 2>auto.log
  [[ $(wc -l <full.txt) == 40 ]] || fail "$filter: expected 40 lines"
  cmp -s full.txt blocks.txt || fail "$filter: --score-block 600 changed the recommendations"
  cmp -s full.txt auto.txt || fail "$filter: --score-block auto changed the recommendations"
  grep -q "scoring layer 'Output' in blocks of 600" blocks.log ||
    fail "$filter: the log should say the layer is scored in blocks: $(cat blocks.log)"
  ! grep -q "in blocks" full.log auto.log || fail "$filter: full and auto should score whole"
done

# A dump needs every score: the layer is scored whole, and the log says so.
"${base[@]}" --score-block 600 -s dumped.txt --dump dump.txt 2>dump.log
grep -q "scored whole (a dump needs every score)" dump.log ||
  fail "a dump with --score-block should note the whole layer: $(cat dump.log)"

tool=$tools/nn-predict
for bad in 0 -5 abc 12x; do
  expect_status 2 -n net.nc --data input.nc --score-block "$bad"
  grep -q "score-block" err.txt || fail "--score-block $bad: the error should name the flag"
done
echo "predict_score_block: ok"
