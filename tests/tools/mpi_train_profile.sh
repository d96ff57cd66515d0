#!/usr/bin/env bash
# nn-train --profile under mpirun (CTest label mpi): one table, rank 0's, with the communication
# rows of data parallelism (the loss all-reduce, waiting for the gradient all-reduce, the
# stop-request agreement); one trace file, rank 0's events; the losses of the run without
# profiling.
# Usage: mpi_train_profile.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
enter_work_dir
source "$here/lib/mpi.sh"
pin_parallel Data config.json data.json
train_cdl 7  # 40 examples: 6 steps per epoch, 6 epochs
sed 's/config.json/data.json/' train.cdl >data.cdl

run_np 2 "$tools/nn-train" data.cdl --backend cpu 2>plain.log || fail "plain: $(tail -5 plain.log)"
losses plain.log >plain.loss
rm -f net.nc ck*.nc
run_np 2 "$tools/nn-train" data.cdl --backend cpu --profile --trace t.json 2>prof.log ||
  fail "profiled: $(tail -5 prof.log)"
[[ $(grep -c '^profile: rank 0 of 2, cpu backend (steady clock): 36 steps in 6 epoch(s)' prof.log) == 1 ]] ||
  fail "one heading, rank 0's: $(grep '^profile: rank' prof.log)"
! grep -q '^profile: rank 1' prof.log || fail "rank 1 reported"
for row in "loss all-reduce" "gradient all-reduce wait" "stop-request agreement"; do
  grep -Eq "^profile: communication +$row +[0-9.]+ +[0-9.]+ +[0-9.]+%$" prof.log ||
    fail "no communication row '$row': $(grep '^profile' prof.log)"
done
losses prof.log >prof.loss
cmp -s plain.loss prof.loss || fail "profiling changed the losses: $(paste plain.loss prof.loss)"
python3 - t.json <<'PY' || fail "trace: $(head -c 400 t.json)"
import json, sys
j = json.load(open(sys.argv[1]))
x = [e for e in j["traceEvents"] if e["ph"] == "X"]
assert x and all(e["pid"] == 0 for e in x), "rank 0's events only"
assert j["otherData"]["ranks"] == 2, j["otherData"]
assert any(e["name"] == "communication gradient all-reduce wait" for e in x)
PY
echo "mpi_train_profile: ok"
