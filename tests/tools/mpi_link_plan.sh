#!/usr/bin/env bash
# The measured link and the rule that becomes the cost model (docs/scaling.md, "Predicting
# scaling"): `mpirun -np 2 nn-train --measure-link FILE` writes a link file whose fit is positive
# and whose timings are the ones it printed; one process refuses it; `--link FILE` under mpirun
# makes every Auto layer's choice a predicted step time (and trains the same losses as one
# process); --plan reads the same file; a layer key still overrides the prediction.
# Usage: mpi_link_plan.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$1
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
enter_work_dir
require_netcdf_bin
source "$here/lib/mpi.sh"
train_cdl 8

run_np 2 "$tools/nn-train" --measure-link link.json 2>measure.log ||
  fail "measure: $(tail -5 measure.log)"
python3 - <<'PY' || fail "link.json: $(head -c 600 link.json)"
import json
l = json.load(open("link.json"))
assert l["format"] == "nn-link" and l["ranks"] == 2, l
assert l["latency_s"] >= 0 and l["bytes_per_s"] > 0, l
ops = {s["op"] for s in l["samples"]}
assert ops == {"all_reduce", "all_gather", "reduce_scatter"}, ops
assert len({s["bytes"] for s in l["samples"]}) >= 4
assert all(s["seconds"] > 0 for s in l["samples"])
PY
[[ $(grep -c 'written to link.json' measure.log) == 1 ]] || fail "not printed once: $(cat measure.log)"
status=0
run_np 1 "$tools/nn-train" --measure-link one.json 2>one-rank.log || status=$?
[[ $status == 2 && ! -e one.json ]] || fail "one process: status $status, $(cat one-rank.log)"
grep -q 'mpirun -np N' one-rank.log || fail "one process: $(cat one-rank.log)"

# Training with the measured link: each layer's choice is a prediction; the losses are one
# process's.
run_np 1 "$tools/nn-train" train.cdl 2>one.log || fail "one: $(tail -3 one.log)"
losses one.log >one.loss
rm -f net.nc ck*.nc
run_np 2 "$tools/nn-train" train.cdl --link link.json 2>two.log || fail "two: $(tail -5 two.log)"
for layer in Hidden Output; do
  grep -q "layer '$layer': \(data\|model\) parallel: predicted [0-9.]* ms per step against" two.log ||
    fail "$layer: no predicted choice: $(grep -A3 'parallel plan' two.log)"
done
grep -q 'over link.json (measured)' two.log || fail "the link is not named: $(cat two.log)"
losses two.log >two.loss
close two.loss one.loss 1e-5 || fail "losses differ: $(paste two.loss one.loss)"
# A layer key overrides the prediction.
pin_parallel Data config.json pinned.json
sed 's/"config.json"/"pinned.json"/' train.cdl >pinned.cdl
rm -f net.nc ck*.nc
run_np 2 "$tools/nn-train" pinned.cdl --link link.json 2>pinned.log || fail "pinned: $(tail -3 pinned.log)"
grep -q "layer 'Output': data parallel: \"Parallel\": \"Data\" in the network" pinned.log ||
  fail "the key did not win: $(grep -A3 'parallel plan' pinned.log)"

# --plan reads the file (one process) and names it.
"$tools/nn-train" train.cdl --plan 2 --link link.json --plan-steps 5 2>plan.log ||
  fail "plan: $(tail -3 plan.log)"
grep -q '^plan for 2 ranks over link.json (measured)' plan.log || fail "plan: $(head -8 plan.log)"
echo "mpi_link_plan: ok ($(tail -1 measure.log))"
