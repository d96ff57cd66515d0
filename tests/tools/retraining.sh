#!/usr/bin/env bash
# Networks that know their items, and warm starts across a changed catalog (docs/retraining.md):
# a trained network carries its items; nn-predict uses them without indices, refuses an index or
# a dataset that lists them in another order (naming the first difference, writing nothing) and
# gives the original recommendations once they are remapped by name; nn-train --warm-start keeps,
# adds and drops items by name, names a hidden layer whose shape changed, is left alone by
# --resume of its own run (mpi_warm_start.sh: under mpirun); a network without items
# (trained on unnamed data, as DSSTNE's are) is still served and scored with index files, and
# refused without them.
# Usage: retraining.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
source "$here/lib/retraining.sh"
enter_work_dir
require_netcdf_bin
header_has() { ncdump -h "$1" >header.txt && grep -q "$2" header.txt; }
tiny_ratings
tiny_datasets "$tools"
tiny_config 8
"$tools/nn-train" -q -c config.json -i input.nc -o output.nc -n net.nc -e 3 -b 8 --seed 1
header_has input.nc "string indToFeature0(indToFeatureDim0)" ||
  fail "nn-generate wrote no feature names"
header_has net.nc "string layer0_nn_features(layer0_nn_featureDim)" ||
  fail "the network file does not carry the input layer's items"
header_has net.nc "string layer2_nn_features(layer2_nn_featureDim)" ||
  fail "the network file does not carry the output layer's items"

# --- nn-predict: the network's own items, a reordered index refused, then remapped -------------
tool="$tools/nn-predict"
"$tool" -n net.nc -r ratings.txt -i features.idx -o features.idx -k 5 -s with.recs 2>/dev/null
"$tool" -n net.nc -r ratings.txt -k 5 -s own.recs 2>own.log
cmp -s with.recs own.recs || fail "the network's own items gave other recommendations"
grep -q "layer 'Output': the network's own 18 items" own.log || fail "$(cat own.log)"
# The same items, ids shuffled (names kept): refused before any output, by its first difference.
python3 - <<'PY'
import random
names = [line.split("\t")[0] for line in open("features.idx")]
random.Random(3).shuffle(names)
open("shuffled.idx", "w").write("".join(f"{n}\t{i}\n" for i, n in enumerate(names)))
PY
expect_status 1 -n net.nc -r ratings.txt -i shuffled.idx -o shuffled.idx -k 5 -s out.recs
grep -q "error: -i shuffled.idx does not match the items of layer 'Input' that the network was trained with: feature \"m[0-9]*\" is index [0-9]* in the network but index [0-9]* in -i shuffled.idx" err.txt ||
  fail "$(cat err.txt)"
[[ ! -e out.recs ]] || fail "a refused index still wrote recommendations"
expect_status 1 -n net.nc -r ratings.txt -o shuffled.idx -k 5 -s out.recs
grep -q "error: -o shuffled.idx does not match the items of layer 'Output'" err.txt || fail "$(cat err.txt)"
expect_status 0 -n net.nc -r ratings.txt -i shuffled.idx -o shuffled.idx --remap-index -k 5 \
  -s remapped.recs
cmp -s with.recs remapped.recs || fail "remapped by name, the recommendations changed"
# An index missing items: refused, naming the first missing one.
head -n 10 features.idx >short.idx
expect_status 1 -n net.nc -r ratings.txt -o short.idx -k 5 -s out.recs
grep -q "(index 10 in the network) is missing from -o short.idx" err.txt || fail "$(cat err.txt)"
# A dataset indexed with another order of the items: refused, then re-indexed by name.
cp shuffled.idx reindexed.idx
"$tools/nn-generate" -d input -i ratings.txt -o input_other.nc -f reindexed.idx -s other.idx \
  2>/dev/null
"$tool" -n net.nc --data input.nc -k 5 -s data.recs 2>/dev/null
expect_status 1 -n net.nc --data input_other.nc -k 5 -s out.recs
grep -q "layer 'Input': the dataset's features are not the network's" err.txt || fail "$(cat err.txt)"
expect_status 0 -n net.nc --data input_other.nc --remap-index -k 5 -s data_remapped.recs
cmp -s data.recs data_remapped.recs || fail "a re-indexed dataset gave other recommendations"
# A target indexed that way: refused, then re-indexed by name with the same metrics.
"$tools/nn-generate" -d output -i ratings.txt -o target_other.nc -f reindexed.idx -s other2.idx \
  2>/dev/null
"$tool" -n net.nc --data input.nc --target output.nc -k 5 -s /dev/null 2>target.log
expect_status 1 -n net.nc --data input.nc --target target_other.nc -k 5 -s /dev/null
grep -q "error: --target target_other.nc: the target's items are not the scored layer's: feature" \
  err.txt || fail "$(cat err.txt)"
expect_status 0 -n net.nc --data input.nc --target target_other.nc --remap-index -k 5 -s /dev/null
grep "^5," target.log >a5.txt
grep "^5," err.txt >b5.txt
[[ -s a5.txt ]] && cmp -s a5.txt b5.txt || fail "remapped target: $(cat a5.txt b5.txt)"

# nn-export puts the items into the ONNX model's metadata.
if /usr/bin/python3 -c 'import onnx' 2>/dev/null; then
  "$tools/nn-export" -n net.nc -o net.onnx 2>export.log || fail "$(cat export.log)"
  grep -q "the items of layer 'Output' are in the model's metadata (nn_items:Output)" export.log ||
    fail "$(cat export.log)"
  /usr/bin/python3 - <<'PY' || fail "the ONNX model's item metadata differ from features.idx"
import onnx
meta = {p.key: p.value for p in onnx.load("net.onnx").metadata_props}
names = [line.split("\t")[0] for line in open("features.idx")]
for layer in ("Input", "Output"):
    listed = meta["nn_items:" + layer].split("\n")
    assert listed[:len(names)] == names, layer
PY
else
  echo "note: no python3-onnx; the exported model's items were not read back"
fi

# --- nn-train --warm-start: day 2 drops m0, adds m99 and two users, indexed afresh -------------
make_day2 "$tools"
tool="$tools/nn-train"
warm() {  # warm OUT EPOCHS [args]: day 2 from net.nc
  local out=$1 epochs=$2
  shift 2
  "$tools/nn-train" -c config.json -i day2_in.nc -o day2_out.nc -n "$out" -e "$epochs" -b 8 \
    --seed 2 --warm-start net.nc "$@"
}
warm warm.nc 4 2>warm.log || fail "$(tail -5 warm.log)"
grep -q "warm start from net.nc" warm.log || fail "$(cat warm.log)"
grep -q "  layer 'Input': 17 items kept, 1 added, 1 dropped (128 -> 128 units)" warm.log ||
  fail "$(grep -A3 'warm start' warm.log)"
grep -q "  layer 'Output': 17 items kept, 1 added, 1 dropped" warm.log || fail "$(cat warm.log)"
"$tools/nn-predict" -n warm.nc -r day2.txt -k 3 -s warm.recs 2>/dev/null
grep -q "^u100	" warm.recs || fail "the warm-started network does not score the new user"
# A hidden layer of another size: refused, naming it and both shapes.
tiny_config 9
expect_status 1 -c config.json -i day2_in.nc -o day2_out.nc -n bad.nc -e 1 -b 8 --warm-start net.nc
grep -q "error: --warm-start net.nc: layer 'Hidden': is 8 in the old network and 9 in the new" err.txt ||
  fail "$(cat err.txt)"
[[ ! -e bad.nc ]] || fail "a refused warm start wrote a network"
tiny_config 8
# --resume of a warm-started run continues its checkpoint and ends where the whole run ends.
warm ck_part.nc 2 --checkpoint-name ck --checkpoint-interval 1 2>part.log || fail "$(tail -3 part.log)"
warm resumed.nc 4 --checkpoint-name ck --checkpoint-interval 1 --resume 2>resume.log ||
  fail "$(tail -5 resume.log)"
grep -q "warm-start net.nc: not applied; the run continues its checkpoint" resume.log ||
  fail "$(cat resume.log)"
weights warm.nc >a.txt
weights resumed.nc >b.txt
cmp -s a.txt b.txt || fail "the resumed warm start differs from the uninterrupted one"
# An Adam network's state is carried into every --sparse-update mode, and sampled outputs train
# from a warm start.
"$tools/nn-train" -q -c config.json -i input.nc -o output.nc -n adam.nc -e 2 -b 8 --seed 1 \
  --optimizer Adam
for mode in Exact Dense Lazy; do
  "$tools/nn-train" -c config.json -i day2_in.nc -o day2_out.nc -n su.nc -e 2 -b 8 --seed 1 \
    --optimizer Adam --sparse-update $mode --warm-start adam.nc 2>su.log || fail "$(tail -3 su.log)"
  grep -q "warm start from adam.nc (optimizer state of kept items carried over" su.log ||
    fail "--sparse-update $mode: $(cat su.log)"
done
cat >sampled.cdl <<'JSON'
{ "Version": 0.9, "Network": "config.json", "Command": "Train", "RandomSeed": 3,
  "Data": ["day2_in.nc", "day2_out.nc"],
  "TrainingParameters": { "Epochs": 2, "MiniBatch": 8, "Optimizer": "Adam", "Alpha": 0.01,
    "Results": "sampled.nc", "Sampling": { "Negatives": 4 }, "WarmStart": "adam.nc" } }
JSON
"$tools/nn-train" sampled.cdl 2>sampled.log || fail "$(tail -3 sampled.log)"
grep -q "  layer 'Output': 17 items kept, 1 added, 1 dropped" sampled.log || fail "$(cat sampled.log)"
grep -q "^sampled output: layer 'Output'" sampled.log || fail "$(cat sampled.log)"

# Under mpirun: tests/tools/mpi_warm_start.sh (CTest label mpi).


# --- a network without items (its datasets name nothing, as DSSTNE's) ---------------------------
for f in input output; do
  ncdump "$f.nc" | awk '/^ *indToFeature0 = / { skip = 1 } !skip && !/indToFeature/ { print }
    skip && /; *$/ { skip = 0 }' >plain.cdl
  ncgen -k nc4 -o "plain_$f.nc" plain.cdl
done
"$tools/nn-train" -q -c config.json -i plain_input.nc -o plain_output.nc -n plain.nc -e 2 -b 8 \
  --seed 1
! header_has plain.nc nn_features || fail "a network trained on unnamed data has items"
tool="$tools/nn-predict"
expect_status 1 -n plain.nc -r ratings.txt -k 5
grep -q "needs the input feature index (-i): the network plain.nc does not carry its items" err.txt ||
  fail "$(cat err.txt)"
expect_status 0 -n plain.nc -r ratings.txt -i features.idx -o features.idx -k 5 -s plain.recs
# Warm start from it onto data of the same size: copied by position, said so.
"$tools/nn-train" -c config.json -i input.nc -o output.nc -n from_plain.nc -e 1 -b 8 \
  --warm-start plain.nc 2>plain_warm.log || fail "$(tail -3 plain_warm.log)"
grep -q "layer 'Input': 128 units copied by position (only one side names its items)" \
  plain_warm.log || fail "$(cat plain_warm.log)"
# nn-serve: refused without the index files, served with them.
tool="$tools/nn-serve"
expect_status 2 -n plain.nc --port 0
grep -q "plain.nc does not carry its items (layer 'Input'): give the item names with -i" err.txt ||
  fail "$(cat err.txt)"
"$tool" -n plain.nc -i features.idx -o features.idx --port 0 2>serve.log &
pid=$!
for _ in $(seq 100); do grep -q "listening on" serve.log 2>/dev/null && break; sleep 0.1; done
port=$(grep -o "127.0.0.1:[0-9]*" serve.log | head -1 | cut -d: -f2)
[[ -n $port ]] || fail "nn-serve did not start: $(cat serve.log)"
answer=$(python3 -c "import http.client
c = http.client.HTTPConnection('127.0.0.1', $port, timeout=10)
c.request('POST', '/recommend', body='{\"items\": [\"m0\"], \"k\": 2}'); print(c.getresponse().read().decode())")
kill -TERM "$pid"
wait "$pid" || true
echo "$answer" | grep -q '"items":\["m' || fail "no answer from the network without items: $answer"
echo "retraining: all checks passed"
