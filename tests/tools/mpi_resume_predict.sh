#!/usr/bin/env bash
# Under mpirun (CTest label mpi): a checkpoint written by 2 ranks resumes under 3 and ends where
# one process ends; nn-predict with 2 and 3 ranks writes exactly what one process writes.
# Usage: mpi_resume_predict.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$1
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
enter_work_dir
require_netcdf_bin
source "$here/lib/mpi.sh"
# Data parallel on every layer (mpi_model_parallel.sh resumes split layers).
pin_parallel Data config.json dp.json
mv dp.json config.json
# Resume under another process count: 2 ranks write ck3, 3 ranks continue to epoch 6.
train_cdl 7
run_np 2 "$tools/nn-train" train.cdl >/dev/null
rm -f net.nc ck6.nc
run_np 3 "$tools/nn-train" train.cdl --resume 2>resume.log
grep -q "resuming from ck3.nc" resume.log || fail "3 ranks did not resume from ck3.nc"
weights net.nc >a.txt
run_np 1 "$tools/nn-train" train.cdl >/dev/null  # the uninterrupted single-process run
rm -f ck*.nc
weights net.nc >b.txt
close a.txt b.txt 1e-3 || fail "resumed under 3 ranks: weights differ from one process"

# Prediction under mpirun writes what one process writes; ranking metrics against a target
# (here the input itself, so its items are ranked: --rank-input-items; left out, every metric
# would be 0) are the single process's.
mv net.nc one.nc
predict 1 one.nc one.recs
metrics() {
  run_np "$1" "$tools/nn-predict" -n one.nc -r ratings.txt -i features.idx -o features.idx -k 10 \
    --target output.nc --rank-input-items 2>&1 >/dev/null | grep -E '[0-9]+,[0-9.]+,[0-9.]+,[0-9.]+$'
}
metrics 1 >one.metrics
grep -qv ',0.0000,0.0000,0.0000' one.metrics || fail "metrics are all zero: $(cat one.metrics)"
for np in 2 3; do
  predict $np one.nc mp.recs
  cmp -s mp.recs one.recs || fail "nn-predict with $np ranks: output differs"
  [[ $(grep -c 'scored 40 examples' predict.log) == 1 ]] || fail "nn-predict: more than one voice"
  metrics $np | cmp -s - one.metrics || fail "nn-predict with $np ranks: metrics differ"
done

echo "mpi_resume_predict: ok"
