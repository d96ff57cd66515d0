#!/usr/bin/env bash
# Two outputs that name one file, or an output that names an input, are refused by every tool
# before anything is written, however the file is spelled (./x, dir/../x, a symbolic or hard
# link): exit status 2, one message naming both options, and every file as it was.
# Usage: same_file_outputs.sh <tool-dir> <source-dir>
set -euo pipefail
here=$(dirname "$(realpath "$0")")
tools=$(realpath "$1")
source "$here/lib/common.sh"
enter_work_dir
trap 'rm -rf "$work" "$work".*' EXIT

tiny_ratings
tiny_datasets "$tools"
tiny_config
"$tools/nn-train" -c config.json -i input.nc -o output.nc -n net.nc -e 1 -q
python3 - <<'PY'
def pix(i, x, y, c): return (i * 37 + x * 5 + y * 11 + c * 101 + 3) % 256
img = lambda i: bytes(pix(i, x, y, c) for c in range(3) for y in range(32) for x in range(32))
open("a.bin", "wb").write(b"".join(bytes([k % 10]) + img(k) for k in range(20)))
PY
mkdir sub
ln -s features.idx soft.idx
ln input.nc hard.nc

# refused STATUS REGEX command...: exit STATUS, one error line matching REGEX, and no file in
# the directory changed or appeared (no output, no temporary file).
refused() {
  local want=$1 pattern=$2 got=0
  shift 2
  ls -A | sort | xargs md5sum >"$work.before" 2>/dev/null || true
  "$@" >"$work.out" 2>"$work.err" || got=$?
  [[ $got == "$want" ]] || fail "$* exited $got, expected $want: $(cat "$work.err")"
  [[ $(grep -c 'error: ' "$work.err") == 1 ]] || fail "$*: expected one error: $(cat "$work.err")"
  grep -Eq -- "error: .*$pattern" "$work.err" || fail "$*: not /$pattern/: $(cat "$work.err")"
  ls -A | sort | xargs md5sum >"$work.after" 2>/dev/null || true
  cmp -s "$work.before" "$work.after" || fail "$*: files changed: $(diff "$work.before" "$work.after")"
}

# nn-generate: the feature and sample index in two spellings (the feature index was lost).
refused 2 '-f x\.idx and -s \./x\.idx name the same file; each output needs a file of its own' \
  "$tools/nn-generate" -d input -i ratings.txt -o new.nc -f x.idx -s ./x.idx -c
[[ ! -e x.idx && ! -e new.nc ]] || fail "nn-generate wrote before refusing"
refused 2 '-o sub/\.\./input\.nc and -s input\.nc name the same file' \
  "$tools/nn-generate" -d input -i ratings.txt -o sub/../input.nc -f features.idx -s input.nc
refused 2 '-o features\.idx and -f soft\.idx name the same file' \
  "$tools/nn-generate" -d input -i ratings.txt -o features.idx -f soft.idx -s samples.idx
refused 2 '-o \./ratings\.txt names the same file as the input -i ratings\.txt' \
  "$tools/nn-generate" -d input -i ratings.txt -o ./ratings.txt -f f2.idx -s s2.idx -c

# nn-encode: the class index over the dataset (it left a 40-byte index where the data was).
refused 2 '-o d\.nc and --class-index \./d\.nc name the same file' \
  "$tools/nn-encode" cifar10 -i a.bin -o d.nc --class-index ./d.nc
refused 2 '-o d\.nc and --output2 \./d\.nc name the same file' \
  "$tools/nn-encode" cifar10 -i a.bin -o d.nc --split 0.5 --output2 ./d.nc
refused 2 '-o sub/classes\.idx and the class index \(default\) sub/classes\.idx' \
  "$tools/nn-encode" cifar10 -i a.bin -o sub/classes.idx
refused 2 '-o \./a\.bin names the same file as the input -i a\.bin' \
  "$tools/nn-encode" cifar10 -i a.bin -o ./a.bin --class-index c.idx

# nn-train: the network over its own training data, by flag and by CDL key.
refused 2 '-n hard\.nc names the same file as the input -i input\.nc' \
  "$tools/nn-train" -c config.json -i input.nc -o output.nc -n hard.nc -e 1
cat >train.cdl <<'JSON'
{ "Network": "config.json", "Command": "Train", "RandomSeed": 1, "Data": ["input.nc", "output.nc"],
  "TrainingParameters": { "Epochs": 1, "MiniBatch": 8, "Results": "./output.nc" } }
JSON
refused 2 'Results .*output\.nc names the same file as the input Data .*output\.nc' \
  "$tools/nn-train" train.cdl

# nn-predict: two outputs, and an output over an input.
refused 2 '-s recs\.txt and --dump \./recs\.txt name the same file' \
  "$tools/nn-predict" -n net.nc --data input.nc -s recs.txt --dump ./recs.txt
refused 2 '-s samples\.idx names the same file as the input --sample-index \./samples\.idx' \
  "$tools/nn-predict" -n net.nc --data input.nc --sample-index ./samples.idx -s samples.idx
cp ratings.txt seen.txt
refused 2 '-s \./seen\.txt names the same file as the input -f seen\.txt' \
  "$tools/nn-predict" -n net.nc -r ratings.txt -i features.idx -o features.idx -f seen.txt \
  -s ./seen.txt

# Still allowed: /dev/null twice (written in place, not replaced), one file read and written
# on purpose (nn-generate's index files).
"$tools/nn-predict" -n net.nc --data input.nc -s /dev/null --dump /dev/null -q ||
  fail "two outputs to /dev/null should be allowed"
"$tools/nn-generate" -d input -i ratings.txt -o again.nc -f features.idx -s samples.idx -q ||
  fail "reusing the index files should be allowed"
echo "same_file_outputs: ok"
