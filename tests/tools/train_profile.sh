#!/usr/bin/env bash
# nn-train --profile and --trace (docs/performance.md) on the CPU backend: the table's heading,
# a row for every layer in forward, backward and update, shares of the step adding up to 100%,
# then each phase beside its floor;
# the Chrome trace as valid JSON with the expected events, bounded by --trace-steps and written
# atomically; the same losses with and without profiling; -q keeps the table; the CDL keys
# Profile, Trace and TraceSteps.
# Usage: train_profile.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir

tiny_ratings
tiny_datasets "$tools"
tiny_config
train=("$tools/nn-train" -c config.json -i input.nc -o output.nc -n net.nc -e 2 -b 8 --seed 5
  --backend cpu --threads 1)

# ---- without profiling: the reference losses, no profile lines ----
"${train[@]}" 2>plain.log || fail "plain run: $(tail -3 plain.log)"
! grep -q '^profile:' plain.log || fail "profile lines without --profile"
losses() {  # the per-epoch log's losses, every digit
  python3 -c 'import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l); print(r["epoch"], repr(r["loss"]), repr(r["data_loss"]), repr(r["reg_loss"]))' "$1"
}
losses net.epochs.jsonl >plain.loss

# ---- --profile --trace: 30 users in batches of 8 are 4 steps per epoch ----
"${train[@]}" --profile --trace t.json --trace-steps 1 2>prof.log || fail "profiled run: $(tail -3 prof.log)"
grep -q '^profile: cpu backend (steady clock): 8 steps in 2 epoch(s), [0-9.]* ms per step; the steps took [0-9.]*% of the epochs' prof.log ||
  fail "heading: $(grep '^profile' prof.log | head -2)"
grep -Eq '^profile: phase +part +total ms +ms/step +share$' prof.log || fail "column heading"
for row in "data +wait for batch" "data +upload inputs" "data +upload targets" \
  "forward +Input" "forward +Hidden" "forward +Output" "loss +Output" \
  "backward +Output" "backward +Hidden" "backward +Input" "update +Hidden" "update +Output" \
  "other +between the ranges"; do
  grep -Eq "^profile: $row +[0-9.]+ +[0-9.]+ +[0-9.]+%$" prof.log || fail "no row '$row': $(grep '^profile' prof.log)"
done
grep -Eq '^profile: step +\(all\) +[0-9.]+ +[0-9.]+ +100.0%$' prof.log || fail "step row"
# The rows of the phases and "other" add up to the step (phase totals "(all)" and the step
# row left out).
python3 - prof.log <<'PY' || fail "shares do not add up: $(grep '^profile' prof.log)"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
lines = lines[:next((i for i, l in enumerate(lines) if l.startswith("profile: floors:")), len(lines))]
total = sum(float(m.group(1)) for line in lines
            if line.startswith("profile: ") and "(all)" not in line
            and not line.startswith("profile: step")
            for m in [re.search(r" ([0-9.]+)%$", line.rstrip())] if m and "steps took" not in line)
assert abs(total - 100) < 1.5, total
PY
# Then the floors: the step's measured time, its floor and the share of the floor reached.
grep -Eq '^profile: floors: the least time this machine needs per step' prof.log || fail "floors heading"
grep -Eq '^profile: step +\(all\) +[0-9.]+ +[0-9.]+ +[0-9.]+%$' prof.log || fail "floor of the step"
grep -Eq "^profile: floors counted from the network's shapes \(8 rows, [0-9.]+ non-zeros per row and [0-9]+ distinct rows per batch of Input( \(updated row by row\))?\)" \
  prof.log || fail "floors' basis: $(grep '^profile: floors counted' prof.log)"
grep -q '^profile: trace of [0-9]* events in t.json (open it in ui.perfetto.dev or chrome://tracing)$' prof.log ||
  fail "trace line: $(grep trace prof.log)"
python3 - t.json <<'PY' || fail "trace: $(head -c 600 t.json)"
import json, sys, collections
j = json.load(open(sys.argv[1]))
x = [e for e in j["traceEvents"] if e["ph"] == "X"]
assert all(isinstance(e["ts"], (int, float)) and e["dur"] >= 0 and e["pid"] == 0 for e in x)
steps = sorted({e["args"]["step"] for e in x})
assert steps == [1, 5], steps  # --trace-steps 1: the first step of each epoch
names = collections.Counter(e["name"] for e in x)
for n in ("step", "forward Hidden", "backward Hidden", "update Output", "loss Output",
          "data wait for batch"):
    assert names[n] == 2, (n, names)
assert j["otherData"]["steps_per_epoch"] == 1, j["otherData"]
PY
ls -A | grep -q '\.tmp\.' && fail "temporary files left: $(ls -A)"
losses net.epochs.jsonl >prof.loss
cmp -s plain.loss prof.loss || fail "profiling changed the losses: $(paste plain.loss prof.loss)"

# ---- -q: only the table ----
"${train[@]}" -q --profile 2>quiet.log || fail "quiet run"
[[ -s quiet.log ]] && ! grep -qv '^profile: ' quiet.log || fail "-q --profile: $(cat quiet.log)"

# ---- CDL keys ----
cat >train.cdl <<'JSON'
{ "Network": "config.json", "Command": "Train", "RandomSeed": 5, "Data": ["input.nc", "output.nc"],
  "TrainingParameters": { "Epochs": 1, "MiniBatch": 8, "Results": "cdl.nc", "CheckpointInterval": 0,
    "Profile": true, "Trace": "cdl.json", "TraceSteps": 0 } }
JSON
"$tools/nn-train" train.cdl --backend cpu 2>cdl.log || fail "CDL run: $(tail -3 cdl.log)"
grep -q '^profile: cpu backend (steady clock): 4 steps in 1 epoch(s)' cdl.log || fail "CDL Profile"
python3 -c 'import json, sys; j = json.load(open("cdl.json"))
assert sorted({e["args"]["step"] for e in j["traceEvents"] if e["ph"] == "X"}) == [1, 2, 3, 4]' ||
  fail "CDL Trace with TraceSteps 0: every step"
"$tools/nn-train" train.cdl --backend cpu --trace cdl2.json 2>over.log || fail "override"
grep -q "^--trace cdl2.json overrides train.cdl's Trace .*cdl.json$" over.log ||
  fail "override line: $(head -3 over.log)"
[[ -s cdl2.json ]] || fail "--trace over the CDL's Trace"

# ---- the trace must not replace an input ----
status=0
"$tools/nn-train" -c config.json -i input.nc -o output.nc -n net.nc -e 1 --trace input.nc 2>err.txt || status=$?
[[ $status == 2 ]] || fail "--trace input.nc: exit $status: $(cat err.txt)"
grep -q "^nn-train: error: --trace input.nc names the same file as the input -i input.nc" err.txt || fail "message: $(cat err.txt)"
echo "train_profile: ok"
