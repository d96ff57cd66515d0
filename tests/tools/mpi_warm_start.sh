#!/usr/bin/env bash
# A warm start under mpirun -np 2 (CTest label mpi) equals one process: with the layers split over
# the ranks (the rule's choice for these small layers: rank 0's merged arrays reach every rank)
# and with them pinned to data parallelism. Day two of the tiny catalog drops an item and adds
# one (lib/retraining.sh), so rows and columns move by name.
# Usage: mpi_warm_start.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export NN_MPI_TIMEOUT=60
source "$here/lib/retraining.sh"
enter_work_dir
require_netcdf_bin
tiny_ratings
tiny_datasets "$tools"
tiny_config 8
"$tools/nn-train" -q -c config.json -i input.nc -o output.nc -n net.nc -e 3 -b 8 --seed 1
make_day2 "$tools"
"$tools/nn-train" -q -c config.json -i day2_in.nc -o day2_out.nc -n one.nc -e 4 -b 8 --seed 2 \
  --warm-start net.nc
weights one.nc >one.txt
sed -E 's/("Kind": "(Hidden|Output)",)/\1 "Parallel": "Data",/' config.json >data_parallel.json
for mode in model data; do
  net_json=config.json
  [[ $mode == data ]] && net_json=data_parallel.json
  timeout 120 mpirun -np 2 --oversubscribe "$tools/nn-train" -c $net_json -i day2_in.nc \
    -o day2_out.nc -n warm_$mode.nc -e 4 -b 8 --seed 2 --warm-start net.nc 2>mpi_$mode.log ||
    fail "mpirun -np 2 ($mode parallel) failed: $(tail -5 mpi_$mode.log)"
  grep -q "^$mode parallel: 2 ranks" mpi_$mode.log || fail "not $mode parallel: $(cat mpi_$mode.log)"
  [[ $(grep -c "  layer 'Input': 17 items kept, 1 added, 1 dropped" mpi_$mode.log) == 1 ]] ||
    fail "$mode parallel: the warm start is not logged once: $(cat mpi_$mode.log)"
  weights warm_$mode.nc >mpi.txt
  python3 - one.txt mpi.txt <<'PY' || fail "mpirun -np 2 ($mode parallel) differs from one process"
import re, sys
a, b = (list(map(float, re.findall(r"-?\d+\.?\d*(?:e-?\d+)?", open(f).read()))) for f in sys.argv[1:])
assert len(a) == len(b) and a
assert all(abs(x - y) <= 1e-4 * max(abs(y), 1e-2) for x, y in zip(a, b)), "values differ"
PY
done
echo "mpi_warm_start: model and data parallel equal one process"
