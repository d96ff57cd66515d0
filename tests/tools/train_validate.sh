#!/usr/bin/env bash
# CDL Command "Validate" (and nn-train --validate): DSSTNE's gradient check on the first
# minibatch (NNNetwork::Validate; man nn-train). Networks shaped like DSSTNE's own validation
# configs pass with one PASS line per weight and bias array and exit 0; impossible tolerances make
# every array fail, with exit status 1 and one error line. Nothing is written.
# Usage: train_validate.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir

# DSSTNE's "Classification" test data (generateTestData in its tst/gputests/TestUtils.h): sample
# s has the single feature s mod 2 in its input and its output.
awk 'BEGIN { for (s = 0; s < 64; s++) print "sample" s "\tfeature" (s % 2) }' >class.txt
"$tools/nn-generate" -d input -i class.txt -o input.nc -f features.idx -s samples.idx -c --align 1 2>/dev/null
"$tools/nn-generate" -d output -i class.txt -o output.nc -f features.idx -s samples.idx --align 1 2>/dev/null

# validate_ScaledMarginalCrossEntropy_02 and a LeakyReLU variant of validate_L2_LRelu (configs
# of DSSTNE's tst/test_data).
cat >smce.json <<'JSON'
{ "Version": 0.8, "Name": "smce", "Kind": "FeedForward", "ShuffleIndices": false,
  "ErrorFunction": "ScaledMarginalCrossEntropy",
  "ScaledMarginalCrossEntropy": { "oneTarget": 1.0, "zeroTarget": 0.0, "oneScale": 30.0, "zeroScale": 1.0 },
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "Type": "FullyConnected", "N": 2, "Activation": "Sigmoid", "Sparse": true },
    { "Name": "Output", "Kind": "Output", "Type": "FullyConnected", "DataSet": "output", "N": "auto",
      "Activation": "Sigmoid", "Sparse": true } ] }
JSON
cat >lrelu.json <<'JSON'
{ "Version": 0.8, "Name": "lrelu", "Kind": "FeedForward", "ShuffleIndices": false, "ErrorFunction": "L2",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 4, "Activation": "LeakyRectifiedLinear", "Slope": 0.5 },
    { "Name": "Output", "Kind": "Output", "DataSet": "output", "N": "auto", "Activation": "Linear" } ] }
JSON
for net in smce lrelu; do
  cat >$net.cdl <<JSON
{ "Version": 0.8, "Network": "$net.json", "Command": "Validate", "RandomSeed": 12345,
  "Data": ["input.nc", "output.nc"], "TrainingParameters": { "MiniBatch": 4 } }
JSON
  "$tools/nn-train" $net.cdl >out.txt 2>$net.log || fail "$net should validate: $(cat $net.log)"
  [[ ! -s out.txt ]] || fail "$net: the report belongs on stderr, got stdout: $(cat out.txt)"
  if grep -q '^nn-train: error' $net.log; then fail "$net: unexpected error: $(cat $net.log)"; fi
  grep -q "^gradient check of .*$net.json on the first 4 examples" $net.log || fail "$net: header: $(cat $net.log)"
  [[ $(grep -c '^PASS ' $net.log) == 4 ]] || fail "$net: 4 arrays should pass: $(cat $net.log)"
  for array in 'Hidden<-Input:weights' 'Hidden<-Input:bias' 'Output<-Hidden:weights' 'Output<-Hidden:bias'; do
    grep -q "^PASS $array: [0-9]*/[0-9]* entries checked" $net.log || fail "$net: no PASS line for $array"
  done
  grep -q '^gradient check passed: 4 weight and bias arrays$' $net.log || fail "$net: summary"
done
# Every entry was checked (2x2 and 2x2 arrays, 2-entry biases: nothing to sample).
grep -q '^PASS Hidden<-Input:weights: 4/4 entries checked' smce.log || fail "smce: $(cat smce.log)"

# The same through the flags; -b sets the batch, --check-entries samples big arrays.
cat >wide.json <<'JSON'
{ "Name": "wide", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 16, "Activation": "Tanh" },
    { "Name": "Output", "Kind": "Output", "DataSet": "output", "N": "auto", "Activation": "Sigmoid" } ] }
JSON
"$tools/nn-train" --validate -c wide.json -i input.nc -o output.nc -b 16 --check-entries 10 2>wide.log
grep -q 'on the first 16 examples' wide.log || fail "-b 16: $(cat wide.log)"
grep -q '^PASS Output<-Hidden:weights: 10/32 entries checked' wide.log || fail "--check-entries: $(cat wide.log)"
grep -q '^PASS Hidden<-Input:bias: 10/16 entries checked' wide.log || fail "--check-entries: $(cat wide.log)"

# Impossible tolerances (none, not even for the loss's rounding noise): every array fails; exit
# status 1, one error line naming them, FAIL lines.
set +e
"$tools/nn-train" smce.cdl --check-abs-tolerance 0 --check-rel-tolerance 0 --check-noise-factor 0 2>fail.log
rc=$?
set -e
grep '^nn-train: error:' fail.log >err.txt || true
[[ $rc == 1 ]] || fail "a failed check should exit 1, got $rc: $(cat err.txt)"
[[ $(wc -l <err.txt) == 1 ]] || fail "one error line expected: $(cat err.txt)"
grep -q '^nn-train: error: gradient check failed for [1-4] of 4 weight and bias arrays: ' err.txt ||
  fail "failure message: $(cat err.txt)"
grep -Eq '^FAIL [A-Za-z<-]+:(weights|bias): .* outside the tolerance, worst \[[0-9]+\]: backward .*, finite difference ' fail.log ||
  fail "FAIL lines: $(cat fail.log)"
# -q keeps the report quiet but not the verdict.
set +e
"$tools/nn-train" -q smce.cdl --check-abs-tolerance 0 --check-rel-tolerance 0 --check-noise-factor 0 >quiet.log 2>err.txt
rc=$?
set -e
[[ $rc == 1 && ! -s quiet.log && $(wc -l <err.txt) == 1 ]] || fail "-q: rc=$rc $(cat quiet.log err.txt)"

# Validate writes nothing.
if compgen -G 'check*.nc' >/dev/null || [[ -e network.nc ]]; then fail "Validate wrote files: $(ls)"; fi
# --validate needs -c/-i/-o but not -n; bad settings are usage errors.
set +e
"$tools/nn-train" --validate -c wide.json -i input.nc 2>err.txt
rc=$?
set -e
[[ $rc == 2 ]] && grep -q '^nn-train: error: --validate needs -c, -i and -o' err.txt || fail "usage: $(cat err.txt)"
set +e
"$tools/nn-train" smce.cdl --check-epsilon 0 2>err.txt
rc=$?
set -e
[[ $rc == 2 ]] || fail "--check-epsilon 0: rc=$rc $(cat err.txt)"

echo "train_validate: all checks passed"
