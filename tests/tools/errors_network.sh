#!/usr/bin/env bash
# Bad network files stop nn-predict with exit status 1 and ONE line on stderr naming the file and
# the problem, leaving no output behind: truncated files, files that are not NetCDF, a dataset
# given as a network, NaN weights, a missing file. nn-train --resume skips damaged checkpoints
# for the newest one that reads back, and stops with one error listing them when none does.
# Usage: errors_network.sh <tool-dir> <source-dir>
set -euo pipefail
here=$(dirname "$(realpath "$0")")
tools=$(realpath "$1")
source "$here/lib/common.sh"
source "$here/lib/error_checks.sh"
enter_work_dir
require_netcdf_bin

tiny_ratings
tiny_datasets "$tools"
tiny_config
"$tools/nn-train" -q -c config.json -i input.nc -o output.nc -n good.nc -b 8 -e 2 \
  --checkpoint-name ck --checkpoint-interval 1
[[ -s good.nc && -s ck1.nc && -s ck2.nc ]] || fail "training wrote no network/checkpoints"
predict=("$tools/nn-predict" -r ratings.txt -i features.idx -o features.idx -s recs.txt -k 3)
"${predict[@]}" -n good.nc 2>/dev/null || fail "the good network should predict"
[[ $(wc -l <recs.txt) == 30 ]] || fail "good network: expected 30 lines"
rm recs.txt

# ---- truncated network files ----
# (Cut inside the HDF5 data: a file cut only inside its checksum trailer reads as one without a
# checksum, whole.)
size=$(hdf5_bytes good.nc)
for keep in 64 $((size / 2)) $((size - 16)); do
  head -c "$keep" good.nc >net.nc
  expect_error 1 '^nn-predict: error: net\.nc: not a NetCDF file \(.*\), or truncated$' \
    "${predict[@]}" -n net.nc
  no_outputs recs.txt
done

# ---- not NetCDF at all ----
cp config.json net.nc
expect_error 1 '^nn-predict: error: net\.nc: not a NetCDF file' "${predict[@]}" -n net.nc
no_outputs recs.txt
: >net.nc
expect_error 1 '^nn-predict: error: net\.nc: not a NetCDF file' "${predict[@]}" -n net.nc
no_outputs recs.txt

# ---- a dataset where a network belongs ----
expect_error 1 '^nn-predict: error: input\.nc: is a dataset file, not a network file' \
  "${predict[@]}" -n input.nc
no_outputs recs.txt

# ---- NaN in the weights ----
ncdump good.nc | sed '/^ weight0_weights =/s/= [-0-9.e]*,/= NaNf,/' | ncgen -k nc4 -o net.nc
expect_error 1 "^nn-predict: error: net\.nc: .*weight0_weights.* element 0 is NaN" \
  "${predict[@]}" -n net.nc
no_outputs recs.txt

# ---- a missing attribute ----
ncdump good.nc | grep -v ':layer1_Nx = ' | ncgen -k nc4 -o net.nc
expect_error 1 "^nn-predict: error: net\.nc: .*layer1_Nx" "${predict[@]}" -n net.nc
no_outputs recs.txt

# ---- missing file (CLI11 checks -n exists: usage error, exit 2) ----
set +e
"${predict[@]}" -n missing.nc 2>err.txt
rc=$?
set -e
[[ $rc == 2 ]] && grep -q '^nn-predict: error: .*missing\.nc' err.txt || fail "missing network: rc=$rc $(cat err.txt)"
no_outputs recs.txt

# ---- damaged checkpoints when resuming ----
# The newest does not read back: --resume says so and continues from the one before.
cp ck1.nc ck1_good.nc
head -c $((size / 2)) ck2.nc >ck2.tmp.nc && mv ck2.tmp.nc ck2.nc
"$tools/nn-train" -c config.json -i input.nc -o output.nc -n resumed.nc -b 8 -e 3 \
  --checkpoint-name ck --checkpoint-interval 1 --resume 2>err.txt || fail "resume: $(cat err.txt)"
grep -q '^--resume: skipped the newer checkpoint ck2\.nc: not a NetCDF file (.*), or truncated$' \
  err.txt || fail "no line about the skipped checkpoint: $(cat err.txt)"
grep -q '^resuming from ck1\.nc$' err.txt || fail "did not resume from ck1.nc: $(cat err.txt)"
[[ -s resumed.nc && -s ck3.nc ]] || fail "the resumed run wrote no network"
rm -f resumed.nc ck3.nc
# None reads back: one error listing them all, and nothing is overwritten.
cp good.nc keep.nc
head -c $((size / 2)) ck1_good.nc >ck1.nc
head -c 100 ck1_good.nc >ck2.nc
cp ck2.nc ck2_damaged.nc
set +e
"$tools/nn-train" -c config.json -i input.nc -o output.nc -n good.nc -b 8 -e 3 \
  --checkpoint-name ck --checkpoint-interval 1 --resume 2>err.txt
rc=$?
set -e
[[ $rc == 1 ]] || fail "resume without a readable checkpoint exited $rc: $(cat err.txt)"
grep -q "^nn-train: error: --resume: none of the 2 checkpoint(s) of 'ck' reads back whole:$" err.txt &&
  grep -q '^  ck2\.nc: not a NetCDF file' err.txt && grep -q '^  ck1\.nc: not a NetCDF file' err.txt ||
  fail "the error does not list both checkpoints: $(cat err.txt)"
cmp -s good.nc keep.nc || fail "the previous network file was changed by a failed resume"
cmp -s ck2.nc ck2_damaged.nc || fail "the damaged checkpoint was changed"
no_outputs ck3.nc

echo "errors_network: all checks passed"
