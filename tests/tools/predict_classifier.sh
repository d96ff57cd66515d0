#!/usr/bin/env bash
# nn-predict as a classifier report: with a target that has one class per example (or with
# --classify, the class with the largest value), it prints top-1 and top-K accuracy and a
# confusion matrix (rows true, columns predicted, output-index labels) on stderr, and
# --top-classes writes each example's top classes. The numbers are checked against counts made
# here from the --top-classes file and the truth, so they do not depend on how well it trained.
# Usage: predict_classifier.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir

# 60 samples with features of one of 3 tastes; the class is the taste.
awk 'BEGIN { for (u = 0; u < 60; u++) { t = u % 3; line = "u" u "\t";
       for (j = 0; j < 8; j++) if ((u * 7 + j * 3) % 10 < 5) line = line "f" (t * 8 + j) ":";
       print line "f" (24 + u % 5) } }' >features.txt
awk 'BEGIN { for (u = 0; u < 60; u++) print "u" u "\tclass" (u % 3) }' >classes.txt
# Held-out labels that disagree with the training labels for every 4th sample.
awk 'BEGIN { for (u = 0; u < 60; u++) print "u" u "\tclass" ((u % 3 + (u % 4 == 0)) % 3) }' >noisy.txt
# Two weighted classes per sample: the true one with value 2 (for --classify).
awk 'BEGIN { for (u = 0; u < 60; u++) print "u" u "\tclass" (u % 3) ",2:class" ((u + 1) % 3) ",1" }' >multi.txt
gen=("$tools/nn-generate" -s samples.idx)
"${gen[@]}" -d input -i features.txt -o input.nc -f features.idx -c 2>/dev/null
"${gen[@]}" -d output -i classes.txt -o classes.nc -f classes.idx -c 2>/dev/null
"${gen[@]}" -d output -i noisy.txt -o noisy.nc -f classes.idx 2>/dev/null
"${gen[@]}" -d output -i multi.txt -o multi.nc -f classes.idx -t analog 2>/dev/null
[[ $(wc -l <samples.idx) == 60 && $(wc -l <classes.idx) == 3 ]] || fail "generated indices"

cat >config.json <<'JSON'
{ "Name": "classifier", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 6, "Activation": "Tanh" },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "SoftMax" } ] }
JSON
"$tools/nn-train" -q -c config.json -i input.nc -o classes.nc -n net.nc -b 10 -e 10 \
  --optimizer Adam -alpha 0.05 --checkpoint-interval 0
predict=("$tools/nn-predict" -n net.nc --data input.nc --sample-index samples.idx -o classes.idx)

# check_report LOG TOPFILE TRUTHFILE K: the printed accuracies and matrix equal our counts.
check_report() {
  local log=$1 top=$2 truth=$3 k=$4
  local want
  want=$(awk -F'\t' -v k="$k" 'NR == FNR { cls[$1] = $2; next }
      { n = split($2, a, ":"); split(a[1], p, ","); t1 += (p[1] == cls[$1]);
        for (i = 1; i < n && i <= k; i++) { split(a[i], p, ","); if (p[1] == cls[$1]) { tk++; break } }
        m++ }
      END { printf "classifier: %d examples, accuracy top-1 %.4f, top-%d %.4f\n", m, t1 / m, k, tk / m }' \
    "$truth" "$top")
  grep -qxF "$want" "$log" || fail "expected '$want' in: $(cat "$log")"
  grep -q '^confusion matrix (rows: true class, columns: predicted class):$' "$log" ||
    fail "no confusion matrix: $(cat "$log")"
  # Every cell of the printed matrix against counts of (true, first-ranked) pairs.
  awk 'FNR == 1 { file++ }
      file == 1 { cls[$1] = $2; next }
      file == 2 { split($2, a, ":"); split(a[1], p, ","); want[cls[$1], p[1]]++; next }
      /^true\\pred/ { n = split($0, head, " +"); in_matrix = 1; next }
      in_matrix && NF == n { for (c = 2; c <= n; c++) { got = $c + 0; w = want[$1, head[c]] + 0;
        if (got != w) { print "cell", $1, head[c], got, "want", w; bad = 1 }; cells++ } }
      END { if (bad || cells != (n - 1) ^ 2) { print "cells", cells; exit 1 } }' \
    FS='\t' "$truth" FS='\t' "$top" FS=' ' "$log" || fail "confusion matrix: $(cat "$log")"
}

# ---- a single-label target: the classifier report, --top-classes ----
"${predict[@]}" --target classes.nc -k 2 --top-classes top.txt -s recs.txt 2>log.txt
[[ $(wc -l <top.txt) == 60 ]] || fail "--top-classes should have 60 lines"
head -1 top.txt | grep -Eq '^u0	(class[0-2],[0-9.]+:){2}$' || fail "top classes format: $(head -1 top.txt)"
cmp -s top.txt recs.txt || fail "unfiltered top classes should equal the recommendations"
check_report log.txt top.txt classes.txt 2
if grep -q '^1,' log.txt; then fail "ranking metrics printed for a classifier"; fi
grep -q "^true\\\\pred  *class0  *class1  *class2$" log.txt || fail "matrix header: $(cat log.txt)"

# ---- held-out labels that differ: errors show up off the diagonal ----
"${predict[@]}" --target noisy.nc -k 1 --top-classes top1.txt -s /dev/null 2>log.txt
check_report log.txt top1.txt noisy.txt 1
grep -Eq 'accuracy top-1 ([0-9.]+), top-1 \1$' log.txt || fail "with -k 1 top-K is top-1: $(cat log.txt)"

# ---- several weighted items per example: --classify takes the largest ----
"${predict[@]}" --target multi.nc -k 2 -s /dev/null 2>log.txt
grep -Eq '^1,[01]\.[0-9]{4},[01]\.[0-9]{4},[01]\.[0-9]{4}$' log.txt || fail "multi-item target: ranking metrics expected: $(cat log.txt)"
if grep -q '^classifier:' log.txt; then fail "multi-item target is not a classifier without --classify"; fi
"${predict[@]}" --target multi.nc --classify -k 2 --top-classes top_multi.txt -s /dev/null 2>log.txt
check_report log.txt top_multi.txt classes.txt 2

# ---- without -o the network's own class names; the CDL Target key ----
"$tools/nn-predict" -n net.nc --data input.nc --target classes.nc -k 2 -s /dev/null 2>log.txt
grep -q "^true\\\\pred  *class0  *class1  *class2$" log.txt || fail "the network's classes: $(cat log.txt)"
cat >predict.cdl <<'JSON'
{ "Network": "net.nc", "Command": "Predict", "Data": "input.nc",
  "PredictionParameters": { "K": 2, "Output": "cdl_recs.txt", "OutputIndex": "classes.idx",
    "SampleIndex": "samples.idx", "Target": "classes.nc" } }
JSON
"$tools/nn-predict" predict.cdl 2>cdl_log.txt
cmp -s cdl_recs.txt recs.txt || fail "CDL predict should match the flags"
check_report cdl_log.txt cdl_recs.txt classes.txt 2

# ---- errors ----
set +e
"${predict[@]}" --classify -s x.txt 2>err.txt
rc=$?
set -e
[[ $rc == 1 && $(wc -l <err.txt) == 1 ]] && grep -q '^nn-predict: error: --classify needs a target dataset' err.txt ||
  fail "--classify without a target: rc=$rc $(cat err.txt)"
[[ ! -e x.txt ]] || fail "output left after an error"

echo "predict_classifier: all checks passed"
