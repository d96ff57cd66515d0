#!/usr/bin/env bash
# nn-predict --dump-layer NAME --dump FILE: any layer's activations for every example, as text
# (sample<TAB>v1,v2,...) or, for FILE.nc, as a dense Float NetCDF dataset named after the layer
# that our own tools read back (it is used here as nn-train's input). Checks the values agree
# between the two forms and with the scores nn-predict prints, and the error cases.
# Usage: predict_dump.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir
command -v ncdump >/dev/null || fail "needs ncdump (netcdf-bin)"

awk 'BEGIN { for (u = 0; u < 30; u++) { t = u % 3; line = "u" u "\t";
       for (j = 0; j < 8; j++) if ((u * 7 + j * 3) % 10 < 6) line = line "m" (t * 8 + j) ":";
       print substr(line, 1, length(line) - 1) } }' >ratings.txt
tiny_datasets "$tools"
tiny_config 5 Tanh
"$tools/nn-train" -q -c config.json -i input.nc -o output.nc -n net.nc -b 8 -e 3 -alpha 0.2 \
  --checkpoint-interval 0
predict=("$tools/nn-predict" -n net.nc -r ratings.txt -i features.idx -o features.idx)

# ---- text dump of a hidden layer; nothing else on standard output ----
"${predict[@]}" --dump-layer Hidden --dump hidden.txt >stdout.txt 2>log.txt
[[ ! -s stdout.txt ]] || fail "a dump without -s should not print recommendations"
grep -q "wrote the activations of layer 'Hidden' to hidden.txt" log.txt || fail "log: $(cat log.txt)"
[[ $(wc -l <hidden.txt) == 30 ]] || fail "expected 30 lines"
cut -f1 hidden.txt | cmp -s - <(cut -f1 ratings.txt) || fail "sample names/order"
awk -F'\t' '{ n = split($2, v, ","); if (n != 5) exit 1;
       for (i = 1; i <= n; i++) if (v[i] !~ /^-?[0-9.]+(e[-+][0-9]+)?$/ || v[i] < -1 || v[i] > 1) exit 1 }' \
  hidden.txt || fail "5 tanh values per line expected: $(head -1 hidden.txt)"
# Not all the same (a dump of a wrong buffer would often be constant or zero).
[[ $(cut -f2 hidden.txt | sort -u | wc -l) -gt 5 ]] || fail "hidden activations do not vary"

# ---- NetCDF dump: a dense Float dataset named after the layer, same values ----
"${predict[@]}" --dump-layer Hidden --dump hidden.nc 2>/dev/null
header=$(ncdump -h hidden.nc)
for want in 'name0 = "Hidden"' 'dataType0 = 4U' 'attributes0 = 0U' 'width0 = 5U' 'examplesDim0 = 30'; do
  grep -qF "$want" <<<"$header" || fail "hidden.nc: no '$want' in: $header"
done
ncdump -v data0 hidden.nc | sed -n '/data0 =/,/;/p' | tr -d ' \n;' | sed 's/^data0=//' | tr ',' '\n' | awk 1 >nc_values.txt
cut -f2 hidden.txt | tr ',' '\n' >txt_values.txt
[[ $(wc -l <nc_values.txt) == 150 ]] || fail "hidden.nc should hold 30 x 5 values"
paste nc_values.txt txt_values.txt | awk '{ d = $1 - $2; if (d < -1e-5 || d > 1e-5) exit 1 }' ||
  fail "NetCDF and text dumps differ"
# Our reader takes it: train a small network on the dumped activations.
cat >on_hidden.json <<'JSON'
{ "Name": "on-hidden", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "In", "Kind": "Input", "N": "auto", "DataSet": "Hidden" },
    { "Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Sigmoid" } ] }
JSON
"$tools/nn-train" -c on_hidden.json -i hidden.nc -o output.nc -n on_hidden.nc -b 8 -e 1 \
  --checkpoint-interval 0 2>train.log || fail "nn-train could not read hidden.nc"
grep -q "dataset 'Hidden' from hidden.nc: 30 examples, 5 features, dense" train.log ||
  fail "train log: $(cat train.log)"

# ---- the output layer by default; its values are the printed scores ----
"${predict[@]}" -k 3 -p .6f -s recs.txt --dump out.txt 2>/dev/null
"${predict[@]}" -k 3 -p .6f -s recs_plain.txt 2>/dev/null
cmp -s recs.txt recs_plain.txt || fail "--dump changed the recommendations"
awk -F'\t' 'NR == FNR { idx[$1] = $2; next }
     FILENAME ~ /recs/ { n = split($2, a, ":"); for (i = 1; i < n; i++) { split(a[i], p, ",");
       want[$1, idx[p[1]]] = p[2] }; next }
     { n = split($2, v, ","); if (n != 128) { print "width", n; exit 1 }
       for (k in want) { split(k, q, SUBSEP); if (q[1] == $1) { d = v[q[2] + 1] - want[k];
         if (d < -1e-6 || d > 1e-6) { print $1, q[2], v[q[2] + 1], want[k]; exit 1 }; checked++ } } }
     END { if (checked != 90) { print "checked", checked; exit 1 } }' \
  features.idx recs.txt out.txt || fail "dumped output values differ from the printed scores"

# ---- errors: no output left behind ----
expect_error() {
  local want=$1 pattern=$2 got=0
  shift 2
  "$@" >out.log 2>err.txt || got=$?
  [[ $got == "$want" ]] || fail "$* exited $got, expected $want: $(cat err.txt)"
  grep -Eq -- "$pattern" err.txt || fail "$*: message does not match /$pattern/: $(cat err.txt)"
}
expect_error 1 "^nn-predict: error: net\.nc: --dump-layer 'Hiden' not found; layers are: Input, Hidden, Output \(did you mean 'Hidden'\?\)$" \
  "${predict[@]}" --dump-layer Hiden --dump bad.txt
expect_error 1 "^nn-predict: error: net\.nc: --dump-layer 'Input' is a sparse input layer" \
  "${predict[@]}" --dump-layer Input --dump bad.nc
expect_error 2 '^nn-predict: error: --dump-layer needs --dump FILE$' "${predict[@]}" --dump-layer Hidden
[[ ! -e bad.txt && ! -e bad.nc ]] || fail "dump file left after an error"
if compgen -G '*.tmp*' >/dev/null; then fail "temporary file left: $(ls ./*.tmp*)"; fi

echo "predict_dump: all checks passed"
