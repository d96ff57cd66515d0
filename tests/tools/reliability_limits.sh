#!/usr/bin/env bash
# Hostile sizes end in one clear message, exit status 1 (2 for usage) and no output file: a 7 KB
# dataset claiming 3e9 examples, layer sizes that overflow 32 or 64 bits, weights beyond the
# memory budget, configs nested 100,000 deep; nn-predict caps -b and -k by what the data needs.
# Usage: reliability_limits.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$1
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
source "$here/lib/error_checks.sh"
require_netcdf_bin
enter_work_dir
tiny_ratings
tiny_datasets "$tools"
tiny_config

# 1. A tiny netCDF-4 file claiming 3e9 examples and entries (nothing stored).
cat >huge.cdl <<'CDL'
netcdf huge {
dimensions:
  examplesDim0 = 3000000000 ;
  sparseDataDim0 = 3000000000 ;
variables:
  uint sparseStart0(examplesDim0) ;
  uint sparseEnd0(examplesDim0) ;
  uint sparseIndex0(sparseDataDim0) ;
  :datasets = 1U ; :name0 = "input" ; :dataType0 = 0U ; :attributes0 = 3U ;
  :dimensions0 = 1U ; :width0 = 100U ;
}
CDL
ncgen -k nc4 -o huge.nc huge.cdl
expect_error 1 "huge.nc: examplesDim0, sparseDataDim0: dataset 0 claims 3000000000 examples .*more than the memory budget of 1.0 GiB \(raise it with --memory-limit" \
  "$tools/nn-train" -c config.json -i huge.nc -o output.nc -n net.nc -e 1 --memory-limit 1G \
  --no-stream
# Beyond the budget nn-train would stream the data (docs/large-datasets.md); the claim is refused
# all the same: 7 KB of storage cannot hold it.
expect_error 1 "huge.nc: sparseStart0: claims 3000000000 values .*more than the .* file can hold" \
  "$tools/nn-train" -c config.json -i huge.nc -o output.nc -n net.nc -e 1 --memory-limit 1G
# Within a big budget the claim still cannot come from 7 KB of storage.
expect_error 1 "huge.nc: sparseStart0: claims 3000000000 values .*more than the .* file can hold" \
  "$tools/nn-train" -c config.json -i huge.nc -o output.nc -n net.nc -e 1 --memory-limit 1000T
no_outputs net.nc
tool=$tools/nn-train
expect_status 2 -c config.json -i input.nc -o output.nc -n net.nc --memory-limit lots
grep -q -- "--memory-limit: expected a size such as 8G" err.txt || fail "--memory-limit lots: $(cat err.txt)"

# Damaged HDF5 heaps that made libhdf5 loop forever or overrun its buffer inside nn-train (found
# by fuzzing, docs/fuzzing.md) are rejected before HDF5 reads them.
regressions=$2/tests/fuzz/regressions/netcdf_dataset
cp "$regressions/libhdf5-infinite-loop-H5HG-free-space-of-0-bytes" heap.nc
expect_error 1 "heap.nc: damaged HDF5 global heap at byte 2048: object 0 at byte 2064 claims 0 bytes" \
  timeout 60 "$tools/nn-train" -c config.json -i heap.nc -o output.nc -n net.nc -e 1
cp "$regressions/libhdf5-memcpy-overlap-H5HG_read" heap2.nc
expect_error 1 "heap2.nc: damaged HDF5 global heap at byte 3376: object 3 .* more than the 4032 left" \
  timeout 60 "$tools/nn-train" -c config.json -i heap2.nc -o output.nc -n net.nc -e 1
no_outputs net.nc
# A gzip image file inflating beyond the budget (64 MB of zeros in 64 KB) stops there.
head -c 67108864 /dev/zero | gzip -9 >bomb.gz
printf '\x00\x00\x08\x01\x00\x00\x00\x01\x00' >labels.idx
expect_error 1 "bomb.gz: gzip data \([0-9]+ bytes\) decompresses to more than the memory budget of 16.0 MiB" \
  "$tools/nn-encode" idx -i bomb.gz -l labels.idx -o enc.nc --memory-limit 16M
no_outputs enc.nc classes.idx

# 4. Layer sizes that do not fit their carriers.
sed 's/"N": 8/"N": [2147483648, 2]/' config.json >c2.json
expect_error 1 "c2.json: Layers\[1\].N: 2147483648 x 2 = 4294967296 units; a layer has at most 4294967295 units" \
  "$tools/nn-train" -c c2.json -i input.nc -o output.nc -n net.nc -e 1
sed 's/"N": 8/"N": [4294967295, 4294967295, 4294967295, 4294967295]/' config.json >c3.json
expect_error 1 "c3.json: Layers\[1\].N: .* = more than 2\^64 units" \
  "$tools/nn-train" -c c3.json -i input.nc -o output.nc -n net.nc -e 1
sed 's/"N": 8/"N": 4294967295/' config.json >c4.json
expect_error 1 "c4.json: layer 'Hidden': weights from 'Input' .* more than the memory budget" \
  "$tools/nn-train" -c c4.json -i input.nc -o output.nc -n net.nc -e 1 -q
no_outputs net.nc

# 3. Nesting 100,000 deep (a 200 KB config or CDL).
python3 -c "print('{\"Layers\": [{\"N\": 2, \"x\": ' + '['*100000 + ']'*100000 + '}]}')" >deep.json
expect_error 1 "deep.json: Layers\[0\].x.*nested deeper than 256 levels" \
  "$tools/nn-train" -c deep.json -i input.nc -o output.nc -n net.nc -e 1
python3 -c "print('{\"TrainingParameters\": ' + '['*100000 + ']'*100000 + '}')" >deep.cdl
expect_error 1 "deep.cdl: TrainingParameters.*nested deeper than 256 levels" "$tools/nn-train" deep.cdl
expect_error 1 "deep.cdl: TrainingParameters.*nested deeper than 256 levels" "$tools/nn-predict" deep.cdl

# 6. -b and -k far beyond the data are capped, not allocated.
"$tools/nn-train" -c config.json -i input.nc -o output.nc -n net.nc -e 1 -q
predict=("$tools/nn-predict" -r ratings.txt -i features.idx -o features.idx -n net.nc)
"${predict[@]}" -k 3 -s recs.txt 2>/dev/null
[[ $(wc -l <recs.txt) == 30 ]] || fail "expected 30 recommendation lines"
"${predict[@]}" -b 4000000000 -k 3 -s recs_b.txt 2>err.txt || fail "-b 4000000000: $(cat err.txt)"
cmp -s recs.txt recs_b.txt || fail "-b 4000000000 changed the recommendations"
"${predict[@]}" -k 4000000000 -s recs_k.txt 2>err.txt || fail "-k 4000000000: $(cat err.txt)"
grep -q "is more than layer 'Output' has units; using" err.txt || fail "-k cap not reported: $(cat err.txt)"
[[ $(wc -l <recs_k.txt) == 30 ]] || fail "-k 4000000000: expected 30 lines"
echo "reliability_limits: ok"
