#!/usr/bin/env bash
# Bad datasets stop nn-train / nn-predict with exit status 1 and ONE line on stderr naming the
# file and the NetCDF variable (or layer) with what was found and what was expected, leaving no
# output behind: a width that does not match the layer's N, an index beyond the width, NaN and
# infinite values, truncated files and files that are not NetCDF at all.
# Bad files are made by editing ncdump's text of good ones and rebuilding them with ncgen.
# Usage: errors_data.sh <tool-dir> <source-dir>
set -euo pipefail
here=$(dirname "$(realpath "$0")")
tools=$(realpath "$1")
source "$here/lib/common.sh"
source "$here/lib/error_checks.sh"
enter_work_dir
require_netcdf_bin

tiny_ratings analog  # values 1 + item mod 5
"$tools/nn-generate" -d input -i ratings.txt -o good_input.nc -f features.idx -s samples.idx -c \
  -t analog 2>/dev/null
"$tools/nn-generate" -d output -i ratings.txt -o output.nc -f features.idx -s samples.idx 2>/dev/null
cp good_input.nc input.nc

tiny_config
cat >train.cdl <<'JSON'
{ "Network": "config.json", "Command": "Train", "RandomSeed": 7,
  "Data": ["input.nc", "output.nc"],
  "TrainingParameters": { "Epochs": 2, "MiniBatch": 8, "CheckpointName": "ck",
                          "CheckpointInterval": 1, "Results": "net.nc" } }
JSON
outputs=(net.nc ck1.nc ck2.nc)

"$tools/nn-train" -q train.cdl || fail "the good data should train"
[[ -s net.nc ]] || fail "no network from the good data"
mv net.nc good_net.nc
rm -f ck1.nc ck2.nc

# ---- width does not match N ----
sed 's/"N": "auto", "DataSet": "input"/"N": 100, "DataSet": "input"/' config.json >n100.json
sed 's/config.json/n100.json/' train.cdl >n100.cdl
expect_error 1 "^nn-train: error: .*n100\.json: .*layer 'Input'.*: dataset 'input' \(.*input\.nc.*\) has 128 features per example but the layer has 100 units$" \
  "$tools/nn-train" n100.cdl
no_outputs "${outputs[@]}"

# ---- an index beyond the width (128) ----
ncdump good_input.nc >input.cdl
grep -q '^ sparseIndex0 = 0, 1, 2, 3,' input.cdl || fail "unexpected ncdump text: $(grep sparseIndex0 input.cdl)"
sed 's/^ sparseIndex0 = 0, 1, 2, 3,/ sparseIndex0 = 0, 1, 300, 3,/' input.cdl | ncgen -k nc4 -o input.nc
expect_error 1 '^nn-train: error: .*input\.nc: sparseIndex0: entry 2 is 300; expected < 128' \
  "$tools/nn-train" train.cdl
no_outputs "${outputs[@]}"
# nn-predict reads the same file for --data and must not leave a recommendations file.
expect_error 1 '^nn-predict: error: .*input\.nc: sparseIndex0: entry 2 is 300' \
  "$tools/nn-predict" -n good_net.nc --data input.nc -s recs.txt
no_outputs recs.txt

# ---- NaN and infinite values ----
grep -q '^ sparseData0 = 2, 3, 4,' input.cdl || fail "unexpected ncdump text: $(grep sparseData0 input.cdl)"
sed 's/^ sparseData0 = 2, 3, 4,/ sparseData0 = 2, NaNf, 4,/' input.cdl | ncgen -k nc4 -o input.nc
expect_error 1 '^nn-train: error: .*input\.nc: sparseData0: entry 1 is nan; expected a finite value$' \
  "$tools/nn-train" train.cdl
no_outputs "${outputs[@]}"
sed 's/^ sparseData0 = 2, 3, 4,/ sparseData0 = 2, 3, -Infinityf,/' input.cdl | ncgen -k nc4 -o input.nc
expect_error 1 '^nn-train: error: .*input\.nc: sparseData0: entry 2 is -inf; expected a finite value$' \
  "$tools/nn-train" train.cdl
no_outputs "${outputs[@]}"
expect_error 1 '^nn-predict: error: .*input\.nc: sparseData0: entry 2 is -inf' \
  "$tools/nn-predict" -n good_net.nc --data input.nc -s recs.txt
no_outputs recs.txt
# ... and in text examples.
printf 'u1\tm1,nan:m2,1\n' >nan.txt
expect_error 1 '^nn-generate: error: nan\.txt:1: .*"nan" is not a finite number$' \
  "$tools/nn-generate" -d x -i nan.txt -o nan.nc -f features.idx -s s.idx -t analog
no_outputs nan.nc s.idx

# ---- truncated files and files that are not NetCDF ----
# (Cut inside the HDF5 data: a file cut only inside its checksum trailer reads as one without a
# checksum, whole.)
size=$(hdf5_bytes good_input.nc)
for keep in 64 $((size / 2)) $((size - 16)); do
  head -c "$keep" good_input.nc >input.nc
  expect_error 1 '^nn-train: error: .*input\.nc: cannot open as NetCDF \(not a NetCDF file, or truncated\)' \
    "$tools/nn-train" train.cdl
  no_outputs "${outputs[@]}"
done
head -c $((size / 2)) good_input.nc >input.nc
expect_error 1 '^nn-predict: error: .*input\.nc: cannot open as NetCDF \(not a NetCDF file, or truncated\)' \
  "$tools/nn-predict" -n good_net.nc --data input.nc -s recs.txt
no_outputs recs.txt
printf 'u1\tm1:m2\n' >input.nc
expect_error 1 '^nn-train: error: .*input\.nc: cannot open as NetCDF \(not a NetCDF file, or truncated\)' \
  "$tools/nn-train" train.cdl
no_outputs "${outputs[@]}"
: >input.nc
expect_error 1 '^nn-train: error: .*input\.nc: cannot open as NetCDF' "$tools/nn-train" train.cdl
no_outputs "${outputs[@]}"
# A metrics target that is not NetCDF.
printf 'not netcdf\n' >target.nc
expect_error 1 '^nn-predict: error: .*target\.nc: cannot open as NetCDF' \
  "$tools/nn-predict" -n good_net.nc --data good_input.nc --target target.nc -s recs.txt
no_outputs recs.txt

echo "errors_data: all checks passed"
