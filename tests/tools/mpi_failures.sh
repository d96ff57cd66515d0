#!/usr/bin/env bash
# Failures under mpirun (CTest label mpi) end the whole job with a message and a non-zero status:
# a rank that throws (its message carries its rank), one that dies, and one that hangs (the
# others give up after NN_MPI_TIMEOUT seconds). Failures are injected with NN_TEST_FAIL_*.
# Usage: mpi_failures.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$1
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
enter_work_dir
require_netcdf_bin
source "$here/lib/mpi.sh"
train_cdl 7
# Failures end the job: a rank that throws (its message carries its rank), one that dies, and
# one that hangs (the others give up after NN_MPI_TIMEOUT seconds).
for mode in throw exit hang; do
  status=0
  NN_TEST_FAIL_RANK=1 NN_TEST_FAIL_STEP=5 NN_TEST_FAIL_MODE=$mode NN_MPI_TIMEOUT=3 \
    run_np 2 "$tools/nn-train" train.cdl >/dev/null 2>fail.err || status=$?
  [[ $status != 0 && $status != 124 ]] || fail "$mode: status $status (0 = not stopped, 124 = hung)"
  case $mode in
    throw) grep -q 'nn-train: rank 1: error: injected failure at step 5' fail.err ||
             fail "throw: no rank-prefixed message: $(cat fail.err)" ;;
    exit) grep -qi 'exit' fail.err || fail "exit: no message: $(cat fail.err)" ;;
    hang) grep -q 'rank 0: error: .* waited .* for the other ranks' fail.err ||
            fail "hang: no timeout message: $(cat fail.err)" ;;
  esac
done
echo "mpi_failures: ok"
