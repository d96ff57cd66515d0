#!/usr/bin/env bash
# The tools restart themselves with OPENBLAS_CORETYPE when OpenBLAS chose kernels older than the
# CPU (a CPU newer than the library: docs/performance.md, "OpenBLAS kernels"): nn-train's log
# names the kernels and never says they are older than the CPU; a user's OPENBLAS_CORETYPE is
# kept as given (Prescott's kernels then run, without advice against that choice).
# Usage: blas_kernels.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir

tiny_ratings
tiny_datasets "$tools"
tiny_config
train=("$tools/nn-train" -c config.json -i input.nc -o output.nc -e 1 -b 8 --seed 5 --backend cpu
  --threads 1)

env -u OPENBLAS_CORETYPE "${train[@]}" -n auto.nc 2>auto.log || fail "run: $(tail -3 auto.log)"
line=$(grep '^cpu backend: OpenBLAS ' auto.log) || fail "no kernels line: $(head -5 auto.log)"
case "$line" in
  *"older than this CPU"*) fail "the tool did not restart with the CPU's kernels: $line" ;;
esac

OPENBLAS_CORETYPE=Prescott "${train[@]}" -n prescott.nc 2>prescott.log ||
  fail "run with Prescott: $(tail -3 prescott.log)"
grep -q '^cpu backend: OpenBLAS Prescott kernels' prescott.log ||
  fail "the user's OPENBLAS_CORETYPE was not kept: $(grep 'cpu backend' prescott.log)"
grep -q '^cpu backend: OpenBLAS Prescott kernels$' prescott.log ||
  fail "advice against the user's own choice: $(grep 'cpu backend' prescott.log)"
echo "blas_kernels: ok ($line)"
