#!/usr/bin/env bash
# nn-tune under mpirun (CTest label mpi; docs/tuning.md): `mpirun -np 2 nn-tune` runs trials on
# both ranks (rank 0 schedules), each trial a single nn-train process that does not take itself
# for a rank of the tune's job, and the results are those of the same search in one process;
# stopped with SIGTERM the job ends with every finished rung kept, and the same command finishes
# with the same winner.
# Usage: mpi_tune.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
enter_work_dir
source "$here/lib/mpi.sh"
source "$here/lib/tune.sh"
tune_validation "$tools"
tune_config config.json
tune_file() {  # tune_file OUTPUT MIN MAX [TRIALS]
  cat <<JSON
{ "Config": "config", "Data": ["input.nc", "output.nc"],
  "ValidationData": ["val_input.nc", "val_output.nc"], "Metric": "ndcg@5",
  "Space": { "TrainingParameters.Alpha": {"LogUniform": [0.001, 0.05]},
             "Network.Layers.Hidden.N": [4, 8, 16] },
  "Trials": ${4:-6}, "Seed": 3, "Epochs": {"Min": $2, "Max": $3, "Eta": 3}, "Output": "$1" }
JSON
}
tune_file one 1 3 >one.json
tune_file two 1 3 >two.json
"$tools/nn-tune" --threads 1 one.json >one.txt 2>&1 || fail "one process: $(cat one.txt)"
run_np 2 "$tools/nn-tune" two.json >two.txt 2>&1 || fail "mpirun -np 2: $(cat two.txt)"
grep -q "^nn-tune: 2 ranks, 1 trials at a time on each (1 threads per trial)" two.txt ||
  fail "no ranks line: $(cat two.txt)"
grep -q "^nn-tune: trial [0-9]* to 1 epochs on rank 1$" two.txt &&
  grep -q "^nn-tune: trial [0-9]* to 1 epochs on rank 0$" two.txt ||
  fail "trials did not run on both ranks: $(cat two.txt)"
# The same rows (trial, rung, metric) as in one process: where a trial runs changes nothing.
for out in one two; do
  awk -F'\t' 'NR > 1 { print $1, $2, $3, $4, $7 }' $out/results.tsv | sort >$out.rows
done
cmp -s one.rows two.rows || fail "mpirun changed the results: $(paste one.rows two.rows)"
[[ $(wc -l <two.rows) == 8 ]] || fail "rows: $(cat two.rows)"
[[ $(grep '^best:' one.txt) == $(grep '^best:' two.txt) ]] || fail "winners: $(grep '^best:' one.txt two.txt)"
! grep -qE "rank [0-9]+:|[0-9]+ ranks|MPI" two/trial-*/train.log || fail "a trial took itself for a rank: $(cat two/trial-*/train.log)"
[[ -s two/best/network.nc ]] || fail "no two/best/network.nc"
# Stopped with SIGTERM under mpirun: finished rungs kept, the same command finishes the search.
# 12 trials of about half a second each on a fast machine: rank 0 hears of a finished trial only
# between its own, so the signal can come a second after the first row, and with 6 trials the
# last had then started (and was recorded when it finished, as it should be).
tune_file stop 30 30 12 >stop.json
tune_file whole 30 30 12 >whole.json
"$tools/nn-tune" -q --threads 1 whole.json >whole.txt 2>&1 || fail "whole: $(cat whole.txt)"
timeout 120 mpirun -np 2 --oversubscribe "$tools/nn-tune" stop.json >stop.txt 2>&1 &
sigterm_after_first_row $! stop
[[ $status != 0 ]] || fail "mpirun ended 0 after SIGTERM: $(cat stop.txt)"
rows=$(awk 'NR > 1' stop/results.tsv | wc -l)
((rows >= 1 && rows < 12)) || fail "stopped tune: $rows rows: $(cat stop.txt)"
# Every trial got SIGTERM and ends once its checkpoint is written. mpirun may kill a rank before
# that (what is left of the job, odls_base_sigkill_timeout = 1 s after passing the signal on),
# so on a loaded machine a trial can finish its checkpoint a moment after mpirun: it must be
# gone within seconds, not keep training.
for _ in $(seq 200); do
  pgrep -f "nn-train train.cdl -e 30" >/dev/null || break
  sleep 0.1
done
! pgrep -f "nn-train train.cdl -e 30" >/dev/null ||
  fail "a trial outlived its tune by 20 s: $(pgrep -af 'nn-train train.cdl -e 30'; cat stop.txt)"
run_np 2 "$tools/nn-tune" -q stop.json >stop2.txt 2>&1 || fail "after the stop: $(cat stop2.txt)"
[[ $(awk 'NR > 1' stop/results.tsv | wc -l) == 12 ]] || fail "after the stop: $(cat stop/results.tsv)"
[[ $(grep '^best:' stop2.txt) == $(grep '^best:' whole.txt) ]] ||
  fail "another winner after the stop: $(grep '^best:' stop2.txt whole.txt)"
echo "mpi_tune: ok"
