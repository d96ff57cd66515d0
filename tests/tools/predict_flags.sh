#!/usr/bin/env bash
# Every flag of DSSTNE's predict (utils/Predict.cpp: -d -n -i -o -r -f -s -b -k -p -l; man
# nn-predict) on nn-predict, and its fixes (docs/dsstne-compatibility.md): no cap on K (DSSTNE:
# K < 128), filters that remove items unless --filter-multiply (DSSTNE multiplied), any output
# layer name (DSSTNE: only "Output"), filter directories, and -l scoring any layer.
# Usage: predict_flags.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir
# entries FILE: the number of label,score pairs on each line, one per line.
entries() { awk -F'\t' '{ print split($2, a, ":") - 1 }' "$1"; }

# 30 users, 150 items in 3 tastes of 50; ~20 items per user (DSSTNE-style dataset names).
awk 'BEGIN { for (u = 0; u < 30; u++) { t = u % 3; line = "u" u "\t";
       for (j = 0; j < 50; j++) if ((u * 7 + j * 3) % 10 < 4) line = line "m" (t * 50 + j) ":";
       print substr(line, 1, length(line) - 1) } }' >ratings.txt
"$tools/nn-generate" -d gl_input -i ratings.txt -o gl_input.nc -f features.idx -s samples.idx -c 2>/dev/null
"$tools/nn-generate" -d gl_output -i ratings.txt -o gl_output.nc -f features.idx -s samples.idx 2>/dev/null
[[ $(wc -l <features.idx) == 150 ]] || fail "expected 150 items"
cat >config.json <<'JSON'
{ "Name": "recs", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "gl_input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 8, "Activation": "Sigmoid" },
    { "Name": "Scores", "Kind": "Output", "N": "auto", "DataSet": "gl_output", "Activation": "Sigmoid" } ] }
JSON
"$tools/nn-train" -q -c config.json -i gl_input.nc -o gl_output.nc -n net.nc -b 8 -e 2 -alpha 0.5 \
  --checkpoint-interval 0
base=("$tools/nn-predict" -n net.nc -r ratings.txt -i features.idx -o features.idx)

# ---- -k: default 100 (DSSTNE's default), no upper limit; -s file; output layer "Scores" ----
"${base[@]}" -s default.txt 2>log.txt
[[ $(wc -l <default.txt) == 30 ]] || fail "expected 30 lines"
[[ $(entries default.txt | sort -u) == 100 ]] || fail "default K should be 100: $(entries default.txt | sort -u)"
grep -q "of layer 'Scores'" log.txt || fail "the output layer 'Scores' should be scored: $(cat log.txt)"
"${base[@]}" -k 140 -s k140.txt 2>/dev/null
[[ $(entries k140.txt | sort -u) == 140 ]] || fail "-k 140 (beyond DSSTNE's 127) should give 140 results"
# More than there are items: every item once, never a padding unit (the layer has 256 units).
"${base[@]}" -k 1000 -s all.txt 2>/dev/null
[[ $(entries all.txt | sort -u) == 150 ]] || fail "-k 1000 should list the 150 items"
awk -F'\t' '{ n = split($2, a, ":"); for (i = 1; i < n; i++) { split(a[i], p, ",");
       if (p[1] !~ /^m[0-9]+$/ || seen[NR, p[1]]++) exit 1 } }' all.txt || fail "padding units or repeats in results"
# Scores are in descending order and results agree with the first 100 of the full list.
awk -F'\t' '{ n = split($2, a, ":"); prev = 2; for (i = 1; i < n; i++) { split(a[i], p, ",");
       if (p[2] + 0 > prev + 0) exit 1; prev = p[2] } }' all.txt || fail "scores not descending"
cut -d: -f1-100 all.txt | sed 's/$/:/' >first100.txt
cmp -s first100.txt default.txt || fail "top 100 differs from the first 100 of the full ranking"

# ---- standard output without -s; -b does not change results ----
"${base[@]}" -k 5 >stdout.txt 2>/dev/null
"${base[@]}" -k 5 -b 7 -s b7.txt 2>/dev/null
"${base[@]}" -k 5 -b 1 -s b1.txt 2>/dev/null
cmp -s stdout.txt b7.txt && cmp -s stdout.txt b1.txt || fail "-b changed the results"
head -1 stdout.txt | grep -Eq '^u0	(m[0-9]+,[0-9]\.[0-9]{3}:){5}$' || fail "line format: $(head -1 stdout.txt)"

# ---- -p score format ----
"${base[@]}" -k 3 -p 4.3f -s p1.txt 2>/dev/null
cmp -s p1.txt <(head -c 0 /dev/null; cut -d: -f1-3 stdout.txt | sed 's/$/:/') || fail "-p 4.3f should match the default %.3f"
"${base[@]}" -k 3 -p .2e -s p2.txt 2>/dev/null
head -1 p2.txt | grep -Eq '^u0	(m[0-9]+,[0-9]\.[0-9]{2}e-[0-9]{2}:){3}$' || fail "-p .2e: $(head -1 p2.txt)"
set +e
"${base[@]}" -p d -s bad.txt 2>err.txt
rc=$?
set -e
[[ $rc == 1 ]] && grep -q "^nn-predict: error: score format '%d'" err.txt || fail "-p d: rc=$rc $(cat err.txt)"
[[ ! -e bad.txt ]] || fail "output left after a bad -p"

# ---- -f removes the listed items (DSSTNE multiplied scores by their values) ----
"${base[@]}" -k 1000 -f ratings.txt -s filtered.txt 2>/dev/null
awk -F'\t' 'NR == FNR { n = split($2, a, ":"); for (i = 1; i <= n; i++) seen[$1, a[i]] = 1;
                         rated[$1] = n; next }
     { n = split($2, a, ":"); c = 0; for (i = 1; i < n; i++) { split(a[i], p, ",");
       if (seen[$1, p[1]]) exit 1; c++ }
       if (c != 150 - rated[$1]) exit 2 }' ratings.txt filtered.txt ||
  fail "-f must remove exactly the seen items"
# A filter directory: every file in it is read.
mkdir filters
head -15 ratings.txt >filters/a.txt
tail -n +16 ratings.txt >filters/b.txt
"${base[@]}" -k 1000 -f filters -s filtered_dir.txt 2>/dev/null
cmp -s filtered.txt filtered_dir.txt || fail "a filter directory should act like the whole file"
# The same items as sample,item rows of a ratings CSV (with a header line and a rating column)
# filter alike; a line that is neither form is refused with what a filter may be.
{ echo "userId,movieId,rating"
  awk -F'\t' '{ n = split($2, a, ":"); for (i = n; i >= 1; i--) print $1 "," a[i] ",4.5" }' \
    ratings.txt; } >ratings.csv
"${base[@]}" -k 1000 -f ratings.csv -s filtered_csv.txt 2>/dev/null
cmp -s filtered.txt filtered_csv.txt || fail "a ratings CSV should filter as the text lines do"
echo "u1 m3" >bad_filter.txt
rc=0; "${base[@]}" -f bad_filter.txt -s bad.txt 2>err.txt || rc=$?
[[ $rc == 1 ]] && grep -q "bad_filter.txt:1: expected sample<TAB>item.*or sample,item.*a NetCDF dataset file such as the input dataset also works" err.txt ||
  fail "a malformed filter: rc=$rc $(cat err.txt)"

# --filter-multiply: DSSTNE's semantics, score *= value (no value = 0).
printf 'u0\tm0,0.5:m1,2:m2\n' >mult.txt
"${base[@]}" -k 1000 -p .6f -s plain.txt 2>/dev/null
"${base[@]}" -k 1000 -p .6f -f mult.txt --filter-multiply -s mult_out.txt 2>/dev/null
score() { grep "^$1	" "$3" | tr ':' '\n' | sed -n "s/^\(u[0-9]*	\)\{0,1\}$2,//p"; }
for item in m0 m1 m2; do [[ -n $(score u0 $item plain.txt) ]] || fail "no score for $item"; done
awk -v a="$(score u0 m0 plain.txt)" -v b="$(score u0 m0 mult_out.txt)" \
  'BEGIN { exit !(b > 0 && (b - a / 2) ^ 2 < 1e-12) }' || fail "m0 should be halved"
awk -v a="$(score u0 m1 plain.txt)" -v b="$(score u0 m1 mult_out.txt)" \
  'BEGIN { exit !((b - a * 2) ^ 2 < 1e-12) }' || fail "m1 should be doubled"
[[ $(score u0 m2 mult_out.txt) == 0.000000 ]] || fail "m2 (no value) should score 0"
[[ $(grep -v '^u0	' plain.txt) == $(grep -v '^u0	' mult_out.txt) ]] || fail "other users changed"
# Without --filter-multiply the same file removes the three items.
"${base[@]}" -k 1000 -f mult.txt -s removed.txt 2>/dev/null
[[ $(grep '^u0	' removed.txt | grep -Ec '	m[012],|:m[012],') == 0 ]] || fail "listed items not removed"
[[ $(entries removed.txt | head -1) == 147 ]] || fail "u0 should have 147 items left"

# ---- -l: any layer, by any name ----
"${base[@]}" -l Scores -k 5 -s l_scores.txt 2>/dev/null
cmp -s l_scores.txt stdout.txt || fail "-l Scores should equal the default"
"${base[@]}" -l Hidden -f ratings.txt -s hidden.txt 2>log.txt
[[ $(entries hidden.txt | sort -u) == 8 ]] || fail "-l Hidden: the 8 hidden units"
head -1 hidden.txt | grep -Eq '^u0	([0-7],[0-9.]+:){8}$' || fail "-l Hidden: units are numbered: $(head -1 hidden.txt)"
grep -q "not an output layer" log.txt || fail "-l Hidden: note about the index/filter"
set +e
"${base[@]}" -l Output -s x.txt 2>err.txt
rc=$?
set -e
[[ $rc == 1 ]] && grep -q "^nn-predict: error: net.nc: layer 'Output' (-l) not found; layers are: Input, Hidden, Scores$" err.txt ||
  fail "-l Output: rc=$rc $(cat err.txt)"

# ---- -d: the text input becomes dataset <name>_input, which must be the input layer's ----
"${base[@]}" -d gl -k 5 -s d.txt 2>/dev/null
cmp -s d.txt stdout.txt || fail "-d gl should not change the results"
set +e
"${base[@]}" -d other -k 5 -s d2.txt 2>err.txt
rc=$?
set -e
[[ $rc == 1 ]] && grep -q "^nn-predict: error: -d other: dataset 'other_input' does not match the network's input DataSet 'gl_input'$" err.txt ||
  fail "-d other: rc=$rc $(cat err.txt)"
[[ ! -e d2.txt ]] || fail "output left after a bad -d"

# ---- without -i the network's own items read -r (tests/tools/retraining.sh: a network without
# items needs -i); unknown input features are dropped and counted ----
"$tools/nn-predict" -n net.nc -r ratings.txt -s x.txt 2>err.txt ||
  fail "without -i: $(cat err.txt)"
grep -q "^layer 'Input': the network's own 150 items$" err.txt || fail "without -i: $(cat err.txt)"
printf 'u0\tm0:zzz:m3\n' >unknown.txt
"$tools/nn-predict" -n net.nc -r unknown.txt -i features.idx -o features.idx -k 2 -s unk.txt 2>log.txt
grep -q "1 features not in the index were ignored" log.txt || fail "dropped features: $(cat log.txt)"
[[ $(wc -l <unk.txt) == 1 ]] || fail "one line for one sample"

# ---- -o: labels; without it the network's own items (the same labels) ----
"$tools/nn-predict" -n net.nc -r ratings.txt -i features.idx -k 3 -s nolabels.txt 2>/dev/null
head -1 nolabels.txt | grep -Eq '^u0	(m[0-9]+,[0-9.]+:){3}$' || fail "no -o: the network's items: $(head -1 nolabels.txt)"

# ---- a sample index reused from a larger file is refused (its names would label other rows) ----
# sub.nc holds u3 and u5 only, generated with the full file's sample index (as the man page
# suggests for reusing indices): its rows are u3, u5, but the index's first names are u0, u1.
grep -P '^u(3|5)\t' ratings.txt >sub.txt
cp samples.idx shared_samples.idx
"$tools/nn-generate" -q -d gl_input -i sub.txt -o sub.nc -f features.idx -s shared_samples.idx
set +e
"$tools/nn-predict" -n net.nc --data sub.nc --sample-index shared_samples.idx -o features.idx \
  -k 3 >sub_recs.txt 2>err.txt
rc=$?
set -e
[[ $rc == 1 ]] && grep -q "^nn-predict: error: --sample-index shared_samples.idx lists 30 samples but sub.nc has 2 examples" err.txt ||
  fail "reused sample index: rc=$rc $(cat err.txt) $(head -2 sub_recs.txt)"
# With the file's own index, u3's recommendations are labelled u3, and equal those from -r.
"$tools/nn-generate" -q -d gl_input -i sub.txt -o own.nc -f features.idx -s own_samples.idx
"$tools/nn-predict" -q -n net.nc --data own.nc --sample-index own_samples.idx -o features.idx -k 3 >own.txt
"$tools/nn-predict" -q -n net.nc -r sub.txt -i features.idx -o features.idx -k 3 >text.txt
[[ $(cut -f1 own.txt | tr '\n' ' ') == "u3 u5 " ]] || fail "own index labels: $(cut -f1 own.txt)"
cmp -s own.txt text.txt || fail "--data with its own index should match -r: $(diff own.txt text.txt)"
# "-" reads the examples from standard input.
"$tools/nn-predict" -q -n net.nc -r - -i features.idx -o features.idx -k 3 <sub.txt >stdin.txt
cmp -s stdin.txt text.txt || fail "-r - should read standard input"

# ---- flags given with a CDL file override its keys, and say so ----
cat >predict.cdl <<'JSON'
{ "Network": "net.nc", "Command": "Predict", "Data": ["own.nc"],
  "PredictionParameters": { "K": 5, "OutputIndex": "features.idx", "SampleIndex": "own_samples.idx",
    "Output": "cdl_recs.txt" } }
JSON
"$tools/nn-predict" predict.cdl 2>cdl.log
[[ $(entries cdl_recs.txt | sort -u) == 5 ]] || fail "CDL K 5"
grep -q overrides cdl.log && fail "no flags, no override lines: $(cat cdl.log)"
"$tools/nn-predict" predict.cdl -k 2 -s over.txt 2>over.log
grep -qxF -- "--top 2 overrides predict.cdl's K 5" over.log &&
  grep -qxF -- "--output over.txt overrides predict.cdl's Output cdl_recs.txt" over.log ||
  fail "overrides not printed: $(cat over.log)"
[[ $(entries over.txt | sort -u) == 2 ]] || fail "-k 2 with a CDL"

echo "predict_flags: all checks passed"
